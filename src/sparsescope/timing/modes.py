"""The timing protocol's two modes (``TimingConfig.mode``) and the throughput mode's arithmetic.

``latency`` (the default, seed 000's protocol): each call timed on its own between two events,
the L2 flushed before it where the working set fits (``timing.host.should_flush``): what one
call costs when nothing else is in flight.

``throughput`` (how published SpMV results are timed, e.g. DASP's back-to-back loop): N calls
back to back between one event pair (or one captured CUDA graph of N calls), the L2 never
flushed, so a call finds the previous call's data still in the L2 and its launches queued
behind the previous call's kernels::

    sample   = (end - start) / N          (ms per call; one sample per event pair)
    time     = median of the samples      (the configured statistic, as in latency mode)
    N        = TimingConfig.throughput_calls, or, when 0, chosen from the probe:
             = clamp(ceil(TARGET_SAMPLE_MS / t_probe), MIN_CALLS, MAX_CALLS)
    t_probe  = time per call of PROBE_CALLS calls back to back, after the warm-ups

Each sample is queued behind the protocol's hold (``timing.cuda._timed_batch``), so the host's
own launch cost stays out of it while fewer than ``MAX_CALLS`` calls wait in the launch queue.
The first call of a sample still pays the launch latency no call before it hides: over N calls
it adds (latency - interval) / N, under 1 % at N >= 100 for a call of a few microseconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

from sparsescope.timing.types import TIMING_MODES, Measurement, TimingConfig

__all__ = ["TIMING_MODES", "calls_per_sample", "back_to_back", "per_call_samples",
           "time_host_throughput", "mode_label", "mode_suffix"]

#: A throughput sample lasts at least about this long (ms): long enough that the events'
#: resolution (about 0.5 us) and the first call's unhidden launch are a small share of it.
TARGET_SAMPLE_MS = 1.0
#: Fewest and most calls in one sample. The most keeps a sample's launches (a few per call)
#: inside the launch queue the hold fills, so the device never waits for the host.
MIN_CALLS = 10
MAX_CALLS = 200
#: Calls timed back to back after the warm-ups to choose N.
PROBE_CALLS = 3


def calls_per_sample(probe_ms_per_call: float) -> int:
    """N, the calls of one throughput sample, from the probe's time per call (module
    docstring)::

        N = clamp(ceil(TARGET_SAMPLE_MS / t_probe), MIN_CALLS, MAX_CALLS)

    Hand check: 5 us a call -> ceil(1 / 0.005) = 200; 40 us -> 25; 2 ms -> 10 (the floor);
    a probe of 0 (a clock too coarse to see it) -> MAX_CALLS."""
    if not probe_ms_per_call > 0 or not math.isfinite(probe_ms_per_call):
        return MAX_CALLS
    return max(MIN_CALLS, min(MAX_CALLS, math.ceil(TARGET_SAMPLE_MS / probe_ms_per_call)))


def back_to_back(fn: Callable[[], object], calls: int) -> Callable[[], object]:
    """One call of the returned function makes ``calls`` calls of ``fn`` in a row (what a
    throughput sample times, or captures as one graph); it returns the last call's result,
    which a graph capture keeps alive."""
    def batch():
        out = None
        for _ in range(calls):
            out = fn()
        return out
    return batch


def per_call_samples(batch_ms: list[float], calls: int) -> list[float]:
    """Each batch's time divided by its ``calls``: ms per call. Hand check: [2.0, 2.2] over 200
    calls -> [0.010, 0.011]."""
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    return [t / calls for t in batch_ms]


def mode_label(config: TimingConfig) -> str:
    """How a report names a time: its statistic and mode, e.g. ``median, latency`` or
    ``median, throughput (200 calls back to back)``."""
    mode = getattr(config, "mode", "latency")
    calls = getattr(config, "throughput_calls", 0)
    what = f"{mode} ({calls} calls back to back)" if mode == "throughput" and calls else mode
    return f"{config.statistic}, {what}"


def mode_suffix(config: TimingConfig) -> str:
    """What a timing column's header adds for the mode: nothing for ``latency`` (the default,
    which every older report's headers are: they re-render unchanged, and the report's
    protocol callout names the mode), ``, throughput`` for the throughput mode. Hand check:
    ``f"Time, median{mode_suffix(c)}"`` -> ``Time, median, throughput``."""
    return ", throughput" if getattr(config, "mode", "latency") == "throughput" else ""


def time_host_throughput(fn: Callable[[], object], config: TimingConfig, *,
                         clock: Callable[[], float] = time.perf_counter,
                         max_samples: int = 100_000) -> Measurement:
    """The throughput mode with the host clock (a synchronous call: a CPU backend): the
    warm-ups, the probe, then samples of N calls in a row (module docstring); the cache is
    never flushed. ``clock`` (seconds) is the host's; tests pass a fake one."""
    for _ in range(config.warmups):
        fn()
    begin = clock()
    for _ in range(PROBE_CALLS):
        fn()
    calls = config.throughput_calls or calls_per_sample(
        (clock() - begin) * 1e3 / PROBE_CALLS)
    batch = back_to_back(fn, calls)
    totals: list[float] = []
    while len(totals) < config.repeats or (sum(totals) < config.min_total_ms
                                           and len(totals) < max_samples):
        start = clock()
        batch()
        totals.append((clock() - start) * 1e3)
    recorded = replace(config, throughput_calls=calls)
    return Measurement(samples_ms=tuple(per_call_samples(totals, calls)), config=recorded,
                       flushed=False, clock="host")
