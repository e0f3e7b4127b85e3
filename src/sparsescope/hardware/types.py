"""Hardware records: datasheet specs and ceilings measured on a device."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DeviceSpec:
    """Datasheet figures of one device, each with its source in :attr:`sources`."""

    name: str
    """Canonical name, e.g. ``H200``."""
    vendor_name: str
    """Marketing name, e.g. ``NVIDIA H200 SXM 141GB``."""
    kind: str
    """``gpu`` or ``cpu``."""
    compute_capability: str
    """e.g. ``9.0``; empty for a CPU."""
    sm_count: int
    """Streaming multiprocessors (cores for a CPU)."""
    max_warps_per_sm: int
    """Resident warps per SM at 100% occupancy."""
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    """32-bit registers per SM."""
    shared_mem_per_sm_bytes: int
    warp_schedulers_per_sm: int
    l2_bytes: int
    peak_bw_gb_s: float
    """Peak DRAM bandwidth, GB/s (10^9 bytes/s)."""
    fp32_peak_gflops: float
    """Peak non-tensor FP32, GFLOP/s (2 flops per FMA)."""
    sm_clock_mhz: float
    """Boost SM clock used for the FP32 peak."""
    dram_latency_ns: float
    """Estimated loaded DRAM latency, ns (the model's Little's-law input)."""
    memory: str = ""
    """Memory type and size, e.g. ``141 GB HBM3e``."""
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    """Field name -> where the figure comes from (datasheet, whitepaper, measured, derived)."""


@dataclass(frozen=True)
class MeasuredCeilings:
    """Ceilings measured on the device that ran the cases (None where not measured)."""

    device: str
    """Device name as reported by the driver or the OS."""
    copy_bw_gb_s: float | None = None
    """Device-to-device (or RAM-to-RAM) copy, read + write bytes counted, GB/s."""
    read_bw_gb_s: float | None = None
    """Read-only streaming bandwidth, GB/s."""
    l2_bw_gb_s: float | None = None
    """Bandwidth with the working set well inside L2, GB/s."""
    l2_write_bw_gb_s: float | None = None
    """Store bandwidth with the written buffer well inside L2 (stores that bypass L1, as a
    register spill's do), GB/s."""
    dram_latency_ns: float | None = None
    """Pointer-chasing load latency, working set much larger than L2, ns."""
    l2_latency_ns: float | None = None
    """Pointer-chasing load latency, working set inside L2, ns."""
    fp32_gflops: float | None = None
    """Measured FP32 FMA throughput, GFLOP/s."""
    dram_gather_gsectors_s: float | None = None
    """Random 4-byte loads over a buffer much larger than L2, each its own 32-byte sector:
    sectors per second / 1e9 (the rate of x gathers that miss L2)."""
    l2_gather_gsectors_s: float | None = None
    """The same random loads inside L2: sectors per second / 1e9 (x gathers that hit L2)."""
    launch_us: float | None = None
    """Device time of one empty kernel between two CUDA events, queued behind busy work as
    the timing protocol queues its calls, microseconds."""
    call_us: float | None = None
    """What the timing protocol itself measures for a call of one empty kernel (events queued
    behind its hold, the L2 flushed before each call): the fixed cost every timed call of one
    launch carries, median, microseconds."""
    next_launch_us: float | None = None
    """What each further launch of a call adds through the same protocol: the median of a call
    of two empty kernels less ``call_us``, microseconds (a launch queued behind another
    overlaps part of its cost)."""
    pdl_launch_us: float | None = None
    """A call of one empty kernel launched with programmatic dependent launch (PDL) behind the
    same, back to back through the timing protocol's throughput mode, microseconds per call:
    the fixed cost of a call that starts while the previous one runs (the tile kernels'
    launch in the throughput mode, ``model.call_overhead``); None where PDL cannot be launched
    (no ``cuda.bindings``, a device before sm_90)."""
    flush_writeback_share: float | None = None
    """What the timing protocol's L2 flush costs the next kernel: the extra time of a streaming
    read of L2/2 bytes right after the flush (whose dirty lines it evicts) over the same read
    after a clean eviction, as a share of those L2/2 bytes' time at the read bandwidth (0: the
    write-back is free, 1: every evicted dirty byte costs a DRAM byte's time)."""
    library_call_us: dict[str, float] = field(default_factory=dict)
    """Library route (``nvmath``: cuSPARSE planned through nvmath-python; ``cupy``, ``torch``:
    its wrappers) -> the timing protocol's median (latency mode, L2 flushed before each call)
    of that route's cuSPARSE SpMV of a tiny matrix, microseconds: the fixed cost of one
    library call (``model.call_overhead``); empty where not measured."""
    library_call_throughput_us: dict[str, float] = field(default_factory=dict)
    """The same calls timed back to back (throughput mode), microseconds per call."""
    method: dict[str, str] = field(default_factory=dict, compare=False)
    """Ceiling name -> how it was measured (buffer size, repeats, statistic)."""
    copy_bw_spread_pct: float | None = None
    """Spread of the copy-bandwidth trials, ``100 (max - min) / best`` (None: one figure)."""
    read_bw_spread_pct: float | None = None
    """Spread of the read-bandwidth trials, ``100 (max - min) / best``."""
    fp32_spread_pct: float | None = None
    """Spread of the FP32 trials, ``100 (max - min) / best``."""
    trials: int = 0
    """Timed trials each ceiling is the best of (0: not measured in trials, e.g. the GPU's)."""
    measured_utc: str = ""
    """When the ceilings were measured (ISO 8601, UTC); empty when not recorded. A run whose
    CPU ceilings come from the per-machine cache carries the cached measurement's time."""

    def spread_pct(self, ceiling: str) -> float | None:
        """Spread of ``ceiling`` (``copy_bw_gb_s``, ``read_bw_gb_s`` or ``fp32_gflops``);
        None for another name or when not measured in trials."""
        name = {"copy_bw_gb_s": "copy_bw_spread_pct", "read_bw_gb_s": "read_bw_spread_pct",
                "fp32_gflops": "fp32_spread_pct"}.get(ceiling)
        return getattr(self, name) if name else None
