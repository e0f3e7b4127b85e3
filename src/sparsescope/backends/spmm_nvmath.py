"""cuSPARSE's generic SpMM planned once through nvmath-python: ``spmm-nvmath-i32``, the SpMM
side of ``nvmath-cusparse-i32`` (:mod:`sparsescope.backends.nvmath_cusparse`).

``prepare`` makes the CSR descriptor (INT32), the dense X and Y descriptors
(``cusparseCreateDnMat``) in the case's layout -- row-major X and Y (``CUSPARSE_ORDER_ROW``,
leading dimension k) or column-major (``CUSPARSE_ORDER_COL``, leading dimension the rows), as
``ops.spmm`` lays X out -- the workspace (``cusparseSpMM_bufferSize``) and, when the loaded
cuSPARSE has it and the variant asks for it, ``cusparseSpMM_preprocess``. The timed call is
``cusparseSpMM`` alone (Y = 1 A X + 0 Y) on the current CuPy stream, into the backend's own Y
(poisoned before the checked run).

Algorithms are variants: ``alg=0`` ``CUSPARSE_SPMM_ALG_DEFAULT``, ``alg=1..3``
``CUSPARSE_SPMM_CSR_ALG1..3``; ``preprocess=0`` leaves the preprocessing out. Not every
algorithm takes every layout: whether cuSPARSE takes (algorithm, layout, dtype) is asked once
per process, on a 3 x 3 matrix, before the case is prepared (:func:`refusal`): an algorithm
that refuses a call the default algorithm takes is a skipped case with cuSPARSE's status as the
reason, not a failed one.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.nvmath_cusparse import (
    CUDA_TYPES,
    SPMM_ALGORITHMS,
    _Handle,
    check_options,
    create_csr,
    cusparse_name,
    destroy_all,
    device_csr,
    handle,
    host_scalars,
    library_offers,
    nvmath_status,
    nvmath_versions,
    preprocess_state,
)
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig

#: (alg, layout, value dtype) -> "" when cuSPARSE takes it, else why not (asked once).
_REFUSALS: dict[tuple[int, str, str], str] = {}


def dense_layout(layout: str, rows: int, cols: int) -> tuple[str, int]:
    """(cuSPARSE order name, leading dimension) of a ``rows x cols`` dense matrix stored in
    ``layout`` (``row``: a row's values contiguous, ld = cols; ``col``: ld = rows)::

        row: ("ROW", max(1, cols))      col: ("COL", max(1, rows))

    Hand check: X of 1000 x 8 row-major -> ("ROW", 8); column-major -> ("COL", 1000)."""
    if layout == "row":
        return "ROW", max(1, cols)
    if layout == "col":
        return "COL", max(1, rows)
    raise ValueError(f"layout must be row or col, got {layout!r}")


def device_dense(array: np.ndarray | None, shape: tuple[int, int], layout: str, value_dtype: str):
    """A CuPy array of ``shape`` in ``layout`` (C order for ``row``, Fortran for ``col``),
    holding ``array`` when given, zeros otherwise."""
    import cupy

    order = "C" if layout == "row" else "F"
    dtype = _gpu.VALUE_DTYPES[value_dtype]
    if array is None:
        return cupy.zeros(shape, dtype=dtype, order=order)
    return cupy.array(np.asarray(array, dtype=dtype), order=order)


def create_dense(cusparse, array, layout: str, value_dtype: str) -> int:
    """``cusparseCreateDnMat`` over a CuPy array laid out as ``layout``."""
    rows, cols = (int(n) for n in array.shape)
    order, ld = dense_layout(layout, rows, cols)
    return cusparse.create_dn_mat(rows, cols, ld, array.data.ptr, CUDA_TYPES[value_dtype],
                                  getattr(cusparse.Order, order))


@dataclass
class PreparedNvmathSpmm:
    """One planned SpMM: descriptors, buffers and scalars, destroyed with the object."""

    handle: _Handle
    matrix: int
    dense_x: int
    dense_y: int
    x: Any
    y: Any
    buffer: Any
    alpha: np.ndarray
    beta: np.ndarray
    value_type: int
    alg: int
    algorithm: str
    layout: str
    preprocessed: bool
    preprocess_note: str
    working_set_bytes: int
    keep: tuple = field(default=(), repr=False)


def plan(cusparse, csr: sp.csr_matrix, x: np.ndarray | None, k: int, layout: str,
         value_dtype: str, alg_option: int, preprocess: int) -> tuple[dict, list]:
    """Everything a planned ``cusparseSpMM`` needs, as keyword fields of
    :class:`PreparedNvmathSpmm` (less the working set), and the descriptors to destroy. Raises
    what cuSPARSE raises (the descriptors made so far destroyed)."""
    import cupy

    rows, cols = (int(n) for n in csr.shape)
    arrays = device_csr(csr, value_dtype)
    xd = device_dense(x, (cols, k), layout, value_dtype)
    yd = device_dense(None, (rows, k), layout, value_dtype)
    alpha, beta = host_scalars(value_dtype)
    value_type = CUDA_TYPES[value_dtype]
    alg = int(getattr(cusparse.SpMMAlg, SPMM_ALGORITHMS[alg_option]))
    h = handle(cusparse)
    op = cusparse.Operation.NON_TRANSPOSE
    destroyers: list = []
    try:
        mat = create_csr(cusparse, csr, arrays, value_dtype)
        destroyers.append((cusparse.destroy_sp_mat, mat))
        dense_x = create_dense(cusparse, xd, layout, value_dtype)
        destroyers.append((cusparse.destroy_dn_mat, dense_x))
        dense_y = create_dense(cusparse, yd, layout, value_dtype)
        destroyers.append((cusparse.destroy_dn_mat, dense_y))
        size = cusparse.sp_mm_buffer_size(h.on_current_stream(cusparse), op, op,
                                          alpha.ctypes.data, mat, dense_x, beta.ctypes.data,
                                          dense_y, value_type, alg)
        buffer = cupy.empty(max(1, int(size)), dtype=cupy.uint8)
        run_it, note = preprocess_state(preprocess, "cusparseSpMM_preprocess",
                                        library_offers("cusparseSpMM_preprocess")
                                        if preprocess else (False, ""))
        if run_it:
            cusparse.sp_mm_preprocess(h.on_current_stream(cusparse), op, op, alpha.ctypes.data,
                                      mat, dense_x, beta.ctypes.data, dense_y, value_type, alg,
                                      buffer.data.ptr)
    except BaseException:
        destroy_all(cusparse, destroyers)
        raise
    fields = dict(handle=h, matrix=mat, dense_x=dense_x, dense_y=dense_y, x=xd, y=yd,
                  buffer=buffer, alpha=alpha, beta=beta, value_type=value_type, alg=alg,
                  algorithm=cusparse_name("SPMM", alg_option), layout=layout,
                  preprocessed=run_it, preprocess_note=note, keep=arrays)
    return fields, destroyers


def spmm_call(cusparse, p: PreparedNvmathSpmm):
    """One ``cusparseSpMM`` on the current stream: what is timed."""
    op = cusparse.Operation.NON_TRANSPOSE
    alpha, beta, buffer = p.alpha.ctypes.data, p.beta.ctypes.data, p.buffer.data.ptr

    def call() -> None:
        cusparse.sp_mm(p.handle.on_current_stream(cusparse), op, op, alpha, p.matrix,
                       p.dense_x, beta, p.dense_y, p.value_type, p.alg, buffer)

    return call


#: The probe's 3 x 3 matrix: an empty row, a full row, one entry.
_PROBE = sp.csr_matrix(np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.0, 4.0, 0.0]]))


def _probe(cusparse, alg: int, layout: str, value_dtype: str) -> None:
    """Plan and run one SpMM of the probe matrix (k = 2); raises what cuSPARSE raises."""
    import cupy

    fields, destroyers = plan(cusparse, _PROBE, None, 2, layout, value_dtype, alg, 1)
    try:
        spmm_call(cusparse, PreparedNvmathSpmm(working_set_bytes=0, **fields))()
        cupy.cuda.get_current_stream().synchronize()
    finally:
        destroy_all(cusparse, destroyers)


def refusal(alg: int, layout: str, value_dtype: str, probe=None) -> str:
    """Why cuSPARSE does not take SpMM algorithm ``alg`` with X and Y in ``layout`` and
    ``value_dtype``, or "" (asked once per process and kept). An algorithm refuses only when
    the same probe call runs with the default algorithm: a call the default refuses too is
    not the algorithm's limit but a fault, left to fail in ``prepare``. ``probe(alg, layout,
    dtype)``: plans and runs the call, raising cuSPARSE's error (the GPU's by default; tests
    pass a fake)."""
    key = (alg, layout, value_dtype)
    if key in _REFUSALS:
        return _REFUSALS[key]
    if probe is None:
        from nvmath.bindings import cusparse

        def probe(a, lay, dt):
            _probe(cusparse, a, lay, dt)

    why = ""
    try:
        probe(alg, layout, value_dtype)
    except Exception as exc:  # noqa: BLE001  (cuSPARSE's status, whatever its class)
        try:
            probe(0, layout, value_dtype)
        except Exception:  # noqa: BLE001  (the default fails too: a fault, not a limit)
            return ""
        status = getattr(exc, "status", None)
        named = getattr(status, "name", None) or str(exc)
        why = (f"cuSPARSE does not take {cusparse_name('SPMM', alg)} with {layout}-major X "
               f"and Y ({value_dtype}): {named}")
    _REFUSALS[key] = why
    return why


class SpmmNvmathI32(OpBackend):
    name = "spmm-nvmath-i32"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4,), device="gpu",
        description="cuSPARSE SpMM planned once through nvmath-python (descriptors, buffer, "
                    "preprocess in prepare), INT32, row- or column-major X and Y")

    def __init__(self, alg: int = 0, preprocess: int = 1) -> None:
        check_options(alg, preprocess, SPMM_ALGORITHMS)
        self.alg, self.preprocess = alg, preprocess

    def availability(self) -> tuple[bool, str]:
        return nvmath_status()

    def unsupported_params(self, case: OpCase) -> str:
        if self.alg == 0 or not nvmath_status()[0]:  # unavailable: availability says why
            return ""
        dtype = str(np.asarray(case.inputs).dtype)
        return refusal(self.alg, case.params.layout,
                       dtype if dtype in CUDA_TYPES else "float32")

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedNvmathSpmm:
        from nvmath.bindings import cusparse

        fields, destroyers = plan(cusparse, case.matrix, case.inputs, int(case.params.k),
                                  case.params.layout, value_dtype, self.alg, self.preprocess)
        prepared = PreparedNvmathSpmm(working_set_bytes=int(case.traffic.compulsory_bytes),
                                      **fields)
        weakref.finalize(prepared, destroy_all, cusparse, destroyers)
        return prepared

    def poison_output(self, prepared: PreparedNvmathSpmm) -> bool:
        prepared.y.fill(np.nan)
        return True

    def run(self, prepared: PreparedNvmathSpmm) -> np.ndarray:
        from nvmath.bindings import cusparse

        spmm_call(cusparse, prepared)()
        return np.ascontiguousarray(prepared.y.get())

    def time(self, prepared: PreparedNvmathSpmm, config: TimingConfig) -> Measurement:
        from nvmath.bindings import cusparse

        from sparsescope.timing.cuda import time_cuda

        return time_cuda(spmm_call(cusparse, prepared), config, library="cupy",
                         working_set_bytes=prepared.working_set_bytes)

    def library_versions(self) -> dict[str, str]:
        version = None
        if nvmath_status()[0]:
            from nvmath.bindings import cusparse

            version = handle(cusparse).version
        return nvmath_versions(version)

    def notes(self, prepared: PreparedNvmathSpmm) -> dict[str, str]:
        return {"call": "cusparseSpMM (nvmath.bindings.cusparse), planned once in prepare",
                "algorithm": prepared.algorithm, "preprocess": prepared.preprocess_note,
                "x_order": prepared.layout, "buffer_bytes": str(int(prepared.buffer.nbytes)),
                "index_dtype": "int32", "value_dtype": str(prepared.y.dtype),
                "output": "the backend's own Y, written by every call (beta = 0)"}
