"""Ceilings measured on the host CPU: RAM copy and read bandwidth, BLAS FP32 throughput.

They are what the SciPy backend can at best reach on this machine, so CPU runs are judged
against measured, not datasheet, figures. GPU ceilings live in ``hardware.gpu_ceilings``.

Protocol (recorded in ``MeasuredCeilings.method``, version :data:`PROTOCOL`):

* two buffers of ``max(size_mb MiB, C)`` each, ``C`` the cache a single thread can evict
  (:func:`sparsescope.hardware.cpuinfo.evictable_cache`: a VM's report of its host's whole L3
  is bounded), so one pass over source + destination streams at least twice that cache and a
  cyclic scan finds nothing left in it;
* one untimed pass of each kernel first (it also faults the pages in), then rounds of timed
  trials, a copy and a read trial a round, then as many FP32 trials (the sgemm's BLAS threads
  spin on every core for a while after each call: between bandwidth trials they halved the
  copy rate on a 2-core machine); a trial repeats its kernel until at least
  :data:`MIN_TRIAL_S` seconds have passed and its rate is the work done over that time
  (:func:`one_trial`);
* each ceiling is the best trial, as STREAM reports: a ceiling is what the machine can reach,
  and on a shared machine other processes only ever slow a trial down. The rounds stop after
  :data:`MIN_TRIALS` once every ceiling's best is confirmed by a second trial within
  :data:`CONFIRM_PCT` (:func:`confirmed`), at most :data:`TRIALS`: on a quiet machine two trials
  agree at the top within a few rounds; on a busy one the rounds go on, as the fixed 7 trials
  of protocol 2 did. The spread of the trials, ``100 (max - min) / best`` (:func:`best_of`),
  is kept beside each ceiling (``MeasuredCeilings.*_spread_pct``);
* what other processes took of the machine while measuring (``/proc/stat`` against this
  process's own CPU time, :func:`sparsescope.hardware.cpuinfo.other_activity`) is recorded in
  ``method["machine_load"]``: the signal a reader is told the machine was busy by
  (:func:`busy_share_pct`), not the spread (one slow trial on an idle VM widens it);
* copy: ``np.copyto(dst, src)``, bandwidth = (bytes read + bytes written) / time;
* read: ``np.bitwise_or.reduce`` over both buffers as 64-bit words (:func:`read_words`): one
  SIMD OR per vector on every NumPy target, so it streams. ``np.maximum.reduce`` over int64,
  used before, has no SIMD form without AVX-512 and read at under half the copy rate (6.8
  against 23 GB/s on one VM): it measured the ALU, not memory. A read rate under half the copy
  rate is still named in the method text (:func:`read_copy_note`);
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

import os
import platform
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from sparsescope.errors import UsageError
from sparsescope.hardware.cpuinfo import (
    available_ram_bytes,
    cpu_model_name,
    cpu_times,
    evictable_cache,
    logical_cores,
    other_activity,
    total_ram_bytes,
)
from sparsescope.hardware.types import MeasuredCeilings

MiB = 1024 * 1024

#: Version of the measuring protocol; part of :func:`machine_key`, so figures cached under an
#: older protocol (2: a compute-bound read kernel, buffers sized from a VM's unbounded L3) are
#: measured again rather than reused.
PROTOCOL = "cpu-ceilings/3"

TRIALS = 7
"""Most timed trials per ceiling (a busy machine's rounds stop here)."""

MIN_TRIALS = 3
"""Fewest timed trials per ceiling: the best of three, confirmed by a second within
:data:`CONFIRM_PCT`, is a trial no other process disturbed (a disturbance makes a trial slower
by a varying amount, so two disturbed trials rarely agree at the top)."""

CONFIRM_PCT = 2.0
"""A ceiling's best trial is confirmed when another lies within this many percent of it."""

MIN_TRIAL_S = 0.04
"""Shortest trial, seconds. A trial repeats its kernel until this long has passed, so it spans
at least one whole pass over the buffers and ten 4 ms scheduler ticks: one preemption costs a
trial at most about a tenth, and the timer's resolution (< 1 us) nothing. A faster machine does
more passes per trial, not shorter trials. Quiet: 3 ceilings x (1 untimed pass + 3 trials of
40-70 ms) is about 0.6-0.9 s; busy: up to 7 trials, about 1.5 s."""

DEFAULT_SIZE_MB = 128
"""Least MiB per buffer: two of them (256 MiB) are 8x a 32 MiB LLC; a larger evictable cache
sizes them (the cache each)."""

BUSY_OTHERS_PCT = 10.0
"""Other processes' share of the machine's CPU time while measuring above which the ceilings
were measured on a busy machine (an idle VM shows 0-2 %: daemons and the kernel's ticks)."""


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


def one_trial(fn: Callable[[], object], work: float, min_seconds: float,
              clock: Callable[[], float] = time.perf_counter) -> float:
    """One timed trial: ``fn`` called until ``min_seconds`` have passed (at least once); the
    rate is ``work x calls / elapsed`` (``work``: GB or GFLOP done by one call)."""
    calls = 0
    start = clock()
    while True:
        fn()
        calls += 1
        elapsed = clock() - start
        if elapsed >= min_seconds:
            break
    return work * calls / max(elapsed, 1e-9)


def confirmed(rates: Sequence[float], pct: float = CONFIRM_PCT) -> bool:
    """Whether the best of ``rates`` has a second trial within ``pct`` % of it:
    ``second best >= best x (1 - pct / 100)``. E.g. 20.0 and 19.7 within 2 %: True."""
    if len(rates) < 2:
        return False
    top, second = sorted(rates, reverse=True)[:2]
    return second >= top * (1 - pct / 100)


def trial_rounds(kernels: Mapping[str, tuple[Callable[[], object], float]], *,
                 min_trials: int = MIN_TRIALS, max_trials: int = TRIALS,
                 min_seconds: float = MIN_TRIAL_S, confirm_pct: float = CONFIRM_PCT,
                 clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """Rates of each of ``kernels`` (name -> (fn, work per call)) in rounds of one trial each,
    after one untimed call of each: at least ``min_trials`` rounds, then until every kernel's
    best is :func:`confirmed`, at most ``max_trials`` rounds."""
    for fn, _ in kernels.values():
        fn()
    rates: dict[str, list[float]] = {name: [] for name in kernels}
    for done in range(1, max_trials + 1):
        for name, (fn, work) in kernels.items():
            rates[name].append(one_trial(fn, work, min_seconds, clock))
        if done >= min_trials and all(confirmed(r, confirm_pct) for r in rates.values()):
            break
    return rates


def buffer_bytes(size_mb: float, cache_bytes: int, available_bytes: int) -> int:
    """Bytes per buffer: ``max(size_mb MiB, cache_bytes)``, capped so both fit in a quarter of
    free RAM. Rounded down to whole 8-byte words."""
    want = max(int(size_mb * MiB), cache_bytes)
    if available_bytes > 0:
        want = min(want, available_bytes // 8)
    return max(want // 8 * 8, 8)


def read_words(*buffers: np.ndarray) -> int:
    """The read kernel: OR of every 64-bit word of ``buffers`` (each read once, front to back,
    by a SIMD reduction). The result depends on every word, so no word can be skipped."""
    acc = 0
    for buffer in buffers:
        acc |= int(np.bitwise_or.reduce(buffer.view(np.uint64)))
    return acc


def read_copy_note(read_gb_s: float, copy_gb_s: float) -> str:
    """`` read below half the copy rate: ...`` when ``read < copy / 2`` (bytes moved counted
    alike: a copy moves 2 bytes per byte copied, both counted), else ""."""
    if read_gb_s >= copy_gb_s / 2:
        return ""
    return (f"; read {read_gb_s:.1f} GB/s is below half the copy rate ({copy_gb_s:.1f} GB/s): "
            f"the reduction may be compute-bound on this CPU")


def machine_load_text(others_pct: float, steal_pct: float, cpus: int, wall_s: float,
                      load_1min: float | None) -> str:
    """``method["machine_load"]``: ``"3.1 % of the 2 CPUs' time went to other processes
    (steal 0.0 %) over the 0.8 s of measuring; load average 0.12 before"``.
    :func:`busy_share_pct` reads the leading number back."""
    load = f"; load average {load_1min:.2f} before" if load_1min is not None else ""
    return (f"{others_pct:.1f} % of the {cpus} CPUs' time went to other processes (steal "
            f"{steal_pct:.1f} %) over the {wall_s:.1f} s of measuring{load}")


_LOAD_NUMBER = re.compile(r"^(\d+(?:\.\d+)?) % of the \d+ CPUs' time went to other processes "
                          r"\(steal (\d+(?:\.\d+)?) %\)")


def busy_share_pct(method: Mapping[str, str]) -> float | None:
    """Other processes' plus the hypervisor's share (%) of the machine while the ceilings were
    measured, from ``method["machine_load"]`` (:func:`machine_load_text`); None when it was
    not recorded (ceilings of an older protocol, or a machine without ``/proc/stat``)."""
    match = _LOAD_NUMBER.match(method.get("machine_load", ""))
    return float(match.group(1)) + float(match.group(2)) if match else None


def was_busy(method: Mapping[str, str]) -> bool:
    """Whether the machine was busy while measuring: :func:`busy_share_pct` above
    :data:`BUSY_OTHERS_PCT` (False when not recorded: no signal, no claim)."""
    share = busy_share_pct(method)
    return share is not None and share > BUSY_OTHERS_PCT


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


def measure_cpu_ceilings(*, size_mb: float = DEFAULT_SIZE_MB, trials: int = TRIALS,
                         min_trial_s: float = MIN_TRIAL_S, gemm_n: int = 1024,
                         min_trials: int = MIN_TRIALS) -> MeasuredCeilings:
    """Measure copy and read bandwidth (GB/s, 10^9 B/s) and FP32 GFLOP/s of this host.

    Each ceiling is the best of ``min_trials`` to ``trials`` trials of at least ``min_trial_s``
    seconds, with the trials' spread (see the module docstring). Formulas:
    ``copy_bw = 2 B / t_copy``, ``read_bw = 2 B / t_read`` (two buffers of B bytes each),
    ``fp32 = 2 n^3 / t_gemm``. Measures every time: runs use the cached figures of
    :func:`sparsescope.results.ceilings_cache.cached_cpu_ceilings`.
    """
    if size_mb <= 0 or trials < 1 or gemm_n < 1 or min_trial_s < 0:
        raise UsageError("size_mb must be > 0, trials >= 1, min_trial_s >= 0 and gemm_n >= 1")
    min_trials = max(1, min(min_trials, trials))
    measured_utc = datetime.now(UTC).isoformat(timespec="seconds")
    cache = evictable_cache()
    nbytes = buffer_bytes(size_mb, cache.size_bytes, available_ram_bytes())
    src = np.ones(nbytes // 8, dtype=np.int64)
    dst = np.empty_like(src)
    a = np.random.default_rng(0).random((gemm_n, gemm_n), dtype=np.float32)
    gb = 2 * nbytes / 1e9
    load_1min = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    before = cpu_times()
    rates = trial_rounds({"copy": (lambda: np.copyto(dst, src), gb),
                          "read": (lambda: read_words(src, dst), gb)},
                         min_trials=min_trials, max_trials=trials, min_seconds=min_trial_s)
    ran = len(rates["copy"])
    rates |= trial_rounds({"fp32": (lambda: a @ a, 2 * gemm_n**3 / 1e9)}, min_trials=ran,
                          max_trials=ran, min_seconds=min_trial_s)
    after = cpu_times()
    copy, read, fp32 = (best_of(rates[k]) for k in ("copy", "read", "fp32"))

    ratio = 2 * nbytes / cache.size_bytes
    reported = ("" if not cache.bounded else
                f"; reported {cache.reported_bytes / MiB:.0f} MiB, bounded")
    buffers = (f"2 buffers x {nbytes / MiB:.0f} MiB (footprint {ratio:.1f}x the "
               f"{cache.size_bytes / MiB:.0f} MiB {cache.name}{reported}, {cache.source})")
    best = (f"best of {ran} trials of >= {1000 * min_trial_s:g} ms after 1 untimed pass, in "
            f"rounds until the copy's and the read's bests each had a second trial within "
            f"{CONFIRM_PCT:g} % ({min_trials} to {trials}; FP32: as many; spread = (max - min) "
            f"/ best)")
    method = {
        "copy_bw_gb_s": f"np.copyto, one thread, {buffers}; bytes = read + write; {best}",
        "read_bw_gb_s": f"np.bitwise_or.reduce over 64-bit words (SIMD), one thread, "
                        f"{buffers}; {best}{read_copy_note(read.best, copy.best)}",
        "fp32_gflops": f"float32 matmul n={gemm_n} (BLAS sgemm, all BLAS threads), "
                       f"2 n^3 flops; {best}; achievable, not the theoretical peak",
    }
    if before is not None and after is not None:
        load = other_activity(before, after)
        method["machine_load"] = machine_load_text(load.others_pct, load.steal_pct, load.cpus,
                                                   load.wall_s, load_1min)
    return MeasuredCeilings(
        device=cpu_model_name(),
        copy_bw_gb_s=copy.best,
        read_bw_gb_s=read.best,
        fp32_gflops=fp32.best,
        method=method,
        copy_bw_spread_pct=copy.spread_pct,
        read_bw_spread_pct=read.spread_pct,
        fp32_spread_pct=fp32.spread_pct,
        trials=ran,
        measured_utc=measured_utc,
    )
