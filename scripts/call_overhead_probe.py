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
  sector (the first round of a real kernel's cold misses, all in flight at once);
- ``code 4k``: one warp through 4,096 straight-line FMAs (8 independent chains, about 64 KB of
  SASS, no memory access): what fetching a large kernel's code costs when the flush has
  evicted it from the L2 (flushed against not);
- ``shape GRIDxBLOCK [smem B] [sync]``: an empty kernel in a real SpMM's launch shape (its
  blocks, threads, dynamic shared memory; ``sync`` also writes shared memory and passes one
  barrier), to tell a launch shape's fixed cost from the kernel's own work (``--shape``);
- ``spmv NAME``: the own kernels' calls on a small matrix (``--matrix``, default the
  held-out population's banded-02, 1,321 rows), through their own ``time`` method.

Printed: each probe's median and 10th percentile (us). The model's fixed cost of a flushed call
is read against it (``model.predict``: overhead + latency terms); the script needs a GPU and
CuPy.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

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

extern "C" __global__ void probe_shared_sync(float* out) {
    extern __shared__ float probe_shared[];
    probe_shared[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (probe_shared[(threadIdx.x + 1) % blockDim.x] < 0.f) out[threadIdx.x] = 1.f;
}

extern "C" __global__ void probe_code(float seed, float* out) {
    float a[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) a[c] = seed + c;
#pragma unroll
    for (int i = 0; i < 512; ++i) {
#pragma unroll
        for (int c = 0; c < 8; ++c) a[c] = fmaf(a[c], 1.0001f + i * 1e-7f, 0.5f + c);
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < 8; ++c) s += a[c];
    out[threadIdx.x] = s;
}
"""

SPMV = ("cuda-spmv-adaptive", "cuda-spmv-merge", "cuda-spmv-sell")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--matrix", default="population-held-out#banded-02")
    parser.add_argument("--shape", action="append", default=[], metavar="GRIDxBLOCK[:SMEM]",
                        help="also an empty launch of that shape, with SMEM bytes of dynamic "
                             "shared memory (and the same with a barrier); repeatable")
    args = parser.parse_args(argv)

    import cupy as cp
    import numpy as np

    from sparsescope.api import TimingConfig, time_cuda

    module = cp.RawModule(code=SOURCE)
    empty, chain = module.get_function("probe_empty"), module.get_function("probe_chain")
    code = module.get_function("probe_code")
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
        "code 4k": lambda: code((1,), (32,), (np.float32(1.0), out.view(cp.float32))),
    }
    sync = module.get_function("probe_shared_sync")
    for spec in args.shape:
        grid, block, smem = parse_shape(spec)
        label = f"shape {grid}x{block}" + (f" smem {smem}" if smem else "")
        probes[label] = (lambda g=grid, b=block, m=smem:
                         empty((g,), (b,), (), shared_mem=m))
        shared = max(smem, 4 * block)  # the barrier kernel writes one float a thread
        probes[label + " sync"] = (lambda g=grid, b=block, m=shared:
                                   sync((g,), (b,), (out.view(cp.float32),), shared_mem=m))
    rows = []
    for flush in (True, False):
        config = TimingConfig(warmups=3, repeats=args.repeats, flush_l2=flush)
        for name, fn in probes.items():
            m = time_cuda(fn, config, library="cupy", breakdown=False)
            us = sorted(1e3 * s for s in m.samples_ms)
            rows.append({"probe": name, "flushed": m.flushed,
                         "median_us": statistics.median(us),
                         "p10_us": us[len(us) // 10], "samples_us": us})
    rows += spmv_rows(args.matrix, args.repeats)
    print(f"{'probe':24s} {'flushed':>8s} {'median us':>10s} {'p10 us':>8s}")
    for r in rows:
        print(f"{r['probe']:24s} {str(r['flushed']):>8s} {r['median_us']:10.2f} "
              f"{r['p10_us']:8.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def parse_shape(spec: str) -> tuple[int, int, int]:
    """``GRIDxBLOCK[:SMEM]`` -> (blocks, threads a block, bytes of dynamic shared memory).

    >>> parse_shape("92x256:4224")
    (92, 256, 4224)
    """
    shape, _, smem = spec.partition(":")
    grid, _, block = shape.partition("x")
    try:
        return int(grid), int(block), int(smem or 0)
    except ValueError:
        raise SystemExit(f"--shape {spec!r}: expected GRIDxBLOCK[:SMEM], e.g. 92x256:4224") \
            from None


def spmv_rows(matrix: str, repeats: int) -> list[dict]:
    """The own kernels' calls on ``matrix`` (SUITE#NAME) through their ``time`` method, with
    the L2 flushed and without; each output checked against float64 first."""
    import numpy as np

    from sparsescope.api import TimingConfig, get_backend, suite_csr

    source, _, name = matrix.partition("#")
    csr = suite_csr(source, name, 1.0, 0)
    x = np.random.default_rng(0).standard_normal(csr.shape[1])
    want = csr.astype(np.float64) @ x
    rows = []
    for backend_name in SPMV:
        backend = get_backend(backend_name)
        prepared = backend.prepare(csr, "float32", 4)
        got = backend.run(prepared, x.astype(np.float32))
        err = float(np.abs(got - want).max() / max(1e-30, np.abs(want).max()))
        if err > 1e-4:
            raise SystemExit(f"{backend_name} on {matrix}: relative error {err:.2e}")
        for flush in (True, False):
            config = TimingConfig(warmups=3, repeats=repeats, flush_l2=flush)
            m = backend.time(prepared, x.astype(np.float32), config)
            us = sorted(1e3 * s for s in m.samples_ms)
            rows.append({"probe": f"spmv {backend_name[10:]}", "flushed": m.flushed,
                         "median_us": statistics.median(us), "p10_us": us[len(us) // 10],
                         "samples_us": us, "rel_err": err})
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
