"""Ceilings measured on the host CPU: RAM copy and read bandwidth, BLAS FP32 throughput.

They are what the SciPy backend can at best reach on this machine, so CPU runs are judged
against measured, not datasheet, figures. GPU ceilings live in ``hardware.gpu_ceilings``.

Protocol (recorded in ``MeasuredCeilings.method``):

* buffers of ``max(size_mb MiB, LLC)`` each, so one pass over source + destination streams at
  least twice the last-level cache and a cyclic scan finds nothing left in it;
* one untimed pass first (it also faults the pages in), then ``repeats`` timed passes;
  the best pass is reported, as STREAM does: a ceiling is what the machine can reach;
* copy: ``np.copyto(dst, src)``, bandwidth = (bytes read + bytes written) / time;
* read: ``np.maximum.reduce`` over both buffers (a SIMD reduction, memory-bound);
* FP32: float32 matrix product (BLAS sgemm, all BLAS threads), 2 n^3 flops / time.

NumPy copies and reduces on one thread, like SciPy's CSR SpMV, so the bandwidth ceilings are
single-thread figures.
"""

from __future__ import annotations

import time

import numpy as np

from sparsescope.errors import UsageError
from sparsescope.hardware.cpuinfo import available_ram_bytes, cpu_model_name, last_level_cache
from sparsescope.hardware.types import MeasuredCeilings

MiB = 1024 * 1024


def _best_seconds(fn, repeats: int) -> float:
    """Fastest of ``repeats`` timed calls of ``fn`` (one untimed call first)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return max(best, 1e-9)


def _stream_seconds(nbytes: int, repeats: int) -> tuple[float, float]:
    """(copy seconds, read seconds) over two buffers of ``nbytes`` each (freed on return)."""
    src = np.ones(nbytes // 8, dtype=np.int64)
    dst = np.empty_like(src)

    def read_both() -> None:
        np.maximum.reduce(src)
        np.maximum.reduce(dst)

    return _best_seconds(lambda: np.copyto(dst, src), repeats), _best_seconds(read_both, repeats)


def buffer_bytes(size_mb: float, llc_bytes: int, available_bytes: int) -> int:
    """Bytes per buffer: ``max(size_mb MiB, LLC)``, capped so both fit in a quarter of free RAM.

    Rounded down to whole 8-byte words.
    """
    want = max(int(size_mb * MiB), llc_bytes)
    if available_bytes > 0:
        want = min(want, available_bytes // 8)
    return max(want // 8 * 8, 8)


def measure_cpu_ceilings(*, size_mb: float = 256, repeats: int = 3,
                         gemm_n: int = 1024) -> MeasuredCeilings:
    """Measure copy and read bandwidth (GB/s, 10^9 B/s) and FP32 GFLOP/s of this host.

    Formulas: ``copy_bw = 2 * B / t_copy``, ``read_bw = 2 * B / t_read`` (two buffers of B
    bytes each), ``fp32 = 2 n^3 / t_gemm``. Takes well under 2 s with the defaults.
    """
    if size_mb <= 0 or repeats < 1 or gemm_n < 1:
        raise UsageError("size_mb must be > 0, repeats >= 1 and gemm_n >= 1")
    llc, llc_source = last_level_cache()
    nbytes = buffer_bytes(size_mb, llc, available_ram_bytes())
    t_copy, t_read = _stream_seconds(nbytes, repeats)
    a = np.random.default_rng(0).random((gemm_n, gemm_n), dtype=np.float32)
    t_gemm = _best_seconds(lambda: a @ a, repeats)

    ratio = 2 * nbytes / llc
    buffers = (f"2 buffers x {nbytes / MiB:.0f} MiB (footprint {ratio:.1f}x the "
               f"{llc / MiB:.0f} MiB last-level cache, {llc_source})")
    best = f"best of {repeats} timed passes after 1 untimed"
    return MeasuredCeilings(
        device=cpu_model_name(),
        copy_bw_gb_s=2 * nbytes / t_copy / 1e9,
        read_bw_gb_s=2 * nbytes / t_read / 1e9,
        fp32_gflops=2 * gemm_n**3 / t_gemm / 1e9,
        method={
            "copy_bw_gb_s": f"np.copyto, one thread, {buffers}; bytes = read + write; {best}",
            "read_bw_gb_s": f"np.maximum.reduce over int64, one thread, {buffers}; {best}",
            "fp32_gflops": f"float32 matmul n={gemm_n} (BLAS sgemm, all BLAS threads), "
                           f"2 n^3 flops; {best}; achievable, not the theoretical peak",
        },
    )
