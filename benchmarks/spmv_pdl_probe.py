"""Programmatic dependent launch (PDL) of the tile kernels, throughput mode (issue 37, item 1).

    python benchmarks/spmv_pdl_probe.py .real-dev/c-62.npz ... --out /tmp/pdl.json

For each matrix, in one process: every tile configuration below (``cuda-spmv-adaptive`` and
``cuda-spmv-merge``, iters 1 and 2, the split rows finished by a fixup launch or in the tile)
timed in the throughput mode (``timing.cuda``: N calls back to back on one stream, warm L2)
with ordinary launches and with PDL launches (``OwnSpmvBackend.launch_call(programmatic=True)``:
the main kernel launched with programmatic stream serialization, a fixup launch as usual), beside
the planned cuSPARSE (nvmath, algorithms 0/1/2, preprocessed) timed the same way. Interleaved:
plain, PDL, plain, PDL for each configuration, the median of each kept.

Checked against float64 before any timing, for each configuration in both launch modes:
one call; 64 calls back to back (the split-row counters of finish=1 reset by each call); and a
chain where a CuPy kernel rewrites x between calls (x <- x / 2 + 1, then y = A x, 8 times),
which a PDL call must wait for. Prints a table; writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

CONFIGS = [("cuda-spmv-adaptive", {"iters": i, "finish": f}) for i in (1, 2) for f in (0, 1)]
CONFIGS += [("cuda-spmv-merge", {"iters": i, "finish": 1}) for i in (1, 2)]
LIBRARIES = [("nvmath-cusparse-i32", {"alg": a}) for a in (0, 1, 2)]


def rel_err(y, ref) -> float:
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(np.asarray(y, np.float64) - ref) / max(np.linalg.norm(ref),
                                                                         1e-300))


def checks(backend, prepared, csr, x, call) -> dict:
    """Relative errors: one call, 64 back to back, the x-rewriting chain."""
    import cupy

    out = {}
    backend.set_x(prepared, x)
    backend.poison_output(prepared)
    call()
    cupy.cuda.get_current_stream().synchronize()
    out["one"] = rel_err(prepared.y[:prepared.rows].get(), csr @ x.astype(np.float64))
    backend.poison_output(prepared)
    for _ in range(64):
        call()
    cupy.cuda.get_current_stream().synchronize()
    out["back_to_back_64"] = rel_err(prepared.y[:prepared.rows].get(),
                                     csr @ x.astype(np.float64))
    xd = x.astype(np.float64)
    for _ in range(8):
        prepared.x[:prepared.cols] *= 0.5
        prepared.x[:prepared.cols] += 1
        xd = xd * 0.5 + 1
        call()
    cupy.cuda.get_current_stream().synchronize()
    out["x_chain_8"] = rel_err(prepared.y[:prepared.rows].get(), csr @ xd)
    backend.set_x(prepared, x)
    return out


def probe_matrix(path: str, repeats: int) -> dict:
    from sparsescope.backends.registry import get_backend
    from sparsescope.hardware.programmatic_launch import available
    from sparsescope.matrices.io import read_matrix
    from sparsescope.ops.spmv import make_x
    from sparsescope.timing.types import TimingConfig

    matrix = read_matrix(path)
    csr = matrix.csr
    x = make_x(csr.shape[1], seed=1, dtype="float32")
    config = TimingConfig(warmups=5, repeats=repeats, mode="throughput")
    row = {"matrix": matrix.name, "rows": int(csr.shape[0]), "nnz": int(csr.nnz),
           "pdl_available": available()[0], "configs": [], "libraries": []}
    for name, params in LIBRARIES:
        backend = get_backend(name, **params)
        prepared = backend.prepare(csr, "float32", 4)
        err = rel_err(backend.run(prepared, x), csr @ x.astype(np.float64))
        ms = backend.time(prepared, x, config).median_ms
        row["libraries"].append({"backend": name, "params": params, "median_us": 1e3 * ms,
                                 "rel_err": err})
    for name, params in CONFIGS:
        backend = get_backend(name, breakdown=False, **params)
        prepared = backend.prepare(csr, "float32", 4)
        def plain(backend=backend, prepared=prepared) -> None:
            backend.launch_call(prepared)

        def pdl(backend=backend, prepared=prepared) -> None:
            backend.launch_call(prepared, programmatic=True)

        entry = {"backend": name, "params": params,
                 "kernels": backend.notes(prepared).get("kernels", ""),
                 "check_plain": checks(backend, prepared, csr, x, plain),
                 "check_pdl": checks(backend, prepared, csr, x, pdl)}
        from sparsescope.timing.cuda import time_cuda

        times = {"plain": [], "pdl": []}
        for _ in range(2):
            for label, call in (("plain", plain), ("pdl", pdl)):
                m = time_cuda(call, config, library="cupy", breakdown=False)
                times[label].append(1e3 * m.median_ms)
                entry.setdefault("graph_capture", {})[label] = m.config.graph_capture
        entry["plain_us"] = float(np.median(times["plain"]))
        entry["pdl_us"] = float(np.median(times["pdl"]))
        entry["runs_us"] = times
        row["configs"].append(entry)
    return row


def table(rows: list[dict]) -> str:
    lines = ["| matrix | nnz | best cuSPARSE us | best own plain us | best own PDL us | "
             "PDL / plain | cuSPARSE / own plain | cuSPARSE / own PDL | worst rel. err |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lib = min(e["median_us"] for e in r["libraries"])
        plain = min(r["configs"], key=lambda e: e["plain_us"])
        pdl = min(r["configs"], key=lambda e: e["pdl_us"])
        worst = max(max(e["check_plain"].values()) for e in r["configs"])
        worst = max(worst, max(max(e["check_pdl"].values()) for e in r["configs"]))
        lines.append(f"| {r['matrix']} | {r['nnz']:,} | {lib:.2f} | {plain['plain_us']:.2f} | "
                     f"{pdl['pdl_us']:.2f} | {pdl['pdl_us'] / plain['plain_us']:.3f} | "
                     f"{lib / plain['plain_us']:.3f} | {lib / pdl['pdl_us']:.3f} | "
                     f"{worst:.1e} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrices", nargs="+")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    rows = []
    for path in args.matrices:
        start = time.perf_counter()
        try:
            rows.append(probe_matrix(path, args.repeats))
        except Exception as exc:  # noqa: BLE001 - one matrix's failure is recorded, not fatal
            rows.append({"matrix": Path(path).stem, "error": f"{type(exc).__name__}: {exc}"})
            print(f"{path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"{path}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
        Path(args.out).write_text(json.dumps(rows, indent=1))
    print(table([r for r in rows if "error" not in r]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
