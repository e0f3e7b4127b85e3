"""A loop's issue schedule read from its SASS (``model.issue_schedule`` times it): the loads
and the instructions that wait for them, along the path every iteration runs.

:mod:`.mlp` counts the longest chain of dependent loads in a loop body (``col -> x``: 2
rounds). A warp issues in order, though: it stops at the first instruction whose operand is a
load still in flight, and nothing behind that instruction issues until the load returns. How
many such stops an iteration makes depends on where the compiler placed the uses, not only on
the chains. ``spmv_sell<float, 0, 1, 1, 2, 8, 1>`` (UNROLL 2, 32 registers) is the example:
its 8-step SASS iteration is four copies of the 2-step body, each copy's gathers waiting for
columns the copy before loaded, 6 stops where the chain count says 2; UNROLL 4 (40 registers)
makes 2.

**The steps.** The body's instructions in address order that issue a global load or read one
(def-use: :mod:`.dataflow`); a load read by an instruction at or before it in the body was
issued in the previous iteration (software pipelining). A load is a **gather** when it is one of
``mlp``'s gathers (from ``x``, its address from a loaded value), a **stream** load otherwise.
With one unit of latency for every load, the walk's stops are ``IssueSchedule.stops``.

**The path.** Only blocks that run on every iteration are walked: a block the loop can go
around (an escape column read by ``delta16_col``) is taken as not run, its loads as not issued
(the model adds the escape's round trip for the share of iterations the format says meet one:
``KernelShape.escape_share``). A guarded load in a
walked block (``@P0 LDG``) is taken as issued: a warp waits for it whenever a lane runs it.
No schedule (None) when the walked path misses a gather of the loop (the work itself is then
conditional, and the path says nothing of it) or when the loop holds another loop
(``spmv_tile``'s tile loop and its row-pointer loop: how many times the inner one runs per
iteration is the matrix's, not the code's); the declared rounds stand there.

**Issue.** Each step carries the instructions the warp issues up to it since the step before
(``IssueStep.issued``; the rest of the body after the last step: ``IssueSchedule.tail``), NOPs
left out: the walk charges each its issue interval (``model.predict.issue_interval_ns``).

What it cannot see: a use that waits on another load's scoreboard than its own (a warp has
six, so a kernel with more loads in flight may wait earlier than here), which instructions
depend on the one before (every one is charged the same interval) and dual-issue, and waits
through shared memory (``LDGSTS`` then ``LDS``): a staged kernel keeps its declared rounds.
"""

from __future__ import annotations

from sparsescope.model.issue_schedule import GATHER, STREAM, IssueSchedule, IssueStep
from sparsescope.sass.cfg import ControlFlow, Loop
from sparsescope.sass.dataflow import DefUse
from sparsescope.sass.instructions import Instruction


def reaches(cfg: ControlFlow, loop: Loop, start: int, targets: set[int],
            avoid: set[int]) -> bool:
    """Whether a block of ``targets`` can be reached from block ``start`` within one iteration
    of ``loop``: through its blocks, never back through its header, never through ``avoid``."""
    inside = set(loop.blocks)
    seen, stack = {start}, [start]
    while stack:
        b = stack.pop()
        if b in targets:
            return True
        for s in cfg.blocks[b].successors:
            if s in inside and s not in avoid and s not in seen \
                    and cfg.blocks[s].start_address != loop.header_address:
                seen.add(s)
                stack.append(s)
    return False


def every_iteration_blocks(cfg: ControlFlow, loop: Loop) -> set[int]:
    """Blocks of ``loop`` on every path from its header to a back edge: a block ``b`` is one
    when, with ``b`` removed, no back edge's block can be reached from the header."""
    inside = set(loop.blocks)
    header = next(b for b in inside if cfg.blocks[b].start_address == loop.header_address)
    latches = {b for b in inside if cfg.blocks[b].end_address in loop.back_edge_addresses}
    return {header} | {b for b in inside
                       if b != header and not reaches(cfg, loop, header, latches, {b})}


def issue_schedule(ins: tuple[Instruction, ...], cfg: ControlFlow, du: DefUse, loop: Loop,
                   gathers: set[int], source: str = "") -> IssueSchedule | None:
    """The :class:`IssueSchedule` of ``loop``'s every-iteration path (module docstring); None
    when that path misses one of the loop's gathers or holds none."""
    inside = set(loop.blocks)
    if any(other is not loop and set(other.blocks) < inside for other in cfg.loops):
        return None  # a nested loop runs a number of times the walk cannot know
    body = cfg.instructions_of(every_iteration_blocks(cfg, loop))
    walked = set(body)
    if not gathers & walked or gathers & (set(cfg.instructions_of(inside)) - walked):
        return None
    loads = [i for i in body if ins[i].is_global_load]
    number = {i: k for k, i in enumerate(loads)}
    steps = []
    issued = 0  # instructions since the last step (the walk's issue time; NOPs are padding)
    for i in body:
        issued += ins[i].opcode != "NOP"
        needs = sorted({d for defs in du.reaching[i].values() for d in defs if d in number})
        if i not in number and not needs:
            continue
        steps.append(IssueStep(load=number.get(i, -1),
                               reads=tuple(number[d] for d in needs if d < i),
                               carried=tuple(number[d] for d in needs if d >= i),
                               issued=issued))
        issued = 0
    kinds = tuple(GATHER if i in gathers else STREAM for i in loads)
    return IssueSchedule(steps=tuple(steps), kinds=kinds, source=source, tail=issued)
