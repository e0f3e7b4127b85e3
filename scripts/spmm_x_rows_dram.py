"""The DRAM floor of a row-ordered SpMM kernel that cuts X into column slabs, from the model's
LRU reuse count of X's row slices (``model.xgather.x_gather`` with one X row slice as the
unit), against a committed run's measured times:

    python scripts/spmm_x_rows_dram.py RESULTS.json.gz MATRIX [--suite S] [--l2-bytes B]
        [--dram-gb-s G] [--k K ...]

For each k and slab width s (floats, powers of two up to k), a kernel that walks the rows in
order once per slab moves, through DRAM::

    A:  (k / s) x (nnz x (4 + 4) + (rows + 1) x 4)       (INT32 columns, float32 values)
    X:  (k / s) x misses(s) x 4 s                        (misses: LRU row-slice misses)
    Y:  rows x k x 4

over the DRAM bandwidth. Printed per (k, s): X misses per X row, the floor in us; per k the
smallest floor and the share of it the run's spmm-cuda-auto and best cuSPARSE reach.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.matrices.suites import build_entry, find_entry  # noqa: E402
from sparsescope.model.xgather import x_gather  # noqa: E402


def slab_floor_ms(indptr, indices, cols: int, k: int, slab: int, l2_bytes: int,
                  dram_gb_s: float) -> tuple[float, float]:
    """(floor ms, X misses per distinct X row slice) for slab width ``slab`` floats."""
    rows, nnz = len(indptr) - 1, int(indptr[-1])
    unit = 4 * slab
    g = x_gather(indptr, indices, cols=cols, l2_bytes=l2_bytes, stream_bytes_per_nnz=0.0,
                 value_bytes=unit, sector_bytes=unit)
    slabs = k // slab
    total = (slabs * (nnz * 8 + (rows + 1) * 4) + slabs * g.dram_sectors * unit
             + rows * k * 4)
    return total / (dram_gb_s * 1e9) * 1e3, g.dram_sectors / max(1, g.distinct_sectors)


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
    csr = build_entry(find_entry(args.suite, args.matrix, 1.0), 0).csr
    with gzip.open(args.results, "rt") as f:
        cases = json.load(f)["cases"]
    measured: dict[int, dict[str, float]] = {}
    for c in cases:
        if (c["matrix"] == args.matrix and c["outcome"] == "ok"
                and c["params"]["layout"] == "row"):
            measured.setdefault(c["params"]["k"], {})[c["backend"]] = statistics.median(
                c["measurement"]["samples_ms"])
    print(f"{args.matrix}: {csr.shape[0]:,} rows, {csr.nnz:,} nonzeros; L2 {args.l2_bytes:,} B, "
          f"DRAM {args.dram_gb_s:,.0f} GB/s")
    for k in args.k or sorted(measured):
        floors = []
        slab = 8
        while slab <= k:
            ms, misses = slab_floor_ms(csr.indptr, csr.indices, csr.shape[1], k, slab,
                                       args.l2_bytes, args.dram_gb_s)
            floors.append((ms, slab))
            print(f"  k={k} slab={slab}: X misses per X row {misses:.2f}, floor {1e3 * ms:,.0f} us")
            slab *= 2
        best_ms, best_slab = min(floors)
        t = measured.get(k, {})
        libs = [v for b, v in t.items() if not b.startswith("spmm-cuda")]
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
