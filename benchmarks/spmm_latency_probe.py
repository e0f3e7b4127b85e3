"""Where a latency-bound SpMM call's time goes (issue 37 item 3): each backend (or variant) on
each matrix timed twice in one process, with the L2 flushed before every call (the latency
mode's protocol) and without, each output first checked against float64, and its kernels'
warm durations (the CUPTI breakdown), so that a fixed cost (launches, a kernel's own start,
code fetched into a cold SM) reads apart from a per-round one.

    python benchmarks/spmm_latency_probe.py --matrix .real-dev/bcspwr06.npz --k 8 \\
        --layout col --backend 'spmm-cuda-ell[batch=4]' --backend spmm-nvmath-i32 \\
        --json /tmp/probe.json

``--once`` runs each case's gate only (one call, untimed): the command to put under ncu.
The table is printed last; ``--json`` keeps every row.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main(argv: list[str] | None = None) -> int:
    from spmm_bench import add_case_grid, case_grid

    from sparsescope.backends.runner import run_case
    from sparsescope.backends.variants import backend_choice
    from sparsescope.matrices.io import read_matrix
    from sparsescope.timing.types import TimingConfig

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_case_grid(parser, "a registry name or NAME[opt=value,...] (repeatable)")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--once", action="store_true", help="the gate only, untimed")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    matrices = {path: read_matrix(path) for path in args.matrix}
    rows = []
    for path, k, layout, text in case_grid(args):
        choice = backend_choice(text)
        backend = choice.create() if choice.options else choice.name
        row = {"matrix": Path(path).stem, "k": k, "layout": layout, "backend": text}
        configs = {"gate": None} if args.once else {
            "flushed": TimingConfig(warmups=10, repeats=args.repeats, flush_l2=True),
            "warm": TimingConfig(warmups=10, repeats=args.repeats, flush_l2=False)}
        for label, config in configs.items():
            case = run_case(matrices[path], backend, "spmm", {"k": k, "layout": layout},
                            config=config or TimingConfig(warmups=0, repeats=1),
                            seed=k, timed=config is not None)
            row["outcome"], row["reason"] = case.outcome, case.reason
            row["kernel"] = case.notes.get("kernel", "")
            if case.outcome != "ok" or config is None:
                break
            m = case.measurement
            row[f"{label}_us"] = m.median_ms * 1e3
            row[f"{label}_kernels"] = [(b["name"], b["time_ms"] * 1e3, b["launches"])
                                       for b in m.kernel_breakdown]
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("| matrix | k | layout | backend | flushed us | warm us | kernels (warm us) |")
    print("|---|---:|---|---|---:|---:|---|")
    for r in rows:
        kernels = "; ".join(f"{n[:24]} {t:.2f}" for n, t, _ in r.get("warm_kernels", []))
        fl, wm = r.get("flushed_us"), r.get("warm_us")
        print(f"| {r['matrix']} | {r['k']} | {r['layout']} | {r['backend']} | "
              f"{fl:.2f} | {wm:.2f} | {kernels} |" if fl is not None else
              f"| {r['matrix']} | {r['k']} | {r['layout']} | {r['backend']} | "
              f"{r['outcome']} | | {r['reason'][:60]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
