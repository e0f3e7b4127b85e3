"""Own SpMV kernels against cuSPARSE on the full-scale seed6 analogs, in one process.

    PYTHONPATH=src python3 benchmarks/spmv_kernels.py sweep --out kernels.json \
        [--save-matrices DIR] [--matrices cant,ldoor] [--repeats 30]
    PYTHONPATH=src python3 benchmarks/spmv_kernels.py ncu-target --results kernels.json \
        --matrices-dir DIR          # run under ncu: each matrix's best own kernel, once
    python3 benchmarks/spmv_kernels_report.py ...   # tables, targets, gaps (no GPU)

``sweep``: measures the device's ceilings (copy, read, L2) and a random-gather probe, then per
matrix: generates it once, draws x, computes the float64 reference, and for every backend
(three cuSPARSE configurations and every own kernel variant) prepares, poisons, runs, checks
(relative error <= 1e-5, else not timed) and times it with the project's protocol (CUDA
events, 5 warm-ups, median of 30, L2 flushed before every repeat). The auto selection's
choice and reason are recorded and the chosen kernel timed as ``cuda-spmv-auto``; the best
own kernel is timed once more with x held in L2 by an access-policy window. Results are
written after every matrix, so a crash keeps what was measured.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
from sparsescope.backends.spmv_auto import CHOICES, CudaSpmvAuto
from sparsescope.backends.spmv_compressed import CudaSpmvTileDelta16
from sparsescope.backends.spmv_merge import CudaSpmvMerge
from sparsescope.backends.spmv_sell import CudaSpmvBlocked16, CudaSpmvDelta16, CudaSpmvSell
from sparsescope.backends.spmv_sell16_format import encode_sell16
from sparsescope.model.spmv import spmv_traffic

SCHEMA = "sparsescope.spmv_kernels/1"
BASELINES = ("torch-cusparse-i64", "torch-cusparse-i32", "cupy-cusparse-i32")
#: label -> (class, parameters): every own kernel variant the sweep times.
VARIANTS = {
    "adaptive-i1-h1": (CudaSpmvAdaptive, {"iters": 1, "hint": 1}),
    "adaptive-i1-h0": (CudaSpmvAdaptive, {"iters": 1, "hint": 0}),
    "adaptive-i2-h1": (CudaSpmvAdaptive, {"iters": 2, "hint": 1}),
    "adaptive-i1-hub8k": (CudaSpmvAdaptive, {"iters": 1, "hint": 1, "hub": 8192}),
    "merge-i1-h1": (CudaSpmvMerge, {"iters": 1, "hint": 1}),
    "merge-i2-h1": (CudaSpmvMerge, {"iters": 2, "hint": 1}),
    "tiles16-i2-h1": (CudaSpmvTileDelta16, {"iters": 2, "hint": 1}),
    "sell-u4-m6-h1": (CudaSpmvSell, {"unroll": 4, "minb": 6, "hint": 1}),
    "sell-u4-m6-h0": (CudaSpmvSell, {"unroll": 4, "minb": 6, "hint": 0}),
    "sell-u2-m8-h1": (CudaSpmvSell, {"unroll": 2, "minb": 8, "hint": 1}),
    "sell-t2-u4-m6-h1": (CudaSpmvSell, {"tpr": 2, "unroll": 4, "minb": 6, "hint": 1}),
    "sell-t2-u2-m8-h1": (CudaSpmvSell, {"tpr": 2, "unroll": 2, "minb": 8, "hint": 1}),
    "delta16-u4-m6-h1": (CudaSpmvDelta16, {"unroll": 4, "minb": 6, "hint": 1}),
    "delta16-u2-m8-h1": (CudaSpmvDelta16, {"unroll": 2, "minb": 8, "hint": 1}),
    "delta16-t2-u4-m6-h1": (CudaSpmvDelta16, {"tpr": 2, "unroll": 4, "minb": 6, "hint": 1}),
    "delta16-t2-u2-m8-h1": (CudaSpmvDelta16, {"tpr": 2, "unroll": 2, "minb": 8, "hint": 1}),
    # targets follow-up (scripts/device_kernels_targets.sh): more threads per row for pwtk,
    # L1 kept for the hot columns x[0, 16k / 32k) for circuit5M
    "delta16-t4-u2-m8-h1": (CudaSpmvDelta16, {"tpr": 4, "unroll": 2, "minb": 8, "hint": 1}),
    "delta16-t4-u4-m6-h1": (CudaSpmvDelta16, {"tpr": 4, "unroll": 4, "minb": 6, "hint": 1}),
    "delta16-t8-u2-m8-h1": (CudaSpmvDelta16, {"tpr": 8, "unroll": 2, "minb": 8, "hint": 1}),
    "sell-t4-u2-m8-h1": (CudaSpmvSell, {"tpr": 4, "unroll": 2, "minb": 8, "hint": 1}),
    "adaptive-i1-l1h16k": (CudaSpmvAdaptive, {"iters": 1, "hint": 1, "hub": -16384}),
    "adaptive-i1-l1h32k": (CudaSpmvAdaptive, {"iters": 1, "hint": 1, "hub": -32768}),
    "adaptive-i2-l1h32k": (CudaSpmvAdaptive, {"iters": 2, "hint": 1, "hub": -32768}),
    # 1 x 3 blocks, one 16-bit offset per block (FEM rows of 3-column runs: pwtk, ldoor)
    "blocked3-u2-m8-h1": (CudaSpmvBlocked16, {"block": 3, "unroll": 2, "minb": 8, "hint": 1}),
    "blocked3-u4-m6-h1": (CudaSpmvBlocked16, {"block": 3, "unroll": 4, "minb": 6, "hint": 1}),
    "blocked3-t2-u2-m8-h1": (CudaSpmvBlocked16, {"block": 3, "tpr": 2, "unroll": 2, "minb": 8,
                                                 "hint": 1}),
    "blocked3-t2-u4-m6-h1": (CudaSpmvBlocked16, {"block": 3, "tpr": 2, "unroll": 4, "minb": 6,
                                                 "hint": 1}),
    "blocked3-t4-u2-m8-h1": (CudaSpmvBlocked16, {"block": 3, "tpr": 4, "unroll": 2, "minb": 8,
                                                 "hint": 1}),
    "blocked3-u3-m6-h1": (CudaSpmvBlocked16, {"block": 3, "unroll": 3, "minb": 6, "hint": 1}),
    # decoupled access / execute: streams staged in shared memory by cp.async (stage = steps
    # per chunk, double-buffered)
    "blocked3-dae4-m6-h1": (CudaSpmvBlocked16, {"block": 3, "stage": 4, "minb": 6, "hint": 1}),
    "blocked3-t2-dae4-m6-h1": (CudaSpmvBlocked16, {"block": 3, "tpr": 2, "stage": 4, "minb": 6,
                                                   "hint": 1}),
    "blocked3-t2-dae2-m6-h1": (CudaSpmvBlocked16, {"block": 3, "tpr": 2, "stage": 2, "minb": 6,
                                                   "hint": 1}),
    "blocked3-t4-dae4-m6-h1": (CudaSpmvBlocked16, {"block": 3, "tpr": 4, "stage": 4, "minb": 6,
                                                   "hint": 1}),
    "delta16-t2-dae4-m6-h1": (CudaSpmvDelta16, {"tpr": 2, "stage": 4, "minb": 6, "hint": 1}),
    "sell-t2-dae4-m6-h1": (CudaSpmvSell, {"tpr": 2, "stage": 4, "minb": 6, "hint": 1}),
}
TOLERANCE = 1e-5
#: x entries an SM can keep on chip at most (its whole 256 KB L1 / shared-memory array, float32),
#: and what a cluster of 16 SMs holds in distributed shared memory: the gather bound's capacities.
ON_CHIP_X_ENTRIES = {"sm": 65_536, "cluster16": 16 * 65_536}
GATHER_PROBE = r"""
extern "C" __global__ void gather_probe(const float* __restrict__ x, const unsigned mask,
                                        const int iters, float* __restrict__ out) {
    unsigned h = (blockIdx.x * blockDim.x + threadIdx.x) * 2654435761u;
    float s = 0.f;
    for (int i = 0; i < iters; ++i) {
        h = h * 1664525u + 1013904223u;
        s += __ldg(x + ((h >> 7) & mask));
    }
    if (s == 1234.5f) out[0] = s;
}
"""


def label_of(cls: type, params: dict) -> str:
    """The sweep label of (class, params), defaults filled in; '' when none matches."""
    want = {**cls.defaults, **params}
    for label, (c, p) in VARIANTS.items():
        if c is cls and {**c.defaults, **p} == want:
            return label
    return ""


def int32_bytes(rows: int, cols: int, nnz: int) -> int:
    """INT32 CSR byte model, y written once (the minimum; seed 000 section 2.5 with INT32)."""
    return spmv_traffic(rows, cols, nnz, value_bytes=4, index_bytes=4, y_read=False).total_bytes


def environment() -> dict:
    import cupy
    import torch

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    runtime = cupy.cuda.runtime.runtimeGetVersion()
    driver = cupy.cuda.runtime.driverGetVersion()
    env = {"device": name, "sm_count": int(props["multiProcessorCount"]),
           "l2_bytes": int(props["l2CacheSize"]),
           "cuda_runtime": f"{runtime // 1000}.{runtime % 1000 // 10}",
           "cuda_driver_api": f"{driver // 1000}.{driver % 1000 // 10}",
           "torch": torch.__version__, "torch_cuda": str(torch.version.cuda),
           "cupy": cupy.__version__, "numpy": np.__version__, "python": platform.python_version(),
           "nvrtc": ".".join(str(v) for v in cupy.cuda.nvrtc.getVersion())}
    try:
        from sparsescope.backends.spmv_l2 import l2_persisting_limits

        env["l2_persisting_max_bytes"], env["l2_window_max_bytes"] = l2_persisting_limits()
    except Exception as exc:  # informative only
        env["l2_limits_error"] = str(exc)
    return env


def gather_probe(repeats: int = 5) -> dict:
    """Random 4-byte gathers from an L2-resident 16 MiB array: sectors per second."""
    import cupy

    kernel = cupy.RawKernel(GATHER_PROBE, "gather_probe")
    n = 1 << 22
    x = cupy.random.random(n, dtype=cupy.float32)
    out = cupy.zeros(1, dtype=cupy.float32)
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    blocks, threads, iters = sms * 8, 256, 512

    def launch():
        kernel((blocks,), (threads,), (x, np.uint32(n - 1), np.int32(iters), out))

    for _ in range(3):
        launch()
    best = float("inf")
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, end))
    loads = blocks * threads * iters
    return {"loads": loads, "best_ms": best, "gsectors_per_s": loads / (best * 1e-3) / 1e9,
            "method": "random 4-byte __ldg gathers (LCG indices) over a 16 MiB float array "
                      f"(L2-resident), {blocks} x {threads} threads x {iters}; best of {repeats}"}


def free_gpu() -> None:
    import cupy
    import torch

    cupy.get_default_memory_pool().free_all_blocks()
    torch.cuda.empty_cache()


def measurement_dict(m) -> dict:
    return {"median_ms": m.median_ms, "mean_ms": m.mean_ms, "min_ms": m.min_ms, "cov": m.cov,
            "samples_ms": list(m.samples_ms), "flushed": m.flushed,
            "kernel_breakdown": list(m.kernel_breakdown)}


def run_one(backend, prepare, x, y_ref, config) -> dict:
    """Prepare, poison, run, check, then time one backend; errors become a failed record."""
    from sparsescope.ops.spmv import check_output

    rec: dict = {"ok": False}
    t0 = time.perf_counter()
    try:
        prepared = prepare()
        rec["prepare_s"] = time.perf_counter() - t0
        rec["poisoned"] = bool(backend.poison_output(prepared))
        y = backend.run(prepared, x)
        corr = check_output(y, y_ref, TOLERANCE)
        rec["rel_err"] = corr.rel_err
        rec["max_abs_err"] = corr.max_abs_err
        try:
            rec["notes"] = {str(k): str(v) for k, v in backend.notes(prepared).items()}
        except Exception as exc:
            rec["notes"] = {"notes_error": repr(exc)}
        if not corr.passed:
            rec["error"] = f"rel_err {corr.rel_err:.3g} above {TOLERANCE}; not timed"
            return rec
        rec.update(measurement_dict(backend.time(prepared, x, config)))
        rec["ok"] = True
        try:  # timing may add notes (the L2 window's description)
            rec["notes"] = {str(k): str(v) for k, v in backend.notes(prepared).items()}
        except Exception:
            pass
        rec["versions"] = backend.library_versions()
    except Exception as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["traceback"] = traceback.format_exc()[-2000:]
    finally:
        prepared = None
        free_gpu()
    return rec


def hot_shares(csr: sp.csr_matrix) -> dict[str, dict]:
    """Share of the gathers the most-gathered x entries serve, per on-chip capacity (the input
    of :func:`sparsescope.model.gathers.gather_bound`)."""
    from sparsescope.model.gathers import hot_share

    counts = np.bincount(csr.indices, minlength=csr.shape[1])
    return {where: {"capacity_entries": cap, "share": hot_share(counts, cap)}
            for where, cap in ON_CHIP_X_ENTRIES.items()}


def sweep_matrix(matrix, config, args) -> dict:
    from sparsescope.backends import get_backend
    from sparsescope.backends.select import select_for
    from sparsescope.ops.spmv import make_x, reference_spmv

    csr = matrix.csr
    rows, cols = csr.shape
    x = make_x(cols, seed=0, dtype="float32")
    y_ref = reference_spmv(csr, x)
    entry = {"name": matrix.name, "kind": matrix.kind, "source": matrix.source,
             "rows": int(rows), "cols": int(cols), "nnz": int(csr.nnz),
             "bytes_int32": int32_bytes(rows, cols, csr.nnz),
             "bytes_int32_y_read": spmv_traffic(rows, cols, csr.nnz, y_read=True).total_bytes,
             "hot_share": hot_shares(csr), "cases": []}
    for name in BASELINES:
        backend = get_backend(name)
        index_bytes = backend.capability.index_bytes[0]
        rec = run_one(backend, lambda b=backend, i=index_bytes: b.prepare(csr, "float32", i),
                      x, y_ref, config)
        rec.update(label=name, backend=name, params={}, family="cusparse")
        entry["cases"].append(rec)
        print(f"  {name:22s} {summary(rec)}", flush=True)
    formats: dict = {}

    def prepare_with_cache(backend):
        key = backend.format_key()
        if key not in formats:
            t0 = time.perf_counter()
            sell_key = ("CudaSpmvSell", *key[1:])
            if type(backend) is CudaSpmvDelta16 and sell_key in formats:
                formats[key] = encode_sell16(formats[sell_key], rows, cols)  # reuse the packing
            else:
                formats[key] = backend.build_format(csr)
            entry.setdefault("format_s", {})[repr(key)] = time.perf_counter() - t0
        return backend.upload(formats[key], csr, "float32")

    wanted = [v for v in VARIANTS if not args.variants or v in args.variants]
    for label in wanted:
        cls, params = VARIANTS[label]
        backend = cls(breakdown=False, **params)
        rec = run_one(backend, lambda b=backend: prepare_with_cache(b), x, y_ref, config)
        rec.update(label=label, backend=cls.name, params=params, family="own")
        entry["cases"].append(rec)
        print(f"  {label:22s} {summary(rec)}", flush=True)
    # automatic selection, timed as its own backend (formats reused)
    from sparsescope.backends.spmv_device import sm_count

    t0 = time.perf_counter()
    selection = select_for(csr, sm_count())
    entry["select_s"] = time.perf_counter() - t0
    entry["selection"] = selection.as_dict()
    chosen_cls = CHOICES[selection.backend]
    entry["selection"]["label"] = label_of(chosen_cls, dict(selection.params))
    auto = CudaSpmvAuto(breakdown=True)
    backend = chosen_cls(breakdown=True, **selection.params)

    def prepare_auto():
        from sparsescope.backends.spmv_auto import PreparedAuto

        return PreparedAuto(selection, backend, prepare_with_cache(backend))

    rec = run_one(auto, prepare_auto, x, y_ref, config)
    rec.update(label="auto", backend="cuda-spmv-auto", params={"selected": selection.backend},
               family="auto")
    entry["cases"].append(rec)
    print(f"  {'auto':22s} {summary(rec)} -> {entry['selection']['label']}", flush=True)
    # the best own kernel again, x held in L2 by an access-policy window
    own = [c for c in entry["cases"] if c["family"] == "own" and c["ok"]]
    if own and not args.no_l2_window:
        best = min(own, key=lambda c: c["median_ms"])
        cls, params = VARIANTS[best["label"]]
        backend = cls(breakdown=False, l2_window=True, **params)
        rec = run_one(backend, lambda b=backend: prepare_with_cache(b), x, y_ref, config)
        rec.update(label=best["label"] + "+l2window", backend=cls.name, params=params,
                   family="l2window")
        entry["cases"].append(rec)
        print(f"  {rec['label']:22s} {summary(rec)}", flush=True)
    formats.clear()
    return entry


def summary(rec: dict) -> str:
    if not rec.get("ok"):
        return "FAILED " + rec.get("error", "")[:200]
    return (f"{rec['median_ms'] * 1e3:9.2f} us  cov {rec['cov']:.3f}  err {rec['rel_err']:.1e}"
            f"  prep {rec.get('prepare_s', 0):.2f}s")


def save_matrix(matrix, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    csr = matrix.csr
    np.savez(folder / f"{matrix.name}.npz", indptr=csr.indptr, indices=csr.indices,
             data=csr.data.astype(np.float32), shape=np.array(csr.shape))


def cmd_sweep(args) -> int:
    import cupy

    from sparsescope.hardware.gpu_ceilings import measure_gpu_ceilings
    from sparsescope.matrices import load_suite
    from sparsescope.timing import TimingConfig

    started = time.perf_counter()
    out = Path(args.out)
    result = {"schema": SCHEMA, "created_utc": dt.datetime.now(dt.UTC).isoformat(),
              "command": " ".join([Path(sys.executable).name, *sys.argv]),
              "environment": environment(), "matrices": []}
    config = TimingConfig(warmups=args.warmups, repeats=args.repeats, flush_l2=True)
    result["timing"] = {"warmups": config.warmups, "repeats": config.repeats,
                        "statistic": config.statistic, "flush_l2": True,
                        "clock": "cuda-events (sparsescope.timing.cuda.time_cuda)"}
    result["byte_model"] = ("INT32 CSR, y written once: 8 nnz + 4 (rows + 1) + 4 cols + 4 rows "
                            "(sparsescope.model.spmv.spmv_traffic, index_bytes=4, "
                            "y_read=False)")
    ceilings = measure_gpu_ceilings()
    result["ceilings"] = {k: getattr(ceilings, k) for k in (
        "device", "copy_bw_gb_s", "read_bw_gb_s", "l2_bw_gb_s", "dram_latency_ns",
        "l2_latency_ns", "fp32_gflops")}
    result["ceilings"]["method"] = dict(ceilings.method)
    result["gather_probe"] = gather_probe()
    print(f"copy {ceilings.copy_bw_gb_s:.0f} GB/s, read {ceilings.read_bw_gb_s:.0f} GB/s, "
          f"L2 {ceilings.l2_bw_gb_s:.0f} GB/s, random L2 gathers "
          f"{result['gather_probe']['gsectors_per_s']:.1f} G/s", flush=True)
    free_gpu()
    names = args.matrices.split(",") if args.matrices else None
    for matrix in load_suite("seed6", scale=args.scale):
        if names and matrix.name not in names:
            continue
        t0 = time.perf_counter()
        print(f"{matrix.name}: {matrix.rows} x {matrix.cols}, {matrix.nnz} nnz "
              f"(generated)", flush=True)
        try:
            entry = sweep_matrix(matrix, config, args)
        except Exception as exc:
            entry = {"name": matrix.name, "error": traceback.format_exc()[-3000:]}
            print(f"  matrix failed: {exc}", flush=True)
        entry["seconds"] = time.perf_counter() - t0
        result["matrices"].append(entry)
        if args.save_matrices:
            save_matrix(matrix, Path(args.save_matrices))
        out.write_text(json.dumps(result, indent=1, default=float))
        del matrix
        free_gpu()
        cupy.cuda.Device().synchronize()
    result["seconds"] = time.perf_counter() - started
    out.write_text(json.dumps(result, indent=1, default=float))
    print_table(result)
    return 0


def best_case(entry: dict, family: str) -> dict | None:
    cases = [c for c in entry.get("cases", []) if c.get("ok") and c["family"] == family]
    return min(cases, key=lambda c: c["median_ms"]) if cases else None


def print_table(result: dict) -> None:
    copy = result["ceilings"]["copy_bw_gb_s"]
    print(f"\n{'matrix':11s} {'best own kernel':22s} {'us':>8s} {'%copy':>6s} {'vs i64':>7s} "
          f"{'vs cuSP':>7s} {'auto':>8s} {'auto->':18s}")
    for e in result["matrices"]:
        if "cases" not in e:
            print(f"{e['name']:11s} ERROR")
            continue
        own, cus = best_case(e, "own"), best_case(e, "cusparse")
        i64 = next((c for c in e["cases"] if c["label"] == "torch-cusparse-i64" and c["ok"]),
                   None)
        auto = next((c for c in e["cases"] if c["label"] == "auto" and c.get("ok")), None)
        if own is None:
            print(f"{e['name']:11s} no own kernel passed")
            continue
        pct = 100 * e["bytes_int32"] / (own["median_ms"] * 1e-3) / 1e9 / copy
        sp64 = i64["median_ms"] / own["median_ms"] if i64 else float("nan")
        spc = cus["median_ms"] / own["median_ms"] if cus else float("nan")
        a_us = auto["median_ms"] * 1e3 if auto else float("nan")
        print(f"{e['name']:11s} {own['label']:22s} {own['median_ms'] * 1e3:8.1f} {pct:6.1f} "
              f"{sp64:7.2f} {spc:7.2f} {a_us:8.1f} {e['selection'].get('label', '?'):18s}")


def cmd_ncu_target(args) -> int:
    """Run each matrix's best own kernel (or --labels) once, for ncu to profile."""
    import cupy

    from sparsescope.ops.spmv import make_x

    result = json.loads(Path(args.results).read_text())
    for e in result["matrices"]:
        own = best_case(e, "own")
        if own is None:
            continue
        path = Path(args.matrices_dir) / f"{e['name']}.npz"
        if not path.is_file():
            print(f"{e['name']}: no saved matrix", flush=True)
            continue
        z = np.load(path)
        csr = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        cls, params = VARIANTS[own["label"]]
        backend = cls(breakdown=False, **params)
        prepared = backend.prepare(csr, "float32", 4)
        backend.run(prepared, make_x(csr.shape[1]))
        cupy.cuda.Device().synchronize()
        kernels = " + ".join(step.kernel for step in prepared.launches)
        print(f"{e['name']}: ran {own['label']} ({kernels})", flush=True)
        del prepared
        free_gpu()
    return 0


def ncu_metrics() -> list[str]:
    """Metrics the ncu pass collects: launch, occupancy, stall reasons, DRAM / L2 / L1 traffic
    (names from :mod:`sparsescope.profile.metrics`, so the CSV reads back with
    ``sparsescope.profile.load``)."""
    from sparsescope.profile import metrics as m

    names = [
        m.DURATION_NS, *m.SM_CLOCK_HZ, m.REGISTERS_PER_THREAD, m.BLOCK_SIZE, m.GRID_SIZE,
        "launch__shared_mem_per_block", m.THEORETICAL_OCCUPANCY_PCT, m.ACHIEVED_OCCUPANCY_PCT,
        "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
        "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks", m.CPI,
        *(m.stall_metric(r) for r in m.STALL_REASONS if r != "gmma"), *m.ELIGIBLE_WARPS,
        "smsp__issue_active.avg.per_cycle_active", *m.WARP_INST,
        "dram__bytes_read.sum", "dram__bytes_write.sum", m.DRAM_THROUGHPUT_PCT[0],
        "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum", *m.L2_HIT_RATE_PCT,
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        *m.L2_PEAK_SECTORS_PER_CYCLE_PER_SLICE, *m.L2_CYCLES_AVG, *m.L2_CLOCK_HZ,
        *m.L1_HIT_RATE_PCT, *m.GLOBAL_LD_SECTORS, *m.GLOBAL_LD_REQUESTS,
        *m.SHARED_LD_WAVEFRONTS, *m.SHARED_ST_WAVEFRONTS, *m.SHARED_LD_CONFLICTS,
        *m.SHARED_ST_CONFLICTS]
    return list(dict.fromkeys(names))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--out", required=True)
    s.add_argument("--save-matrices", default="")
    s.add_argument("--matrices", default="", help="comma-separated seed6 names (default all)")
    s.add_argument("--variants", nargs="*", default=[])
    s.add_argument("--scale", type=float, default=1.0)
    s.add_argument("--warmups", type=int, default=5)
    s.add_argument("--repeats", type=int, default=30)
    s.add_argument("--no-l2-window", action="store_true")
    n = sub.add_parser("ncu-target")
    n.add_argument("--results", required=True)
    n.add_argument("--matrices-dir", required=True)
    sub.add_parser("ncu-metrics", help="print the ncu --metrics list")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if args.command == "ncu-metrics":
        print(",".join(ncu_metrics()))
        return 0
    return {"sweep": cmd_sweep, "ncu-target": cmd_ncu_target}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
