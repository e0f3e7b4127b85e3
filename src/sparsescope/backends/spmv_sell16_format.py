"""SELL-32-sigma with 16-bit column offsets per slice: the ``cuda-spmv-delta16`` format.

Starts from a packed :class:`~sparsescope.backends.spmv_sell_format.Sell`. Each slice gets a
base column; an entry's column is stored as the 16-bit offset ``col - base`` when
``0 <= off <= 0xFFFD``. ``0xFFFE`` marks padding, ``0xFFFF`` an escape: the lane's e-th escape
(e counted along its row) holds its INT32 column at ``esc[(esc_ptr[s] + e) * 32 + lane]``, a
column-major slab as deep as the slice's lane with most escapes. The kernel thus decodes with a
per-thread counter, no scan. Bytes per stored entry: ``value + 2`` instead of ``value + 4``;
plus 4 per escape slot and 8 per slice (base, escape pointer).

The base of a slice is the best of three candidates (judged on every SAMPLE_STRIDE-th entry):
the smallest column (banded rows), the column at the slice's rows' diagonal minus 0x7FFE
(local columns plus scattered far ones), the middle stored column minus 0x7FFE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.backends.spmv_sell_format import C, Sell
from sparsescope.model.traffic import Traffic

ESCAPE = 0xFFFF
PAD = 0xFFFE
SPAN = 0xFFFE
"""Offsets 0 .. SPAN - 1 are stored directly."""
SAMPLE_STRIDE = 8


@dataclass(frozen=True)
class Sell16:
    """A SELL matrix with 16-bit column offsets."""

    sell: Sell
    """The INT32 packing it was encoded from (slice_ptr, vals, out, split lists are shared;
    its ``cols`` are not uploaded)."""
    offsets: np.ndarray
    """uint16, one per stored entry (same layout as ``sell.cols``)."""
    base: np.ndarray
    """int32 (slices,): base column per slice."""
    esc_ptr: np.ndarray
    """int32 (slices + 1,): first escape column of each slice's slab, in units of C."""
    escapes: np.ndarray
    """int32 (esc_ptr[-1] * C,): escape slab, -1 where a lane has no escape."""

    @property
    def escape_fraction(self) -> float:
        n = int((self.escapes >= 0).sum())
        return n / self.sell.nnz if self.sell.nnz else 0.0

    def escape_iteration_share(self, steps: int) -> float:
        """Share of a warp's loop iterations of ``steps`` steps (each slice's steps cut into
        runs of ``steps`` from its first) in which at least one lane meets an escape: those
        iterations run the kernel's escape code, one more dependent load before the gather.

        Hand check: one slice of 4 steps, an escape only in step 2 -> 2-step iterations
        {0, 1}, {2, 3}: 1 of 2 hold one, share 0.5."""
        lengths = np.diff(self.sell.slice_ptr.astype(np.int64))
        if steps < 1 or not lengths.sum():
            return 0.0
        escaped = (self.offsets.reshape(-1, C) == ESCAPE).any(axis=1)
        windows = -(-lengths // steps)                  # iterations per slice
        # step k of slice s (global step slice_ptr[s] + k) falls in iteration k // steps
        first = np.repeat(self.sell.slice_ptr[:-1].astype(np.int64), lengths)
        window = np.repeat(np.cumsum(windows) - windows, lengths) + \
            (np.arange(first.size) - first) // steps
        hit = np.zeros(int(windows.sum()), dtype=bool)
        np.logical_or.at(hit, window, escaped)
        return float(hit.mean())

    def traffic(self, rows: int, cols: int, value_bytes: int = 4) -> Traffic:
        """16-bit offsets over SELL-32: ``padded`` values and offsets, the INT32 escape slab,
        slice pointers, bases, escape pointers, row destinations and split lists."""
        s = self.sell
        return Traffic(
            format=f"SELL-{C} delta16", values_bytes=s.padded * value_bytes,
            indices_bytes=2 * s.padded + 4 * self.escapes.size,
            row_meta_bytes=4 * (s.slices + 1) + 4 * s.slices + 4 * (s.slices + 1)
            + 4 * C * s.slices + int(s.split_rows.nbytes + s.split_ptr.nbytes),
            x_bytes=value_bytes * cols, y_read_bytes=0, y_written_bytes=value_bytes * rows,
            padding_bytes=(s.padded - s.nnz) * (value_bytes + 2), flops=2 * s.nnz)

    def bytes_moved(self, rows: int, cols: int, value_bytes: int = 4) -> int:
        return self.traffic(rows, cols, value_bytes).total_bytes


def _slice_rows_mean(sell: Sell) -> np.ndarray:
    """Mean destination row of each slice (rows only; slices of split pieces get -1)."""
    out = sell.out.reshape(-1, C).astype(np.int64)
    valid = out >= 0
    count = valid.sum(axis=1)
    total = np.where(valid, out, 0).sum(axis=1)
    return np.where(count > 0, total // np.maximum(count, 1), -1)


def encode_sell16(sell: Sell, rows: int, ncols: int) -> Sell16:
    """Encode the columns of a packed SELL matrix in 16 bits per entry (module docstring)."""
    nslices = sell.slices
    width = np.diff(sell.slice_ptr.astype(np.int64)) * C          # entries per slice
    cols = sell.cols
    slice_of = np.repeat(np.arange(nslices, dtype=np.int32), width)
    valid = cols >= 0
    top = max(0, ncols - SPAN)
    big = np.iinfo(np.int32).max
    starts = sell.slice_ptr[:-1].astype(np.int64) * C
    nonempty = width > 0
    lowest = np.zeros(nslices, dtype=np.int64)
    if nonempty.any():
        lowest[nonempty] = np.minimum.reduceat(np.where(valid, cols, big), starts[nonempty])
    lowest = np.where(lowest == big, 0, lowest)
    mean_row = _slice_rows_mean(sell)
    diagonal = np.where(mean_row >= 0, mean_row * ncols // max(rows, 1) - SPAN // 2, lowest)
    middle = np.full(nslices, -1, dtype=np.int64)
    middle[nonempty] = cols[starts[nonempty] + width[nonempty] // 2]
    middle = np.where(middle >= 0, middle - SPAN // 2, lowest)
    cand = np.clip(np.stack([lowest, diagonal, middle]), 0, top).astype(np.int64)
    sample_cols = cols[::SAMPLE_STRIDE]
    sample_slice = slice_of[::SAMPLE_STRIDE]
    sample_valid = sample_cols >= 0
    covered = []
    for c in cand:
        off = sample_cols - c.astype(np.int32)[sample_slice]
        ok = sample_valid & (off >= 0) & (off < SPAN)
        covered.append(np.bincount(sample_slice, weights=ok, minlength=nslices))
    choice = np.argmax(np.stack(covered), axis=0) if nslices else np.zeros(0, np.int64)
    base = cand[choice, np.arange(nslices)].astype(np.int32)
    off = cols - base[slice_of]
    escape = valid & ((off < 0) | (off >= SPAN))
    offsets = off.astype(np.uint16)
    offsets[~valid] = PAD
    offsets[escape] = ESCAPE
    # escape slab: rank of each escape along its (slice, lane), entries in storage order
    where = np.flatnonzero(escape)
    lane_key = slice_of[where].astype(np.int64) * C + (where % C)
    order = np.argsort(lane_key, kind="stable")
    sorted_key = lane_key[order]
    first = np.searchsorted(sorted_key, sorted_key, side="left")
    rank = np.empty(where.size, dtype=np.int64)
    rank[order] = np.arange(where.size) - first
    depth = np.zeros(nslices, dtype=np.int64)
    if where.size:
        np.maximum.at(depth, slice_of[where], rank + 1)
    esc_ptr = np.append(0, np.cumsum(depth))
    escapes = np.full(int(esc_ptr[-1]) * C, -1, dtype=np.int32)
    escapes[(esc_ptr[slice_of[where]] + rank) * C + where % C] = cols[where]
    return Sell16(sell=sell, offsets=offsets, base=base, esc_ptr=esc_ptr.astype(np.int32),
                  escapes=escapes)


def decode_sell16(s16: Sell16) -> np.ndarray:
    """INT32 columns (-1 for padding) back from the encoding, the way the kernel decodes them."""
    sell = s16.sell
    width = np.diff(sell.slice_ptr.astype(np.int64)) * C
    slice_of = np.repeat(np.arange(sell.slices, dtype=np.int64), width)
    cols = s16.base.astype(np.int64)[slice_of] + s16.offsets.astype(np.int64)
    cols[s16.offsets == PAD] = -1
    idx = np.arange(s16.offsets.size, dtype=np.int64)
    start = sell.slice_ptr.astype(np.int64)[slice_of] * C
    lane = (idx - start) % C
    escape = s16.offsets == ESCAPE
    # e-th escape of a lane: count escapes of the same (slice, lane) at smaller k
    key = slice_of[escape] * C + lane[escape]
    order = np.argsort(key, kind="stable")
    first = np.searchsorted(key[order], key[order], side="left")
    rank = np.empty(key.size, dtype=np.int64)
    rank[order] = np.arange(key.size) - first
    cols[escape] = s16.escapes[(s16.esc_ptr.astype(np.int64)[slice_of[escape]] + rank) * C
                               + lane[escape]]
    return cols
