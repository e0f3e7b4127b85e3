"""Score the predictions: the roadmap of version A predicted a speedup for the change to version
B; the measured times of A and B say what it was.

Which prediction: the roadmap items of A whose rules B declares it addresses (``addresses`` in
B's analysis, or given explicitly), combined as :func:`sparsescope.analyze.roadmap.combine` does
(largest per group, product across groups, capped by A's floor). No matching item: the model
predicted 1.0 (no gain) for that change, and that prediction is scored too.

History: table ``analyze_scores`` in the results store's SQLite file
(:attr:`sparsescope.results.store.ResultsStore.path`), one row per comparison; the mean
absolute error over the rows is ``MAE = mean |predicted - measured|`` (speedup units).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sparsescope.analyze.records import AnalysisResult, Score, from_jsonable, to_jsonable
from sparsescope.analyze.roadmap import combine
from sparsescope.errors import ResultsFormatError, UsageError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS analyze_scores (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, workload TEXT NOT NULL,
    before_label TEXT NOT NULL, after_label TEXT NOT NULL, device TEXT NOT NULL,
    applied TEXT NOT NULL, predicted_speedup REAL NOT NULL, measured_speedup REAL NOT NULL,
    abs_error REAL NOT NULL, json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS analyze_scores_by_workload ON analyze_scores(workload);
"""


def predicted_for(before: AnalysisResult, applied: Sequence[str]) -> tuple[float, str]:
    """Prediction of ``before``'s roadmap for a change applying ``applied`` rules, and which
    items made it."""
    items = [it for it in before.roadmap if it.rule in set(applied)]
    if not items:
        listed = ", ".join(sorted({it.rule for it in before.roadmap})) or "none"
        return 1.0, (f"no roadmap item for {', '.join(applied) or '(nothing)'} (the roadmap "
                     f"ranked: {listed}): the model predicted no gain")
    value = combine(items, before.evidence.time_ms, before.evidence.floor_ms)
    basis = "; ".join(f"#{it.rank} {it.rule} on {it.kernel}: {it.predicted_speedup:.3f}x "
                      f"({it.model})" for it in items)
    return value, basis


def compare(before: AnalysisResult, after: AnalysisResult,
            applied: Sequence[str] | None = None) -> Score:
    """Predicted (from ``before``'s roadmap) against measured speedup of ``before -> after``."""
    t0, t1 = before.evidence.time_ms, after.evidence.time_ms
    if not t0 or not t1:
        which = "before" if not t0 else "after"
        raise UsageError(f"the {which} analysis has no measured time; --compare needs both")
    if before.workload != after.workload:
        raise UsageError(f"different workloads: {before.workload!r} and {after.workload!r}")
    rules = tuple(applied) if applied else (after.addresses or
                                            ((before.roadmap[0].rule,) if before.roadmap else ()))
    predicted, basis = predicted_for(before, rules)
    measured = t0 / t1
    return Score(before.workload, before.version, after.version, rules, predicted, measured,
                 abs(predicted - measured), 100.0 * (predicted - measured) / measured, t0, t1,
                 after.evidence.device.name, basis,
                 datetime.now(UTC).isoformat(timespec="seconds"))


def mean_absolute_error(scores: Sequence[Score]) -> float | None:
    """``mean |predicted - measured|`` over ``scores``; None for none."""
    return sum(s.abs_error for s in scores) / len(scores) if scores else None


def compare_series(results: Sequence[AnalysisResult]) -> tuple[Score, ...]:
    """Scores of every consecutive step ``results[i] -> results[i + 1]``."""
    if len(results) < 2:
        raise UsageError("--compare needs at least two analyses (BEFORE AFTER ...)")
    return tuple(compare(a, b) for a, b in zip(results, results[1:], strict=False))


#: What :func:`evidence_changes` compares: label, how to read it from an evidence, and whether
#: it sums over the kernels (counts) or is the dominant kernel's (rates and ratios).
CHANGE_METRICS = (
    ("kernel time (ms, profiled)", "time_ms", True),
    ("warp instructions", "warp_instructions", True),
    ("DRAM bytes", "dram_bytes", True),
    ("L2 sectors (global)", "l2_sectors", True),
    ("CPI", "cpi", False),
    ("long scoreboard (cycles/inst)", "long_scoreboard", False),
    ("issue active (%)", "issue_active_pct", False),
    ("achieved occupancy (%)", "achieved_occupancy_pct", False),
)


def _kernel_value(ke, key: str) -> float | None:
    p = ke.profile
    if key == "time_ms":
        return ke.time_ms
    if p is None:
        return None
    if key == "warp_instructions":
        per_launch = sum(i.executed for i in p.instructions) if p.instructions else None
        return per_launch * ke.launches if per_launch else None
    if key == "dram_bytes":
        return p.dram_bytes * ke.launches if p.dram_bytes is not None else None
    if key == "l2_sectors":
        return (p.l2_theoretical_sectors * ke.launches
                if p.l2_theoretical_sectors is not None else None)
    if key == "long_scoreboard":
        return p.stalls.get("long_scoreboard")
    return getattr(p, key)


def evidence_value(result: AnalysisResult, key: str, summed: bool) -> float | None:
    """One :data:`CHANGE_METRICS` figure of an analysis: summed over its kernels (None when any
    kernel lacks it), or its dominant (largest time share) kernel's."""
    kernels = result.evidence.kernels
    if not kernels:
        return None
    if not summed:
        return _kernel_value(max(kernels, key=lambda k: k.time_share), key)
    values = [_kernel_value(k, key) for k in kernels]
    return None if any(v is None for v in values) else float(sum(values))


def evidence_changes(before: AnalysisResult, after: AnalysisResult
                     ) -> tuple[tuple[str, float | None, float | None], ...]:
    """What the measurements say moved between two versions, to read a prediction's miss
    against: ``(label, before, after)`` for each of :data:`CHANGE_METRICS` (per workload call:
    counts x launches)."""
    return tuple((label, evidence_value(before, key, summed), evidence_value(after, key, summed))
                 for label, key, summed in CHANGE_METRICS)


@dataclass(frozen=True)
class StoredScore:
    id: int
    score: Score


class ScoreHistory:
    """The ``analyze_scores`` table of a results-store SQLite file."""

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            from sparsescope.results.store import ResultsStore

            path = ResultsStore().path
        self.path = Path(path)

    @contextmanager
    def _connect(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path)
        try:
            con.executescript(_SCHEMA)
            with con:
                yield con
        except sqlite3.DatabaseError as exc:
            raise ResultsFormatError(f"{self.path}: not a usable results store ({exc})") from None
        finally:
            con.close()

    def record(self, score: Score) -> int:
        """Store one score; returns its row id."""
        with self._connect() as con:
            cur = con.execute(
                "INSERT INTO analyze_scores (created, workload, before_label, after_label, "
                "device, applied, predicted_speedup, measured_speedup, abs_error, json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (score.created_utc, score.workload, score.before, score.after, score.device,
                 ",".join(score.applied), score.predicted_speedup, score.measured_speedup,
                 score.abs_error, json.dumps(to_jsonable(score))))
            return int(cur.lastrowid)

    def scores(self, workload: str | None = None) -> list[StoredScore]:
        """Stored scores, oldest first, optionally of one workload."""
        sql = "SELECT id, json FROM analyze_scores"
        params: tuple = ()
        if workload is not None:
            sql += " WHERE workload = ?"
            params = (workload,)
        with self._connect() as con:
            rows = con.execute(sql + " ORDER BY id", params).fetchall()
        return [StoredScore(i, from_jsonable(Score, json.loads(j), f"analyze_scores[{i}]"))
                for i, j in rows]

    def mean_absolute_error(self, workload: str | None = None) -> float | None:
        return mean_absolute_error([s.score for s in self.scores(workload)])
