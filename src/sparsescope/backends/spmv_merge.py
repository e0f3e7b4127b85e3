"""``cuda-spmv-merge``: nnz-balanced (merge-path) SpMV for power-law matrices.

The merge of row ends and nonzeros is cut into equal pieces (Merrill & Garland, PPoPP'16;
:func:`~sparsescope.backends.spmv_tiling.merge_tiles`), so every block gets the same work
whatever the row lengths: a row of a million nonzeros is spread over hundreds of blocks, a run
of empty rows costs one item each. Same tile kernel as ``cuda-spmv-adaptive``; rows cut by a
tile boundary go through partial slots and ``spmv_fixup`` (no atomics).
"""

from __future__ import annotations

from typing import Any

import scipy.sparse as sp

from sparsescope.backends.base import Capability
from sparsescope.backends.spmv_device import CAPABILITY
from sparsescope.backends.spmv_tiled import TiledBackend
from sparsescope.backends.spmv_tiling import TileSet, merge_tiles


class CudaSpmvMerge(TiledBackend):
    name = "cuda-spmv-merge"
    capability = Capability(**CAPABILITY, description=(
        "own merge-path kernel: equal rows+nnz per block, split rows fixed up (NVRTC)"))
    defaults: dict[str, Any] = {**TiledBackend.defaults}

    def tiling(self, csr: sp.csr_matrix) -> TileSet:
        return merge_tiles(csr.indptr, self.chunks)
