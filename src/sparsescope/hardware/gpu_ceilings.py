"""Ceilings measured on the GPU that runs the cases (CuPy; kernels in
``backends/kernels/gpu_ceilings.cu``). The report and model set them beside the datasheet.

Protocol (each figure's ``method`` string repeats it):

* clocks ramped first: the FMA kernel runs for 0.1 s before anything is timed (an idle H200
  sits near 345 MHz);
* every figure is the best of ``repeats`` CUDA-event-timed launches after one untimed launch
  -- a ceiling is what the device can reach, as STREAM reports it;
* copy: ``cudaMemcpyAsync`` device to device between two buffers of ``size_mb`` MiB (>> L2),
  ``copy_bw = 2 B / t`` (read + write counted);
* read: a grid-stride float4 ``__ldcg`` sum over one such buffer, ``read_bw = B / t``;
* L2: the same kernel, ``l2_passes`` passes over a buffer of L2/4, ``l2_bw = passes B / t``
  (after one untimed pass has brought the buffer into L2);
* L2 writes: ``write_stream``, grid-stride float4 ``__stcg`` stores, ``l2_passes`` passes over
  the same L2/4 buffer, ``l2_write_bw = passes B / t`` (the rate of register-spill stores,
  which the L1 passes through to the L2);
* latency: one thread chasing ``j = next[j]`` through a random single-cycle permutation of
  nodes 256 B apart (more than a 128 B line: no load hits a line another brought in);
  DRAM: 4 Mi nodes over 1 GiB, each timed chase visiting nodes no earlier chase touched;
  L2: the nodes of L2/4 bytes, chased once untimed to load them; ``ns/load = t / steps``;
* FP32: ``fma_chains``, 8 independent FMA chains per thread, full occupancy,
  ``fp32 = 2 x 8 x iters x threads / t``;
* gathers: ``random_gather``, each thread ``gather_loads`` 4-byte loads at hashed random
  indices (8 in flight per thread), full occupancy, over the 1 GiB buffer (DRAM) and over
  L2/4 (L2, loaded first); every load its own sector, ``sectors/s = loads / t``;
* launch: one ``empty_kernel`` between two events, queued behind an FMA launch that keeps the
  device busy while the host queues it (as the timing protocol's hold does), so the figure is
  the device-side cost of a launch, not the host's.
* call: the timing protocol itself (``timing.cuda.time_cuda``: events queued behind its hold,
  the L2 flushed before each call) timing a call of one ``empty_kernel`` (``call_us``) and of
  two back to back (``next_launch_us`` = that less ``call_us``); the median of ``call_samples``
  each, the statistic every timed case reports, so a prediction of a case carries the same
  fixed cost as its measurement (on an H200 about 3.7 us a call and 1.5 us a further launch,
  against 2.7 us for the best empty launch behind an FMA launch:
  ``results/h200/kernels/followups/2026-11-25-call-overhead-probe``).
* library call: each library route's cuSPARSE SpMV of a tiny matrix (``library_probes``: the
  planned ``nvmath-cusparse-i32`` and the wrappers ``cupy-cusparse-i32``,
  ``torch-cusparse-i32``, made by ``backends.library_probe``; hardware imports no backend)
  timed by the same protocol, latency mode with the L2 flushed (``library_call_us``) and back
  to back (``library_call_throughput_us``), the median of ``call_samples`` each: the fixed cost
  of a library call, its descriptors, workspace and kernels' waits included, which the model
  charges every cuSPARSE call of that route (``model.call_overhead``). A route not available
  here is left out, the method saying why.
* PDL launch: the same protocol's throughput mode (calls back to back, nothing flushed)
  timing one ``empty_pdl_kernel`` launched with programmatic dependent launch
  (``hardware.programmatic_launch``) behind the one before (``pdl_launch_us``): the fixed cost
  of a call that starts while the previous one still runs, which the tile kernels pay in the
  throughput mode (``model.call_overhead``); not measured without ``cuda.bindings`` or before
  sm_90, the method saying why.
* flush write-back: ``read_stream`` over a buffer of L2/2 bytes, timed right after the timing
  protocol's flush (``+= 1`` over 2 x L2 int32s, which leaves the L2 full of dirty lines) and
  right after a clean eviction (a read of the 2 x L2 buffer); ``share = (t_dirty - t_clean) /
  (L2/2 / read_bw)``, at least 0 (best of ``repeats`` of each).

Takes about 1-3 s on an H200 (NVRTC compilation included).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from sparsescope.errors import DeviceError
from sparsescope.hardware import _gpu_runtime
from sparsescope.hardware.types import MeasuredCeilings

MiB = 1024 * 1024
SOURCE = "gpu_ceilings.cu"
STRIDE_BYTES = 256
"""Node spacing of the pointer chase: two 128 B lines, so each node owns its line."""
CHAINS = 8
"""FMA chains per thread in ``fma_chains`` (the kernel's ``CHAINS``)."""
RAMP_S = 0.1
"""Seconds of FMA work run untimed first, so the SM clock has left its idle state."""


class _Timer:
    """Best-of-N CUDA-event timing of a launch on the current stream."""

    def __init__(self, cupy, repeats: int) -> None:
        self.cupy, self.repeats = cupy, repeats

    def best_ms(self, launch, untimed: int = 1) -> float:
        cp = self.cupy
        for _ in range(untimed):
            launch()
        best = float("inf")
        for _ in range(self.repeats):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            launch()
            end.record()
            end.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(start, end))
        return max(best, 1e-6)


def _chase_array(cupy, nodes: int, seed: int):
    """Device ``next`` array (uint32) holding one random cycle through ``nodes`` nodes spaced
    ``STRIDE_BYTES`` apart; returns (array, first node's element index)."""
    step = STRIDE_BYTES // 4
    order = np.random.default_rng(seed).permutation(nodes).astype(np.int64)
    successor = np.empty(nodes, dtype=np.int64)
    successor[order] = np.roll(order, -1)  # order[i] -> order[i+1], last -> first
    array = cupy.zeros(nodes * step, dtype=cupy.uint32)
    array[cupy.arange(nodes, dtype=cupy.int64) * step] = cupy.asarray(
        (successor * step).astype(np.uint32))
    return array, int(order[0] * step)


def _bandwidth_ms(cupy, timer: _Timer, kernels: tuple, launch: tuple, nbytes: int,
                  l2_bytes: int, l2_passes: int) -> tuple[float, float, float, float]:
    """Best (copy, DRAM read, L2 read, L2 write) times in ms; the buffers are freed on
    return. ``kernels``: (read_stream, write_stream)."""
    read, write = kernels
    blocks, threads, sink = launch
    src = cupy.ones(nbytes // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    copy_ms = timer.best_ms(lambda: dst.data.copy_from_device_async(src.data, nbytes))
    read_ms = timer.best_ms(lambda: read((blocks,), (threads,),
                                         (src, np.uint64(nbytes // 16), np.int32(1), sink)))
    small = src[: l2_bytes // 4]
    l2_ms = timer.best_ms(lambda: read((blocks,), (threads,), (
        small, np.uint64(l2_bytes // 16), np.int32(l2_passes), sink)))
    l2_write_ms = timer.best_ms(lambda: write((blocks,), (threads,), (
        small, np.uint64(l2_bytes // 16), np.int32(l2_passes), np.float32(1.0))))
    return copy_ms, read_ms, l2_ms, l2_write_ms


def _dram_chase_ms(cupy, chase, nodes: int, steps: int, repeats: int) -> float:
    """Best of ``repeats`` chases of ``steps`` loads, each continuing where the last stopped
    (so every load reaches a node nothing touched before: a DRAM access)."""
    array, position = _chase_array(cupy, nodes, seed=1)
    out = cupy.zeros(1, dtype=cupy.uint32)
    samples = []
    for i in range(repeats + 1):
        begin, end = cupy.cuda.Event(), cupy.cuda.Event()
        begin.record()
        chase((1,), (1,), (array, np.uint32(position), np.int32(steps), out))
        end.record()
        end.synchronize()
        position = int(out.get()[0])
        if i > 0:  # the first chase is untimed, like every other figure's first launch
            samples.append(cupy.cuda.get_elapsed_time(begin, end))
    return min(samples)


def _l2_chase_ms(cupy, timer: _Timer, chase, nodes: int, steps: int) -> float:
    """Best chase of ``steps`` loads over ``nodes`` nodes already brought into L2."""
    array, start = _chase_array(cupy, nodes, seed=2)
    out = cupy.zeros(1, dtype=cupy.uint32)
    chase((1,), (1,), (array, np.uint32(start), np.int32(nodes), out))  # one lap loads L2
    return timer.best_ms(lambda: chase((1,), (1,), (array, np.uint32(start),
                                                    np.int32(steps), out)), untimed=0)


def _gather_ms(cupy, timer: _Timer, gather, launch: tuple, buffer, loads: int) -> float:
    """Best ``random_gather`` time over ``buffer`` (one untimed launch first, which also
    brings an L2-sized buffer into L2)."""
    blocks, threads, sink = launch
    return timer.best_ms(lambda: gather((blocks,), (threads,), (
        buffer, np.uint64(buffer.size), np.int32(loads), sink)))


def _launch_us(cupy, empty, fma, launch: tuple, repeats: int) -> float:
    """Best device time (us) of one empty launch between two events, queued behind a busy FMA
    launch so the host's launch cost stays hidden."""
    blocks, threads, sink = launch
    best = float("inf")
    for _ in range(repeats + 1):
        fma((blocks,), (threads,), (np.int32(4096), np.float32(0.999), np.float32(1e-3), sink))
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        empty((1,), (32,), ())
        end.record()
        end.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, end))
    return best * 1e3


def _protocol_median_us(call: Callable[[], Any], **config: Any) -> float:
    """The median, in microseconds, of the timing protocol's samples of ``call()`` (CuPy's
    stream, no kernel breakdown) under ``TimingConfig(warmups=3, **config)``."""
    from sparsescope.timing.cuda import time_cuda
    from sparsescope.timing.types import TimingConfig

    m = time_cuda(call, TimingConfig(warmups=3, **config), library="cupy", breakdown=False)
    return 1e3 * float(np.median(m.samples_ms))


def _call_us(empty, samples: int) -> tuple[float, float]:
    """(call_us, next_launch_us): medians of the timing protocol's own samples of a call of
    one, then two, empty kernels with the L2 flushed before each call (module docstring)."""
    one = _protocol_median_us(lambda: empty((1,), (32,), ()), repeats=samples, flush_l2=True)
    two = _protocol_median_us(lambda: (empty((1,), (32,), ()), empty((1,), (32,), ())),
                              repeats=samples, flush_l2=True)
    return one, max(0.0, two - one)


def _pdl_launch_us(empty_pdl, samples: int) -> tuple[float | None, str]:
    """(pdl_launch_us, why not): the timing protocol's throughput mode (calls back to back, no
    flush) timing one ``empty_pdl_kernel`` launched with programmatic dependent launch behind
    the one before (``hardware.programmatic_launch``); the median of ``samples`` per-call
    times. (None, the reason) where PDL cannot be launched here."""
    from sparsescope.hardware.programmatic_launch import available, launch_programmatic

    ok, why = available()
    if not ok:
        return None, why
    return _protocol_median_us(lambda: launch_programmatic(empty_pdl, 1, 32, ()),
                               repeats=samples, mode="throughput"), ""


def library_call_costs(probes: Mapping[str, Callable[[Any], Any]], samples: int
                       ) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    """(latency us, throughput us, why not) per library route: each probe (``probe(config)`` ->
    a ``Measurement`` of the route's call with that ``TimingConfig``) timed by the protocol in
    the latency mode with the L2 flushed, then in the throughput mode, ``samples`` samples
    after 3 untimed calls each; medians in microseconds. A probe that raises (its library not
    installed here, its check failed) leaves its route out, with the reason."""
    from sparsescope.timing.types import TimingConfig

    alone = TimingConfig(warmups=3, repeats=samples, flush_l2=True)
    back_to_back = TimingConfig(warmups=3, repeats=samples, mode="throughput")
    latency: dict[str, float] = {}
    throughput: dict[str, float] = {}
    missing: dict[str, str] = {}
    for library, probe in probes.items():
        try:
            one = 1e3 * float(np.median(probe(alone).samples_ms))
            many = 1e3 * float(np.median(probe(back_to_back).samples_ms))
        except Exception as exc:  # noqa: BLE001  (a route that cannot run is left out)
            missing[library] = f"{type(exc).__name__}: {exc}"
            continue
        latency[library], throughput[library] = one, many
    return latency, throughput, missing


def _flush_writeback_share(cupy, read, launch: tuple, l2: int, read_bw_gb_s: float,
                           repeats: int) -> float:
    """The flush's write-back cost to the next kernel (module docstring), >= 0."""
    blocks, threads, sink = launch
    flush = cupy.zeros(2 * l2 // 4, dtype=cupy.int32)
    target = cupy.ones((l2 // 2) // 16 * 4, dtype=cupy.float32)
    n4 = np.uint64(target.size // 4)

    def after(prepare) -> float:
        best = float("inf")
        for _ in range(repeats + 1):
            prepare()
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            read((blocks,), (threads,), (target, n4, np.int32(1), sink))
            end.record()
            end.synchronize()
            best = min(best, cupy.cuda.get_elapsed_time(start, end))
        return best

    def dirty() -> None:
        flush.__iadd__(1)

    def clean() -> None:
        read((blocks,), (threads,), (flush.view(cupy.float32), np.uint64(flush.size // 4),
                                     np.int32(1), sink))

    extra_ms = after(dirty) - after(clean)
    return max(0.0, extra_ms / (target.nbytes / (read_bw_gb_s * 1e6)))


def _device_properties(cupy) -> tuple[str, int, int]:
    """Name, L2 size (bytes) and SM count of device 0."""
    runtime = cupy.cuda.runtime
    props = runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    l2 = int(runtime.deviceGetAttribute(38, 0))  # cudaDevAttrL2CacheSize
    sms = int(runtime.deviceGetAttribute(16, 0))  # cudaDevAttrMultiProcessorCount
    return name, l2, sms


def _fma_ms(cupy, timer: _Timer, fma, launch: tuple, fma_iters: int) -> float:
    """Best ``fma_chains`` time in ms, timed only after ``RAMP_S`` seconds of untimed FMA
    launches have raised the SM clock from its idle state."""
    blocks, threads, sink = launch

    def fma_launch() -> None:
        fma((blocks,), (threads,), (np.int32(fma_iters), np.float32(0.999), np.float32(1e-3),
                                    sink))

    ramp_until = time.perf_counter() + RAMP_S  # clocks up before anything is timed
    while time.perf_counter() < ramp_until:
        for _ in range(5):
            fma_launch()
        cupy.cuda.Device().synchronize()
    return timer.best_ms(fma_launch)


def measure_gpu_ceilings(*, size_mb: float = 1024, repeats: int = 5, l2_passes: int = 200,
                         chase_steps: int = 20_000, fma_iters: int = 8192,
                         gather_loads: int = 64, call_samples: int = 50,
                         library_probes: Mapping[str, Callable[[Any], Any]] | None = None
                         ) -> MeasuredCeilings:
    """Measure copy, read and L2 bandwidth (GB/s, 10^9 B/s), DRAM and L2 load latency (ns) and
    FP32 FMA throughput (GFLOP/s) of device 0, and, for each of ``library_probes`` (library
    route -> ``probe(TimingConfig)`` -> ``Measurement``), a library call's fixed cost
    (:func:`library_call_costs`). See the module docstring for the protocol."""
    ok, why = _gpu_runtime.cupy_cuda_status()
    if not ok:
        raise DeviceError(f"cannot measure GPU ceilings: {why}")
    import cupy

    name, l2, sms = _device_properties(cupy)
    module = _gpu_runtime.raw_module(SOURCE)
    read, write, chase, fma, gather, empty, empty_pdl = (module.get_function(n) for n in (
        "read_stream", "write_stream", "pointer_chase", "fma_chains", "random_gather",
        "empty_kernel", "empty_pdl_kernel"))
    timer = _Timer(cupy, repeats)
    sink = cupy.zeros(4, dtype=cupy.float32)
    threads, blocks = 256, sms * 8  # 2048 threads per SM: full occupancy on Hopper

    fma_ms = _fma_ms(cupy, timer, fma, (blocks, threads, sink), fma_iters)
    flops = 2.0 * CHAINS * fma_iters * blocks * threads

    nbytes = int(size_mb * MiB) // 16 * 16
    l2_bytes = (l2 // 4) // 16 * 16
    copy_ms, read_ms, l2_ms, l2_write_ms = _bandwidth_ms(
        cupy, timer, (read, write), (blocks, threads, sink), nbytes, l2_bytes, l2_passes)
    big = cupy.ones(nbytes // 4, dtype=cupy.float32)
    loads = float(gather_loads) * blocks * threads
    dram_gather_ms = _gather_ms(cupy, timer, gather, (blocks, threads, sink), big, gather_loads)
    l2_gather_ms = _gather_ms(cupy, timer, gather, (blocks, threads, sink),
                              big[: l2_bytes // 4], gather_loads)
    del big
    launch_us = _launch_us(cupy, empty, fma, (blocks, threads, sink), repeats)
    call_us, next_launch_us = _call_us(empty, call_samples)
    pdl_launch_us, no_pdl = _pdl_launch_us(empty_pdl, call_samples)
    library_us, library_tp_us, library_missing = library_call_costs(library_probes or {},
                                                                    call_samples)
    read_bw = nbytes / (read_ms * 1e-3) / 1e9
    writeback = _flush_writeback_share(cupy, read, (blocks, threads, sink), l2, read_bw, repeats)
    dram_nodes = 4 * MiB
    dram_ms = _dram_chase_ms(cupy, chase, dram_nodes, chase_steps, repeats)
    l2_nodes = max(1024, l2_bytes // STRIDE_BYTES)
    l2_chase_ms = _l2_chase_ms(cupy, timer, chase, l2_nodes, chase_steps)
    cupy.get_default_memory_pool().free_all_blocks()

    return MeasuredCeilings(
        device=name,
        copy_bw_gb_s=2 * nbytes / (copy_ms * 1e-3) / 1e9,
        read_bw_gb_s=read_bw,
        l2_bw_gb_s=l2_passes * l2_bytes / (l2_ms * 1e-3) / 1e9,
        l2_write_bw_gb_s=l2_passes * l2_bytes / (l2_write_ms * 1e-3) / 1e9,
        dram_latency_ns=dram_ms * 1e6 / chase_steps,
        l2_latency_ns=l2_chase_ms * 1e6 / chase_steps,
        fp32_gflops=flops / (fma_ms * 1e-3) / 1e9,
        dram_gather_gsectors_s=loads / (dram_gather_ms * 1e-3) / 1e9,
        l2_gather_gsectors_s=loads / (l2_gather_ms * 1e-3) / 1e9,
        launch_us=launch_us,
        call_us=call_us,
        next_launch_us=next_launch_us,
        pdl_launch_us=pdl_launch_us,
        flush_writeback_share=writeback,
        library_call_us=library_us,
        library_call_throughput_us=library_tp_us,
        method={**_methods(nbytes=nbytes, l2=l2, l2_bytes=l2_bytes, l2_passes=l2_passes,
                           launch=(blocks, threads), repeats=repeats, chase_steps=chase_steps,
                           dram_nodes=dram_nodes, l2_nodes=l2_nodes, fma_iters=fma_iters,
                           gather_loads=gather_loads, call_samples=call_samples,
                           no_pdl=no_pdl),
                **library_methods(library_probes or {}, library_missing, call_samples)},
    )


def library_methods(probes: Mapping[str, Any], missing: Mapping[str, str],
                    samples: int) -> dict[str, str]:
    """The ``method`` strings of the library-call figures: the probe each route ran, the
    protocol, and the routes left out with their reasons."""
    if not probes:
        return {}
    routes = ", ".join(f"{name}: {getattr(probe, 'describes', name)}"
                       for name, probe in probes.items() if name not in missing)
    left = "; ".join(f"{name} not measured ({why})" for name, why in missing.items())
    tail = f"; {left}" if left else ""
    return {"library_call_us": f"each route's cuSPARSE SpMV of a tiny matrix ({routes or 'none'}) "
                               f"through the timing protocol (time_cuda, latency mode, L2 "
                               f"flushed before each call); median of {samples} after 3 "
                               f"untimed{tail}",
            "library_call_throughput_us": f"the same calls back to back (throughput mode: "
                                          f"timing.modes), microseconds per call; median of "
                                          f"{samples} samples after 3 untimed{tail}"}


def _methods(*, nbytes: int, l2: int, l2_bytes: int, l2_passes: int, launch: tuple[int, int],
             repeats: int, chase_steps: int, dram_nodes: int, l2_nodes: int,
             fma_iters: int, gather_loads: int, call_samples: int,
             no_pdl: str = "") -> dict[str, str]:
    """The ``method`` string of each figure: the protocol with the sizes this run used."""
    blocks, threads = launch
    best = f"best of {repeats} CUDA-event-timed launches after 1 untimed"
    return {
        "copy_bw_gb_s": f"cudaMemcpyAsync D2D, 2 buffers x {nbytes / MiB:.0f} MiB "
                        f"({nbytes / l2:.0f}x the {l2 / MiB:.0f} MiB L2); bytes = read + "
                        f"write; {best}",
        "read_bw_gb_s": f"grid-stride float4 __ldcg sum over {nbytes / MiB:.0f} MiB, "
                        f"{blocks} x {threads} threads; {best}",
        "l2_bw_gb_s": f"same kernel, {l2_passes} passes over {l2_bytes / MiB:.1f} MiB "
                      f"(L2/4); {best}",
        "l2_write_bw_gb_s": f"write_stream: grid-stride float4 __stcg stores, {l2_passes} "
                            f"passes over {l2_bytes / MiB:.1f} MiB (L2/4), {blocks} x "
                            f"{threads} threads; {best}",
        "dram_latency_ns": f"1-thread pointer chase, {chase_steps} dependent __ldcg loads "
                           f"over a random cycle of {dram_nodes} nodes {STRIDE_BYTES} B "
                           f"apart ({dram_nodes * STRIDE_BYTES / MiB:.0f} MiB), every "
                           f"load a fresh node; best of {repeats} chases; ns per load",
        "l2_latency_ns": f"1-thread pointer chase, {chase_steps} dependent __ldcg loads "
                         f"over a random cycle of {l2_nodes} nodes {STRIDE_BYTES} B apart "
                         f"({l2_nodes * STRIDE_BYTES / MiB:.1f} MiB, chased once untimed "
                         f"to load L2); best of {repeats}; ns per load",
        "fp32_gflops": f"fma_chains: {CHAINS} independent FMA chains x {fma_iters} "
                       f"iterations, {blocks} x {threads} threads, 2 flops per FMA; "
                       f"after {RAMP_S:g} s of FMAs to raise clocks; {best}",
        "dram_gather_gsectors_s": f"random_gather: {gather_loads} hashed 4-byte __ldcg loads "
                                  f"per thread (8 in flight), {blocks} x {threads} threads, "
                                  f"over {nbytes / MiB:.0f} MiB; sectors = loads; {best}",
        "l2_gather_gsectors_s": f"the same over {l2_bytes / MiB:.1f} MiB (L2/4); {best}",
        "flush_writeback_share": f"read_stream over {l2 / 2 / MiB:.1f} MiB (L2/2) right after "
                                 f"the timing protocol's flush of 2 x {l2 / MiB:.0f} MiB, less "
                                 f"the same after a clean 2 x L2 read, over L2/2 at the read "
                                 f"bandwidth; best of {repeats} each",
        "launch_us": f"one empty kernel between two events, queued behind a busy FMA launch; "
                     f"best of {repeats} after 1 untimed",
        "call_us": f"the timing protocol (time_cuda, L2 flushed before each call) timing a "
                   f"call of one empty kernel; median of {call_samples} after 3 untimed",
        "next_launch_us": f"the same protocol timing a call of two empty kernels, less "
                          f"call_us; medians of {call_samples} each",
        "pdl_launch_us": (f"the same protocol's throughput mode timing empty_pdl_kernel "
                          f"launched with programmatic dependent launch behind itself; median "
                          f"of {call_samples}" if no_pdl == "" else f"not measured: {no_pdl}"),
    }
