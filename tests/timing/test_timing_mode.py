"""The two timing modes (``TimingConfig.mode``, ``timing.modes``): the throughput mode's
arithmetic, its CUDA path run with a stand-in library whose events read a simulated device
clock, its host path with a fake clock, and the settings the protocol refuses."""

from __future__ import annotations

import pytest

from sparsescope.errors import UsageError
from sparsescope.timing import TimingConfig
from sparsescope.timing import cuda as cuda_timing
from sparsescope.timing.host import should_flush, time_host
from sparsescope.timing.modes import (
    MAX_CALLS,
    MIN_CALLS,
    PROBE_CALLS,
    back_to_back,
    calls_per_sample,
    mode_label,
    per_call_samples,
    time_host_throughput,
)


def test_calls_per_sample_hand_checks():
    assert calls_per_sample(0.005) == 200  # 5 us a call: ceil(1 ms / 5 us)
    assert calls_per_sample(0.040) == 25
    assert calls_per_sample(2.0) == MIN_CALLS == 10  # a long call: the floor
    assert calls_per_sample(0.0001) == MAX_CALLS == 200  # a 0.1 us call: the cap
    assert calls_per_sample(0.0) == MAX_CALLS  # a clock too coarse to see the probe
    assert calls_per_sample(float("nan")) == MAX_CALLS


def test_per_call_samples_and_back_to_back():
    assert per_call_samples([2.0, 2.2], 200) == pytest.approx([0.010, 0.011])
    with pytest.raises(ValueError, match="calls must be >= 1"):
        per_call_samples([1.0], 0)
    made = []
    batch = back_to_back(lambda: made.append(len(made)) or len(made), 4)
    assert batch() == 4 and made == [0, 1, 2, 3]  # the last call's result comes back


def test_the_protocol_refuses_what_the_throughput_mode_cannot_honour():
    assert TimingConfig(mode="throughput").checked().mode == "throughput"
    with pytest.raises(UsageError, match="timing mode must be one of latency, throughput"):
        TimingConfig(mode="burst").checked()
    with pytest.raises(UsageError, match="throughput timing keeps the L2 warm"):
        TimingConfig(mode="throughput", flush_l2=True).checked()
    with pytest.raises(UsageError, match="throughput_calls must be a whole number"):
        TimingConfig(mode="throughput", throughput_calls=-1).checked()
    with pytest.raises(UsageError, match="timing mode must be one of"):  # time_host checks too
        time_host(lambda: None, TimingConfig(mode="burst"), llc_bytes=1)


def test_throughput_never_flushes_latency_flushes_what_fits():
    assert should_flush(TimingConfig(), 100, 1000) is True
    assert should_flush(TimingConfig(mode="throughput"), 100, 1000) is False
    assert should_flush(TimingConfig(mode="throughput", flush_l2=False), 100, 1000) is False


def test_mode_label_names_the_mode_beside_the_statistic():
    assert mode_label(TimingConfig()) == "median, latency"
    assert mode_label(TimingConfig(mode="throughput", throughput_calls=200)) == (
        "median, throughput (200 calls back to back)")


class _Clock:
    """A host clock that only the fake call advances."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_host_throughput_times_batches_of_n_calls_and_divides():
    clock, calls = _Clock(), []

    def call():  # 4 ms a call
        calls.append(1)
        clock.now += 0.004

    m = time_host_throughput(call, TimingConfig(warmups=2, repeats=3, mode="throughput"),
                             clock=clock)
    # probe: 4 ms a call -> N = max(10, ceil(1 / 4)) = 10
    assert m.config.throughput_calls == 10 and m.config.mode == "throughput"
    assert m.samples_ms == pytest.approx((4.0, 4.0, 4.0)) and m.flushed is False
    assert len(calls) == 2 + PROBE_CALLS + 3 * 10


def test_host_throughput_keeps_a_given_n_and_the_minimum_total():
    clock = _Clock()

    def call():
        clock.now += 0.001

    m = time_host_throughput(call, TimingConfig(warmups=0, repeats=2, mode="throughput",
                                                throughput_calls=7, min_total_ms=30.0),
                             clock=clock)
    # 7 ms a batch: 2 repeats, then batches until the batches add up to 30 ms -> 5 batches
    assert m.config.throughput_calls == 7 and len(m.samples_ms) == 5
    assert m.samples_ms == pytest.approx((1.0,) * 5)


class _DeviceEvent:
    def __init__(self, lib) -> None:
        self.lib, self.t = lib, None

    def record(self) -> None:
        self.t = self.lib.device_ms


class SimulatedLib:
    """A CUDA library stand-in: each call of the timed function adds ``call_ms`` to a device
    clock, which events read when recorded; a graph of a batch replays the same calls."""

    name = "simulated"

    def __init__(self, call_ms: float) -> None:
        self.call_ms, self.device_ms = call_ms, 0.0
        self.flushes = self.holds = self.captures = 0

    def event(self):
        return _DeviceEvent(self)

    def synchronize(self) -> None:
        pass

    def elapsed_ms(self, start, end) -> float:
        return end.t - start.t

    def hold(self, seconds: float) -> None:
        self.holds += 1

    def l2_bytes(self) -> int:
        return 1 << 20

    def new_flush_buffer(self, nbytes: int):
        return memoryview(bytearray(nbytes))  # a stand-in: its nbytes is all that is read

    def flush(self, buffer) -> None:
        self.flushes += 1

    def capture(self, fn):
        self.captures += 1
        return fn, None


@pytest.fixture
def simulated(monkeypatch):
    def install(call_ms: float) -> SimulatedLib:
        lib = SimulatedLib(call_ms)
        monkeypatch.setattr(cuda_timing, "_library", lambda name: lib)
        monkeypatch.setattr(cuda_timing, "_flush_buffers", {})
        # the simulated hold lasts as long as asked and the host's queueing is real time: a
        # loaded machine could queue a batch slower than the first hold and the protocol would
        # rightly take it again (tests/timing/test_timing_cuda_protocol.py tests that); here a
        # hold no host outlasts keeps each sample one batch, whatever the load
        monkeypatch.setattr(cuda_timing, "HOLD_START_S", 3600.0)
        monkeypatch.setattr(cuda_timing, "HOLD_MAX_S", 3600.0)
        return lib
    return install


def test_cuda_throughput_sample_is_batch_time_over_n(simulated):
    lib = simulated(0.005)  # 5 us a call
    calls = []

    def fn():
        calls.append(1)
        lib.device_ms += lib.call_ms

    m = cuda_timing.time_cuda(fn, TimingConfig(warmups=4, repeats=5, mode="throughput"),
                              library="simulated", working_set_bytes=10, breakdown=False)
    assert m.config.throughput_calls == 200  # probe 5 us -> ceil(1 ms / 5 us)
    assert m.samples_ms == pytest.approx((0.005,) * 5)
    assert m.flushed is False and lib.flushes == 0  # the working set fits, yet no flush
    assert m.clock == "cuda-events" and m.config.graph_capture is False
    assert len(calls) == 4 + PROBE_CALLS + 5 * 200
    assert lib.holds == 5  # one hold per sample: one batch of launches queued at a time


def test_cuda_throughput_with_a_graph_of_the_batch(simulated):
    lib = simulated(0.050)
    calls = []

    def fn():
        calls.append(1)
        lib.device_ms += lib.call_ms

    m = cuda_timing.time_cuda(fn, TimingConfig(warmups=0, repeats=3, mode="throughput",
                                               graph_capture=True, throughput_calls=12),
                              library="simulated", breakdown=False)
    assert lib.captures == 1 and m.config.graph_capture is True
    assert m.config.throughput_calls == 12 and m.samples_ms == pytest.approx((0.05,) * 3)
    # probe, the graph's upload replay, three samples: 3 + 12 + 3 x 12
    assert len(calls) == PROBE_CALLS + 12 + 3 * 12


def test_cuda_latency_mode_is_unchanged_by_the_modes(simulated):
    lib = simulated(0.005)

    def fn():
        lib.device_ms += lib.call_ms

    m = cuda_timing.time_cuda(fn, TimingConfig(warmups=1, repeats=4), library="simulated",
                              working_set_bytes=10, breakdown=False)
    assert m.config.mode == "latency" and m.config.throughput_calls == 0
    assert m.flushed is True and lib.flushes == 4  # fits in the L2: flushed before each call
    assert m.samples_ms == pytest.approx((0.005,) * 4)
