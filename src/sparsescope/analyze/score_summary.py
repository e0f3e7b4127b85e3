"""What the scored cases of :mod:`sparsescope.analyze.score_runs` say, as records and text.

Errors are signed, ``e = (measured - predicted) / measured`` (above 0: the model is fast);
sizes are ``|e|``. Quantiles are nearest rank: the q-quantile of n values is the
``ceil(q n)``-th smallest. Ratios over matrices are combined by the geometric mean.

No summary asks a case's op by name: an op's cases are grouped by the same keys as any
other's, and a summary that holds only for some cases tests what they have (a prediction made
now, a chooser's pick, a backend's group complete).

- :func:`error_summaries`: per GPU and op, in all and per variant (``sell-u4-m6-h1`` of a
  variant label, else the backend; and ``auto: KERNEL`` for auto's cases by the kernel it ran),
  the cases, median and 90th-percentile |e| and median e.
- :func:`choice_regrets`: per choice (:func:`choices`: two or more fixed kernels of one matrix
  and parameters, predicted now), the measured cost of choosing by prediction alone:
  ``measured(fastest prediction) / fastest measured``.
- :func:`by_kind`: the median ``measured / predicted`` of each variant on each matrix kind
  (which structures a kernel family is mispredicted on).
- :func:`comparison`: against an earlier score of the same runs (another commit's model), per
  GPU and kernel family, median |e| and median e before and now on the cases both predicted.
- :func:`spmm_regrets` / :func:`spmm_trials`: ``spmm-cuda-auto`` over the faster of rowgroup
  and rowwarp, and what its trials kept.
- :func:`shortlist_regrets`: per choice, what auto's shortlist would have timed under these
  predictions (``backends.select_predicted.shortlist``: within ``TRIAL_MARGIN`` of the fastest,
  at most ``TRIAL_MAX``), the run's medians standing in for its trial: the regret of the
  shortlist's fastest against the run's fastest variant (0 when the shortlist holds it).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sparsescope.analyze.score_runs import MODEL_NOW, ScoredCase


def geomean(values: Iterable[float]) -> float:
    """exp(mean(log v)) of positive values (nan when there are none)."""
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs)) if logs else math.nan


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The q-quantile by nearest rank: the ceil(q n)-th smallest (q 0.9, n 2 -> the 2nd)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True)
class ErrorSummary:
    """The error of one group of cases."""

    gpu: str
    op: str
    group: str
    """``all``, a variant (SpMV), a backend or ``auto: KERNEL`` (SpMM)."""
    cases: int
    median_abs_pct: float
    p90_abs_pct: float
    median_signed_pct: float


@dataclass(frozen=True)
class ChoiceRegret:
    """Choosing the SpMV kernel of one matrix by prediction alone."""

    gpu: str
    matrix: str
    picked: str
    """The variant predicted fastest."""
    ratio: float
    """Its measured time / the fastest measured (1: it was the fastest)."""


@dataclass(frozen=True)
class ShortlistRegret:
    """What ``cuda-spmv-auto``'s shortlist would have timed on one matrix."""

    gpu: str
    matrix: str
    kept: str
    """The fastest measured of the shortlist (what auto's trial would keep)."""
    regret: float
    """``measured(kept) / fastest measured - 1``."""
    shortlisted: int


def _predicted(cases: Iterable[ScoredCase]) -> list[ScoredCase]:
    return [c for c in cases if c.error is not None]


def error_summaries(cases: Sequence[ScoredCase]) -> list[ErrorSummary]:
    """Per GPU and op: ``all``, then each group sorted by median signed error."""
    groups: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list))
    for c in _predicted(cases):
        g = groups[(c.gpu, c.op)]
        g["all"].append(c.error)
        g[c.variant].append(c.error)
        if c.backend == "spmm-cuda-auto" and c.selected:
            g[f"auto: {c.selected.removeprefix('spmm-cuda-')}"].append(c.error)
    out = []
    for (gpu, op), g in groups.items():
        order = ["all"] + sorted((k for k in g if k != "all"),
                                 key=lambda k: statistics.median(g[k]))
        for name in order:
            errs = g[name]
            out.append(ErrorSummary(gpu, op, name, len(errs),
                                    100 * statistics.median(abs(e) for e in errs),
                                    100 * nearest_rank([abs(e) for e in errs], 0.9),
                                    100 * statistics.median(errs)))
    return out


def choices(cases: Iterable[ScoredCase]) -> dict[tuple, list[ScoredCase]]:
    """The kernels a choice by today's model chooses among: per (GPU, op, matrix, parameters),
    the cases predicted now of fixed kernels (a chooser's case is a choice made already), where
    there are two or more."""
    by: dict[tuple, list[ScoredCase]] = defaultdict(list)
    for c in _predicted(cases):
        if c.basis == MODEL_NOW and not c.selected:
            by[(c.gpu, c.op, c.matrix, c.k, c.layout)].append(c)
    return {key: mine for key, mine in by.items() if len(mine) > 1}


def choice_regrets(cases: Sequence[ScoredCase]) -> list[ChoiceRegret]:
    """Per choice (:func:`choices`): the fastest prediction's measured time over the fastest
    measured."""
    out = []
    for (gpu, _, matrix, _, _), mine in choices(cases).items():
        best = min(c.measured_ms for c in mine)
        pick = min(mine, key=lambda c: c.predicted_ms)
        out.append(ChoiceRegret(gpu, matrix, pick.backend, pick.measured_ms / best))
    return out


def regret_line(ratios: Sequence[float]) -> str:
    """Geomean and largest of the ratios over matrices, and how many exceed 5 %."""
    return (f"{100 * (geomean(ratios) - 1):+.1f} % geomean over the fastest, largest "
            f"{100 * (max(ratios) - 1):+.1f} %, {sum(r > 1.05 for r in ratios)} of "
            f"{len(ratios)} matrices above 5 %")


def summary_text(cases: Sequence[ScoredCase]) -> str:
    """Per GPU and op (named by its registry title): the error of all cases, each group's
    median signed and absolute error, and each choice's cost of choosing by prediction alone
    (:func:`choice_regrets`: the ops whose fixed kernels were predicted now)."""
    from sparsescope.analyze.score_runs import op_title

    lines = []
    summaries = error_summaries(cases)
    for gpu, op in dict.fromkeys((s.gpu, s.op) for s in summaries):
        mine = [s for s in summaries if (s.gpu, s.op) == (gpu, op)]
        head = mine[0]
        lines.append(f"{gpu} {op_title(op)}: {head.cases} cases, median |error| "
                     f"{head.median_abs_pct:.1f} %, 90th percentile {head.p90_abs_pct:.1f} % "
                     "(nearest rank)")
        for s in mine[1:]:
            lines.append(f"  {s.group:26s} median signed error {s.median_signed_pct:+6.1f} %, "
                         f"median |error| {s.median_abs_pct:.1f} % over {s.cases}")
        ratios = []
        for r in choice_regrets([c for c in cases if (c.gpu, c.op) == (gpu, op)]):
            ratios.append(r.ratio)
            lines.append(f"  {r.matrix}: the fastest prediction ({r.picked}) measured "
                         f"{100 * (r.ratio - 1):+.1f} % over the fastest")
        if ratios:
            lines.append(f"  choosing by prediction alone: {regret_line(ratios)}")
    return "\n".join(lines)


def _errors(cases: Iterable[ScoredCase]) -> dict[tuple, float]:
    """(gpu, matrix, backend, k, layout, timing mode) -> signed error."""
    return {(c.gpu, c.matrix, c.backend, c.k, c.layout, c.timing_mode): c.error
            for c in _predicted(cases)}


def _pct(errors: list[float], f) -> float:
    return 100 * statistics.median(f(e) for e in errors)


def comparison(cases: Sequence[ScoredCase], baseline: Sequence[ScoredCase]) -> str:
    """Markdown table: per GPU and kernel family (``sell`` of ``...[sell-u4-m6-h1]``, or the
    backend; ``all``) the cases both predicted, and the median |error| and median signed
    error before and now."""
    old, new = _errors(baseline), _errors(cases)
    groups: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for key in (k for k in new if k in old):
        family = key[2].partition("[")[2].rstrip("]").split("-")[0] or key[2]
        groups[(key[0], "all")].append(key)
        groups[(key[0], family)].append(key)
    lines = ["| GPU | kernels | cases | median abs error before | now | median signed before "
             "| now |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for (gpu, family), keys in sorted(groups.items(), key=lambda kv: (
            kv[0][0], kv[0][1] != "all", kv[0][1])):
        before, now = [old[k] for k in keys], [new[k] for k in keys]
        lines.append(f"| {gpu} | {family} | {len(keys)} | {_pct(before, abs):.1f} % | "
                     f"{_pct(now, abs):.1f} % | {_pct(before, float):+.1f} % | "
                     f"{_pct(now, float):+.1f} % |")
    return "\n".join(lines)


def by_kind(cases: Sequence[ScoredCase]) -> str:
    """Markdown table: per GPU and variant, the median of measured / predicted over the cases
    of each matrix kind; above 1 the model is fast."""
    ratios: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for c in _predicted(cases):
        ratios[(c.gpu, c.variant, c.kind)].append(c.measured_ms / c.predicted_ms)
    kinds = sorted({k[2] for k in ratios})
    lines = ["| GPU | variant | " + " | ".join(kinds) + " |",
             "| --- | --- |" + " ---: |" * len(kinds)]
    for gpu, variant in sorted({k[:2] for k in ratios}):
        cells = [f"{statistics.median(ratios[(gpu, variant, k)]):.2f}"
                 if (gpu, variant, k) in ratios else "" for k in kinds]
        lines.append(f"| {gpu} | {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- SpMM: auto against its fixed kernels --------------------------------------------------------
SPMM_FIXED = ("spmm-cuda-rowgroup", "spmm-cuda-rowwarp")


def spmm_regrets(cases: Sequence[ScoredCase]) -> list[dict]:
    """Per (GPU, matrix, k, layout) with auto and both fixed kernels: auto's regret over the
    faster fixed kernel (``auto / min - 1``, %), and whether auto's fastest prediction named
    the faster one."""
    by: dict[tuple, dict[str, ScoredCase]] = defaultdict(dict)
    for c in cases:   # the cases of other backends never complete a group
        by[(c.gpu, c.matrix, c.k, c.layout)][c.backend] = c
    out = []
    for key, mine in sorted(by.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if not all(b in mine for b in (*SPMM_FIXED, "spmm-cuda-auto")):
            continue
        fixed = {b: mine[b].measured_ms for b in SPMM_FIXED}
        faster = min(fixed, key=fixed.get)
        auto = mine["spmm-cuda-auto"]
        table = json.loads(auto.table or "[]")
        predicted = [t for t in table if t.get("predicted_ms")]
        first = min(predicted, key=lambda t: t["predicted_ms"])["backend"] if predicted else ""
        out.append({"gpu": key[0], "matrix": key[1], "k": key[2], "layout": key[3],
                    "faster": faster, "auto_selected": auto.selected,
                    "regret_pct": 100 * (auto.measured_ms / fixed[faster] - 1),
                    "prediction_right": first == faster if first else None})
    return out


def spmm_trials(cases: Sequence[ScoredCase]) -> list[dict]:
    """Per auto case whose trial timed two or more candidates: the candidate the fastest
    prediction named, the fastest timed (the one auto kept), and its speedup over the default
    rowgroup when both were timed."""
    out = []
    for c in cases:
        if c.backend != "spmm-cuda-auto" or not c.table:
            continue
        table = json.loads(c.table)
        timed = {t["label"]: t["trial_ms"] for t in table if t.get("trial_ms")}
        if len(timed) < 2:
            continue
        predicted = {t["label"]: t["predicted_ms"] for t in table if t["label"] in timed}
        kept = min(timed, key=timed.get)
        out.append({"gpu": c.gpu, "matrix": c.matrix, "k": c.k, "layout": c.layout,
                    "predicted_first": min(predicted, key=predicted.get), "kept": kept,
                    "over_default": (timed["spmm-cuda-rowgroup"] / timed[kept]
                                     if "spmm-cuda-rowgroup" in timed else None)})
    return out


def spmm_text(regrets: Sequence[dict], trials: Sequence[dict]) -> str:
    """Auto's regret over its fixed kernels, and what its trials kept."""
    lines = []
    if regrets:
        regs = [r["regret_pct"] for r in regrets]
        right = [r["prediction_right"] for r in regrets if r["prediction_right"] is not None]
        geo = 100 * (geomean(1 + g / 100 for g in regs) - 1)
        lines += [f"spmm-cuda-auto over the faster of rowgroup and rowwarp, {len(regs)} "
                  f"(matrix, k, layout): geomean regret {geo:+.1f} %, largest "
                  f"{max(regs):+.1f} %; the fastest prediction named the faster kernel in "
                  f"{sum(right)} of {len(right)}"]
        for r in sorted(regrets, key=lambda r: -r["regret_pct"])[:8]:
            lines.append(f"  {r['matrix']:11s} k={r['k']:<4d} {r['layout']} regret "
                         f"{r['regret_pct']:+6.1f} % (auto ran {r['auto_selected']}; faster "
                         f"{r['faster']})")
    if trials:
        right = sum(t["predicted_first"] == t["kept"] for t in trials)
        kept: dict[str, int] = defaultdict(int)
        for t in trials:
            kept[t["kept"]] += 1
        gains = [t["over_default"] for t in trials if t["over_default"]]
        lines += [f"auto's trials ({len(trials)} cases timing 2 or more candidates): the "
                  f"fastest prediction was the fastest timed in {right}; kept "
                  + ", ".join(f"{k} {v}" for k, v in sorted(kept.items()))]
        if gains:
            lines.append(f"  the kept candidate over the default rowgroup where both were "
                         f"timed ({len(gains)}): geomean {geomean(gains):.3f}x, largest "
                         f"{max(gains):.2f}x")
    return "\n".join(lines)


# -- SpMV: auto's shortlist under these predictions ---------------------------------------------
def shortlist_regrets(cases: Sequence[ScoredCase]) -> list[ShortlistRegret]:
    """Per choice (:func:`choices`): the shortlist an auto backend would time under these
    predictions (``select_predicted.shortlist``, as ``cuda-spmv-auto`` and ``spmm-cuda-auto``
    shortlist), and the regret of its fastest measured against the fastest measured of all.
    Meaningful on runs whose kernels are auto's candidates (``--variants auto-candidates``)."""
    from sparsescope.backends.select_predicted import Candidate, CandidatePrediction, shortlist

    out = []
    for (gpu, _, matrix, _, _), mine in choices(cases).items():
        preds = [CandidatePrediction(Candidate(c.backend.partition("[")[0], {"variant": i}),
                                     c.predicted_ms) for i, c in enumerate(mine)]
        short = shortlist(preds)
        kept = min((mine[p.candidate.params["variant"]] for p in short),
                   key=lambda c: c.measured_ms)
        best = min(c.measured_ms for c in mine)
        out.append(ShortlistRegret(gpu, matrix, kept.backend, kept.measured_ms / best - 1.0,
                                   len(short)))
    return out


def shortlist_text(label: str, regrets: Sequence[ShortlistRegret]) -> str:
    by_gpu: dict[str, list[float]] = defaultdict(list)
    for r in regrets:
        by_gpu[r.gpu].append(r.regret)
    return "\n".join(
        f"{label} {gpu}: shortlist regret {100 * (geomean(1.0 + v for v in values) - 1):+.1f} "
        f"% geomean, largest {100 * max(values):+.1f} %, fastest not shortlisted on "
        f"{sum(v > 0 for v in values)} of {len(values)} matrices"
        for gpu, values in sorted(by_gpu.items()))


def shortlist_changes(now: Sequence[ShortlistRegret],
                      before: Sequence[ShortlistRegret]) -> str:
    """Markdown: the matrices whose shortlist regret differs between two models."""
    old = {(r.gpu, r.matrix): r for r in before}
    lines = ["| GPU | matrix | regret before | now | picked before | now |",
             "| --- | --- | ---: | ---: | --- | --- |"]
    for r in sorted(now, key=lambda r: (r.gpu, r.matrix)):
        b = old.get((r.gpu, r.matrix))
        if b is not None and abs(r.regret - b.regret) > 1e-9:
            lines.append(f"| {r.gpu} | {r.matrix} | {100 * b.regret:+.1f} % | "
                         f"{100 * r.regret:+.1f} % | {b.kept} | {r.kept} |")
    return "\n".join(lines)
