"""Column slabs of the own SpMM kernel, A/B in one process: each slab width of
``spmm-cuda-rowwarp`` (the rule's choice, and the widths 32 .. k with k meaning no slabs) beside
``spmm-torch-i32`` (the best peer at k = 256) on the dlmc3 analogs, row-major X.

    PYTHONPATH=src python3 benchmarks/spmm_slabs.py --out slabs.json [--k 64 256]

Every case passes the one runner's float64 gate before it is timed (CUDA events, L2 flushed
before every sample, 5 warm-ups, median of 50). Prints one line per case and a table of
speedups over the no-slab kernel and over torch last.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sparsescope.backends.runner import BackendChoice, run_case
from sparsescope.matrices.suite_dlmc import load
from sparsescope.timing.types import TimingConfig

PEER = "spmm-torch-i32"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--k", type=int, nargs="*", default=[64, 256])
    args = parser.parse_args(argv)
    config = TimingConfig(warmups=5, repeats=50, flush_l2=True)
    rows = []
    for matrix in load("dlmc3"):
        for k in args.k:
            variants = [("rule", None)] + [(f"slab{w}", w) for w in (32, 64, 128, 256)
                                           if w <= k and k % w == 0]
            choices = [BackendChoice("spmm-cuda-rowwarp", (("slab", slab),), label)
                       for label, slab in variants] + [BackendChoice(PEER)]
            for choice in choices:
                label = choice.result_name
                case = run_case(matrix, choice, "spmm", {"k": k, "layout": "row"},
                                config=config, value_dtype="float32", index_bytes=4, seed=k)
                us = case.measurement.median_ms * 1e3 if case.outcome == "ok" else None
                rows.append({"matrix": matrix.name, "k": k, "variant": label,
                             "outcome": case.outcome, "reason": case.reason, "median_us": us,
                             "rel_err": case.correctness.rel_err if case.correctness else None,
                             "slab_cols": case.notes.get("slab_cols"),
                             "kernel": case.notes.get("kernel")})
                print(f"{matrix.name:14s} k={k:<4d} {label:16s} {case.outcome:7s} "
                      f"{us if us is not None else float('nan'):9.2f} us "
                      f"slab {case.notes.get('slab_cols', '-')}", flush=True)
    Path(args.out).write_text(json.dumps({"created": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                   time.gmtime()),
                                          "config": {"warmups": 5, "repeats": 50,
                                                     "flush_l2": True},
                                          "rows": rows}, indent=1))
    print("\nmatrix         k     rule us  no-slab us  torch us  rule/no-slab  torch/rule")
    for matrix in sorted({r["matrix"] for r in rows}):
        for k in args.k:
            got = {r["variant"]: r["median_us"] for r in rows
                   if r["matrix"] == matrix and r["k"] == k}
            rule, whole, peer = got.get("rule"), got.get(f"slab{k}"), got.get(PEER)
            if rule and whole and peer:
                print(f"{matrix:14s} {k:<4d} {rule:9.2f} {whole:11.2f} {peer:9.2f} "
                      f"{whole / rule:13.2f} {peer / rule:11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
