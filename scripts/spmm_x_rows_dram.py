"""The DRAM floor of a row-ordered SpMM kernel that cuts X into column slabs, from the model's
LRU reuse count of X's row slices (``model.xgather.x_gather`` with one X row slice as the
unit), against a committed run's measured times:

    python scripts/spmm_x_rows_dram.py RESULTS.json.xz MATRIX [--suite S] [--l2-bytes B]
        [--dram-gb-s G] [--k K ...]

For each k, the floors of ``model.spmm.x_reuse_dram_floors`` (a kernel that walks the rows in
order once per column slab of s values, s = 8, 16, ... <= k, A read once a slab, X's row slices
re-read from DRAM as an LRU L2 misses them, Y written once) are printed with X's misses per row;
then the smallest floor and the share of it the run's spmm-cuda-auto and best cuSPARSE reach.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from sparsescope.api import is_sparse_library, read_json, suite_csr, x_reuse_dram_floors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("matrix")
    ap.add_argument("--suite", default="spmm-population-held-out")
    ap.add_argument("--l2-bytes", type=int, default=62_914_560, help="H200: 60 MiB")
    ap.add_argument("--dram-gb-s", type=float, default=4359.0,
                    help="the run's measured DRAM read bandwidth (H200 run: 4,359)")
    ap.add_argument("--k", type=int, action="append")
    args = ap.parse_args(argv)
    csr = suite_csr(args.suite, args.matrix, 1.0, 0)
    cases = read_json(args.results)["cases"]
    measured: dict[int, dict[str, float]] = {}
    for c in cases:
        if (c["matrix"] == args.matrix and c["outcome"] == "ok"
                and c["params"]["layout"] == "row"):
            measured.setdefault(c["params"]["k"], {})[c["backend"]] = statistics.median(
                c["measurement"]["samples_ms"])
    print(f"{args.matrix}: {csr.shape[0]:,} rows, {csr.nnz:,} nonzeros; L2 {args.l2_bytes:,} B, "
          f"DRAM {args.dram_gb_s:,.0f} GB/s")
    for k in args.k or sorted(measured):
        floors = x_reuse_dram_floors(csr.indptr, csr.indices, csr.shape[1], k,
                                     l2_bytes=args.l2_bytes, dram_bw_gb_s=args.dram_gb_s)
        for f in floors:
            print(f"  k={k} slab={f.slab}: X misses per X row {f.x_misses_per_row:.2f}, "
                  f"floor {1e3 * f.floor_ms:,.0f} us")
        best = min(floors, key=lambda f: f.floor_ms)
        best_ms, best_slab = best.floor_ms, best.slab
        t = measured.get(k, {})
        libs = [v for b, v in t.items() if is_sparse_library(b)]
        line = f"k={k}: smallest floor {1e3 * best_ms:,.0f} us (slab {best_slab})"
        auto = t.get("spmm-cuda-auto")
        if auto:
            line += f"; auto {1e3 * auto:,.0f} us ({100 * best_ms / auto:.0f} %)"
        if libs:
            line += f"; best cuSPARSE {100 * best_ms / min(libs):.0f} %"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
