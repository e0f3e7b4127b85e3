"""The timing mode through the product: the runner stores it with every case, the results
file keeps and validates it, ``run`` / ``sweep --timing-mode`` pass it on, and a mode the
protocol cannot honour is a one-line usage error before anything is measured."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.runner import run_case
from sparsescope.cli import main
from sparsescope.errors import ResultsFormatError, UsageError
from sparsescope.matrices.types import Matrix
from sparsescope.results.io import read_runset, record_from_dict, record_to_dict
from sparsescope.results.records import CaseResult
from sparsescope.timing import TimingConfig
from sparsescope.timing.modes import MAX_CALLS, MIN_CALLS


@pytest.fixture(scope="module")
def small_matrix() -> Matrix:
    csr = sp.random(120, 90, density=0.05, format="csr", random_state=3, dtype=np.float64)
    csr.sum_duplicates()
    csr.sort_indices()
    return Matrix(name="rand120x90", csr=csr, source="generated:test", kind="uniform", seed=3)


def test_the_runner_records_the_mode_with_every_case(small_matrix):
    case = run_case(small_matrix, "scipy-cpu", config=TimingConfig(
        warmups=1, repeats=2, mode="throughput"), value_dtype="float64")
    assert case.outcome == "ok" and case.timing_mode == "throughput"
    m = case.measurement
    assert m.config.mode == "throughput" and m.flushed is False
    assert MIN_CALLS <= m.config.throughput_calls <= MAX_CALLS
    latency = run_case(small_matrix, "scipy-cpu", config=TimingConfig(warmups=0, repeats=2))
    assert latency.timing_mode == "latency" and latency.measurement.config.throughput_calls == 0
    # a skipped case says which mode it would have been timed in, too
    skipped = run_case(small_matrix, "scipy-cpu", config=TimingConfig(mode="throughput"),
                       value_dtype="float16")
    assert skipped.outcome == "skipped" and skipped.timing_mode == "throughput"


def test_results_keep_and_validate_the_mode():
    case = CaseResult(matrix="m", backend="scipy-cpu", op="spmv", outcome="skipped",
                      reason="r", timing_mode="throughput")
    data = record_to_dict(case)
    assert data["timing_mode"] == "throughput"
    assert record_from_dict(data, CaseResult).timing_mode == "throughput"
    older = {k: v for k, v in data.items() if k != "timing_mode"}
    assert record_from_dict(older, CaseResult).timing_mode == "latency"  # older files
    with pytest.raises(ResultsFormatError, match="timing_mode: expected one of "
                                                 "latency/throughput, got 'burst'"):
        record_from_dict({**data, "timing_mode": "burst"}, CaseResult)


@pytest.mark.parametrize("command", [
    ["run", "--suite", "seed6", "--scale", "0.002"],
    ["sweep", "suite:seed6@0.002"],
])
@pytest.mark.usefixtures("cpu_ceilings_measured_once")
def test_a_warm_l2_cannot_be_flushed(command, tmp_path, capsys, monkeypatch):
    from sparsescope.backends import runner

    def refuse(*args, **kwargs):
        raise AssertionError("measured before the usage error")

    monkeypatch.setattr(runner, "run_case", refuse)
    out = tmp_path / "o"
    rc = main([*command, "--out", str(out), "--no-store", "--timing-mode", "throughput",
               "--flush", "on"])
    err = capsys.readouterr().err
    assert rc == UsageError.exit_code == 2
    assert "throughput timing keeps the L2 warm" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.usefixtures("cpu_ceilings_measured_once")
def test_run_in_throughput_mode_stores_and_reports_it(tmp_path, capsys, small_matrix,
                                                      monkeypatch):
    import scipy.io

    from sparsescope.report import spmv_layout

    # the figures are most of a small run's time and say nothing of the mode
    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {
        name: (lambda ctx, tables: "not drawn in this test") for name in spmv_layout.FIGURE_FUNCS})

    path = tmp_path / "small.mtx"
    scipy.io.mmwrite(str(path), small_matrix.csr)
    out = tmp_path / "tp"
    rc = main(["run", "--matrix", str(path), "--out", str(out), "--no-store",
               "--warmups", "1", "--repeats", "2", "--timing-mode", "throughput", "--json"])
    assert rc == 0, capsys.readouterr().err
    json.loads(capsys.readouterr().out)
    rs = read_runset(out / "results.json")
    assert rs.timing.mode == "throughput"
    assert {c.timing_mode for c in rs.cases} == {"throughput"}
    assert all(c.measurement.config.throughput_calls >= MIN_CALLS for c in rs.cases)
    md = (out / "report.md").read_text()
    assert "Timing mode: median, throughput" in md
