"""``cuda-spmv-delta16-tiles``: 16-bit column offsets per tile, to move fewer bytes than INT32
CSR (the tiled sibling of ``cuda-spmv-delta16``, which packs SELL slices instead).

Whole-row tiles as in ``cuda-spmv-adaptive`` (or merge-path tiles with ``tiling="merge"``);
each tile stores its columns as 16-bit offsets from a base column, with INT32 escapes for the
columns that do not fit (:mod:`sparsescope.backends.spmv_delta16_format`). On a banded matrix
every column fits: 6 bytes per nonzero instead of 8, so a run at the copy bandwidth beats the
INT32 CSR floor by about a quarter. The kernel ranks the escapes of a tile with one block-wide
scan; everything else is the INT32 tile kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends.base import Capability
from sparsescope.backends.spmv_delta16_format import Delta16, delta16_traffic, encode_delta16
from sparsescope.backends.spmv_device import CAPABILITY, padded
from sparsescope.backends.spmv_tiled import TiledBackend
from sparsescope.backends.spmv_tiling import TileSet, merge_tiles, row_tiles
from sparsescope.model.traffic import Traffic


class CudaSpmvTileDelta16(TiledBackend):
    name = "cuda-spmv-delta16-tiles"
    capability = Capability(**CAPABILITY, description=(
        "own compressed-index kernel: 16-bit column offsets per tile, INT32 escapes (NVRTC)"))
    idx = 1
    defaults: dict[str, Any] = {**TiledBackend.defaults, "tiling": "rows"}

    def tiling(self, csr: sp.csr_matrix) -> TileSet:
        if self.params["tiling"] == "merge":
            return merge_tiles(csr.indptr, self.chunks)
        return row_tiles(csr.indptr, self.chunks)

    def build_format(self, csr: sp.csr_matrix) -> Delta16:
        rows, cols = csr.shape
        return encode_delta16(self.tiling(csr), csr.indptr, csr.indices, rows, cols)

    def tile_set(self, fmt: Delta16) -> TileSet:
        return fmt.tiles

    def columns(self, fmt: Delta16, csr: sp.csr_matrix):
        escapes = fmt.escapes if fmt.escapes.size else np.zeros(1, np.int32)
        return padded(fmt.offsets, np.uint16), escapes, fmt.tiles

    def format_traffic(self, fmt: Delta16, csr: sp.csr_matrix, value_bytes: int) -> Traffic:
        rows, cols = csr.shape
        return delta16_traffic(rows, cols, csr.nnz, fmt.escapes.size, value_bytes, fmt.tiles)

    def format_notes(self, fmt: Delta16) -> dict[str, str]:
        return {"escape_fraction": f"{fmt.escape_fraction:.4f}",
                "escapes": str(fmt.escapes.size)}
