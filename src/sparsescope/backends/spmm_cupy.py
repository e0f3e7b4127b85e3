"""cuSPARSE SpMM through CuPy: ``cupyx.scipy.sparse.csr_matrix @ X``, INT32 indices.

CuPy stores CSR indices as int32 only. ``csr @ X`` with a 2-D X ends in
``cupyx.cusparse.spmm`` (generic ``cusparseSpMM``), which takes X column-major: a row-major X
is converted by CuPy first, inside the timed call, as a user of ``A @ X`` gets it. Y is a
fresh array on every call (nothing to poison; the runner checks the output is fresh).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig


def cupy_csr(csr: sp.csr_matrix, value_dtype: str):
    """``cupyx.scipy.sparse.csr_matrix`` of a canonical CSR, flagged canonical (so CuPy does
    not re-check it on the device and synchronise on every product)."""
    import cupy
    import cupyx.scipy.sparse as csp

    matrix = csp.csr_matrix(
        (cupy.asarray(csr.data.astype(_gpu.VALUE_DTYPES[value_dtype])),
         cupy.asarray(csr.indices.astype(np.int32)), cupy.asarray(csr.indptr.astype(np.int32))),
        shape=tuple(int(n) for n in csr.shape))
    try:
        matrix.has_canonical_format = True
    except AttributeError:  # a CuPy without the setter: set the cached flags it reads
        matrix._has_canonical_format = True
        matrix._has_sorted_indices = True
    return matrix


@dataclass
class PreparedCupySpmm:
    matrix: Any
    x: Any
    working_set_bytes: int


class SpmmCupyI32(OpBackend):
    name = "spmm-cupy-i32"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4,), device="gpu",
        description="cuSPARSE SpMM via CuPy csr_matrix @ X (cupyx.cusparse.spmm), INT32")

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedCupySpmm:
        import cupy

        x = case.inputs.astype(_gpu.VALUE_DTYPES[value_dtype], order="K")
        return PreparedCupySpmm(cupy_csr(case.matrix, value_dtype), cupy.array(x, order="K"),
                                case.traffic.compulsory_bytes)

    def run(self, prepared: PreparedCupySpmm) -> np.ndarray:
        return np.ascontiguousarray((prepared.matrix @ prepared.x).get())

    def time(self, prepared: PreparedCupySpmm, config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        matrix, x = prepared.matrix, prepared.x
        return time_cuda(lambda: matrix @ x, config, library="cupy",
                         working_set_bytes=prepared.working_set_bytes)

    def library_versions(self) -> dict[str, str]:
        return _gpu.cupy_cusparse_versions()

    def notes(self, prepared: PreparedCupySpmm) -> dict[str, str]:
        order = "C" if prepared.x.flags.c_contiguous else "F"
        return {"call": "cupyx.scipy.sparse.csr_matrix @ X", "x_order": order,
                "index_dtype": "int32", "value_dtype": str(prepared.matrix.dtype),
                "output": "allocated by CuPy on every call"}
