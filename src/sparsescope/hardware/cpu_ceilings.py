"""Ceilings measured on the host CPU: RAM copy and read bandwidth, BLAS FP32 throughput.

They are what the SciPy backend can at best reach on this machine, so CPU runs are judged
against measured, not datasheet, figures. GPU ceilings live in ``hardware.gpu_ceilings``.

Protocol (recorded in ``MeasuredCeilings.method``, version :data:`PROTOCOL`):

* buffers of ``max(size_mb MiB, LLC)`` each, so one pass over source + destination streams at
  least twice the last-level cache and a cyclic scan finds nothing left in it;
* one untimed pass first (it also faults the pages in), then :data:`TRIALS` timed trials; a
  trial repeats its kernel until at least :data:`MIN_TRIAL_S` seconds have passed and its rate
  is the work done over that time (:func:`trial_rates`);
* each ceiling is the best trial, as STREAM reports: a ceiling is what the machine can reach,
  and on a shared machine other processes only ever slow a trial down; the spread of the trials,
  ``100 (max - min) / best`` (:func:`best_of`), is kept beside it
  (``MeasuredCeilings.*_spread_pct``) so a reader sees how noisy the machine was;
* copy: ``np.copyto(dst, src)``, bandwidth = (bytes read + bytes written) / time;
* read: ``np.maximum.reduce`` over both buffers (a SIMD reduction, memory-bound);
* FP32: float32 matrix product (BLAS sgemm, all BLAS threads), 2 n^3 flops / time.

NumPy copies and reduces on one thread, like SciPy's CSR SpMV, so the bandwidth ceilings are
single-thread figures.

Measured once per run the figures still wandered (copy 16-24 GB/s, FP32 41-197 GFLOP/s between
identical runs on a shared 2-core machine), so runs take them from a per-machine cache in the
results store (``sparsescope.results.ceilings_cache``, keyed by :func:`machine_key`) and
``sparsescope ceilings --refresh`` measures them again. This module measures only: the
hardware stage imports nothing from the results stage.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from sparsescope.errors import UsageError
from sparsescope.hardware.cpuinfo import (
    available_ram_bytes,
    cpu_model_name,
    last_level_cache,
    logical_cores,
    total_ram_bytes,
)
from sparsescope.hardware.types import MeasuredCeilings

MiB = 1024 * 1024

#: Version of the measuring protocol; part of :func:`machine_key`, so figures cached under an
#: older protocol (best of 3 single passes) are measured again rather than reused.
PROTOCOL = "cpu-ceilings/2"

TRIALS = 7
"""Timed trials per ceiling. At least 5 so that the best one is very likely a trial no other
process disturbed; 7 keeps the whole measurement near 1.5 s on a 2-core machine (below)."""

MIN_TRIAL_S = 0.04
"""Shortest trial, seconds. A trial repeats its kernel until this long has passed, so it spans
at least one whole pass over the buffers (a copy pass over 2 x 256 MiB takes 20-40 ms on a
laptop-class core, the n=1024 sgemm 10-45 ms) and ten 4 ms scheduler ticks: one preemption
costs a trial at most about a tenth, and the timer's resolution (< 1 us) nothing. A faster
machine does more passes per trial, not shorter trials. Total: 3 ceilings x (1 untimed pass +
7 trials of 40-80 ms) is about 1-1.8 s, plus the first touch of the buffers, under ~3 s."""


@dataclass(frozen=True)
class TrialStats:
    """The trials of one ceiling: the best rate and how far the others fell below it."""

    best: float
    """Highest rate of the trials (the ceiling)."""
    worst: float
    spread_pct: float
    """``100 (best - worst) / best``: 0 when every trial agreed."""
    rates: tuple[float, ...]


def best_of(rates: Sequence[float]) -> TrialStats:
    """Best trial and spread of ``rates`` (work per second, higher is better).

    ``spread_pct = 100 (max - min) / max``; e.g. rates 18, 20, 19 -> best 20, spread 10 %.
    """
    if not rates:
        raise ValueError("best_of needs at least one trial")
    best, worst = max(rates), min(rates)
    spread = 100.0 * (best - worst) / best if best > 0 else 0.0
    return TrialStats(best=best, worst=worst, spread_pct=spread, rates=tuple(rates))


def trial_rates(fn: Callable[[], object], work: float, trials: int, min_seconds: float,
                clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Rates of ``trials`` timed trials of ``fn``, after one untimed call.

    A trial calls ``fn`` until ``min_seconds`` have passed (at least once); its rate is
    ``work x calls / elapsed`` (``work``: GB or GFLOP done by one call).
    """
    fn()
    rates = []
    for _ in range(trials):
        calls = 0
        start = clock()
        while True:
            fn()
            calls += 1
            elapsed = clock() - start
            if elapsed >= min_seconds:
                break
        rates.append(work * calls / max(elapsed, 1e-9))
    return rates


def buffer_bytes(size_mb: float, llc_bytes: int, available_bytes: int) -> int:
    """Bytes per buffer: ``max(size_mb MiB, LLC)``, capped so both fit in a quarter of free RAM.

    Rounded down to whole 8-byte words.
    """
    want = max(int(size_mb * MiB), llc_bytes)
    if available_bytes > 0:
        want = min(want, available_bytes // 8)
    return max(want // 8 * 8, 8)


def _stream_stats(nbytes: int, trials: int, min_trial_s: float) -> tuple[TrialStats, TrialStats]:
    """(copy, read) GB/s trials over two buffers of ``nbytes`` each (freed on return)."""
    src = np.ones(nbytes // 8, dtype=np.int64)
    dst = np.empty_like(src)

    def read_both() -> None:
        np.maximum.reduce(src)
        np.maximum.reduce(dst)

    gb = 2 * nbytes / 1e9
    copy = best_of(trial_rates(lambda: np.copyto(dst, src), gb, trials, min_trial_s))
    return copy, best_of(trial_rates(read_both, gb, trials, min_trial_s))


def machine_key() -> str:
    """Fingerprint of this machine, the key of the per-machine ceilings cache.

    ``<PROTOCOL>|host=<hostname>|cpu=<model name>|cores=<logical cores>|ram=<GiB>GiB``: the
    hostname (:func:`platform.node`) tells machines apart, the CPU model (/proc/cpuinfo), the
    logical cores this process may use (a ``taskset`` run gets its own figures, since the FP32
    ceiling uses every core) and the physical memory rounded to GiB catch a host whose hardware
    changed under the same name, and the protocol version retires figures measured the old way.
    """
    ram_gib = round(total_ram_bytes() / 2**30)
    return (f"{PROTOCOL}|host={platform.node() or 'unknown'}|cpu={cpu_model_name()}"
            f"|cores={logical_cores()}|ram={ram_gib}GiB")


def measure_cpu_ceilings(*, size_mb: float = 256, trials: int = TRIALS,
                         min_trial_s: float = MIN_TRIAL_S, gemm_n: int = 1024
                         ) -> MeasuredCeilings:
    """Measure copy and read bandwidth (GB/s, 10^9 B/s) and FP32 GFLOP/s of this host.

    Each ceiling is the best of ``trials`` trials of at least ``min_trial_s`` seconds, with the
    trials' spread (see the module docstring). Formulas: ``copy_bw = 2 B / t_copy``,
    ``read_bw = 2 B / t_read`` (two buffers of B bytes each), ``fp32 = 2 n^3 / t_gemm``.
    Takes about 1.5 s with the defaults (under ~3 s on a loaded 2-core machine). Measures
    every time: runs use the cached figures of
    :func:`sparsescope.results.ceilings_cache.cached_cpu_ceilings`.
    """
    if size_mb <= 0 or trials < 1 or gemm_n < 1 or min_trial_s < 0:
        raise UsageError("size_mb must be > 0, trials >= 1, min_trial_s >= 0 and gemm_n >= 1")
    measured_utc = datetime.now(UTC).isoformat(timespec="seconds")
    llc, llc_source = last_level_cache()
    nbytes = buffer_bytes(size_mb, llc, available_ram_bytes())
    copy, read = _stream_stats(nbytes, trials, min_trial_s)
    a = np.random.default_rng(0).random((gemm_n, gemm_n), dtype=np.float32)
    fp32 = best_of(trial_rates(lambda: a @ a, 2 * gemm_n**3 / 1e9, trials, min_trial_s))

    ratio = 2 * nbytes / llc
    buffers = (f"2 buffers x {nbytes / MiB:.0f} MiB (footprint {ratio:.1f}x the "
               f"{llc / MiB:.0f} MiB last-level cache, {llc_source})")
    best = (f"best of {trials} trials of >= {1000 * min_trial_s:g} ms after 1 untimed pass "
            f"(spread = (max - min) / best)")
    return MeasuredCeilings(
        device=cpu_model_name(),
        copy_bw_gb_s=copy.best,
        read_bw_gb_s=read.best,
        fp32_gflops=fp32.best,
        method={
            "copy_bw_gb_s": f"np.copyto, one thread, {buffers}; bytes = read + write; {best}",
            "read_bw_gb_s": f"np.maximum.reduce over int64, one thread, {buffers}; {best}",
            "fp32_gflops": f"float32 matmul n={gemm_n} (BLAS sgemm, all BLAS threads), "
                           f"2 n^3 flops; {best}; achievable, not the theoretical peak",
        },
        copy_bw_spread_pct=copy.spread_pct,
        read_bw_spread_pct=read.spread_pct,
        fp32_spread_pct=fp32.spread_pct,
        trials=trials,
        measured_utc=measured_utc,
    )
