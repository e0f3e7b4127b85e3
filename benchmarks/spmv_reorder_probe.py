"""Reordering probe for the circuit5M analog: does a symmetric row/column permutation applied
once (RCM, or columns and rows by descending degree) cut the time of ``adaptive-i1-h1``?

    PYTHONPATH=src python3 benchmarks/spmv_reorder_probe.py --out reorder.json [--matrix circuit5M]

Per ordering p: B = A[p][:, p] is built once (its cost reported as ``preprocess_s``); each
SpMV then computes y = P^T B (P x): x is gathered into B's order, B's product scattered back,
so x and y stay in the original order. Checked against float64 of the ORIGINAL matrix, then
timed with the project's protocol (CUDA events, 5 warm-ups, median of 30, L2 flushed): the
product on B alone (``spmv_us``) and with the two permutations (``end_to_end_us``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import scipy.sparse as sp

from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
from sparsescope.matrices.suites import load_suite
from sparsescope.ops.spmv import check_output, make_x, reference_spmv
from sparsescope.timing.cuda import time_cuda
from sparsescope.timing.types import TimingConfig

TOLERANCE = 1e-5


def orderings(csr: sp.csr_matrix):
    """Yield (name, permutation or None, seconds to compute it), cheapest first, so that a run
    cut short keeps the original and degree orderings (RCM on the full analog took > 150 s of
    generation + reference + RCM in the first try)."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    yield "original", None, 0.0
    t0 = time.perf_counter()
    degree = np.diff(csr.indptr) + np.bincount(csr.indices, minlength=csr.shape[1])
    yield "degree", np.argsort(-degree, kind="stable").astype(np.int32), time.perf_counter() - t0
    t0 = time.perf_counter()
    rcm = reverse_cuthill_mckee(csr, symmetric_mode=False).astype(np.int32)
    yield "rcm", rcm, time.perf_counter() - t0


def main() -> int:
    import cupy

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--matrix", default="circuit5M")
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    matrix = next(m for m in load_suite("seed6") if m.name == args.matrix)
    a = matrix.csr
    x = make_x(a.shape[1], seed=0, dtype="float32")
    y_ref = reference_spmv(a, x)
    config = TimingConfig(warmups=5, repeats=args.repeats, flush_l2=True)
    result = {"matrix": args.matrix, "rows": int(a.shape[0]), "nnz": int(a.nnz),
              "kernel": "adaptive-i1-h1", "cases": []}
    x_d = cupy.asarray(x)
    n = a.shape[0]
    for name, perm, perm_s in orderings(a):
        rec: dict = {"ordering": name, "perm_s": perm_s}
        t0 = time.perf_counter()
        b = a if perm is None else a[perm][:, perm].tocsr()
        rec["preprocess_s"] = perm_s + time.perf_counter() - t0
        # bandwidth proxy: mean |row - col| after the permutation
        rows_of = np.repeat(np.arange(b.shape[0]), np.diff(b.indptr))
        rec["mean_abs_offset"] = float(np.abs(rows_of - b.indices).mean())
        backend = CudaSpmvAdaptive(iters=1, hint=1, breakdown=False)
        p = backend.prepare(b, "float32", 4)
        p_d = cupy.asarray(perm) if perm is not None else None
        y_out = cupy.empty(a.shape[0], dtype=cupy.float32)

        def step(p=p, p_d=p_d, y_out=y_out, backend=backend):
            if p_d is None:
                backend.launch_call(p)
                return
            cupy.take(x_d, p_d, out=p.x[:n])
            backend.launch_call(p)
            y_out[p_d] = p.y[:n]

        if p_d is not None:
            cupy.take(x_d, p_d, out=p.x[:n])
        else:
            p.x[:n].set(x)
        p.y.fill(cupy.nan)
        y_out.fill(cupy.nan)
        step()
        cupy.cuda.runtime.deviceSynchronize()
        y = cupy.asnumpy(y_out if p_d is not None else p.y[:n])
        corr = check_output(y, y_ref, TOLERANCE)
        rec.update(rel_err=corr.rel_err, ok=bool(corr.passed))
        if corr.passed:
            if p_d is not None:
                cupy.take(x_d, p_d, out=p.x[:n])
            m = time_cuda(lambda p=p, b=backend: b.launch_call(p), config, library="cupy",
                          working_set_bytes=p.bytes_moved, breakdown=False)
            rec["spmv_us"] = m.median_ms * 1e3
            rec["spmv_cov"] = m.cov
            m2 = time_cuda(step, config, library="cupy", working_set_bytes=p.bytes_moved,
                           breakdown=False)
            rec["end_to_end_us"] = m2.median_ms * 1e3
            rec["end_to_end_cov"] = m2.cov
        print(json.dumps(rec), flush=True)
        result["cases"].append(rec)
        with open(args.out, "w") as fh:  # after every ordering: a cut run keeps what it measured
            json.dump(result, fh, indent=1)
        p = None
        cupy.get_default_memory_pool().free_all_blocks()
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
