"""Two SpMM backends timed in alternation on the same case (issue 37 item 3): is a 6 us call
of ours really below the library's, or is the gap the run's noise?

Two cases of one run are timed minutes apart, and the same library code moved a median
0.6-2.9 % a case between two runs (H200, results/h200/real-dev/2026-11-28-minb), as much as
the gaps of the small matrices. Here both backends are checked against float64 and prepared
once, then timed in ``--rounds`` rounds, A then B in even rounds and B then A in odd ones, each
timing the latency mode's (the L2 flushed where the working set fits, ``--repeats`` samples
after three warm-ups, the median). Each round gives a ratio A / B.

The order mattered: on an H200 the second timing of a round (the one right after the other
backend's) ran 3-6 % off the first on 6 us calls, whichever backend it was
(results/h200/real-dev/2026-11-28-ell-rows/interleaved.md). The cause was the profiler session
of each timing's kernel breakdown, which the protocol now follows with a settle
(``sparsescope.timing.cuda``, step 4; ``benchmarks/timing_after_profiler.py``). The ratio is
still read order-balanced, the geometric mean of the medians of the rounds with A first and of
those with B first; the two medians' quotient gives the second timing's slowdown::

    python benchmarks/spmm_interleaved.py --matrix .real-dev/bcspwr06.npz --k 64 \\
        --layout row --a 'spmm-nvmath-i32[alg=3,preprocess=0]' --b spmm-cuda-auto \\
        --rounds 15 --json /tmp/interleaved.json

A / B above 1: B is faster. The table is printed last; ``--json`` keeps every round, and
``--table ROUNDS.json[.xz]`` prints the table again from such a file (its ratios recomputed).
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


def round_ratios(a_ms: list[float], b_ms: list[float]) -> dict:
    """The rounds' A / B ratios (A first in even rounds, B first in odd ones) summed up::

        a_first  = median of the even rounds' ratios;  b_first = that of the odd rounds'
        balanced = sqrt(a_first x b_first)
        second   = sqrt(b_first / a_first)   (the second timing of a round: x slower)

    with the lowest and highest ratio and in how many rounds B was the faster. Rounds (10, 10),
    (12, 10), (9, 10), (11, 10) -> ratios 1.0, 1.2, 0.9, 1.1: a_first 0.95, b_first 1.15,
    balanced 1.045, second 1.100; lowest 0.9, highest 1.2, B faster in 2 of 4. One round:
    balanced = a_first, second 1."""
    ratios = [a / b for a, b in zip(a_ms, b_ms, strict=True)]
    a_first = statistics.median(ratios[0::2])
    b_first = statistics.median(ratios[1::2]) if len(ratios) > 1 else a_first
    return {"ratio_balanced": (a_first * b_first) ** 0.5, "ratio_a_first": a_first,
            "ratio_b_first": b_first, "second_slower": (b_first / a_first) ** 0.5,
            "ratio_low": min(ratios), "ratio_high": max(ratios),
            "b_faster": sum(r > 1.0 for r in ratios), "rounds": len(ratios)}


def compare(matrix, k: int, layout: str, a: str, b: str, *, rounds: int, repeats: int,
            value_dtype: str = "float32", index_bytes: int = 4) -> dict:
    """One case's row: each backend's per-round medians (ms), :func:`round_ratios`, and what
    B chose where it is an auto backend (``selected``, ``selected_params``)."""
    from spmm_bench import WARMUPS, checked_and_prepared, spmm_case

    from sparsescope.timing.types import TimingConfig

    config = TimingConfig(warmups=WARMUPS, repeats=repeats)
    case = spmm_case(matrix, k, layout, value_dtype, index_bytes)
    row = {"matrix": matrix.name, "k": k, "layout": layout, "a": a, "b": b}
    sides = {}
    for label, text in (("a", a), ("b", b)):
        backend, prepared, why = checked_and_prepared(matrix, case, text, value_dtype, index_bytes,
                                           config)
        if backend is None:
            return {**row, "outcome": f"{label} {why}"}
        sides[label] = (backend, prepared)
    notes = sides["b"][0].notes(sides["b"][1])
    row.update(selected=notes.get("selected", ""), selected_params=notes.get("selected_params",
                                                                             ""))
    times: dict[str, list[float]] = {"a": [], "b": []}
    for r in range(rounds):
        for label in ("a", "b") if r % 2 == 0 else ("b", "a"):
            backend, prepared = sides[label]
            times[label].append(backend.time(prepared, config).median_ms)
    return {**row, "outcome": "ok", "a_ms": times["a"], "b_ms": times["b"],
            **round_ratios(times["a"], times["b"])}


def table(rows: list[dict]) -> str:
    """The rows as Markdown: each side's median over the rounds (us), the rounds' A / B
    (:func:`round_ratios`)."""
    lines = ["| matrix | k | layout | A | B | A us | B us | A / B balanced | A first | B first "
             "| the second x | lowest | highest | B faster (rounds) | B's pick |",
             "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r["outcome"] != "ok":
            lines.append(f"| {r['matrix']} | {r['k']} | {r['layout']} | {r['a']} | {r['b']} "
                         f"| {r['outcome'][:60]} | | | | | | | | | |")
            continue
        pick = f"{r['selected']} {r['selected_params']}".strip()
        lines.append(
            f"| {r['matrix']} | {r['k']} | {r['layout']} | `{r['a']}` | `{r['b']}` | "
            f"{1e3 * statistics.median(r['a_ms']):.2f} | {1e3 * statistics.median(r['b_ms']):.2f}"
            f" | {r['ratio_balanced']:.3f} | {r['ratio_a_first']:.3f} | {r['ratio_b_first']:.3f}"
            f" | {r['second_slower']:.3f} | {r['ratio_low']:.3f} | {r['ratio_high']:.3f} | "
            f"{r['b_faster']} of {r['rounds']} | {pick} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from sparsescope.matrices.io import read_matrix

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, help="print the table of a --json file again")
    parser.add_argument("--matrix", action="append")
    parser.add_argument("--k", action="append", type=int)
    parser.add_argument("--layout", action="append", choices=("row", "col"))
    parser.add_argument("--a", help="a registry name or NAME[opt=value,...]")
    parser.add_argument("--b", help="the same, timed against --a")
    parser.add_argument("--rounds", type=int, default=16, help="even: as many with A first "
                        "as with B first")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.table:
        from sparsescope._compressed import read_json

        rows = read_json(args.table)   # .json, or compressed (.json.xz, .json.gz)
        print(table([{**r, **round_ratios(r["a_ms"], r["b_ms"])} if r["outcome"] == "ok"
                     else r for r in rows]))
        return 0
    if not (args.matrix and args.k and args.layout and args.a and args.b):
        parser.error("--matrix, --k, --layout, --a and --b are required (or --table)")
    rows = [compare(read_matrix(path), k, layout, args.a, args.b, rounds=args.rounds,
                    repeats=args.repeats)
            for path in args.matrix for k in args.k for layout in args.layout]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(f"A = {args.a}, B = {args.b}; {args.rounds} rounds, alternating order, "
          f"{args.repeats} samples a timing\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
