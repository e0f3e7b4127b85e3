"""The limiter a summary names is the largest term it shows (``model.term_labels``)."""

from __future__ import annotations

from sparsescope.model.prediction import ModelPrediction, PredictionTerm
from sparsescope.model.term_labels import (
    binding_term,
    limiter_label,
    queue_shares,
    term_label,
)


def _prediction(limiter: str, inputs: dict | None = None, **times: float) -> ModelPrediction:
    terms = tuple(PredictionTerm(name, ms, name) for name, ms in times.items())
    return ModelPrediction(predicted_ms=max(times.values()), limiter=limiter, terms=terms,
                           inputs=inputs or {})


def test_the_binding_term_is_the_largest_the_time_takes():
    # cuSPARSE on a 20,000-row power-law matrix: the model's limiter is its busiest queue,
    # "issue", while the issue term is 0.26 of 2.69 us; the summary names the memory system
    p = _prediction("issue", {"residence_ns_dram": 860.0, "residence_ns_issue": 932.0,
                              "round_trips_ns": 900.0},
                    dram=0.00086, issue=0.00026, latency=0.0009, memory=0.002691,
                    imbalance=0.002690, compute=0.000004, overhead=0.0)
    assert binding_term(p) == "memory"
    # 932 / (860 + 932 + 900) = 34.6 %
    assert limiter_label(p) == ("memory system, mostly instruction issue (35 % of a loaded "
                                "iteration)")
    shares = queue_shares(p)
    assert list(shares) == ["issue", "round_trips", "dram"]
    assert abs(sum(shares.values()) - 1.0) < 1e-12


def test_round_trips_lead_and_other_binding_terms():
    p = _prediction("latency", {"residence_ns_dram": 100.0, "round_trips_ns": 300.0},
                    memory=2.0, imbalance=1.0, compute=0.1)
    assert limiter_label(p) == "memory system, mostly round trips to memory (75 % of a loaded " \
                               "iteration)"
    q = _prediction("imbalance", memory=1.0, imbalance=3.0, compute=0.1, overhead=9.0)
    assert binding_term(q) == "imbalance"   # the overhead is added, never the limiter
    assert limiter_label(q) == "load imbalance (the longest block)"
    r = _prediction("memory", memory=1.0)   # no residences kept: the term alone
    assert limiter_label(r) == "memory system"


def test_every_identifier_has_words():
    for name in ("dram", "l2", "issue", "latency", "memory", "imbalance", "compute",
                 "overhead", "tensor"):
        assert "_" not in term_label(name) and term_label(name) != name
    assert term_label("some_new_term") == "some new term"
