"""Does a small call's time depend on where its data landed? One backend prepared several
times (each preparation's arrays kept alive, so each lands at other device addresses), and
the preparations timed in rounds, each round in a rotated order.

A run prepares each backend once, so if the placement moves a 6 us call by a few per cent, one
run's verdict between two backends carries that much whatever the number of samples. This
separates the two spreads::

    within  = median over preparations of (highest / lowest timing of that preparation)
    between = highest / lowest of the preparations' medians

``between`` well above ``within``: the placement matters, and a claim about a small call needs
several preparations (or alternating rounds of fresh ones)::

    python benchmarks/timing_placements.py --matrix .real-dev/bcspwr06.npz --k 64 \\
        --layout row --backend spmm-cuda-auto --preparations 6 --rounds 6 --json /tmp/p.json

The table is printed last; ``--json`` keeps every timing (us), by preparation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def spreads(timings_us: list[list[float]]) -> dict:
    """``timings_us[p]``: preparation p's timings. Its medians and the two spreads.
    [[10, 11], [12, 12.6]] -> medians [10.5, 12.3], within median(1.1, 1.05) = 1.075,
    between 12.3 / 10.5 = 1.171."""
    medians = [statistics.median(t) for t in timings_us]
    within = statistics.median(max(t) / min(t) for t in timings_us)
    return {"medians_us": medians, "median_us": statistics.median(medians),
            "within": within, "between": max(medians) / min(medians)}


def measure(matrix, k: int, layout: str, text: str, *, preparations: int, rounds: int,
            repeats: int) -> dict:
    """The row of one (matrix, k, layout, backend): each preparation's timings, in rounds."""
    from spmm_bench import WARMUPS, checked_and_prepared, spmm_case

    from sparsescope.timing.types import TimingConfig

    config = TimingConfig(warmups=WARMUPS, repeats=repeats)
    case = spmm_case(matrix, k, layout)
    row = {"matrix": matrix.name, "k": k, "layout": layout, "backend": text}
    backend, first, why = checked_and_prepared(matrix, case, text, "float32", 4, config)
    if backend is None:
        return {**row, "outcome": why}
    prepared = [first] + [backend.prepare(case, "float32", 4) for _ in range(preparations - 1)]
    timings: list[list[float]] = [[] for _ in prepared]
    for r in range(rounds):
        for i in range(len(prepared)):
            p = (i + r) % len(prepared)     # each round starts one preparation later
            timings[p].append(1e3 * backend.time(prepared[p], config).median_ms)
    return {**row, "outcome": "ok", "timings_us": timings, **spreads(timings)}


def table(rows: list[dict]) -> str:
    lines = ["| matrix | k | layout | backend | median us | preparations' medians (us) | "
             "within | between |", "|---|---:|---|---|---:|---|---:|---:|"]
    for r in rows:
        head = f"| {r['matrix']} | {r['k']} | {r['layout']} | `{r['backend']}` |"
        if r["outcome"] != "ok":
            lines.append(f"{head} {r['outcome'][:60]} | | | |")
            continue
        medians = " ".join(f"{m:.2f}" for m in r["medians_us"])
        lines.append(f"{head} {r['median_us']:.2f} | {medians} | {r['within']:.3f} | "
                     f"{r['between']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from spmm_bench import add_case_grid, case_grid

    from sparsescope.matrices.io import read_matrix

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_case_grid(parser)
    parser.add_argument("--preparations", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.preparations < 1 or args.rounds < 1:
        parser.error("--preparations and --rounds must be at least 1")
    rows = [measure(read_matrix(path), k, layout, text, preparations=args.preparations,
                    rounds=args.rounds, repeats=args.repeats)
            for path, k, layout, text in case_grid(args)]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(f"{args.preparations} preparations x {args.rounds} rounds, {args.repeats} samples "
          "a timing\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
