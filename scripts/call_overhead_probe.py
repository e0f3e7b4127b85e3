"""What a timed call costs beyond its kernel's own work, measured through the timing protocol
itself (``sparsescope.timing.cuda.time_cuda``: events queued behind a hold, the L2 flushed before
each sample or not):

    python scripts/call_overhead_probe.py [--repeats 50] [--json FILE]

Probes (CuPy raw kernels, each timed with the L2 flushed and without):

- ``empty``: one empty kernel, 1 block of 32 threads;
- ``empty x2``: two empty kernels back to back (the cost of a further launch);
- ``chain1`` / ``chain3``: one thread, 1 or 3 dependent 4-byte loads (each address comes from
  the load before, as a row pointer gives an index gives an x entry), then one store; the
  buffers are 256 MiB apart and untouched since the flush;
- ``chain3 grid``: the same chain in every thread of 132 x 256 threads, each thread on its own
  sector (the first round of a real kernel's cold misses, all in flight at once).

Printed: each probe's median and 10th percentile (us). The model's fixed cost of a flushed call
is read against it (``model.predict``: overhead + latency terms); the script needs a GPU and
CuPy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SOURCE = r"""
extern "C" __global__ void probe_empty() { }

extern "C" __global__ void probe_chain(const unsigned* __restrict__ a,
                                       const unsigned* __restrict__ b,
                                       const unsigned* __restrict__ c,
                                       int depth, unsigned* out) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned p = __ldcg(a + t * 8);          // one 32-byte sector per thread
    if (depth > 1) p = __ldcg(b + p);
    if (depth > 2) p = __ldcg(c + p);
    out[t] = p;
}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    import cupy as cp
    import numpy as np

    from sparsescope.timing.cuda import time_cuda
    from sparsescope.timing.types import TimingConfig

    module = cp.RawModule(code=SOURCE)
    empty, chain = module.get_function("probe_empty"), module.get_function("probe_chain")
    threads = 132 * 256
    span = 64 << 20                                  # 256 MiB of uint32 per buffer
    a = cp.zeros(span, dtype=cp.uint32)
    # a[t*8] -> a sector of b, b's entry -> a sector of c: each thread's own, spread over pages
    rng = np.random.default_rng(0)
    targets = rng.choice(span // 8, size=threads, replace=False).astype(np.uint32) * 8
    a[cp.arange(threads) * 8] = cp.asarray(targets)
    b = cp.zeros(span, dtype=cp.uint32)
    b[cp.asarray(targets)] = cp.asarray(rng.choice(span // 8, size=threads,
                                                   replace=False).astype(np.uint32) * 8)
    c = cp.zeros(span, dtype=cp.uint32)
    out = cp.zeros(threads, dtype=cp.uint32)

    def one(depth: int, grid: int, block: int):
        return lambda: chain((grid,), (block,), (a, b, c, np.int32(depth), out))

    probes = {
        "empty": lambda: empty((1,), (32,), ()),
        "empty x2": lambda: (empty((1,), (32,), ()), empty((1,), (32,), ())),
        "chain1": one(1, 1, 1),
        "chain3": one(3, 1, 1),
        "chain3 grid": one(3, 132, 256),
    }
    rows = []
    for flush in (True, False):
        config = TimingConfig(warmups=3, repeats=args.repeats, flush_l2=flush)
        for name, fn in probes.items():
            m = time_cuda(fn, config, library="cupy", breakdown=False)
            us = sorted(1e3 * s for s in m.samples_ms)
            rows.append({"probe": name, "flushed": m.flushed,
                         "median_us": statistics.median(us),
                         "p10_us": us[len(us) // 10], "samples_us": us})
    print(f"{'probe':14s} {'flushed':>8s} {'median us':>10s} {'p10 us':>8s}")
    for r in rows:
        print(f"{r['probe']:14s} {str(r['flushed']):>8s} {r['median_us']:10.2f} "
              f"{r['p10_us']:8.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
