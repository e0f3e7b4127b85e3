"""The host timing protocol and the Measurement statistics."""

from __future__ import annotations

import math
import time

import pytest

from sparsescope.errors import UsageError
from sparsescope.timing import Measurement, TimingConfig, host, time_host


def test_measurement_statistics_hand_computed():
    m = Measurement(samples_ms=(1.0, 2.0, 3.0, 4.0, 10.0), config=TimingConfig())
    assert m.median_ms == 3.0
    assert m.mean_ms == 4.0
    assert m.min_ms == 1.0
    # sample std: sqrt(((1-4)^2 + (2-4)^2 + (3-4)^2 + 0 + (10-4)^2) / 4) = sqrt(50 / 4)
    assert m.std_ms == pytest.approx(math.sqrt(12.5))
    assert m.cov == pytest.approx(math.sqrt(12.5) / 4.0)
    assert m.time_ms == 3.0
    assert Measurement(m.samples_ms, TimingConfig(statistic="mean")).time_ms == 4.0
    assert Measurement(m.samples_ms, TimingConfig(statistic="min")).time_ms == 1.0
    assert Measurement((2.5,), TimingConfig()).std_ms == 0.0


def test_a_timing_in_two_halves_reports_the_mean_of_their_medians():
    """``halves_at``: samples (5, 5, 6, 6, 6) split at 2 -> (5 + 6) / 2 = 5.5 where the whole
    median is 6; out of range (0, or past the end) -> the whole median."""
    samples = (5.0, 5.0, 6.0, 6.0, 6.0)
    assert Measurement(samples, TimingConfig(), halves_at=2).median_ms == 5.5
    assert Measurement(samples, TimingConfig(), halves_at=2).time_ms == 5.5
    assert Measurement(samples, TimingConfig()).median_ms == 6.0
    assert Measurement(samples, TimingConfig(), halves_at=5).median_ms == 6.0


class Counter:
    def __init__(self, sleep_s: float = 0.0):
        self.calls = 0
        self.sleep_s = sleep_s

    def __call__(self):
        self.calls += 1
        if self.sleep_s:
            time.sleep(self.sleep_s)


def test_warmups_are_run_and_discarded():
    fn = Counter()
    m = time_host(fn, TimingConfig(warmups=3, repeats=7, flush_l2=False))
    assert fn.calls == 10
    assert len(m.samples_ms) == 7
    assert m.flushed is False
    assert m.clock == "host"
    assert m.config == TimingConfig(warmups=3, repeats=7, flush_l2=False)


def test_samples_are_milliseconds():
    m = time_host(Counter(sleep_s=0.002), TimingConfig(warmups=0, repeats=3, flush_l2=False))
    assert all(2.0 <= s < 200.0 for s in m.samples_ms)


def test_min_total_ms_repeats_beyond_repeats():
    fn = Counter(sleep_s=0.001)
    m = time_host(fn, TimingConfig(warmups=0, repeats=2, flush_l2=False, min_total_ms=12.0))
    assert sum(m.samples_ms) >= 12.0
    assert sum(m.samples_ms[:-1]) < 12.0  # stopped as soon as the total was reached
    assert 2 < len(m.samples_ms) <= 12
    assert fn.calls == len(m.samples_ms)


@pytest.mark.parametrize("flush_l2, working_set, expected", [
    (None, 512, True),        # fits in the (1 KiB) cache: flushed
    (None, 1024, True),
    (None, 1025, False),      # larger than the cache: streams from memory anyway
    (True, 10**9, True),      # forced
    (False, 0, False),        # forbidden
])
def test_flush_decision(monkeypatch, flush_l2, working_set, expected):
    flushes = []
    monkeypatch.setattr(host, "flush_cache", lambda llc: flushes.append(llc))
    m = time_host(Counter(), TimingConfig(warmups=2, repeats=4, flush_l2=flush_l2),
                  working_set_bytes=working_set, llc_bytes=1024)
    assert m.flushed is expected
    assert flushes == ([1024] * 4 if expected else [])  # once per timed repeat, not warm-ups


def test_flush_cache_updates_twice_the_llc_through_the_cache():
    host.release_flush_buffer()
    try:
        assert host.flush_cache(4096) == 8192
        assert host.flush_cache(4096) == 8192
        buf = host._flush_buffer
        assert buf.size == 8192 and int(buf.min()) == int(buf.max()) == 2
        host.flush_cache(1024)  # a smaller request reuses the buffer's first bytes
        assert host._flush_buffer is buf and buf[0] == 3 and buf[2048] == 2
    finally:
        host.release_flush_buffer()
    assert host._flush_buffer is None


def test_default_cache_is_the_one_a_single_thread_can_evict(monkeypatch):
    from sparsescope.hardware import cpuinfo

    seen = []
    monkeypatch.setattr(cpuinfo, "evictable_cache_bytes", lambda: 4096)
    monkeypatch.setattr(host, "flush_cache", lambda llc: seen.append(llc))
    m = time_host(Counter(), TimingConfig(warmups=0, repeats=2), working_set_bytes=100)
    assert m.flushed and seen == [4096, 4096]


@pytest.mark.parametrize("config, message", [
    (TimingConfig(repeats=0), "repeats >= 1"),
    (TimingConfig(warmups=-1), "warmups >= 0"),
    (TimingConfig(statistic="p90"), "statistic must be one of median, mean, min"),
    (TimingConfig(min_total_ms=-1.0), "min_total_ms must be >= 0"),
])
def test_invalid_settings_are_usage_errors(config, message):
    with pytest.raises(UsageError, match=message):
        time_host(Counter(), config, llc_bytes=1024)


class FakeClock:
    """``time`` stand-in whose clock moves only when the flush or the call runs."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_the_flush_stays_outside_the_timed_window(monkeypatch):
    """A flush of 100 s and a call of 1 ms: every sample is the call's 1 ms alone."""
    clock = FakeClock()
    flushes = []

    def slow_flush(llc):
        flushes.append(llc)
        clock.now += 100.0

    def call():
        clock.now += 0.001

    monkeypatch.setattr(host, "time", clock)
    monkeypatch.setattr(host, "flush_cache", slow_flush)
    m = time_host(call, TimingConfig(warmups=2, repeats=5, flush_l2=True), llc_bytes=4096)
    assert m.flushed and len(flushes) == 5
    assert m.samples_ms == pytest.approx((1.0,) * 5)


def test_the_garbage_collector_is_off_only_while_timing():
    import gc

    seen = []
    fn = Counter()

    def call():
        fn()
        seen.append(gc.isenabled())

    assert gc.isenabled()
    time_host(call, TimingConfig(warmups=2, repeats=3, flush_l2=False))
    assert seen == [True, True, False, False, False]  # warm-ups collect, timed calls do not
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that had it off keeps it off
        time_host(call, TimingConfig(warmups=0, repeats=1, flush_l2=False))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_call_that_raises_leaves_the_collector_on():
    import gc

    def boom():
        if not gc.isenabled():
            raise RuntimeError("timed call failed")

    with pytest.raises(RuntimeError):
        time_host(boom, TimingConfig(warmups=1, repeats=2, flush_l2=False))
    assert gc.isenabled()
