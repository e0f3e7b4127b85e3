"""CPU ceilings as the best of several trials, their spread, and the machine fingerprint
(fake trials and clocks: nothing here measures the machine for real)."""

from __future__ import annotations

import pytest

from sparsescope.hardware import cpu_ceilings, cpuinfo
from sparsescope.hardware.cpu_ceilings import best_of, trial_rates
from sparsescope.hardware.types import MeasuredCeilings


def test_best_of_picks_the_best_trial_and_its_spread():
    stats = best_of([18.0, 20.0, 19.0, 16.0, 19.5])
    assert stats.best == 20.0 and stats.worst == 16.0
    # (20 - 16) / 20 = 20 %
    assert stats.spread_pct == pytest.approx(20.0)
    assert stats.rates == (18.0, 20.0, 19.0, 16.0, 19.5)


def test_best_of_identical_trials_has_no_spread():
    assert best_of([31.5] * 7).spread_pct == 0.0
    with pytest.raises(ValueError):
        best_of([])


class FakeClock:
    """A clock that advances only when the fake kernel runs: each call takes the next duration."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = list(durations)
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def kernel(self) -> None:
        self.now += self.durations[self.calls]
        self.calls += 1


def test_trial_rates_repeat_the_kernel_until_the_trial_is_long_enough():
    # 1 untimed call (5 s, not counted), then trials of >= 0.5 s (durations exact in binary):
    # trial 1: 0.25 + 0.25 = 0.5 s for 2 calls -> 2 x 1.0 GB / 0.5 s = 4 GB/s
    # trial 2: 1.0 s for 1 call                 -> 1 GB/s
    # trial 3: 0.125 x 4 = 0.5 s for 4 calls    -> 8 GB/s
    clock = FakeClock([5.0, 0.25, 0.25, 1.0, 0.125, 0.125, 0.125, 0.125])
    rates = trial_rates(clock.kernel, work=1.0, trials=3, min_seconds=0.5, clock=clock)
    assert rates == [4.0, 1.0, 8.0]
    assert clock.calls == 8
    stats = best_of(rates)
    assert stats.best == 8.0
    assert stats.spread_pct == 100 * (8 - 1) / 8  # 87.5 %


def test_measure_keeps_the_best_trial_and_the_spread_of_each_ceiling(monkeypatch):
    """measure_cpu_ceilings with fake trials: copy, read, then FP32 (in that order)."""
    fake = iter([[16.0, 24.0, 22.0, 23.0, 20.0],      # copy GB/s: best 24, spread 33.3 %
                 [30.0, 30.0, 29.4, 30.0, 30.0],      # read GB/s: best 30, spread 2 %
                 [41.0, 197.0, 150.0, 180.0, 190.0]])  # FP32 GFLOP/s: best 197
    seen = []

    def fake_trials(fn, work, trials, min_seconds, clock=None):
        seen.append((work, trials, min_seconds))
        return next(fake)

    monkeypatch.setattr(cpu_ceilings, "trial_rates", fake_trials)
    c = cpu_ceilings.measure_cpu_ceilings(size_mb=1, trials=5, min_trial_s=0.01, gemm_n=8)
    assert (c.copy_bw_gb_s, c.read_bw_gb_s, c.fp32_gflops) == (24.0, 30.0, 197.0)
    assert c.copy_bw_spread_pct == pytest.approx(100 * 8 / 24)
    assert c.read_bw_spread_pct == pytest.approx(2.0)
    assert c.fp32_spread_pct == pytest.approx(100 * (197 - 41) / 197)
    assert c.trials == 5 and c.measured_utc.endswith("+00:00")
    assert "best of 5 trials of >= 10 ms" in c.method["copy_bw_gb_s"]
    # work per call: 2 buffers of B bytes in GB, and 2 n^3 flops in GFLOP
    nbytes = cpu_ceilings.buffer_bytes(1, cpuinfo.last_level_cache_bytes(),
                                       cpuinfo.available_ram_bytes())
    assert seen == [(2 * nbytes / 1e9, 5, 0.01), (2 * nbytes / 1e9, 5, 0.01),
                    (2 * 8**3 / 1e9, 5, 0.01)]
    assert c.spread_pct("fp32_gflops") == c.fp32_spread_pct
    assert c.spread_pct("l2_bw_gb_s") is None


def test_protocol_sizes_fit_the_time_budget():
    """At least 5 trials; 3 ceilings x (trials + 1 untimed) x the shortest trial under ~3 s."""
    assert cpu_ceilings.TRIALS >= 5
    assert 3 * (cpu_ceilings.TRIALS + 1) * cpu_ceilings.MIN_TRIAL_S < 1.5


def test_machine_key_names_the_machine():
    key = cpu_ceilings.machine_key()
    assert key == cpu_ceilings.machine_key()
    parts = key.split("|")
    assert parts[0] == cpu_ceilings.PROTOCOL
    assert parts[2] == f"cpu={cpuinfo.cpu_model_name()}"
    assert parts[3] == f"cores={cpuinfo.logical_cores()}"
    assert parts[1].startswith("host=") and parts[4].startswith("ram=")


def test_machine_key_changes_with_the_cores(monkeypatch):
    before = cpu_ceilings.machine_key()
    monkeypatch.setattr(cpu_ceilings, "logical_cores", lambda: 999)
    assert cpu_ceilings.machine_key() != before and "cores=999" in cpu_ceilings.machine_key()


def test_old_records_read_without_the_new_fields():
    c = MeasuredCeilings(device="x", copy_bw_gb_s=1.0)
    assert (c.copy_bw_spread_pct, c.trials, c.measured_utc) == (None, 0, "")
    assert c.spread_pct("copy_bw_gb_s") is None
