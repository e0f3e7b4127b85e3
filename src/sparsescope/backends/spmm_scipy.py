"""SciPy on the CPU: ``csr_matrix @ X`` (sparsetools ``csr_matvecs``, one thread).

The SpMM backend that lets ``run --op spmm -> report`` go end to end without a GPU, and the
CPU side of the correctness suites. X is used in the layout asked for (SciPy reads either);
a fresh Y is allocated on every call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy
import scipy.sparse as sp

from sparsescope.backends.base import Capability, OpBackend
from sparsescope.ops.base import OpCase
from sparsescope.timing.host import time_host
from sparsescope.timing.types import Measurement, TimingConfig

_INDEX_DTYPES = {4: np.int32, 8: np.int64}


def typed_csr(csr: sp.csr_matrix, value_dtype: str, index_bytes: int) -> sp.csr_matrix:
    """A CSR copy with ``value_dtype`` values and ``index_bytes``-wide indices (set after
    construction: SciPy's constructor narrows int64 indices whenever they fit)."""
    out = sp.csr_matrix((csr.data.astype(value_dtype), csr.indices.copy(), csr.indptr.copy()),
                        shape=csr.shape)
    out.indices = csr.indices.astype(_INDEX_DTYPES[index_bytes])
    out.indptr = csr.indptr.astype(_INDEX_DTYPES[index_bytes])
    out.has_canonical_format = True
    return out


@dataclass
class PreparedScipySpmm:
    matrix: sp.csr_matrix
    x: np.ndarray


class SpmmScipyCpu(OpBackend):
    name = "spmm-scipy-cpu"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="cpu",
        description="SciPy CSR @ X (sparsetools csr_matvecs, one thread)")

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedScipySpmm:
        x = case.inputs.astype(value_dtype, order="K", copy=True)
        return PreparedScipySpmm(typed_csr(case.matrix, value_dtype, index_bytes), x)

    def run(self, prepared: PreparedScipySpmm) -> np.ndarray:
        return np.asarray(prepared.matrix @ prepared.x)

    def time(self, prepared: PreparedScipySpmm, config: TimingConfig) -> Measurement:
        """Host clock; working set = CSR arrays + X + Y (for the flush decision)."""
        m, x = prepared.matrix, prepared.x
        working_set = (m.data.nbytes + m.indices.nbytes + m.indptr.nbytes + x.nbytes
                       + m.shape[0] * x.shape[1] * x.itemsize)
        return time_host(lambda: m @ x, config, working_set_bytes=working_set)

    def library_versions(self) -> dict[str, str]:
        return {"numpy": np.__version__, "scipy": scipy.__version__}

    def notes(self, prepared: PreparedScipySpmm) -> dict[str, str]:
        order = "C" if prepared.x.flags.c_contiguous else "F"
        return {"index_dtype": str(prepared.matrix.indices.dtype),
                "value_dtype": str(prepared.matrix.dtype), "x_order": order}
