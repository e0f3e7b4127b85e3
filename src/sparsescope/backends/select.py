"""Automatic choice of an own SpMV kernel from matrix statistics, with the reason in words.

Pure NumPy: no GPU needed to decide (the SM count is a parameter; 132 on an H100/H200 SXM).
:func:`matrix_statistics` measures what the rules read (row-length moments, SELL padding, the
share of columns a 16-bit offset can hold); :func:`select_kernel` applies the rules, first
match wins:

0. ``cuda-spmv-blocked16`` (one 16-bit offset per 1 x B block of consecutive columns, B from
   :data:`BLOCK_WIDTHS`) when the row lengths are regular (as for rule 1), at most
   :data:`DELTA16_MAX_ESCAPE_FRACTION` of the columns escape 16 bits and its estimated bytes
   are at least :data:`BLOCKED_MIN_SAVING` below delta16's (FEM rows made of runs of B
   columns), launched as the shared-memory-staged (cp.async) kernel with
   :data:`BLOCKED_PARAMS`: it keeps DRAM busy with few rows too, so no warp-count rule.
1. SELL slices (``cuda-spmv-delta16`` or ``cuda-spmv-sell``) when the row lengths are regular
   (SELL-32-256 pads at most :data:`SELL_MAX_PADDING` of the nonzeros) and there are enough
   rows to give every SM :data:`SELL_MIN_WARPS_PER_SM` warps of 16 rows: a warp then reads
   contiguous bytes and 32 neighbouring rows gather x together.
   a. ``cuda-spmv-delta16`` (16-bit column offsets) when at most
      :data:`DELTA16_MAX_ESCAPE_FRACTION` of the columns escape: it moves 6 bytes per nonzero
      instead of 8, but every escape adds a dependent load (cage15's 9.9% escapes made it
      slower than INT32 SELL on the H200);
   b. ``cuda-spmv-sell`` otherwise.
   Two threads per row when one-thread slices would fill fewer than
   :data:`TPR2_MAX_WAVES` waves of the GPU's warp slots (half the steps per warp, twice the
   warps); ``unroll 2 / minb 8`` (32 registers, 64 warps per SM) instead of ``unroll 4 /
   minb 6`` (48 warps per SM, deeper pipelining) when its last wave is fuller by more than
   :data:`WAVE_FILL_MARGIN`.
2. Otherwise tiles of whole rows in shared memory (``cuda-spmv-adaptive``; long rows split
   across tiles): ``iters = 2`` (2,048-nonzero tiles) when rows average at least
   :data:`ITERS2_MIN_MEAN` nonzeros, else 1. Merge-path tiles (``cuda-spmv-merge``) are not
   chosen: on both power-law analogs whole-row tiles were as fast or faster on the H200.

The thresholds come from the H200 sweeps in ``results/h200/kernels`` (see its report).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends.spmv_blocked_format import BLOCK_WIDTHS, blocks_per_nonzero
from sparsescope.backends.spmv_delta16_format import encode_delta16
from sparsescope.backends.spmv_sell_format import (
    C,
    default_long_row,
    sell_order,
    sell_padding_ratio,
    slice_lengths,
    virtual_rows,
)
from sparsescope.backends.spmv_tiling import TileSet, row_tiles
from sparsescope.model.spmv import spmv_traffic
from sparsescope.model.work_sample import WorkSample, sample_for

#: Rule 1: SELL when its padding adds at most this share of stored entries ...
SELL_MAX_PADDING = 1.10
#: ... and the rows give every SM at least this many warps of 16 rows.
SELL_MIN_WARPS_PER_SM = 32
#: Rule 1a: delta16 when at most this share of the columns escapes 16 bits.
DELTA16_MAX_ESCAPE_FRACTION = 0.02
#: Rule 0: blocks when they move at least this share fewer bytes than delta16 ...
BLOCKED_MIN_SAVING = 0.10
#: ... launched as the decoupled access / execute kernel: within 3% of the best blocked variant
#: on the pwtk, ldoor and cant analogs in the H200 sweep (results/h200/kernels).
BLOCKED_PARAMS = {"tpr": 1, "stage": 4, "minb": 6}
#: Rows (evenly spaced) the block counts are measured on.
SAMPLE_ROWS = 8192
#: Two threads per row below this many full waves of one-thread slices (64 warps per SM).
TPR2_MAX_WAVES = 2.0
#: Resident warps per SM of the SELL kernel by register budget (minb 6: 40, minb 8: 32).
SELL_WARPS_PER_SM = {6: 48, 8: 64}
#: unroll 2 / minb 8 when its last wave is fuller than unroll 4 / minb 6's by this much.
WAVE_FILL_MARGIN = 0.05
#: Rule 2: 2,048-nonzero tiles when rows average at least this many nonzeros.
ITERS2_MIN_MEAN = 16.0
#: Streaming multiprocessors assumed when the caller gives none (H100 / H200 SXM).
DEFAULT_SM_COUNT = 132
#: Tiles whose columns are encoded to estimate the escape share (evenly spaced).
SAMPLE_TILES = 1024
#: Chunk budget of the tiles the statistics are measured on (the kernels' default).
CHUNKS = 256
SELL_SIGMA = 256


@dataclass(frozen=True)
class MatrixStatistics:
    """What the selection rules read."""

    rows: int
    cols: int
    nnz: int
    mean_nnz_per_row: float
    max_nnz_per_row: int
    cv_nnz_per_row: float
    """std / mean of the row lengths (0 for an empty matrix)."""
    empty_row_fraction: float
    escape_fraction: float
    """Share of nonzeros whose column does not fit a 16-bit offset from its tile's base
    (estimated on :data:`SAMPLE_TILES` evenly spaced tiles)."""
    delta16_byte_ratio: float
    """SELL-32-256 delta16 bytes / INT32 CSR bytes (float32 values), estimated from the
    padding and the escape share (:func:`delta16_sell_bytes`)."""
    sell_padding_ratio: float
    """SELL-32-256 stored entries per nonzero (row lengths only)."""
    block_width: int = 1
    """B of the 1 x B blocking that moves the fewest bytes (1: blocks do not beat delta16)."""
    blocked_byte_ratio: float = 1.0
    """SELL-32-256 blocked16 bytes at ``block_width`` / INT32 CSR bytes (estimated on
    :data:`SAMPLE_ROWS` rows; 1.0 when ``block_width`` is 1)."""
    sell_long_row: int = 0
    """Where the SELL kernels cut a row by default (``spmv_sell_format.default_long_row``:
    ``max(64, 8 x ceil(mean), 99th-percentile row)``); 0 when not measured."""


@dataclass(frozen=True)
class Selection:
    """The chosen kernel, its parameters and why."""

    backend: str
    params: dict[str, Any] = field(default_factory=dict)
    rule: str = ""
    reason: str = ""
    statistics: MatrixStatistics | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "params": dict(self.params), "rule": self.rule,
                "reason": self.reason,
                "statistics": asdict(self.statistics) if self.statistics else None}


def delta16_sell_bytes(rows: int, cols: int, nnz: int, padding_ratio: float,
                       escape_fraction: float, value_bytes: int = 4) -> float:
    """Estimated bytes of a SELL-32 delta16 SpMV::

        padded (value_bytes + 2) + 4 x 1.1 escapes (slab, ~10% lane padding)
        + 4 (rows rounded up to 32) (destinations) + 12 per slice + value_bytes (rows + cols)

    (the blocked estimate with one nonzero per 1 x 1 block)."""
    return blocked_sell_bytes(rows, cols, nnz, padding_ratio, escape_fraction, 1.0, 1,
                              value_bytes)


def blocked_sell_bytes(rows: int, cols: int, nnz: int, padding_ratio: float,
                       escape_fraction: float, blocks_per_nnz: float, width: int,
                       value_bytes: int = 4) -> float:
    """Estimated bytes of a SELL-32 blocked16 SpMV (1 x ``width`` blocks)::

        padded blocks (width value_bytes + 2) + 4 x 1.1 escaped blocks
        + 4 (rows rounded up to 32) + 12 per slice + value_bytes (rows + cols)

    with ``padded blocks = padding_ratio x blocks_per_nnz x nnz`` (the row padding taken as
    the nonzeros' one)."""
    blocks = blocks_per_nnz * nnz
    slices = -(-rows // 32)
    return (padding_ratio * blocks * (width * value_bytes + 2)
            + 4 * 1.1 * escape_fraction * blocks + 4 * 32 * slices + 12 * slices
            + value_bytes * (rows + cols))


def sample_rows(csr: sp.csr_matrix, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices) of ``count`` evenly spaced rows of ``csr``, as a CSR of their own."""
    rows = csr.shape[0]
    picked = np.unique(np.linspace(0, rows - 1, min(count, rows)).astype(np.int64))
    lengths = (csr.indptr[picked + 1] - csr.indptr[picked]).astype(np.int64)
    indptr = np.append(0, np.cumsum(lengths))
    starts = csr.indptr[picked].astype(np.int64)
    index = np.repeat(starts - indptr[:-1], lengths) + np.arange(int(indptr[-1]))
    return indptr, csr.indices[index]


def best_blocking(csr: sp.csr_matrix, padding: float, escape: float, d16_bytes: float
                  ) -> tuple[int, float]:
    """(B, bytes) of the 1 x B blocking with the fewest estimated bytes, measured on
    :data:`SAMPLE_ROWS` rows; (1, delta16's bytes) when none moves fewer."""
    rows, cols = csr.shape
    best = (1, d16_bytes)
    if csr.nnz == 0:
        return best
    indptr, indices = sample_rows(csr, SAMPLE_ROWS)
    if indptr[-1] == 0:
        return best
    for width in BLOCK_WIDTHS:
        ratio = blocks_per_nonzero(indptr, indices, width)
        estimate = blocked_sell_bytes(rows, cols, csr.nnz, padding, escape, ratio, width)
        if estimate < best[1]:
            best = (width, estimate)
    return best


def _sample(tiles: TileSet, indices: np.ndarray, count: int) -> tuple[TileSet, np.ndarray]:
    """A TileSet of ``count`` evenly spaced tiles, their columns concatenated."""
    picked = np.unique(np.linspace(0, tiles.ntiles - 1, min(count, tiles.ntiles)).astype(int))
    table = tiles.tiles[picked].astype(np.int64)
    parts = [indices[a:b] for a, b in table[:, 2:4]]
    lengths = table[:, 3] - table[:, 2]
    starts = np.cumsum(lengths) - lengths
    table[:, 2], table[:, 3] = starts, starts + lengths
    sub = TileSet(tiles=table.astype(np.int32), split_rows=np.zeros(0, np.int32),
                  split_ptr=np.zeros(1, np.int32), chunks=tiles.chunks, kind=tiles.kind)
    return sub, (np.concatenate(parts) if parts else np.zeros(0, np.int32))


def sampled_padding_ratio(sample: WorkSample, sigma: int, long_row: int) -> float:
    """:func:`~sparsescope.backends.spmv_sell_format.sell_padding_ratio` of the matrix whose
    work sample is ``sample`` (``model.work_sample``): the sample's rows cut at ``long_row``
    (the whole matrix's cut) and sorted within ``sigma``, each slice's stored entries counted
    its first row's weight, over the weighted nonzeros::

        padding = sum_s w_s x C x slice length_s / sum_r w_r x L_r"""
    lengths = np.diff(sample.indptr)
    nnz = float(np.dot(sample.row_weight, lengths))
    if nnz == 0:
        return 1.0
    source, _, v_len = virtual_rows(lengths, long_row)
    order = sell_order(v_len, sigma)
    slices = slice_lengths(v_len[order])
    weights = sample.row_weight[source[order]][::C]
    return float(np.dot(weights, slices) * C / nnz)


def matrix_statistics(csr: sp.csr_matrix) -> MatrixStatistics:
    """Measure the statistics of a canonical CSR matrix. Cost: a pass over the row pointers,
    one over the tiles, and an encoding of :data:`SAMPLE_TILES` tiles. Above the model's work
    budget (``model.work_sample``), the SELL padding (a sort of every row) on its sample."""
    rows, cols = (int(n) for n in csr.shape)
    lengths = np.diff(csr.indptr).astype(np.int64)
    nnz = int(csr.nnz)
    mean = nnz / rows if rows else 0.0
    escape = 0.0
    if nnz:
        sub, sub_cols = _sample(row_tiles(csr.indptr, CHUNKS), csr.indices, SAMPLE_TILES)
        if sub_cols.size:
            escape = encode_delta16(sub, None, sub_cols, rows, cols).escape_fraction
    int32 = spmv_traffic(rows, cols, nnz, value_bytes=4, index_bytes=4).total_bytes
    long_row = default_long_row(lengths)
    sample = sample_for(csr.indptr)
    padding = (sell_padding_ratio(lengths, SELL_SIGMA, long_row) if sample is None
               else sampled_padding_ratio(sample, SELL_SIGMA, long_row))
    d16 = delta16_sell_bytes(rows, cols, nnz, padding, escape)
    width, blocked = best_blocking(csr, padding, escape, d16)
    return MatrixStatistics(
        rows=rows, cols=cols, nnz=nnz, mean_nnz_per_row=mean,
        max_nnz_per_row=int(lengths.max()) if rows else 0,
        cv_nnz_per_row=float(lengths.std() / mean) if mean > 0 else 0.0,
        empty_row_fraction=float((lengths == 0).mean()) if rows else 0.0,
        escape_fraction=float(escape), delta16_byte_ratio=d16 / int32 if int32 else 1.0,
        sell_padding_ratio=padding, block_width=width,
        blocked_byte_ratio=blocked / int32 if int32 and width > 1 else 1.0,
        sell_long_row=long_row)


def wave_fill(slices: int, warps_per_sm: int, sm_count: int) -> float:
    """How full the waves are: ``w / ceil(w)`` with ``w = slices / (warps_per_sm x SMs)``."""
    waves = slices / (warps_per_sm * sm_count)
    return waves / math.ceil(waves) if waves > 0 else 0.0


def sell_params(rows: int, sm_count: int) -> tuple[dict[str, int], str]:
    """Threads per row and (unroll, minb) of the SELL kernels, with the arithmetic in words."""
    full_waves = rows / 32 / (SELL_WARPS_PER_SM[8] * sm_count)
    tpr = 2 if full_waves < TPR2_MAX_WAVES else 1
    slices = -(-rows // (32 // tpr))
    fill6 = wave_fill(slices, SELL_WARPS_PER_SM[6], sm_count)
    fill8 = wave_fill(slices, SELL_WARPS_PER_SM[8], sm_count)
    unroll, minb = (2, 8) if fill8 > fill6 + WAVE_FILL_MARGIN else (4, 6)
    text = (f"{rows / 32:.0f} one-thread slices make {full_waves:.2f} waves of "
            f"{SELL_WARPS_PER_SM[8]} warps x {sm_count} SMs, so {tpr} thread(s) per row "
            f"(rule: 2 below {TPR2_MAX_WAVES} waves); {slices} warps fill their last wave "
            f"{100 * fill6:.0f}% at 48 warps/SM and {100 * fill8:.0f}% at 64, so unroll "
            f"{unroll} / minb {minb}")
    return {"tpr": tpr, "unroll": unroll, "minb": minb}, text


def select_kernel(stats: MatrixStatistics, sm_count: int = DEFAULT_SM_COUNT) -> Selection:
    """Apply the rules (module docstring) to ``stats``."""
    shape = (f"mean {stats.mean_nnz_per_row:.1f} nonzeros per row, longest "
             f"{stats.max_nnz_per_row}, std/mean {stats.cv_nnz_per_row:.2f}")
    warps_per_sm = stats.rows / 16 / sm_count
    regular = stats.sell_padding_ratio <= SELL_MAX_PADDING
    if (regular and stats.escape_fraction <= DELTA16_MAX_ESCAPE_FRACTION
            and stats.block_width > 1
            and stats.blocked_byte_ratio <= stats.delta16_byte_ratio * (1 - BLOCKED_MIN_SAVING)):
        saving = 1 - stats.blocked_byte_ratio / stats.delta16_byte_ratio
        return Selection("cuda-spmv-blocked16", {**BLOCKED_PARAMS, "block": stats.block_width},
                         "regular-rows-blocked16", (
            f"regular rows ({shape}): SELL-32-256 pads only "
            f"{100 * (stats.sell_padding_ratio - 1):.1f}% (rule: <= "
            f"{100 * (SELL_MAX_PADDING - 1):.0f}%); {100 * stats.escape_fraction:.2f}% of the "
            f"columns escape a 16-bit offset (rule: <= {100 * DELTA16_MAX_ESCAPE_FRACTION:.0f}%) "
            f"and 1 x {stats.block_width} blocks of consecutive columns move "
            f"{stats.blocked_byte_ratio:.3f} of INT32 CSR's bytes, {100 * saving:.0f}% fewer "
            f"than 16-bit offsets per nonzero (rule: >= {100 * BLOCKED_MIN_SAVING:.0f}%); "
            "streams staged in shared memory by cp.async, 4 steps per chunk, one thread per "
            "row (decoupled access / execute: a warp keeps a whole chunk in flight, so even "
            f"{warps_per_sm:.0f} warps of 16 rows per SM keep DRAM busy)"), stats)
    if regular and warps_per_sm >= SELL_MIN_WARPS_PER_SM:
        params, launch = sell_params(stats.rows, sm_count)
        why = (f"regular rows ({shape}): SELL-32-256 pads only "
               f"{100 * (stats.sell_padding_ratio - 1):.1f}% (rule: <= "
               f"{100 * (SELL_MAX_PADDING - 1):.0f}%) and the rows give {warps_per_sm:.0f} "
               f"warps of 16 rows per SM (rule: >= {SELL_MIN_WARPS_PER_SM}); {launch}")
        if stats.escape_fraction <= DELTA16_MAX_ESCAPE_FRACTION:
            return Selection("cuda-spmv-delta16", params, "regular-rows-delta16", (
                f"{why}; {100 * stats.escape_fraction:.2f}% of the columns escape a 16-bit "
                f"offset (rule: <= {100 * DELTA16_MAX_ESCAPE_FRACTION:.0f}%), so 16-bit "
                f"offsets: {stats.delta16_byte_ratio:.3f} of INT32 CSR's bytes"), stats)
        return Selection("cuda-spmv-sell", params, "regular-rows", (
            f"{why}; {100 * stats.escape_fraction:.1f}% of the columns would escape 16 bits "
            f"(rule: <= {100 * DELTA16_MAX_ESCAPE_FRACTION:.0f}%; each escape is one more "
            "dependent load), so INT32 columns"), stats)
    iters = 2 if stats.mean_nnz_per_row >= ITERS2_MIN_MEAN else 1
    if not regular:
        why = (f"irregular rows ({shape}): SELL would pad "
               f"{100 * (stats.sell_padding_ratio - 1):.0f}% (rule: <= "
               f"{100 * (SELL_MAX_PADDING - 1):.0f}%)")
    else:
        why = (f"regular rows ({shape}) but only {warps_per_sm:.1f} SELL warps per SM (rule: "
               f">= {SELL_MIN_WARPS_PER_SM}): too few loads in flight")
    return Selection("cuda-spmv-adaptive", {"iters": iters}, "tiles", (
        f"{why}; tiles of whole rows in shared memory, 8 warps each, long rows split; "
        f"iters={iters} ({1024 * iters}-nonzero tiles: mean {stats.mean_nnz_per_row:.1f} "
        f"{'>=' if iters == 2 else '<'} {ITERS2_MIN_MEAN:.0f})"), stats)


def select_for(csr: sp.csr_matrix, sm_count: int = DEFAULT_SM_COUNT) -> Selection:
    """:func:`select_kernel` of :func:`matrix_statistics`."""
    return select_kernel(matrix_statistics(csr), sm_count)
