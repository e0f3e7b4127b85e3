"""SELL-C-sigma packing (Kreutzer et al., SIAM J. Sci. Comput. 36(5), 2014) for ``spmv_sell``.

Rows longer than ``long_row`` are first cut into pieces of ``long_row`` nonzeros ("virtual
rows"; their sums go to partial slots that ``spmv_fixup`` adds, as for split tiles). Within
each window of ``sigma`` consecutive virtual rows, rows are sorted by length, longest first
(stable), so that the ``C = 32`` rows of a slice have similar lengths; slice s is padded to its
longest row and stored column-major::

    entry k of lane l in slice s  ->  index (slice_ptr[s] + k) * 32 + l

Padding entries have column -1 and value 0. ``out[s*32 + l]`` is the row the lane's sum goes
to, ``-2 - slot`` for a piece of a split row, or -1 for an empty lane. Bytes moved:
``padded * (value_bytes + 4) + 4 * (slices + 1) + 4 * 32 * slices + x + y``.

With ``tpr = 2`` threads per row a slice holds 16 rows: lane i walks the first
``ceil(len / 2)`` entries of its row, lane i + 16 the rest, and the kernel adds the two sums
with one shuffle (``out`` is -1 for lanes 16-31). Twice the warps, half the steps per warp:
for matrices whose slices would not fill the GPU twice over. ``tpr = 4`` or ``8``: slices of 8
or 4 rows, lane ``i + p * 32 / tpr`` walks part ``p`` (``ceil(len / tpr)`` entries) of row ``i``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.model.traffic import Traffic

C = 32
"""Rows per slice: one warp, one thread per row."""


@dataclass(frozen=True)
class Sell:
    """A matrix in SELL-C-sigma form."""

    slice_ptr: np.ndarray
    """int32 (slices + 1,): first column of each slice, in units of C entries."""
    cols: np.ndarray
    """int32 (slice_ptr[-1] * C,): column indices, -1 for padding."""
    vals: np.ndarray
    """float64 (same,): values, 0 for padding (cast on upload)."""
    out: np.ndarray
    """int32 (slices * C,): destination per lane (row, -2 - slot, or -1)."""
    split_rows: np.ndarray
    """int32: rows cut into pieces."""
    split_ptr: np.ndarray
    """int32: split row s owns slots ``split_ptr[s]:split_ptr[s+1]``."""
    sigma: int
    long_row: int
    nnz: int
    tpr: int = 1
    """Threads per row: 1 (32 rows per slice) or 2 (16 rows, two lanes each)."""

    @property
    def slices(self) -> int:
        return int(self.slice_ptr.size - 1)

    @property
    def padded(self) -> int:
        return int(self.cols.size)

    @property
    def padding_ratio(self) -> float:
        """Stored entries per nonzero (>= 1)."""
        return self.padded / self.nnz if self.nnz else 1.0

    def traffic(self, rows: int, cols: int, value_bytes: int = 4) -> Traffic:
        """SELL-32's arrays: ``padded`` values and INT32 columns, slice pointers, 32 row
        destinations per slice and the split lists, x read and y written once."""
        return Traffic(
            format=f"SELL-{C} INT32", values_bytes=self.padded * value_bytes,
            indices_bytes=4 * self.padded,
            row_meta_bytes=4 * (self.slices + 1) + 4 * C * self.slices
            + int(self.split_rows.nbytes + self.split_ptr.nbytes),
            x_bytes=value_bytes * cols, y_read_bytes=0, y_written_bytes=value_bytes * rows,
            padding_bytes=(self.padded - self.nnz) * (value_bytes + 4), flops=2 * self.nnz)

    def bytes_moved(self, rows: int, cols: int, value_bytes: int = 4) -> int:
        return self.traffic(rows, cols, value_bytes).total_bytes


def default_long_row(lengths: np.ndarray) -> int:
    """Longest piece: ``max(64, 8 x ceil(mean))``, at least the 99th-percentile row, so that
    only the tail of a power-law matrix is cut, never a regular one."""
    if lengths.size == 0:
        return 64
    mean = float(lengths.mean())
    p99 = float(np.percentile(lengths, 99))
    return int(max(64, 8 * int(np.ceil(mean)), int(np.ceil(p99))))


def virtual_rows(lengths: np.ndarray, long_row: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source row, piece index, length) of every virtual row: each row cut into pieces of
    ``long_row`` nonzeros, an empty row kept as one empty piece."""
    lengths = np.asarray(lengths, dtype=np.int64)
    pieces = np.maximum(1, -(-lengths // long_row))
    v_row = np.repeat(np.arange(lengths.size, dtype=np.int64), pieces)
    first_piece = np.cumsum(pieces) - pieces
    k_piece = np.arange(v_row.size, dtype=np.int64) - first_piece[v_row]
    v_len = np.minimum(lengths[v_row] - k_piece * long_row, long_row)
    return v_row, k_piece, v_len


def sell_order(v_len: np.ndarray, sigma: int) -> np.ndarray:
    """Virtual rows in slice order: sorted by length, longest first, within windows of
    ``sigma`` (stable)."""
    window = np.arange(v_len.size, dtype=np.int64) // sigma
    return np.lexsort((-v_len, window))


def slice_lengths(ordered_len: np.ndarray, tpr: int = 1) -> np.ndarray:
    """Columns of each slice of ``C / tpr`` consecutive (ordered) virtual rows: the longest
    row's share of one lane, ``ceil(len / tpr)``."""
    per = C // tpr
    nslices = -(-ordered_len.size // per)
    lane_len = np.zeros(nslices * per, dtype=np.int64)
    lane_len[:ordered_len.size] = -(-ordered_len // tpr)
    return lane_len.reshape(nslices, per).max(axis=1) if nslices else np.zeros(0, np.int64)


def sell_padding_ratio(lengths: np.ndarray, sigma: int = 256, long_row: int | None = None,
                       tpr: int = 1) -> float:
    """Stored entries per nonzero of SELL-32-sigma, from the row lengths alone."""
    lengths = np.asarray(lengths, dtype=np.int64)
    nnz = int(lengths.sum())
    if nnz == 0:
        return 1.0
    long_row = default_long_row(lengths) if long_row is None else int(long_row)
    _, _, v_len = virtual_rows(lengths, long_row)
    return float(slice_lengths(v_len[sell_order(v_len, sigma)], tpr).sum() * C / nnz)


def pack_sell(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, *, sigma: int = 256,
              long_row: int | None = None, tpr: int = 1) -> Sell:
    """Pack CSR into SELL-32-sigma (``tpr`` threads per row, 1, 2, 4 or 8). Cost: a sort per window
    and one scatter of the nonzeros."""
    indptr = np.asarray(indptr, dtype=np.int64)
    lengths = np.diff(indptr)
    nnz = int(indptr[-1])
    long_row = default_long_row(lengths) if long_row is None else int(long_row)
    if sigma < 1 or long_row < 1 or tpr not in (1, 2, 4, 8):
        raise ValueError(f"need sigma >= 1, long_row >= 1 and tpr 1, 2, 4 or 8, got {sigma}, "
                         f"{long_row}, {tpr}")
    v_row, k_piece, v_len = virtual_rows(lengths, long_row)
    pieces = np.maximum(1, -(-lengths // long_row))
    v_start = indptr[v_row] + k_piece * long_row
    nv = v_row.size
    order = sell_order(v_len, sigma)
    slice_len = slice_lengths(v_len[order], tpr)
    nslices = slice_len.size
    slice_ptr = np.append(0, np.cumsum(slice_len))
    per = C // tpr                                             # rows per slice
    position = np.empty(nv, dtype=np.int64)
    position[order] = np.arange(nv, dtype=np.int64)           # row slot of each virtual row
    base = slice_ptr[position // per] * C + position % per    # its first lane's first entry
    half = -(-v_len // tpr)                                   # entries of the first lane
    # entry k of a virtual row goes to base + C (k - j half) + j per in lane part j = k // half,
    # i.e. to C p + (base - C v_start + j (per - C half)) for its position p in the CSR arrays:
    # each (virtual row, part) is a run of consecutive entries with one offset, so the
    # destinations are one repeat of the runs' offsets plus C p (no per-entry gathers)
    j = np.arange(tpr, dtype=np.int64)
    run_len = np.clip(v_len[:, None] - j[None, :] * half[:, None], 0, half[:, None])
    run_off = (base - C * v_start)[:, None] + j[None, :] * (per - C * half)[:, None]
    dest = np.repeat(run_off.ravel(), run_len.ravel())
    dest += C * np.arange(nnz, dtype=np.int64)
    total = int(slice_ptr[-1]) * C
    cols = np.full(total, -1, dtype=np.int32)
    vals = np.zeros(total, dtype=np.float64)
    cols[dest] = indices
    vals[dest] = data
    # destinations: rows with one piece -> row; pieces -> partial slots (contiguous per row)
    split = pieces[v_row] > 1
    slot = np.cumsum(split) - 1
    dest_of_v = np.where(split, -2 - slot, v_row)
    out = np.full(nslices * C, -1, dtype=np.int64)
    out[(position // per) * C + position % per] = dest_of_v
    split_rows = np.flatnonzero(pieces > 1)
    split_ptr = np.append(0, np.cumsum(pieces[split_rows]))
    return Sell(slice_ptr=slice_ptr.astype(np.int32), cols=cols, vals=vals,
                out=out.astype(np.int32), split_rows=split_rows.astype(np.int32),
                split_ptr=split_ptr.astype(np.int32), sigma=int(sigma), long_row=long_row,
                nnz=nnz, tpr=int(tpr))


def emulate_sell(sell: Sell, rows: int, x: np.ndarray) -> np.ndarray:
    """What ``spmv_sell`` + ``spmv_fixup`` compute, in float64 (test oracle). Unwritten rows
    stay NaN."""
    x = np.asarray(x, dtype=np.float64)
    safe = np.where(sell.cols >= 0, sell.cols, 0)
    prod = np.where(sell.cols >= 0, sell.vals * x[safe], 0.0)
    return reduce_slices(sell, prod, rows)


def reduce_slices(sell: Sell, prod: np.ndarray, rows: int) -> np.ndarray:
    """Per-lane sums of ``prod`` (one product per stored entry, in storage order) written to y
    the way the kernel's shuffles, destinations and ``spmv_fixup`` do (float64; unwritten rows
    stay NaN)."""
    y = np.full(rows, np.nan)
    partials = np.full(int(sell.split_ptr[-1]) if sell.split_ptr.size else 0, np.nan)
    for s in range(sell.slices):
        k0, k1 = int(sell.slice_ptr[s]), int(sell.slice_ptr[s + 1])
        sums = prod[k0 * C:k1 * C].reshape(k1 - k0, C).sum(axis=0) if k1 > k0 else np.zeros(C)
        off = C // 2
        while off >= C // sell.tpr:  # the shuffles: lane i adds lane i + off's part
            sums[:off] += sums[off:2 * off]
            off //= 2
        for lane in range(C):
            dest = int(sell.out[s * C + lane])
            if dest >= 0:
                y[dest] = sums[lane]
            elif dest <= -2:
                partials[-2 - dest] = sums[lane]
    for s, row in enumerate(sell.split_rows):
        y[row] = partials[sell.split_ptr[s]:sell.split_ptr[s + 1]].sum()
    return y
