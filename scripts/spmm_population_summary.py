"""Issue 18's figures from a sweep's results (``results.json`` or ``.json.gz``): per k and
layout, our ``spmm-cuda-auto`` against the best cuSPARSE configuration (the fastest of the
``spmm-torch-*`` and ``spmm-cupy-*`` cases of the same matrix, k and layout), as a geometric
mean of ``best library time / auto time``, the smallest ratio and the cases below 0.95x; and
which kernel auto chose, against the fastest of the own fixed kernels.

    python scripts/spmm_population_summary.py RESULTS [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.results.io import read_runset  # noqa: E402

LIBRARY = ("spmm-torch-", "spmm-cupy-")
AUTO = "spmm-cuda-auto"


def _median_ms(case) -> float | None:
    if case.outcome != "ok" or case.measurement is None or not case.measurement.samples_ms:
        return None
    return float(statistics.median(case.measurement.samples_ms))


def summarise(path: Path) -> dict:
    rs = read_runset(path)
    times: dict[tuple, dict[str, float]] = defaultdict(dict)
    chosen: dict[tuple, str] = {}
    for c in rs.cases:
        key = (c.matrix, int(c.params.k), c.params.layout)
        t = _median_ms(c)
        if t is not None:
            times[key][c.backend] = t
        if c.backend == AUTO:
            chosen[key] = c.notes.get("selected", "?")
    rows = []
    for key, by in sorted(times.items()):
        libs = {b: t for b, t in by.items() if b.startswith(LIBRARY)}
        if AUTO not in by or not libs:
            continue
        lib = min(libs, key=libs.get)
        own = {b: t for b, t in by.items() if b.startswith("spmm-cuda-") and b != AUTO}
        fastest_own = min(own, key=own.get) if own else ""
        rows.append(dict(matrix=key[0], k=key[1], layout=key[2], auto_ms=by[AUTO],
                         library=lib, library_ms=libs[lib], speedup=libs[lib] / by[AUTO],
                         auto_chose=chosen.get(key, "?"), fastest_own=fastest_own,
                         fastest_own_ms=own.get(fastest_own)))
    groups = defaultdict(list)
    for r in rows:
        groups[(r["k"], r["layout"])].append(r["speedup"])
        groups[("all", r["layout"])].append(r["speedup"])
        groups[("all", "all")].append(r["speedup"])
    table = [dict(k=k, layout=layout, cases=len(v),
                  geomean=math.exp(sum(map(math.log, v)) / len(v)), min=min(v),
                  below_0_95=sum(s < 0.95 for s in v))
             for (k, layout), v in sorted(groups.items(), key=lambda g: (str(g[0][0]).zfill(4),
                                                                          g[0][1]))]
    return dict(source=str(path), device=rs.device.name, cases=len(rs.cases), rows=rows,
                table=table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    s = summarise(args.results)
    if args.json:
        args.json.write_text(json.dumps(s, indent=1) + "\n")
    print(f"{s['device']}: {s['cases']} cases, {len(s['rows'])} (matrix, k, layout) compared")
    print(f"{'k':>4} {'layout':6} {'cases':>5} {'geomean':>8} {'min':>6} {'<0.95':>5}")
    for t in s["table"]:
        print(f"{t['k']:>4} {t['layout']:6} {t['cases']:5d} {t['geomean']:8.3f} "
              f"{t['min']:6.3f} {t['below_0_95']:5d}")
    worst = sorted(s["rows"], key=lambda r: r["speedup"])[:12]
    print("lowest ratios:")
    for r in worst:
        print(f"  {r['matrix']:11s} k={r['k']:<4d} {r['layout']} {r['speedup']:.3f} "
              f"(auto {r['auto_ms']:.4f} ms via {r['auto_chose']}; {r['library']} "
              f"{r['library_ms']:.4f}; fastest own {r['fastest_own']} {r['fastest_own_ms']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
