"""The typed records of :mod:`sparsescope.analyze.evidence`: what a diagnosis rests on, per
memory access, branch, chain, kernel (static, profile, occupancy) and workload."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MemoryAccess:
    """One memory instruction and how the lanes of a warp address it (static)."""

    address: int
    sass: str
    space: str
    """``global``, ``generic``, ``shared`` or ``local``."""
    op: str
    """``load``, ``store``, ``atomic`` or ``reduction``."""
    width_bytes: int
    """Bytes per lane (1, 2, 4, 8, 16)."""
    pattern: str
    """``coalesced`` (lane stride = width), ``strided`` (a larger constant stride),
    ``uniform`` (one address), ``runtime-stride`` (tid x a run-time uniform), ``gather``
    (address from loaded data), ``irregular`` (any other function of the thread index)."""
    stride_bytes: int | None
    """Lane-to-lane address step for ``coalesced``/``strided``/``uniform``; None otherwise."""
    read_only: bool
    """Loaded through the read-only (non-coherent) path: ``LDG ... .CONSTANT``."""
    in_loop: bool
    sectors_per_request: int | None
    """Sectors a warp touches (static, from the stride; None when not constant)."""
    ideal_sectors_per_request: int
    bank_ways: int | None = None
    """Shared memory: n of the n-way bank conflict from the stride (None when not constant)."""
    source_line: int = 0
    source_file: str = ""
    """Line and file of the SASS line info (a header's, for an inlined function); 0, ""."""


@dataclass(frozen=True)
class BranchSite:
    """A conditional branch whose predicate differs between lanes (static)."""

    address: int
    sass: str
    cause: str
    """``thread-index`` (a non-affine function of the lane, e.g. ``tid & 1``) or ``data`` (a
    value loaded per thread: a per-row trip count, a search comparison)."""
    in_loop: bool
    back_edge: bool
    """The branch closes a loop (per-thread trip counts)."""
    source_line: int = 0
    source_file: str = ""
    """Line and file of the SASS line info (a header's, for an inlined function); 0, ""."""


@dataclass(frozen=True)
class ChainSite:
    """A global load whose address needs an earlier load's result (static)."""

    label: str
    """``col -> x``, or ``search`` for a load whose address is chosen by comparing loaded data."""
    producer_address: int | None
    consumer_address: int
    consumer_sass: str
    in_loop: bool
    source_line: int = 0
    source_file: str = ""
    """Line and file of the SASS line info (a header's, for an inlined function); 0, ""."""


@dataclass(frozen=True)
class StaticEvidence:
    """What the SASS and the resource usage say about one kernel."""

    kernel: str
    arch: str
    instructions: int
    registers: int | None
    shared_bytes: int | None
    local_bytes: int
    """Local memory per thread (stack frame incl. spills), bytes."""
    spill_store_bytes: int
    spill_load_bytes: int
    local_loads: int
    """Static ``LDL`` count."""
    local_stores: int
    """Static ``STL`` count."""
    accesses: tuple[MemoryAccess, ...]
    branches: tuple[BranchSite, ...]
    chains: tuple[ChainSite, ...]
    max_chain_depth: int
    atomics: tuple[MemoryAccess, ...]
    loops: int
    const_pointer_loads: tuple[int, ...] = ()
    """Addresses of ``LDG`` without ``.CONSTANT`` whose base is a ``const T*`` parameter (the
    read-only path was available but not used: no ``__restrict__``)."""


@dataclass(frozen=True)
class InstructionCounters:
    """One instruction of the ncu source page (per-instruction counters of one launch)."""

    address: int
    """Offset from the kernel's first instruction."""
    sass: str
    executed: int
    """Warp-level executions."""
    thread_executed: int
    sectors: int
    """L2 theoretical sectors of its global accesses."""
    ideal_sectors: int
    """Sectors of a fully coalesced access (sectors - excessive)."""
    stall_samples: dict[str, int] = field(default_factory=dict)
    source_line: int = 0
    source_file: str = ""
    """Line and file of the SASS line info (a header's, for an inlined function); 0, ""."""


@dataclass(frozen=True)
class ProfileEvidence:
    """One launch's ncu counters (None where the profile lacks the metric)."""

    duration_ns: float | None
    grid_blocks: int | None
    block_threads: int | None
    registers: int | None
    sm_count: int | None
    waves_per_sm: float | None
    theoretical_occupancy_pct: float | None
    achieved_occupancy_pct: float | None
    active_warps_per_sm: float | None
    max_warps_per_sm: float | None
    occupancy_limits_blocks: dict[str, float]
    """``registers``/``shared``/``warps``/``blocks``/``barriers`` -> blocks per SM."""
    dram_read_bytes: float | None
    dram_write_bytes: float | None
    dram_throughput_pct: float | None
    l2_throughput_pct: float | None
    l1_throughput_pct: float | None
    sm_throughput_pct: float | None
    issue_active_pct: float | None
    ld_sectors: float | None
    ld_requests: float | None
    st_sectors: float | None
    st_requests: float | None
    l2_theoretical_sectors: float | None
    l2_ideal_sectors: float | None
    branch_uniform_pct: float | None
    """``smsp__sass_average_branch_targets_threads_uniform.pct`` (branch efficiency)."""
    divergent_branches: float | None
    local_loads_executed: float | None
    local_stores_executed: float | None
    spill_instructions: float | None
    shared_ld_wavefronts: float | None
    shared_ld_instructions: float | None
    shared_st_wavefronts: float | None
    shared_st_instructions: float | None
    shared_bank_conflicts: float | None
    global_atomics: float | None
    """Global atomic and reduction instructions executed (warp level)."""
    cpi: float | None
    stalls: dict[str, float]
    """Reason -> warp cycles per issued instruction."""
    stall_samples: dict[str, int] = field(default_factory=dict)
    """Reason -> PC samples over the kernel (source page), when collected."""
    instructions: tuple[InstructionCounters, ...] = ()
    sm_clock_hz: float | None = None

    @property
    def dram_bytes(self) -> float | None:
        if self.dram_read_bytes is None:
            return None
        return self.dram_read_bytes + (self.dram_write_bytes or 0.0)

    @property
    def global_sectors(self) -> float | None:
        """L1 sectors of global loads and stores."""
        if self.ld_sectors is None:
            return None
        return self.ld_sectors + (self.st_sectors or 0.0)


@dataclass(frozen=True)
class OccupancyEvidence:
    """Theoretical occupancy of the launch and what limits it."""

    source: str
    """``profile`` (``launch__occupancy_limit_*``) or ``sass`` (the occupancy calculator)."""
    occupancy_pct: float
    active_blocks_per_sm: int
    active_warps_per_sm: int
    warps_per_block: int
    limiter: str
    """``registers``, ``shared``, ``warps``, ``blocks`` or ``barriers``."""
    limits_blocks: dict[str, int]
    max_warps_per_sm: int


@dataclass(frozen=True)
class KernelEvidence:
    """Everything known about one kernel of the workload."""

    name: str
    time_ms: float | None
    """This kernel's time per workload call (profile duration x launches, or the timing
    breakdown)."""
    time_share: float
    """Fraction of the workload's GPU time spent in this kernel (1 for a single kernel)."""
    launches: int
    grid_blocks: int | None
    block_threads: int | None
    static: StaticEvidence | None = None
    profile: ProfileEvidence | None = None
    occupancy: OccupancyEvidence | None = None


@dataclass(frozen=True)
class DeviceEvidence:
    """Device figures the model uses (spec table, or measured where given)."""

    name: str
    compute_capability: str
    sm_count: int
    max_warps_per_sm: int
    peak_bw_gb_s: float
    fp32_peak_gflops: float
    dram_latency_ns: float
    sm_clock_mhz: float = 0.0
    source: str = "spec table"


@dataclass(frozen=True)
class Evidence:
    """The workload-level measurements and each kernel's evidence."""

    workload: str
    version: str
    device: DeviceEvidence
    time_ms: float | None
    """Measured time per call (median of the timing protocol), or the profiled duration."""
    time_source: str
    """``cuda-events`` (the timing protocol), ``profile`` (ncu duration, clocks as profiled)."""
    ideal_bytes: int | None
    ideal_flops: int | None
    bytes_source: str
    """``declared``, ``inferred (...)`` or ``none``."""
    floor_ms: float | None
    """ideal_bytes / peak bandwidth."""
    kernels: tuple[KernelEvidence, ...]
    timing: dict = field(default_factory=dict)
    """Timing settings and raw samples (``TimingConfig`` fields, ``samples_ms``)."""
    correctness: dict = field(default_factory=dict)
    """``rel_err``, ``tolerance``, ``passed``; empty without a reference."""
    notes: tuple[str, ...] = ()


# --------------------------------------------------------------------------- builders
