"""A sparsescope plug-in backend: ``y = A x`` on the CPU with NumPy, from a row id per nonzero.

The matrix is held as COO (a row id and a column per nonzero) instead of CSR's row pointers:
one call gathers ``x[col]``, multiplies by the values and sums per row with ``np.bincount``
(accumulated in float64, stored in the value dtype). Its bytes are therefore not CSR's, and the
backend declares them (``own_traffic``), as every backend does::

    values   = nnz * value_bytes         indices = nnz * index_bytes   (columns)
    row meta = nnz * index_bytes          (a row id per nonzero, where CSR reads rows + 1)
    x        = cols * value_bytes         y       = rows * value_bytes (written, not read)
    flops    = 2 * nnz
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.model.traffic import Traffic
from sparsescope.timing.host import time_host
from sparsescope.timing.types import Measurement, TimingConfig


@dataclass(frozen=True)
class CooArrays:
    """One prepared matrix: a row id, a column and a value per nonzero."""

    rows: int
    cols: int
    row_ids: np.ndarray
    columns: np.ndarray
    values: np.ndarray


class NumpyCooSpmv(SpmvBackend):
    name = "numpy-coo-spmv"
    capability = Capability(
        ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="cpu",
        description="NumPy COO: x gathered, np.bincount per row (plug-in example)")

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str, index_bytes: int) -> CooArrays:
        index = np.int32 if index_bytes == 4 else np.int64
        rows, cols = matrix_csr.shape
        row_ids = np.repeat(np.arange(rows, dtype=index), np.diff(matrix_csr.indptr))
        return CooArrays(rows, cols, row_ids, matrix_csr.indices.astype(index),
                         matrix_csr.data.astype(value_dtype))

    def run(self, prepared: CooArrays, x: np.ndarray) -> np.ndarray:
        p = prepared
        products = p.values * x[p.columns]
        return np.bincount(p.row_ids, weights=products, minlength=p.rows).astype(p.values.dtype)

    def time(self, prepared: CooArrays, x: np.ndarray, config: TimingConfig) -> Measurement:
        traffic = self.own_traffic(prepared)
        return time_host(lambda: self.run(prepared, x), config,
                         working_set_bytes=traffic.total_bytes)

    def own_traffic(self, prepared: CooArrays) -> Traffic:
        p = prepared
        value, index, nnz = p.values.itemsize, p.columns.itemsize, p.values.size
        return Traffic(format=f"COO INT{8 * index}", values_bytes=nnz * value,
                       indices_bytes=nnz * index, row_meta_bytes=nnz * index,
                       x_bytes=p.cols * value, y_read_bytes=0, y_written_bytes=p.rows * value,
                       flops=2 * nnz)

    def notes(self, prepared: CooArrays) -> dict[str, str]:
        return {"format": "COO (row id per nonzero)", "sum": "np.bincount in float64"}

    def library_versions(self) -> dict[str, str]:
        return {"numpy": np.__version__}


def sparsescope_backends() -> list[type]:
    """The plug-in hook: the backend classes this package adds to sparsescope."""
    return [NumpyCooSpmv]
