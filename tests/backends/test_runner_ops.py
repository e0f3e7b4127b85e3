"""The one runner on every op: skipped / failed / ok semantics, poisoning, no timing of a
failed case, typed parameters and derived counts in the record, SpMV through the same path, and
the ncu target program (``sparsescope.target``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.registry import get_backend
from sparsescope.backends.runner import run_case, run_matrix
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.matrices.types import Matrix
from sparsescope.model.traffic import csr_spmm_traffic
from sparsescope.ops.params import SliceParams, SpmmDerived, SpmmParams
from sparsescope.ops.slice_rows import RowIndexError
from sparsescope.target import main
from sparsescope.timing.types import Measurement, TimingConfig

QUICK = TimingConfig(warmups=0, repeats=2, flush_l2=False)


class FakeSpmm(OpBackend):
    """An SpMM backend whose misbehaviour is chosen by ``mode``; it records its calls."""

    name = "fake"
    capability = Capability(ops=("spmm",), value_dtypes=("float32",), index_bytes=(4,),
                            device="cpu")

    def __init__(self, mode="ok", available=True, unsupported=""):
        self.mode, self.available, self.unsupported = mode, available, unsupported
        self.calls = []

    def availability(self):
        return (True, "") if self.available else (False, "no device here")

    def unsupported_params(self, case):
        return self.unsupported

    def prepare(self, case, value_dtype, index_bytes):
        self.calls.append("prepare")
        if self.mode == "prepare_raises":
            raise RuntimeError("no cuSPARSE handle")
        return {"a": case.matrix.astype(np.float32), "x": case.inputs,
                "y": np.zeros(case.output_shape, dtype=np.float32)}

    def poison_output(self, prepared):
        if self.mode in ("skip_row_poisoned", "ok_buffer"):
            prepared["y"].fill(np.nan)
            return True
        return False

    def run(self, prepared):
        self.calls.append("run")
        y = np.asarray(prepared["a"] @ prepared["x"], dtype=np.float32)
        if self.mode == "run_raises":
            raise ValueError("bad launch")
        if self.mode == "wrong_shape":
            return y[:-1]
        if self.mode == "alias":
            return prepared["x"]
        if self.mode == "skip_row_poisoned":
            prepared["y"][1:] = y[1:]  # row 0 never written: stays NaN
            return prepared["y"]
        if self.mode == "ok_buffer":
            prepared["y"][:] = y
            return prepared["y"]
        if self.mode == "wrong_value":
            y[0, 0] += 1.0
        return y

    def time(self, prepared, config):
        self.calls.append("time")
        if self.mode == "time_raises":
            raise RuntimeError("events failed")
        return Measurement(samples_ms=(1.0, 2.0, 3.0), config=config)

    def library_versions(self):
        return {"fake": "1"}

    def notes(self, prepared):
        if self.mode == "bad_notes":
            raise KeyError("kernel")
        return {"kernel": "fake_kernel"}


@pytest.fixture(scope="module")
def square() -> Matrix:
    """80 x 80 so that X (cols x k) and Y (rows x k) have the same shape (aliasing test)."""
    csr = sp.random(80, 80, density=0.1, format="csr", random_state=3)
    csr.sort_indices()
    return Matrix(name="sq80", csr=csr, source="test")


def run(square, backend, **kw):
    params = kw.pop("params", {"k": 4})
    return run_case(square, backend, "spmm", params, config=QUICK, **kw)


def test_ok_case_is_timed_and_keeps_params_and_backend_notes(square):
    backend = FakeSpmm()
    case = run(square, backend)
    assert case.outcome == "ok" and case.time_ms == 2.0 and case.correctness.passed
    assert case.op == "spmm" and case.backend == "fake" and case.value_bytes == 4
    assert case.params.k == 4 and case.notes["kernel"] == "fake_kernel"
    assert case.params == SpmmParams(k=4, layout="row") and isinstance(case.derived, SpmmDerived)
    assert not any(key.startswith("op.") for key in case.notes)  # notes: backend facts only
    # a backend on plain CSR declares CSR's bytes for the case (80 x 80, k = 4)
    assert case.traffic == csr_spmm_traffic(80, 80, square.nnz, 4, value_bytes=4,
                                            index_bytes=4)
    assert backend.calls == ["prepare", "run", "time"]
    ok_buffer = run(square, FakeSpmm("ok_buffer"))  # a poisoned buffer fully rewritten passes
    assert ok_buffer.outcome == "ok"


@pytest.mark.parametrize(("mode", "reason"), [
    ("prepare_raises", "prepare failed: RuntimeError: no cuSPARSE handle"),
    ("run_raises", "run failed: ValueError: bad launch"),
    ("wrong_shape", "output has shape (79, 4), expected (80, 4)"),
    ("alias", "output aliases an input array"),
    ("skip_row_poisoned", "rel_err inf above tolerance"),
    ("wrong_value", "above tolerance"),
    ("time_raises", "timing failed: RuntimeError: events failed"),
])
def test_failed_cases_are_never_reported_as_timed(square, mode, reason):
    backend = FakeSpmm(mode)
    case = run(square, backend)
    assert case.outcome == "failed" and reason in case.reason
    assert case.measurement is None
    if mode != "time_raises":
        assert "time" not in backend.calls


@pytest.mark.parametrize(("kwargs", "backend", "reason"), [
    ({"value_dtype": "float64"}, FakeSpmm(), "value dtype float64 not supported"),
    ({"index_bytes": 8}, FakeSpmm(), "INT64 indices not supported"),
    ({}, FakeSpmm(unsupported="layout=col is not supported"), "layout=col is not supported"),
    ({}, FakeSpmm(available=False), "backend unavailable: no device here"),
])
def test_skipped_cases_carry_their_reason_and_never_run(square, kwargs, backend, reason):
    case = run(square, backend, **kwargs)
    assert case.outcome == "skipped" and reason in case.reason
    assert backend.calls == [] and case.params.k == 4
    assert case.traffic is None  # never prepared: nothing declared


def test_notes_failure_does_not_fail_the_case(square):
    case = run(square, FakeSpmm("bad_notes"))
    assert case.outcome == "ok" and "KeyError" in case.notes["notes_error"]


def test_bad_params_and_bad_rows_raise_before_any_backend_call(square):
    backend = FakeSpmm()
    with pytest.raises(UsageError, match="k must be >= 1"):
        run(square, backend, params={"k": 0})
    with pytest.raises(RowIndexError, match="row index 80"):
        run_case(square, "slice-scipy-cpu", "slice", {"rows": [1, 80]}, config=QUICK)
    assert backend.calls == []


def test_spmv_goes_through_the_same_runner(square):
    by_name = run_case(square, "scipy-cpu", "spmv", config=QUICK, seed=3)
    default_op = run_case(square, "scipy-cpu", config=QUICK, seed=3)
    assert by_name.outcome == default_op.outcome == "ok"
    assert by_name.correctness == default_op.correctness and by_name.notes == default_op.notes
    instance = run_case(square, ScipyCpuBackend(), "spmv", config=QUICK, seed=3)
    assert instance.outcome == "ok" and instance.correctness == default_op.correctness
    assert instance.backend == "scipy-cpu" and instance.notes == default_op.notes
    with pytest.raises(UsageError, match="has no parameter k"):
        run_case(square, "scipy-cpu", "spmv", {"k": 2}, config=QUICK)
    spmm_on_spmv = run_case(square, "scipy-cpu", "spmm", {"k": 2}, config=QUICK)
    assert spmm_on_spmv.outcome == "skipped" and "not supported" in spmm_on_spmv.reason
    assert spmm_on_spmv.params == SpmmParams(k=2)


def test_slice_case_keeps_typed_params_and_derived_counts(square):
    case = run_case(square, "slice-scipy-cpu", "slice", {"rows": [0, 5, 5]}, config=QUICK)
    assert case.outcome == "ok", case.reason
    assert case.params == SliceParams(rows_selected=3, rows=(0, 5, 5))
    lengths = np.diff(square.csr.indptr)
    assert case.derived.nnz_selected == lengths[0] + 2 * lengths[5]
    assert case.derived.invalid_rows == 0


def test_get_backend_knows_every_op():
    assert get_backend("scipy-cpu").name == "scipy-cpu"
    assert get_backend("slice-scipy-cpu").capability.ops == ("slice",)
    with pytest.raises(UnknownNameError, match="spmm-scipy-cpu"):
        get_backend("nope")


def test_profile_target_entry_point(capsys):
    args = ["case", "--op", "spmm", "--suite", "dlmc3", "--matrix", "dlmc-128x256",
            "--repeats", "1"]
    assert main([*args, "--backend", "spmm-scipy-cpu", "--param", "k=8"]) == 0
    assert "dlmc-128x256 spmm-scipy-cpu spmm: ok" in capsys.readouterr().out
    assert main([*args, "--backend", "spmm-scipy-cpu", "--param", "k=0"]) == 2
    assert "k must be >= 1" in capsys.readouterr().err
    assert main(["case", "--op", "slice", "--suite", "dlmc3", "--matrix", "dlmc-128x256",
                 "--backend", "slice-scipy-cpu", "--param", "rows=0,5,5"]) == 0
    assert main([*args, "--backend", "spmm-scipy-cpu", "--param", "k"]) == 2


def test_check_only_and_run_matrix(square, capsys):
    backend = FakeSpmm()
    case = run(square, backend, timed=False)
    assert case.outcome == "ok" and case.measurement is None and "time" not in backend.calls
    spmv = run_case(square, "scipy-cpu", "spmv", config=QUICK, timed=False)
    assert spmv.outcome == "ok" and spmv.measurement is None and spmv.correctness.passed
    cases = run_matrix(square, ["spmm-scipy-cpu", "spmm-cuda-rowwarp"], "spmm",
                       [{"k": 1}, {"k": 16}], config=QUICK)
    assert [(c.backend, c.params.k) for c in cases] == [
        ("spmm-scipy-cpu", 1), ("spmm-cuda-rowwarp", 1), ("spmm-scipy-cpu", 16),
        ("spmm-cuda-rowwarp", 16)]
    from sparsescope.hardware.detect import gpu_available

    gpu_case = "ok" if gpu_available() else "skipped"  # the CUDA kernel runs where a GPU answers
    assert [c.outcome for c in cases] == ["ok", gpu_case, "ok", gpu_case]
    assert main(["case", "--op", "spmm", "--suite", "dlmc3", "--matrix", "dlmc-128x256",
                 "--backend", "spmm-scipy-cpu", "--check-only"]) == 0
    assert "checked only" in capsys.readouterr().out


def test_case_label_and_split_marked_profiles():
    from types import SimpleNamespace

    from sparsescope.target import MARKER_KERNEL, case_label, split_marked_profiles

    spec = {"op": "spmm", "suite": "dlmc3", "matrix": "dlmc-256x512",
            "backend": "spmm-torch-i32", "params": {"layout": "row", "k": 8}}
    assert case_label(spec) == "spmm-torch-i32 dlmc-256x512 k=8 layout=row"
    records = [{"index": 0, "label": "a m k=8", "outcome": "ok"},
               {"index": 1, "label": "b m k=8", "outcome": "failed"},
               {"index": 2, "label": "c m k=8", "outcome": "ok"}]

    def launch(index, name, grid=1):
        return SimpleNamespace(index=index, name=name, grid_size=grid)

    # ncu's order is the launch order (the index), whatever order the reader returns
    profiles = [launch(6, "fill", 4), launch(0, MARKER_KERNEL, 1), launch(1, "csrmm"),
                launch(2, "transpose"), launch(3, MARKER_KERNEL, 2), launch(4, "bad"),
                launch(5, MARKER_KERNEL, 3), launch(7, "spmm_rowwarp")][::-1]
    kept, labels = split_marked_profiles(profiles, records)
    assert [p.index for p in kept] == [1, 2, 6, 7]
    assert labels == ["a m k=8: csrmm", "a m k=8: transpose", "c m k=8: fill",
                      "c m k=8: spmm_rowwarp"]
    # a kernel before any marker belongs to no case
    assert split_marked_profiles([launch(0, "init")], records) == ([], [])


def test_values_beyond_the_value_types_range_skip_the_case_with_the_number():
    # SuiteSparse's `temp` holds 4.8e38: in float32 every backend would fail with an infinite
    # error; the case is skipped and says why, and float64 runs it
    csr = sp.csr_matrix(np.array([[4.8e38, 0.0], [1.0, 2.0]]))
    matrix = Matrix(name="temp-like", csr=csr, source="test")
    f32 = run_case(matrix, ScipyCpuBackend(), "spmv", config=QUICK, value_dtype="float32")
    assert f32.outcome == "skipped"
    assert f32.reason == ("the matrix holds values up to 4.8e+38, beyond float32's largest "
                          "finite value 3.4e+38; run it in float64")
    f64 = run_case(matrix, ScipyCpuBackend(), "spmv", config=QUICK, value_dtype="float64")
    assert f64.outcome == "ok" and f64.correctness.passed


def test_the_runner_tells_a_backend_the_runs_timing_protocol(square):
    """``use_timing`` is told the run's config before the backend prepares (auto's trial
    then times in the run's mode)."""
    told = []

    class Listening(ScipyCpuBackend):
        def use_timing(self, config):
            told.append(config.mode)

    throughput = TimingConfig(warmups=0, repeats=2, flush_l2=False, mode="throughput")
    result = run_case(square, Listening(), "spmv", config=throughput)
    assert told == ["throughput"] and result.outcome == "ok"
    assert result.timing_mode == "throughput"
