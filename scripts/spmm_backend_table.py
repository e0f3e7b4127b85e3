"""Every backend of an SpMM run side by side: per (matrix, k, layout), each backend's median
ms, and each own backend's speedup over the best library configuration (the fastest sparse
library case of the same matrix, k and layout: ``is_sparse_library``, never the dense peer);
the notes named by ``--note`` (e.g. ``fill``) beside them; a skipped or failed case shows its
outcome.

    python scripts/spmm_backend_table.py RESULTS [--note fill] [--json FILE]

RESULTS is a run's or a sweep's ``results.json`` (or ``.json.gz``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from sparsescope.api import is_own, is_sparse_library, read_runset


def table(path: Path, notes: tuple[str, ...] = ()) -> dict:
    """{"backends": [...], "rows": [{matrix, k, layout, ms: {b: ms|outcome}, speedup: {b: x},
    notes: {b: {note: value}}}], "geomean": {own backend: geomean speedup}}."""
    runset = read_runset(path)
    groups: dict[tuple, dict] = defaultdict(dict)
    backends: list[str] = []
    for c in runset.cases:
        if c.op != "spmm":
            continue
        key = (c.matrix, int(c.params.k), str(c.params.layout))
        ok = c.outcome == "ok" and c.measurement is not None and c.measurement.samples_ms
        groups[key][c.backend] = (float(statistics.median(c.measurement.samples_ms)) if ok
                                  else c.outcome, {n: c.notes.get(n, "") for n in notes})
        if c.backend not in backends:
            backends.append(c.backend)
    rows, ratios = [], defaultdict(list)
    for (matrix, k, layout), by in sorted(groups.items()):
        lib = [v[0] for b, v in by.items() if is_sparse_library(b) and isinstance(v[0], float)]
        best = min(lib) if lib else None
        speedup = {}
        for b, (ms, _) in by.items():
            if is_own(b) and best and isinstance(ms, float):
                speedup[b] = best / ms
                ratios[b].append(math.log(best / ms))
        rows.append({"matrix": matrix, "k": k, "layout": layout,
                     "ms": {b: v[0] for b, v in by.items()}, "speedup": speedup,
                     "notes": {b: v[1] for b, v in by.items() if any(v[1].values())}})
    geomean = {b: math.exp(sum(v) / len(v)) for b, v in ratios.items()}
    return {"backends": backends, "rows": rows, "geomean": geomean, "source": str(path)}


def markdown(t: dict, notes: tuple[str, ...] = ()) -> str:
    own = [b for b in t["backends"] if is_own(b)]
    head = ["matrix", "k", "layout", *t["backends"], *(f"{b} x" for b in own),
            *(f"{n} ({b})" for b in own for n in notes)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t["rows"]:
        cells = [r["matrix"], str(r["k"]), r["layout"]]
        for b in t["backends"]:
            v = r["ms"].get(b, "-")
            cells.append(f"{v:.4f}" if isinstance(v, float) else str(v))
        cells += [f"{r['speedup'][b]:.3f}" if b in r["speedup"] else "-" for b in own]
        cells += [r["notes"].get(b, {}).get(n, "") or "-" for b in own for n in notes]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- {b}: geomean {g:.3f}x over the best library on "
              f"{sum(b in r['speedup'] for r in t['rows'])} cases"
              for b, g in sorted(t["geomean"].items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--note", action="append", default=[],
                        help="a note of the own backends' cases to show (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON here")
    args = parser.parse_args(argv)
    t = table(args.results, tuple(args.note))
    if args.json:
        args.json.write_text(json.dumps(t, indent=1))
    sys.stdout.write(markdown(t, tuple(args.note)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
