"""What one iteration of a staged loop issues, read from its SASS (``KernelShape.staged_path``).

A staged kernel (``spmv_sell_dae``: its streams copied into shared memory by cp.async,
``LDGSTS``, one chunk ahead) runs a loop whose body holds the copy loops of the next chunk.
Charging every iteration its whole static body (``KernelMLP.loop_instructions``) counts code
that rarely runs: the copy loops themselves (a lane's share of a chunk fits their unrolled
prologue), the code that only leads into them, and the consumer's escape paths. The ncu
profile of ``spmv_sell_dae<float, 1, 3, 1, 4, 6, 1>`` on ldoor
(results/h200/profile/2026-11-28-seed6-misses) ran 239 instructions an iteration of a
413-instruction body. The body's blocks, split by the control flow alone:

* **every**: the blocks on every path from the header to a back edge
  (``issue_order.every_iteration_blocks``): run each iteration (145 there, 145.2 run);
* **staging**: the other blocks, outside the nested (copy) loops and the code that reaches the
  back edge only through them, from which a block holding an ``LDGSTS`` can be reached
  without passing those: the next chunk's copies, run by every iteration but a warp's last
  (124 static there; 75.7 run an iteration, at 4.7 iterations a warp);
* the rest (the copy loops, what leads only into them, conditional paths of the consumer) is
  not charged.

``model.onchip.warp_instructions`` then charges a warp of ``n`` iterations
``n x every + (n - 1) x staging`` (ldoor: 145 + 0.79 x 124 = 243 an iteration, against 239).
"""

from __future__ import annotations

from sparsescope.sass.cfg import ControlFlow, Loop
from sparsescope.sass.instructions import Instruction
from sparsescope.sass.issue_order import every_iteration_blocks, reaches


def staged_path(ins: tuple[Instruction, ...], cfg: ControlFlow, loop: Loop
                ) -> tuple[int, int] | None:
    """(every-iteration instructions, staging instructions) of ``loop`` (module docstring),
    NOPs left out; None when the loop holds no ``LDGSTS`` outside its nested loops."""
    inside = set(loop.blocks)
    nested = {b for other in cfg.loops if other is not loop and set(other.blocks) < inside
              for b in other.blocks}
    header = next(b for b in inside if cfg.blocks[b].start_address == loop.header_address)
    latches = {b for b in inside if cfg.blocks[b].end_address in loop.back_edge_addresses}

    def count(blocks) -> int:
        return sum(1 for i in cfg.instructions_of(blocks) if ins[i].opcode != "NOP")

    every = every_iteration_blocks(cfg, loop)
    into_nested = {b for b in inside - nested if b != header
                   and not reaches(cfg, loop, b, latches, nested)}
    copies = {b for b in inside - nested
              if any(ins[i].opcode == "LDGSTS" for i in cfg.instructions_of([b]))}
    if not copies:
        return None
    staging = {b for b in inside - nested - into_nested - every
               if reaches(cfg, loop, b, copies, nested | into_nested)}
    return count(every), count(staging)
