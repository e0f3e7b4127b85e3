"""How many loop iterations each row, warp and block of a kernel takes under the kernel's own
decomposition of the nonzeros (``KernelShape``): the counts the latency, imbalance, memory and
issue terms of ``model.predict`` and ``model.onchip`` are built on."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.last_matrix import LastMatrixAnswers
from sparsescope.model.work_sample import WorkSample, sample_for, stand_in, unit_weights


def block_iterations(indptr: np.ndarray, shape: KernelShape) -> np.ndarray:
    """Loop iterations of each block under the kernel's own decomposition.

    rows: a row of length L (after cutting rows longer than ``split_long_rows`` into pieces)
    takes ``row_iterations(L)`` iterations; a warp takes its longest row's (its
    32 / threads_per_row rows run in lock step), a block its longest warp's. nnz: every thread
    gets ceil(nnz / threads) nonzeros, so every block takes ``row_iterations`` of that with one
    thread. Hand check (rows, 1 thread per row, 1 per iteration, 64-thread blocks): 128 rows of
    length 1 except row 70 of length 9 -> blocks [1, 9]. Above the work budget, the blocks of
    the matrix's work sample, each repeated by its weight (``model.work_sample.stand_in``).
    """
    sample = sample_for(indptr)
    if sample is not None:
        return _sampled_block_iterations(indptr, shape, sample)
    lengths = kernel_row_lengths(indptr, shape)
    if shape.decomposition == "nnz":
        threads = max(1, shape.grid_blocks * shape.block_threads)
        per_thread = np.array([math.ceil(int(lengths.sum()) / threads)])
        each = int(row_iterations(per_thread, 1, shape.nnz_per_iteration,
                                  shape.remainder_step, shape.peeled_nonzeros)[0])
        return np.full(max(1, shape.grid_blocks), each, dtype=np.int64)
    per_row = row_iterations(lengths, shape.threads_per_row, shape.nnz_per_iteration,
                             shape.remainder_step, shape.peeled_nonzeros)
    rows_per_warp = max(1, 32 // shape.threads_per_row)
    warps = _group_max(per_row, rows_per_warp)
    return _group_max(warps, shape.warps_per_block)


def block_maxima(indptr: np.ndarray, shape: KernelShape,
                 per_row: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Per block of a kernel that takes whole rows (``decomposition`` ``rows``), the largest
    ``per_row(lengths)`` of its rows (the rows as :func:`kernel_row_lengths` walks them; a
    warp's rows run in lock step, a block's warps until its longest is done); above the work
    budget, of the matrix's work sample, each block repeated by its weight (the kernel the
    sample stands for, ``model.work_sample``). A loop count of its own per row (a CSR kernel's
    short windows, ``model.csr_windows``) gets the sample this way too. Hand check: rows of
    lengths [1, 9, 2, 2], ``per_row`` = L, 2 rows a warp, 1 warp a block -> [9, 2]."""
    sample = sample_for(indptr)
    if sample is None:
        lengths, weights = kernel_row_lengths(indptr, shape), None
    else:
        lengths, weights = sampled_row_lengths(indptr, shape, sample)
    rows_per_warp = max(1, 32 // max(1, shape.threads_per_row))
    blocks = _group_max(_group_max(np.asarray(per_row(lengths)), rows_per_warp),
                        shape.warps_per_block)
    if weights is None:
        return blocks
    return stand_in(blocks, unit_weights(weights, rows_per_warp * shape.warps_per_block))


def kernel_row_lengths(indptr: np.ndarray, shape: KernelShape) -> np.ndarray:
    """The entries of each row the kernel's loop walks: ``ceil(L x entries_per_nonzero)``
    (a 1 x B block format stores B entries a block: more than the row's nonzeros when its
    columns are not consecutive), then, for a row split, rows longer than ``split_long_rows``
    cut into pieces and the lengths sorted within ``sort_window`` windows (the nonzero split
    takes them as they are). Hand check: lengths [4, 1], 1.5 entries a nonzero -> [6, 2].
    Kept for the last matrix (``model.last_matrix``; read-only): the predictions of one
    matrix's kernels ask it twice each, most of them with the same cut and window."""
    return ROW_LENGTHS.get((indptr,), _length_key(shape),
                           lambda: _readonly(_row_lengths(indptr, shape)))


def sampled_row_lengths(indptr: np.ndarray, shape: KernelShape,
                        sample: WorkSample) -> tuple[np.ndarray, np.ndarray]:
    """(the rows of ``sample`` as the kernel walks them (:func:`kernel_row_lengths` of the
    sample's own rows), the weight of each: its source row's, a cut row's pieces each)."""
    key = ("sample", sample.budget_nnz, sample.seed, *_length_key(shape))

    def make():
        lengths = _row_lengths(sample.indptr, shape)
        weights = sample.row_weight
        if shape.decomposition != "nnz" and shape.split_long_rows > 0:
            walked = np.diff(sample.indptr)
            if shape.entries_per_nonzero != 1.0:
                walked = np.ceil(walked * shape.entries_per_nonzero).astype(np.int64)
            weights = np.repeat(weights, np.maximum(1, -(-walked // shape.split_long_rows)))
        return _readonly(lengths), _readonly(np.asarray(weights, dtype=np.float64))

    return ROW_LENGTHS.get((indptr,), key, make)


def walked_entries(indptr: np.ndarray, shape: KernelShape, sample: WorkSample) -> int:
    """Entries the kernel's loop walks in all, the matrix's: its nonzeros (one entry each), or
    the sample's weighted sum of ``ceil(L x entries_per_nonzero)``."""
    if shape.entries_per_nonzero == 1.0:
        return sample.total_nnz
    lengths, weights = sampled_row_lengths(indptr, replace(shape, decomposition="nnz"), sample)
    return round(float(np.dot(weights, lengths)))


def _sampled_block_iterations(indptr: np.ndarray, shape: KernelShape,
                              sample: WorkSample) -> np.ndarray:
    if shape.decomposition == "nnz":
        threads = max(1, shape.grid_blocks * shape.block_threads)
        per_thread = np.array([math.ceil(walked_entries(indptr, shape, sample) / threads)])
        each = int(row_iterations(per_thread, 1, shape.nnz_per_iteration,
                                  shape.remainder_step, shape.peeled_nonzeros)[0])
        return np.full(max(1, shape.grid_blocks), each, dtype=np.int64)
    return block_maxima(indptr, shape, lambda lengths: row_iterations(
        lengths, shape.threads_per_row, shape.nnz_per_iteration, shape.remainder_step,
        shape.peeled_nonzeros))


def sampled_warp_iterations(indptr: np.ndarray, shape: KernelShape
                            ) -> tuple[np.ndarray, np.ndarray] | None:
    """(main, remainder) iterations of each warp of the kernel the work sample stands for
    (each sampled warp repeated by its weight), or None at or below the work budget
    (``model.onchip.warp_iterations`` computes them on the whole matrix)."""
    sample = sample_for(indptr)
    if sample is None:
        return None
    if shape.decomposition == "nnz":
        warps = max(1, shape.grid_blocks * shape.warps_per_block)
        per_thread = np.array([math.ceil(walked_entries(indptr, shape, sample)
                                         / max(1, warps * 32))])
        main, rem = split_iterations(per_thread, 1, shape.nnz_per_iteration,
                                     shape.remainder_step, shape.peeled_nonzeros)
        return np.full(warps, main[0]), np.full(warps, rem[0])
    lengths, weights = sampled_row_lengths(indptr, shape, sample)
    main, rem = split_iterations(lengths, shape.threads_per_row, shape.nnz_per_iteration,
                                 shape.remainder_step, shape.peeled_nonzeros)
    rows_per_warp = max(1, 32 // shape.threads_per_row)
    each = unit_weights(weights, rows_per_warp)
    return (stand_in(_group_max(main, rows_per_warp), each),
            stand_in(_group_max(rem, rows_per_warp), each))


def _length_key(shape: KernelShape) -> tuple:
    return (shape.entries_per_nonzero, shape.decomposition == "nnz",
            shape.split_long_rows if shape.decomposition != "nnz" else 0,
            shape.sort_window if shape.decomposition != "nnz" else 0)


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _row_lengths(indptr: np.ndarray, shape: KernelShape) -> np.ndarray:
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    if shape.entries_per_nonzero != 1.0:
        lengths = np.ceil(lengths * shape.entries_per_nonzero).astype(np.int64)
    if shape.decomposition == "nnz":
        return lengths
    if shape.split_long_rows > 0:
        lengths = _cut(lengths, shape.split_long_rows)
    if shape.sort_window > 1 and lengths.size:
        lengths = _sorted_in_windows(lengths, shape.sort_window)
    return lengths


def row_iterations(lengths: np.ndarray, threads: int, step: int,
                   remainder_step: int = 0, peeled: int = 0) -> np.ndarray:
    """Iterations a row of each length takes with ``threads`` threads loading ``step``
    nonzeros each per iteration, the last ``L mod (threads x step)`` taken ``remainder_step``
    at a time (0: by a whole step), ``peeled`` in straight-line chunks: the sum of
    :func:`split_iterations`'s two loops::

        floor(L / (threads step)) + ceil((L mod (threads step)) / (threads remainder_step))

    Hand check: L = 37, 1 thread, step 16, remainder 1 -> 2 + 5 = 7; remainder 0 -> 3.
    """
    main, rem = split_iterations(lengths, threads, step, remainder_step, peeled)
    return main + rem


def split_iterations(lengths: np.ndarray, threads: int, step: int,
                     remainder_step: int = 0, peeled: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(main, remainder) loop iterations of rows of each length, ``threads`` lanes a row,
    ``step`` nonzeros a lane per main iteration, the tail ``remainder_step`` at a time::

        main = floor(L / (threads step)),  rem = ceil((L mod (threads step)) / (threads rs))

    (``main = ceil(L / (threads step))``, ``rem = 0`` without a remainder loop: rs = 0 or
    rs >= step). With ``peeled`` nonzeros (< step) in straight-line copies of the body, chunks
    of the powers of two in ``peeled`` (``c`` the smallest), a lane's tail ``t`` runs the
    chunks of the bits of ``t // c`` that ``peeled`` has, each one remainder iteration (one
    round of loads), then the rest ``rs`` at a time; without a remainder loop the body's steps
    are guarded, so the lane's ``n = ceil(L / threads)`` is first rounded up to ``c``::

        remainder loop:  main = floor(n / step), t = n mod step
        guarded:         main = floor(ceil(n / c) c / step), t = ceil(n / c) c mod step
        rem = popcount((t // c) & (peeled // c)) + ceil(rest / rs)   (rest: t less the chunks;
              without a remainder loop a rest takes one more main iteration)

    Hand checks: L = 37, 1 thread, step 16, rs 1 -> (2, 5); rs 0 -> (3, 0); peeled 12 (8 + 4),
    rs 1 -> t = 5: the 4-chunk and 1 -> (2, 2); L = 19, step 8, peeled 4, no remainder loop ->
    n rounded to 20, (2, 1). The csr_scalar and spmv_sell loops as ncu counts them on cage15
    (results/h200/profile/2026-11-28-seed6-misses)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    chunk = threads * step
    remainder_loop = 0 < remainder_step < step
    if not (0 < peeled < step):
        if not remainder_loop:
            return -(-lengths // chunk), np.zeros_like(lengths)
        return lengths // chunk, -(-(lengths % chunk) // (threads * remainder_step))
    smallest = peeled & -peeled
    lane = -(-lengths // threads)
    if not remainder_loop:
        lane = -(-lane // smallest) * smallest
    main, tail = lane // step, lane % step
    taken = (tail // smallest) & (peeled // smallest)
    rest = tail - taken * smallest
    rem = np.bitwise_count(taken).astype(np.int64)
    if remainder_loop:
        return main, rem + -(-rest // remainder_step)
    return main + (rest > 0), rem


def _cut(lengths: np.ndarray, piece: int) -> np.ndarray:
    """Rows longer than ``piece`` cut into pieces of ``piece`` nonzeros, in place of the row
    (an empty row stays one empty piece). Hand check: [5, 0, 2], piece 2 -> [2, 2, 1, 0, 2]."""
    pieces = np.maximum(1, -(-lengths // piece))
    long = np.flatnonzero(pieces > 1)
    out = np.repeat(lengths, pieces)          # a row of one piece keeps its length
    if long.size:                             # only the long rows' pieces change
        count = pieces[long]
        first = (np.cumsum(pieces) - pieces)[long]
        k = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        out[np.repeat(first, count) + k] = np.minimum(np.repeat(lengths[long], count)
                                                      - k * piece, piece)
    return out


ROW_LENGTHS = LastMatrixAnswers()
""":func:`kernel_row_lengths` of the last matrix, by cut and window."""


def _sorted_in_windows(lengths: np.ndarray, window: int) -> np.ndarray:
    """Row lengths sorted longest first within consecutive windows of ``window`` rows."""
    pad = (-lengths.size) % window
    blocks = np.concatenate([lengths, np.zeros(pad, dtype=lengths.dtype)]).reshape(-1, window)
    return -np.sort(-blocks, axis=1).reshape(-1)[:lengths.size]


def _group_max(values: np.ndarray, group: int) -> np.ndarray:
    """Max of each run of ``group`` consecutive values (the last run may be short)."""
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    pad = (-values.size) % group
    padded = np.concatenate([values, np.zeros(pad, dtype=values.dtype)])
    return padded.reshape(-1, group).max(axis=1)


#: Rounds of blocks (grid / resident slots) up to which :func:`wave_makespan` schedules every
#: block; above it the rounding of the last wave is under 1 / WAVES_SCHEDULED of the time and
#: the average (total / slots) is used.
WAVES_SCHEDULED = 32


def wave_makespan(block_ns: np.ndarray, slots: int) -> float:
    """When the last block of a grid finishes, its blocks dispatched in launch order to the
    first free of ``slots`` resident-block slots (the block scheduler's list scheduling), each
    taking ``block_ns``::

        finish(b) = block_ns[b] + earliest finish among the slots when b is dispatched
        makespan  = max finish(b)      (total / slots above WAVES_SCHEDULED rounds)

    A grid of 1.5 waves of equal blocks takes two block times, not 1.5: the latency of a
    latency-bound kernel comes in whole rounds. Hand check: 3 blocks of 1 us on 2 slots ->
    2 us; [5, 1, 1, 1] on 2 slots -> 5 (the three short ones run beside the long one)."""
    times = np.asarray(block_ns, dtype=float)
    slots = max(1, int(slots))
    if times.size == 0:
        return 0.0
    if times.size <= slots:
        return float(times.max())
    if times.size > WAVES_SCHEDULED * slots:
        return float(max(times.sum() / slots, times.max()))
    if np.all(times == times[0]):
        return float(math.ceil(times.size / slots) * times[0])
    free = [0.0] * slots            # a heap of the slots' finish times
    heapq.heapify(free)
    end = 0.0
    for t in times.tolist():
        done = heapq.heappop(free) + t
        end = max(end, done)
        heapq.heappush(free, done)
    return end
