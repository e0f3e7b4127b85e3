"""Control flow of one kernel: basic blocks, loops from back edges, the hot loop, and the code
paths a kernel selects at run time.

Algorithms:

* **Blocks.** Leaders are the first instruction, every branch/call target, and the instruction
  after a branch, ``EXIT``, ``RET`` or ``KILL``. An unguarded ``BRA``/``EXIT`` has no fall-through;
  a guarded one (``@P0 BRA``, ``BRA.U !UP0``, ``BRA.DIV``) has both edges. ``CALL`` targets are
  extra entry points (subroutines nvcc appends, e.g. the slow path of a division).
* **Dominators.** Cooper, Harvey and Kennedy's iterative algorithm ("A Simple, Fast Dominance
  Algorithm", 2001) over the blocks reachable from the entries, in reverse post-order. Blocks
  nothing reaches (the ``BRA self`` nvcc leaves after the last ``EXIT``) are left out.
* **Loops.** An edge ``u -> h`` where ``h`` dominates ``u`` is a back edge; its natural loop is
  ``h`` plus every block that reaches ``u`` without passing through ``h``. Loops with the same
  header are merged. Nesting follows from set inclusion.
* **Hot loop** (static): the innermost loop with the most global loads, ties broken by size.
  With stall samples, :mod:`sparsescope.sass.stall_map` ranks loops by samples instead.
* **Code paths selected at run time.** For a conditional branch outside every loop, the join is
  its immediate post-dominator; each arm is the set of blocks reached from one successor before
  the join. When both arms hold at least ``min_arm_instructions`` instructions, the branch selects
  between two code paths (seed 001 section 2.3: the large/medium/small/tiny tile paths of
  csrmv_v3_kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.sass.instructions import Instruction

#: A run-time path split needs at least this many instructions on each arm.
MIN_ARM_INSTRUCTIONS = 16


@dataclass(frozen=True)
class BasicBlock:
    """A straight-line run of instructions with one entry and one exit."""

    index: int
    """Position in :attr:`ControlFlow.blocks` (address order)."""
    first: int
    """Index of the first instruction in the kernel's instruction tuple."""
    last: int
    """Index of the last instruction (inclusive)."""
    start_address: int
    end_address: int
    """Address of the last instruction."""
    successors: tuple[int, ...]
    """Indices of successor blocks (fall-through first)."""
    reachable: bool
    """Reached from the kernel entry or a call target."""

    @property
    def size(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True)
class Loop:
    """A natural loop."""

    header_address: int
    """Address of the loop header (target of the back edges)."""
    back_edge_addresses: tuple[int, ...]
    """Addresses of the branches that close the loop."""
    blocks: tuple[int, ...]
    """Block indices in the loop body, header included."""
    start_address: int
    end_address: int
    """Lowest and highest instruction address in the body."""
    instructions: int
    """Static instructions in the body."""
    global_loads: int
    """Global (or generic) loads in the body."""
    depth: int
    """Nesting depth, 1 for an outermost loop."""
    innermost: bool
    """No other loop nests inside this one."""


@dataclass(frozen=True)
class PathArm:
    """One arm of a run-time code-path split."""

    start_address: int
    end_address: int
    instructions: int


@dataclass(frozen=True)
class CodePath:
    """A conditional branch outside loops that selects between two sizeable code paths."""

    branch_address: int
    condition: str
    """The branch's guard as written (``!P1``, ``UP0``)."""
    condition_address: int | None
    """Address of the last instruction before the branch that writes the guard predicate."""
    arms: tuple[PathArm, PathArm]
    """Taken arm first, then the fall-through arm."""
    join_address: int | None
    """Where the two arms meet again (immediate post-dominator); None if only at exit."""


@dataclass(frozen=True)
class ControlFlow:
    """Blocks, loops and code paths of one kernel."""

    blocks: tuple[BasicBlock, ...]
    loops: tuple[Loop, ...]
    """Loops ordered by header address."""
    code_paths: tuple[CodePath, ...]
    block_of: tuple[int, ...]
    """Instruction index -> block index."""
    loop_of: tuple[int, ...]
    """Instruction index -> index of the innermost loop holding it, -1 outside loops."""
    hot_loop: int
    """Index into :attr:`loops` of the static hot loop, -1 when the kernel has no loop."""
    block_loops: tuple[tuple[int, ...], ...] = ()
    """Block index -> indices of the loops holding it, outermost first."""

    def instructions_of(self, blocks) -> list[int]:
        """Instruction indices of ``blocks`` (block indices), in address order."""
        return sorted(i for b in blocks
                      for i in range(self.blocks[b].first, self.blocks[b].last + 1))

    def loops_containing(self, instruction_index: int) -> tuple[int, ...]:
        """Indices of every loop holding the instruction, innermost last."""
        return self.block_loops[self.block_of[instruction_index]] if self.block_loops else ()


def _conditional(ins: Instruction) -> bool:
    return ins.is_conditional or (ins.is_branch and any(m in ("DIV", "CONV")
                                                        for m in ins.modifiers))


def _dominators(nodes: list[int], preds: dict[int, list[int]],
                entries: list[int]) -> dict[int, int]:
    """Immediate dominators (Cooper-Harvey-Kennedy); ``nodes`` in reverse post-order.

    Several entries are joined under a virtual root ``-1``.
    """
    order = {n: i for i, n in enumerate(nodes)}
    idom: dict[int, int] = {-1: -1}
    for e in entries:
        idom[e] = -1
    order[-1] = -1

    def intersect(a: int, b: int) -> int:
        while a != b:
            while order[a] > order[b]:
                a = idom[a]
            while order[b] > order[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for n in nodes:
            if n in entries:
                continue
            done = [p for p in preds.get(n, []) if p in idom]
            if not done:
                continue
            new = done[0]
            for p in done[1:]:
                new = intersect(p, new)
            if idom.get(n) != new:
                idom[n] = new
                changed = True
    return idom


def _reverse_postorder(entries: list[int], succ: dict[int, list[int]]) -> list[int]:
    seen: set[int] = set()
    post: list[int] = []
    for root in entries:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(succ.get(root, [])))]
        while stack:
            node, it = stack[-1]
            nxt = next((s for s in it if s not in seen), None)
            if nxt is None:
                post.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(succ.get(nxt, []))))
    return post[::-1]


def _dominates(idom: dict[int, int], a: int, b: int) -> bool:
    while True:
        if a == b:
            return True
        if b == -1 or b not in idom:
            return False
        b = idom[b]


def build_cfg(instructions: tuple[Instruction, ...] | list[Instruction],
              min_arm_instructions: int = MIN_ARM_INSTRUCTIONS) -> ControlFlow:
    """Blocks, loops and run-time code paths of a kernel (see the module docstring)."""
    n = len(instructions)
    if n == 0:
        return ControlFlow((), (), (), (), (), -1)
    index_of = {ins.address: i for i, ins in enumerate(instructions)}
    leaders = {0}
    call_targets: set[int] = set()
    for i, ins in enumerate(instructions):
        if ins.branch_target is not None and ins.opcode != "BSSY" \
                and ins.branch_target in index_of:
            leaders.add(index_of[ins.branch_target])
            if ins.opcode == "CALL":
                call_targets.add(index_of[ins.branch_target])
        if ins.ends_block and i + 1 < n:
            leaders.add(i + 1)
    starts = sorted(leaders)
    block_of = [0] * n
    spans = []
    for b, first in enumerate(starts):
        last = (starts[b + 1] - 1) if b + 1 < len(starts) else n - 1
        spans.append((first, last))
        for i in range(first, last + 1):
            block_of[i] = b
    succ: dict[int, list[int]] = {}
    for b, (_first, last) in enumerate(spans):
        ins = instructions[last]
        out: list[int] = []
        falls = b + 1 < len(spans)
        if ins.opcode in ("BRA", "JMP"):
            if ins.branch_target in index_of:
                out.append(block_of[index_of[ins.branch_target]])
            falls = falls and _conditional(ins)
        elif ins.opcode in ("BRX", "JMX", "EXIT", "RET", "KILL"):
            falls = falls and _conditional(ins)
        if falls:
            out.insert(0, b + 1)
        succ[b] = list(dict.fromkeys(out))
    entries = [0] + sorted(block_of[i] for i in call_targets)
    rpo = _reverse_postorder(entries, succ)
    reachable = set(rpo)
    preds: dict[int, list[int]] = {b: [] for b in range(len(spans))}
    for b in rpo:
        for s in succ[b]:
            preds[s].append(b)
    idom = _dominators(rpo, preds, entries)
    blocks = tuple(BasicBlock(b, f, last, instructions[f].address, instructions[last].address,
                              tuple(succ[b]), b in reachable) for b, (f, last) in enumerate(spans))
    loops = _natural_loops(blocks, instructions, rpo, succ, preds, idom)
    loop_of = [-1] * n
    for li in sorted(range(len(loops)), key=lambda i: loops[i].depth):
        for b in loops[li].blocks:
            for i in range(spans[b][0], spans[b][1] + 1):
                loop_of[i] = li
    paths = _code_paths(blocks, instructions, rpo, succ, loop_of, min_arm_instructions)
    block_loops: list[list[int]] = [[] for _ in blocks]
    for li in sorted(range(len(loops)), key=lambda i: loops[i].depth):
        for b in loops[li].blocks:
            block_loops[b].append(li)
    return ControlFlow(blocks, loops, paths, tuple(block_of), tuple(loop_of), _hot_loop(loops),
                       tuple(tuple(x) for x in block_loops))


def _natural_loops(blocks, instructions, rpo, succ, preds, idom) -> tuple[Loop, ...]:
    bodies: dict[int, set[int]] = {}
    closers: dict[int, list[int]] = {}
    for u in rpo:
        for h in succ[u]:
            if _dominates(idom, h, u):
                body = bodies.setdefault(h, {h})
                closers.setdefault(h, []).append(instructions[blocks[u].last].address)
                stack = [u]
                while stack:
                    x = stack.pop()
                    if x not in body:
                        body.add(x)
                        stack.extend(preds[x])
    raw = []
    for h, body in bodies.items():
        members = sorted(body)
        ins = [instructions[i] for b in members for i in range(blocks[b].first, blocks[b].last + 1)]
        raw.append((h, members, ins))
    loops = []
    for h, members, ins in sorted(raw, key=lambda r: blocks[r[0]].start_address):
        mset = set(members)
        depth = 1 + sum(1 for h2, m2, _ in raw if h2 != h and mset < set(m2))
        innermost = not any(h2 != h and set(m2) < mset for h2, m2, _ in raw)
        loops.append(Loop(blocks[h].start_address, tuple(sorted(closers[h])), tuple(members),
                          min(i.address for i in ins), max(i.address for i in ins), len(ins),
                          sum(1 for i in ins if i.is_global_load), depth, innermost))
    return tuple(loops)


def _hot_loop(loops: tuple[Loop, ...]) -> int:
    inner = [i for i, lp in enumerate(loops) if lp.innermost]
    if not inner:
        return -1
    return max(inner, key=lambda i: (loops[i].global_loads, loops[i].instructions))


def _predicate_writer(instructions, first: int, last: int, cond: str) -> int | None:
    reg = cond.lstrip("!")
    for i in range(last - 1, first - 1, -1):
        if reg in instructions[i].regs_written:
            return instructions[i].address
    return None


def _code_paths(blocks, instructions, rpo, succ, loop_of, min_arm) -> tuple[CodePath, ...]:
    exit_node = len(blocks)
    rsucc: dict[int, list[int]] = {exit_node: []}
    rpreds: dict[int, list[int]] = {exit_node: []}
    for b in rpo:
        rsucc.setdefault(b, [])
        rpreds.setdefault(b, [])
    for b in rpo:
        targets = [s for s in succ[b] if s in rsucc] or [exit_node]
        for s in targets:
            rsucc[s].append(b)
            rpreds[b].append(s)
    order = _reverse_postorder([exit_node], rsucc)
    ipdom = _dominators(order, rpreds, [exit_node])
    paths = []
    for b in rpo:
        blk = blocks[b]
        ins = instructions[blk.last]
        if len(succ[b]) != 2 or not ins.is_branch or loop_of[blk.last] != -1:
            continue
        join = ipdom.get(b, exit_node)
        arms = []
        for s in (succ[b][1], succ[b][0]):  # taken first
            seen: set[int] = set()
            stack = [s]
            while stack:
                x = stack.pop()
                if x in seen or x == join or x == exit_node or x == b:
                    continue
                seen.add(x)
                stack.extend(succ[x])
            sizes = [blocks[x].size for x in seen]
            if not seen:
                arms.append(PathArm(blocks[s].start_address, blocks[s].start_address, 0))
            else:
                arms.append(PathArm(min(blocks[x].start_address for x in seen),
                                    max(blocks[x].end_address for x in seen), sum(sizes)))
        if min(a.instructions for a in arms) < min_arm:
            continue
        cond = ins.predicate or next((op for op in ins.operands if op.lstrip("!").startswith(
            ("P", "UP"))), "")
        paths.append(CodePath(ins.address, cond, _predicate_writer(
            instructions, blk.first, blk.last, cond) if cond else None, (arms[0], arms[1]),
            blocks[join].start_address if join not in (exit_node, -1) and join < len(blocks)
            else None))
    return tuple(sorted(paths, key=lambda p: p.branch_address))
