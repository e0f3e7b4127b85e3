"""The DAE what-if validated: staged kernels (shared-memory staging, cp.async: decoupled access
/ execute) against their unstaged siblings, predicted gain beside measured gain.

A pair is two timed cases of one matrix and one parameter set whose predictions name the same
non-empty kernel shape (``ModelPrediction.kernel``), one ``staged`` and one not::

    predicted gain = predicted(unstaged) / predicted(staged)
    measured gain  = time(unstaged) / time(staged)

A gain below 1 is never printed as a speedup: :func:`gain_text` writes it "no gain: limited by
<what limits>" (the warp-model DAE tables of :mod:`sparsescope.report.warp_tables` follow the
same rule).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from sparsescope.model.prediction import OLDER_THAN_MODEL
from sparsescope.report.context import ok_cases
from sparsescope.report.labels import params_text
from sparsescope.report.table_types import Column, Table
from sparsescope.results.records import CaseResult, RunSet

GAIN_BAND = 1.25
"""A prediction holds when measured / predicted gain lies in [1 / GAIN_BAND, GAIN_BAND]."""


def gain_text(gain: float | None, limited_by: str) -> str:
    """``1.31x``, or ``no gain: limited by <limited_by>`` below 1; ``—`` when absent."""
    if gain is None:
        return "—"
    if gain < 1.0:
        return f"no gain: limited by {limited_by or 'an unnamed term'}"
    return f"{gain:.2f}x"


def measured_gain_text(gain: float) -> str:
    """A measured gain: ``1.35x``, or ``none: staged 1.11x slower`` below 1."""
    return f"{gain:.2f}x" if gain >= 1.0 else f"none: staged {1 / gain:.2f}x slower"


@dataclass(frozen=True)
class DaePair:
    """A staged case and its unstaged sibling (same matrix, parameters and kernel shape)."""

    staged: CaseResult
    unstaged: CaseResult

    @property
    def measured_gain(self) -> float:
        return self.unstaged.time_ms / self.staged.time_ms

    @property
    def predicted_gain(self) -> float | None:
        s, u = self.staged.prediction, self.unstaged.prediction
        if s is None or u is None or not s.predicted_ms or u.predicted_ms is None:
            return None
        return u.predicted_ms / s.predicted_ms


def dae_pairs(runset: RunSet) -> list[DaePair]:
    """Every (staged, unstaged) pair among ``runset``'s timed cases, in run order."""
    groups: dict[tuple, tuple[list[CaseResult], list[CaseResult]]] = {}
    for case in ok_cases(runset):
        p = case.prediction
        if p is None or not p.kernel:
            continue
        staged, unstaged = groups.setdefault((case.op, case.matrix, case.params, p.kernel),
                                             ([], []))
        (staged if p.staged else unstaged).append(case)
    return [DaePair(s, u) for staged, unstaged in groups.values() for s in staged
            for u in unstaged]


@dataclass(frozen=True)
class DaeValidatedRow:
    """One pair: predicted against measured gain of staging."""

    matrix: str
    params: str
    kernel: str
    staged_backend: str
    unstaged_backend: str
    predicted_gain_x: float | None
    """predicted(unstaged) / predicted(staged); None when either is not modelled."""
    measured_gain_x: float
    """time(unstaged) / time(staged)."""
    staged_limiter: str
    """The term that binds the staged case in the model."""
    verdict: str

    @property
    def predicted_gain_cell(self) -> str:
        if self.predicted_gain_x is None:
            return "not modelled"
        return gain_text(self.predicted_gain_x, self.staged_limiter)

    @property
    def measured_gain_cell(self) -> str:
        return measured_gain_text(self.measured_gain_x)


def _not_modelled(pair: DaePair) -> str:
    for case in (pair.staged, pair.unstaged):
        p = case.prediction
        if p is None or p.predicted_ms is None:
            reason = p.not_modelled if p is not None else OLDER_THAN_MODEL
            return f"not modelled: {case.backend}: {reason or 'no reason given'}"
    return "not modelled"


def verdict_text(predicted: float | None, measured: float, limiter: str) -> str:
    """Whether the measured gain lies within 25 % of the predicted one, in words."""
    if predicted is None:
        return "not modelled"
    said = (f"predicted {predicted:.2f}x" if predicted >= 1.0 else
            f"predicted no gain (limited by {limiter or 'an unnamed term'})")
    got = (f"measured {measured:.2f}x" if measured >= 1.0 else
           f"measured staged {1 / measured:.2f}x slower")
    holds = 1 / GAIN_BAND <= measured / predicted <= GAIN_BAND
    return f"{'holds' if holds else 'refuted'}: {said}, {got}"


def dae_validated_row(pair: DaePair) -> DaeValidatedRow:
    s = pair.staged
    predicted, measured = pair.predicted_gain, pair.measured_gain
    limiter = s.prediction.limiter if s.prediction is not None else ""
    verdict = (_not_modelled(pair) if predicted is None
               else verdict_text(predicted, measured, limiter))
    return DaeValidatedRow(
        matrix=s.matrix, params=params_text(s.params), kernel=s.prediction.kernel,
        staged_backend=s.backend, unstaged_backend=pair.unstaged.backend,
        predicted_gain_x=predicted, measured_gain_x=measured, staged_limiter=limiter,
        verdict=verdict)


def _reading(rows: Sequence[DaeValidatedRow]) -> str:
    if not rows:
        return ("No staged case of this run has an unstaged sibling of the same kernel shape "
                "on the same matrix, so the DAE what-if is not validated by a measurement here.")
    held = sum(r.verdict.startswith("holds") for r in rows)
    modelled = sum(r.predicted_gain_x is not None for r in rows)
    median = statistics.median(r.measured_gain_x for r in rows)
    return (f"{len(rows)} staged/unstaged pair(s); the prediction holds within 25 % on {held} "
            f"of {modelled} modelled. Median measured gain of staging: "
            f"{measured_gain_text(median)}.")


def dae_validated_table(runset: RunSet) -> Table:
    """The validated DAE table of ``runset``'s timed cases."""
    rows = tuple(dae_validated_row(p) for p in dae_pairs(runset))
    cols = [Column("matrix", "Matrix"), Column("staged_backend", "Staged backend"),
            Column("unstaged_backend", "Unstaged backend"),
            Column("predicted_gain_cell", "Predicted gain"),
            Column("measured_gain_cell", "Measured gain"), Column("verdict", "Verdict")]
    if any(r.params for r in rows):
        cols.insert(1, Column("params", "Params"))
    return Table("dae_validated", "DAE what-if validated: staged against unstaged kernels",
                 tuple(cols), rows, _reading(rows),
                 basis="Pairs: same matrix, parameters and kernel shape, staged (cp.async / "
                       "shared-memory staging) and not. Predicted gain = predicted(unstaged) "
                       "/ predicted(staged); measured gain = time(unstaged) / time(staged).")
