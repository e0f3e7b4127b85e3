"""Every GPU backend against float64 on awkward matrices; the poison check; the runner path."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope import registry
from sparsescope.backends import get_backend, run_case
from sparsescope.backends.cuda_kernels import CudaCsrScalar, CudaCsrVector
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.ops.spmv import check_output, make_x, reference_spmv
from sparsescope.timing import TimingConfig

GPU_BACKENDS = ("torch-cusparse-i64", "torch-cusparse-i32", "cupy-cusparse-i32",
                "cuda-csr-scalar", "cuda-csr-vector")
pytestmark = pytest.mark.gpu
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}
QUICK = TimingConfig(warmups=1, repeats=3)


def condition(csr, x: np.ndarray) -> float:
    """``|| |A| |x| || / || A x ||`` (>= 1): how much cancellation the sums suffer.

    A sum's rounding error is bounded relative to the sum of its terms' magnitudes, not to
    the sum: a row whose terms cancel (the awkward ``one-row``: terms adding up to 80 for a
    result of 0.03) loses that factor in relative accuracy under any float32 summation order,
    sequential (the scalar kernel) or tree (the others). The gate is scaled by it.
    """
    ref = np.linalg.norm(reference_spmv(csr, x))
    magnitude = np.linalg.norm(reference_spmv(abs(csr), np.abs(x)))
    return max(1.0, magnitude / ref) if ref > 0 else 1.0


@pytest.mark.parametrize("backend_name", GPU_BACKENDS)
def test_backend_matches_float64_on_awkward_matrices(backend_name, awkward_matrices):
    backend = get_backend(backend_name)
    assert backend.availability() == (True, "")
    cap = backend.capability
    assert cap.device == "gpu" and cap.ops == ("spmv",)
    failures = []
    checked = 0
    for matrix in awkward_matrices:
        for dtype in cap.value_dtypes:
            for index_bytes in cap.index_bytes:
                x = make_x(matrix.cols, seed=checked, dtype=dtype)
                prepared = backend.prepare(matrix.csr, dtype, index_bytes)
                poisoned = backend.poison_output(prepared)
                y = backend.run(prepared, x)
                assert isinstance(y, np.ndarray) and y.dtype == np.dtype(dtype)
                tolerance = TOLERANCE[dtype] * condition(matrix.csr, x)
                result = check_output(y, reference_spmv(matrix.csr, x), tolerance)
                checked += 1
                if not result.passed:
                    failures.append((matrix.name, dtype, index_bytes, poisoned,
                                     result.rel_err, tolerance))
    assert failures == []
    assert checked >= len(awkward_matrices) * len(cap.value_dtypes)


def test_condition_of_a_cancelling_row():
    # terms 2, -1.999: sum 0.001, magnitudes 3.999 -> condition 3,999
    import scipy.sparse as sp

    csr = sp.csr_matrix(np.array([[2.0, 1.999]]))
    assert condition(csr, np.array([1.0, -1.0])) == pytest.approx(3999.0)
    assert condition(csr, np.array([1.0, 1.0])) == 1.0


def test_capabilities_are_truthful():
    for name in ("torch-cusparse-i64", "torch-cusparse-i32", "cupy-cusparse-i32"):
        assert get_backend(name).capability.y_read  # cuSPARSE csrmv accumulates into y
    for name in ("cuda-csr-scalar", "cuda-csr-vector"):
        cap = get_backend(name).capability
        assert not cap.y_read and cap.index_bytes == (4, 8)
    assert get_backend("torch-cusparse-i64").capability.index_bytes == (8,)
    assert get_backend("torch-cusparse-i32").capability.index_bytes == (4,)


class SkipsLastRow(CudaCsrScalar):
    """A broken kernel launch: the last row is never computed."""

    def _launch(self, p, rows):
        super()._launch(p, rows - 1)


class VectorSkipsLastRow(CudaCsrVector):
    def _launch(self, p, rows):
        super()._launch(p, rows - 1)


@pytest.mark.parametrize("broken", [SkipsLastRow, VectorSkipsLastRow])
def test_poison_catches_a_skipped_row(broken, monkeypatch, awkward_matrices):
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "broken"), broken)
    matrix = next(m for m in awkward_matrices if m.name.startswith("rand-4099x3001"))
    case = run_case(matrix, "broken", config=QUICK)
    assert case.outcome == "failed"
    assert case.correctness.rel_err == float("inf")
    assert case.measurement is None  # a failed case is never timed
    # and the y the broken launch left holds the poison exactly where it skipped
    backend = broken()
    prepared = backend.prepare(matrix.csr, "float32", 4)
    assert backend.poison_output(prepared)
    y = backend.run(prepared, make_x(matrix.cols))
    assert np.isnan(y[-1]) and np.all(np.isfinite(y[:-1]))


def test_library_backends_have_no_buffer_to_poison(awkward_matrices):
    matrix = awkward_matrices[0]
    for name in ("torch-cusparse-i64", "torch-cusparse-i32", "cupy-cusparse-i32"):
        backend = get_backend(name)
        prepared = backend.prepare(matrix.csr, "float32", backend.capability.index_bytes[0])
        assert backend.poison_output(prepared) is False


@pytest.mark.parametrize("backend_name", GPU_BACKENDS)
def test_runner_times_each_backend_with_cuda_events(backend_name, banded_4m):
    case = run_case(banded_4m, backend_name, config=QUICK)
    assert case.outcome == "ok", case.reason
    assert case.correctness.rel_err < 1e-5
    m = case.measurement
    assert m.clock == "cuda-events" and m.config.clock == "cuda-events"
    assert len(m.samples_ms) == 3 and all(0.001 < s < 50 for s in m.samples_ms)
    assert m.flushed  # ~33 MB working set fits the H200's 60 MiB L2: flushed by default
    assert m.kernel_breakdown and abs(sum(k["pct"] for k in m.kernel_breakdown) - 100) < 1e-6
    cap = get_backend(backend_name).capability
    assert case.index_bytes == cap.index_bytes[0]
    assert case.notes
    # plain CSR at the backend's index width; cuSPARSE's y += A x reads y as well
    assert case.traffic == csr_spmv_traffic(banded_4m.rows, banded_4m.cols, banded_4m.nnz,
                                            value_bytes=4, index_bytes=case.index_bytes,
                                            y_read=cap.y_read)


def test_vector_kernel_records_its_threads_per_row(banded_4m):
    case = run_case(banded_4m, "cuda-csr-vector", config=QUICK)
    longest = int(np.diff(banded_4m.csr.indptr).max())
    assert longest < 1024
    assert case.notes["threads_per_row"] == "8"  # mean 64.17 / 16 = 4.01 -> 8
    assert "mean nnz/row 64.17 / 16" in case.notes["threads_per_row_rule"]
    assert f"longest row {longest} / 1024" in case.notes["threads_per_row_rule"]
    assert case.notes["kernel"] == "csr_vector<float, int, 8>"
    assert case.measurement.kernel_breakdown[0]["name"] == "csr_vector"


def test_float64_and_int64_through_the_runner(banded_4m):
    case = run_case(banded_4m, "cuda-csr-scalar", config=QUICK, value_dtype="float64",
                    index_bytes=8)
    assert case.outcome == "ok", case.reason
    assert case.value_bytes == 8 and case.index_bytes == 8
    assert case.correctness.rel_err < 1e-12
    assert case.notes["kernel"] == "csr_scalar<double, long long>"
