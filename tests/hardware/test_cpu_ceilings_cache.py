"""CPU ceilings as the best of several trials, their spread, and the machine fingerprint
(fake trials and clocks: nothing here measures the machine for real)."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.hardware import cpu_ceilings, cpuinfo
from sparsescope.hardware.cpu_ceilings import best_of
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


def test_one_trial_repeats_the_kernel_until_the_trial_is_long_enough():
    # trials of >= 0.5 s (durations exact in binary):
    # trial 1: 0.25 + 0.25 = 0.5 s for 2 calls -> 2 x 1.0 GB / 0.5 s = 4 GB/s
    # trial 2: 1.0 s for 1 call                 -> 1 GB/s
    # trial 3: 0.125 x 4 = 0.5 s for 4 calls    -> 8 GB/s
    clock = FakeClock([0.25, 0.25, 1.0, 0.125, 0.125, 0.125, 0.125])
    rates = [cpu_ceilings.one_trial(clock.kernel, 1.0, 0.5, clock) for _ in range(3)]
    assert rates == [4.0, 1.0, 8.0]
    assert clock.calls == 7
    stats = best_of(rates)
    assert stats.best == 8.0
    assert stats.spread_pct == 100 * (8 - 1) / 8  # 87.5 %


@pytest.mark.parametrize("rates, expected", [
    ([20.0, 19.7], True),          # 19.7 >= 20 x 0.98 = 19.6
    ([20.0, 19.5, 10.0], False),   # 19.5 < 19.6: the best stands alone
    ([20.0], False),               # one trial confirms nothing
    ([15.0, 20.0, 16.0, 20.0], True),
])
def test_confirmed_needs_a_second_trial_within_two_percent(rates, expected):
    assert cpu_ceilings.confirmed(rates, 2.0) is expected


class Kernel:
    """A fake kernel whose every call takes the next duration of its own list."""

    def __init__(self, clock, durations):
        self.clock, self.durations, self.calls = clock, list(durations), 0

    def __call__(self):
        self.clock.now += self.durations[self.calls]
        self.calls += 1


def test_rounds_stop_once_every_best_is_confirmed():
    clock = FakeClock([])
    # untimed call first (9 s, never counted), then one call per trial (min_seconds 0)
    a = Kernel(clock, [9.0, 1.0, 1.0, 0.5, 0.5, 0.5])     # rates 1, 1, 2, 2
    b = Kernel(clock, [9.0, 0.5, 0.5, 0.5, 0.5, 0.5])     # rates 2, 2, 2, 2
    rates = cpu_ceilings.trial_rounds({"a": (a, 1.0), "b": (b, 1.0)}, min_trials=3,
                                      max_trials=7, min_seconds=0.0, confirm_pct=2.0,
                                      clock=clock)
    # a after 3 rounds: [1, 1, 2] -> best 2 alone; round 4 adds 2 -> confirmed: stop at 4
    assert rates == {"a": [1.0, 1.0, 2.0, 2.0], "b": [2.0, 2.0, 2.0, 2.0]}
    assert (a.calls, b.calls) == (5, 5)  # 1 untimed + 4 trials each


def test_rounds_stop_at_the_most_trials_on_a_busy_machine():
    clock = FakeClock([])
    wandering = Kernel(clock, [1.0] + [1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 1.0])
    rates = cpu_ceilings.trial_rounds({"w": (wandering, 1.0)}, min_trials=3, max_trials=7,
                                      min_seconds=0.0, clock=clock)
    assert rates["w"] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]  # each best stands alone
    assert wandering.calls == 8


def test_quiet_rounds_stop_at_the_fewest_trials():
    clock = FakeClock([])
    steady = Kernel(clock, [1.0] * 10)
    rates = cpu_ceilings.trial_rounds({"s": (steady, 3.0)}, min_trials=3, max_trials=7,
                                      min_seconds=0.0, clock=clock)
    assert rates == {"s": [3.0, 3.0, 3.0]} and steady.calls == 4


def test_measure_keeps_the_best_trial_and_the_spread_of_each_ceiling(monkeypatch):
    """measure_cpu_ceilings with fake rounds: copy and read in rounds, then as many FP32
    trials (the BLAS threads kept away from the bandwidth trials)."""
    seen = []
    fake = {"copy": [16.0, 24.0, 22.0, 23.0, 20.0],       # best 24, spread 33.3 %
            "read": [30.0, 30.0, 29.4, 30.0, 30.0],       # best 30, spread 2 %
            "fp32": [41.0, 197.0, 150.0, 180.0, 190.0]}   # best 197

    def fake_rounds(kernels, *, min_trials, max_trials, min_seconds):
        seen.append(({k: w for k, (_, w) in kernels.items()}, min_trials, max_trials,
                     min_seconds))
        return {k: fake[k] for k in kernels}

    monkeypatch.setattr(cpu_ceilings, "trial_rounds", fake_rounds)
    c = cpu_ceilings.measure_cpu_ceilings(size_mb=1, trials=5, min_trial_s=0.01, gemm_n=8)
    assert (c.copy_bw_gb_s, c.read_bw_gb_s, c.fp32_gflops) == (24.0, 30.0, 197.0)
    assert c.copy_bw_spread_pct == pytest.approx(100 * 8 / 24)
    assert c.read_bw_spread_pct == pytest.approx(2.0)
    assert c.fp32_spread_pct == pytest.approx(100 * (197 - 41) / 197)
    assert c.trials == 5 and c.measured_utc.endswith("+00:00")
    assert "best of 5 trials of >= 10 ms" in c.method["copy_bw_gb_s"]
    # work per call: 2 buffers of B bytes in GB, and 2 n^3 flops in GFLOP
    nbytes = cpu_ceilings.buffer_bytes(1, cpuinfo.evictable_cache_bytes(),
                                       cpuinfo.available_ram_bytes())
    assert seen == [({"copy": 2 * nbytes / 1e9, "read": 2 * nbytes / 1e9}, 3, 5, 0.01),
                    ({"fp32": 2 * 8**3 / 1e9}, 5, 5, 0.01)]   # as many FP32 trials
    assert c.spread_pct("fp32_gflops") == c.fp32_spread_pct
    assert c.spread_pct("l2_bw_gb_s") is None
    assert "below half the copy rate" not in c.method["read_bw_gb_s"]  # 30 >= 24 / 2


def test_a_read_rate_under_half_the_copy_rate_is_named():
    assert cpu_ceilings.read_copy_note(6.8, 23.0).startswith(
        "; read 6.8 GB/s is below half the copy rate (23.0 GB/s)")
    assert cpu_ceilings.read_copy_note(11.5, 23.0) == ""


def test_the_read_kernel_reads_every_word_of_both_buffers():
    """The OR of every word: a bit planted in the last word of each buffer (and the first)
    shows up, so the reduction cannot have stopped early or skipped a buffer."""
    src = np.zeros(1 << 16, dtype=np.int64)
    dst = np.zeros_like(src)
    assert cpu_ceilings.read_words(src, dst) == 0
    src[-1], dst[-1], dst[0] = 1 << 3, 1 << 40, 1 << 62
    assert cpu_ceilings.read_words(src, dst) == (1 << 3) | (1 << 40) | (1 << 62)


def test_machine_load_round_trips_and_decides_busy():
    text = cpu_ceilings.machine_load_text(37.25, 1.5, 2, 0.84, 1.79)
    assert text == ("37.2 % of the 2 CPUs' time went to other processes (steal 1.5 %) over "
                    "the 0.8 s of measuring; load average 1.79 before")
    assert cpu_ceilings.busy_share_pct({"machine_load": text}) == pytest.approx(37.2 + 1.5)
    assert cpu_ceilings.was_busy({"machine_load": text})
    idle = cpu_ceilings.machine_load_text(1.0, 0.0, 2, 0.7, None)
    assert cpu_ceilings.busy_share_pct({"machine_load": idle}) == 1.0
    assert not cpu_ceilings.was_busy({"machine_load": idle})
    assert cpu_ceilings.busy_share_pct({}) is None and not cpu_ceilings.was_busy({})


def test_measure_records_what_other_processes_took(monkeypatch):
    """Other processes' share comes from /proc/stat around the rounds (fake snapshots)."""
    snapshots = iter([cpuinfo.CpuTimes(100.0, 5.0, 2, 1.0, 50.0),
                      cpuinfo.CpuTimes(101.5, 5.1, 2, 1.9, 51.0)])
    monkeypatch.setattr(cpu_ceilings, "cpu_times", lambda: next(snapshots))
    monkeypatch.setattr(cpu_ceilings, "trial_rounds", lambda kernels, **kw: {
        k: [1.0, 1.0, 1.0] for k in kernels})
    c = cpu_ceilings.measure_cpu_ceilings(size_mb=1, gemm_n=8)
    # busy 1.5 s of which 0.9 s ours over 1 s on 2 CPUs: 30 %; steal 0.1 / 2 = 5 %
    assert c.method["machine_load"].startswith(
        "30.0 % of the 2 CPUs' time went to other processes (steal 5.0 %) over the 1.0 s")
    assert cpu_ceilings.was_busy(c.method)


def test_protocol_sizes_fit_the_time_budget():
    """3 to 7 trials; quiet: 3 ceilings x (3 trials + 1 untimed) x the shortest trial well
    under a second; busy: 7 trials under ~1 s of trial time."""
    assert 3 <= cpu_ceilings.MIN_TRIALS < cpu_ceilings.TRIALS == 7
    assert 3 * (cpu_ceilings.MIN_TRIALS + 1) * cpu_ceilings.MIN_TRIAL_S < 0.5
    assert 3 * (cpu_ceilings.TRIALS + 1) * cpu_ceilings.MIN_TRIAL_S < 1.0


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
