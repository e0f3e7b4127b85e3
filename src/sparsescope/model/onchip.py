"""What a kernel costs on the SM besides its DRAM and L2 bytes: the warp instructions it issues
and the local-memory (register spill) traffic its loop makes.

**Issue.** Each SM sub-partition issues at most one warp instruction per cycle, so a kernel
needs at least ::

    issue time = warp instructions / (SMs x schedulers per SM x SM clock)

of the device (its spec), whatever its memory does. The warp instructions come from the kernel's
SASS (``KernelShape.loop_instructions`` etc., ``sass.mlp.instruction_counts``) under the
kernel's own decomposition of the nonzeros::

    warp instructions = sum over warps of (main_w x loop + rem_w x remainder + other)

``loop`` is what one main-loop iteration *issues* (:func:`loop_issued_instructions`), not the
loop body's size: where the SASS gives the loop's issue schedule (``model.issue_schedule``:
the blocks every iteration runs), a warp issues that path, and the body's other blocks -- the
code a warp branches around, delta16's escape columns -- only on the share ``p`` of its
iterations that take them (``KernelShape.escape_share``, the share the iteration time already
charges a dependent load for)::

    loop = path + p x (body - path)          (path: the schedule's instructions)
    loop = body                              (no schedule: nested or conditional)

A staged loop (cp.async copies of the next chunk inside it, ``sass.staged_path``) issues its
every-iteration blocks each iteration and its staging blocks on all but a warp's last::

    loop_w = main_w x every + (main_w - 1) x staging

(``spmv_sell<float, 1, 1, 1, 4, 6, 1>``, delta16: a 139-instruction body of which 91 run on
every iteration; an analog without escapes, p = 0, issues 91 an iteration, which the body
count overstated by half -- as ``smsp__inst_executed`` counts executed instructions.)

``main_w`` and ``rem_w`` are the iterations of the warp's main and remainder loops: a warp runs
each loop as long as its longest lane needs it (SIMT), so they are the maxima over its rows
(``rows``) or, for a nonzero split (``nnz``), every warp's ``row_iterations`` of
``ceil(nnz / threads)`` nonzeros per thread. A library kernel whose SASS is not read declares
``instructions_per_nonzero`` instead (counted by ncu): ``nnz x instructions_per_nonzero``.
Loops nested in the measured loop (a tile's per-row reduction) count once per iteration; their
extra trips are not counted, so the issue time is a floor.

**Spills.** A loop that spills stores registers to local memory and reloads them every
iteration (``STL``/``LDL`` in its SASS). The L1 passes stores through to the L2 and keeps the
lines for the reloads, so the spills cost the L2 their stores::

    spill bytes = sum over warps of main_w x 32 x local_store_bytes_per_iteration

(ncu on an H200, ``spmv_sell<float, 1, 3, ...>`` on the ldoor analog, 21 STL and 21 LDL of 4
bytes an iteration: 10.85 M sectors written to the L2, 347 MB, while its L2 reads, 7.95 M
sectors, are its streams and x alone: the reloads hit the L1.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sparsescope.model.iterations import (
    _group_max,
    kernel_row_lengths,
    sampled_warp_iterations,
    split_iterations,
)
from sparsescope.model.kernel_shape import KernelShape, escape_iteration_share
from sparsescope.model.last_matrix import LastMatrixAnswers
from sparsescope.model.prediction import PredictionTerm
from sparsescope.model.work_sample import sample_key


def warp_iterations(indptr: np.ndarray, shape: KernelShape) -> tuple[np.ndarray, np.ndarray]:
    """(main, remainder) iterations of each warp (module docstring). Hand check (rows, 1 thread
    a row, step 16, remainder 1): a warp of rows 37 and 20 long -> main max(2, 1) = 2,
    remainder max(5, 4) = 5. Kept for the last matrix (``model.last_matrix``), by what they
    depend on: the predictions of a matrix's kernels share most of them."""
    key = (shape.entries_per_nonzero, shape.decomposition, shape.split_long_rows,
           shape.sort_window, shape.threads_per_row, shape.nnz_per_iteration,
           shape.remainder_step, shape.peeled_nonzeros,
           shape.grid_blocks * shape.warps_per_block if shape.decomposition == "nnz" else 0,
           sample_key(indptr))
    return WARP_ITERATIONS.get((indptr,), key, lambda: _readonly(*_warp_iterations(indptr,
                                                                                shape)))


def _readonly(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for array in arrays:
        array.flags.writeable = False
    return arrays


WARP_ITERATIONS = LastMatrixAnswers()
""":func:`warp_iterations` of the last matrix."""


def _warp_iterations(indptr: np.ndarray, shape: KernelShape) -> tuple[np.ndarray, np.ndarray]:
    sampled = sampled_warp_iterations(indptr, shape)  # above the work budget (model.work_sample)
    if sampled is not None:
        return sampled
    lengths = kernel_row_lengths(indptr, shape)
    if shape.decomposition == "nnz":
        warps = max(1, shape.grid_blocks * shape.warps_per_block)
        per_thread = np.array([math.ceil(int(lengths.sum()) / max(1, warps * 32))])
        main, rem = split_iterations(per_thread, 1, shape.nnz_per_iteration,
                                     shape.remainder_step, shape.peeled_nonzeros)
        return np.full(warps, main[0]), np.full(warps, rem[0])
    main, rem = split_iterations(lengths, shape.threads_per_row, shape.nnz_per_iteration,
                                 shape.remainder_step, shape.peeled_nonzeros)
    rows_per_warp = max(1, 32 // shape.threads_per_row)
    return _group_max(main, rows_per_warp), _group_max(rem, rows_per_warp)


def knows_instructions(shape: KernelShape) -> bool:
    """The shape carries an instruction count (from SASS, or declared per nonzero)."""
    return bool(shape.instructions_per_nonzero or shape.loop_instructions
                or shape.other_instructions)


def loop_issued_instructions(shape: KernelShape) -> float:
    """Warp instructions one main-loop iteration issues (module docstring)::

        path + p x (loop_instructions - path)   where the issue schedule counts its path
        loop_instructions                       otherwise

    A staged loop's iteration that stages the next chunk: every + staging.
    Hand check: a 139-instruction body whose schedule walks 91 of them, escape share 0.25 ->
    91 + 0.25 x 48 = 103; no escapes -> 91; no schedule -> 139; staged (145, 124) -> 269."""
    if shape.staged_path is not None:  # an iteration that stages the next chunk
        return float(sum(shape.staged_path))
    schedule = shape.issue_schedule
    path = schedule.instructions if schedule is not None and not shape.staged else 0
    if not path or path >= shape.loop_instructions:
        return float(shape.loop_instructions)
    return path + escape_iteration_share(shape) * (shape.loop_instructions - path)


def warp_instructions(indptr: np.ndarray, shape: KernelShape,
                      iterations: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """Warp instructions the kernel issues (module docstring); 0 when the shape knows none.
    Hand check: 2 warps of (main, rem) (2, 5) and (1, 0), loop 89, remainder 17, other 145
    -> (2 x 89 + 5 x 17 + 145) + (89 + 145) = 642; staged (145, 124), warps of 5 and 1
    iterations, other 125 -> (5 x 145 + 4 x 124 + 125) + (145 + 125) = 1,616."""
    if shape.instructions_per_nonzero:
        return float(indptr[-1]) * shape.instructions_per_nonzero if len(indptr) else 0.0
    if not knows_instructions(shape):
        return 0.0
    main, rem = iterations if iterations is not None else warp_iterations(indptr, shape)
    if shape.staged_path is not None:  # a warp's last iteration stages nothing
        every, staging = shape.staged_path
        loop = float(main.sum() * every + np.maximum(main - 1, 0).sum() * staging)
    else:
        loop = float(main.sum() * loop_issued_instructions(shape))
    return float(loop + rem.sum() * shape.remainder_instructions
                 + main.size * shape.other_instructions)


def issue_ms(instructions: float, sm_count: int, schedulers: int, clock_mhz: float) -> float:
    """``instructions / (SMs x schedulers x clock)`` in ms. Hand check: 1.32e9 instructions on
    132 SMs x 4 schedulers at 1,000 MHz -> 1.32e9 / 5.28e11 s = 2.5 ms."""
    return instructions / (sm_count * schedulers * clock_mhz * 1e6) * 1e3


def spill_bytes(shape: KernelShape, main: np.ndarray) -> float:
    """Bytes the warps' loops store to local memory (module docstring): sum main_w x 32 x
    ``local_store_bytes_per_iteration``. Hand check: 3 warps of 4 iterations, 84 B a thread
    -> 12 x 32 x 84 = 32,256."""
    return float(main.sum()) * 32 * shape.local_store_bytes_per_iteration


@dataclass(frozen=True)
class SmWork:
    """The SM-side work of one prediction (:func:`sm_work`)."""

    instructions: float
    """Warp instructions issued (0: unknown)."""
    spill_bytes: float
    """Local-memory stores of the loops, bytes written to the L2."""
    term: PredictionTerm | None
    """The ``issue`` term, None when the instructions or the clock are unknown."""


def sm_work(indptr: np.ndarray, shape: KernelShape, rates) -> SmWork:
    """Instructions, spill bytes and the issue term of one case (module docstring)."""
    if not knows_instructions(shape) and not shape.local_store_bytes_per_iteration:
        return SmWork(0.0, 0.0, None)
    iterations = warp_iterations(indptr, shape)
    instructions = warp_instructions(indptr, shape, iterations)
    term = None
    if instructions and rates.sm_clock_mhz:
        ms = issue_ms(instructions, rates.sm_count, rates.schedulers_per_sm, rates.sm_clock_mhz)
        term = PredictionTerm("issue", ms,
                              f"{instructions:,.0f} warp instructions / ({rates.sm_count} SMs x "
                              f"{rates.schedulers_per_sm} schedulers x "
                              f"{rates.sm_clock_mhz:,.0f} MHz)")
    return SmWork(instructions, spill_bytes(shape, iterations[0]), term)
