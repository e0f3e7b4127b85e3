"""The packed format of ``spmm-cuda-rowtile`` (``backends/kernels/spmm_rowtile.cu`` reads it;
its header describes each array), built on the host with NumPy once per (matrix, R, C), and the
counts of it the host rules and the time model read.

* :func:`pack_rowtile`: each tile's nonzeros regrouped by chunk, a chunk no row of the tile
  touches left out;
* :func:`tile_x_rows`: the X rows a slice stages at most, from the tiles' column spans (one
  pass, before any packing);
* :func:`item_counts`: per item its nonzeros, entries staged, busiest warp and entry loads;
* :func:`entries_array`: the entries as the kernel reads them, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TILE_ROWS = (8, 16, 32, 64)
"""R: rows a block (a multiple of its warps; R x C <= 65,535, the row offsets are uint16)."""
CHUNK_ROWS = (16, 32, 64)
"""C: X rows a stage."""


@dataclass(frozen=True)
class RowTileFormat:
    """The packed matrix (the kernel's header describes each array)."""

    tile_rows: int
    chunk_rows: int
    rows: int
    cols: int
    nnz: int
    tile_ptr: np.ndarray
    """tiles + 1 offsets into the items (int64)."""
    item_chunk: np.ndarray
    """The chunk of each item (int64)."""
    item_base: np.ndarray
    """items + 1 offsets into the entries, each even (int64)."""
    item_seg: np.ndarray
    """items x (R + 2) uint16: the first entry of each tile row within the item, r = 0 .. R,
    and a pad."""
    entry_j: np.ndarray
    """Column of each entry within its chunk (int32; 0 for a pad entry)."""
    entry_v: np.ndarray
    """Value of each entry (float64; 0 for a pad entry)."""

    @property
    def tiles(self) -> int:
        return int(self.tile_ptr.size - 1)

    @property
    def items(self) -> int:
        return int(self.item_chunk.size)

    @property
    def entries(self) -> int:
        return int(self.entry_j.size)


def pack_rowtile(indptr, indices, data, cols: int, tile_rows: int,
                 chunk_rows: int) -> RowTileFormat:
    """The row-tile format of a CSR matrix (columns sorted within each row). Each nonzero
    (row r, column c) belongs to tile r // R and chunk c // C; the items are the (tile,
    chunk) pairs with a nonzero, in (tile, chunk) order, and an item's entries are its rows'
    nonzeros in (row, column) order -- a stable sort of the CSR order by (tile, chunk, row).
    An item with an odd count gets a zero pad entry (j 0, value 0) no row offset reaches.

    Hand check: rows [c 0, 5, 40], [ ], [c 33], R 8 -> one tile; C 32 -> items (chunk 0: j 0,
    5; chunk 1: j 8 (row 0), 1 (row 2)): tile_ptr [0, 2], item_chunk [0, 1], item_base
    [0, 2, 4], row offsets [0, 2, 2, 2, ...] and [0, 1, 1, 2, 2, ...]; with R 16 the same."""
    if tile_rows not in TILE_ROWS or chunk_rows not in CHUNK_ROWS:
        raise ValueError(f"R must be one of {TILE_ROWS} and C one of {CHUNK_ROWS}, got "
                         f"{tile_rows}, {chunk_rows}")
    indptr = np.asarray(indptr, dtype=np.int64)
    rows, nnz = int(indptr.size - 1), int(indptr[-1]) if indptr.size else 0
    tiles = -(-rows // tile_rows)
    chunks = max(1, -(-int(cols) // chunk_rows))
    row = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr))
    col = np.asarray(indices, dtype=np.int64)[:nnz]
    tile, local = np.divmod(row, tile_rows)
    key = (tile * chunks + col // chunk_rows) * tile_rows + local
    order = np.argsort(key, kind="stable")   # the CSR order kept within a (tile, chunk, row)
    item_key = key[order] // tile_rows
    starts = np.flatnonzero(np.r_[True, item_key[1:] != item_key[:-1]]) if nnz else \
        np.zeros(0, dtype=np.int64)
    keys = item_key[starts]
    item_tile, item_chunk = np.divmod(keys, chunks)
    counts = np.diff(np.r_[starts, nnz]).astype(np.int64)
    staged = counts + (counts & 1)
    item_base = np.r_[0, np.cumsum(staged)].astype(np.int64)
    items = int(keys.size)
    of_entry = np.repeat(np.arange(items, dtype=np.int64), counts)
    per_row = np.bincount(of_entry * tile_rows + local[order], minlength=items * tile_rows)
    seg = np.zeros((items, tile_rows + 2), dtype=np.int64)
    seg[:, 1:tile_rows + 1] = np.cumsum(per_row.reshape(items, tile_rows), axis=1)
    if seg.size and seg.max() > 0xFFFF:
        raise ValueError("an item holds more than 65,535 entries (R x C too large)")
    position = item_base[of_entry] + np.arange(nnz, dtype=np.int64) - starts[of_entry]
    entry_j = np.zeros(int(item_base[-1]), dtype=np.int32)
    entry_v = np.zeros(int(item_base[-1]), dtype=np.float64)
    entry_j[position] = col[order] % chunk_rows
    entry_v[position] = np.asarray(data, dtype=np.float64)[:nnz][order]
    tile_ptr = np.searchsorted(item_tile, np.arange(tiles + 1, dtype=np.int64)).astype(np.int64)
    return RowTileFormat(tile_rows, chunk_rows, rows, int(cols), nnz, tile_ptr,
                         item_chunk.astype(np.int64), item_base, seg.astype(np.uint16),
                         entry_j, entry_v)


def tile_x_rows(indptr, indices, cols: int, tile_rows: int, chunk_rows: int) -> int:
    """X rows a slice stages at most: per tile, the chunks from its first column's to its
    last's (a chunk inside that span the tile does not touch is skipped by the kernel, so
    this bounds the packed format's count from above)::

        sum over tiles with a nonzero of min((last // C + 1) C, cols) - (first // C) C

    Rows [c 0, 5], [c 40] in one tile of 2, C 32, 50 columns -> 50; R 1 -> 32 + 18 = 50;
    [c 33] alone -> 18."""
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = indptr.size - 1
    if rows <= 0 or indptr[-1] == 0:
        return 0
    edges = indptr[np.minimum(np.arange(0, rows + tile_rows, tile_rows), rows)]
    edges = np.unique(edges)   # trailing repeats of the last offset
    starts, ends = edges[:-1], edges[1:]
    used = starts[ends > starts]
    cols_of = np.asarray(indices)[:int(indptr[-1])]
    lo = np.minimum.reduceat(cols_of, used).astype(np.int64) // chunk_rows * chunk_rows
    hi = np.minimum((np.maximum.reduceat(cols_of, used).astype(np.int64) // chunk_rows + 1)
                    * chunk_rows, cols)
    return int((hi - lo).sum())


def item_counts(fmt: RowTileFormat, warps: int, value_bytes: int) -> dict[str, np.ndarray]:
    """Per item: its nonzeros, entries staged, its busiest warp's nonzeros and its entry loads.
    A row's entry loads (float: a 16-byte load a pair of entries; an odd first and a last
    single alone; double: one an entry)::

        head = first is odd and the row has any;  pairs = (n - head) // 2;
        loads = head + pairs + (n - head) % 2

    A row of entries 3 .. 7 (5): 1 + 2 + 0 = 3 loads; 4 .. 7 (3): 0 + 1 + 1 = 2."""
    seg = fmt.item_seg[:, :fmt.tile_rows + 1].astype(np.int64)
    per_row = np.diff(seg, axis=1)
    entries = seg[:, -1]
    rpw = fmt.tile_rows // warps
    busiest = per_row.reshape(fmt.items, warps, rpw).sum(axis=2).max(axis=1) if fmt.items else \
        np.zeros(0, dtype=np.int64)
    if value_bytes == 8:
        reads = entries.copy()
    else:
        head = ((seg[:, :-1] & 1) == 1) & (per_row > 0)
        rest = per_row - head
        reads = (head + rest // 2 + rest % 2).sum(axis=1)
    return {"entries": entries, "staged": np.diff(fmt.item_base),
            "busiest": busiest, "reads": reads}


def entries_array(fmt: RowTileFormat, value_dtype: str) -> np.ndarray:
    """The entries as the kernel reads them, bytes: (int32 j, float32 v) or (int32 j, int32
    pad, float64 v) each."""
    if value_dtype == "float32":
        dt = np.dtype([("j", "<i4"), ("v", "<f4")])
    else:
        dt = np.dtype([("j", "<i4"), ("pad", "<i4"), ("v", "<f8")])
    out = np.zeros(fmt.entries, dtype=dt)
    out["j"] = fmt.entry_j
    out["v"] = fmt.entry_v
    return out.view(np.uint8)
