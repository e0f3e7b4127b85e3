"""The delta16 format: 16-bit column offsets per tile, INT32 escapes (``cuda-spmv-delta16``).

On top of a :class:`~sparsescope.backends.spmv_tiling.TileSet`, each tile gets a base column
``col_base``; a nonzero's column is stored as ``off = col - col_base`` in 16 bits when
``0 <= off < 0xFFFF``, otherwise as the marker ``0xFFFF`` plus its INT32 column in the escape
array (escapes in CSR order; tile t's first one at ``esc_start[t]``). Values, row pointers and
the CSR order stay as they are, so the kernel differs from the INT32 one only in how it decodes
columns. Bytes per nonzero: ``4 + 2`` (``8 + 2`` for an escape) against INT32 CSR's ``4 + 4``.

The base of a tile is the best of three candidates, judged by how many of the tile's columns
fall in ``[base, base + 0xFFFE]``: the smallest column (banded rows), the column at the
tile's diagonal minus 0x7FFF (local columns around the diagonal plus scattered far ones), and
the tile's middle column minus 0x7FFF.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.backends.spmv_tiling import TileSet
from sparsescope.model.traffic import Traffic

ESCAPE = 0xFFFF
"""16-bit marker of a column stored in the escape array."""
SPAN = 0xFFFF
"""Offsets 0 .. SPAN - 1 are stored directly."""
SAMPLE_STRIDE = 8
"""Every SAMPLE_STRIDE-th nonzero judges the base candidates of a tile."""


@dataclass(frozen=True)
class Delta16:
    """A matrix in delta16 form (plus the tiles, with col_base and esc_start filled in)."""

    tiles: TileSet
    offsets: np.ndarray
    """uint16 (nnz,): column offsets from the tile's base, ESCAPE for an escape."""
    escapes: np.ndarray
    """int32 (n_escapes,): INT32 columns of the escapes, in CSR order."""
    base_choice: np.ndarray
    """int8 (ntiles,): which candidate gave each tile's base (0 min, 1 diagonal, 2 middle)."""

    @property
    def escape_fraction(self) -> float:
        return self.escapes.size / self.offsets.size if self.offsets.size else 0.0


def delta16_bytes(rows: int, cols: int, nnz: int, n_escapes: int, value_bytes: int = 4,
                  tiles: TileSet | None = None) -> int:
    """Bytes one delta16 SpMV moves at least::

        nnz * (value_bytes + 2) + 4 n_escapes + 4 (rows + 1) + value_bytes (cols + rows)
        + tile table and split lists
    """
    return delta16_traffic(rows, cols, nnz, n_escapes, value_bytes, tiles).total_bytes


def delta16_traffic(rows: int, cols: int, nnz: int, n_escapes: int, value_bytes: int = 4,
                    tiles: TileSet | None = None) -> Traffic:
    """:func:`delta16_bytes` by array: values, 16-bit offsets plus INT32 escapes, INT32 row
    pointers plus the tile table, x and y."""
    table = tiles.table_bytes() if tiles is not None else 0
    return Traffic(format="CSR delta16 tiles", values_bytes=nnz * value_bytes,
                   indices_bytes=2 * nnz + 4 * n_escapes, row_meta_bytes=4 * (rows + 1) + table,
                   x_bytes=value_bytes * cols, y_read_bytes=0,
                   y_written_bytes=value_bytes * rows, flops=2 * nnz)


def _segment_sum(mask: np.ndarray, starts: np.ndarray, nonempty: np.ndarray) -> np.ndarray:
    """Per-tile count of True in ``mask`` (tiles contiguous; empty tiles count 0)."""
    out = np.zeros(nonempty.size, dtype=np.int64)
    if starts.size:
        out[nonempty] = np.add.reduceat(mask, starts, dtype=np.int64)
    return out


def encode_delta16(tiles: TileSet, indptr: np.ndarray | None, cols: np.ndarray, rows: int,
                   ncols: int) -> Delta16:
    """Encode the columns of a CSR matrix against ``tiles`` (which must cover every nonzero
    once, in order, as both tilings do; ``indptr`` is not needed and may be None).

    Cost: a min/max pass per tile; tiles whose columns span less than SPAN take their smallest
    column as base at once, the others compare the three candidates (a pass over their
    sampled nonzeros per candidate, int32 arithmetic).
    """
    table = tiles.tiles.astype(np.int64)
    ntiles = table.shape[0]
    cols = np.asarray(cols, dtype=np.int32)
    counts = table[:, 3] - table[:, 2]
    if int(counts.sum()) != cols.size:
        raise ValueError("tiles do not cover the nonzeros exactly once")
    r0, r1, j0 = table[:, 0], table[:, 1], table[:, 2]
    nonempty = counts > 0
    starts = j0[nonempty]
    lowest = np.zeros(ntiles, dtype=np.int64)
    highest = np.zeros(ntiles, dtype=np.int64)
    if starts.size:
        # Each segment runs to the next nonempty tile's j0, which is this tile's j1: tiles
        # are contiguous and an empty tile sits at the next tile's start.
        lowest[nonempty] = np.minimum.reduceat(cols, starts)
        highest[nonempty] = np.maximum.reduceat(cols, starts)
    top = max(0, ncols - SPAN)
    base = np.minimum(lowest, top)
    choice = np.zeros(ntiles, dtype=np.int8)
    tile_of = np.repeat(np.arange(ntiles, dtype=np.int32), counts)
    if np.any(highest - lowest >= SPAN):
        middle = np.zeros(ntiles, dtype=np.int64)
        middle[nonempty] = cols[(j0[nonempty] + table[nonempty, 3] - 1) // 2]
        diagonal = ((r0 + r1) // 2) * ncols // max(rows, 1)
        cand = np.clip(np.stack([lowest, diagonal - SPAN // 2, middle - SPAN // 2]), 0, top)
        # Judge the candidates on every SAMPLE_STRIDE-th nonzero (the choice only decides how
        # many escapes there are, never whether the encoding is right).
        sample_cols = cols[::SAMPLE_STRIDE]
        sample_tile = tile_of[::SAMPLE_STRIDE]
        covered = []
        for c in cand:
            off = sample_cols - c.astype(np.int32)[sample_tile]
            covered.append(np.bincount(sample_tile, weights=(off >= 0) & (off < SPAN),
                                       minlength=ntiles))
        choice = np.argmax(np.stack(covered), axis=0).astype(np.int8)
        base = cand[choice, np.arange(ntiles)]
    off = cols - base.astype(np.int32)[tile_of]
    escape = (off < 0) | (off >= SPAN)
    offsets = off.astype(np.uint16)
    offsets[escape] = ESCAPE
    escapes = cols[escape]
    n_esc = _segment_sum(escape, starts, nonempty)
    out = table.copy()
    out[:, 6] = base
    out[:, 7] = np.cumsum(n_esc) - n_esc
    new_tiles = TileSet(tiles=out.astype(np.int32), split_rows=tiles.split_rows,
                        split_ptr=tiles.split_ptr, chunks=tiles.chunks, kind=tiles.kind)
    return Delta16(tiles=new_tiles, offsets=offsets, escapes=escapes.astype(np.int32),
                   base_choice=choice)


def decode_delta16(d: Delta16) -> np.ndarray:
    """INT32 columns back from a delta16 encoding, the way the kernel decodes them: the k-th
    escape of tile t is ``escapes[esc_start[t] + k]``."""
    table = d.tiles.tiles.astype(np.int64)
    counts = table[:, 3] - table[:, 2]
    tile_of = np.repeat(np.arange(table.shape[0], dtype=np.int64), counts)
    cols = table[tile_of, 6] + d.offsets.astype(np.int64)
    escape = d.offsets == ESCAPE
    # rank of each escape within its tile
    esc_tile = tile_of[escape]
    first = np.searchsorted(esc_tile, esc_tile, side="left")
    rank = np.arange(esc_tile.size) - first
    cols[escape] = d.escapes[table[esc_tile, 7] + rank]
    return cols
