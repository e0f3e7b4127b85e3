"""The CUDA side of the one timing protocol: device events, L2 flush, graph replay, breakdown.

Same steps as :func:`sparsescope.timing.host.time_host`, with the settings recorded in the
returned :class:`Measurement` (``clock="cuda-events"``):

1. ``config.warmups`` calls, then a device synchronise (module load, NVRTC compilation,
   cuSPARSE handle and workspace creation stay out of the samples).
2. Optional CUDA-graph capture (``config.graph_capture``): one call is captured and each
   repeat replays the graph, which removes the Python and launch gaps between kernels. When
   the library cannot capture the call, the calls are launched as usual, a warning says why,
   and the recorded config says ``graph_capture=False``.
3. Repeat: optionally flush L2, then record a start event, make the call, record an end
   event -- only the event pair is timed, never the flush. At least ``config.repeats``
   samples, more until they add up to ``config.min_total_ms``. With ``config.state_halves``
   the first ``repeats // 2`` samples, then the library's settle launches (a flip of the
   two-state effect of :func:`_breakdown`), then the rest; the median is then the mean of
   the two halves' (``Measurement.halves_at``). A sample is the *end-to-end*
   time of one call on the device's stream: its kernels plus any gaps while the host was
   still launching them (as the seed report's CUDA-event timing measured).
4. A kernel breakdown of one call (:func:`kernel_breakdown`, PyTorch profiler with CUDA
   activity): name, time per call, % of GPU time, launches per call -- the seed's nsys table.
   Then the library settles (:data:`SETTLE_LAUNCHES` launches of its own small add and a
   synchronise): a profiler session otherwise leaves the *next* timing a few per cent off,
   one way after one session and the other way after the next (:func:`_breakdown`).

Throughput mode (``config.mode == "throughput"``, :mod:`sparsescope.timing.modes`): after the
warm-ups, each sample is N calls back to back between one event pair (one replay of a graph
of N calls with ``graph_capture``), divided by N; the L2 is never flushed. N is recorded in
the returned config's ``throughput_calls``.

L2 flush: ``config.flush_l2`` True/False decides; None flushes when the working set fits in
L2 (``working_set_bytes <= l2_bytes``), so a small matrix is timed from DRAM like a large one.
The flush adds 1 to every int32 of a device buffer of ``2 x L2`` bytes (read + write through
L2), which evicts the previous repeat's lines. The flush's dirty lines are written back while
the next call runs: a small, unavoidable extra DRAM traffic the protocol accepts (as
nvbench's flush does).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import replace

from sparsescope.errors import UsageError
from sparsescope.timing.host import MAX_SAMPLES, should_flush, validate_config
from sparsescope.timing.modes import PROBE_CALLS, back_to_back, calls_per_sample, per_call_samples
from sparsescope.timing.types import Measurement, TimingConfig

LIBRARIES = ("torch", "cupy")
#: Calls profiled for the breakdown; times are divided by this (per call).
BREAKDOWN_CALLS = 3

#: Launches of the library's small add after each profiler session (:func:`_breakdown`).
SETTLE_LAUNCHES = 3
#: int32 elements of the buffer those launches add 1 to.
SETTLE_INTS = 256

#: First hold before a batch, and the most it grows to (see :func:`_timed_batch`).
HOLD_START_S = 0.005
HOLD_MAX_S = 1.0
#: Cycles per second assumed for the spin; a slower clock only makes the hold longer.
HOLD_CLOCK_HZ = 2.0e9
_HOLD_SOURCE = r"""
extern "C" __global__ void sparsescope_hold(const long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""
_hold_kernel = None
_flush_buffers: dict[str, object] = {}


class _Settles:
    """The settle after a profiler session (:func:`_breakdown`), in the library's own flush
    op: a buffer of :data:`SETTLE_INTS` int32, :data:`SETTLE_LAUNCHES` adds, a synchronise."""

    def settle(self) -> None:
        small = self.new_flush_buffer(4 * SETTLE_INTS)
        for _ in range(SETTLE_LAUNCHES):
            self.flush(small)
        self.synchronize()


class _TorchLib(_Settles):
    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def elapsed_ms(self, start, end) -> float:
        return float(start.elapsed_time(end))

    def hold(self, seconds: float) -> None:
        """Keep the current stream busy for at least ``seconds`` (a clock64 spin)."""
        self.torch.cuda._sleep(int(seconds * HOLD_CLOCK_HZ))

    def l2_bytes(self) -> int:
        return int(self.torch.cuda.get_device_properties(0).L2_cache_size)

    def new_flush_buffer(self, nbytes: int):
        return self.torch.zeros(nbytes // 4, dtype=self.torch.int32, device="cuda")

    def flush(self, buffer) -> None:
        buffer.add_(1)

    def capture(self, fn: Callable[[], object]):
        """(replay, keep-alive) of a CUDA graph of one call (torch.cuda.graph)."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # torch asks for warm-up on a side stream before capture
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = fn()
        return graph.replay, (graph, out)


class _CupyLib(_Settles):
    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy

    def event(self):
        return self.cupy.cuda.Event()

    def synchronize(self) -> None:
        self.cupy.cuda.Device().synchronize()

    def elapsed_ms(self, start, end) -> float:
        return float(self.cupy.cuda.get_elapsed_time(start, end))

    def hold(self, seconds: float) -> None:
        """Keep the current stream busy for at least ``seconds`` (a clock64 spin)."""
        global _hold_kernel
        if _hold_kernel is None:
            _hold_kernel = self.cupy.RawKernel(_HOLD_SOURCE, "sparsescope_hold")
        _hold_kernel((1,), (1,), (self.cupy.int64(int(seconds * HOLD_CLOCK_HZ)),))

    def l2_bytes(self) -> int:
        return int(self.cupy.cuda.runtime.deviceGetAttribute(38, 0))  # cudaDevAttrL2CacheSize

    def new_flush_buffer(self, nbytes: int):
        return self.cupy.zeros(nbytes // 4, dtype=self.cupy.int32)

    def flush(self, buffer) -> None:
        buffer += 1

    def capture(self, fn: Callable[[], object]):
        """(replay, keep-alive) of a CUDA graph of one call, captured on a side stream.

        The call's outputs are kept alive with the graph: the graph writes into them on every
        replay, and memory returned to CuPy's pool could be handed to someone else.
        """
        stream = self.cupy.cuda.Stream(non_blocking=True)
        with stream:
            fn()
            stream.synchronize()
            stream.begin_capture()
            try:
                out = fn()
            finally:
                graph = stream.end_capture()
        return graph.launch, (graph, out, stream)


def _library(name: str):
    if name not in LIBRARIES:
        raise UsageError(f"CUDA timing library must be one of {', '.join(LIBRARIES)}, "
                         f"got {name!r}")
    return _TorchLib() if name == "torch" else _CupyLib()


def _flush_buffer(lib, l2_bytes: int):
    """The library's flush buffer of ``2 x l2_bytes`` (allocated once, kept for the next case)."""
    nbytes = 2 * int(l2_bytes)
    buffer = _flush_buffers.get(lib.name)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = lib.new_flush_buffer(nbytes)
        _flush_buffers[lib.name] = buffer
    return buffer


def release_flush_buffers() -> None:
    """Free the flush buffers (each twice the L2)."""
    _flush_buffers.clear()


def _capture_or_none(lib, fn: Callable[[], object]):
    try:
        return lib.capture(fn)
    except Exception as exc:  # e.g. an allocation or a host sync inside the library call
        lib.synchronize()
        warnings.warn(f"CUDA graph capture failed ({type(exc).__name__}: {exc}); timed "
                      "ordinary launches instead (recorded as graph_capture=False)",
                      stacklevel=3)
        return None


def time_cuda(fn: Callable[[], object], config: TimingConfig, *, library: str,
              working_set_bytes: int = 0, l2_bytes: int | None = None,
              breakdown: bool = True) -> Measurement:
    """Time ``fn()`` (which launches work on the current CUDA stream) with CUDA events.

    ``library`` names whose events, streams and graphs are used (``torch`` or ``cupy``);
    ``working_set_bytes`` is what one call touches, for the automatic flush decision;
    ``l2_bytes`` defaults to the device's L2. Samples are in ms, in the order run.
    """
    validate_config(config)
    lib = _library(library)
    if config.mode == "throughput":
        return _time_throughput(lib, fn, config, breakdown=breakdown)
    if l2_bytes is None:
        l2_bytes = lib.l2_bytes()
    flushed = should_flush(config, working_set_bytes, l2_bytes)
    buffer = _flush_buffer(lib, l2_bytes) if flushed else None

    for _ in range(config.warmups):
        fn()
    lib.synchronize()
    call, keep_alive, graph = _captured(lib, fn, config)

    samples: list[float] = []
    half = config.repeats // 2 if config.state_halves else 0
    if half:   # the first half, then a flip of the two-state effect (see _breakdown)
        samples.extend(_timed_batch(lib, call, half, buffer))
        lib.settle()
    while len(samples) < config.repeats or (sum(samples) < config.min_total_ms
                                            and len(samples) < MAX_SAMPLES):
        batch = config.repeats - len(samples) if len(samples) < config.repeats else min(
            config.repeats, MAX_SAMPLES - len(samples))
        samples.extend(_timed_batch(lib, call, batch, buffer))

    kernels: tuple[dict, ...] = ()
    if breakdown and config.breakdown:
        kernels = _breakdown(lib, call)
    del keep_alive
    recorded = replace(config, clock="cuda-events", graph_capture=graph)
    return Measurement(samples_ms=tuple(samples), config=recorded, flushed=flushed,
                       clock="cuda-events", kernel_breakdown=kernels, halves_at=half)


def _captured(lib, fn: Callable[[], object], config: TimingConfig
              ) -> tuple[Callable[[], object], object, bool]:
    """(what to time, what keeps its graph alive, whether it is a graph): ``fn`` captured in a
    CUDA graph and replayed once (the first replay uploads it) when ``config.graph_capture``
    and the capture works, else ``fn`` itself."""
    if config.graph_capture:
        captured = _capture_or_none(lib, fn)
        if captured is not None:
            call, keep_alive = captured
            call()
            lib.synchronize()
            return call, keep_alive, True
    return fn, None, False


def _time_throughput(lib, fn: Callable[[], object], config: TimingConfig, *,
                     breakdown: bool) -> Measurement:
    """The throughput mode (``timing.modes``): the warm-ups, a probe of ``PROBE_CALLS`` calls
    back to back between one event pair that chooses N, then each sample N calls back to back
    between one event pair (one replay of a graph of N calls when ``config.graph_capture``),
    queued behind its own hold, divided by N. The L2 is never flushed."""
    for _ in range(config.warmups):
        fn()
    lib.synchronize()
    start, end = lib.event(), lib.event()
    start.record()
    for _ in range(PROBE_CALLS):
        fn()
    end.record()
    lib.synchronize()
    calls = config.throughput_calls or calls_per_sample(lib.elapsed_ms(start, end) / PROBE_CALLS)
    call, keep_alive, graph = _captured(lib, back_to_back(fn, calls), config)
    totals: list[float] = []
    while len(totals) < config.repeats or (sum(totals) < config.min_total_ms
                                           and len(totals) < MAX_SAMPLES):
        # one sample per hold: at most N calls' launches wait in the queue at a time
        totals.extend(_timed_batch(lib, call, 1, None))
    kernels = _breakdown(lib, fn) if breakdown and config.breakdown else ()
    del keep_alive
    recorded = replace(config, clock="cuda-events", graph_capture=graph, throughput_calls=calls)
    return Measurement(samples_ms=tuple(per_call_samples(totals, calls)), config=recorded,
                       flushed=False, clock="cuda-events", kernel_breakdown=kernels)


def _timed_batch(lib, call: Callable[[], object], count: int, buffer) -> list[float]:
    """``count`` samples: [flush] start-event call end-event, queued behind a hold.

    The stream is first held by a spin kernel while the host queues the whole batch, so
    every sample is device time with the next operation already waiting: the host's launch
    overhead (Python, the library's dispatch) stays out of the samples, as with nvbench's
    blocking kernel. The samples keep the device-side gaps between a call's kernels. If the
    host took longer to queue the batch than the hold lasted, the batch is run again with a
    hold of twice that time (at most :data:`HOLD_MAX_S`) -- unless the call itself waits for
    the device (it synchronises inside, as CuPy's ``A[rows]`` does): then no hold can outlast
    the queueing, so the batch runs without one (:func:`_waits_for_device`).
    """
    hold_s = HOLD_START_S
    while True:
        pairs = [(lib.event(), lib.event()) for _ in range(count)]
        lib.hold(hold_s)
        begin = time.perf_counter()
        _queue(lib, call, pairs, buffer)
        queued_s = time.perf_counter() - begin
        lib.synchronize()
        if queued_s < hold_s or hold_s >= HOLD_MAX_S:
            return [lib.elapsed_ms(start, end) for start, end in pairs]
        if _waits_for_device(lib, call):
            pairs = [(lib.event(), lib.event()) for _ in range(count)]
            _queue(lib, call, pairs, buffer)
            lib.synchronize()
            return [lib.elapsed_ms(start, end) for start, end in pairs]
        hold_s = min(HOLD_MAX_S, 2 * queued_s)


def _queue(lib, call: Callable[[], object], pairs, buffer) -> None:
    for start, end in pairs:
        if buffer is not None:
            lib.flush(buffer)
        start.record()
        call()
        end.record()


def _waits_for_device(lib, call: Callable[[], object]) -> bool:
    """Whether ``call()`` blocks the host until earlier work on the stream is done: its host
    time behind a :data:`HOLD_START_S` hold exceeds its unheld host time by half the hold."""
    begin = time.perf_counter()
    call()
    unheld_s = time.perf_counter() - begin
    lib.synchronize()
    lib.hold(HOLD_START_S)
    begin = time.perf_counter()
    call()
    held_s = time.perf_counter() - begin
    lib.synchronize()
    return held_s - unheld_s >= 0.5 * HOLD_START_S


# ----------------------------------------------------------------------------- breakdown

def _breakdown(lib, call: Callable[[], object]) -> tuple[dict, ...]:
    """:func:`kernel_breakdown` of ``call``, then ``lib.settle()``.

    Why the settle: on an H200 (PyTorch 2.11, CUDA 13.0, driver 580), a backend timed 16 times
    in a row with a profiler session after each timing ran 6.16, 5.92, 6.14, 5.90, ... us: the
    timings alternate, by 3.5-6 %, with the parity of the sessions before them, and another
    kernel alternated the other way round. Without sessions, or with three launches of the
    library's small add and a synchronise after each session, they did not (odd / even
    0.99-1.01), and the settled timings matched the session-free ones. The launches alone,
    without a session, made them alternate too: each flips a state the two together leave as
    it was. A 5-100 ms sleep did not remove it; the cause below the profiler is not known. It
    was the "order effect" of benchmarks/spmm_interleaved.py, and it shifted each backend of a
    case by its position (results/h200/real-dev/2026-11-28-profiler-settle/,
    benchmarks/timing_after_profiler.py)."""
    kernels = kernel_breakdown(call, synchronize=lib.synchronize)
    lib.settle()
    return kernels


def kernel_breakdown(fn: Callable[[], object], *, synchronize: Callable[[], None],
                     calls: int = BREAKDOWN_CALLS) -> tuple[dict, ...]:
    """Per-kernel split of one call of ``fn``, from the PyTorch profiler (CUDA activity).

    CUPTI sees every kernel in the process, so this also covers CuPy and NVRTC kernels.
    Empty when PyTorch is not installed. See :func:`summarize_device_events` for the fields.
    """
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return ()
    synchronize()
    with warnings.catch_warnings():  # "Profiler clears events at the end of each cycle"
        warnings.filterwarnings("ignore", message=".*Profiler clears events")
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            synchronize()
        events = [(e.name, e.time_range.elapsed_us()) for e in prof.events()
                  if e.device_type == DeviceType.CUDA]
    return summarize_device_events(events, calls)


def summarize_device_events(events: Iterable[tuple[str, float]],
                            calls: int) -> tuple[dict, ...]:
    """Group device activities by name: ``{"name", "full_name", "time_ms", "pct",
    "launches"}`` per call, longest first.

    ``time_ms = sum(us) / 1000 / calls``, ``launches = count / calls``,
    ``pct = 100 x time / total device time`` (kernels, memsets and copies together, as
    nsys's GPU-time share).
    """
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    totals: dict[str, list[float]] = {}
    for name, us in events:
        entry = totals.setdefault(name, [0.0, 0])
        entry[0] += float(us)
        entry[1] += 1
    grand = sum(t for t, _ in totals.values())
    rows = [{"name": short_kernel_name(name), "full_name": name[:400],
             "time_ms": t / 1000.0 / calls, "pct": 100.0 * t / grand if grand > 0 else 0.0,
             "launches": n / calls}
            for name, (t, n) in totals.items()]
    return tuple(sorted(rows, key=lambda r: (-r["time_ms"], r["name"])))


_ANON = "(anonymous namespace)"


def _matching_open(text: str, close_at: int, opener: str, closer: str) -> int:
    """Index of the bracket opening the one at ``close_at`` (scanning back), or -1."""
    depth = 0
    for i in range(close_at, -1, -1):
        if text[i] == closer:
            depth += 1
        elif text[i] == opener:
            depth -= 1
            if depth == 0:
                return i
    return -1


def short_kernel_name(name: str) -> str:
    """Qualified kernel name without return type, template arguments and parameters.

    ``void cusparse::csrmv_v3_kernel<cusparse::Policy<...>, int>(cusparse::KernelCoeffs<float>,
    ...)`` -> ``cusparse::csrmv_v3_kernel``; ``csr_vector<float, int, 8>`` -> ``csr_vector``;
    names that are not C++ signatures (``Memset (Device)``) are returned unchanged.
    """
    text = name.strip().replace(_ANON, "{anon}")
    if not (text.endswith(")") or text.endswith(">")) or " (" in text:
        return name.strip()
    if text.endswith(")"):
        start = _matching_open(text, len(text) - 1, "(", ")")
        text = text[:start] if start > 0 else text
    text = text.rstrip()
    if text.endswith(">"):
        start = _matching_open(text, len(text) - 1, "<", ">")
        text = text[:start] if start > 0 else text
    depth, cut = 0, 0
    for i, ch in enumerate(text):  # drop a return type: the last space outside brackets
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == " " and depth == 0:
            cut = i + 1
    return (text[cut:] or name.strip()).replace("{anon}", _ANON)
