"""SpMM, ``Y = A @ X`` with X dense ``cols x k``: the input, the float64 reference, the check.

X is drawn exactly as SpMV's x (:func:`sparsescope.ops.spmv.make_x`): ``cols * k`` values
uniform in [-1, 1) from the seed, laid out as ``X[j, c] = v[j * k + c]``; so at ``k = 1``
``X[:, 0]`` *is* SpMV's x and the SpMM reference column equals the SpMV reference exactly.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsescope.model.case_model import ModelBytes
from sparsescope.ops.base import Op, OpCase, ParamSpec, canonical_csr
from sparsescope.ops.params import SpmmDerived, SpmmParams
from sparsescope.ops.spmv import check_output as _check_vector
from sparsescope.results.records import Correctness

OP_NAME = "spmm"
LAYOUTS = ("row", "col")
MAX_K = 4096
"""Largest k accepted (the issue sweeps 1-256; larger is allowed but X and Y grow as k)."""

#: Relative Frobenius error allowed per value dtype, before the cancellation factor
#: (:func:`condition`): the same reasoning and figures as SpMV (ops.spmv.DEFAULT_TOLERANCE),
#: each column of Y being an SpMV.
DEFAULT_TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def make_dense_x(cols: int, k: int, seed: int = 0, dtype=np.float32,
                 layout: str = "row") -> np.ndarray:
    """Deterministic X, ``cols x k``: C-ordered for ``row``, Fortran-ordered for ``col``.

    Values drawn in float64 then cast (same seed, same values in every dtype and layout).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    rng = np.random.default_rng(seed)
    x = (rng.random(cols * k) * 2.0 - 1.0).astype(dtype).reshape(cols, k)
    return np.asfortranarray(x) if layout == "col" else x


#: Below this many multiply-adds (nnz x k) the reference runs on one thread.
THREADED_MACS = 50_000_000


def reference_spmm(csr: sp.csr_matrix, x: np.ndarray, threads: int | None = None) -> np.ndarray:
    """``A X`` in float64 (both cast first), a dense C-ordered ``rows x k`` array.

    Large products (``nnz x k >= THREADED_MACS``) run on ``threads`` threads (default: the
    host's CPUs, at most 16), each on a band of rows of about equal nonzeros: SciPy's CSR
    product releases the GIL, and each row's sum keeps SciPy's order, so the result is
    bit-identical to the one-thread product (a test checks it). A GNN-sized case (20 M nonzeros
    at k = 512) takes minutes on one core.
    """
    a64 = sp.csr_matrix(csr, dtype=np.float64, copy=False)
    x64 = np.asarray(x, dtype=np.float64)
    if x64.ndim != 2 or a64.shape[1] != x64.shape[0]:
        raise ValueError(f"X has shape {x64.shape}, A has {a64.shape[1]} columns")
    bands = _row_bands(a64.indptr, threads if threads is not None else _host_threads())
    if len(bands) < 2 or (threads is None and a64.nnz * x64.shape[1] < THREADED_MACS):
        return np.ascontiguousarray(a64 @ x64, dtype=np.float64)
    from concurrent.futures import ThreadPoolExecutor

    y = np.empty((a64.shape[0], x64.shape[1]), dtype=np.float64)

    def band(rows: tuple[int, int]) -> None:
        y[rows[0]:rows[1]] = a64[rows[0]:rows[1]] @ x64

    with ThreadPoolExecutor(len(bands)) as pool:
        list(pool.map(band, bands))
    return y


def _host_threads() -> int:
    """The CPUs this process may run on, at most 16."""
    from sparsescope.hardware.cpuinfo import logical_cores

    return max(1, min(16, logical_cores()))


def _row_bands(indptr: np.ndarray, threads: int) -> list[tuple[int, int]]:
    """At most ``threads`` consecutive row ranges, each cut at the first row boundary at or
    after a multiple of ``nnz / threads`` nonzeros (empty ranges dropped). Hand check: rows of
    [4, 0, 4, 4] (indptr 0, 4, 4, 8, 12), 2 threads: the half, 6, falls in row 2, so the cut is
    at row 3 (8 nonzeros) -> [(0, 3), (3, 4)]."""
    rows = len(indptr) - 1
    if threads <= 1 or rows < 2:
        return [(0, rows)]
    targets = np.linspace(0, indptr[-1], threads + 1)[1:-1]
    cuts = np.searchsorted(indptr, targets, side="left")
    edges = sorted({0, rows, *(int(c) for c in cuts)})
    return [(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def condition(csr: sp.csr_matrix, x: np.ndarray, reference: np.ndarray | None = None) -> float:
    """``|| |A| |X| ||_F / || A X ||_F`` (>= 1): how much the sums cancel (``reference``: ``A X``
    when the caller has it already, which saves one float64 product).

    A sum's rounding error is bounded by the sum of its terms' magnitudes, so the relative
    error of any float32 summation order grows by this factor; the gate is scaled by it (as
    the SpMV GPU tests scale theirs). 1 when ``A X`` is all zero (the error is then absolute).
    """
    ref = np.linalg.norm(reference_spmm(csr, x) if reference is None else reference)
    magnitude = np.linalg.norm(reference_spmm(abs(csr), np.abs(x)))
    return max(1.0, magnitude / ref) if ref > 0 else 1.0


def check_output(y: np.ndarray, y_ref: np.ndarray, tolerance: float) -> Correctness:
    """Relative Frobenius error of ``y`` against ``y_ref``; a wrong shape or a NaN fails."""
    y = np.asarray(y)
    y_ref = np.asarray(y_ref, dtype=np.float64)
    if y.shape != y_ref.shape:
        return Correctness(rel_err=float("inf"), tolerance=tolerance, max_abs_err=float("inf"))
    return _check_vector(y.reshape(-1), y_ref.reshape(-1), tolerance)


class SpmmOp(Op):
    """``Y = A X``, X dense ``cols x k`` row- or column-major."""

    name = "spmm"
    description = "SpMM Y = A X, X dense cols x k"
    params_type = SpmmParams
    derived_type = SpmmDerived
    tolerances = dict(DEFAULT_TOLERANCE)
    params = (
        ParamSpec("k", 8, int, minimum=1, maximum=MAX_K, help="columns of X"),
        ParamSpec("layout", "row", str, choices=LAYOUTS,
                  help="X row-major (row) or column-major (col)"),
    )

    def make_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4, seed=0,
                  tolerance=None, strict=False) -> OpCase:
        from sparsescope.model.spmm import spmm_traffic
        from sparsescope.model.traffic import csr_spmm_traffic

        params = self.resolve_params(params)
        csr = canonical_csr(csr, strict=strict)
        x = make_dense_x(csr.shape[1], params.k, seed=seed, dtype=value_dtype,
                         layout=params.layout)
        y_ref = reference_spmm(csr, x)
        cond = condition(csr, x, y_ref)
        base = tolerance if tolerance is not None else self.tolerance(value_dtype)
        vb = np.dtype(value_dtype).itemsize
        traffic = spmm_traffic(*csr.shape, csr.nnz, params.k, layout=params.layout,
                               value_bytes=vb, index_bytes=index_bytes)
        return OpCase(self.name, params, csr, x, y_ref, base * cond,
                      traffic, SpmmDerived(condition=cond),
                      csr_spmm_traffic(*csr.shape, csr.nnz, params.k, value_bytes=vb,
                                       index_bytes=index_bytes))

    def at_index_width(self, case, index_bytes, value_dtype):
        """``case`` with the byte models of ``index_bytes`` (X and the reference are the
        same at every index width)."""
        from dataclasses import replace

        from sparsescope.model.spmm import spmm_traffic
        from sparsescope.model.traffic import csr_spmm_traffic

        vb = np.dtype(value_dtype).itemsize
        rows, cols = case.matrix.shape
        nnz, k = int(case.matrix.nnz), case.params.k
        return replace(case,
                       traffic=spmm_traffic(rows, cols, nnz, k, layout=case.params.layout,
                                            value_bytes=vb, index_bytes=index_bytes),
                       csr_traffic=csr_spmm_traffic(rows, cols, nnz, k, value_bytes=vb,
                                                    index_bytes=index_bytes))

    def check(self, out, case) -> Correctness:
        return check_output(out, case.reference, case.tolerance)

    def predict(self, case, traffic, shape, rates, *, flushed):
        """:func:`sparsescope.model.own_spmm.predict_own_spmm` for an own kernel's launch
        (``SpmmLaunch``, or ``BlockTcLaunch`` for the tensor-core kernel); the dense GEMM's
        roofline (``ops.spmm_dense.predict_dense_gemm``) for a ``DenseGemmShape``; "not
        modelled" for a kernel that declares none."""
        from sparsescope.model.own_spmm import OWN_SPMM_LAUNCHES, predict_own_spmm
        from sparsescope.ops.spmm_dense import DenseGemmShape, predict_dense_gemm

        if isinstance(shape, DenseGemmShape):  # spmm-cublas-dense: the dense GEMM's roofline
            return predict_dense_gemm(traffic, shape, rates, flushed=bool(flushed))
        if not isinstance(shape, OWN_SPMM_LAUNCHES):
            return super().predict(case, traffic, shape, rates, flushed=flushed)
        csr = case.matrix
        return predict_own_spmm(csr.indptr, csr.indices, int(csr.shape[1]), case.params.k,
                                shape, rates, flushed=bool(flushed),
                                fp64=shape.value_bytes == 8)

    def model_bytes(self, traffic) -> ModelBytes:
        """Compulsory bytes (A once, X once, Y written) and 2 nnz k flops."""
        return ModelBytes(int(traffic.compulsory_bytes), int(traffic.flops))

    def traffic_for(self, rows, cols, nnz, params, derived, *, value_bytes, index_bytes,
                    y_read=False):
        from sparsescope.model.spmm import spmm_traffic

        return spmm_traffic(rows, cols, nnz, params.k, layout=params.layout,
                            value_bytes=value_bytes, index_bytes=index_bytes)
