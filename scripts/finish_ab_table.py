"""The table of `scripts/device.sh finish-ab` (and of `VARIANTS=... device.sh real-dev`): per
matrix and tile kernel, the median with ``spmv_fixup`` as a second launch (finish=0, also a
tile backend named without ``finish``: its default) and with the last tile finishing each split
row (finish=1), their ratio, and the best cuSPARSE beside them.

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
#: The tile kernels, whose ``finish`` defaults to 0 (``backends.spmv_tiled``).
TILE_KERNELS = ("cuda-spmv-adaptive", "cuda-spmv-merge")


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
            if match or c.backend.split("[")[0] in TILE_KERNELS:
                finish = match.group(1) if match else "0"
                kernel = _FINISH.sub("", c.backend).replace(",]", "]").replace("[,", "[")
                kernel = kernel.replace("[]", "")
                row = rows.setdefault((c.matrix, kernel), {"matrix": c.matrix,
                                                           "kernel": kernel})
                row[f"finish{finish}_ms"] = ms
            elif "cusparse" in c.backend:  # nvmath's variants too
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


def auto_summary(paths: list[Path]) -> str:
    """Where the runs hold ``cuda-spmv-auto``: its speedup over the fastest cuSPARSE case of
    each matrix, and that of the faster of auto and the finish=1 tiles (what auto would reach
    with them among its candidates), as geomean, lowest and the matrices below 1.2x (issue 37's
    throughput target); "" without auto."""
    by: dict[str, dict[str, float]] = {}
    for path in paths:
        for c in read_runset(path).cases:
            if c.outcome == "ok" and c.measurement is not None:
                by.setdefault(c.matrix, {})[c.backend] = statistics.median(
                    c.measurement.samples_ms)
    rows = []
    for matrix, times in by.items():
        library = [ms for b, ms in times.items() if "cusparse" in b]
        auto = times.get("cuda-spmv-auto")
        if not library or auto is None:
            continue
        finished = [ms for b, ms in times.items() if "finish=1" in b]
        rows.append((matrix, min(library) / auto, min(library) / min([auto, *finished])))
    if not rows:
        return ""
    lines = [f"| over the fastest cuSPARSE case, {len(rows)} matrices | geomean | lowest | "
             "below 1.2x |", "| --- | ---: | ---: | ---: |"]
    for i, name in ((1, "`cuda-spmv-auto`"), (2, "the faster of auto and the finish=1 tiles")):
        low = min(rows, key=lambda r: r[i])
        below = [r[0] for r in rows if r[i] < 1.2]
        lines.append(f"| {name} | {statistics.geometric_mean(r[i] for r in rows):.2f}x | "
                     f"{low[i]:.2f}x ({low[0]}) | {len(below)} ({', '.join(below) or '-'}) |")
    return "\n".join(lines) + "\n"


def main() -> int:
    paths = [Path(p) for p in sys.argv[1:]]
    if not paths:
        print(__doc__)
        return 2
    print(markdown(pairs(paths)))
    summary = auto_summary(paths)
    if summary:
        print(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
