"""1 x B blocks with unaligned starts and 16-bit block offsets: the ``cuda-spmv-blocked16`` format.

FEM matrices store each node's degrees of freedom in consecutive columns, so a row's columns
come in runs (3 for 3-dof elements). A 1 x B block stores one column index for B consecutive
columns ``[c, c + B)`` and B values, zeros where the block holds no nonzero (fill); the block
may start at any column (no alignment: OSKI's register blocking aligns blocks to multiples of
B, here a run needs no luck to land in one block). Blocking is greedy per row: a block starts
at the first entry no earlier block covers and covers the entries with columns in
``[c, c + B)``. Rows are cut into segments of :data:`SEGMENT` entries first (a block never
straddles two), which bounds the number of vectorised passes for rows of any length.

The blocks are then packed like nonzeros of a SELL-32-sigma matrix with 16-bit offsets per
slice (:mod:`sparsescope.backends.spmv_sell16_format`, escapes included), one stored column
per block, and the B values of block step k of slice s stored as B rows of 32 lanes::

    value j of the block at step k, lane l  ->  ((slice_ptr[s] + k) * B + j) * 32 + l

so every one of the B value loads of a warp reads 32 contiguous values. Bytes per stored
block: ``B * value_bytes + 2``; per nonzero, ``value_bytes * (1 + fill) + 2 * blocks / nnz``:
4.67 instead of delta16's 6 and INT32 CSR's 8 for runs of three without fill.

A block may reach past the last column (c + B > cols): the kernel's x buffer carries B - 1
zeros after the vector, so the fill there reads 0. Fill entries multiply x by 0: an x holding
inf or NaN where a block has fill gives NaN where CSR would not (as cuSPARSE's BSR does).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sparsescope.backends.spmv_sell16_format import Sell16, decode_sell16, encode_sell16
from sparsescope.backends.spmv_sell_format import C, pack_sell, reduce_slices
from sparsescope.model.traffic import Traffic

#: Block widths the kernel is instantiated for.
BLOCK_WIDTHS = (2, 3, 4)
#: Rows are blocked in segments of at most this many entries (bounds the passes).
SEGMENT = 4096


@dataclass(frozen=True)
class RowBlocks:
    """A CSR matrix cut into 1 x B blocks (host side, before packing)."""

    width: int
    """B: columns per block."""
    indptr: np.ndarray
    """int64 (rows + 1,): blocks of row r are ``indptr[r]:indptr[r+1]``."""
    cols: np.ndarray
    """int32 (blocks,): first column of each block."""
    vals: np.ndarray
    """float64 (blocks, B): the block's values, 0 for fill."""
    nnz: int

    @property
    def blocks(self) -> int:
        return int(self.cols.size)

    @property
    def stored_per_nonzero(self) -> float:
        """Stored values per nonzero, ``B * blocks / nnz`` (1 + the fill ratio)."""
        return self.width * self.blocks / self.nnz if self.nnz else 1.0


def block_starts(indptr: np.ndarray, indices: np.ndarray, width: int,
                 segment: int = SEGMENT) -> np.ndarray:
    """Entry indices (sorted) where the greedy blocks of width ``width`` start.

    ``next[k]`` = the first entry of k's segment whose column is >= col[k] + width, else the
    segment's end. Columns rise strictly along a row, so that entry is at most ``width``
    places on: ``next[k] = k + 1 + #{d in 1..width-1 : k + d in k's segment and col[k + d] <
    col[k] + width}`` (the condition holds for a prefix of the d's), ``width - 1`` vectorised
    passes instead of a binary search per entry. The starts are the chains ``first,
    next[first], ...`` of every segment, followed in as many vectorised passes as the longest
    segment has blocks (<= ``segment``), and marked in one array instead of sorted.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    nnz = int(indptr[-1])
    if nnz == 0:
        return np.zeros(0, dtype=np.int64)
    lengths = np.diff(indptr)
    pieces = -(-lengths // segment)
    seg_row = np.repeat(np.arange(lengths.size, dtype=np.int64), pieces)
    seg_first = np.cumsum(pieces) - pieces
    seg_start = indptr[seg_row] + (np.arange(seg_row.size) - seg_first[seg_row]) * segment
    seg_end = np.minimum(seg_start + segment, indptr[seg_row + 1])
    # entries left in k's segment after k
    left = np.repeat(seg_end, seg_end - seg_start) - np.arange(nnz, dtype=np.int64) - 1
    cols = np.asarray(indices)
    following = np.arange(1, nnz + 1, dtype=np.int64)
    for d in range(1, width):
        inside = np.zeros(nnz, dtype=bool)
        inside[:nnz - d] = cols[d:].astype(np.int64) - cols[:nnz - d] < width
        following += inside & (left >= d)
    is_start = np.zeros(nnz, dtype=bool)
    active, end = seg_start, seg_end
    while active.size:
        is_start[active] = True
        nxt = following[active]
        keep = nxt < end
        active, end = nxt[keep], end[keep]
    return np.flatnonzero(is_start)


def to_row_blocks(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                  width: int) -> RowBlocks:
    """Cut a canonical CSR matrix (sorted columns, no duplicates) into greedy 1 x ``width``
    blocks."""
    if width < 1:
        raise ValueError(f"block width must be >= 1, got {width}")
    indptr = np.asarray(indptr, dtype=np.int64)
    nnz = int(indptr[-1])
    starts = block_starts(indptr, indices, width)
    is_start = np.zeros(nnz, dtype=bool)
    is_start[starts] = True
    block_of = np.cumsum(is_start) - 1
    cols = np.asarray(indices, dtype=np.int64)
    first_col = cols[starts]
    vals = np.zeros((starts.size, width), dtype=np.float64)
    vals[block_of, cols - first_col[block_of]] = data
    per_row = np.searchsorted(starts, indptr, side="left")
    return RowBlocks(width=int(width), indptr=per_row.astype(np.int64),
                     cols=first_col.astype(np.int32), vals=vals, nnz=nnz)


def blocks_per_nonzero(indptr: np.ndarray, indices: np.ndarray, width: int) -> float:
    """Greedy 1 x ``width`` blocks per nonzero (``1/width`` for perfect runs, 1 for none)."""
    nnz = int(indptr[-1])
    return block_starts(indptr, indices, width).size / nnz if nnz else 1.0


def blocked_bytes_per_nonzero(blocks_per_nnz: float, width: int, value_bytes: int = 4) -> float:
    """Stream bytes per nonzero of the blocked format: ``blocks/nnz * (B * value_bytes + 2)``
    (SELL padding and escapes not counted)."""
    return blocks_per_nnz * (width * value_bytes + 2)


@dataclass(frozen=True)
class SellBlocked:
    """Blocks packed as SELL-32-sigma entries with 16-bit offsets."""

    packed: Sell16
    """The SELL/delta16 packing of the block start columns (its ``sell.vals`` hold block ids,
    not values; its offsets, base, escapes, slice_ptr, out and split lists are uploaded)."""
    vals: np.ndarray
    """float64 (padded * B,): values in the kernel's order (module docstring)."""
    width: int
    nnz: int
    blocks: int

    @property
    def padded(self) -> int:
        """Stored blocks (SELL padding included)."""
        return self.packed.sell.padded

    @property
    def stored_per_nonzero(self) -> float:
        """Stored values per nonzero (fill and SELL padding)."""
        return self.width * self.padded / self.nnz if self.nnz else 1.0

    def traffic(self, rows: int, cols: int, value_bytes: int = 4) -> Traffic:
        """The delta16 packing's arrays (``padded (value_bytes + 2)`` plus escapes, slice
        tables, destinations, x, y and split lists) with ``B - 1`` more values per stored
        block: ``padded (B value_bytes + 2) + ...``; padding counts fill values and empty
        SELL slots."""
        base = self.packed.traffic(rows, cols, value_bytes)
        values = self.width * value_bytes * self.padded
        return replace(base, format=f"SELL-32 1x{self.width} blocks delta16",
                       values_bytes=values, flops=2 * self.nnz,
                       padding_bytes=(self.width * self.padded - self.nnz) * value_bytes
                       + 2 * (self.padded - self.blocks))

    def bytes_moved(self, rows: int, cols: int, value_bytes: int = 4) -> int:
        return self.traffic(rows, cols, value_bytes).total_bytes


def pack_blocked(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, shape: tuple[int, int],
                 *, width: int = 3, sigma: int = 256, long_row: int | None = None,
                 tpr: int = 1) -> SellBlocked:
    """Block a CSR matrix and pack the blocks into SELL-32-sigma with 16-bit offsets
    (``long_row`` counts blocks)."""
    if width not in BLOCK_WIDTHS:
        raise ValueError(f"block width must be one of {BLOCK_WIDTHS}, got {width}")
    rows, ncols = (int(n) for n in shape)
    rb = to_row_blocks(indptr, indices, data, width)
    ids = np.arange(rb.blocks, dtype=np.float64)      # exact: blocks < 2**53
    sell = pack_sell(rb.indptr, rb.cols, ids, sigma=sigma, long_row=long_row, tpr=tpr)
    packed = encode_sell16(sell, rows, ncols)
    valid = sell.cols >= 0
    # each slot's block (padding reads block 0, then is zeroed): one gather, no masked copy
    stored = np.take(rb.vals, np.where(valid, sell.vals, 0).astype(np.int64), axis=0) \
        if rb.blocks else np.zeros((sell.padded, width), dtype=np.float64)
    stored[~valid] = 0.0
    steps = sell.padded // C
    ordered = stored.reshape(steps, C, width).transpose(0, 2, 1).reshape(-1)
    return SellBlocked(packed=packed, vals=np.ascontiguousarray(ordered), width=int(width),
                       nnz=rb.nnz, blocks=rb.blocks)


def emulate_blocked(sb: SellBlocked, rows: int, x: np.ndarray) -> np.ndarray:
    """What ``spmv_sell`` with B = ``sb.width`` and ``spmv_fixup`` compute, in float64 (test
    oracle; decodes the 16-bit offsets the way the kernel does). Unwritten rows stay NaN."""
    sell = sb.packed.sell
    width = sb.width
    x = np.append(np.asarray(x, dtype=np.float64), np.zeros(width - 1))
    cols = decode_sell16(sb.packed)
    steps = sell.padded // C
    vals = sb.vals.reshape(steps, width, C).transpose(0, 2, 1).reshape(-1, width)
    safe = np.where(cols >= 0, cols, 0)
    gathered = x[safe[:, None] + np.arange(width)[None, :]]
    prod = np.where(cols >= 0, (vals * gathered).sum(axis=1), 0.0)
    return reduce_slices(sell, prod, rows)

