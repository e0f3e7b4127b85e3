"""SciPy on the CPU: ``csr_matrix @ x`` (sparsetools ``csr_matvec``, one thread).

The backend that lets ``run -> report`` go end to end without a GPU. It computes
``y_i = sum_j A_ij x_j`` in the value dtype and allocates a fresh ``y`` on every call (no y read).
"""

from __future__ import annotations

import numpy as np
import scipy
import scipy.sparse as sp

from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.timing.host import time_host
from sparsescope.timing.types import Measurement, TimingConfig

_INDEX_DTYPES = {4: np.int32, 8: np.int64}


class ScipyCpuBackend(SpmvBackend):
    name = "scipy-cpu"
    capability = Capability(
        ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="cpu",
        y_read=False, description="SciPy CSR @ x (sparsetools csr_matvec, one thread)")

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str,
                index_bytes: int) -> sp.csr_matrix:
        """A CSR copy with ``value_dtype`` values and ``index_bytes``-wide indices.

        The index arrays are set after construction because SciPy's constructor narrows int64
        indices to int32 whenever the values fit.
        """
        index_dtype = _INDEX_DTYPES[index_bytes]
        if index_bytes == 4 and max(matrix_csr.nnz, *matrix_csr.shape) > np.iinfo(np.int32).max:
            raise ValueError("matrix too large for INT32 indices")
        prepared = sp.csr_matrix(
            (matrix_csr.data.astype(value_dtype), matrix_csr.indices.copy(),
             matrix_csr.indptr.copy()), shape=matrix_csr.shape)
        prepared.indices = matrix_csr.indices.astype(index_dtype)
        prepared.indptr = matrix_csr.indptr.astype(index_dtype)
        return prepared

    def run(self, prepared: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
        return prepared @ x

    def time(self, prepared: sp.csr_matrix, x: np.ndarray, config: TimingConfig) -> Measurement:
        """Host-clock timing; working set = CSR arrays + x + y (for the flush decision)."""
        working_set = (prepared.data.nbytes + prepared.indices.nbytes + prepared.indptr.nbytes
                       + x.nbytes + prepared.shape[0] * prepared.data.itemsize)
        return time_host(lambda: prepared @ x, config, working_set_bytes=working_set)

    def library_versions(self) -> dict[str, str]:
        return {"numpy": np.__version__, "scipy": scipy.__version__}

    def notes(self, prepared: sp.csr_matrix) -> dict[str, str]:
        return {"index_dtype": str(prepared.indices.dtype), "value_dtype": str(prepared.dtype)}
