"""Row slicing through CuPy: ``cupyx.scipy.sparse.csr_matrix[rows].toarray()``, INT32.

CuPy's fancy row indexing builds the selected rows as a new CSR (row lengths, a scan, a copy
of the runs; repeats allowed) and ``toarray`` scatters it into a zero-filled dense array --
the library route the issue names, timed end to end. The output is fresh on every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.spmm_cupy import cupy_csr
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig


@dataclass
class PreparedCupySlice:
    matrix: Any
    rows: Any
    working_set_bytes: int

    def call(self):
        return self.matrix[self.rows].toarray()


class SliceCupyI32(OpBackend):
    name = "slice-cupy-i32"
    capability = Capability(
        ops=("slice",), value_dtypes=("float32", "float64"), index_bytes=(4,), device="gpu",
        description="CuPy csr_matrix[rows].toarray() (fancy row indexing, INT32)")

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedCupySlice:
        import cupy

        return PreparedCupySlice(cupy_csr(case.matrix, value_dtype),
                                 cupy.asarray(case.inputs.rows.astype(np.int32)),
                                 case.traffic.dense_bytes)

    def run(self, prepared: PreparedCupySlice) -> np.ndarray:
        return np.ascontiguousarray(prepared.call().get())

    def time(self, prepared: PreparedCupySlice, config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        return time_cuda(prepared.call, config, library="cupy",
                         working_set_bytes=prepared.working_set_bytes)

    def library_versions(self) -> dict[str, str]:
        import cupy

        return {"cupy": cupy.__version__}

    def notes(self, prepared: PreparedCupySlice) -> dict[str, str]:
        return {"call": "csr_matrix[rows].toarray()", "index_dtype": "int32",
                "value_dtype": str(prepared.matrix.dtype),
                "output": "allocated by CuPy on every call"}
