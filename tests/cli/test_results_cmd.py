"""``sparsescope results show`` in-process, on a RunSet built from records (no GPU needed)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from sparsescope.cli import main
from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices.types import MatrixStats
from sparsescope.results.io import write_runset
from sparsescope.results.records import (
    CaseResult,
    Correctness,
    MatrixRecord,
    Provenance,
    RunSet,
)
from sparsescope.timing.types import Measurement, TimingConfig

MODULES = ["sparsescope.cli.results_cmd"]
TIMING = TimingConfig(clock="cuda-events")
# ldoor's size (seed 000 section 2.3).
LDOOR = MatrixStats(rows=952_203, cols=952_203, nnz=46_522_475, nnz_per_row_mean=48.86,
                    nnz_per_row_std=11.9, nnz_per_row_min=28, nnz_per_row_max=77, empty_rows=0,
                    bandwidth=686_000, distinct_columns=952_203, x_reuse=48.86,
                    x_reuse_in_window=0.93)


def _case(backend: str, samples: tuple[float, ...] | None, *, index_bytes: int, y_read: bool,
          rel_err: float | None = 3e-8, outcome: str = "ok") -> CaseResult:
    measurement = (Measurement(samples_ms=samples, config=TIMING, flushed=False,
                               clock="cuda-events") if samples else None)
    correctness = Correctness(rel_err=rel_err, tolerance=1e-5) if rel_err is not None else None
    return CaseResult(matrix="ldoor", backend=backend, op="spmv", outcome=outcome,
                      reason="" if outcome == "ok" else "why", index_bytes=index_bytes,
                      y_read=y_read, measurement=measurement, correctness=correctness)


def _runset(copy_bw: float | None) -> RunSet:
    cases = (
        _case("torch-cusparse-i64", (0.1964, 0.1971, 0.1958, 0.2012), index_bytes=8,
              y_read=True),
        _case("cuda-csr-vector", (0.1, 0.1, 0.1), index_bytes=4, y_read=False),
        _case("cuda-csr-scalar", None, index_bytes=4, y_read=False, rel_err=math.inf,
              outcome="failed"),
        _case("cupy-cusparse-i32", None, index_bytes=4, y_read=True, rel_err=None,
              outcome="skipped"),
    )
    return RunSet(
        run_id="r1", suite="seed6", scale=1.0,
        provenance=Provenance(created_utc="2026-11-21T10:00:00+00:00", command="test",
                              sparsescope_version="0.1.0", git_commit="unknown", hostname="h",
                              platform="Linux", python="3.12", device="NVIDIA H200"),
        device=get_spec("H200"), ceilings=MeasuredCeilings(device="NVIDIA H200",
                                                           copy_bw_gb_s=copy_bw),
        timing=TIMING,
        matrices=(MatrixRecord(name="ldoor", source="generated", kind="banded",
                               analog_of="ldoor", stats=LDOOR),),
        cases=cases, latency_ns=300.0)


def _show(capsys, path, *extra: str):
    rc = main(["results", "show", str(path), *extra], modules=MODULES)
    return rc, capsys.readouterr()


def test_rows_use_the_int32_byte_model_for_every_backend(tmp_path, capsys):
    path = write_runset(tmp_path / "results.json", _runset(copy_bw=4000.0))
    rc, out = _show(capsys, path, "--json")
    assert rc == 0
    data = json.loads(out.out)
    rows = data["rows"]
    assert [r["backend"] for r in rows] == ["torch-cusparse-i64", "cuda-csr-vector",
                                            "cuda-csr-scalar", "cupy-cusparse-i32"]
    assert all(set(r) == {"matrix", "backend", "median_ms", "cv", "rel_err", "eff_bw_gb_s",
                          "pct_copy_bw", "outcome", "params", "traffic_bytes", "above_peak",
                          "predicted_ms", "prediction_error_pct", "limiter", "not_modelled"}
               for r in rows)
    # INT32, y written: 46,522,475 x 8 + 952,204 x 4 + 952,203 x 8 = 383,606,240 bytes,
    # although this case ran with INT64 indices and read y.
    torch_row = rows[0]
    assert torch_row["median_ms"] == pytest.approx(0.19675)  # (0.1964 + 0.1971) / 2
    assert torch_row["eff_bw_gb_s"] == pytest.approx(383_606_240 / 0.19675e-3 / 1e9)
    assert torch_row["eff_bw_gb_s"] == pytest.approx(1949.71, abs=0.01)
    assert torch_row["pct_copy_bw"] == pytest.approx(48.743, abs=1e-3)
    # sample std 0.0024418 over mean 0.197625
    assert torch_row["cv"] == pytest.approx(0.012356, rel=1e-3)
    assert torch_row["rel_err"] == 3e-8
    vector = rows[1]
    assert vector["eff_bw_gb_s"] == pytest.approx(3836.0624)  # same bytes over 0.1 ms
    assert vector["cv"] == 0.0
    assert rows[2] == {"matrix": "ldoor", "backend": "cuda-csr-scalar", "median_ms": None,
                       "cv": None, "rel_err": "Infinity", "eff_bw_gb_s": None,
                       "pct_copy_bw": None, "outcome": "failed", "params": "",
                       "traffic_bytes": None, "above_peak": "", "predicted_ms": None,
                       "prediction_error_pct": None, "limiter": None,
                       "not_modelled": "results older than the model"}
    assert rows[3]["rel_err"] is None and rows[3]["median_ms"] is None
    assert data["copy_bw_gb_s"] == 4000.0


def test_pct_copy_bw_is_null_without_a_measured_copy_bandwidth(tmp_path, capsys):
    path = write_runset(tmp_path / "results.json", _runset(copy_bw=None))
    rc, out = _show(capsys, path, "--json")
    rows = json.loads(out.out)["rows"]
    assert rc == 0
    assert rows[0]["eff_bw_gb_s"] == pytest.approx(1949.71, abs=0.01)
    assert all(r["pct_copy_bw"] is None for r in rows)


def test_text_table(tmp_path, capsys):
    path = write_runset(tmp_path / "results.json", _runset(copy_bw=4000.0))
    rc, out = _show(capsys, path)
    assert rc == 0
    lines = out.out.splitlines()
    assert "copy bandwidth 4,000 GB/s" in lines[0]
    assert lines[1].split() == ["matrix", "backend", "median", "ms", "cv", "rel_err", "eff",
                                "GB/s", "%", "copy", "outcome"]
    assert lines[3].split() == ["ldoor", "torch-cusparse-i64", "0.1967", "1.2%", "3.0e-08",
                                "1,950", "48.7", "ok"]
    assert lines[5].split() == ["ldoor", "cuda-csr-scalar", "-", "-", "inf", "-", "-",
                                "failed"]


def test_bad_file_is_an_error_not_a_traceback(tmp_path, capsys):
    bad = tmp_path / "results.json"
    bad.write_text('{"schema_version": 1}')
    rc, out = _show(capsys, bad)
    assert rc != 0
    assert out.err.startswith("sparsescope: error: ")
    assert "results.json" in out.err


# ----------------------------------------------------------------------------- compare

def _pair_runset(run_id: str, times: dict[str, tuple[float, ...] | None]) -> RunSet:
    """One ldoor case per backend; None: a failed case (no time counted)."""
    cases = tuple(_case(backend, samples, index_bytes=4, y_read=False,
                        outcome="ok" if samples else "failed")
                  for backend, samples in times.items())
    return dataclasses.replace(_runset(copy_bw=4000.0), run_id=run_id, cases=cases)


def _compare(capsys, tmp_path, times_a, times_b, *extra: str):
    a = write_runset(tmp_path / "a.json", _pair_runset("run-a", times_a))
    b = write_runset(tmp_path / "b.json", _pair_runset("run-b", times_b))
    rc = main(["results", "compare", str(a), str(b), *extra], modules=MODULES)
    return rc, capsys.readouterr()


A_TIMES = {"torch-cusparse-i64": (0.20, 0.21, 0.19), "cuda-csr-vector": (0.100, 0.100),
           "cupy-cusparse-i32": (0.130,), "cuda-csr-scalar": None}
B_TIMES = {"torch-cusparse-i64": (0.204, 0.206), "cuda-csr-vector": (0.108,),
           "cupy-cusparse-i32": None, "cuda-csr-scalar": None, "torch-cusparse-i32": (0.13,)}


def test_compare_rows_ratio_spread_and_status(tmp_path, capsys):
    rc, out = _compare(capsys, tmp_path, A_TIMES, B_TIMES, "--json")
    assert rc == 0
    data = json.loads(out.out)
    rows = {r["backend"]: r for r in data["rows"]}
    assert [r["backend"] for r in data["rows"]] == [*A_TIMES, "torch-cusparse-i32"]
    torch_row = rows["torch-cusparse-i64"]
    # medians 0.20 and 0.205: ratio 1.025, spread 0.005 / 0.20 = 2.5 %
    assert torch_row["median_a_ms"] == pytest.approx(0.20)
    assert torch_row["median_b_ms"] == pytest.approx(0.205)
    assert torch_row["ratio_b_over_a"] == pytest.approx(1.025)
    assert torch_row["spread"] == pytest.approx(0.025)
    assert torch_row["status"] == "agree"
    vector = rows["cuda-csr-vector"]  # 0.100 -> 0.108: 8 % > 5 %
    assert vector["spread"] == pytest.approx(0.08) and vector["status"] == "differ"
    assert rows["cupy-cusparse-i32"]["status"] == "only_a"
    assert rows["cupy-cusparse-i32"]["median_b_ms"] is None
    assert rows["cuda-csr-scalar"]["status"] == "untimed"
    assert rows["torch-cusparse-i32"]["status"] == "only_b"
    s = data["summary"]
    assert s["within"] == 0.05 and s["rows"] == 5 and s["compared"] == 2
    assert s["counts"] == {"agree": 1, "differ": 1, "only_a": 1, "only_b": 1, "untimed": 1}
    assert s["max_spread"] == pytest.approx(0.08)
    assert s["max_spread_case"] == {"matrix": "ldoor", "backend": "cuda-csr-vector"}
    assert s["median_spread"] == pytest.approx(0.0525)
    assert s["all_within"] is False
    assert data["a"]["run_id"] == "run-a" and data["b"]["run_id"] == "run-b"
    assert data["same_device"] is True


def test_compare_all_within_a_wider_threshold(tmp_path, capsys):
    times_a = {k: v for k, v in A_TIMES.items() if k in ("torch-cusparse-i64", "cuda-csr-vector",
                                                          "cuda-csr-scalar")}
    times_b = {k: B_TIMES[k] for k in times_a}
    rc, out = _compare(capsys, tmp_path, times_a, times_b, "--json", "--within", "0.08")
    summary = json.loads(out.out)["summary"]
    assert rc == 0
    assert summary["all_within"] is True  # 8 % spread <= 0.08; the untimed row is left out
    assert summary["counts"]["agree"] == 2 and summary["counts"]["untimed"] == 1
    rc, out = _compare(capsys, tmp_path, times_a, times_b, "--json")
    assert json.loads(out.out)["summary"]["all_within"] is False


def test_compare_text(tmp_path, capsys):
    rc, out = _compare(capsys, tmp_path, A_TIMES, B_TIMES)
    assert rc == 0
    lines = out.out.splitlines()
    assert lines[0].startswith("A: run run-a (2026-11-21T10:00:00+00:00, NVIDIA H200)")
    assert lines[2].split() == ["matrix", "backend", "A", "ms", "B", "ms", "B/A", "spread",
                                "status"]
    assert lines[4].split() == ["ldoor", "torch-cusparse-i64", "0.2000", "0.2050", "1.025",
                                "2.5%", "agree"]
    assert lines[5].split() == ["ldoor", "cuda-csr-vector", "0.1000", "0.1080", "1.080",
                                "8.0%", "differ"]
    assert lines[6].split() == ["ldoor", "cupy-cusparse-i32", "0.1300", "-", "-", "-", "only_a"]
    assert lines[-1] == ("max spread 8.0% (ldoor cuda-csr-vector); 1 of 2 timed rows within "
                         "5.0%; all rows agree: no")


def test_compare_refuses_a_negative_threshold_and_bad_files(tmp_path, capsys):
    rc, out = _compare(capsys, tmp_path, A_TIMES, B_TIMES, "--within", "-0.1")
    assert rc != 0 and out.err.startswith("sparsescope: error: --within must be")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    rc = main(["results", "compare", str(bad), str(tmp_path / "a.json")], modules=MODULES)
    err = capsys.readouterr().err
    assert rc != 0 and err.startswith("sparsescope: error: ") and "bad.json" in err
