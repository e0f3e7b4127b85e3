"""SpMV, ``y = A x``: the input vector, the float64 reference, and the correctness check.

Every backend's output is compared with :func:`reference_spmv` before it may be timed
(the correctness gate in ``backends.runner``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsescope.ops.base import Op, OpCase, canonical_csr
from sparsescope.ops.params import SpmvDerived, SpmvParams
from sparsescope.results.records import Correctness

OP_NAME = "spmv"

#: Relative L2 error allowed per value dtype. float32: the float64 reference differs from a
#: float32 computation by rounding of A, of the products and of the running sums, ~1e-7 x
#: sqrt(nnz per row) relative; 1e-5 leaves room for any summation order and still catches a
#: single dropped nonzero in all but the largest rows. float64: ~1e-16 rounding, 1e-12 gate.
DEFAULT_TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def make_x(cols: int, seed: int = 0, dtype=np.float32) -> np.ndarray:
    """Deterministic input vector: ``cols`` values uniform in [-1, 1) from ``seed``.

    Drawn in float64 then cast, so the same seed gives the same values (rounded) in every dtype.
    Distinct random values (not all ones) make a wrong column index change the result.
    """
    rng = np.random.default_rng(seed)
    return (rng.random(cols) * 2.0 - 1.0).astype(dtype)


def reference_spmv(csr: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """``A x`` in float64 (A and x cast to float64 first), as a dense 1-D array."""
    a64 = sp.csr_matrix(csr, dtype=np.float64, copy=False)
    if a64.shape[1] != x.shape[0]:
        raise ValueError(f"x has {x.shape[0]} entries, A has {a64.shape[1]} columns")
    return np.asarray(a64 @ np.asarray(x, dtype=np.float64), dtype=np.float64).ravel()


def cancellation_factor(csr, x: np.ndarray) -> float:
    """How much the sums of ``A x`` cancel: ``kappa = || |A| |x| ||_2 / || A x ||_2`` (>= 1).

    Rounding in a float32 SpMV is bounded by ``n_row * eps * (|A| |x|)_i`` per row, so the
    error relative to ``||A x||`` grows with kappa whatever the kernel does; the correctness gate
    scales its tolerance by it (1.0 when ``A x`` is all zero or nothing cancels).
    """
    return reference_and_cancellation(csr, x)[1]


def reference_and_cancellation(csr, x: np.ndarray) -> tuple[np.ndarray, float]:
    """(``A x`` in float64, :func:`cancellation_factor`) in two products over one float64 copy
    of the values: ``A x``, then ``|A| |x|`` with the copy's signs dropped in place (the
    indices are shared, never copied). Three products and two copies of the whole matrix
    before: 1.28 s against 0.73 s at 2 x 10^7 nonzeros on the 2-core machine."""
    a = sp.csr_matrix(csr)
    values = np.array(a.data, dtype=np.float64)  # the copy |A| is taken in
    a64 = sp.csr_matrix((values, a.indices, a.indptr), shape=a.shape, copy=False)
    xx = np.asarray(x, dtype=np.float64)
    if a64.shape[1] != xx.shape[0]:
        raise ValueError(f"x has {xx.shape[0]} entries, A has {a64.shape[1]} columns")
    y = np.asarray(a64 @ xx, dtype=np.float64).ravel()
    exact = float(np.linalg.norm(y))
    np.abs(values, out=values)
    bound = float(np.linalg.norm(a64 @ np.abs(xx)))
    return y, (1.0 if exact == 0.0 else max(1.0, bound / exact))


def check_output(y: np.ndarray, y_ref: np.ndarray, tolerance: float) -> Correctness:
    """Relative L2 error of ``y`` against ``y_ref``.

    ``rel_err = ||y - y_ref||_2 / ||y_ref||_2``; the absolute error ``||y - y_ref||_2`` when
    ``y_ref`` is all zero. A NaN or infinity in ``y``, or a wrong length, gives an infinite
    error (so the gate fails it).
    """
    y = np.asarray(y)
    y_ref = np.asarray(y_ref, dtype=np.float64)
    if y.shape != y_ref.shape or not np.all(np.isfinite(y)):
        return Correctness(rel_err=float("inf"), tolerance=tolerance, max_abs_err=float("inf"))
    diff = y.astype(np.float64) - y_ref
    err = float(np.linalg.norm(diff))
    ref_norm = float(np.linalg.norm(y_ref))
    rel = err / ref_norm if ref_norm > 0 else err
    max_abs = float(np.max(np.abs(diff))) if diff.size else 0.0
    return Correctness(rel_err=rel, tolerance=tolerance, max_abs_err=max_abs)


CANCELLATION_ALLOWANCE = 10.0
"""kappa up to which the plain tolerance applies (see :func:`cancellation_factor`)."""


def scaled_tolerance(tolerance: float, kappa: float) -> float:
    """The gate for a sum that cancels: ``tolerance`` up to kappa = CANCELLATION_ALLOWANCE,
    ``tolerance * kappa / CANCELLATION_ALLOWANCE`` beyond. Float rounding scales with kappa: a
    strongly cancelling sum is not a wrong kernel, and ordinary random inputs have kappa of a
    few, so the plain tolerance holds for them."""
    return tolerance * kappa / CANCELLATION_ALLOWANCE if kappa > CANCELLATION_ALLOWANCE \
        else tolerance


class SpmvOp(Op):
    """``y = A x``."""

    name = "spmv"
    description = "SpMV y = A x"
    params_type = SpmvParams
    memory_floor = True
    derived_type = SpmvDerived
    tolerances = dict(DEFAULT_TOLERANCE)

    def make_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4, seed=0,
                  tolerance=None, strict=False) -> OpCase:
        from sparsescope.model.spmv import spmv_traffic
        from sparsescope.model.traffic import csr_spmv_traffic

        params = self.resolve_params(params)
        csr = canonical_csr(csr, strict=strict)
        x = make_x(csr.shape[1], seed=seed, dtype=value_dtype)
        vb = np.dtype(value_dtype).itemsize
        reference, kappa = reference_and_cancellation(csr, x)
        base = tolerance if tolerance is not None else self.tolerance(value_dtype)
        return OpCase(self.name, params, csr, x, reference,
                      scaled_tolerance(base, kappa),
                      spmv_traffic(*csr.shape, csr.nnz, value_bytes=vb, index_bytes=index_bytes),
                      SpmvDerived(cancellation=kappa),
                      csr_spmv_traffic(*csr.shape, csr.nnz, value_bytes=vb,
                                       index_bytes=index_bytes))

    def at_index_width(self, case, index_bytes, value_dtype):
        """``case`` with the byte models of ``index_bytes`` (x and the reference are the
        same at every index width)."""
        from dataclasses import replace

        from sparsescope.model.spmv import spmv_traffic
        from sparsescope.model.traffic import csr_spmv_traffic

        vb = np.dtype(value_dtype).itemsize
        rows, cols = case.matrix.shape
        nnz = int(case.matrix.nnz)
        return replace(case,
                       traffic=spmv_traffic(rows, cols, nnz, value_bytes=vb,
                                            index_bytes=index_bytes),
                       csr_traffic=csr_spmv_traffic(rows, cols, nnz, value_bytes=vb,
                                                    index_bytes=index_bytes))

    def plan_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4) -> OpCase:
        """The matrix, its parameters, the value type and its byte counts, without the input
        vector, the float64 reference and the cancellation check (:meth:`make_case` copies
        the matrix to float64 twice for them: 2.4 GB at 10^8 nonzeros, for nothing a plan
        reads)."""
        from sparsescope.model.spmv import spmv_traffic
        from sparsescope.model.traffic import csr_spmv_traffic

        if csr.dtype != np.float64 or not csr.has_canonical_format:
            csr = canonical_csr(csr)  # the matrices stage's are canonical already
        vb = np.dtype(value_dtype).itemsize
        rows, cols = (int(n) for n in csr.shape)
        return OpCase(op=self.name, params=self.resolve_params(params), matrix=csr,
                      inputs=np.empty(0, dtype=value_dtype), reference=np.empty(0),
                      tolerance=self.tolerance(value_dtype),
                      traffic=spmv_traffic(rows, cols, int(csr.nnz), value_bytes=vb,
                                           index_bytes=index_bytes),
                      csr_traffic=csr_spmv_traffic(rows, cols, int(csr.nnz), value_bytes=vb,
                                                   index_bytes=index_bytes))

    def check(self, out, case) -> Correctness:
        return check_output(out, case.reference, case.tolerance)

    def predict(self, case, traffic, shape, rates, *, flushed):
        """:func:`sparsescope.model.predict.predict_spmv` on the case's matrix structure."""
        from sparsescope.model.predict import predict_spmv

        csr = case.matrix
        return predict_spmv(csr.indptr, csr.indices, int(csr.shape[1]), traffic, shape, rates,
                            flushed=flushed, value_bytes=int(case.inputs.itemsize))

    def traffic_for(self, rows, cols, nnz, params, derived, *, value_bytes, index_bytes,
                    y_read=False):
        from sparsescope.model.spmv import spmv_traffic

        return spmv_traffic(rows, cols, nnz, value_bytes=value_bytes, index_bytes=index_bytes,
                            y_read=y_read)
