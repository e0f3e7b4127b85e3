#!/usr/bin/env python3
"""Score the SpMM time model (``model.spmm_predict``) and ``spmm-cuda-auto``'s choice on a run's
own SpMM cases, from the predictions the run stored with each case.

    python scripts/spmm_model_score.py RESULTS [--json OUT.json]

For every own-kernel case (``spmm-cuda-rowgroup``, ``spmm-cuda-rowwarp``, ``spmm-cuda-blocktc``,
``spmm-cuda-auto``) with a prediction: its signed error ``(measured - predicted) / measured``;
per backend, per kernel auto ran (``auto: blocktc``) and in all, the median |error| and the
90th percentile (nearest rank). For every (matrix, k, layout) where auto,
rowgroup and rowwarp all ran: auto's regret over the faster fixed kernel (auto / min - 1), and
whether the fastest prediction of auto's table was the faster kernel. For every auto case whose
trial timed several candidates: whether the fastest prediction was the fastest timed, which
candidate auto kept, and its speedup over the default rowgroup.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.results.io import read_runset  # noqa: E402

OWN = ("spmm-cuda-rowgroup", "spmm-cuda-rowwarp", "spmm-cuda-auto")
#: Every own kernel whose predictions are scored (OWN, and the block tensor-core kernel, whose
#: model is ``model.blocktc_predict``); auto's regret is over OWN's two fixed kernels.
SCORED = (*OWN, "spmm-cuda-blocktc")


def nearest_rank(values: list[float], q: float) -> float:
    """The q-quantile by nearest rank: the ceil(q n)-th smallest (q 0.9, n 2 -> the 2nd)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def case_rows(cases) -> list[dict]:
    """One row per own-kernel case that ran: measured median, predicted, signed error %."""
    rows = []
    for c in cases:
        if (c.op != "spmm" or c.backend not in SCORED or c.outcome != "ok"
                or c.measurement is None):
            continue
        p = c.prediction
        measured = statistics.median(c.measurement.samples_ms)
        predicted = p.predicted_ms if p is not None else None
        rows.append({"matrix": c.matrix, "k": c.params.k, "layout": c.params.layout,
                     "backend": c.backend, "selected": c.notes.get("selected", ""),
                     "table": c.notes.get("selection_table", ""),
                     "measured_ms": measured, "predicted_ms": predicted,
                     "limiter": p.limiter if p is not None else "",
                     "error_pct": (100 * (measured - predicted) / measured
                                   if predicted else None)})
    return rows


def error_summary(rows: list[dict]) -> dict[str, dict]:
    """backend (and "all") -> cases, median |error| %, 90th percentile |error| %, median signed
    error % over the rows with a prediction."""
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["error_pct"] is not None:
            groups[r["backend"]].append(r["error_pct"])
            groups["all"].append(r["error_pct"])
            if r["backend"] == "spmm-cuda-auto" and r.get("selected"):
                # auto's cases by the kernel it ran: each model's error where it was chosen
                groups[f"auto: {r['selected'].removeprefix('spmm-cuda-')}"].append(
                    r["error_pct"])
    return {name: {"cases": len(errs),
                   "median_abs_pct": statistics.median(abs(e) for e in errs),
                   "p90_abs_pct": nearest_rank([abs(e) for e in errs], 0.9),
                   "median_signed_pct": statistics.median(errs)}
            for name, errs in groups.items()}


def regrets(rows: list[dict]) -> list[dict]:
    """Per (matrix, k, layout) with auto and both fixed kernels: auto's regret over the faster
    fixed kernel, and whether auto's fastest prediction named the faster one."""
    by: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        by[(r["matrix"], r["k"], r["layout"])][r["backend"]] = r
    out = []
    for key, cases in sorted(by.items()):
        if not all(b in cases for b in OWN):
            continue
        fixed = {b: cases[b]["measured_ms"] for b in OWN[:2]}
        faster = min(fixed, key=fixed.get)
        table = json.loads(cases["spmm-cuda-auto"]["table"] or "[]")
        predicted = [t for t in table if t.get("predicted_ms")]
        first = min(predicted, key=lambda t: t["predicted_ms"])["backend"] if predicted else ""
        out.append({"matrix": key[0], "k": key[1], "layout": key[2], "faster": faster,
                    "auto_selected": cases["spmm-cuda-auto"]["selected"],
                    "regret_pct": 100 * (cases["spmm-cuda-auto"]["measured_ms"]
                                         / fixed[faster] - 1),
                    "prediction_right": first == faster if first else None})
    return out


def trials(rows: list[dict]) -> list[dict]:
    """Per auto case whose trial timed two or more candidates: the candidate the fastest
    prediction named, the fastest timed (the one auto ran), and that one's speedup over the
    default rowgroup when both were timed."""
    out = []
    for r in rows:
        if r["backend"] != "spmm-cuda-auto" or not r["table"]:
            continue
        table = json.loads(r["table"])
        timed = {t["label"]: t["trial_ms"] for t in table if t.get("trial_ms")}
        if len(timed) < 2:
            continue
        predicted = {t["label"]: t["predicted_ms"] for t in table if t["label"] in timed}
        kept = min(timed, key=timed.get)
        out.append({"matrix": r["matrix"], "k": r["k"], "layout": r["layout"],
                    "predicted_first": min(predicted, key=predicted.get), "kept": kept,
                    "over_default": (timed["spmm-cuda-rowgroup"] / timed[kept]
                                     if "spmm-cuda-rowgroup" in timed else None)})
    return out


def report(rows: list[dict], regret_rows: list[dict]) -> str:
    lines = ["SpMM model error, (measured - predicted) / measured:",
             f"{'backend':22s} {'cases':>5s} {'median |err|':>12s} {'p90 |err|':>9s} "
             f"{'median signed':>13s}"]
    for name, s in sorted(error_summary(rows).items()):
        lines.append(f"{name:22s} {s['cases']:5d} {s['median_abs_pct']:11.1f}% "
                     f"{s['p90_abs_pct']:8.1f}% {s['median_signed_pct']:+12.1f}%")
    if regret_rows:
        regs = [r["regret_pct"] for r in regret_rows]
        right = [r["prediction_right"] for r in regret_rows if r["prediction_right"] is not None]
        geo = 100 * (math.exp(statistics.fmean(math.log1p(g / 100) for g in regs)) - 1)
        lines += ["", f"spmm-cuda-auto over the faster of rowgroup and rowwarp, "
                      f"{len(regs)} (matrix, k, layout): geomean regret {geo:+.1f} %, largest "
                      f"{max(regs):+.1f} %; the fastest prediction named the faster kernel in "
                      f"{sum(right)} of {len(right)}"]
        for r in sorted(regret_rows, key=lambda r: -r["regret_pct"])[:8]:
            lines.append(f"  {r['matrix']:11s} k={r['k']:<4d} {r['layout']} regret "
                         f"{r['regret_pct']:+6.1f} % (auto ran {r['auto_selected']}; faster "
                         f"{r['faster']})")
    trial_rows = trials(rows)
    if trial_rows:
        right = sum(t["predicted_first"] == t["kept"] for t in trial_rows)
        kept: dict[str, int] = defaultdict(int)
        for t in trial_rows:
            kept[t["kept"]] += 1
        gains = [t["over_default"] for t in trial_rows if t["over_default"]]
        lines += ["", f"auto's trials ({len(trial_rows)} cases timing 2 or more candidates): "
                      f"the fastest prediction was the fastest timed in {right}; kept "
                      + ", ".join(f"{k} {v}" for k, v in sorted(kept.items()))]
        if gains:
            geo = math.exp(statistics.fmean(math.log(g) for g in gains))
            lines.append(f"  the kept candidate over the default rowgroup where both were "
                         f"timed ({len(gains)}): geomean {geo:.3f}x, largest {max(gains):.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--json", type=Path, help="write the rows and summaries here")
    args = ap.parse_args(argv)
    rows = case_rows(read_runset(args.results).cases)
    regret_rows = regrets(rows)
    print(report(rows, regret_rows))
    if args.json:
        args.json.write_text(json.dumps({"errors": error_summary(rows), "regrets": regret_rows,
                                         "trials": trials(rows), "cases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
