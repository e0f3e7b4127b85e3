"""``api.show_results`` / ``api.compare_results`` (rows by :mod:`sparsescope.results.tables`)
and ``api.model_figures``: the records the thin ``results`` and ``model`` commands print."""

from __future__ import annotations

import dataclasses
import math

import pytest

from sparsescope import api
from sparsescope.errors import UsageError
from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices.types import MatrixStats
from sparsescope.results.io import write_runset
from sparsescope.results.records import CaseResult, Correctness, MatrixRecord, Provenance, RunSet
from sparsescope.results.tables import BYTE_MODEL, compare_rows, compare_summary
from sparsescope.timing.types import Measurement, TimingConfig

TIMING = TimingConfig(clock="cuda-events")
STATS = MatrixStats(rows=1000, cols=1000, nnz=50_000, nnz_per_row_mean=50.0,
                    nnz_per_row_std=0.0, nnz_per_row_min=50, nnz_per_row_max=50, empty_rows=0,
                    bandwidth=1000, distinct_columns=1000, x_reuse=50.0,
                    x_reuse_in_window=1.0)


def _case(backend: str, samples: tuple[float, ...] | None, outcome: str = "ok") -> CaseResult:
    m = (Measurement(samples_ms=samples, config=TIMING, flushed=False, clock="cuda-events")
         if samples else None)
    return CaseResult(matrix="m", backend=backend, op="spmv", outcome=outcome,
                      reason="" if outcome == "ok" else "why", index_bytes=4, y_read=False,
                      measurement=m, correctness=Correctness(rel_err=1e-8, tolerance=1e-5))


def _runset(cases, run_id: str = "r1", copy_bw: float | None = 4000.0) -> RunSet:
    return RunSet(
        run_id=run_id, suite="seed6", scale=1.0,
        provenance=Provenance(created_utc="2026-11-27T10:00:00+00:00", command="test",
                              sparsescope_version="0.1.0", git_commit="unknown", hostname="h",
                              platform="Linux", python="3.12", device="NVIDIA H200"),
        device=get_spec("H200"),
        ceilings=MeasuredCeilings(device="NVIDIA H200", copy_bw_gb_s=copy_bw), timing=TIMING,
        matrices=(MatrixRecord(name="m", source="generated", kind="banded", analog_of="m",
                               stats=STATS),),
        cases=tuple(cases), latency_ns=300.0)


def test_show_results_rows_use_the_int32_byte_model(tmp_path):
    path = write_runset(tmp_path / "results.json",
                        _runset([_case("a", (0.01, 0.01, 0.01)), _case("b", None, "skipped")]))
    table = api.show_results(path)
    assert (table.run_id, table.device, table.copy_bw_gb_s) == ("r1", "NVIDIA H200", 4000.0)
    assert table.byte_model == BYTE_MODEL
    timed, skipped = table.rows
    # INT32 CSR, y written only: 12 B a nonzero + 4 B a row pointer + x read + y written
    bytes_int32 = 50_000 * 8 + 1001 * 4 + 1000 * 4 + 1000 * 4
    assert timed.eff_bw_gb_s == pytest.approx(bytes_int32 / 1e-5 / 1e9)
    assert timed.pct_copy_bw == pytest.approx(100 * timed.eff_bw_gb_s / 4000.0)
    assert (timed.outcome, timed.not_modelled) == ("ok", "results older than the model")
    assert skipped.median_ms is None and skipped.eff_bw_gb_s is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.run_id = "x"  # type: ignore[misc]


def test_compare_rows_and_summary():
    a = _runset([_case("x", (1.0, 1.0)), _case("y", (1.0, 1.0)), _case("z", None, "failed")])
    b = _runset([_case("x", (1.02, 1.02)), _case("y", (1.5, 1.5)), _case("w", (2.0, 2.0))])
    rows = compare_rows(a, b, 0.05)
    assert [(r.backend, r.status) for r in rows] == [
        ("x", "agree"), ("y", "differ"), ("z", "untimed"), ("w", "only_b")]
    assert rows[1].ratio_b_over_a == pytest.approx(1.5)
    summary = compare_summary(rows, 0.05)
    assert summary.max_spread_case == ("m", "y")
    assert summary.max_spread == pytest.approx(0.5)
    assert summary.counts == {"agree": 1, "differ": 1, "only_a": 0, "only_b": 1, "untimed": 1}
    assert summary.all_within is False


def test_compare_results_reads_both_files(tmp_path):
    path = write_runset(tmp_path / "a.json", _runset([_case("x", (1.0, 1.0))]))
    same = api.compare_results(path, path)
    assert same.same_device and same.summary.all_within
    assert same.a.file == str(path) and same.a.run_id == "r1"
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(UsageError, match="--within"):
            api.compare_results(path, path, within=bad)


def test_model_figures_for_a_gpu_and_a_case():
    spec = get_spec("H200")
    fig = api.model_figures("H200")
    assert (fig.gpu, fig.bw_gb_s, fig.latency_ns) == (spec.name, spec.peak_bw_gb_s,
                                                      spec.dram_latency_ns)
    assert fig.case is None and fig.dae_bw_prediction is None
    assert sorted(r.latency_ns for r in fig.sensitivity) == sorted(
        {200.0, 300.0, 400.0, float(spec.dram_latency_ns)})
    case = api.model_figures("H200", rows=1000, nnz=50_000, time_ms=0.01)
    assert case.case is not None and case.case.metrics.time_ms == 0.01
    assert case.dae_bw_prediction is not None
    with pytest.raises(UsageError, match="a case needs"):
        api.model_figures("H200", rows=1000)
    with pytest.raises(UsageError, match="--cpi and --long-scoreboard"):
        api.model_figures("H200", cpi=3.0)
