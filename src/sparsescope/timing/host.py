"""The host-clock timing protocol: warm-ups, timed repeats, cache flush, minimum total time.

One protocol for every synchronous call timed from the host (the SciPy backend; a GPU backend
whose call synchronises). CUDA-event timing of GPU backends lives in ``timing.cuda`` and follows
the same steps.

Steps, with the settings recorded in the returned :class:`Measurement`:

1. ``config.warmups`` calls, discarded (first-touch page faults, lazy initialisation, caches).
2. Repeat: optionally flush the last-level cache, then time one call with
   :func:`time.perf_counter`; at least ``config.repeats`` times, and beyond that until the
   samples add up to ``config.min_total_ms`` (at most :data:`MAX_SAMPLES` samples).

Flushing: ``config.flush_l2`` True or False decides; None flushes when the working set fits in
the last-level cache (``working_set_bytes <= llc_bytes``), so a small case is timed from DRAM as
a large one is, instead of from a cache warmed by the previous repeat. The cache is the one a
single-threaded timer can evict (:func:`sparsescope.hardware.cpuinfo.evictable_cache`): a VM's
report of its host's whole L3 is bounded, or every repeat would stream gigabytes (10 s of a
22 s run on a 2-vCPU VM reporting 480 MiB) and evict the interpreter's own state with it.
The flush runs before the clock starts; only the call is inside the timed window.

The garbage collector is off while the repeats run (as :mod:`timeit` does): a collection that
falls inside one call's window is the interpreter's time, not the call's.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import numpy as np

from sparsescope.errors import UsageError
from sparsescope.timing.types import TIMING_MODES, Measurement, TimingConfig

#: Hard cap on samples when ``min_total_ms`` asks for more than ``repeats``.
MAX_SAMPLES = 100_000
STATISTICS = ("median", "mean", "min")

_flush_buffer: np.ndarray | None = None


def validate_config(config: TimingConfig) -> None:
    """Raise :class:`UsageError` for settings the protocol cannot honour."""
    if config.warmups < 0 or config.repeats < 1:
        raise UsageError(f"timing needs warmups >= 0 and repeats >= 1, got "
                         f"warmups={config.warmups}, repeats={config.repeats}")
    if config.statistic not in STATISTICS:
        raise UsageError(f"timing statistic must be one of {', '.join(STATISTICS)}, "
                         f"got {config.statistic!r}")
    if not config.min_total_ms >= 0:
        raise UsageError(f"min_total_ms must be >= 0, got {config.min_total_ms}")
    if config.mode not in TIMING_MODES:
        raise UsageError(f"timing mode must be one of {', '.join(TIMING_MODES)}, got "
                         f"{config.mode!r}")


def flush_cache(llc_bytes: int) -> int:
    """Evict the last-level cache by updating a buffer of ``2 x llc_bytes``; returns its size.

    The buffer is incremented in place (read + write through the cache). ``fill``/``memset``
    would not do: for large sizes they use non-temporal stores, which bypass the cache and
    leave the data to be evicted where it is. The buffer is kept for the next call.
    """
    global _flush_buffer
    size = 2 * int(llc_bytes)
    if _flush_buffer is None or _flush_buffer.size < size:
        _flush_buffer = np.zeros(size, dtype=np.uint8)
    np.add(_flush_buffer[:size], 1, out=_flush_buffer[:size])
    return size


def release_flush_buffer() -> None:
    """Free the flush buffer (it is twice the last-level cache)."""
    global _flush_buffer
    _flush_buffer = None


def should_flush(config: TimingConfig, working_set_bytes: int, llc_bytes: int) -> bool:
    """``config.flush_l2`` when set, else whether the working set fits in the cache; never in
    the throughput mode, whose calls find the cache warm (``timing.modes``)."""
    if getattr(config, "mode", "latency") == "throughput":
        return False
    if config.flush_l2 is not None:
        return bool(config.flush_l2)
    return working_set_bytes <= llc_bytes


def time_host(fn: Callable[[], object], config: TimingConfig, *, working_set_bytes: int = 0,
              llc_bytes: int | None = None) -> Measurement:
    """Time ``fn()`` with the host clock following ``config``; raw samples in ms are kept.

    ``working_set_bytes`` is what one call touches (for the automatic flush decision);
    ``llc_bytes`` defaults to the cache a single-threaded timer can evict
    (:func:`sparsescope.hardware.cpuinfo.evictable_cache_bytes`).
    """
    validate_config(config)
    if config.mode == "throughput":  # calls back to back, nothing flushed: timing.modes
        from sparsescope.timing.modes import time_host_throughput

        return time_host_throughput(fn, config, max_samples=MAX_SAMPLES)
    if llc_bytes is None:
        from sparsescope.hardware.cpuinfo import evictable_cache_bytes

        llc_bytes = evictable_cache_bytes()
    flushed = should_flush(config, working_set_bytes, llc_bytes)

    for _ in range(config.warmups):
        fn()
    samples: list[float] = []
    total_ms = 0.0
    collecting = gc.isenabled()
    gc.disable()
    try:
        while len(samples) < config.repeats or (total_ms < config.min_total_ms
                                                and len(samples) < MAX_SAMPLES):
            if flushed:
                flush_cache(llc_bytes)
            start = time.perf_counter()
            fn()
            elapsed_ms = (time.perf_counter() - start) * 1e3
            samples.append(elapsed_ms)
            total_ms += elapsed_ms
    finally:
        if collecting:
            gc.enable()
    return Measurement(samples_ms=tuple(samples), config=config, flushed=flushed, clock="host")
