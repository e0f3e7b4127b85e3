"""cuSPARSE through CuPy: ``cupyx.scipy.sparse.csr_matrix @ x`` with INT32 indices.

CuPy stores CSR indices as int32 only. For a 1-D ``x`` on CUDA 12/13 (where the legacy
``csrmv``/``csrmvEx`` entry points are gone) ``csr @ x`` calls ``cupyx.cusparse.spmv``: it
creates the cuSPARSE descriptors, allocates y with ``cupy.zeros`` and a workspace, and runs
``cusparseSpMV`` with beta = 0 -- the same CSR SpMV kernels as the PyTorch route, which
accumulate into y (``Capability.y_read=True``, as seed 000 section 2.5 counts it). The timed
call is that whole sequence, end to end.

y is a fresh zero-filled array on every call, so there is no buffer to poison
(:meth:`poison_output` returns False; the runner checks the result is a fresh host array).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.timing.types import Measurement, TimingConfig


@dataclass
class PreparedCupy:
    matrix: Any
    """cupyx.scipy.sparse.csr_matrix on the GPU, flagged canonical."""
    rows: int
    cols: int
    nnz: int
    value_bytes: int


class CupyCusparseI32(SpmvBackend):
    name = "cupy-cusparse-i32"
    capability = Capability(
        ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(4,), device="gpu",
        y_read=True, description="cuSPARSE via CuPy csr_matrix @ x (cusparseSpMV), INT32")

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str,
                index_bytes: int) -> PreparedCupy:
        import cupy
        import cupyx.scipy.sparse as csp

        if not matrix_csr.has_canonical_format:
            raise ValueError("the matrix must be canonical (sorted, no duplicates)")
        values = matrix_csr.data.astype(_gpu.VALUE_DTYPES[value_dtype], copy=False)
        matrix = csp.csr_matrix(
            (cupy.asarray(values), cupy.asarray(matrix_csr.indices.astype(np.int32, copy=False)),
             cupy.asarray(matrix_csr.indptr.astype(np.int32, copy=False))),
            shape=tuple(int(n) for n in matrix_csr.shape))
        # Canonical by the matrices stage's contract (checked above on the host): say so, or
        # every product would re-check it on the device and synchronise.
        try:
            matrix.has_canonical_format = True
        except AttributeError:  # a CuPy without the setter: set the cached flags it reads
            matrix._has_canonical_format = True
            matrix._has_sorted_indices = True
        return PreparedCupy(matrix=matrix, rows=int(matrix_csr.shape[0]),
                            cols=int(matrix_csr.shape[1]), nnz=int(matrix_csr.nnz),
                            value_bytes=values.itemsize)

    @staticmethod
    def _x(prepared: PreparedCupy, x: np.ndarray):
        import cupy

        return cupy.asarray(np.ascontiguousarray(x, dtype=prepared.matrix.dtype))

    def run(self, prepared: PreparedCupy, x: np.ndarray) -> np.ndarray:
        return (prepared.matrix @ self._x(prepared, x)).get()

    def time(self, prepared: PreparedCupy, x: np.ndarray, config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        matrix, xd = prepared.matrix, self._x(prepared, x)
        working_set = _gpu.csr_working_set_bytes(prepared.rows, prepared.cols, prepared.nnz,
                                                 prepared.value_bytes, 4)
        return time_cuda(lambda: matrix @ xd, config, library="cupy",
                         working_set_bytes=working_set)

    def library_versions(self) -> dict[str, str]:
        return _gpu.cupy_cusparse_versions()

    def shape(self, prepared: PreparedCupy):
        """cuSPARSE's csrmv (:func:`_gpu.cusparse_csrmv_shape`); 3 launches a call: the
        memset of the output, the partition and the SpMV."""
        return _gpu.cusparse_csrmv_shape(prepared.nnz, 4, launches=3, library="cupy")

    def host_plan(self, csr, value_dtype, index_bytes, sms):
        value_bytes = int(np.dtype(_gpu.VALUE_DTYPES[value_dtype]).itemsize)
        return (csr_spmv_traffic(*csr.shape, csr.nnz, value_bytes=value_bytes,
                                 index_bytes=index_bytes),
                _gpu.cusparse_csrmv_shape(csr.nnz, index_bytes, launches=3, library="cupy"))

    def notes(self, prepared: PreparedCupy) -> dict[str, str]:
        return {"call": "cupyx.scipy.sparse.csr_matrix @ x (cupyx.cusparse.spmv)",
                "index_dtype": str(prepared.matrix.indices.dtype),
                "value_dtype": str(prepared.matrix.dtype),
                "output": "allocated and zero-filled by CuPy on every call"}
