"""Ginkgo's CSR SpMM through its Python binding pyGinkgo (seed 004's second library).

pyGinkgo (``import pyGinkgo.pyGinkgoBindings as pGB``; built from source against an installed
Ginkgo, no wheel on PyPI) exposes::

    exec = pGB.CudaExecutor(0, pGB.ReferenceExecutor())
    A = pGB.matrix.Csr_float_int32(exec, (rows, cols), values, col_idxs, row_ptrs)
    X = pGB.matrix.dense_float(exec, x_2d)          # row-major, stride k
    Y = pGB.matrix.dense_float(exec, (rows, k))
    A.apply(X, Y); exec.synchronize(); Y.copy_to_host()

Ginkgo's Dense is row-major, so only ``layout=row`` runs (column-major would need a copy).
When pyGinkgo is missing or has no CUDA executor, the backend reports itself unavailable with
the reason, and every case is recorded as skipped with it.

Timing uses CUDA events on CuPy's current stream (the legacy default stream), which is where
a CudaExecutor created without a stream launches; the notes say so. The host copy of Y is read
through its raw memory (row-major, ``rows * k`` values): pyGinkgo's buffer protocol reports
column-major strides for a row-major Dense in the versions read for this adapter.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig

MODULE = "pyGinkgo.pyGinkgoBindings"
_TYPE_NAMES = {"float32": "float", "float64": "double", 4: "int32", 8: "int64"}


def ginkgo_status() -> tuple[bool, str]:
    """(True, "") when pyGinkgo imports and sees a CUDA device, else (False, why not)."""
    try:
        found = importlib.util.find_spec("pyGinkgo") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return False, ("pyGinkgo is not installed (it is built from source against Ginkgo: "
                       "github.com/Helmholtz-AI-Energy/pyGinkgo; no wheel on PyPI)")
    try:
        bindings = importlib.import_module(MODULE)
        count = int(bindings.CudaExecutor.get_num_devices())
    except Exception as exc:  # a binding built without CUDA, or a broken install
        return False, f"pyGinkgo cannot open a CUDA executor: {type(exc).__name__}: {exc}"
    if count < 1:
        return False, "pyGinkgo was built without CUDA or sees no CUDA device"
    return True, ""


def host_dense(dense_on_host, rows: int, k: int, dtype) -> np.ndarray:
    """A ``rows x k`` C-ordered copy of a host Dense, read from its raw memory (whatever
    strides its buffer protocol reports)."""
    view = np.asarray(dense_on_host)
    flat = np.lib.stride_tricks.as_strided(view, shape=(rows * k,),
                                           strides=(view.itemsize,), writeable=False)
    return np.array(flat, dtype=dtype).reshape(rows, k)


@dataclass
class PreparedGinkgo:
    executor: Any
    matrix: Any
    x: Any
    y: Any
    rows: int
    k: int
    dtype: Any
    keep: tuple
    """Host arrays the binding may view (kept alive with the case)."""
    working_set_bytes: int


class SpmmGinkgo(OpBackend):
    name = "spmm-ginkgo"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="Ginkgo Csr::apply through pyGinkgo (CUDA executor)")

    def availability(self) -> tuple[bool, str]:
        return ginkgo_status()

    def unsupported_params(self, case: OpCase) -> str:
        if case.params.layout != "row":
            return "Ginkgo's Dense is row-major: layout=col is not run (it would need a copy)"
        return ""

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedGinkgo:
        pgb = importlib.import_module(MODULE)
        vt, it = _TYPE_NAMES[value_dtype], _TYPE_NAMES[index_bytes]
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        index_dtype = _gpu.INDEX_DTYPES[index_bytes]
        csr = case.matrix
        executor = pgb.CudaExecutor(0, pgb.ReferenceExecutor())
        values = np.ascontiguousarray(csr.data, dtype=dtype)
        cols = np.ascontiguousarray(csr.indices, dtype=index_dtype)
        ptrs = np.ascontiguousarray(csr.indptr, dtype=index_dtype)
        matrix = getattr(pgb.matrix, f"Csr_{vt}_{it}")(
            executor, (int(csr.shape[0]), int(csr.shape[1])), values, cols, ptrs)
        x_host = np.ascontiguousarray(case.inputs, dtype=dtype)
        dense = getattr(pgb.matrix, f"dense_{vt}")
        k = int(case.params.k)
        x = dense(executor, x_host)
        y = dense(executor, (int(csr.shape[0]), k))
        return PreparedGinkgo(executor, matrix, x, y, int(csr.shape[0]), k, dtype,
                              (values, cols, ptrs, x_host), case.traffic.compulsory_bytes)

    def poison_output(self, prepared: PreparedGinkgo) -> bool:
        prepared.y.fill(float("nan"))
        return True

    def run(self, prepared: PreparedGinkgo) -> np.ndarray:
        prepared.matrix.apply(prepared.x, prepared.y)
        prepared.executor.synchronize()
        return host_dense(prepared.y.copy_to_host(), prepared.rows, prepared.k, prepared.dtype)

    def time(self, prepared: PreparedGinkgo, config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        matrix, x, y = prepared.matrix, prepared.x, prepared.y
        return time_cuda(lambda: matrix.apply(x, y), config, library="cupy",
                         working_set_bytes=prepared.working_set_bytes)

    def library_versions(self) -> dict[str, str]:
        version = _gpu.package_version("pyGinkgo", "pyginkgo")
        return {"pyGinkgo": version or "unknown"}

    def notes(self, prepared: PreparedGinkgo) -> dict[str, str]:
        return {"call": "Csr.apply(X, Y) on a CudaExecutor",
                "timing_stream": "CUDA events on the legacy default stream (CudaExecutor "
                                 "created without a stream)",
                "output": "Y allocated once, reused (poisoned before the checked run)"}
