"""SpMM, ``Y = A @ X`` with X dense ``cols x k``: the input, the float64 reference, the check.

X is drawn exactly as SpMV's x (:func:`sparsescope.ops.spmv.make_x`): ``cols * k`` values
uniform in [-1, 1) from the seed, laid out as ``X[j, c] = v[j * k + c]``; so at ``k = 1``
``X[:, 0]`` *is* SpMV's x and the SpMM reference column equals the SpMV reference exactly.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

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


def reference_spmm(csr: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """``A X`` in float64 (both cast first), a dense C-ordered ``rows x k`` array."""
    a64 = sp.csr_matrix(csr, dtype=np.float64, copy=False)
    x64 = np.asarray(x, dtype=np.float64)
    if x64.ndim != 2 or a64.shape[1] != x64.shape[0]:
        raise ValueError(f"X has shape {x64.shape}, A has {a64.shape[1]} columns")
    return np.ascontiguousarray(a64 @ x64, dtype=np.float64)


def condition(csr: sp.csr_matrix, x: np.ndarray) -> float:
    """``|| |A| |X| ||_F / || A X ||_F`` (>= 1): how much the sums cancel.

    A sum's rounding error is bounded by the sum of its terms' magnitudes, so the relative
    error of any float32 summation order grows by this factor; the gate is scaled by it (as
    the SpMV GPU tests scale theirs). 1 when ``A X`` is all zero (the error is then absolute).
    """
    ref = np.linalg.norm(reference_spmm(csr, x))
    magnitude = np.linalg.norm(reference_spmm(abs(csr), np.abs(x)))
    return max(1.0, magnitude / ref) if ref > 0 else 1.0


def check_output(y: np.ndarray, y_ref: np.ndarray, tolerance: float) -> Correctness:
    """Relative Frobenius error of ``y`` against ``y_ref``; a wrong shape or a NaN fails."""
    y = np.asarray(y)
    y_ref = np.asarray(y_ref, dtype=np.float64)
    if y.shape != y_ref.shape:
        return Correctness(rel_err=float("inf"), tolerance=tolerance, max_abs_err=float("inf"))
    return _check_vector(y.reshape(-1), y_ref.reshape(-1), tolerance)
