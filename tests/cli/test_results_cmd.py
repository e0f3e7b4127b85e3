"""``sparsescope results show`` in-process, on a RunSet built from records (no GPU needed)."""

from __future__ import annotations

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
                          "pct_copy_bw"} for r in rows)
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
                       "pct_copy_bw": None}
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
