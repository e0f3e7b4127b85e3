"""``cuda-spmv-adaptive``: CSR-Adaptive-style SpMV with whole-row tiles.

Rows are packed into tiles of at most ``256 x iters`` aligned 4-nonzero chunks
(:func:`~sparsescope.backends.spmv_tiling.row_tiles`); each tile is one block that streams its
nonzeros with 16-byte loads, multiplies by x into shared memory, then reduces every row with a
thread, a sub-warp or a warp, by the tile's row count (its "bucket": many short rows get a
thread each, a few long ones a warp each). A row longer than a tile is cut into tiles of its
own whose partial sums ``spmv_fixup`` adds (the only rows not owned by one group). Row-length
statistics set the tile budget: ``rows_max`` caps the rows of one tile (default: the kernel's
row-pointer buffer, 4 chunks per tile).
"""

from __future__ import annotations

from typing import Any

import scipy.sparse as sp

from sparsescope.backends.base import Capability
from sparsescope.backends.spmv_device import CAPABILITY
from sparsescope.backends.spmv_tiled import TiledBackend
from sparsescope.backends.spmv_tiling import TileSet, row_tiles


class CudaSpmvAdaptive(TiledBackend):
    name = "cuda-spmv-adaptive"
    capability = Capability(**CAPABILITY, description=(
        "own CSR-Adaptive kernel: whole-row tiles, thread/sub-warp/warp per row by tile, "
        "long rows split (NVRTC)"))
    defaults: dict[str, Any] = {**TiledBackend.defaults, "rows_max": None}

    def tiling(self, csr: sp.csr_matrix) -> TileSet:
        return row_tiles(csr.indptr, self.chunks, self.params["rows_max"])
