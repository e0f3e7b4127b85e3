"""Speed of the SASS analysis: one ~1,200-instruction kernel, and every kernel of a large library.

    python benchmarks/sass_speed.py                       # listing + generated library
    python benchmarks/sass_speed.py --library /path/libcusparse.so.12 --arch sm_90
    python benchmarks/sass_speed.py --wheel nvidia_cusparse-*.whl --arch sm_90

``--wheel`` unpacks the ``lib*.so*`` of an NVIDIA wheel (a zip) to a temporary folder first. With
neither, a shared library of ``--kernels`` generated CSR kernels (several index types and unroll
factors, for ``--archs``) is built with nvcc: smaller than libcusparse, but the same path.

Prints one JSON object: seconds for the listing, and for the library the kernels, instructions,
chains found, disassembly+analysis wall time and the instruction rate.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from sparsescope._tools import run_tool
from sparsescope.sass.analysis import analyse_listing, iter_analyses
from sparsescope.sass.extract import compile_cuda, iter_kernels

_BIG = """
template <typename I, int U>
__global__ void spmv_unrolled(int n, const I* __restrict__ row_ptr, const I* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float sum = 0.f;
    #pragma unroll U
    for (I j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += val[j] * x[col[j]];
    y[row] = sum;
}
template __global__ void spmv_unrolled<long long, 176>(int, const long long*, const long long*,
                                                      const float*, const float*, float*);
"""


def _library_source(kernels: int) -> str:
    types = ["int", "unsigned", "long long"]
    lines = [_BIG.split("template __global__")[0]]
    for k in range(kernels):
        t, u = types[k % 3], 1 + k // 3
        lines.append(f"template __global__ void spmv_unrolled<{t}, {u}>(int, const {t}*, "
                     f"const {t}*, const float*, const float*, float*);")
    lines.append('int main() { return 0; }')
    return "\n".join(lines)


def bench_listing(work: Path, arch: str) -> dict:
    compiled = compile_cuda(_BIG, arch, out_dir=work)
    _, listing = next(iter_kernels(compiled.cubin))
    t0 = time.perf_counter()
    a = analyse_listing(listing)
    dt = time.perf_counter() - t0
    return {"instructions": a.instruction_count, "analysis_s": round(dt, 4),
            "load_chains": len(a.load_chains)}


def build_library(work: Path, kernels: int, archs: list[str]) -> Path:
    src = work / "many.cu"
    src.write_text(_library_source(kernels))
    lib = work / "libmany.so"
    gencode = [f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]
    run_tool("nvcc", ["-shared", "-Xcompiler", "-fPIC", *gencode, "-o", str(lib), str(src)],
             timeout_s=3600)
    return lib


def unpack_wheel(wheel: Path, work: Path) -> Path:
    with zipfile.ZipFile(wheel) as z:
        libs = [n for n in z.namelist() if Path(n).name.startswith("lib") and ".so" in n]
        biggest = max(libs, key=lambda n: z.getinfo(n).file_size)
        z.extract(biggest, work)
    return work / biggest


def bench_library(lib: Path, arch: str | None) -> dict:
    t0 = time.perf_counter()
    kernels = instructions = chains = loop_chains = 0
    for a in iter_analyses(lib, arch=arch):
        kernels += 1
        instructions += a.instruction_count
        chains += len(a.load_chains)
        loop_chains += len(a.loop_chains)
        if kernels % 500 == 0:
            print(f"{kernels} kernels, {instructions} instructions, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    dt = time.perf_counter() - t0
    return {"library": str(lib), "library_mb": round(lib.stat().st_size / 1e6, 1), "arch": arch,
            "kernels": kernels, "instructions": instructions, "load_chains": chains,
            "loop_chains": loop_chains, "wall_s": round(dt, 1),
            "instructions_per_s": round(instructions / dt) if dt else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--library", type=Path)
    ap.add_argument("--wheel", type=Path)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--kernels", type=int, default=90, help="generated kernels (no --library)")
    ap.add_argument("--archs", default="sm_80,sm_90", help="archs of the generated library")
    ap.add_argument("--skip-library", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sass-bench-") as tmp:
        work = Path(tmp)
        out: dict = {"listing": bench_listing(work, args.arch)}
        if not args.skip_library:
            lib = args.library
            if lib is None and args.wheel is not None:
                lib = unpack_wheel(args.wheel, work)
            if lib is None:
                t0 = time.perf_counter()
                lib = build_library(work, args.kernels, args.archs.split(","))
                out["build_s"] = round(time.perf_counter() - t0, 1)
            out["library"] = bench_library(lib, args.arch)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
