"""cuSPARSE's generic SpMV planned once, through NVIDIA's nvmath-python bindings: the library at
its best, as a user who plans the call gets it (``nvmath-cusparse-i32``).

``cupy-cusparse-i32`` times ``csr @ x``, which creates the descriptors, y and the workspace
inside every call. Here ``prepare`` does all of that once, with the low-level bindings of
``nvmath.bindings.cusparse`` (the C API's argument order):

* a handle (``cusparseCreate``, one per device and process, kept);
* the CSR descriptor (``cusparseCreateCsr``: INT32 row offsets and columns, base 0), the dense
  x and y descriptors (``cusparseCreateDnVec``) over device buffers made once;
* the workspace (``cusparseSpMV_bufferSize``, allocated by CuPy);
* ``cusparseSpMV_preprocess`` when the loaded cuSPARSE has it (a cuSPARSE 12 addition; the
  bindings are asked for the symbol, :func:`library_offers`) and the variant asks for it
  (``preprocess=1``, the default); otherwise the reason is kept in the case's notes.

The timed call is ``cusparseSpMV`` alone (y = 1 A x + 0 y) on the current CuPy stream (the
handle follows the stream, so a captured graph holds it too). ``y`` is the backend's own
buffer: poisoned with NaN before the checked run.

Algorithms are variants (``backends.variants``): ``alg=0`` ``CUSPARSE_SPMV_ALG_DEFAULT``,
``alg=1`` ``CUSPARSE_SPMV_CSR_ALG1``, ``alg=2`` ``CUSPARSE_SPMV_CSR_ALG2`` (deterministic), e.g.
``--variant 'nvmath-cusparse-i32[alg=2]'``; ``preprocess=0`` leaves the preprocessing out. The
case's notes name the algorithm that ran and whether it was preprocessed.

Without nvmath-python the backend is unavailable, with the install hint (``pip install
'sparsescope[nvmath]'``, which installs ``nvmath-python``).
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.timing.types import Measurement, TimingConfig

#: What the library route is called where its fixed cost per call is kept
#: (``MeasuredCeilings.library_call_us``, ``KernelShape.library``).
LIBRARY = "nvmath"
#: ``alg`` option -> the cuSPARSE SpMV algorithm's name (``nvmath.bindings.cusparse.SpMVAlg``).
SPMV_ALGORITHMS = {0: "DEFAULT", 1: "CSR_ALG1", 2: "CSR_ALG2"}
#: cudaDataType_t of the value dtypes (``nvmath.CudaDataType``: CUDA_R_32F, CUDA_R_64F).
CUDA_TYPES = {"float32": 0, "float64": 1}
INSTALL_HINT = "pip install 'sparsescope[nvmath]' (nvmath-python)"


def cusparse_name(kind: str, alg: int) -> str:
    """The C name of an algorithm: ``cusparse_name("SPMV", 2)`` -> ``CUSPARSE_SPMV_CSR_ALG2``,
    ``cusparse_name("SPMV", 0)`` -> ``CUSPARSE_SPMV_ALG_DEFAULT``."""
    table = SPMV_ALGORITHMS if kind == "SPMV" else SPMM_ALGORITHMS
    name = table[alg]
    return f"CUSPARSE_{kind}_ALG_DEFAULT" if name == "DEFAULT" else f"CUSPARSE_{kind}_{name}"


#: ``alg`` option -> the cuSPARSE SpMM algorithm's name (``nvmath.bindings.cusparse.SpMMAlg``).
SPMM_ALGORITHMS = {0: "DEFAULT", 1: "CSR_ALG1", 2: "CSR_ALG2", 3: "CSR_ALG3"}


def check_options(alg: int, preprocess: int, algorithms: dict[int, str]) -> None:
    """A ``ValueError`` naming the choices for an ``alg`` or ``preprocess`` out of range (a bad
    variant is refused before anything runs: ``backends.variants.backend_choice``)."""
    if isinstance(alg, bool) or alg not in algorithms:
        choices = ", ".join(f"{k} ({v})" for k, v in algorithms.items())
        raise ValueError(f"alg must be one of {choices}, got {alg!r}")
    if isinstance(preprocess, bool) or preprocess not in (0, 1):
        raise ValueError(f"preprocess must be 0 or 1, got {preprocess!r}")


@functools.lru_cache(maxsize=1)
def nvmath_status() -> tuple[bool, str]:
    """(True, "") when nvmath-python's cuSPARSE bindings load and CuPy sees a GPU, else
    (False, why, with the install hint); nvmath-python is looked for first (without importing
    anything), so a machine without it names it. Cached for the process."""
    import importlib.util

    if importlib.util.find_spec("nvmath") is None:
        return False, f"nvmath-python is not installed; install it with: {INSTALL_HINT}"
    ok, why = _gpu.cupy_cuda_status()
    if not ok:
        return ok, why
    from sparsescope._optional import import_optional
    from sparsescope.errors import MissingDependencyError

    try:
        import_optional("nvmath.bindings.cusparse", "the planned cuSPARSE backends")
    except MissingDependencyError as exc:
        return False, str(exc)
    except Exception as exc:  # a broken install: the wheel there, its libraries not
        return False, (f"nvmath-python cannot load cuSPARSE ({type(exc).__name__}: {exc}); "
                       f"reinstall it with: {INSTALL_HINT}")
    return True, ""


def library_offers(symbol: str, pointers: dict | None = None) -> tuple[bool, str]:
    """(True, "") when the cuSPARSE the bindings loaded exports ``symbol`` (e.g.
    ``cusparseSpMV_preprocess``), else (False, why). ``pointers``: the bindings' table of
    function pointers (``nvmath.bindings._internal.cusparse._inspect_function_pointers()``,
    names with or without leading underscores -> address, 0 when the library lacks it); read
    from the bindings when not given."""
    if pointers is None:
        try:
            from nvmath.bindings._internal import cusparse as internal

            pointers = internal._inspect_function_pointers()
        except Exception as exc:  # noqa: BLE001  (any failure: the symbol cannot be had)
            return False, f"cannot inspect the loaded cuSPARSE ({type(exc).__name__}: {exc})"
    found = [address for name, address in pointers.items() if name.lstrip("_") == symbol]
    if not found:
        return False, f"these nvmath-python bindings do not know {symbol}"
    if not found[0]:
        return False, f"the loaded cuSPARSE has no {symbol} (it needs cuSPARSE 12 or later)"
    return True, ""


class _Handle:
    """A cuSPARSE handle and the stream it was last set to."""

    def __init__(self, cusparse) -> None:
        self.ptr = cusparse.create()
        self.stream: int | None = None
        self.version = int(cusparse.get_version(self.ptr))

    def on_current_stream(self, cusparse) -> int:
        """The handle, set to CuPy's current stream if it is not already (a graph capture runs
        on a side stream)."""
        import cupy

        stream = int(cupy.cuda.get_current_stream().ptr)
        if stream != self.stream:
            cusparse.set_stream(self.ptr, stream)
            self.stream = stream
        return self.ptr


_handles: dict[int, _Handle] = {}


def handle(cusparse) -> _Handle:
    """The process's handle of the current device (made on first use: a handle costs
    milliseconds to create, nothing to keep)."""
    import cupy

    device = int(cupy.cuda.Device().id)
    if device not in _handles:
        _handles[device] = _Handle(cusparse)
    return _handles[device]


def device_csr(csr: sp.csr_matrix, value_dtype: str) -> tuple[Any, Any, Any]:
    """(row offsets, columns, values) of a canonical CSR on the device, INT32 indices; arrays of
    at least one element, so no pointer handed to cuSPARSE is null."""
    import cupy

    if not csr.has_canonical_format:
        raise ValueError("the matrix must be canonical (sorted, no duplicates)")

    def upload(array: np.ndarray, dtype) -> Any:
        out = cupy.zeros(max(1, array.size), dtype=dtype)
        if array.size:
            out[: array.size] = cupy.asarray(np.ascontiguousarray(array, dtype=dtype))
        return out

    return (upload(csr.indptr, np.int32), upload(csr.indices, np.int32),
            upload(csr.data, _gpu.VALUE_DTYPES[value_dtype]))


def create_csr(cusparse, csr: sp.csr_matrix, arrays: tuple, value_dtype: str) -> int:
    """``cusparseCreateCsr`` over the device arrays of :func:`device_csr`."""
    offsets, columns, values = arrays
    rows, cols = (int(n) for n in csr.shape)
    return cusparse.create_csr(rows, cols, int(csr.nnz), offsets.data.ptr, columns.data.ptr,
                               values.data.ptr, cusparse.IndexType.INDEX_32I,
                               cusparse.IndexType.INDEX_32I, cusparse.IndexBase.ZERO,
                               CUDA_TYPES[value_dtype])


def host_scalars(value_dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """alpha = 1 and beta = 0 on the host (cuSPARSE's default pointer mode), kept alive with
    the prepared call."""
    dtype = _gpu.VALUE_DTYPES[value_dtype]
    return np.ones(1, dtype=dtype), np.zeros(1, dtype=dtype)


def destroy_all(cusparse, destroyers: list) -> None:
    """Destroy descriptors in reverse order of creation, ignoring a library already unloaded
    (a prepared call collected at interpreter exit)."""
    for destroy, descriptor in reversed(destroyers):
        try:
            destroy(descriptor)
        except Exception:  # noqa: BLE001, S110  (the process is ending: nothing to report)
            pass


def preprocess_state(wanted: int, symbol: str, offered: tuple[bool, str]) -> tuple[bool, str]:
    """(run the preprocessing?, what the notes say): ``preprocess=0`` -> off; else the
    library's answer (:func:`library_offers`)."""
    if not wanted:
        return False, "off (variant preprocess=0)"
    ok, why = offered
    return (True, f"{symbol} once in prepare") if ok else (False, f"not run: {why}")


def nvmath_versions(cusparse_version: int | None = None) -> dict[str, str]:
    """nvmath-python, the cuSPARSE its bindings loaded (``cusparseGetVersion``: major x 1000 +
    minor x 100 + patch) and CuPy (provenance)."""
    versions = {"nvmath-python": _gpu.package_version("nvmath-python")}
    if cusparse_version:
        v = int(cusparse_version)
        versions["cusparse (nvmath)"] = f"{v // 1000}.{v % 1000 // 100}.{v % 100}"
    try:
        import cupy

        versions["cupy"] = cupy.__version__
    except ImportError:
        pass
    return versions


@dataclass
class PreparedNvmathSpmv:
    """One planned SpMV: descriptors, buffers and scalars, destroyed with the object."""

    handle: _Handle
    matrix: int
    """cusparseSpMatDescr_t."""
    vec_x: int
    vec_y: int
    x: Any
    """Device x (CuPy), the buffer the x descriptor points at."""
    y: Any
    buffer: Any
    alpha: np.ndarray
    beta: np.ndarray
    value_type: int
    alg: int
    """The cuSPARSE SpMVAlg value passed to every call."""
    algorithm: str
    """Its C name, e.g. ``CUSPARSE_SPMV_CSR_ALG2``."""
    preprocessed: bool
    preprocess_note: str
    rows: int
    cols: int
    nnz: int
    value_bytes: int
    keep: tuple = field(default=(), repr=False)
    """Device arrays the descriptors point at (kept alive with them)."""


class NvmathCusparseI32(SpmvBackend):
    name = "nvmath-cusparse-i32"
    capability = Capability(
        ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(4,), device="gpu",
        y_read=True, description="cuSPARSE SpMV planned once through nvmath-python "
                                 "(descriptors, buffer, preprocess in prepare), INT32")

    def __init__(self, alg: int = 0, preprocess: int = 1) -> None:
        check_options(alg, preprocess, SPMV_ALGORITHMS)
        self.alg, self.preprocess = alg, preprocess

    def availability(self) -> tuple[bool, str]:
        return nvmath_status()

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str,
                index_bytes: int) -> PreparedNvmathSpmv:
        import cupy
        from nvmath.bindings import cusparse

        rows, cols = (int(n) for n in matrix_csr.shape)
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        value_type = CUDA_TYPES[value_dtype]
        arrays = device_csr(matrix_csr, value_dtype)
        x = cupy.zeros(max(1, cols), dtype=dtype)
        y = cupy.zeros(max(1, rows), dtype=dtype)
        alpha, beta = host_scalars(value_dtype)
        alg = int(getattr(cusparse.SpMVAlg, SPMV_ALGORITHMS[self.alg]))
        h = handle(cusparse)
        destroyers: list = []
        try:
            mat = create_csr(cusparse, matrix_csr, arrays, value_dtype)
            destroyers.append((cusparse.destroy_sp_mat, mat))
            vec_x = cusparse.create_dn_vec(cols, x.data.ptr, value_type)
            destroyers.append((cusparse.destroy_dn_vec, vec_x))
            vec_y = cusparse.create_dn_vec(rows, y.data.ptr, value_type)
            destroyers.append((cusparse.destroy_dn_vec, vec_y))
            op = cusparse.Operation.NON_TRANSPOSE
            size = cusparse.sp_mv_buffer_size(h.on_current_stream(cusparse), op,
                                              alpha.ctypes.data, mat, vec_x, beta.ctypes.data,
                                              vec_y, value_type, alg)
            buffer = cupy.empty(max(1, int(size)), dtype=cupy.uint8)
            run_it, note = preprocess_state(self.preprocess, "cusparseSpMV_preprocess",
                                            library_offers("cusparseSpMV_preprocess")
                                            if self.preprocess else (False, ""))
            if run_it:
                cusparse.sp_mv_preprocess(h.on_current_stream(cusparse), op, alpha.ctypes.data,
                                          mat, vec_x, beta.ctypes.data, vec_y, value_type, alg,
                                          buffer.data.ptr)
        except BaseException:
            destroy_all(cusparse, destroyers)
            raise
        prepared = PreparedNvmathSpmv(
            handle=h, matrix=mat, vec_x=vec_x, vec_y=vec_y, x=x, y=y, buffer=buffer,
            alpha=alpha, beta=beta, value_type=value_type, alg=alg,
            algorithm=cusparse_name("SPMV", self.alg), preprocessed=run_it,
            preprocess_note=note, rows=rows, cols=cols, nnz=int(matrix_csr.nnz),
            value_bytes=int(np.dtype(dtype).itemsize), keep=arrays)
        weakref.finalize(prepared, destroy_all, cusparse, destroyers)
        return prepared

    @staticmethod
    def _call(prepared: PreparedNvmathSpmv):
        """One ``cusparseSpMV`` on the current stream: what is timed."""
        from nvmath.bindings import cusparse

        p = prepared
        op = cusparse.Operation.NON_TRANSPOSE
        alpha, beta, buffer = p.alpha.ctypes.data, p.beta.ctypes.data, p.buffer.data.ptr

        def call() -> None:
            cusparse.sp_mv(p.handle.on_current_stream(cusparse), op, alpha, p.matrix, p.vec_x,
                           beta, p.vec_y, p.value_type, p.alg, buffer)

        return call

    @staticmethod
    def _load_x(prepared: PreparedNvmathSpmv, x: np.ndarray) -> None:
        import cupy

        if prepared.cols:
            prepared.x[: prepared.cols] = cupy.asarray(
                np.ascontiguousarray(x, dtype=prepared.x.dtype))

    def poison_output(self, prepared: PreparedNvmathSpmv) -> bool:
        prepared.y.fill(np.nan)
        return True

    def run(self, prepared: PreparedNvmathSpmv, x: np.ndarray) -> np.ndarray:
        self._load_x(prepared, x)
        self._call(prepared)()
        return prepared.y[: prepared.rows].get()

    def time(self, prepared: PreparedNvmathSpmv, x: np.ndarray,
             config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        self._load_x(prepared, x)
        working_set = _gpu.csr_working_set_bytes(prepared.rows, prepared.cols, prepared.nnz,
                                                 prepared.value_bytes, 4)
        return time_cuda(self._call(prepared), config, library="cupy",
                         working_set_bytes=working_set)

    def library_versions(self) -> dict[str, str]:
        version = None
        if nvmath_status()[0]:
            from nvmath.bindings import cusparse

            version = handle(cusparse).version
        return nvmath_versions(version)

    def shape(self, prepared: PreparedNvmathSpmv):
        """cuSPARSE's csrmv (:func:`_gpu.cusparse_csrmv_shape`), the planned route's fixed
        cost (``library="nvmath"``); its launches: :func:`planned_launches`."""
        return _gpu.cusparse_csrmv_shape(prepared.nnz, 4, launches=planned_launches(
            prepared.preprocessed, self.alg), library=LIBRARY,
            row_search=not prepared.preprocessed, fixup=self.alg == 2)

    def host_plan(self, csr, value_dtype, index_bytes, sms):
        value_bytes = int(np.dtype(_gpu.VALUE_DTYPES[value_dtype]).itemsize)
        return (csr_spmv_traffic(*csr.shape, csr.nnz, value_bytes=value_bytes,
                                 index_bytes=index_bytes),
                _gpu.cusparse_csrmv_shape(csr.nnz, index_bytes,
                                          launches=planned_launches(bool(self.preprocess),
                                                                    self.alg),
                                          library=LIBRARY, row_search=not self.preprocess,
                                          fixup=self.alg == 2))

    def notes(self, prepared: PreparedNvmathSpmv) -> dict[str, str]:
        return {"call": "cusparseSpMV (nvmath.bindings.cusparse), planned once in prepare",
                "algorithm": prepared.algorithm, "preprocess": prepared.preprocess_note,
                "buffer_bytes": str(int(prepared.buffer.nbytes)), "index_dtype": "int32",
                "value_dtype": str(prepared.y.dtype),
                "output": "the backend's own y, written by every call (beta = 0)"}


def planned_launches(preprocessed: bool, alg: int = 0) -> int:
    """Kernel launches a planned cuSPARSE SpMV makes, as the kernel breakdown of the planned
    call shows on an H100 (cuSPARSE 12.6.3, 2026-11-27)::

        launches = 2 (the memset of y, csrmv_v3) + 1 unless preprocessed (csr_partition)
                   + 1 for CSR_ALG2 (spmv_fixup_kernel_v2)

    The default algorithm runs CSR_ALG1's kernels. Hand check: default, preprocessed -> 2;
    CSR_ALG2 not preprocessed -> 4."""
    return 2 + (0 if preprocessed else 1) + (1 if alg == 2 else 0)
