"""Sweep throughput on 1 and 2 local Dask workers: do the GPUs wait on host-side preparation?

    python benchmarks/sweep_scaling.py                       # 12 matrices, 3 backends, 0.2 s
    python benchmarks/sweep_scaling.py --matrices 24 --gpu-s 0.1 --workers 1 2 4

Writes ``--matrices`` generated ``.mtx`` files (nonzeros spread log-uniformly from
``--nnz-min`` to ``--nnz-max``: loading, hashing and the float64 reference are real host work)
and sweeps them with ``--backends`` stand-in GPU backends (``tests/sweep/fake_backends.py``,
``SleepGpuBackend``): each case is checked on the host, then "timed" by sleeping ``--gpu-s``
seconds, as a GPU's timing waits on the device without taking a CPU core. Each worker count
runs into a fresh store; the engine's wall time (the cluster's start-up and the report left
out) gives cases per minute, against the ideal ``60 x workers / gpu_s`` of GPUs that never
wait. The in-process sweep (no Dask) is the one-worker baseline without a cluster.

Prints one JSON object (``runs``: per worker count, cases/min, wall, the workers' busy time,
the matrices prefetched, the speedup over 1 worker and the share of the ideal) and a table.
Run it on the code before and after a change (``PYTHONPATH=OLD/src``) to compare.

Measured 2026-11-27 on the 2-core shared CPU machine (load 2-5), 12 matrices of 0.05-1 M
nonzeros, 3 backends (36 cases), cases/min, before (each case built its own float64
reference, matrices in plan order, no background load) and after (one reference per matrix,
largest first, the next matrix loaded in the background where a core is spare):

| ``--gpu-s`` | code | in process | 1 worker | 2 workers | 2 vs 1 |
| --- | --- | --- | --- | --- | --- |
| 0.2 | before | 165.4 | 149.9 | 194.0 | 1.29 |
| 0.2 | after | 215.5 | 193.9 | 208.2 | 1.07 |
| 0.5 | before | (not run) | 89.2 | 126.2 | 1.41 |
| 0.5 | after | (not run) | 99.5 | 125.5 | 1.26 |

Ideal: 300 (0.2 s) and 120 (0.5 s) cases/min a worker. One worker and in process gained
11-30 %; on 2 workers nothing was prefetched (2 cores are fewer than 2 per worker thread:
``sweep.host_cores.room_to_prefetch``; with it on, a run of 0.1-2 M nonzeros gave 108
cases/min on 2 workers against 185 before, the loads taking the cores the cases' own host
work needs), and the 2-worker rate is held by this
machine's 2 cores: each worker's first case spends about 1.3 s finding no GPU, and the host
work of the cases (reference, check) of two workers shares 2 cores with the client and the
scheduler. On a GPU host (16 cores for 1-2 GPUs) every worker has cores to spare.

Each run also gives the workers' first use apart from their cases (``sweep.warm_up``: the
warm-up's seconds, summed and the largest, where the ceilings came from, the warm cases) and
the Dask tasks that held several short cases (``sweep.batching``). Measured 2026-11-27 on the
same 2-core machine (load 2-2.6), defaults (12 matrices, 3 backends, 0.2 s), the code before
(HEAD 9afa864: every worker measured its device's ceilings again, here the CPU's, about 1.3 s
each) and after (the client's ceilings shared, the warm cases dealt out over the workers):

| code | workers | cases/min | engine wall s | busy s | first use s (max) | vs 1 worker |
| --- | --- | --- | --- | --- | --- | --- |
| before | 1 | 205.2 | 10.52 | 9.37 | (not recorded) | 1.00 |
| before | 2 | 215.5 | 10.02 | 17.37 | (not recorded) | 1.05 |
| after | 1 | 221.9 | 9.73 | 8.39 | 0.03 (0.03) | 1.00 |
| after | 2 | 281.5 | 7.67 | 11.93 | 0.87 (0.54) | 1.27 |

With ``--matrices 16 --backends 3 --gpu-s 0.05 --nnz-max 3e5`` (short cases, batched once
their times are known): 2 workers 330.6 -> 443.7 cases/min, busy 12.15 -> 6.67 s, 14 tasks
of several cases. The GPU measurement is ``bash scripts/device.sh sweep-gpus`` (its
``scaling.md`` has the same columns).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKES = HERE.parent / "tests" / "sweep"


def write_matrices(folder: Path, count: int, nnz_min: float, nnz_max: float) -> list[int]:
    """``count`` matrices as ``.mtx``, nonzeros log-uniform in [nnz_min, nnz_max]."""
    from sparsescope import matrices

    sizes = []
    for i in range(count):
        share = i / max(1, count - 1)
        nnz = int(round(math.exp(math.log(nnz_min) + share * math.log(nnz_max / nnz_min))))
        rows = max(1000, nnz // 20)
        kind = ("uniform", "powerlaw", "banded")[i % 3]
        csr = matrices.generate(kind, rows, nnz, seed=i)
        matrices.write_matrix(csr, folder / f"m{i:02d}_{kind}.mtx")
        sizes.append(int(csr.nnz))
    return sizes


def sweep_once(folder: Path, out: Path, backends: list[str], workers: int) -> dict:
    """One sweep into a fresh store: its engine's numbers."""
    from sparsescope import api
    from sparsescope.timing.types import TimingConfig

    options = {} if workers == 0 else {"cluster": "local", "workers": workers}
    start = time.perf_counter()
    result = api.sweep([str(folder)], out_dir=out, backends=backends, quiet=True,
                       store_path=out / "store.sqlite",
                       timing=TimingConfig(warmups=0, repeats=1, flush_l2=False), **options)
    total = time.perf_counter() - start
    engine = result.engine
    bad = [c for c in result.runset.cases if c.outcome != "ok"]
    if bad:
        raise SystemExit(f"{len(bad)} case(s) not ok: {bad[0].matrix} {bad[0].reason}")
    return {"workers": workers or "in process", "cases": result.ran,
            "cases_per_min": round(60 * result.ran / engine.wall_s, 1),
            "engine_wall_s": round(engine.wall_s, 2), "busy_s": round(engine.busy_s, 2),
            "total_s": round(total, 2),
            "prefetched": getattr(engine, "prefetched", None),
            # each worker's first use apart from its cases (None: code before it was recorded)
            "first_use_s": _rounded(getattr(engine, "first_use_s", None)),
            "first_use_max_s": _rounded(max((r.get("seconds", 0.0) for r in
                                             getattr(engine, "first_use", ())), default=None)),
            "ceilings": sorted({r.get("ceilings", "") for r in getattr(engine, "first_use", ())}),
            "warm_cases": sum(len(r.get("warm_cases", ())) for r in
                              getattr(engine, "first_use", ())),
            "batched_tasks": getattr(engine, "batched", None)}


def _rounded(value):
    return None if value is None else round(value, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrices", type=int, default=12)
    parser.add_argument("--backends", type=int, default=3)
    parser.add_argument("--gpu-s", type=float, default=0.2, help="seconds a case 'times'")
    parser.add_argument("--nnz-min", type=float, default=5e4)
    parser.add_argument("--nnz-max", type=float, default=1e6)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2],
                        help="worker counts (0: in process)")
    parser.add_argument("--tmp", help="folder for the matrices (default: system temp)")
    args = parser.parse_args()

    sys.path.insert(0, str(FAKES))
    os.environ["SPARSESCOPE_TEST_GPU_S"] = str(args.gpu_s)
    os.environ["PYTHONPATH"] = os.pathsep.join(  # spawned workers find the fakes too
        [str(FAKES), *filter(None, [os.environ.get("PYTHONPATH")])])
    from sparsescope import registry

    backends = [f"sleep-gpu-{i}" for i in range(args.backends)]
    for name in backends:
        registry.register_backend("spmv", name, "fake_backends:SleepGpuBackend")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        folder = Path(tmp) / "matrices"
        folder.mkdir()
        sizes = write_matrices(folder, args.matrices, args.nnz_min, args.nnz_max)
        runs = [sweep_once(folder, Path(tmp) / f"out{w}", backends, w) for w in args.workers]
    one = next((r["cases_per_min"] for r in runs if r["workers"] == 1), None)
    for run in runs:
        count = run["workers"] if isinstance(run["workers"], int) else 1
        ideal = 60 * count / args.gpu_s
        run["share_of_ideal"] = round(run["cases_per_min"] / ideal, 3)
        run["vs_1_worker"] = round(run["cases_per_min"] / one, 2) if one else None
    result = {"cpus": os.cpu_count(), "matrices": args.matrices, "nnz": sizes,
              "backends": args.backends, "gpu_s": args.gpu_s, "runs": runs}
    print(json.dumps(result, indent=2))
    print("\n| workers | cases/min | engine wall s | busy s | first use s (max) | vs 1 worker "
          "| share of ideal | prefetched | batched |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in runs:
        print(f"| {r['workers']} | {r['cases_per_min']} | {r['engine_wall_s']} | "
              f"{r['busy_s']} | {r['first_use_s']} ({r['first_use_max_s']}) | "
              f"{r['vs_1_worker']} | {r['share_of_ideal']} | {r['prefetched']} | "
              f"{r['batched_tasks']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
