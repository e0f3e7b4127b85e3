"""Each backend's speedup over a baseline backend of the same run: per (matrix, k, layout),
baseline median / backend median, and the geomean per backend over the rows that have it.
Ratios are taken within one run only, never across runs."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sparsescope.report.readme.selection import geomean

BASELINES = ("torch-cusparse-i64", "spmm-torch-i32", "slice-torch")
"""The baseline a run's speedups are read against: the first of these the run timed (the seed
report's SpMV baseline, then the SpMM and slicing library baselines)."""


@dataclass(frozen=True)
class Speedups:
    """A run's geomean speedups over its baseline."""

    baseline: str
    rows: int
    """(matrix, k, layout) groups where the baseline was timed."""
    geomean: tuple[tuple[str, float, int], ...]
    """(backend, geomean speedup, rows that have it), the baseline left out, first-seen order."""


def _params(case: dict) -> dict:
    """The case's op parameters: ``params``, or the ``op.*`` notes of a schema-1 file."""
    if case.get("params"):
        return case["params"]
    notes = case.get("notes") or {}
    return {k[3:]: v for k, v in notes.items() if k.startswith("op.")}


def speedups(cases: list[dict]) -> Speedups | None:
    """The speedups of ``cases`` over the first of :data:`BASELINES` they timed; None when
    they timed none of them."""
    times: dict[tuple, dict[str, float]] = {}
    order: list[str] = []
    for c in cases:
        if c["outcome"] != "ok":
            continue
        p = _params(c)
        key = (c["matrix"], p.get("k", 0), p.get("layout", ""))
        times.setdefault(key, {})[c["backend"]] = statistics.median(
            c["measurement"]["samples_ms"])
        if c["backend"] not in order:
            order.append(c["backend"])
    baseline = next((b for b in BASELINES if b in order), None)
    if baseline is None:
        return None
    table = [{b: t[baseline] / v for b, v in t.items()} for t in times.values() if baseline in t]
    means = tuple((b, geomean([r[b] for r in table if b in r]), sum(b in r for r in table))
                  for b in order if b != baseline)
    return Speedups(baseline, len(table), means)
