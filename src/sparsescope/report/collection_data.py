"""The numbers of a sweep's collection report, computed from a :class:`RunSet` (no rendering).

A *group* is one (matrix, op, op parameters) triple: one row of the main table per group, so
one row per matrix for SpMV, which takes no parameter. In a group:

* best library: the fastest timed sparse library backend (``registry.is_sparse_library``: not
  ours, not a dense baseline; a dense baseline is set against the sparse ones in the dense
  break-even, ``report.collection_break_even``, and nowhere else): the wrappers and every
  planned cuSPARSE variant (``nvmath-cusparse-i32[alg=...]``) alike, named with the cuSPARSE
  algorithm that ran (:func:`backend_label`);
* best own: the fastest timed own kernel other than the choosers ``cuda-spmv-auto`` and
  ``cuda-spmv-auto-rules`` (the kernels they pick among); auto itself only when it is the one
  own kernel timed;
* speedup = best library time / best own time (x); a backend's speedup = best library time /
  its time;
* auto's regret = (auto time - best own time) / best own time (%), negative when auto's run of
  a kernel came out faster than the fixed kernel's; its geomean is ``geomean(auto / own) - 1``.

Times are the measurements' configured statistic (median); only ``ok`` cases count: a failed
case's measurement is never shown as a time.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from sparsescope.registry import is_dense, is_own, is_sparse_library
from sparsescope.results.case_models import bandwidths, model_of
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet

AUTO = "cuda-spmv-auto"
#: Own backends that choose among the others: never the "best own" kernel they are scored by.
CHOOSERS = (AUTO, "cuda-spmv-auto-rules")
WORST_N = 20
_NUMBER = re.compile(r"[-+]?\d[\d.,]*(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class CaseLine:
    """One case as a matrix page lists it."""

    op: str
    params: str
    backend: str
    outcome: str
    time_ms: float | None
    pct_peak_own_bytes: float | None
    """% of the basis bandwidth by the bytes the backend declared for its own format (the op's
    byte model when it declared none)."""
    rel_err: float | None
    reason: str
    selected: str = ""
    """What ``cuda-spmv-auto`` chose (its ``notes["selected"]``)."""


@dataclass(frozen=True)
class GroupRow:
    """One row of the main table: a matrix (and op parameters) with its best times."""

    matrix: str
    page: str
    """File stem of the matrix page under ``matrices/``."""
    kind: str
    op: str
    params: str
    rows: int
    nnz: int
    nnz_per_row_mean: float
    library_backend: str | None
    library_ms: float | None
    own_backend: str | None
    own_ms: float | None
    speedup_x: float | None
    auto_ms: float | None
    auto_choice: str
    auto_regret_pct: float | None
    auto_picked_fastest: bool | None
    own_pct_peak: float | None
    """% of peak of the best own case by its own format's bytes."""
    times_ms: dict[str, float] = field(default_factory=dict, compare=False)
    """Every timed backend of the group -> its time."""

    def backend_speedup(self, backend: str) -> float | None:
        t = self.times_ms.get(backend)
        return self.library_ms / t if t and self.library_ms else None

    def to_json(self) -> dict:
        return {"matrix": self.matrix, "page_html": f"matrices/{self.page}.html",
                "page_md": f"matrices/{self.page}.md", "kind": self.kind, "op": self.op,
                "params": self.params, "rows": self.rows, "nnz": self.nnz,
                "nnz_per_row_mean": self.nnz_per_row_mean,
                "library_backend": self.library_backend, "library_ms": self.library_ms,
                "own_backend": self.own_backend, "own_ms": self.own_ms,
                "speedup_x": self.speedup_x, "auto_ms": self.auto_ms,
                "auto_choice": self.auto_choice, "auto_regret_pct": self.auto_regret_pct,
                "auto_picked_fastest": self.auto_picked_fastest,
                "own_pct_peak": self.own_pct_peak,
                "times_ms": dict(self.times_ms)}


@dataclass(frozen=True)
class Collection:
    """Everything the collection report shows."""

    summary: dict
    rows: list[GroupRow]
    backends: list[str]
    """Timed sparse backends: libraries first, then ours, auto last (a dense baseline is in
    ``summary["dense_peers"]`` and the break-even only)."""
    quantiles: list[dict]
    """Per backend: its speedups over the best library (p10, p50, p90, geomean)."""
    auto: dict
    by_kind: list[dict]
    worst: list[GroupRow]
    worst_by: str
    """``speedup_x`` or ``own_pct_peak`` (when no group has both a library and an own time)."""
    not_ok: list[dict]
    reasons: list[dict]
    cases: dict[str, list[CaseLine]]
    """Matrix -> its cases, for its page."""
    matrices: dict[str, MatrixRecord]
    pages: dict[str, str]
    """Matrix -> page file stem."""

    @functools.cached_property
    def multi_op(self) -> bool:
        """Whether the rows hold more than one op or any op parameters (each matrix's page
        asks; worked out once: 2,000 pages of 2,000 rows were 4 million row visits)."""
        return any(r.params or r.op != self.rows[0].op for r in self.rows)


def geomean(values) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def quantile(values: list[float], q: float) -> float | None:
    """Linear-interpolation quantile (numpy's default), ``q`` in [0, 1]."""
    if not values:
        return None
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def page_names(names) -> dict[str, str]:
    """Matrix name -> a file stem of safe characters, unique even on a case-blind disk."""
    pages: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "matrix"
        candidate, n = stem, 1
        while candidate.lower() in used:
            n += 1
            candidate = f"{stem}-{n}"
        used.add(candidate.lower())
        pages[name] = candidate
    return pages


def _timed(case: CaseResult) -> bool:
    t = case.time_ms
    return case.outcome == "ok" and t is not None and math.isfinite(t) and t > 0


def _pct_peak(case: CaseResult, matrix: MatrixRecord | None, bw: tuple, l2: int) -> float | None:
    if matrix is None or not _timed(case):
        return None
    model = model_of(case, matrix, bw[0], bw[1], l2)
    pct = model.peak.pct_peak if model is not None else None
    return pct if pct is not None and math.isfinite(pct) else None


def _group_row(key: tuple, cases: list[CaseResult], matrix: MatrixRecord | None, page: str,
               pct: dict[int, float | None]) -> GroupRow:
    name, op, params = key
    timed = [c for c in cases if _timed(c)]
    times: dict[str, float] = {}
    for c in timed:  # one time per backend label: the fastest when a label repeats
        times[c.backend] = min(times.get(c.backend, math.inf), c.time_ms)
    library = [c for c in timed if is_sparse_library(c.backend)]
    own = [c for c in timed if is_own(c.backend) and c.backend not in CHOOSERS]
    auto = min((c for c in timed if c.backend == AUTO), key=lambda c: c.time_ms, default=None)
    best_lib = min(library, key=lambda c: c.time_ms, default=None)
    best_own = min(own, key=lambda c: c.time_ms, default=None) or auto
    regret = picked = None
    choice = auto.notes.get("selected", "") if auto is not None else ""
    if auto is not None and own:
        regret = 100.0 * (auto.time_ms - best_own.time_ms) / best_own.time_ms
        if choice:
            picked = choice in (best_own.backend, best_own.backend.split("[", 1)[0])
    st = matrix.stats if matrix is not None else None
    return GroupRow(
        matrix=name, page=page, kind=matrix.kind if matrix else "", op=op, params=params,
        rows=st.rows if st else 0, nnz=st.nnz if st else 0,
        nnz_per_row_mean=st.nnz_per_row_mean if st else 0.0,
        library_backend=backend_label(best_lib) if best_lib else None,
        library_ms=best_lib.time_ms if best_lib else None,
        own_backend=best_own.backend if best_own else None,
        own_ms=best_own.time_ms if best_own else None,
        speedup_x=best_lib.time_ms / best_own.time_ms if best_lib and best_own else None,
        auto_ms=auto.time_ms if auto else None, auto_choice=choice, auto_regret_pct=regret,
        auto_picked_fastest=picked, own_pct_peak=pct.get(id(best_own)) if best_own else None,
        times_ms=times)


def backend_label(case: CaseResult) -> str:
    """The case's backend, with the library algorithm it ran when it recorded one (the planned
    cuSPARSE backends' ``notes["algorithm"]``): ``nvmath-cusparse-i32[alg=2] (CSR_ALG2)``,
    ``nvmath-cusparse-i32 (ALG_DEFAULT)``; other backends as they are."""
    algorithm = case.notes.get("algorithm", "")
    if not algorithm:
        return case.backend
    short = algorithm.removeprefix("CUSPARSE_").split("_", 1)[-1]  # SPMV_CSR_ALG2 -> CSR_ALG2
    return f"{case.backend} ({short})"


def _quantiles(rows: list[GroupRow], backends: list[str]) -> list[dict]:
    out = []
    for b in backends:
        values = [s for r in rows if (s := r.backend_speedup(b)) is not None]
        if not values:
            continue
        out.append({"backend": b, "own": is_own(b), "matrices": len(values),
                    "p10_x": quantile(values, 0.1), "p50_x": quantile(values, 0.5),
                    "p90_x": quantile(values, 0.9), "geomean_x": geomean(values),
                    "at_least_library_matrices": sum(v >= 1.0 for v in values)})
    return out


def _by_kind(rows: list[GroupRow], backends: list[str]) -> list[dict]:
    out = []
    for kind in sorted({r.kind for r in rows}):
        members = [r for r in rows if r.kind == kind]
        out.append({"kind": kind, "matrices": len({r.matrix for r in members}),
                    "best_own_geomean_speedup_x": geomean(r.speedup_x for r in members),
                    "geomean_speedup_x_by_backend": {
                        b: geomean(r.backend_speedup(b) for r in members) for b in backends}})
    return out


def _auto(rows: list[GroupRow]) -> dict:
    with_regret = [r for r in rows if r.auto_regret_pct is not None]
    judged = [r for r in rows if r.auto_picked_fastest is not None]
    ratio = geomean(1.0 + r.auto_regret_pct / 100.0 for r in with_regret)
    choices: dict[str, list[GroupRow]] = {}
    for r in judged:
        choices.setdefault(r.auto_choice, []).append(r)
    return {"choices": [{"choice": k, "matrices": len(v),
                         "fastest_matrices": sum(bool(r.auto_picked_fastest) for r in v),
                         "geomean_regret_pct": 100.0 * (geomean(
                             1.0 + r.auto_regret_pct / 100.0 for r in v) - 1.0)}
                        for k, v in sorted(choices.items())],
            "matrices": len(with_regret),
            "geomean_regret_pct": 100.0 * (ratio - 1.0) if ratio is not None else None,
            "max_regret_pct": max((r.auto_regret_pct for r in with_regret), default=None),
            "picked_fastest_matrices": sum(bool(r.auto_picked_fastest) for r in judged),
            "choice_known_matrices": len(judged)}


def _reasons(not_ok: list[CaseResult]) -> list[dict]:
    """Counts by (outcome, reason with its numbers replaced by ``#``), most frequent first."""
    counts: Counter = Counter()
    example: dict[tuple, str] = {}
    for c in not_ok:
        key = (c.outcome, _NUMBER.sub("#", c.reason or "(no reason given)"))
        counts[key] += 1
        example.setdefault(key, c.reason)
    return [{"outcome": o, "reason": r, "cases": n, "example": example[(o, r)]}
            for (o, r), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def _backend_order(cases) -> list[str]:
    """The timed sparse backends: libraries first, then ours, auto last."""
    names = {c.backend for c in cases if _timed(c) and not is_dense(c.backend)}
    return sorted(names, key=lambda b: (is_own(b), b == AUTO, b))


def build_collection(runset: RunSet) -> Collection:
    """The collection report's numbers of ``runset``."""
    matrices = {m.name: m for m in runset.matrices}
    names = list(matrices) + sorted({c.matrix for c in runset.cases} - set(matrices))
    pages = page_names(names)
    bw, l2 = bandwidths(runset), runset.device.l2_bytes
    groups: dict[tuple, list[CaseResult]] = {}
    lines: dict[str, list[CaseLine]] = {n: [] for n in names}
    pct: dict[int, float | None] = {}
    for c in runset.cases:
        label = c.params.label()
        groups.setdefault((c.matrix, c.op, label), []).append(c)
        pct[id(c)] = _pct_peak(c, matrices.get(c.matrix), bw, l2)
        lines[c.matrix].append(CaseLine(
            c.op, label, c.backend, c.outcome, c.time_ms if _timed(c) else None, pct[id(c)],
            c.correctness.rel_err if c.correctness is not None else None, c.reason,
            c.notes.get("selected", "")))
    rows = [_group_row(k, cs, matrices.get(k[0]), pages[k[0]], pct)
            for k, cs in groups.items()]
    order = {n: i for i, n in enumerate(names)}
    rows.sort(key=lambda r: (order[r.matrix], r.op, r.params))
    backends = _backend_order(runset.cases)
    with_speedup = [r for r in rows if r.speedup_x is not None]
    if with_speedup:
        worst_by = "speedup_x"
        worst = sorted(with_speedup, key=lambda r: (r.speedup_x, r.matrix))[:WORST_N]
    else:
        worst_by = "own_pct_peak"
        worst = sorted((r for r in rows if r.own_pct_peak is not None),
                       key=lambda r: (r.own_pct_peak, r.matrix))[:WORST_N]
    not_ok = [c for c in runset.cases if c.outcome != "ok"]
    outcomes = Counter(c.outcome for c in runset.cases)
    auto = _auto(rows)
    summary = {
        "run_id": runset.run_id, "suite": runset.suite, "device": runset.device.vendor_name
        or runset.provenance.device, "device_kind": runset.device.kind,
        "matrices": len(names), "groups": len(rows), "cases": len(runset.cases),
        "ok": outcomes.get("ok", 0), "skipped": outcomes.get("skipped", 0),
        "failed": outcomes.get("failed", 0), "ops": sorted({c.op for c in runset.cases}),
        "library_backends": [b for b in backends if is_sparse_library(b)],
        "own_backends": [b for b in backends if is_own(b)],
        "dense_peers": sorted({c.backend for c in runset.cases
                               if _timed(c) and is_dense(c.backend)}),
        "best_own_geomean_speedup_x": geomean(r.speedup_x for r in rows),
        "own_at_least_library_matrices": sum(r.speedup_x >= 1.0 for r in with_speedup),
        "compared_matrices": len(with_speedup),
        "auto_geomean_regret_pct": auto["geomean_regret_pct"],
        "auto_picked_fastest_matrices": auto["picked_fastest_matrices"],
        "auto_choice_known_matrices": auto["choice_known_matrices"]}
    not_ok_rows = [{"matrix": c.matrix, "page_html": f"matrices/{pages[c.matrix]}.html",
                    "op": c.op, "params": c.params.label(), "backend": c.backend,
                    "outcome": c.outcome, "reason": c.reason} for c in not_ok]
    return Collection(summary, rows, backends, _quantiles(rows, backends), auto,
                      _by_kind(rows, backends), worst, worst_by, not_ok_rows,
                      _reasons(not_ok), lines, matrices, pages)
