"""The table of `scripts/device.sh finish-ab`: per matrix and tile kernel, the median with
``spmv_fixup`` as a second launch (finish=0) and with the last tile finishing each split row
(finish=1), their ratio, and the best cuSPARSE beside them.

    python scripts/finish_ab_table.py RESULTS [RESULTS ...]   (results.json of the runs)
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from pathlib import Path

from sparsescope.api import read_runset

_FINISH = re.compile(r"finish=(\d)")


def pairs(paths: list[Path]) -> list[dict]:
    """One row per (matrix, kernel without finish): the two medians (ms) and the fastest
    cuSPARSE case's of the same matrix."""
    rows: dict[tuple[str, str], dict] = {}
    library: dict[str, float] = {}
    for path in paths:
        for c in read_runset(path).cases:
            if c.outcome != "ok" or c.measurement is None:
                continue
            ms = statistics.median(c.measurement.samples_ms)
            match = _FINISH.search(c.backend)
            if match:
                kernel = _FINISH.sub("", c.backend).replace(",]", "]").replace("[,", "[")
                row = rows.setdefault((c.matrix, kernel), {"matrix": c.matrix,
                                                           "kernel": kernel})
                row[f"finish{match.group(1)}_ms"] = ms
            elif "cusparse" in c.backend:
                library[c.matrix] = min(library.get(c.matrix, math.inf), ms)
    out = []
    for (matrix, _), row in rows.items():
        if "finish0_ms" in row and "finish1_ms" in row:
            row["library_ms"] = library.get(matrix)
            row["ratio"] = row["finish1_ms"] / row["finish0_ms"]
            out.append(row)
    return out


def markdown(rows: list[dict]) -> str:
    lines = ["| matrix | kernel | fixup launch us | finished in the tile us | finish / fixup | "
             "best cuSPARSE us | finished: speedup over cuSPARSE |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lib = r.get("library_ms")
        lines.append(f"| {r['matrix']} | {r['kernel']} | {1e3 * r['finish0_ms']:.1f} | "
                     f"{1e3 * r['finish1_ms']:.1f} | {r['ratio']:.3f} | "
                     f"{'-' if lib is None else format(1e3 * lib, '.1f')} | "
                     f"{'-' if lib is None else format(lib / r['finish1_ms'], '.2f')} |")
    if rows:
        geo = statistics.geometric_mean(r["ratio"] for r in rows)
        lines += ["", f"- finish / fixup: geomean {geo:.3f} over {len(rows)} (matrix, kernel) "
                      f"pairs; range {min(r['ratio'] for r in rows):.3f}-"
                      f"{max(r['ratio'] for r in rows):.3f}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    paths = [Path(p) for p in sys.argv[1:]]
    if not paths:
        print(__doc__)
        return 2
    print(markdown(pairs(paths)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
