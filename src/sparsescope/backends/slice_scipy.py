"""SciPy on the CPU: ``A[rows].toarray()`` (fancy row indexing, then a dense copy).

The slice backend that runs everywhere: the CPU side of the correctness suites and of
``run --op slice``. Out-of-range indices never reach it (the op maps them to the appended
empty row or raises first); a fresh dense output is allocated on every call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy
import scipy.sparse as sp

from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.spmm_scipy import typed_csr
from sparsescope.ops.base import OpCase
from sparsescope.timing.host import time_host
from sparsescope.timing.types import Measurement, TimingConfig


@dataclass
class PreparedScipySlice:
    matrix: sp.csr_matrix
    rows: np.ndarray


class SliceScipyCpu(OpBackend):
    name = "slice-scipy-cpu"
    capability = Capability(
        ops=("slice",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="cpu",
        description="SciPy A[rows].toarray() (fancy row indexing, one thread)")

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedScipySlice:
        rows = case.inputs.rows.astype(np.int32 if index_bytes == 4 else np.int64)
        return PreparedScipySlice(typed_csr(case.matrix, value_dtype, index_bytes), rows)

    def run(self, prepared: PreparedScipySlice) -> np.ndarray:
        return prepared.matrix[prepared.rows].toarray()

    def time(self, prepared: PreparedScipySlice, config: TimingConfig) -> Measurement:
        m, rows = prepared.matrix, prepared.rows
        working_set = (m.data.nbytes + m.indices.nbytes + m.indptr.nbytes + rows.nbytes
                       + rows.size * m.shape[1] * m.dtype.itemsize)
        return time_host(lambda: m[rows].toarray(), config, working_set_bytes=working_set)

    def library_versions(self) -> dict[str, str]:
        return {"numpy": np.__version__, "scipy": scipy.__version__}

    def notes(self, prepared: PreparedScipySlice) -> dict[str, str]:
        return {"call": "A[rows].toarray()", "index_dtype": str(prepared.matrix.indices.dtype),
                "value_dtype": str(prepared.matrix.dtype)}
