"""Write a results folder for a kernel-variant sweep (``sparsescope run --variant ...``, one
results.json per matrix or part) with a README whose every number is read from the runs' own
files: per (matrix, k, layout), each backend's speedup over a baseline backend of the same run
(baseline median / backend median), and the geomean per backend.

    python scripts/variants_readme.py DEST --part RESULTS.json [--part ...] \\
        --baseline spmm-torch-i32 --title "H200: ..." [--note "..."]

Each part is stored gzipped as ``DEST/NAME.json.gz`` (``sparsescope results show`` reads it).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
from pathlib import Path


def speedups(cases: list[dict], baseline: str, run: str = ""
             ) -> tuple[list[str], dict[tuple, dict]]:
    """(backends in first-seen order, {(run, matrix, k, layout): {backend: baseline / its
    median}}): ratios within one run only."""
    times: dict[tuple, dict[str, float]] = {}
    order: list[str] = []
    for c in cases:
        if c["outcome"] != "ok":
            continue
        p = c.get("params") or {}
        key = (run, c["matrix"], p.get("k", 0), p.get("layout", ""))
        times.setdefault(key, {})[c["backend"]] = statistics.median(c["measurement"]["samples_ms"])
        if c["backend"] not in order:
            order.append(c["backend"])
    table = {key: {b: t[baseline] / v for b, v in t.items()}
             for key, t in times.items() if baseline in t}
    return order, table


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def markdown(order: list[str], table: dict[tuple, dict], baseline: str) -> str:
    names = [b for b in order if b != baseline]
    head = "| run | matrix | k | layout | " + " | ".join(f"`{b}`" for b in names) + " |"
    lines = [head, "|---|---|---:|---|" + "---:|" * len(names)]
    for (run, matrix, k, layout), row in sorted(table.items()):
        cells = " | ".join(f"{row[b]:.2f}" if b in row else "-" for b in names)
        lines.append(f"| {run} | {matrix} | {k} | {layout} | {cells} |")
    cells = " | ".join(f"{geomean([r[b] for r in table.values() if b in r]):.2f}"
                       for b in names)
    lines.append(f"| geomean (of the rows that have it) | | | | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--part", type=Path, action="append", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--title", required=True)
    ap.add_argument("--note", default="")
    args = ap.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    order, table, made = [], {}, []
    for part in args.part:
        data = json.loads(part.read_text())
        names, rows = speedups(data["cases"], args.baseline, part.stem)
        order += [b for b in names if b not in order]
        table.update(rows)
        prov = data["provenance"]
        libs = ", ".join(f"{k} {v}" for k, v in prov.get("libraries", {}).items())
        made.append(f"- `{part.stem}.json.gz`: {prov.get('created_utc', '')}, commit "
                    f"{prov.get('git_commit', '')}, {prov.get('device', '')}, driver "
                    f"{prov.get('driver', '')}; {libs}\n\n  ```\n  {prov.get('command', '')}\n"
                    f"  ```")
        with gzip.open(args.dest / f"{part.stem}.json.gz", "wt", encoding="utf-8") as f:
            json.dump(data, f)
    text = "\n".join([
        f"# {args.title}", "",
        *([args.note, ""] if args.note else []),
        f"Speedup of each backend over `{args.baseline}` in the same run (its median / the "
        "backend's median; CUDA events, L2 flushed when the working set fits, every output "
        "checked against float64 first). Above 1: faster than the baseline.", "",
        markdown(order, table, args.baseline), "",
        "## How it was made (one run per file, on the lent GPU, from the repository root)", "",
        *made, ""])
    (args.dest / "README.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
