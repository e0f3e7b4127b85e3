"""``sparsescope results show --json``: each row carries the case's prediction (predicted time,
signed error, limiter) or why there is none, and the output stays strict JSON."""

from __future__ import annotations

import json

import pytest

from sparsescope.cli import main
from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices.types import MatrixStats
from sparsescope.model.prediction import ModelPrediction, PredictionTerm, not_modelled
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
STATS = MatrixStats(rows=1000, cols=1000, nnz=5000, nnz_per_row_mean=5.0, nnz_per_row_std=0.0,
                    nnz_per_row_min=5, nnz_per_row_max=5, empty_rows=0, bandwidth=2,
                    distinct_columns=1000, x_reuse=5.0, x_reuse_in_window=1.0)
# predicted 0.08 ms = 0.005 ms overhead + 0.075 ms of DRAM; measured 0.1 ms:
# error = (0.1 - 0.08) / 0.1 x 100 = 20 %
PREDICTED = ModelPrediction(
    predicted_ms=0.08, limiter="dram",
    terms=(PredictionTerm("dram", 0.075, "bytes / bandwidth"),
           PredictionTerm("overhead", 0.005, "launch")),
    kernel="CSR INT32, 1 thread per row, 1 nonzeros per iteration").scored(0.1)


def _case(backend: str, prediction: ModelPrediction | None) -> CaseResult:
    return CaseResult(matrix="band", backend=backend, op="spmv", outcome="ok", index_bytes=4,
                      measurement=Measurement(samples_ms=(0.1, 0.1, 0.1), config=TIMING,
                                              flushed=False, clock="cuda-events"),
                      correctness=Correctness(rel_err=1e-7, tolerance=1e-5),
                      prediction=prediction)


def _runset() -> RunSet:
    return RunSet(
        run_id="r1", suite="seed6", scale=1.0,
        provenance=Provenance(created_utc="2026-11-21T10:00:00+00:00", command="test",
                              sparsescope_version="0.1.0", git_commit="unknown", hostname="h",
                              platform="Linux", python="3.12", device="NVIDIA H200"),
        device=get_spec("H200"), ceilings=MeasuredCeilings(device="NVIDIA H200"), timing=TIMING,
        matrices=(MatrixRecord(name="band", source="generated", kind="banded",
                                analog_of=None, stats=STATS),),
        cases=(_case("cuda-csr-scalar", PREDICTED),
               _case("torch-cusparse-i32", None),
               _case("scipy-cpu", not_modelled("a CPU backend: the time model is the GPU's"))),
        latency_ns=300.0)


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_show_json_carries_each_case_prediction(tmp_path, capsys):
    path = write_runset(tmp_path / "results.json", _runset())
    rc = main(["results", "show", str(path), "--json"], modules=MODULES)
    assert rc == 0
    rows = _strict(capsys.readouterr().out)["rows"]
    assert [r["backend"] for r in rows] == ["cuda-csr-scalar", "torch-cusparse-i32",
                                            "scipy-cpu"]
    keys = ("predicted_ms", "prediction_error_pct", "limiter", "not_modelled")
    assert all(set(keys) <= set(r) for r in rows)
    predicted, older, cpu = ({k: r[k] for k in keys} for r in rows)
    assert predicted["predicted_ms"] == 0.08 and predicted["limiter"] == "dram"
    assert predicted["prediction_error_pct"] == pytest.approx(20.0)
    assert predicted["not_modelled"] is None
    assert older == {"predicted_ms": None, "prediction_error_pct": None, "limiter": None,
                     "not_modelled": "results older than the model"}
    assert cpu == {"predicted_ms": None, "prediction_error_pct": None, "limiter": None,
                   "not_modelled": "a CPU backend: the time model is the GPU's"}


def test_show_text_still_lists_every_case(tmp_path, capsys):
    path = write_runset(tmp_path / "results.json", _runset())
    rc = main(["results", "show", str(path)], modules=MODULES)
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[3:]] == ["cuda-csr-scalar", "torch-cusparse-i32",
                                                       "scipy-cpu"]
