"""Memory-level parallelism (MLP) of one kernel, read from its SASS, for Little's law.

The time model needs how many bytes a warp keeps in flight per memory round trip. This module
reads it from the kernel's own code, building on :mod:`.cfg` (hot loop), :mod:`.dataflow`
(def-use, dependent global-load chains) and :mod:`.instructions` (load widths):

* **body**: the instructions of the static hot loop (innermost loop with the most global loads,
  :attr:`ControlFlow.hot_loop`), in address order; the whole kernel when it has no loop.
* **loads_per_iteration**: global loads in the body (``LDG``, generic ``LD``, ``LDGSTS``).
* **batches**: walking the body in address order, loads join the open batch until an instruction
  reads the result of one of them (def-use, so a register rewritten in between does not count);
  that use closes the batch. An ``LDGSTS`` writes no register: a batch holding one is closed by
  the next wait (``DEPBAR``, ``BAR`` other than ``BAR.ARV``). ``independent_batch`` is the
  largest batch, ``batch_bytes_per_thread`` the sum of its widths (``.U16`` 2, ``.32`` 4,
  ``.64`` 8, ``.128`` 16 bytes), ``evidence`` its addresses and opcodes.
* **rounds_per_iteration** ``= 1 + longest chain`` of loads of the body where each load's
  address depends on the result of the previous one *in the same iteration* (the producer
  precedes the consumer without going around the back edge): ``col[j] -> x[col[j]]`` gives 2;
  ``p = p->next`` (a load feeding its own next iteration) gives 1.
* **gathers** (``kernel_mlp(..., gather_param="x")`` on an analysis made with the kernel's
  source, so that loads are named by parameter): loads from ``x`` whose address depends on a
  loaded value (global, shared or local), two loads of one address counted once. With gathers
  the loop measured is the one holding the most of them outside its nested loops
  (:func:`work_loop`: a grid-stride loop around unrolled work, not the innermost loop of
  row-pointer loads); ``gather_rounds`` is 1 + the longest same-iteration chain ending at a
  gather; the **remainder loop** is another innermost loop with gathers (``csr_scalar``'s
  ``n mod 4`` loop), and ``peeled_gathers`` counts the gathers outside every loop.
* **bytes_in_flight_per_thread** ``= bytes_per_thread_per_iteration / rounds_per_iteration``:
  the bytes an iteration loads, spread over the round trips it needs. Little's law then gives
  ``bandwidth = warps_resident * 32 * bytes_in_flight_per_thread / latency``.

Seed 000's model is the special case of one 32-bit load per thread per round trip: "one 128-byte
line in flight per warp, halved by the col->x chain", i.e. 4 bytes/thread per iteration, rounds
2 -> 2 bytes/thread in flight. A CSR-scalar loop that the compiler did not unroll already gives
``(4 + 4 + 4) / 2 = 6`` (col, val, x); nvcc unrolls it 16x on sm_90 (``192 / 2 = 96``).

What the heuristic cannot see:

* loads the compiler hoists across iterations (software pipelining: a load issued at the end of
  iteration ``i`` and used in ``i + 1`` stays in the last batch, and the body's loads are still
  counted once per iteration);
* predicates: a guarded load (``@P0 LDG``) is counted as issued, whether or not it executes;
  the static unroll is what is counted, not how many iterations a short row actually runs;
* dependences through shared memory: ``LDGSTS col -> LDS -> LDG x`` is no chain here (only
  register def-use is followed), so a staged gather shows one round where it needs two;
* the hardware: scoreboard limits, the order loads really return, and L1/L2 hits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sparsescope.model.issue_schedule import IssueSchedule
from sparsescope.sass.cfg import ControlFlow, Loop, build_cfg
from sparsescope.sass.dataflow import (
    ADDRESS_OPCODES,
    DefUse,
    load_slices_and_chains,
    reaching_definitions,
)
from sparsescope.sass.instructions import Instruction
from sparsescope.sass.issue_order import issue_schedule
from sparsescope.sass.listing import iter_listing_text
from sparsescope.sass.staged_path import staged_path


@dataclass(frozen=True)
class KernelMLP:
    """The memory-level parallelism of one kernel (see the module docstring for the rules)."""

    kernel: str
    """Short name (demangled, without return type and parameter list)."""
    loop_found: bool
    """A steady-state loop (back edge) was found; else the whole kernel is the body."""
    loads_per_iteration: int
    """Global loads in the hot loop body (or the whole kernel)."""
    independent_batch: int
    """Loads of the largest batch issued before the first use of any of their results."""
    batch_bytes_per_thread: int
    """Sum of the widths of that batch's loads, bytes."""
    rounds_per_iteration: int
    """1 + the longest same-iteration chain of dependent loads (``col -> x``: 2)."""
    bytes_per_thread_per_iteration: int
    """Sum of the widths of all loads of the body, bytes."""
    staged: bool
    """``LDGSTS`` (cp.async) in the kernel: loads staged in shared memory."""
    evidence: tuple[str, ...]
    """``0x0210 LDG.E.CONSTANT`` for each load of the largest batch."""
    loop_span: tuple[int, int] | None = None
    """First and last address of the loop measured; None: the whole kernel."""
    gathers_per_iteration: int = 0
    """Gathers in the body: loads whose base pointer is the parameter named ``gather_param``
    (``x``), one per nonzero (B per 1 x B block); 0 when not asked for or the names are unknown."""
    gather_rounds: int = 0
    """1 + the longest same-iteration chain of loads ending at a gather: 2 when a gather waits
    for a column loaded in the same iteration, 1 when every column it needs was loaded an
    iteration earlier (software pipelining) or came through shared memory (not followed);
    0 without gathers."""
    remainder_span: tuple[int, int] | None = None
    """The remainder loop: the innermost loop outside the measured one (neither holding nor
    held by it) with the most gathers (or, without gather names, global loads); None if none."""
    remainder_loads_per_iteration: int = 0
    """Global loads per iteration of the remainder loop."""
    remainder_gathers_per_iteration: int = 0
    """Gathers per iteration of the remainder loop."""
    peeled_gathers: int = 0
    """Gathers outside every loop: loop iterations the compiler peeled into straight-line code
    (``csr_scalar``: 12, a copy of 8 nonzeros then one of 4 after its 16-per-iteration loop;
    ``spmv_sell`` UNROLL 4: the odd first iteration of its 2 x UNROLL loop)."""
    arch: str = ""
    compiler: str = ""
    """Where the code came from (``nvrtc 13.5``), when the caller compiled it."""
    loop_instructions: int = 0
    """Instructions of the measured loop's body (loops nested in it counted once), NOPs left
    out: what one warp issues per iteration (:func:`instruction_counts`)."""
    staged_path: tuple[int, int] | None = None
    """A staged (cp.async) loop's (every-iteration, staging) instructions
    (:func:`~sparsescope.sass.staged_path.staged_path`); None otherwise."""
    remainder_instructions: int = 0
    """Instructions of the remainder loop's body."""
    other_instructions: int = 0
    """Reachable instructions outside both loops (set-up, peeled copies, epilogue): issued once
    per warp."""
    local_bytes_per_iteration: int = 0
    """Bytes one thread moves to and from local memory per iteration of the measured loop
    (``LDL`` + ``STL`` widths: register spills and their refills)."""
    local_store_bytes_per_iteration: int = 0
    """The ``STL`` part of :attr:`local_bytes_per_iteration` (the spills)."""
    local_frame_bytes: int = 0
    """A thread's local-memory frame: the highest ``[R1 + offset] + width`` any ``LDL``/``STL``
    reaches (0 without local memory)."""
    registers: int = 0
    """Registers per thread (the listing's resources; 0 when not given)."""
    shared_bytes: int = 0
    """Static shared memory per block (the listing's resources)."""
    schedule: IssueSchedule | None = None
    """The measured loop's issue schedule (:mod:`.issue_order`): filled with gathers named;
    None without them, when the loop's gathers are conditional or when it holds another
    loop."""

    @property
    def bytes_in_flight_per_thread(self) -> float:
        """``bytes_per_thread_per_iteration / rounds_per_iteration`` (seed 000: 4 / 2 = 2)."""
        return self.bytes_per_thread_per_iteration / self.rounds_per_iteration


def _short_name(name: str) -> str:
    """``void csr_vector<8>(int, float*)`` -> ``csr_vector<8>``; other names unchanged."""
    if not name.endswith(")"):
        return name
    depth = 0
    for k in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[k], 0)
        if depth == 0:
            head = name[:k].strip()
            return head.split(" ", 1)[1] if head.startswith("void ") else head
    return name


def _body(cfg: ControlFlow, count: int, li: int) -> tuple[list[int], Loop | None]:
    """Instruction indices of loop ``li`` in address order (all reachable ones when < 0)."""
    if li < 0:
        return [i for i in range(count) if cfg.blocks[cfg.block_of[i]].reachable], None
    loop = cfg.loops[li]
    return _loop_indices(cfg, loop), loop


def _waits(ins: Instruction) -> bool:
    return ins.opcode == "DEPBAR" or (ins.opcode == "BAR" and "ARV" not in ins.modifiers)


def _batches(ins: tuple[Instruction, ...], body: list[int], du: DefUse) -> list[list[int]]:
    """Loads grouped into batches, each closed by the first use of a member's result."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in body:
        used = {d for defs in du.reaching[i].values() for d in defs}
        staged = any(ins[k].opcode == "LDGSTS" for k in current)
        if current and (used.intersection(current) or (staged and _waits(ins[i]))):
            batches.append(current)
            current = []
        if ins[i].is_global_load:
            current.append(i)
    if current:
        batches.append(current)
    return batches


def _same_iteration(cfg: ControlFlow, loop: Loop | None, producer: int, consumer: int) -> bool:
    """The consumer follows the producer within one pass of the loop (no back edge taken)."""
    if loop is None:
        return producer != consumer
    pb, cb = cfg.block_of[producer], cfg.block_of[consumer]
    if pb == cb:
        return producer < consumer
    header = next(b for b in loop.blocks if cfg.blocks[b].start_address == loop.header_address)
    inside, seen, stack = set(loop.blocks), {pb}, [pb]
    while stack:
        for s in cfg.blocks[stack.pop()].successors:
            if s in inside and s != header and s not in seen:
                seen.add(s)
                stack.append(s)
    return cb in seen


def _rounds(edges: dict[int, set[int]], loads: list[int]) -> int:
    """1 + the longest producer -> consumer path, counted in links (loads in it, minus 1)."""
    memo: dict[int, int] = {}

    def longest(node: int, path: frozenset[int]) -> int:
        if node not in memo:
            memo[node] = max((1 + longest(n, path | {node}) for n in edges.get(node, ())
                              if n not in path), default=1)
        return memo[node]

    return max((longest(n, frozenset()) for n in loads), default=1)


def _indexed(i: int, ins: tuple[Instruction, ...], du: DefUse) -> bool:
    """The address of load ``i`` depends, through address arithmetic, on the result of a load
    of any space (global, shared: a column staged by cp.async, local: a spilled column)."""
    stack = [(i, r) for r in ins[i].address_regs]
    seen = {i}
    while stack:
        node, reg = stack.pop()
        for d in du.defs(node, reg):
            x = ins[d]
            if x.mem_op == "load" and x.mem_space not in ("constant", ""):
                return True
            if x.opcode in ADDRESS_OPCODES and d not in seen:
                seen.add(d)
                stack.extend((d, r) for r in x.regs_read if r[0] in "RU"
                             and not r.startswith(("P", "UP")))
    return False


def _gathers(kernel, ins: tuple[Instruction, ...], du: DefUse, gather_param: str | None
             ) -> set[int]:
    """Indices of the gathers: loads whose base pointer is parameter ``gather_param`` (as a
    :class:`~sparsescope.sass.KernelAnalysis` with the source names it; none for a listing) and
    whose address depends on a loaded value (``x[col]``, not ``x[k]``). Two loads of one address
    (the same registers from the same definitions and offset: ``@P0 LDG`` / ``@!P0 LDG`` of a hot
    or cold column) count once."""
    refs = getattr(kernel, "global_loads", ()) if gather_param else ()
    if not refs:
        return set()
    index = {x.address: i for i, x in enumerate(ins)}
    out: dict[tuple, int] = {}
    for r in refs:
        i = index[r.address]
        if gather_param not in r.param_name.split("/") or ins[i].opcode == "LDGSTS" or \
                not _indexed(i, ins, du):
            continue
        key = (tuple((reg, du.defs(i, reg)) for reg in ins[i].address_regs),
               ins[i].address_offset)
        out.setdefault(key, i)
    return set(out.values())


def _direct(cfg: ControlFlow, li: int) -> set[int]:
    """Blocks of loop ``li`` outside every loop nested in it."""
    return {b for b in cfg.loops[li].blocks if cfg.loop_of[cfg.blocks[b].first] == li}


def work_loop(cfg: ControlFlow, ins: tuple[Instruction, ...], gathers: set[int]) -> int:
    """The loop that does a kernel's gathers: most gathers outside its nested loops, ties to the
    deeper, then to more global loads; without gathers, the static hot loop
    (:attr:`ControlFlow.hot_loop`). A grid-stride loop around unrolled work is chosen over the
    innermost loops it holds (``spmv_tile``'s tile loop, not its row-pointer loop)."""
    if not gathers or not cfg.loops:
        return cfg.hot_loop

    def count(li: int) -> int:
        return sum(1 for b in _direct(cfg, li) for i in range(cfg.blocks[b].first,
                                                               cfg.blocks[b].last + 1)
                   if i in gathers)

    best = max(range(len(cfg.loops)), key=lambda li: (count(li), cfg.loops[li].depth,
                                                      cfg.loops[li].global_loads))
    return best if count(best) else cfg.hot_loop


def _loop_indices(cfg: ControlFlow, loop: Loop) -> list[int]:
    return cfg.instructions_of(loop.blocks)


def _remainder(cfg: ControlFlow, ins: tuple[Instruction, ...], li: int, gathers: set[int]
               ) -> tuple[tuple[int, int] | None, int, int]:
    """(span, loads, gathers) of the remainder loop next to loop ``li`` (see KernelMLP)."""
    if li < 0:
        return None, 0, 0
    own = set(cfg.loops[li].blocks)
    best = None
    for lj, lp in enumerate(cfg.loops):
        blocks = set(lp.blocks)
        if lj == li or not lp.innermost or blocks <= own or own <= blocks:
            continue
        body = _loop_indices(cfg, lp)
        key = (sum(1 for i in body if i in gathers), lp.global_loads)
        if (key[0] if gathers else key[1]) and (best is None or key > best[0]):
            best = (key, lp)
    if best is None:
        return None, 0, 0
    (g, loads), lp = best
    return (lp.start_address, lp.end_address), loads, g


def _peeled(cfg: ControlFlow, gathers: set[int]) -> int:
    return sum(1 for i in gathers if cfg.loop_of[i] < 0 and cfg.blocks[cfg.block_of[i]].reachable)


def kernel_mlp(kernel, *, gather_param: str | None = None, loop: int | None = None
               ) -> KernelMLP:
    """The MLP of one kernel: a :class:`~sparsescope.sass.KernelAnalysis` (what
    ``analyse_listing``/``analyse_file``/``analyse_source`` hand out; its CFG is reused) or a
    :class:`~sparsescope.sass.KernelListing`.

    ``gather_param`` (``"x"``): the parameter whose loads are the gathers, named in the analysis
    of a kernel whose source was given; then the loop measured is the one doing the gathers
    (:func:`work_loop`) and the gather fields are filled. ``loop``: an index into the CFG's
    loops to measure instead.
    """
    ins: tuple[Instruction, ...] = kernel.instructions
    cfg = getattr(kernel, "cfg", None) or build_cfg(ins)
    name = _short_name(getattr(kernel, "demangled", "") or kernel.name)
    arch = getattr(kernel, "arch", "") or ""
    if not ins:
        return KernelMLP(name, False, 0, 0, 0, 1, 0, False, (), arch=arch)
    # an analysis hands over the def-use and load chains it found (the same walk of ``ins``)
    du = getattr(kernel, "defuse", None) or reaching_definitions(ins, cfg)
    gathers = _gathers(kernel, ins, du, gather_param)
    if loop is None:
        loop = work_loop(cfg, ins, gathers) if gathers else cfg.hot_loop
    body, lp = _body(cfg, len(ins), loop)
    loads = [i for i in body if ins[i].is_global_load]
    inside = set(loads)
    chains = getattr(kernel, "raw_chains", None)
    if chains is None:
        _, chains = load_slices_and_chains(ins, du)
    edges: dict[int, set[int]] = {}
    for c in chains:
        if c.producer in inside and c.consumer in inside and \
                _same_iteration(cfg, lp, c.producer, c.consumer):
            edges.setdefault(c.producer, set()).add(c.consumer)
    batch = max(_batches(ins, body, du), key=len, default=[])
    in_body = [i for i in loads if i in gathers]
    span, rem_loads, rem_gathers = _remainder(cfg, ins, loop, gathers)
    return KernelMLP(
        kernel=name, loop_found=lp is not None, loads_per_iteration=len(loads),
        independent_batch=len(batch),
        batch_bytes_per_thread=sum(ins[i].access_bytes for i in batch),
        rounds_per_iteration=_rounds(edges, loads),
        bytes_per_thread_per_iteration=sum(ins[i].access_bytes for i in loads),
        staged=any(x.opcode == "LDGSTS" for x in ins),
        evidence=tuple(f"{ins[i].address:#06x} {ins[i].mnemonic}" for i in batch),
        loop_span=(lp.start_address, lp.end_address) if lp is not None else None,
        gathers_per_iteration=len(in_body),
        gather_rounds=_gather_rounds(edges, in_body, gathers),
        remainder_span=span, remainder_loads_per_iteration=rem_loads,
        remainder_gathers_per_iteration=rem_gathers, peeled_gathers=_peeled(cfg, gathers),
        schedule=issue_schedule(ins, cfg, du, lp, gathers, source=name) if lp else None,
        staged_path=staged_path(ins, cfg, lp) if lp is not None else None,
        arch=arch, **_resources(kernel), **instruction_counts(cfg, ins, lp, span))


def _resources(kernel) -> dict[str, int]:
    """Registers and static shared memory of an analysed kernel (0 where not given)."""
    res = getattr(kernel, "resources", None)
    return {"registers": int(getattr(res, "registers", 0) or 0),
            "shared_bytes": int(getattr(res, "shared_bytes", 0) or 0)}


def instruction_counts(cfg: ControlFlow, ins: tuple[Instruction, ...], loop: Loop | None,
                       remainder: tuple[int, int] | None) -> dict[str, int]:
    """The instruction budget of a kernel for the issue and local-memory terms::

        loop_instructions      = |body of the measured loop| (nested loops once)
        remainder_instructions = |body of the remainder loop|
        other_instructions     = |reachable instructions| - the two above
        local_bytes_per_iteration = sum of LDL / STL widths in the measured loop's body
        local_store_bytes_per_iteration = the STL part of it
        local_frame_bytes      = max over LDL / STL of (offset + width)

    NOPs (alignment padding) are no work and are left out. Without a loop (``loop`` None) the
    whole kernel is ``other``. Hand check (``csr_scalar``, NVRTC 13.5, sm_90): 89 in the
    16-per-iteration loop, 17 in the remainder loop, 145 outside."""
    def counted(i: int) -> bool:
        return ins[i].opcode != "NOP" and cfg.blocks[cfg.block_of[i]].reachable

    body = set(_loop_indices(cfg, loop)) if loop is not None else set()
    rem: set[int] = set()
    if remainder is not None:
        rem = {i for i, x in enumerate(ins) if remainder[0] <= x.address <= remainder[1]}
    reach = [i for i in range(len(ins)) if counted(i)]
    local = [x for x in ins if x.mem_space == "local"]
    return dict(
        loop_instructions=sum(1 for i in reach if i in body),
        remainder_instructions=sum(1 for i in reach if i in rem and i not in body),
        other_instructions=sum(1 for i in reach if i not in body and i not in rem),
        local_bytes_per_iteration=sum(ins[i].access_bytes for i in body
                                      if ins[i].mem_space == "local"),
        local_store_bytes_per_iteration=sum(ins[i].access_bytes for i in body
                                            if ins[i].mem_space == "local"
                                            and ins[i].mem_op == "store"),
        local_frame_bytes=max((x.address_offset + x.access_bytes for x in local), default=0))


def _gather_rounds(edges: dict[int, set[int]], body_gathers: list[int], gathers: set[int]
                   ) -> int:
    """1 + the longest producer -> consumer path ending at a gather (0 without gathers). A
    gather is no producer: a gathered value never forms an address, and such an edge is the
    reaching definitions' over-approximation (a register a guarded load may not have written)."""
    if not body_gathers:
        return 0
    reverse: dict[int, set[int]] = {}
    for p, cs in edges.items():
        if p in gathers:
            continue
        for c in cs:
            reverse.setdefault(c, set()).add(p)
    return _rounds(reverse, body_gathers)


def listing_mlp(text: str) -> dict[str, KernelMLP]:
    """Function name as in the listing -> :class:`KernelMLP`, for every kernel of a
    ``cuobjdump -sass``, ``nvdisasm`` or ``nvdisasm -json`` listing (the last architecture wins
    when a listing holds a kernel for several)."""
    from sparsescope._tools import demangle

    listings = list(iter_listing_text(text))
    names = demangle([k.name for k in listings])
    return {k.name: replace(kernel_mlp(k), kernel=_short_name(names[k.name])) for k in listings}
