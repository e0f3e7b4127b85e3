#!/usr/bin/env python3
"""Prediction error per backend family (our kernels; the libraries) of stored runs: the
number issue 36's accuracy targets are stated in.

    python scripts/family_errors.py RESULTS.json[.gz] ... [--json]

Each case's error is the one its run stored, ``(measured - predicted) / measured`` against the
measured median (``ModelPrediction.error_pct``); cases without a prediction (CPU runs, "not
modelled") are counted apart. Per family and per backend (with its variant): cases, median
|error|, 90th-percentile |error| and the median signed error (positive: slower than predicted).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

import numpy as np

from sparsescope.api import is_own, read_runset


def family(backend: str) -> str:
    return "our kernels" if is_own(backend.split("[", 1)[0]) else "libraries"


def errors(paths: list[str]) -> dict[tuple[str, str, str], list[float]]:
    """(timing mode, family, backend) -> each predicted case's signed error in %."""
    found: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for path in paths:
        for case in read_runset(path).cases:
            p = case.prediction
            if case.outcome != "ok" or p is None or p.error_pct is None:
                continue
            mode = getattr(case, "timing_mode", None) or "latency"
            found[(mode, family(case.backend), case.backend)].append(float(p.error_pct))
    return found


def summary(values: list[float]) -> dict[str, float]:
    a = np.abs(values)
    return {"cases": len(values), "median_abs_pct": float(np.median(a)),
            "p90_abs_pct": float(np.percentile(a, 90)),
            "median_signed_pct": float(np.median(values))}


def table(found) -> tuple[list[dict], str]:
    rows, lines = [], ["| mode | family | backend | cases | median abs % | p90 abs % | "
                       "median signed % |", "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (mode, fam, backend), values in sorted(found.items()):
        groups[(mode, fam)] += values
        rows.append({"mode": mode, "family": fam, "backend": backend, **summary(values)})
    for (mode, fam), values in sorted(groups.items()):
        rows.append({"mode": mode, "family": fam, "backend": "all", **summary(values)})
    for r in sorted(rows, key=lambda r: (r["mode"], r["family"], r["backend"] != "all",
                                         r["backend"])):
        name = f"**{r['backend']}**" if r["backend"] == "all" else f"`{r['backend']}`"
        lines.append(f"| {r['mode']} | {r['family']} | {name} | {r['cases']} | "
                     f"{r['median_abs_pct']:.1f} | {r['p90_abs_pct']:.1f} | "
                     f"{r['median_signed_pct']:+.1f} |")
    return rows, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows, text = table(errors(args.results))
    print(json.dumps(rows, indent=1) if args.json else text)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
