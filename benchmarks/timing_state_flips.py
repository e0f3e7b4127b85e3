"""Which host-side work between two timings changes the next timing? Two backends timed in
cycles (A, then B), with one kind of work done after each cycle; per kind of work, the cycles'
times read by parity.

On an H200 the CUDA timing protocol's profiler session, three launches of a small add, a
backend's preparation (its uploads), auto's preparation (its trial) and the float64 check each
left the next timings 4-5 % off, one way after an odd count of them and back after an even
count: a hidden two-state effect (results/h200/real-dev/2026-11-28-profiler-settle, section
5). With nothing between the cycles the times stayed level. A run prepares and checks each
backend of a case before timing it, so a backend's time there depends on how many such steps
came before it::

    python benchmarks/timing_state_flips.py --matrix .real-dev/bcspwr06.npz --k 64 \\
        --layout row --a 'spmm-cuda-rowgroup[ell=1,vec=2]' \\
        --b 'spmm-nvmath-i32[alg=3,preprocess=0]' --cycles 8 --json /tmp/flips.json

    odd / even = median of cycles 2, 4, ... / median of cycles 1, 3, ...   (1.00: no flip)

``--state-halves`` times each in two halves with a flip of the state between them
(``TimingConfig.state_halves``); if that removes the state's effect, every row reads 1.00.
The table is printed last; ``--json`` keeps every cycle's two times (us).
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

#: The work done after each cycle, by name (``activities`` builds them for one case).
ACTIVITIES = ("none", "auto-prepare", "a-prepare", "a-check")


def activities(matrix, case, a: str, config) -> dict:
    """name -> the work (a function of no arguments). Prepared cases are kept alive, so each
    preparation allocates anew, as a run's backends do."""
    from sparsescope.backends.runner import run_case
    from sparsescope.backends.variants import backend_choice

    kept: list = []
    return {
        "none": lambda: None,
        "auto-prepare": lambda: kept.append(
            backend_choice("spmm-cuda-auto").create().prepare(case, "float32", 4)),
        "a-prepare": lambda: kept.append(backend_choice(a).create().prepare(case, "float32", 4)),
        "a-check": lambda: run_case(matrix, backend_choice(a), "spmm", case.params,
                                    config=config, case=case, value_dtype="float32",
                                    index_bytes=4, timed=False),
    }


def odd_over_even(times: list[float]) -> float:
    """Median of the 2nd, 4th, ... over that of the 1st, 3rd, ... (1-based). (6, 5, 6, 5) ->
    5 / 6; one time -> 1."""
    even = statistics.median(times[0::2])
    return statistics.median(times[1::2]) / even if len(times) > 1 else 1.0


def measure(matrix, k: int, layout: str, a: str, b: str, *, cycles: int, repeats: int,
            names=ACTIVITIES, state_halves: bool = False) -> list[dict]:
    """A row per kind of work: the cycles' (A, B) times (us) and each side's odd / even;
    ``state_halves``: each timing in two halves with a flip between (``TimingConfig``)."""
    from spmm_bench import WARMUPS, checked_and_prepared, spmm_case

    from sparsescope.timing.types import TimingConfig

    config = TimingConfig(warmups=WARMUPS, repeats=repeats, state_halves=state_halves)
    case = spmm_case(matrix, k, layout)
    row = {"matrix": matrix.name, "k": k, "layout": layout, "a": a, "b": b,
           "state_halves": state_halves}
    sides = []
    for text in (a, b):
        backend, prepared, why = checked_and_prepared(matrix, case, text, "float32", 4, config)
        if backend is None:
            return [{**row, "outcome": f"{text}: {why}"}]
        sides.append((backend, prepared))
    work = activities(matrix, case, a, config)
    rows = []
    for name in names:
        a_us, b_us = [], []
        for _ in range(cycles):
            for times, (backend, prepared) in zip((a_us, b_us), sides, strict=True):
                times.append(1e3 * backend.time(prepared, config).median_ms)
            work[name]()
        rows.append({**row, "after_each_cycle": name, "outcome": "ok", "a_us": a_us,
                     "b_us": b_us, "a_odd_over_even": odd_over_even(a_us),
                     "b_odd_over_even": odd_over_even(b_us)})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| matrix | k | layout | after each cycle | A us (cycles) | A odd / even | "
             "B us (cycles) | B odd / even |", "|---|---:|---|---|---|---:|---|---:|"]
    for r in rows:
        head = f"| {r['matrix']} | {r['k']} | {r['layout']} |"
        if r["outcome"] != "ok":
            lines.append(f"{head} {r['outcome'][:60]} | | | | |")
            continue
        lines.append(f"{head} {r['after_each_cycle']} | "
                     f"{' '.join(f'{t:.2f}' for t in r['a_us'])} | {r['a_odd_over_even']:.3f} | "
                     f"{' '.join(f'{t:.2f}' for t in r['b_us'])} | {r['b_odd_over_even']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from sparsescope.matrices.io import read_matrix

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matrix", required=True)
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--layout", choices=("row", "col"), required=True)
    parser.add_argument("--a", required=True, help="a registry name or NAME[opt=value,...]")
    parser.add_argument("--b", required=True, help="the second backend of each cycle")
    parser.add_argument("--cycles", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--after", action="append", choices=ACTIVITIES,
                        help="the work between cycles (repeatable; default: each)")
    parser.add_argument("--state-halves", action="store_true",
                        help="time in two halves with a flip between (TimingConfig."
                             "state_halves): the times should stay level after any work")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = measure(read_matrix(args.matrix), args.k, args.layout, args.a, args.b,
                   cycles=args.cycles, repeats=args.repeats,
                   names=tuple(args.after or ACTIVITIES), state_halves=args.state_halves)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(f"A = {args.a}, B = {args.b}; {args.cycles} cycles, {args.repeats} samples a timing\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
