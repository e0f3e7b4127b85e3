"""cuSPARSE through PyTorch: ``torch.sparse.mm(A_csr, x[:, None])``, the seed report's baseline.

* ``torch-cusparse-i64``: CSR with INT64 ``crow_indices`` / ``col_indices`` -- what PyTorch
  builds by default, and what seed 000 timed.
* ``torch-cusparse-i32``: the same call with INT32 indices (seed 000 section 9.3's what-if).

What one call does (PyTorch 2.x, ``at::_sparse_csr_mm``): allocate y and zero-fill it, then
``addmm`` with beta = 0, which calls cuSPARSE SpMM; for one dense column cuSPARSE runs its
CSR SpMV kernels (``csrmv_v3_kernel`` after ``csr_partition_kernel`` on CUDA 12/13), which
accumulate into y: seed 000 section 2.5 counts y as read and written, hence
``Capability.y_read=True``. The timed call is the whole sequence, end to end, as the seed did.

``torch.mv(A, x)`` takes another route (``addmv`` -> cuSPARSE SpMV on a fresh, not
zero-filled y); it is not what the seed timed, so these backends time ``torch.sparse.mm``.

No output buffer survives between calls (PyTorch allocates and zero-fills y every time), so
there is nothing to poison: :meth:`poison_output` returns False and the runner checks instead
that the result is a fresh full-length host array. A row cuSPARSE skipped would read 0.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.timing.types import Measurement, TimingConfig

CALL = "torch.sparse.mm(A, x[:, None])"


@dataclass
class PreparedTorch:
    """A CUDA CSR tensor and the sizes the timing protocol needs."""

    matrix: Any
    """torch.Tensor with layout torch.sparse_csr on the GPU."""
    rows: int
    cols: int
    nnz: int
    value_bytes: int
    index_bytes: int


class _TorchCusparse(SpmvBackend):
    capability: Capability

    def availability(self) -> tuple[bool, str]:
        return _gpu.torch_cuda_status()

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str,
                index_bytes: int) -> PreparedTorch:
        import torch

        index_dtype = _gpu.INDEX_DTYPES[index_bytes]
        values = matrix_csr.data.astype(_gpu.VALUE_DTYPES[value_dtype], copy=False)

        def device(array: np.ndarray):
            return torch.from_numpy(np.ascontiguousarray(array)).to("cuda")

        with warnings.catch_warnings():
            # "Sparse CSR tensor support is in beta state" and "Sparse invariant checks are
            # implicitly disabled": the matrices stage validated the CSR already, so
            # PyTorch's own check would only repeat it.
            warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support")
            warnings.filterwarnings("ignore", message=".*[Ss]parse invariant checks")
            matrix = torch.sparse_csr_tensor(
                device(matrix_csr.indptr.astype(index_dtype, copy=False)),
                device(matrix_csr.indices.astype(index_dtype, copy=False)),
                device(values), size=tuple(int(n) for n in matrix_csr.shape),
                check_invariants=False)
        return PreparedTorch(matrix=matrix, rows=int(matrix_csr.shape[0]),
                             cols=int(matrix_csr.shape[1]), nnz=int(matrix_csr.nnz),
                             value_bytes=values.itemsize, index_bytes=index_bytes)

    @staticmethod
    def _x2d(prepared: PreparedTorch, x: np.ndarray):
        import torch

        dtype = prepared.matrix.values().dtype
        return torch.from_numpy(np.ascontiguousarray(x)).to("cuda", dtype=dtype)[:, None]

    def run(self, prepared: PreparedTorch, x: np.ndarray) -> np.ndarray:
        import torch

        y = torch.sparse.mm(prepared.matrix, self._x2d(prepared, x))
        return y[:, 0].cpu().numpy()

    def time(self, prepared: PreparedTorch, x: np.ndarray, config: TimingConfig) -> Measurement:
        import torch

        from sparsescope.timing.cuda import time_cuda

        matrix, x2d = prepared.matrix, self._x2d(prepared, x)
        working_set = _gpu.csr_working_set_bytes(prepared.rows, prepared.cols, prepared.nnz,
                                                 prepared.value_bytes, prepared.index_bytes)
        return time_cuda(lambda: torch.sparse.mm(matrix, x2d), config, library="torch",
                         working_set_bytes=working_set)

    def library_versions(self) -> dict[str, str]:
        return _gpu.torch_versions()

    def shape(self, prepared: PreparedTorch):
        """cuSPARSE's csrmv (:func:`_gpu.cusparse_csrmv_shape`); 4 launches a call: the
        output's allocation fill, the memset, the partition and the SpMV."""
        return _gpu.cusparse_csrmv_shape(prepared.nnz, prepared.index_bytes, launches=4,
                                         library="torch")

    def host_plan(self, csr, value_dtype, index_bytes, sms):
        value_bytes = int(np.dtype(_gpu.VALUE_DTYPES[value_dtype]).itemsize)
        return (csr_spmv_traffic(*csr.shape, csr.nnz, value_bytes=value_bytes,
                                 index_bytes=index_bytes),
                _gpu.cusparse_csrmv_shape(csr.nnz, index_bytes, launches=4, library="torch"))

    def notes(self, prepared: PreparedTorch) -> dict[str, str]:
        return {"call": CALL, "index_dtype": str(prepared.matrix.crow_indices().dtype),
                "value_dtype": str(prepared.matrix.values().dtype),
                "output": "allocated and zero-filled by PyTorch on every call"}


class TorchCusparseI64(_TorchCusparse):
    name = "torch-cusparse-i64"
    capability = Capability(
        ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(8,), device="gpu",
        y_read=True, description="cuSPARSE via torch.sparse.mm, INT64 indices (seed baseline)")


class TorchCusparseI32(_TorchCusparse):
    name = "torch-cusparse-i32"
    capability = Capability(
        ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(4,), device="gpu",
        y_read=True, description="cuSPARSE via torch.sparse.mm, INT32 indices")
