"""The prediction record (``model.prediction``): the signed error, scoring, term lookup, and a
results file that carries a prediction and reads back equal."""

from __future__ import annotations

import json
import math

import pytest

from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.model.prediction import (
    ModelPrediction,
    PredictionTerm,
    not_modelled,
    signed_error_pct,
)
from sparsescope.results.io import runset_from_dict, runset_to_dict
from sparsescope.results.records import CaseResult, Correctness, Provenance, RunSet
from sparsescope.timing.types import Measurement, TimingConfig

TIMING = TimingConfig(clock="cuda-events")


def _prediction(**kw) -> ModelPrediction:
    """0.75 ms of DRAM + 0.05 ms of overhead = 0.80 ms, DRAM the limiter."""
    terms = (PredictionTerm("dram", 0.75, "3,000,000 B / 4,000 GB/s"),
             PredictionTerm("latency", 0.25, "blocks x t_iter / slots"),
             PredictionTerm("overhead", 0.05, "1 launch(es) x 50.0 us"))
    base = dict(predicted_ms=0.80, limiter="dram", terms=terms,
                inputs={"dram_bytes": 3e6, "x_l2_hit_rate": 0.5}, kernel="CSR INT32, 1 thread "
                "per row, 1 nonzeros per iteration", staged=False,
                assumptions=("kernel shape declared by the backend",))
    return ModelPrediction(**{**base, **kw})


def test_signed_error_hand_checks():
    # (1.0 - 0.8) / 1.0 x 100 = 20: the case ran slower than predicted
    assert signed_error_pct(0.8, 1.0) == pytest.approx(20.0)
    # (1.0 - 1.25) / 1.0 x 100 = -25: the case beat the prediction
    assert signed_error_pct(1.25, 1.0) == pytest.approx(-25.0)
    # the measurement is the denominator: (0.5 - 1.0) / 0.5 x 100 = -100
    assert signed_error_pct(1.0, 0.5) == pytest.approx(-100.0)
    assert signed_error_pct(2.0, 2.0) == 0.0


def test_scored_adds_the_signed_error_and_keeps_everything_else():
    p = _prediction()
    assert p.error_pct is None
    s = p.scored(1.0)
    assert s.error_pct == pytest.approx(20.0)  # (1.0 - 0.8) / 1.0 x 100
    assert s == _prediction(error_pct=s.error_pct)
    assert p.error_pct is None  # frozen: scoring returns a new record
    # no measurement (or a zero one): nothing to score against
    assert p.scored(None) is p and p.scored(0.0) is p


def test_scored_leaves_a_not_modelled_prediction_alone():
    p = not_modelled("a CPU backend")
    assert (p.predicted_ms, p.not_modelled, p.limiter, p.terms) == (None, "a CPU backend", "",
                                                                    ())
    assert p.scored(1.0) is p and p.scored(1.0).error_pct is None


def test_term_finds_a_term_by_name():
    p = _prediction()
    assert p.term("dram") == PredictionTerm("dram", 0.75, "3,000,000 B / 4,000 GB/s")
    assert p.term("overhead").time_ms == 0.05
    assert p.term("compute") is None
    assert not_modelled("why").term("dram") is None


def _runset(*cases: CaseResult) -> RunSet:
    return RunSet(
        run_id="r1", suite="seed6", scale=1.0,
        provenance=Provenance(created_utc="2026-11-21T10:00:00+00:00", command="test",
                              sparsescope_version="0.1.0", git_commit="unknown", hostname="h",
                              platform="Linux", python="3.12", device="NVIDIA H200"),
        device=get_spec("H200"), ceilings=MeasuredCeilings(device="NVIDIA H200"),
        timing=TIMING, matrices=(), cases=cases, latency_ns=300.0)


def _case(backend: str, prediction: ModelPrediction | None) -> CaseResult:
    return CaseResult(matrix="m", backend=backend, op="spmv", outcome="ok",
                      measurement=Measurement(samples_ms=(1.0, 1.0, 1.0), config=TIMING,
                                              flushed=False, clock="cuda-events"),
                      correctness=Correctness(rel_err=1e-7, tolerance=1e-5),
                      prediction=prediction)


def test_a_prediction_survives_the_results_file_round_trip():
    scored = _prediction(staged=True).scored(1.0)
    runset = _runset(_case("a", scored), _case("b", not_modelled("no kernel shape")),
                     _case("c", None))
    data = runset_to_dict(runset)
    text = json.dumps(data, allow_nan=False)  # strict JSON
    back = runset_from_dict(json.loads(text))
    assert back == runset
    p = back.cases[0].prediction
    assert isinstance(p, ModelPrediction) and isinstance(p.terms, tuple)
    assert isinstance(p.terms[0], PredictionTerm) and isinstance(p.assumptions, tuple)
    assert (p.predicted_ms, p.limiter, p.staged) == (0.80, "dram", True)
    assert p.error_pct == pytest.approx(20.0)
    assert back.cases[1].prediction.not_modelled == "no kernel shape"
    assert back.cases[2].prediction is None
    stored = data["cases"][0]["prediction"]
    assert stored["terms"][0] == {"name": "dram", "time_ms": 0.75,
                                  "formula": "3,000,000 B / 4,000 GB/s"}


def test_an_infinite_model_input_reads_back_as_a_float():
    runset = _runset(_case("a", _prediction(inputs={"required_warps_per_sm": math.inf})))
    back = runset_from_dict(json.loads(json.dumps(runset_to_dict(runset), allow_nan=False)))
    assert back.cases[0].prediction.inputs["required_warps_per_sm"] == math.inf
