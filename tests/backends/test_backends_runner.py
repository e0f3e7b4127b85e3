"""The correctness gate: ok, skipped and failed cases, with deliberately broken fake backends."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparsescope import registry
from sparsescope.backends.runner import run_case
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.errors import UnknownNameError
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.ops.params import SpmvDerived, SpmvParams
from sparsescope.ops.spmv import make_x, reference_spmv
from sparsescope.timing.types import Measurement, TimingConfig

CONFIG = TimingConfig(warmups=1, repeats=5, flush_l2=False)


class TimingForbidden(ScipyCpuBackend):
    """A SciPy backend whose timing must never be reached."""

    timed = 0

    def time(self, prepared, x, config):
        type(self).timed += 1
        return super().time(prepared, x, config)


class DropLastNonzero(TimingForbidden):
    """Wrong on purpose: forgets the last stored nonzero (a classic off-by-one)."""

    def run(self, prepared, x):
        broken = prepared.copy()
        broken.data[-1] = 0
        return broken @ x


class Raises(TimingForbidden):
    def run(self, prepared, x):
        raise RuntimeError("kernel exploded: illegal memory access")


class ShortOutput(TimingForbidden):
    def run(self, prepared, x):
        return (prepared @ x)[:-1]


class ReturnsInput(TimingForbidden):
    def run(self, prepared, x):
        return x[: prepared.shape[0]]


class Unavailable(TimingForbidden):
    def availability(self):
        return False, "no CUDA device"


class TimingRaises(ScipyCpuBackend):
    def time(self, prepared, x, config):
        raise MemoryError("cannot allocate the flush buffer")


class StaleBuffer(TimingForbidden):
    """GPU-style: owns a y buffer reused across calls and never writes the last row.

    ``prepare`` leaves the right answer in the buffer (as an earlier correct call would), so
    only poisoning the buffer before the checked run exposes the skipped row.
    """

    poison = True

    def prepare(self, matrix_csr, value_dtype, index_bytes):
        prepared = super().prepare(matrix_csr, value_dtype, index_bytes)
        x = make_x(matrix_csr.shape[1], dtype=value_dtype)
        return {"A": prepared, "y": prepared @ x}

    def poison_output(self, prepared):
        if self.poison:
            prepared["y"].fill(np.nan)
        return self.poison

    def run(self, prepared, x):
        y = prepared["y"]
        y[:-1] = (prepared["A"] @ x)[:-1]  # the last row is skipped
        return y.copy()


class StaleBufferUnpoisoned(StaleBuffer):
    poison = False


@pytest.fixture(autouse=True)
def register_fakes(monkeypatch):
    for cls in (DropLastNonzero, Raises, ShortOutput, ReturnsInput, Unavailable, TimingRaises,
                StaleBuffer, StaleBufferUnpoisoned):
        monkeypatch.setitem(registry.BACKENDS, ("spmv", cls.__name__), cls)
    TimingForbidden.timed = 0
    yield
    assert TimingForbidden.timed == 0, "a failed or skipped case was timed"


def test_scipy_float32_case_is_ok_and_timed(small_matrix):
    case = run_case(small_matrix, "scipy-cpu", config=CONFIG)
    assert (case.matrix, case.backend, case.op, case.outcome, case.reason) == (
        "rand300x200", "scipy-cpu", "spmv", "ok", "")
    assert (case.value_bytes, case.index_bytes, case.y_read) == (4, 4, False)
    assert case.correctness.tolerance == 1e-5
    assert 0 < case.correctness.rel_err < 1e-6
    assert isinstance(case.measurement, Measurement)
    assert len(case.measurement.samples_ms) == 5 and case.measurement.config == CONFIG
    assert case.time_ms == case.measurement.median_ms
    assert case.notes == {"index_dtype": "int32", "value_dtype": "float32"}
    assert case.params == SpmvParams() and isinstance(case.derived, SpmvDerived)


def test_declared_traffic_is_stored_with_the_case(small_matrix):
    """A backend on plain CSR declares CSR's bytes at the case's widths; the record keeps them."""
    rows, cols, nnz = small_matrix.rows, small_matrix.cols, small_matrix.nnz
    case = run_case(small_matrix, "scipy-cpu", config=CONFIG)
    assert case.traffic == csr_spmv_traffic(rows, cols, nnz, value_bytes=4, index_bytes=4)
    assert case.traffic.total_bytes == 8 * nnz + 4 * (rows + 1) + 4 * cols + 4 * rows
    wide = run_case(small_matrix, "scipy-cpu", config=CONFIG, value_dtype="float64",
                    index_bytes=8)
    assert wide.traffic == csr_spmv_traffic(rows, cols, nnz, value_bytes=8, index_bytes=8)
    # a skipped case never prepared anything: no bytes declared
    skipped = run_case(small_matrix, "Unavailable", config=CONFIG)
    assert skipped.outcome == "skipped" and skipped.traffic is None


def test_scipy_float64_int64_case_meets_the_float64_tolerance(small_matrix):
    case = run_case(small_matrix, "scipy-cpu", config=CONFIG, value_dtype="float64",
                    index_bytes=8)
    assert case.outcome == "ok"
    assert (case.value_bytes, case.index_bytes) == (8, 8)
    assert case.correctness.tolerance == 1e-12 and case.correctness.rel_err <= 1e-12


def test_dropped_nonzero_fails_with_its_error_and_is_not_timed(small_matrix):
    case = run_case(small_matrix, "DropLastNonzero", config=CONFIG)
    x = make_x(small_matrix.cols)
    y_ref = reference_spmv(small_matrix.csr, x)
    last = small_matrix.csr.indices[-1]
    expected = abs(small_matrix.csr.data[-1] * float(x[last])) / np.linalg.norm(y_ref)
    assert case.outcome == "failed"
    assert case.measurement is None and case.time_ms is None
    assert case.correctness.rel_err == pytest.approx(expected, rel=1e-4)
    assert not case.correctness.passed
    assert case.reason == f"rel_err {case.correctness.rel_err:.3g} above tolerance 1e-05; not timed"


def test_tolerance_override(small_matrix):
    # float32 rounding alone (~1e-8) is above a zero tolerance
    case = run_case(small_matrix, "scipy-cpu", config=CONFIG, tolerance=0.0)
    assert case.outcome == "failed" and case.correctness.tolerance == 0.0


def test_an_exception_in_run_is_a_failed_case(small_matrix):
    case = run_case(small_matrix, "Raises", config=CONFIG)
    assert case.outcome == "failed"
    assert case.reason == "run failed: RuntimeError: kernel exploded: illegal memory access"
    assert case.correctness is None and case.measurement is None


def test_an_exception_while_timing_is_a_failed_case_that_keeps_its_error(small_matrix):
    case = run_case(small_matrix, "TimingRaises", config=CONFIG)
    assert case.outcome == "failed"
    assert case.reason == "timing failed: MemoryError: cannot allocate the flush buffer"
    assert case.correctness.passed and case.measurement is None


def test_a_short_output_fails(small_matrix):
    case = run_case(small_matrix, "ShortOutput", config=CONFIG)
    assert (case.outcome, case.reason) == ("failed", "output has shape (299,), expected (300,)")


def test_an_output_aliasing_x_fails(small_matrix):
    square = type(small_matrix)(name="sq", csr=small_matrix.csr[:200], source="test")
    case = run_case(square, "ReturnsInput", config=CONFIG)
    assert (case.outcome, case.reason) == ("failed", "output aliases an input array")


def test_poisoned_buffer_exposes_a_skipped_row(small_matrix):
    case = run_case(small_matrix, "StaleBuffer", config=CONFIG)
    assert case.outcome == "failed"
    assert case.correctness.rel_err == math.inf


def test_without_poisoning_the_stale_buffer_would_pass(small_matrix):
    # Why the GPU backends must poison: the stale right answer passes the check.
    case = run_case(small_matrix, "StaleBufferUnpoisoned", config=CONFIG)
    assert case.correctness.passed
    TimingForbidden.timed = 0  # this one was legitimately timed


@pytest.mark.parametrize("kwargs, reason", [
    ({"value_dtype": "bfloat16"}, "value dtype bfloat16 not supported (supports float32, float64)"),
    ({"index_bytes": 2}, "INT16 indices not supported (supports INT32, INT64)"),
])
def test_unsupported_cases_are_skipped_with_the_reason(small_matrix, kwargs, reason):
    case = run_case(small_matrix, "scipy-cpu", config=CONFIG, **kwargs)
    assert (case.outcome, case.reason) == ("skipped", reason)
    assert case.measurement is None and case.correctness is None
    assert case.params == SpmvParams() and case.traffic is None
    if "value_dtype" in kwargs:
        assert case.value_bytes == 2


def test_unavailable_backend_is_skipped(small_matrix):
    case = run_case(small_matrix, "Unavailable", config=CONFIG)
    assert (case.outcome, case.reason) == ("skipped", "backend unavailable: no CUDA device")


def test_unknown_backend_is_a_usage_error(small_matrix):
    with pytest.raises(UnknownNameError):
        run_case(small_matrix, "no-such-backend", config=CONFIG)


def test_gate_widens_tolerance_only_for_cancelling_sums():
    """One row of 1000 equal values against x in [-1, 1): the sum cancels (kappa = 14.6), so
    float32 rounding is large relative to it; the gate scales by kappa / 10 and records kappa
    in the case's derived counts. With the signs of x (no cancellation, kappa = 1) the plain
    tolerance stays."""
    import numpy as np
    import scipy.sparse as sp

    from sparsescope.matrices.types import Matrix
    from sparsescope.ops.spmv import cancellation_factor, make_x

    x = make_x(1000, seed=0).astype(np.float64)
    config = TimingConfig(warmups=0, repeats=1)
    cancelling = sp.csr_matrix(np.full((1, 1000), 0.001))
    kappa = cancellation_factor(cancelling, x)
    assert kappa == pytest.approx(np.abs(x).sum() / abs(x.sum()))  # one row: |A||x| / |Ax|
    assert round(kappa, 1) == 14.6
    case = run_case(Matrix(name="cancel", csr=cancelling, source="test"), "scipy-cpu",
                    config=config)
    assert case.correctness.tolerance == pytest.approx(1e-5 * kappa / 10)
    assert case.derived.cancellation == pytest.approx(14.6, rel=1e-2)
    assert f"{case.derived.cancellation:.3g}" == "14.6"

    aligned = sp.csr_matrix((np.sign(x) * 0.001)[None, :])
    assert cancellation_factor(aligned, x) == 1.0
    case = run_case(Matrix(name="aligned", csr=aligned, source="test"), "scipy-cpu",
                    config=config)
    assert case.correctness.tolerance == 1e-5
    assert case.derived.cancellation == 1.0
