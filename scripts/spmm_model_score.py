#!/usr/bin/env python3
"""Score the SpMM time model (``model.spmm_predict``) and ``spmm-cuda-auto``'s choice on a run's
own SpMM cases, from the predictions the run stored with each case.

    python scripts/spmm_model_score.py RESULTS [--json OUT.json]

For every own-kernel case (``spmm-cuda-rowgroup``, ``spmm-cuda-rowwarp``, ``spmm-cuda-auto``) with
a prediction: its signed error ``(measured - predicted) / measured``; per backend and in all, the
median |error| and the 90th percentile (nearest rank). For every (matrix, k, layout) where auto,
rowgroup and rowwarp all ran: auto's regret over the faster fixed kernel (auto / min - 1), and
whether the fastest prediction of auto's table was the faster kernel.
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


def nearest_rank(values: list[float], q: float) -> float:
    """The q-quantile by nearest rank: the ceil(q n)-th smallest (q 0.9, n 2 -> the 2nd)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def case_rows(cases) -> list[dict]:
    """One row per own-kernel case that ran: measured median, predicted, signed error %."""
    rows = []
    for c in cases:
        if c.op != "spmm" or c.backend not in OWN or c.outcome != "ok" or c.measurement is None:
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
                                         "cases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
