"""A kernel-selection run scored: ``cuda-spmv-auto`` (and ``-auto-rules``) against the fastest
own kernel variant of the same run, and against the best library configuration.

Per matrix, every time is the median of the case's samples::

    regret = auto / fastest own - 1        auto speedup = best library / auto

(best library: the fastest sparse library case, ``registry.is_sparse_library``; a dense
baseline is never one.)

and over the matrices the geomean of each ratio. "The fastest prediction alone" is the time of
the candidate auto's ``selection_table`` predicted fastest, where the run timed that variant.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass

AUTO, RULES = "cuda-spmv-auto", "cuda-spmv-auto-rules"


@dataclass(frozen=True)
class SelectionRow:
    """One matrix of a selection run; times in microseconds."""

    matrix: str
    best_own: str
    best_own_us: float
    auto_us: float
    auto_choice: str
    rules_us: float | None
    predicted_first_us: float | None
    best_lib: str
    best_lib_us: float


@dataclass(frozen=True)
class SelectionSummary:
    """The headline numbers of a selection run."""

    rows: tuple[SelectionRow, ...]
    regret_auto: float
    """Geomean of auto / fastest own over the matrices (1.009 is +0.9 %)."""
    regret_rules: float | None
    regret_predicted_first: float | None
    predicted_first_matrices: int
    """Matrices where the fastest-predicted candidate was timed."""
    auto_over_lib: float
    """Geomean of best library / auto."""
    lowest_over_lib: float
    lowest_matrix: str
    slower_than_lib: int
    """Matrices where auto is slower than the best library configuration."""
    largest_regret: float
    """The largest auto / fastest own over the matrices, and its matrix."""
    largest_matrix: str
    rules_largest: float | None
    """The largest auto-rules / fastest own, and its matrix (empty when it did not run)."""
    rules_largest_matrix: str


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def _median_us(case: dict) -> float:
    return statistics.median(case["measurement"]["samples_ms"]) * 1e3


def _variant_label(backend: str, params: dict) -> str | None:
    """The run's label of the kernel variant that is this candidate (same backend and options,
    the kernels' defaults filled in)."""
    from sparsescope.backends.spmv_auto import CHOICES
    from sparsescope.backends.variants import SPMV_OWN

    cls = CHOICES.get(backend)
    if cls is None:
        return None
    wanted = {**cls.defaults, **params}
    for label, (name, options) in SPMV_OWN.items():
        if name == backend and {**cls.defaults, **options} == wanted:
            return f"{name}[{label}]"
    return None


def selection_rows(cases: list[dict]) -> tuple[SelectionRow, ...]:
    """One row per matrix (and timing mode) that auto ran on, in the run's order: its SpMV
    cases only (auto is the SpMV chooser; an SpMM case of the same matrix in the folder is
    another op's), a matrix timed in the throughput mode named ``MATRIX (throughput)``."""
    from sparsescope.registry import is_own, is_sparse_library

    by: dict[str, dict[str, dict]] = {}
    for c in cases:
        if c["outcome"] == "ok" and c.get("op", "spmv") == "spmv":
            mode = c.get("timing_mode") or "latency"
            key = c["matrix"] if mode == "latency" else f"{c['matrix']} ({mode})"
            by.setdefault(key, {})[c["backend"]] = c
    rows = []
    for matrix, found in by.items():
        if AUTO not in found:
            continue
        times = {b: _median_us(c) for b, c in found.items()}
        own = {b: t for b, t in times.items() if is_own(b) and b not in (AUTO, RULES)}
        lib = {b: t for b, t in times.items() if is_sparse_library(b)}
        if not own or not lib:
            continue
        notes = found[AUTO].get("notes") or {}
        table = json.loads(notes.get("selection_table", "[]") or "[]")
        done = [r for r in table if r.get("predicted_ms") is not None]
        first = min(done, key=lambda r: r["predicted_ms"]) if done else None
        label = _variant_label(first["backend"], first.get("params") or {}) if first else None
        best_own, best_lib = min(own, key=own.get), min(lib, key=lib.get)
        rows.append(SelectionRow(matrix, best_own, own[best_own], times[AUTO],
                                 notes.get("selected", ""), times.get(RULES),
                                 times.get(label) if label else None, best_lib, lib[best_lib]))
    return tuple(rows)


def summarise(cases: list[dict]) -> SelectionSummary | None:
    """The selection headline of ``cases`` (one or more parts of one run), or None when no
    matrix has auto, an own kernel and a library timed."""
    rows = selection_rows(cases)
    if not rows:
        return None
    rules = [r.rules_us / r.best_own_us for r in rows if r.rules_us]
    first = [r.predicted_first_us / r.best_own_us for r in rows if r.predicted_first_us]
    over = [r.best_lib_us / r.auto_us for r in rows]
    lowest = min(rows, key=lambda r: r.best_lib_us / r.auto_us)
    worst = max(rows, key=lambda r: r.auto_us / r.best_own_us)
    ran = [r for r in rows if r.rules_us]
    rules_worst = max(ran, key=lambda r: r.rules_us / r.best_own_us) if ran else None
    return SelectionSummary(rows, geomean([r.auto_us / r.best_own_us for r in rows]),
                            geomean(rules) if rules else None,
                            geomean(first) if first else None, len(first), geomean(over),
                            min(over), lowest.matrix, sum(x < 1 for x in over),
                            worst.auto_us / worst.best_own_us, worst.matrix,
                            rules_worst.rules_us / rules_worst.best_own_us
                            if rules_worst else None,
                            rules_worst.matrix if rules_worst else "")
