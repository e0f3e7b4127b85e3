"""Tiles of a CSR matrix for the ``spmv_tile`` kernel (``kernels/spmv_own.cu``), built on the host.

A tile is a contiguous range of nonzeros ``[j0, j1)`` and the rows ``[r0, r1)`` that own them;
one thread block computes one tile. Its nonzeros are read in aligned chunks of 4 (16-byte
loads), so a tile may span at most ``chunks`` chunks::

    ceil(j1 / 4) - floor(j0 / 4) <= chunks        (chunks = block threads x iterations)

Two tilings:

* :func:`row_tiles` (``cuda-spmv-adaptive``, ``cuda-spmv-delta16``): whole rows, packed
  greedily until the next row would break the chunk budget or ``rows_max``; a row longer than
  one tile is cut at chunk boundaries into tiles of its own (CSR-Adaptive's "long row" case).
* :func:`merge_tiles` (``cuda-spmv-merge``): merge-path partitioning (Merrill & Garland,
  PPoPP'16): the merge of the row-end events and the nonzeros is cut into equal pieces of
  ``items`` = ``4 (chunks - 1)`` items, so every tile has the same work whatever the row
  lengths, and rows cross tile boundaries freely.

A row cut by a tile boundary is *split*: each of its tiles writes a partial sum into a slot of
``partials`` (the first row of a tile that began earlier: ``head_slot``; the last row of a tile
that continues: ``tail_slot``; a tile inside one row: one slot for both) and ``spmv_fixup``
adds each split row's slots, which are contiguous, into y. Nothing here imports a GPU library.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Columns of the tile table: the kernel reads them as two int4.
TILE_FIELDS = ("r0", "r1", "j0", "j1", "head_slot", "tail_slot", "col_base", "esc_start")


@dataclass(frozen=True)
class TileSet:
    """A tiling of one CSR matrix, ready to upload."""

    tiles: np.ndarray
    """int32 (ntiles, 8): ``TILE_FIELDS`` per tile (col_base / esc_start 0 unless delta16)."""
    split_rows: np.ndarray
    """int32 (nsplit,): rows cut by a tile boundary, each summed by ``spmv_fixup``."""
    split_ptr: np.ndarray
    """int32 (nsplit + 1,): split row s owns partial slots ``split_ptr[s]:split_ptr[s+1]``."""
    chunks: int
    """Chunk budget per tile (block threads x iterations)."""
    kind: str
    """``rows`` (whole rows, long rows cut) or ``merge`` (merge path)."""

    @property
    def ntiles(self) -> int:
        return int(self.tiles.shape[0])

    @property
    def nslots(self) -> int:
        return int(self.split_ptr[-1]) if self.split_ptr.size else 0

    @property
    def slot_split(self) -> np.ndarray:
        """int32 (nslots,): the split row (index into ``split_rows``) each slot belongs to."""
        return np.repeat(np.arange(self.split_rows.size, dtype=np.int32),
                         np.diff(self.split_ptr)).astype(np.int32)

    @property
    def max_rows_per_tile(self) -> int:
        return int((self.tiles[:, 1] - self.tiles[:, 0]).max()) if self.ntiles else 0

    def table_bytes(self) -> int:
        """Bytes the kernels read besides the CSR arrays: tile table and split lists."""
        return int(self.tiles.nbytes + self.split_rows.nbytes + self.split_ptr.nbytes)


def chunk_span(j0: np.ndarray | int, j1: np.ndarray | int) -> np.ndarray | int:
    """Aligned chunks of 4 covering ``[j0, j1)``: ``ceil(j1 / 4) - floor(j0 / 4)``."""
    return (np.asarray(j1) + 3) // 4 - np.asarray(j0) // 4


def row_tiles(indptr: np.ndarray, chunks: int, rows_max: int | None = None) -> TileSet:
    """Whole-row tiles of at most ``chunks`` aligned chunks and ``rows_max`` rows.

    Greedy from row 0: a tile starting at row r with first nonzero s takes every following
    row that ends at or before nonzero ``4 (floor(s/4) + chunks)``, at most ``rows_max`` rows
    (default ``4 chunks``, the kernel's row-pointer buffer). A row that does not fit alone is
    cut at the chunk boundaries ``4 (floor(s/4) + k chunks)`` into tiles of one row.
    Cost: one binary search per tile.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = indptr.size - 1
    rows_max = 4 * chunks if rows_max is None else min(int(rows_max), 4 * chunks)
    if chunks < 2 or rows_max < 1:
        raise ValueError(f"need chunks >= 2 and rows_max >= 1, got {chunks}, {rows_max}")
    out: list[tuple[int, int, int, int]] = []
    r = 0
    while r < rows:
        s = int(indptr[r])
        limit = 4 * (s // 4 + chunks)
        r_end = int(np.searchsorted(indptr, limit, side="right")) - 1
        r_end = min(r_end, r + rows_max, rows)
        if r_end > r:
            out.append((r, r_end, s, int(indptr[r_end])))
            r = r_end
            continue
        e = int(indptr[r + 1])
        cuts = [s] + list(range(4 * (s // 4 + chunks), e, 4 * chunks)) + [e]
        out.extend((r, r + 1, a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True))
        r += 1
    bounds = np.array(out, dtype=np.int64).reshape(-1, 4)
    tail_open = indptr[bounds[:, 1]] > bounds[:, 3]
    return _with_slots(indptr, bounds, tail_open, chunks, "rows")


def merge_items(chunks: int) -> int:
    """Merge items per tile for a chunk budget: ``4 (chunks - 1)`` (any such range of
    nonzeros spans at most ``chunks`` aligned chunks)."""
    return 4 * (chunks - 1)


def merge_coordinates(indptr: np.ndarray, diagonals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge-path coordinates (rows finished, nonzeros consumed) at each diagonal d.

    Row i's end event sits at merge position ``indptr[i+1] + i``; the rows finished before
    position d are those with ``indptr[i+1] + i < d``: ``i(d) = searchsorted(ends, d)``,
    ``j(d) = d - i(d)``.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = indptr.size - 1
    ends = indptr[1:] + np.arange(rows, dtype=np.int64)
    i = np.searchsorted(ends, diagonals, side="left").astype(np.int64)
    return i, np.asarray(diagonals, dtype=np.int64) - i


def merge_tiles(indptr: np.ndarray, chunks: int) -> TileSet:
    """Merge-path tiles of ``merge_items(chunks)`` items (row ends + nonzeros) each.

    Tile k covers merge positions ``[d_k, d_{k+1})``: nonzeros ``[j_k, j_{k+1})`` and the end
    events of rows ``[i_k, i_{k+1})``; it also touches row ``i_{k+1}`` when some of that row's
    nonzeros lie in it (the row then continues in the next tile).
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = indptr.size - 1
    nnz = int(indptr[-1])
    items = merge_items(chunks)
    total = rows + nnz
    diagonals = np.append(np.arange(0, total, items, dtype=np.int64), total)
    i, j = merge_coordinates(indptr, diagonals)
    i_next, j_next = i[1:], j[1:]
    partial_last = np.zeros(i_next.size, dtype=bool)
    inside = i_next < rows
    partial_last[inside] = j_next[inside] > indptr[i_next[inside]]
    bounds = np.stack([i[:-1], i_next + partial_last, j[:-1], j_next], axis=1)
    # The last row is open when its end event lies in a later tile, even if every one of its
    # nonzeros is in this one (the next tile then closes it with an empty head partial).
    return _with_slots(indptr, bounds, partial_last, chunks, "merge")


def _with_slots(indptr: np.ndarray, bounds: np.ndarray, tail_open: np.ndarray, chunks: int,
                kind: str) -> TileSet:
    """Add head/tail partial slots and the split-row lists to tile bounds (r0, r1, j0, j1).

    The first row is open (continued from an earlier tile) when it has nonzeros before j0;
    whether the last row continues is the tiling's to say (``tail_open``).
    """
    r0, r1, j0, j1 = (bounds[:, k] for k in range(4))
    if bounds.size and not (np.all(r1 > r0) and np.all(chunk_span(j0, j1) <= chunks)):
        raise AssertionError("tiling broke its row or chunk budget")
    head_open = indptr[r0] < j0 if bounds.size else np.zeros(0, bool)
    single = (r1 - r0 == 1) & head_open & tail_open
    nslot = head_open.astype(np.int64) + tail_open - single
    base = np.cumsum(nslot) - nslot
    head_slot = np.where(head_open, base, -1)
    tail_slot = np.where(tail_open, base + (head_open & ~single), -1)
    slot_row = np.full(int(nslot.sum()), -1, dtype=np.int64)
    slot_row[head_slot[head_open]] = r0[head_open]
    slot_row[tail_slot[tail_open]] = r1[tail_open] - 1
    starts = np.flatnonzero(np.diff(slot_row, prepend=-1) != 0) if slot_row.size else \
        np.zeros(0, np.int64)
    split_rows = slot_row[starts]
    split_ptr = np.append(starts, slot_row.size)
    table = np.zeros((bounds.shape[0], 8), dtype=np.int64)
    table[:, :4] = bounds
    table[:, 4] = head_slot
    table[:, 5] = tail_slot
    return TileSet(tiles=table.astype(np.int32), split_rows=split_rows.astype(np.int32),
                   split_ptr=split_ptr.astype(np.int32), chunks=int(chunks), kind=kind)


def tile_lanes(nrows: np.ndarray, block: int) -> np.ndarray:
    """``spmv_tile``'s threads a row in phase 2: the largest power of two ``<= block / rows``,
    at most 32 (at least 1)."""
    rows = np.maximum(np.asarray(nrows, dtype=np.int64), 1)
    lanes = np.ones_like(rows)
    for _ in range(5):
        lanes = np.where((lanes < 32) & (lanes * 2 * rows <= block), lanes * 2, lanes)
    return lanes


def listed_long_rows(tiles: TileSet, indptr: np.ndarray, block: int) -> int:
    """Rows that ``spmv_tile`` with WARP_ROWS would sum a warp each: in a tile whose rows get
    ``lanes < 32`` threads each (:func:`tile_lanes`), a row holding more than ``32 x lanes`` of
    the tile's nonzeros. Hand check: a tile of 300 rows gets 1 lane a row (256 / 300 < 2), so
    a row of 33 of its nonzeros is listed and one of 32 is not."""
    if not tiles.ntiles:
        return 0
    indptr = np.asarray(indptr, dtype=np.int64)
    r0, r1 = tiles.tiles[:, 0].astype(np.int64), tiles.tiles[:, 1].astype(np.int64)
    j0, j1 = tiles.tiles[:, 2].astype(np.int64), tiles.tiles[:, 3].astype(np.int64)
    counts = r1 - r0
    lanes = tile_lanes(counts, block)
    owner = np.repeat(np.arange(tiles.ntiles), counts)            # tile of each (tile, row)
    if owner.size == 0:
        return 0
    first = np.cumsum(counts) - counts                            # its first (tile, row)
    rows = r0[owner] + np.arange(owner.size) - first[owner]
    held = np.minimum(indptr[rows + 1], j1[owner]) - np.maximum(indptr[rows], j0[owner])
    return int(np.count_nonzero((lanes[owner] < 32) & (held > 32 * lanes[owner])))


def emulate_tiles(tiles: TileSet, indptr: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                  x: np.ndarray) -> np.ndarray:
    """What ``spmv_tile`` + ``spmv_fixup`` compute, in float64, tile by tile (a test oracle
    for the tiling: every row written exactly once, partial sums routed through their slots).

    ``cols`` are the decoded INT32 column indices. Rows never written stay NaN.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = indptr.size - 1
    y = np.full(rows, np.nan)
    writes = np.zeros(rows, dtype=np.int64)
    partials = np.full(tiles.nslots, np.nan)
    prod = np.asarray(vals, dtype=np.float64) * np.asarray(x, dtype=np.float64)[cols]
    for r0, r1, j0, j1, head, tail, _, _ in tiles.tiles.astype(np.int64):
        for r in range(r0, r1):
            lo, hi = max(indptr[r], j0), min(indptr[r + 1], j1)
            total = float(prod[lo:hi].sum()) if hi > lo else 0.0
            if r == r0 and head >= 0:
                partials[head] = total
            elif r == r1 - 1 and tail >= 0:
                partials[tail] = total
            else:
                y[r] = total
                writes[r] += 1
    for s, row in enumerate(tiles.split_rows):
        y[row] = partials[tiles.split_ptr[s]:tiles.split_ptr[s + 1]].sum()
        writes[row] += 1
    if np.any(writes > 1):
        raise AssertionError(f"rows written twice: {np.flatnonzero(writes > 1)[:10]}")
    return y
