"""The tiled CSR backends' shared half: tile table upload and launches of ``spmv_tile``.

Subclasses pick the tiling (:mod:`sparsescope.backends.spmv_tiling`) and the column encoding
(INT32, or delta16 from :mod:`sparsescope.backends.spmv_delta16_format`). Parameters:
``iters`` (aligned 4-nonzero chunks per thread and tile: 1 or 2; a tile holds at most
``256 x iters`` chunks), ``hint`` (0: streams through L1 like x; 1: streams with
``L1::no_allocate`` and an L2 ``evict_first`` policy, leaving L1 and L2 to x) and ``hub``
(0, 4096 or 8192: persistent blocks keep x[0, hub) in shared memory, float32 only; with
iters=2 at most 4096; -16384 or -32768: gathers of columns >= -hub read with L1::no_allocate,
so L1 keeps the hot columns x[0, -hub) of a matrix whose popular columns come first) and
``finish`` (0: rows cut by a tile boundary are summed by a second launch, ``spmv_fixup``; 1: the
tile that stores a split row's last partial sums it, in the same launch). ``finish`` stays 0 by
default: on the H200 it cost merge tiles, where nearly every tile ends in a split row, 2-49 %
(each such tile waits on a fence, an atomic and the partials' loads), and moved whole-row tiles
by -18 to +32 % (results/h200/kernels/followups/2026-11-25-finish-ab).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.spmv_device import (
    BLOCK,
    SOURCE,
    Launch,
    OwnSpmvBackend,
    PreparedOwn,
    padded,
    resident_blocks,
    sm_count,
    tile_kernel,
)
from sparsescope.backends.spmv_tiling import TileSet, listed_long_rows
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.traffic import Traffic, csr_spmv_traffic

ITERS = (1, 2)
HINTS = (0, 1)
FINISHES = (0, 1)
#: Hub sizes (x entries in shared memory) by iters: static shared memory stays under 48 KB.
HUBS = {1: (0, 4096, 8192, -16384, -32768), 2: (0, 4096, -16384, -32768)}


class TiledBackend(OwnSpmvBackend):
    """``spmv_tile`` over a :class:`TileSet`; ``idx`` 0 (INT32 columns) or 1 (delta16)."""

    idx = 0
    defaults: dict[str, Any] = {"iters": 1, "hint": 1, "hub": 0, "finish": 0}

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        p = self.params
        if p["iters"] not in ITERS or p["hint"] not in HINTS or p["hub"] not in HUBS[p["iters"]]:
            raise ValueError(f"iters must be one of {ITERS}, hint one of {HINTS}, hub one of "
                             f"{HUBS} by iters; got {p['iters']}, {p['hint']}, {p['hub']}")
        if p["finish"] not in FINISHES:
            raise ValueError(f"finish must be one of {FINISHES}; got {p['finish']}")

    @property
    def chunks(self) -> int:
        return BLOCK * int(self.params["iters"])

    @abstractmethod
    def tiling(self, csr: sp.csr_matrix) -> TileSet:
        """How the nonzeros are cut into tiles (whole rows or merge-path)."""

    def format_key(self) -> tuple:
        return (type(self).__name__, self.chunks,
                *(v for k, v in sorted(self.params.items())
                  if k not in ("iters", "hint", "hub", "finish")))

    def build_format(self, csr: sp.csr_matrix) -> TileSet:
        return self.tiling(csr)

    def tile_set(self, fmt: Any) -> TileSet:
        """The tiles of a built format (the format itself here; delta16 wraps them)."""
        return fmt

    def columns(self, fmt: Any, csr: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, TileSet]:
        """(padded column stream, escape columns, tiles) to upload."""
        return padded(csr.indices, np.int32), np.zeros(1, np.int32), fmt

    def format_traffic(self, fmt: Any, csr: sp.csr_matrix, value_bytes: int) -> Traffic:
        """INT32 CSR with the tile table (and split lists) as row metadata."""
        rows, cols = csr.shape
        traffic = csr_spmv_traffic(rows, cols, csr.nnz, value_bytes=value_bytes, index_bytes=4)
        return replace(traffic, format="CSR INT32 tiles",
                       row_meta_bytes=traffic.row_meta_bytes + fmt.table_bytes())

    def upload(self, fmt: Any, csr: sp.csr_matrix, value_dtype: str) -> PreparedOwn:
        import cupy

        stream, escapes, tiles = self.columns(fmt, csr)
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        buffers = {
            "tiles": cupy.asarray(np.ascontiguousarray(tiles.tiles).reshape(-1)),
            "row_ptr": cupy.asarray(csr.indptr.astype(np.int32, copy=False)),
            "cols": cupy.asarray(stream),
            "escapes": cupy.asarray(escapes),
            "val": cupy.asarray(padded(csr.data, dtype)),
            "split_rows": cupy.asarray(tiles.split_rows),
            "split_ptr": cupy.asarray(tiles.split_ptr),
            "slot_split": cupy.asarray(tiles.slot_split),
            # the split rows' partial counts: zero between calls (the finishing tile resets)
            "split_count": cupy.zeros(max(1, tiles.split_rows.size), dtype=np.int32),
        }
        finish = int(self.params["finish"])
        name, hub, listed = self.tile_instance(tiles, csr, value_dtype)
        notes = {"tiling": tiles.kind, "tiles": str(tiles.ntiles), "warp_rows": str(listed),
                 "chunks_per_tile": str(tiles.chunks),
                 "max_rows_per_tile": str(tiles.max_rows_per_tile),
                 "split_rows": str(tiles.split_rows.size), "hint": str(self.params["hint"]),
                 "value_dtype": value_dtype, "index_dtype": "int32"}
        notes.update(self.format_notes(fmt))
        p = self.new_prepared(csr, value_dtype, tiles.nslots, [], 0, buffers, notes)
        if p.rows and tiles.ntiles:
            b = buffers
            grid = tiles.ntiles
            if hub < 0:
                notes.update(l1_hot_columns=str(-hub))
            if hub > 0:  # persistent: one wave of resident blocks loops over the tiles
                grid = min(grid, sm_count() * resident_blocks(name, BLOCK))
                notes.update(hub=str(hub), persistent_blocks=str(grid))
            p.launches.append(Launch(name, grid, BLOCK, (
                np.int32(tiles.ntiles), b["tiles"], b["row_ptr"], b["cols"], b["escapes"],
                b["val"], p.x, p.y, p.partials, np.int32(p.cols), b["slot_split"],
                b["split_ptr"], b["split_rows"], b["split_count"])))
            if tiles.split_rows.size and not finish:
                p.launches.append(self.fixup_launch(value_dtype, b["split_rows"],
                                                    b["split_ptr"], (p.partials, p.y)))
        p.traffic = self.format_traffic(fmt, csr, np.dtype(dtype).itemsize)
        p.bytes_moved = p.traffic.total_bytes
        shape = self.host_shape(fmt, csr, value_dtype, sm_count())
        if shape is not None and hub > 0:
            shape = replace(shape, grid_blocks=grid, onchip_x_copies=grid)
        p.kernel_shape = self.device_shape(shape)
        return p

    def tile_instance(self, tiles: TileSet, csr: sp.csr_matrix,
                      value_dtype: str) -> tuple[str, int, int]:
        """(name expression, hub, listed long rows) of the ``spmv_tile`` instance for these
        tiles: no hub for float64 (shared memory holds 8-byte values only half as many), and
        WARP_ROWS only where some tile lists a row for a warp (``listed_long_rows``) and only
        with INT32 columns: it costs a barrier a tile, which slowed matrices without such rows
        (cant, uniform-05), and it raises the delta16 instance at iters 2 from 64 to 72
        registers, one block fewer an SM, which slowed it on the larger power-law matrices
        (results/h200/kernels/followups/2026-11-25-warp-rows-ab)."""
        hub = int(self.params["hub"])
        if value_dtype != "float32" and hub > 0:
            hub = 0
        listed = listed_long_rows(tiles, csr.indptr, BLOCK) if self.idx == 0 else 0
        name = tile_kernel(value_dtype, self.idx, int(self.params["hint"]),
                           int(self.params["iters"]), hub, finish=int(self.params["finish"]),
                           warp_rows=int(listed > 0))
        return name, hub, listed

    def host_shape(self, fmt: Any, csr: sp.csr_matrix, value_dtype: str,
                   sms: int) -> KernelShape | None:
        """A thread loads ITERS chunks of 4 nonzeros (vector loads) after the tile's row
        pointers, then gathers their x: one iteration of 4 x ITERS nonzeros per tile; a
        persistent (hub) kernel's grid is one wave (8 blocks per SM before its resources are
        known)."""
        tiles = self.tile_set(fmt)
        if not csr.shape[0] or not tiles.ntiles:
            return None
        finish = int(self.params["finish"])
        name, hub, _ = self.tile_instance(tiles, csr, value_dtype)
        grid = min(tiles.ntiles, sms * 8) if hub > 0 else tiles.ntiles
        return KernelShape(kernel=name, decomposition="nnz", block_threads=BLOCK,
                           grid_blocks=grid, nnz_per_iteration=4 * int(self.params["iters"]),
                           rounds_per_iteration=2, setup_rounds=1,
                           launches=1 + (tiles.split_rows.size > 0 and not finish),
                           fixup=bool(tiles.split_rows.size > 0 and not finish),
                           finish_split=bool(tiles.split_rows.size > 0 and finish),
                           programmatic_launch=True,
                           onchip_x_entries=abs(hub),
                           # shared memory: each persistent block fills its own copy; L1: each SM
                           onchip_x_copies=grid if hub > 0 else (sms if hub < 0 else 0),
                           cuda_source=SOURCE,
                           source="declared by the backend (template parameters)")

    def format_notes(self, fmt: Any) -> dict[str, str]:
        return {}
