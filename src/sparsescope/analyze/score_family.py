"""Prediction error per backend family (our kernels; the libraries), per GPU and timing mode:
the numbers issue 36's accuracy targets are stated in (median |error| <= 10 % and 90th
percentile <= 25 % for each family, in each timing mode).

One definition for every place that states them:

- ``sparsescope model score --by-family`` (the model as it is now: :func:`scored_errors` of
  the cases :mod:`~sparsescope.analyze.score_runs` predicted), with ``--baseline`` both
  models side by side (:func:`family_comparison`);
- ``scripts/family_errors.py`` (the predictions the runs stored: :func:`stored_errors`,
  through ``api.family_errors``);
- the report's family sentences (``report.prediction_tables.family_lines``:
  :func:`family_of`, :func:`error_summary`).

Definitions:

- **family**: ``our kernels`` when the backend (the name before a variant's ``[...]``) is one
  of ours (``registry.is_own``; a chooser such as ``cuda-spmv-auto`` is), ``libraries``
  otherwise;
- **error**: signed, ``(measured - predicted) / measured`` in %; above 0 the case was slower
  than predicted;
- **median and 90th percentile of |error|**: linear between the two nearest ranks (NumPy's
  default, as the report and the committed family tables state them). Hand check: |errors|
  10, 20, 30, 40 % -> median 25 %, 90th percentile rank 0.9 x 3 = 2.7 -> 30 + 0.7 x 10 = 37 %.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

OURS, LIBRARIES, DENSE = "our kernels", "libraries", "dense peers"
#: The families, in the order tables list them: issue 36's targets name the first two (the
#: sparse libraries, ``registry.is_sparse_library``); the dense cuBLAS peer of the break-even
#: is scored apart, so that it never moves the libraries' numbers.
FAMILIES = (OURS, LIBRARIES, DENSE)
#: Issue 36's targets for each family: median and 90th-percentile |error|, %.
TARGET_MEDIAN_PCT, TARGET_P90_PCT = 10.0, 25.0
#: The ``backend`` of a family's own row (all its backends together).
ALL = "all"


@dataclass(frozen=True)
class FamilyError:
    """One predicted case's error, with what groups it."""

    gpu: str
    timing_mode: str
    backend: str
    """The case's backend label (a variant keeps its ``[...]``)."""
    error_pct: float
    """Signed: (measured - predicted) / measured x 100."""
    matrix: str = ""
    key: tuple = ()
    """What else tells the case apart (SpMM's k and layout): matches a case across scores."""


@dataclass(frozen=True)
class ErrorSummary:
    """Median and 90th-percentile |error| and the median signed error of some cases."""

    cases: int
    median_abs_pct: float | None
    p90_abs_pct: float | None
    median_signed_pct: float | None


@dataclass(frozen=True)
class FamilyRow:
    """The error of one family (``backend`` :data:`ALL`) or of one backend of it."""

    gpu: str
    timing_mode: str
    family: str
    backend: str
    cases: int
    median_abs_pct: float
    p90_abs_pct: float
    median_signed_pct: float

    @property
    def meets_target(self) -> bool:
        """Median |error| <= 10 % and 90th percentile <= 25 % (issue 36's targets)."""
        return (self.median_abs_pct <= TARGET_MEDIAN_PCT
                and self.p90_abs_pct <= TARGET_P90_PCT)


def family_of(backend: str) -> str:
    """:data:`OURS` for one of our backends (a variant label counts by its name),
    :data:`DENSE` for a dense baseline (``registry.is_dense``), else :data:`LIBRARIES`."""
    from sparsescope.registry import is_dense, is_own

    if is_own(backend):
        return OURS
    return DENSE if is_dense(backend) else LIBRARIES


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile, linear between the two nearest ranks (NumPy's default); None
    for no values. Hand check: [10, 20, 30, 40] at 90 -> rank 2.7 -> 37."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def error_summary(errors_pct: Sequence[float]) -> ErrorSummary:
    """Cases, median and 90th-percentile |error|, median signed error (module docstring)."""
    absolute = [abs(e) for e in errors_pct]
    return ErrorSummary(cases=len(errors_pct), median_abs_pct=percentile(absolute, 50),
                        p90_abs_pct=percentile(absolute, 90),
                        median_signed_pct=percentile(list(errors_pct), 50))


def family_summaries(errors: Iterable[FamilyError]) -> list[FamilyRow]:
    """Per GPU, timing mode and family: the family's row (:data:`ALL`), then one per backend,
    sorted by label."""
    groups: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list))
    for e in errors:
        group = groups[(e.gpu, e.timing_mode, family_of(e.backend))]
        group[ALL].append(e.error_pct)
        group[e.backend].append(e.error_pct)
    rows = []
    order = {name: i for i, name in enumerate(FAMILIES)}
    for (gpu, mode, family) in sorted(groups, key=lambda k: (k[0], k[1], order[k[2]])):
        group = groups[(gpu, mode, family)]
        for backend in [ALL, *sorted(b for b in group if b != ALL)]:
            s = error_summary(group[backend])
            rows.append(FamilyRow(gpu, mode, family, backend, s.cases, s.median_abs_pct,
                                  s.p90_abs_pct, s.median_signed_pct))
    return rows


def scored_errors(cases: Iterable) -> list[FamilyError]:
    """The errors of ``ScoredCase``\\ s that carry a prediction."""
    return [FamilyError(c.gpu, getattr(c, "timing_mode", "latency") or "latency", c.backend,
                        100.0 * c.error, c.matrix, (c.k, c.layout))
            for c in cases if c.error is not None]


def stored_errors(paths: Iterable[str | Path]) -> list[FamilyError]:
    """The errors of the predictions the runs at ``paths`` (results files) stored with each
    case (``ModelPrediction.error_pct``, made before the case was timed); cases without one
    (CPU runs, "not modelled") are left out."""
    from sparsescope.results.io import read_runset

    out = []
    for path in paths:
        rs = read_runset(path)
        for case in rs.cases:
            p = case.prediction
            if case.outcome != "ok" or p is None or p.error_pct is None:
                continue
            params = case.params
            out.append(FamilyError(rs.device.name, getattr(case, "timing_mode", None)
                                   or "latency", case.backend, float(p.error_pct),
                                   case.matrix, (getattr(params, "k", None),
                                                 getattr(params, "layout", ""))))
    return out


def _cell(value: float | None, signed: bool = False) -> str:
    if value is None:
        return ""
    return f"{value:+.1f}" if signed else f"{value:.1f}"


def _name(backend: str) -> str:
    return f"**{backend}**" if backend == ALL else f"`{backend}`"


def family_markdown(rows: Sequence[FamilyRow]) -> str:
    """Markdown table of :func:`family_summaries`' rows; a family's own row in bold, with
    whether it meets the targets."""
    lines = ["| GPU | mode | family | backend | cases | median abs % | p90 abs % | "
             "median signed % | target |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        target = ("met" if r.meets_target else "missed") if r.backend == ALL else ""
        lines.append(f"| {r.gpu} | {r.timing_mode} | {r.family} | {_name(r.backend)} | "
                     f"{r.cases} | {_cell(r.median_abs_pct)} | {_cell(r.p90_abs_pct)} | "
                     f"{_cell(r.median_signed_pct, True)} | {target} |")
    return "\n".join(lines)


def _case_key(e: FamilyError) -> tuple:
    return (e.gpu, e.timing_mode, e.matrix, e.backend, e.key)


def family_comparison(now: Sequence[FamilyError], before: Sequence[FamilyError]) -> str:
    """Markdown table: per GPU, timing mode, family and backend, the cases both scores
    predicted (matched by GPU, mode, matrix, backend and SpMM's k and layout), with median and
    90th-percentile |error| and the median signed error before and now."""
    old = {_case_key(e): e for e in before}
    both = [(e, old[_case_key(e)]) for e in now if _case_key(e) in old]
    rows_now = family_summaries(e for e, _ in both)
    rows_before = {(r.gpu, r.timing_mode, r.family, r.backend): r
                   for r in family_summaries(b for _, b in both)}
    lines = ["| GPU | mode | family | backend | cases | median abs % before | now | "
             "p90 abs % before | now | median signed % before | now | target now |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows_now:
        b = rows_before[(r.gpu, r.timing_mode, r.family, r.backend)]
        target = ("met" if r.meets_target else "missed") if r.backend == ALL else ""
        lines.append(f"| {r.gpu} | {r.timing_mode} | {r.family} | {_name(r.backend)} | "
                     f"{r.cases} | {_cell(b.median_abs_pct)} | {_cell(r.median_abs_pct)} | "
                     f"{_cell(b.p90_abs_pct)} | {_cell(r.p90_abs_pct)} | "
                     f"{_cell(b.median_signed_pct, True)} | "
                     f"{_cell(r.median_signed_pct, True)} | {target} |")
    return "\n".join(lines)


def family_comparison_markdown(now: Sequence, before: Sequence) -> str:
    """:func:`family_comparison` of two scores' ``ScoredCase``\\ s (the model now, and an
    earlier one on the same runs)."""
    return family_comparison(scored_errors(now), scored_errors(before))
