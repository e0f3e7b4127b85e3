"""Run one (matrix, backend) case behind the correctness gate.

Order, each step able to end the case with a recorded reason:

1. skipped: the backend does not support the op, value dtype or index width (its
   :class:`~sparsescope.backends.base.Capability`), or is not available on this machine;
2. prepare; poison the output (GPU backends fill their ``y`` buffer with NaN); run once;
3. failed: the run raised, or the output is not a fresh full-length array, or its relative
   error against the float64 reference is above the tolerance; a failed case is never timed;
4. ok: timed with the one protocol, the measurement stored next to the error.

A backend exception becomes a ``failed`` case with the exception text, never a crash.
"""

from __future__ import annotations

import numpy as np

from sparsescope.backends.base import Backend
from sparsescope.backends.registry import get_backend
from sparsescope.matrices.types import Matrix
from sparsescope.ops.spmv import (
    DEFAULT_TOLERANCE,
    OP_NAME,
    cancellation_factor,
    check_output,
    make_x,
    reference_spmv,
)
from sparsescope.results.records import CaseResult
from sparsescope.timing.types import TimingConfig

#: Bytes per value for dtypes a backend may declare (including ones NumPy lacks).
VALUE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
_INT32_MAX = 2**31 - 1


CANCELLATION_ALLOWANCE = 10.0
"""kappa up to which the plain tolerance applies (see ``ops.spmv.cancellation_factor``)."""


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _output_problem(y: object, rows: int, x: np.ndarray, poisoned: bool) -> str:
    """Why ``y`` cannot be checked, or an empty string.

    Without a poisoned buffer the result must be a fresh host array: one aliasing ``x`` could
    carry values the kernel never wrote.
    """
    if not isinstance(y, np.ndarray):
        return f"run returned {type(y).__name__}, expected a NumPy array"
    if y.shape != (rows,):
        return f"output has shape {y.shape}, expected ({rows},)"
    if not poisoned and np.shares_memory(y, x):
        return "output aliases the input x"
    return ""


def run_case(matrix: Matrix, backend_name: str, *, config: TimingConfig,
             value_dtype: str = "float32", index_bytes: int | None = None,
             tolerance: float | None = None, x_seed: int = 0) -> CaseResult:
    """Check ``backend_name`` on ``matrix`` against float64, then time it if it passed."""
    backend = get_backend(backend_name)
    cap = backend.capability
    index_bytes = cap.index_bytes[0] if index_bytes is None else index_bytes
    base = dict(matrix=matrix.name, backend=backend_name, op=OP_NAME,
                value_bytes=VALUE_BYTES.get(value_dtype, 0), index_bytes=index_bytes,
                y_read=cap.y_read)

    reason = cap.unsupported_reason(OP_NAME, value_dtype, index_bytes)
    if not reason and index_bytes == 4 and max(matrix.nnz, matrix.rows, matrix.cols) > _INT32_MAX:
        reason = f"nnz {matrix.nnz} does not fit INT32 indices"
    if not reason:
        available, why = backend.availability()
        reason = "" if available else f"backend unavailable: {why}"
    if reason:
        return CaseResult(**base, outcome="skipped", reason=reason)
    if tolerance is None:
        tolerance = DEFAULT_TOLERANCE.get(value_dtype, 1e-5)
    return _checked_and_timed(backend, matrix, base, config=config, value_dtype=value_dtype,
                              index_bytes=index_bytes, tolerance=tolerance, x_seed=x_seed)


def _checked_and_timed(backend: Backend, matrix: Matrix, base: dict, *, config: TimingConfig,
                       value_dtype: str, index_bytes: int, tolerance: float,
                       x_seed: int) -> CaseResult:
    x = make_x(matrix.cols, seed=x_seed, dtype=value_dtype)
    y_ref = reference_spmv(matrix.csr, x)
    try:
        prepared = backend.prepare(matrix.csr, value_dtype, index_bytes)
    except Exception as exc:
        return CaseResult(**base, outcome="failed", reason=f"prepare failed: {_error_text(exc)}")
    notes = _notes(backend, prepared)
    try:
        poisoned = backend.poison_output(prepared)
        y = backend.run(prepared, x)
    except Exception as exc:
        return CaseResult(**base, outcome="failed", reason=f"run failed: {_error_text(exc)}",
                          notes=notes)
    problem = _output_problem(y, matrix.rows, x, poisoned)
    if problem:
        return CaseResult(**base, outcome="failed", reason=problem, notes=notes)
    # Float rounding scales with kappa = || |A||x| || / ||Ax||: a strongly cancelling sum is not
    # a wrong kernel. Ordinary random inputs have kappa of a few, so the gate keeps the plain
    # tolerance up to CANCELLATION_ALLOWANCE and widens it only beyond (recorded in the notes).
    kappa = cancellation_factor(matrix.csr, x)
    if kappa > CANCELLATION_ALLOWANCE:
        tolerance = tolerance * kappa / CANCELLATION_ALLOWANCE
        notes = {**notes, "tolerance_scaled_by_cancellation": f"kappa {kappa:.3g}"}
    correctness = check_output(y, y_ref, tolerance)
    if not correctness.passed:
        return CaseResult(**base, outcome="failed", correctness=correctness, notes=notes,
                          reason=f"rel_err {correctness.rel_err:.3g} above tolerance "
                                 f"{tolerance:.3g}; not timed")
    try:
        measurement = backend.time(prepared, x, config)
    except Exception as exc:
        return CaseResult(**base, outcome="failed", correctness=correctness, notes=notes,
                          reason=f"timing failed: {_error_text(exc)}")
    return CaseResult(**base, outcome="ok", measurement=measurement, correctness=correctness,
                      notes=notes)


def _notes(backend: Backend, prepared: object) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in backend.notes(prepared).items()}
    except Exception as exc:  # notes are optional; their failure must not fail the case
        return {"notes_error": _error_text(exc)}


EXIT_FAILED = 1
"""Exit code of a one-case program (an ncu target) whose case failed its check."""
EXIT_SKIPPED = 3
"""Exit code of a one-case program whose backend skipped the case."""


def report_case_exit(case: CaseResult, label: str) -> int:
    """Print ``label: outcome (reason)`` and return a one-case program's exit code: 0 for ok,
    :data:`EXIT_SKIPPED`, else :data:`EXIT_FAILED` (ncu reports a non-zero exit as "The
    application returned an error code")."""
    import sys

    line = f"{label}: {case.outcome}"
    if case.reason:
        line += f" ({case.reason})"
    print(line, file=sys.stderr if case.outcome != "ok" else sys.stdout)
    return {"ok": 0, "skipped": EXIT_SKIPPED}.get(case.outcome, EXIT_FAILED)
