#!/usr/bin/env python3
"""Prediction error per backend family (our kernels; the libraries) of stored runs: the
number issue 36's accuracy targets are stated in.

    python scripts/family_errors.py RESULTS.json[.xz|.gz] ... [--json]

Each case's error is the one its run stored, ``(measured - predicted) / measured`` against the
measured median (``ModelPrediction.error_pct``, the prediction made before the case was
timed); cases without a prediction (CPU runs, "not modelled") are left out. Per GPU, timing
mode and family, and per backend (with its variant): cases, median |error|, 90th-percentile
|error| and the median signed error (positive: slower than predicted), and whether the family
meets the targets. The definitions are ``sparsescope.analyze.score_family``'s, shared with
``sparsescope model score --by-family`` (the same table for the model as it is now) and the
report's family sentences.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from sparsescope.api import family_errors


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    reading = family_errors(args.results)
    rows = reading.doc["families"]
    print(json.dumps([asdict(r) for r in rows], indent=1) if args.json else reading.text)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
