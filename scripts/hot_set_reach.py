"""Which matrices a hot set of x pinned on chip could help, before such a kernel is built (no
GPU): per matrix and cluster size, the share of gathers the most-gathered columns would serve
and the sectors filling every copy would cost (``model.hot_set``, formulas there), with one
SM's shared memory per SM of the named GPU's datasheet:

    python scripts/hot_set_reach.py 'seed6#webbase-1M,circuit5M' [--gpu H200] [--scale 1]
        [--clusters 1 8 16]

The matrices are generated from the suite entries (seed 0). Markdown on stdout. The cluster rows
assume a load from another SM's shared memory costs nothing; on the H200 such loads ran at
0.4-1.05x the L2 random-gather rate (``scripts/dsmem_gather_probe.py``,
results/h200/kernels/followups/2026-11-25-dsmem-gather-probe), so read them as what a cluster
could serve, not as requests it would save.
"""

from __future__ import annotations

import argparse

import numpy as np

from sparsescope.api import get_spec, hot_set_reach, load_suite


def reach_rows(name: str, counts: np.ndarray, *, entries_per_sm: int, sms: int,
               clusters: list[int]) -> list[str]:
    """One Markdown row per cluster size for one matrix's column counts."""
    rows = []
    for c in clusters:
        r = hot_set_reach(counts, entries_per_sm=entries_per_sm, cluster=c,
                                       sms=sms)
        rows.append(f"| {name} | {c} | {r.entries:,} | {100 * r.share:.1f} % | "
                    f"{r.served / 1e6:.2f} | {r.copies} | {r.fill_sectors / 1e6:.2f} | "
                    f"{r.net_saved / 1e6:.2f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", help="SUITE or 'SUITE#A,B'")
    parser.add_argument("--gpu", default="H200")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--clusters", type=int, nargs="+", default=[1, 8, 16])
    args = parser.parse_args()
    spec = get_spec(args.gpu)
    per_sm = spec.shared_mem_per_sm_bytes // 4
    print(f"{spec.name}: {spec.sm_count} SMs, {per_sm:,} float32 x entries of shared memory "
          f"per SM; M = millions\n")
    print("| matrix | SMs a copy | entries pinned | gathers served | served M | copies "
          "| fill sectors M | served - fill M |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for matrix in load_suite(args.suite, scale=args.scale):
        counts = np.bincount(matrix.csr.indices, minlength=matrix.cols)
        print("\n".join(reach_rows(matrix.name, counts, entries_per_sm=per_sm,
                                   sms=spec.sm_count, clusters=args.clusters)), flush=True)


if __name__ == "__main__":
    main()
