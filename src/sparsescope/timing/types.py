"""Timing records: the protocol's settings and one measurement with its raw samples."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

MAX_REPEATS = 100_000
"""The most timed repeats (and warm-ups) one case may ask for: a million calls of even a
microsecond kernel is not a measurement but a hang (``timing.host.MAX_SAMPLES`` caps the
samples ``min_total_ms`` may add the same way)."""

#: The timing protocol's modes: each call on its own, or calls back to back (``timing.modes``).
TIMING_MODES = ("latency", "throughput")


@dataclass(frozen=True)
class TimingConfig:
    """Settings of the one timing protocol, recorded next to every number."""

    warmups: int = 5
    """Calls run and discarded before timing."""
    repeats: int = 20
    """Timed calls; the statistic is taken over these."""
    statistic: str = "median"
    """Which statistic is reported as *the* time."""
    clock: str = "host"
    """``host`` (time.perf_counter around a synchronous call) or ``cuda-events``."""
    flush_l2: bool | None = None
    """Flush L2 (or the CPU's last-level cache) between repeats; None: when the working set fits."""
    graph_capture: bool = False
    """Replay a captured CUDA graph instead of launching from Python (GPU only)."""
    min_total_ms: float = 0.0
    """Keep repeating (beyond ``repeats``) until this much time was measured in total."""
    mode: str = "latency"
    """``latency``: each call timed on its own (L2 flushed where the working set fits);
    ``throughput``: calls back to back, L2 warm, a sample the time per call of a batch
    (``timing.modes``)."""
    throughput_calls: int = 0
    """Calls per sample in ``throughput`` mode; 0: chosen from the warm-up's time
    (``timing.modes.calls_per_sample``)."""
    breakdown: bool = True
    """Profile a few calls for the per-kernel breakdown after the samples (GPU timing); a
    selection's trial timings, which nobody reads kernel by kernel, turn it off."""
    state_halves: bool = False
    """Latency mode on a GPU: take the samples in two halves and flip the two-state effect
    between them (the library's settle launches), the median then being the mean of the two
    halves' medians, so the time no longer depends on the state the timing started in
    (``timing.cuda``; results/h200/real-dev/2026-11-28-profiler-settle, section 5). Off until
    measured on a device."""

    def checked(self) -> TimingConfig:
        """This config, or a :class:`~sparsescope.errors.UsageError` naming the first setting
        the protocol cannot honour (checked before anything is measured): warm-ups 0 to
        :data:`MAX_REPEATS`, repeats 1 to :data:`MAX_REPEATS` (whole numbers), a known
        statistic and clock, a finite ``min_total_ms`` >= 0."""
        from sparsescope.errors import UsageError

        for name, low in (("warmups", 0), ("repeats", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise UsageError(f"{name} must be a whole number, got {value!r}")
            if not low <= value <= MAX_REPEATS:
                raise UsageError(f"{name} must be {low} to {MAX_REPEATS}, got {value}")
        if self.statistic not in ("median", "mean", "min"):
            raise UsageError(f"timing statistic must be one of median, mean, min, got "
                             f"{self.statistic!r}")
        if self.clock not in ("host", "cuda-events"):
            raise UsageError(f"timing clock must be host or cuda-events, got {self.clock!r}")
        if self.mode not in TIMING_MODES:
            raise UsageError(f"timing mode must be one of {', '.join(TIMING_MODES)}, got "
                             f"{self.mode!r}")
        if self.mode == "throughput" and self.flush_l2:
            raise UsageError("throughput timing keeps the L2 warm: it cannot flush it "
                             "(--flush on applies to the latency mode)")
        if (isinstance(self.throughput_calls, bool) or not isinstance(self.throughput_calls, int)
                or not 0 <= self.throughput_calls <= MAX_REPEATS):
            raise UsageError(f"throughput_calls must be a whole number 0 to {MAX_REPEATS}, got "
                             f"{self.throughput_calls!r}")
        if not (isinstance(self.min_total_ms, int | float)
                and math.isfinite(self.min_total_ms) and self.min_total_ms >= 0):
            raise UsageError(f"min_total_ms must be a finite number >= 0, got "
                             f"{self.min_total_ms!r}")
        return self


@dataclass(frozen=True)
class Measurement:
    """Times of one case, raw samples kept."""

    samples_ms: tuple[float, ...]
    """Every timed repeat, in ms, in the order run."""
    config: TimingConfig
    flushed: bool = False
    """Whether a cache flush ran between repeats."""
    clock: str = "host"
    kernel_breakdown: tuple[dict, ...] = field(default=(), compare=False)
    """Optional per-kernel split of one call: ``{"name", "time_ms", "pct"}``."""
    halves_at: int = 0
    """Where the second half of the samples begins when the timing flipped the two-state
    effect between its halves (``TimingConfig.state_halves``); 0: one run of samples."""

    @property
    def median_ms(self) -> float:
        """The samples' median; with :attr:`halves_at`, the mean of the two halves' medians:
        samples (5, 5, 6, 6, 6) split at 2 -> (5 + 6) / 2 = 5.5."""
        if 0 < self.halves_at < len(self.samples_ms):
            return (statistics.median(self.samples_ms[:self.halves_at])
                    + statistics.median(self.samples_ms[self.halves_at:])) / 2
        return statistics.median(self.samples_ms)

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.samples_ms)

    @property
    def min_ms(self) -> float:
        return min(self.samples_ms)

    @property
    def std_ms(self) -> float:
        return statistics.stdev(self.samples_ms) if len(self.samples_ms) > 1 else 0.0

    @property
    def cov(self) -> float:
        """Coefficient of variation, std / mean (0 when the mean is 0)."""
        mean = self.mean_ms
        return self.std_ms / mean if mean > 0 else 0.0

    @property
    def time_ms(self) -> float:
        """The configured statistic."""
        value = {"median": self.median_ms, "mean": self.mean_ms, "min": self.min_ms}[
            self.config.statistic
        ]
        return value if math.isfinite(value) else float("nan")
