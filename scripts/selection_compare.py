"""Compare two kernel-selection runs of the same matrices (``selection.json`` of
``scripts/kernels_readme.py``): per matrix, cuda-spmv-auto's speedup over the best cuSPARSE
configuration before and now (each within its own run), its choice now, and its regret against
the fastest own variant of each run; then the geomeans and the lowest speedups.

    python scripts/selection_compare.py BEFORE/selection.json NOW/selection.json [--changed]

``--changed``: only the matrices whose choice changed. Markdown on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from sparsescope.api import read_json


def load(path: Path) -> dict[str, dict]:
    """matrix -> row of a ``selection.json`` (plain, or compressed: ``.json.xz``, ``.json.gz``)."""
    return {row["matrix"]: row for row in read_json(path)}


def speedup(row: dict) -> float:
    """Best library time / auto time, within one run."""
    return row["best_lib_us"] / row["auto_us"]


def regret(row: dict) -> float:
    """(auto - fastest own variant) / fastest own variant, in %."""
    return 100.0 * (row["auto_us"] / row["best_own_us"] - 1.0)


def choice(row: dict) -> str:
    params = json.loads(row["auto_params"] or "{}")
    inner = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{row['auto_choice']}[{inner}]" if inner else row["auto_choice"]


def compare(before: dict[str, dict], now: dict[str, dict], changed_only: bool = False) -> str:
    both = [m for m in now if m in before]
    lines = ["| matrix | auto before | speedup before | auto now | speedup now | regret before "
             "| regret now |", "|---|---|---:|---|---:|---:|---:|"]
    for m in both:
        b, n = before[m], now[m]
        if changed_only and choice(b) == choice(n):
            continue
        lines.append(f"| {m} | {choice(b)} | {speedup(b):.2f}x | {choice(n)} | "
                     f"{speedup(n):.2f}x | {regret(b):+.1f} % | {regret(n):+.1f} % |")
    lines.append("")
    for label, rows in (("before", [before[m] for m in both]), ("now", [now[m] for m in both])):
        speeds = {r["matrix"]: speedup(r) for r in rows}
        low = min(speeds, key=speeds.get)
        slower = sorted(m for m, s in speeds.items() if s < 1.0)
        geo = statistics.geometric_mean(speeds.values())
        lines.append(f"- {label}: auto over the best cuSPARSE configuration "
                     f"{geo:.2f}x geomean over {len(rows)} matrices, lowest "
                     f"{speeds[low]:.2f}x ({low}); slower than cuSPARSE on {len(slower)}"
                     + (f" ({', '.join(slower)})" if slower else "") + "; largest regret "
                     f"{max(regret(r) for r in rows):+.1f} %.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("now", type=Path)
    parser.add_argument("--changed", action="store_true")
    args = parser.parse_args()
    print(compare(load(args.before), load(args.now), args.changed))


if __name__ == "__main__":
    main()
