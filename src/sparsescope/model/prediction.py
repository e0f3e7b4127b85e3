"""The record of one case's predicted time: each term a kernel can hit, the one that binds, and,
once the case is timed, how far the measurement landed from it.

Built by :mod:`sparsescope.model.predict` before the case is timed and stored with it
(``CaseResult.prediction``); the runner adds the signed error after timing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class PredictionTerm:
    """One lower bound on the kernel's time, with the numbers behind it."""

    name: str
    """``dram``, ``l2``, ``issue``, ``latency``, ``memory``, ``imbalance``, ``compute`` or
    ``overhead``."""
    time_ms: float
    """The time this term alone needs (ms)."""
    formula: str
    """The term's formula with this case's numbers, for the report."""


@dataclass(frozen=True)
class ModelPrediction:
    """The predicted time of one case and every term behind it."""

    predicted_ms: float | None
    """overhead + max(device terms) (ms); None when the case is not modelled."""
    limiter: str = ""
    """Name of the term that binds (the largest device term), "" when not modelled."""
    terms: tuple[PredictionTerm, ...] = ()
    """Every term, overhead included."""
    inputs: dict[str, float] = field(default_factory=dict)
    """The model's inputs and intermediate figures (predicted DRAM bytes, x hit rate in L2,
    resident warps, bytes in flight per warp, latency, ...), by name."""
    kernel: str = ""
    """The kernel's shape as the model saw it, staging left out: the format and the work
    decomposition (e.g. ``SELL-32 INT32, 1 thread per row``); two cases of one matrix with the
    same ``kernel`` and different ``staged`` are a DAE pair (staged against unstaged sibling)."""
    staged: bool = False
    """Whether the kernel stages its streams in shared memory (cp.async, decoupled
    access / execute)."""
    assumptions: tuple[str, ...] = ()
    """What the prediction assumes and where each input came from (SASS, declared shape,
    datasheet, measured ceiling, sampling)."""
    error_pct: float | None = None
    """(measured - predicted) / measured x 100 after timing: positive when the case ran slower
    than predicted, negative when it beat the prediction; None before timing."""
    not_modelled: str = ""
    """Why there is no prediction (the reason the report shows instead of a number)."""

    def term(self, name: str) -> PredictionTerm | None:
        """The term called ``name``, or None."""
        return next((t for t in self.terms if t.name == name), None)

    def scored(self, measured_ms: float | None) -> ModelPrediction:
        """This prediction with its signed error against ``measured_ms``::

            error_pct = (measured - predicted) / measured x 100
        """
        if self.predicted_ms is None or not measured_ms:
            return self
        return replace(self, error_pct=signed_error_pct(self.predicted_ms, measured_ms))


def signed_error_pct(predicted_ms: float, measured_ms: float) -> float:
    """(measured - predicted) / measured x 100. Hand check: predicted 0.8, measured 1.0 -> 20.0;
    predicted 1.25, measured 1.0 -> -25.0."""
    return (measured_ms - predicted_ms) / measured_ms * 100.0


#: How a case without any prediction record (a results file written before the model) reads.
OLDER_THAN_MODEL = "results older than the model"


def not_modelled(reason: str) -> ModelPrediction:
    """A prediction that is not there, with its reason (rendered as "not modelled: reason")."""
    return ModelPrediction(predicted_ms=None, not_modelled=reason)
