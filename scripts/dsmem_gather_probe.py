"""Measure how fast random 4-byte loads from (distributed) shared memory run on the present GPU,
before a cluster-shared hot set of x is built (issue 17; ``model.hot_set`` and
``scripts/hot_set_reach.py`` say what such a hot set would serve). Needs a Hopper GPU and CuPy:

    python scripts/dsmem_gather_probe.py [--loads 256] [--repeats 20] [--json]

For each (cluster size C, owners R) of :data:`CONFIGS`, ``dsmem_gather_probe.cu`` is compiled
with ``-DCLUSTER=C -DRANKS=R`` and launched with 1,024 threads a block and 2 blocks per SM (the
grid a multiple of C); R = 1 reads the block's own shared memory through the same path, R = C
any block's of its cluster. Rate = threads x loads / median time (CUDA events, after 3 untimed
launches), in G loads/s; the launch includes filling 48 KB a block and two cluster barriers,
which ``--loads`` large enough makes small. Compare with the device's ``l2_gather_gsectors_s``
ceiling (``sparsescope ceilings``): a hot set pays off only where its loads run faster than the
L2 random gathers they replace.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

SOURCE = Path(__file__).with_name("dsmem_gather_probe.cu")
#: (cluster size, owners a load picks among): own shared memory, then 2, 4 and 8 blocks'.
CONFIGS = ((1, 1), (8, 1), (2, 2), (4, 4), (8, 8))
THREADS = 1024
BLOCKS_PER_SM = 2


def grid_for(sms: int, cluster: int) -> int:
    """Blocks launched: BLOCKS_PER_SM a SM, rounded down to a whole number of clusters."""
    return max(cluster, (sms * BLOCKS_PER_SM) // cluster * cluster)


def rate_gloads_s(blocks: int, loads: int, ms: float) -> float:
    """G loads/s: blocks x THREADS x loads / (ms x 10^6)."""
    return blocks * THREADS * loads / (ms * 1e6)


def measure(loads: int, repeats: int) -> list[dict]:
    import cupy

    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    sink = cupy.zeros(1, dtype=cupy.float32)
    out = []
    for cluster, ranks in CONFIGS:
        module = cupy.RawModule(code=SOURCE.read_text(), options=(
            "-std=c++17", f"-DCLUSTER={cluster}", f"-DRANKS={ranks}"))
        kernel = module.get_function("dsmem_gather")
        blocks = grid_for(sms, cluster)
        args = (cupy.int32(loads), sink)
        for _ in range(3):
            kernel((blocks,), (THREADS,), args)
        times = []
        for _ in range(repeats):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            kernel((blocks,), (THREADS,), args)
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop))
        ms = statistics.median(times)
        out.append({"cluster": cluster, "owners": ranks, "blocks": blocks, "threads": THREADS,
                    "loads_per_thread": loads, "median_ms": ms,
                    "gloads_s": rate_gloads_s(blocks, loads, ms)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=256, help="loads a thread (multiple of 8)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.loads <= 0 or args.loads % 8:
        parser.error("--loads must be a positive multiple of 8")
    rows = measure(args.loads, args.repeats)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print("cluster  owners  blocks  median ms  G loads/s")
    for r in rows:
        print(f"{r['cluster']:7}  {r['owners']:6}  {r['blocks']:6}  {r['median_ms']:9.4f}  "
              f"{r['gloads_s']:9.1f}")


if __name__ == "__main__":
    main()
