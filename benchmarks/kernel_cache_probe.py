#!/usr/bin/env python3
"""Does a second process reuse the first one's compiled kernels? (issue 35: each sweep worker
paid its own NVRTC compiles.)

Runs the own SpMV kernels of a small matrix (every auto candidate's launch, through
``sparsescope run``'s backends) in two fresh processes one after the other, sharing one
``CUPY_CACHE_DIR``, and prints each one's seconds to its first results and the cache files
the second process wrote: none when CuPy's disk cache served it (CuPy #10173: a module
compiled with template name expressions was compiled again when the demangled name's spelling
differed from the expression's).

    python benchmarks/kernel_cache_probe.py [--cache DIR]    # needs a GPU
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
start = time.perf_counter()
from sparsescope.backends.select_predicted import candidates
from sparsescope.backends.select import matrix_statistics
from sparsescope.backends.spmv_auto import CHOICES
from sparsescope.matrices import generate
from sparsescope.ops.spmv import make_x
csr = generate("powerlaw", 20_000, 200_000, seed=1)
x = make_x(csr.shape[1], seed=0, dtype="float32")
names, times = [], {}
for cand in candidates(matrix_statistics(csr)):
    t = time.perf_counter()
    backend = CHOICES[cand.backend](**cand.params)
    prepared = backend.prepare(csr, "float32", 4)
    backend.run(prepared, x)
    times[cand.label] = round(time.perf_counter() - t, 3)
    names += [step.kernel for step in prepared.launches]
print(json.dumps({"total_s": round(time.perf_counter() - start, 3), "per_candidate_s": times,
                  "kernels": sorted(set(names))}))
"""


def cache_files(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime for p in root.rglob("*") if p.is_file()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", help="CUPY_CACHE_DIR to share (default: a fresh one)")
    args = parser.parse_args(argv)
    cache = Path(args.cache or tempfile.mkdtemp(prefix="ss-cupy-cache-"))
    env = {**os.environ, "CUPY_CACHE_DIR": str(cache)}
    runs = []
    for n in (1, 2):
        before = cache_files(cache)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                             text=True)
        wall = time.perf_counter() - start
        if out.returncode:
            print(out.stderr[-3000:], file=sys.stderr)
            return out.returncode
        report = json.loads(out.stdout.strip().splitlines()[-1])
        after = cache_files(cache)
        written = sorted(k for k, v in after.items() if before.get(k) != v)
        runs.append({"process": n, "wall_s": round(wall, 2), **report,
                     "cache_files_written": len(written), "cache_files": len(after)})
    print(json.dumps(runs, indent=1))
    for r in runs:
        print(f"process {r['process']}: {r['wall_s']} s wall, {r['total_s']} s in the child, "
              f"{r['cache_files_written']} cache files written of {r['cache_files']}")
    print("kernels:", ", ".join(runs[0]["kernels"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
