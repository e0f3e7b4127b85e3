"""Timing records: the protocol's settings and one measurement with its raw samples."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field


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

    @property
    def median_ms(self) -> float:
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
