"""The CUDA timing protocol's control flow, run on the host with a recording stand-in for the
library (events read the host clock): flush decision, hold-and-retry, graph fallback,
minimum total time, and what the Measurement records. The real library path is exercised on a
GPU by tests/gpu/test_gpu_timing.py."""

from __future__ import annotations

import time

import pytest

from sparsescope.timing import TimingConfig
from sparsescope.timing import cuda as cuda_timing


class _Event:
    def __init__(self) -> None:
        self.t = None

    def record(self) -> None:
        self.t = time.perf_counter()


class _Buffer:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


class RecordingLib:
    """Does what the protocol asks and writes down every step."""

    name = "recording"

    def __init__(self, l2: int = 1000, capture_fails: bool = False) -> None:
        self.l2, self.capture_fails = l2, capture_fails
        self.steps: list[str] = []
        self.holds: list[float] = []

    def event(self):
        return _Event()

    def synchronize(self) -> None:
        self.steps.append("sync")

    def l2_bytes(self) -> int:
        return self.l2

    def new_flush_buffer(self, nbytes: int):
        self.steps.append(f"alloc {nbytes}")
        return _Buffer(nbytes)

    def flush(self, buffer) -> None:
        self.steps.append("flush")

    def settle(self) -> None:
        self.steps.append("settle")

    def elapsed_ms(self, start, end) -> float:
        return (end.t - start.t) * 1e3

    def hold(self, seconds: float) -> None:
        self.holds.append(seconds)
        self.held_until = time.perf_counter() + seconds

    held_until = 0.0

    def capture(self, fn):
        if self.capture_fails:
            raise RuntimeError("capture unsupported")
        return (lambda: self.steps.append("replay")), ("graph",)


@pytest.fixture
def lib(monkeypatch):
    recording = RecordingLib()
    monkeypatch.setattr(cuda_timing, "_library", lambda name: recording)
    yield recording
    cuda_timing.release_flush_buffers()


def _calls(lib):
    return lambda: lib.steps.append("call")


def test_flush_when_the_working_set_fits_l2(lib):
    m = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=2, repeats=3), library="x",
                              working_set_bytes=1000, breakdown=False)
    assert m.flushed and m.clock == "cuda-events" and m.config.clock == "cuda-events"
    assert lib.steps[0] == "alloc 2000"  # 2 x L2
    assert lib.steps[1:] == ["call", "call", "sync", "flush", "call", "flush", "call", "flush",
                             "call", "sync"]
    assert len(m.samples_ms) == 3 and all(s >= 0 for s in m.samples_ms)
    assert m.kernel_breakdown == ()


def test_no_flush_for_a_working_set_larger_than_l2_or_when_switched_off(lib):
    big = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=0, repeats=2), library="x",
                                working_set_bytes=1001, breakdown=False)
    off = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=0, repeats=2, flush_l2=False),
                                library="x", working_set_bytes=10, breakdown=False)
    assert not big.flushed and not off.flushed and "flush" not in lib.steps
    on = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=0, repeats=2, flush_l2=True),
                               library="x", working_set_bytes=10**9, breakdown=False)
    assert on.flushed and lib.steps.count("flush") == 2


def test_a_slow_host_gets_a_longer_hold(lib):
    def slow_call():
        time.sleep(0.002)

    m = cuda_timing.time_cuda(slow_call, TimingConfig(warmups=0, repeats=5, flush_l2=False),
                              library="x", breakdown=False)
    # 5 x 2 ms of queueing outlast the first 5 ms hold; the probe's held call (second hold)
    # takes no longer than its unheld one, so the batch runs again behind a hold of twice the
    # queueing time, which it then fits into.
    assert lib.holds[:2] == [cuda_timing.HOLD_START_S, cuda_timing.HOLD_START_S]
    assert len(lib.holds) == 3 and 0.02 <= lib.holds[2] < 0.1
    assert len(m.samples_ms) == 5 and all(s >= 2.0 for s in m.samples_ms)


def test_a_call_that_waits_for_the_device_is_timed_without_a_hold(lib):
    def syncing_call():  # like CuPy's A[rows]: returns only once the held stream is free
        time.sleep(max(0.0, lib.held_until - time.perf_counter()))

    m = cuda_timing.time_cuda(syncing_call, TimingConfig(warmups=0, repeats=5, flush_l2=False),
                              library="x", breakdown=False)
    # the first batch's queueing outlasts its 5 ms hold; the probe (one call unheld, one
    # behind a 5 ms hold) finds the call waits, so the batch runs once more without a hold --
    # instead of doubling the hold up to HOLD_MAX_S, which the call would wait out every time
    assert lib.holds == [cuda_timing.HOLD_START_S, cuda_timing.HOLD_START_S]
    assert len(m.samples_ms) == 5


def test_a_fast_host_is_held_once_per_batch(lib):
    m = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=0, repeats=4,
                                                        min_total_ms=0.0, flush_l2=False),
                              library="x", breakdown=False)
    assert lib.holds == [cuda_timing.HOLD_START_S] and len(m.samples_ms) == 4


def test_min_total_ms_adds_batches(lib):
    def call():
        time.sleep(0.001)

    m = cuda_timing.time_cuda(call, TimingConfig(warmups=0, repeats=2, min_total_ms=5.0,
                                                 flush_l2=False), library="x", breakdown=False)
    assert sum(m.samples_ms) >= 5.0 and len(m.samples_ms) % 2 == 0 and len(m.samples_ms) >= 4


def test_graph_replay_replaces_the_call(lib):
    m = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=1, repeats=2, flush_l2=False,
                                                        graph_capture=True),
                              library="x", breakdown=False)
    assert m.config.graph_capture is True
    # warm-up call, sync, first replay uploads the graph, sync, then 2 timed replays
    assert lib.steps == ["call", "sync", "replay", "sync", "replay", "replay", "sync"]


def test_graph_capture_failure_falls_back_and_says_so(lib):
    lib.capture_fails = True
    with pytest.warns(UserWarning, match="CUDA graph capture failed .*capture unsupported"):
        m = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=0, repeats=2,
                                                            flush_l2=False, graph_capture=True),
                                  library="x", breakdown=False)
    assert m.config.graph_capture is False
    assert lib.steps.count("call") == 2


def test_each_profiler_session_is_followed_by_the_settle(lib, monkeypatch):
    """The breakdown's profiler session, then the library's settle launches, in the latency
    and the throughput mode: a session alone left the next timing 3.5-6 % off on an H200,
    alternating session by session (timing.cuda._breakdown)."""
    rows = ({"name": "k", "time_ms": 0.001},)

    def profiled(call, *, synchronize):
        call()
        lib.steps.append("breakdown")
        return rows

    monkeypatch.setattr(cuda_timing, "kernel_breakdown", profiled)
    m = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=1, repeats=2), library="x",
                              working_set_bytes=10**9)
    assert m.kernel_breakdown == rows
    assert lib.steps == ["call", "sync", "call", "call", "sync", "call", "breakdown", "settle"]
    lib.steps.clear()
    t = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=1, repeats=1, mode="throughput",
                                                        throughput_calls=2), library="x")
    assert t.kernel_breakdown == rows and lib.steps[-2:] == ["breakdown", "settle"]
    assert lib.steps.count("settle") == 1


def test_a_trial_timing_profiles_nothing(lib, monkeypatch):
    """``TimingConfig(breakdown=False)``, as the auto backends' trials time: no profiler
    session and no settle; their breakdown would be thrown away."""
    from sparsescope.backends import spmm_auto, spmv_auto

    monkeypatch.setattr(cuda_timing, "kernel_breakdown", lambda call, *, synchronize: 1 / 0)
    for trial in (spmm_auto.TRIAL_TIMING, spmv_auto.TRIAL_TIMING):
        assert trial.breakdown is False
        m = cuda_timing.time_cuda(_calls(lib), trial, library="x", working_set_bytes=10**9)
        assert m.kernel_breakdown == () and "settle" not in lib.steps


def test_state_halves_flip_the_state_between_two_halves_of_the_samples(lib):
    """``TimingConfig(state_halves=True)``: repeats // 2 samples, the settle launches (a flip
    of the two-state effect), the rest; the Measurement says where the halves meet."""
    m = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=1, repeats=5, state_halves=True),
                              library="x", working_set_bytes=10, breakdown=False)
    assert lib.steps[1:] == ["call", "sync", "flush", "call", "flush", "call", "sync", "settle",
                             "flush", "call", "flush", "call", "flush", "call", "sync"]
    assert m.halves_at == 2 and len(m.samples_ms) == 5
    lib.steps.clear()
    one = cuda_timing.time_cuda(_calls(lib), TimingConfig(warmups=0, repeats=1,
                                                          state_halves=True),
                                library="x", working_set_bytes=10, breakdown=False)
    assert one.halves_at == 0 and "settle" not in lib.steps
