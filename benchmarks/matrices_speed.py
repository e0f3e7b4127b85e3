"""Speed of the matrices stage: Matrix Market I/O and full-scale seed6 generation.

    python benchmarks/matrices_speed.py                  # both parts
    python benchmarks/matrices_speed.py --skip-generate  # only the .mtx write/read
    python benchmarks/matrices_speed.py --nnz 10000000 --tmp /scratch

(a) generates a 1M-row, ``--nnz`` scattered matrix, writes it as ``.mtx`` and reads it back with
``read_matrix`` (fast_matrix_market parse plus all validation and canonicalization), best of
``--repeats``; reports MB/s of file. Target: >= 100 MB/s.
(b) generates the six seed6 matrices at scale 1 one after another (each freed before the next),
reporting seconds per matrix, the total and the peak RSS of the process. Target: < 60 s total.
Part (b) runs first so its peak RSS is not inflated by part (a).

Prints one JSON object and exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from sparsescope.matrices import generate, load_suite, read_matrix, suite_entries, write_matrix

READ_TARGET_MB_S = 100.0
GENERATE_TARGET_S = 60.0


def peak_rss_gib() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def bench_generate(seed: int) -> dict:
    per_matrix = []
    start = time.perf_counter()
    matrices = load_suite("seed6", scale=1.0, seed=seed)
    entries = suite_entries("seed6")
    for _ in entries:
        t0 = time.perf_counter()
        matrix = next(matrices)
        seconds = time.perf_counter() - t0
        per_matrix.append({"name": matrix.name, "kind": matrix.kind, "rows": matrix.rows,
                           "nnz": matrix.nnz, "seconds": round(seconds, 2),
                           "mnnz_per_s": round(matrix.nnz / seconds / 1e6, 1)})
        print(f"  generated {matrix.name:<11} {matrix.nnz:>11,} nnz in {seconds:6.2f} s",
              file=sys.stderr, flush=True)
        del matrix
    total = time.perf_counter() - start
    return {"matrices": per_matrix, "total_s": round(total, 2),
            "total_nnz": sum(e.nnz for e in entries), "peak_rss_gib": round(peak_rss_gib(), 2),
            "target_s": GENERATE_TARGET_S, "ok": total < GENERATE_TARGET_S}


def bench_mtx(nnz: int, repeats: int, tmp: str | None) -> dict:
    rows = 1_000_000
    csr = generate("scattered", rows, nnz, seed=0)
    with tempfile.TemporaryDirectory(dir=tmp) as folder:
        path = Path(folder) / "bench.mtx"
        t0 = time.perf_counter()
        write_matrix(csr, path)
        write_s = time.perf_counter() - t0
        size_mb = os.path.getsize(path) / 1e6
        del csr
        read_times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            matrix = read_matrix(path)
            read_times.append(time.perf_counter() - t0)
            assert matrix.nnz == nnz
            del matrix
    best = min(read_times)
    return {"rows": rows, "nnz": nnz, "file_mb": round(size_mb, 1),
            "write_s": round(write_s, 2), "write_mb_s": round(size_mb / write_s, 1),
            "read_s": [round(t, 3) for t in read_times], "read_mb_s": round(size_mb / best, 1),
            "target_mb_s": READ_TARGET_MB_S, "ok": size_mb / best >= READ_TARGET_MB_S}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nnz", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tmp", help="folder for the temporary .mtx (default: system temp)")
    parser.add_argument("--skip-generate", action="store_true")
    parser.add_argument("--skip-read", action="store_true")
    args = parser.parse_args()
    result: dict = {"cpus": os.cpu_count()}
    if not args.skip_generate:
        result["generate_seed6"] = bench_generate(args.seed)
    if not args.skip_read:
        result["mtx_io"] = bench_mtx(args.nnz, args.repeats, args.tmp)
    print(json.dumps(result, indent=2))
    return 0 if all(part.get("ok", True) for part in result.values()
                    if isinstance(part, dict)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
