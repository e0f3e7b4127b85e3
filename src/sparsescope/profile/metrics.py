"""Nsight Compute metric names as data: metric groups, stall reasons, and the names analyses read.

Every name here is a real ncu metric name, taken from the headers of the H200 recordings in
``tests/fixtures/h200`` (``ncu_metrics_*_analog.csv`` for the metric-group runs,
``spmv_full_raw.csv`` for ``--set full``). Where the full set and a metric-group run name the same
quantity differently (``smsp__inst_executed_op_global_ld.sum`` vs
``smsp__sass_inst_executed_op_global_ld.sum``), analyses take the first of a tuple of candidates
that the profile holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sparsescope.sass.source_page import METRIC_REASONS, SHORT_REASONS, stall_column

# --- warp stall reasons -------------------------------------------------------------------------

#: Stall reasons in ncu's order
#: (``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`` on Hopper). Readers accept
#: any reason the profile holds, so a newer ncu's extra reasons appear too.
STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)

#: reason -> (label as ncu's Warp State section prints it, what the warp waits for).
STALL_LABELS: dict[str, tuple[str, str]] = {
    "barrier": ("Barrier", "waiting for sibling warps at a barrier (__syncthreads)"),
    "branch_resolving": ("Branch Resolving", "waiting for a branch target to be computed"),
    "dispatch_stall": ("Dispatch Stall", "dispatcher could not issue the selected instruction"),
    "drain": ("Drain", "waiting for memory stores to drain at exit"),
    "gmma": ("GMMA", "waiting for warpgroup MMA (wgmma) resources"),
    "imc_miss": ("IMC Miss", "waiting for an immediate constant cache miss"),
    "lg_throttle": ("LG Throttle", "local/global memory instruction queue full"),
    "long_scoreboard": ("Long Scoreboard", "waiting for an L1TEX (global, local, texture) result"),
    "math_pipe_throttle": ("Math Pipe Throttle", "math pipeline busy (backpressure)"),
    "membar": ("Membar", "waiting at a memory barrier"),
    "mio_throttle": ("MIO Throttle",
                     "memory input/output queue full (shared memory, special math)"),
    "misc": ("Misc", "miscellaneous hardware reasons"),
    "no_instruction": ("No Instruction",
                       "instruction not fetched yet (i-cache miss, after a branch)"),
    "not_selected": ("Not Selected", "eligible but the scheduler issued another warp"),
    "selected": ("Selected", "issuing: the one cycle every instruction costs"),
    "short_scoreboard": ("Short Scoreboard",
                         "waiting for an MIO result (shared memory, special math)"),
    "sleeping": ("Sleeping", "all threads of the warp sleep (nanosleep) or yielded"),
    "tex_throttle": ("Tex Throttle", "texture unit queue full"),
    "wait": ("Wait", "fixed-latency dependency (a result a known number of cycles away)"),
}

_STALL_RATIO = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
#: The form older ncu versions' sections (and the nvprof migration guide) record: % of the warp's
#: active cycles spent in the state. Cycles per issued instruction = pct / 100 x CPI.
_STALL_PCT = re.compile(r"^smsp__warp_issue_stalled_(\w+?)_per_warp_active\.pct$")

#: Short names of the per-instruction stall columns of ``--page source`` (``stall_long_sb``)
#: that differ from the reason name; the others (``stall_wait``) are the reason itself.
# The source page's short stall names and the per-PC metric spellings live with the one
# source-page parser (sass.source_page); re-exported under the names this module has used.
SOURCE_STALL_NAMES = SHORT_REASONS
PCSAMP_NAMES = METRIC_REASONS


def stall_metric(reason: str) -> str:
    """The ratio metric of a stall reason: cycles per issued instruction spent in that state."""
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def stall_reason(metric: str) -> str | None:
    """``smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio`` ->
    ``long_scoreboard``; None for any other metric."""
    match = _STALL_RATIO.match(metric)
    return match.group(1) if match else None


def stall_pct_reason(metric: str) -> str | None:
    """``smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct`` -> ``long_scoreboard``
    (the % of warp-active cycles form); None for any other metric."""
    match = _STALL_PCT.match(metric)
    return match.group(1) if match else None


def pcsamp_reason(metric: str) -> tuple[str, bool] | None:
    """``smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued`` -> (``long_scoreboard``,
    True): the reason and whether the metric counts only samples where no instruction issued."""
    if not metric.startswith("smsp__pcsamp_warps_issue_stalled_"):
        return None
    return stall_column(metric)


def source_column_reason(column: str) -> tuple[str, bool] | None:
    """``stall_long_sb`` -> (``long_scoreboard``, False); ``stall_sleeping (Not Issued)`` ->
    (``sleeping``, True); None for a column that is not a stall column."""
    if not column.startswith("stall_"):
        return None
    return stall_column(column)


def stall_label(reason: str) -> str:
    return STALL_LABELS.get(reason, (reason.replace("_", " ").title(), ""))[0]


# --- names the typed record and the analyses read -------------------------------------------------

CPI = "smsp__average_warp_latency_per_inst_issued.ratio"
"""Warp cycles per issued instruction (ncu: Warp Cycles Per Issued Instruction)."""
ACHIEVED_OCCUPANCY_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY_PCT = "sm__maximum_warps_per_active_cycle_pct"
DURATION_NS = "gpu__time_duration.sum"
REGISTERS_PER_THREAD = "launch__registers_per_thread"
BLOCK_SIZE = "launch__block_size"
GRID_SIZE = "launch__grid_size"
BLOCK_DIMS = ("launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z")
GRID_DIMS = ("launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z")
DEVICE_NAME = "device__attribute_display_name"

# Candidates, first present wins (metric-group run name first, full-set name after).
ACTIVE_WARPS_PER_SM = ("sm__warps_active.avg.per_cycle_active",)
MAX_WARPS_PER_SM = ("device__attribute_max_warps_per_multiprocessor",)
SM_THROUGHPUT_PCT = ("sm__throughput.avg.pct_of_peak_sustained_elapsed",)
DRAM_THROUGHPUT_PCT = ("dram__throughput.avg.pct_of_peak_sustained_elapsed",
                       "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
ELIGIBLE_WARPS = ("smsp__warps_eligible.avg.per_cycle_active",)
NO_ELIGIBLE_PCT = ("smsp__issue_inst0.avg.pct_of_peak_sustained_active",)
ISSUE_ACTIVE_PCT = ("smsp__issue_active.avg.pct_of_peak_sustained_active",)
IPC = ("sm__inst_executed.avg.per_cycle_active",)

BYTES_PER_SECTOR_LD = ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",)
BYTES_PER_SECTOR_ST = ("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",)
L2_SECTORS_GLOBAL = ("memory_l2_theoretical_sectors_global",)
L2_SECTORS_GLOBAL_EXCESSIVE = ("derived__memory_l2_theoretical_sectors_global_excessive",)
GLOBAL_LD_SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",)
GLOBAL_ST_SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",)
GLOBAL_LD_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",)
GLOBAL_ST_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",)
SHARED_LD_WAVEFRONTS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",)
SHARED_ST_WAVEFRONTS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",)
SHARED_LD_CONFLICTS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",)
SHARED_ST_CONFLICTS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",)
SHARED_LD_INST = ("smsp__inst_executed_op_shared_ld.sum",
                  "smsp__sass_inst_executed_op_shared_ld.sum")
SHARED_ST_INST = ("smsp__inst_executed_op_shared_st.sum",
                  "smsp__sass_inst_executed_op_shared_st.sum")
L1_HIT_RATE_PCT = ("l1tex__t_sector_hit_rate.pct",)
L2_HIT_RATE_PCT = ("lts__t_sector_hit_rate.pct",)

WARP_INST = ("smsp__inst_executed.sum",)
THREAD_INST = ("smsp__thread_inst_executed.sum", "thread_inst_executed")
THREAD_INST_PRED_ON = ("smsp__thread_inst_executed_pred_on.sum", "thread_inst_executed_true")
GLOBAL_LD_INST = ("smsp__inst_executed_op_global_ld.sum",
                  "smsp__sass_inst_executed_op_global_ld.sum")
GLOBAL_ST_INST = ("smsp__inst_executed_op_global_st.sum",
                  "smsp__sass_inst_executed_op_global_st.sum")
#: L2 sectors, first set the profile holds wins: by operation (metric-group runs, as Ding &
#: Williams count them), the all-operation total (the full set has no per-op totals), and the
#: L1-originated (TEX) part by operation as a last resort.
L2_SECTOR_OPS = (
    ("lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum", "lts__t_sectors_op_atom.sum",
     "lts__t_sectors_op_red.sum"),
    ("lts__t_sectors.sum",),
    ("lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
     "lts__t_sectors_srcunit_tex_op_atom.sum", "lts__t_sectors_srcunit_tex_op_red.sum"),
)
DRAM_SECTORS = ("dram__sectors_read.sum", "dram__sectors_write.sum")
SM_CLOCK_HZ = ("sm__cycles_elapsed.avg.per_second",)
SM_COUNT = ("launch__sm_count",)
IPC_PER_SM_MAX = ("device__attribute_max_ipc_per_multiprocessor",)
DRAM_PEAK_BYTES_PER_CYCLE = ("dram__bytes.sum.peak_sustained",)
DRAM_CLOCK_HZ = ("dram__cycles_elapsed.avg.per_second",)
L2_PEAK_SECTORS_PER_CYCLE_PER_SLICE = ("lts__t_sectors.avg.peak_sustained",)
L2_CYCLES_AVG = ("lts__cycles_elapsed.avg",)
L2_CYCLES_SUM = ("lts__cycles_elapsed.sum",)
L2_CLOCK_HZ = ("lts__cycles_elapsed.avg.per_second",)
L1_PEAK_BYTES_PER_CYCLE = ("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",)
L1_PEAK_WRITEBACKS_PER_CYCLE = ("l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained",)
SM_CYCLES_ELAPSED = ("smsp__cycles_elapsed.avg", "sm__cycles_elapsed.avg")
DEVICE_SM_COUNT = ("device__attribute_multiprocessor_count", "launch__sm_count")
DEVICE_SCHEDULERS_PER_SM = ("device__attribute_num_schedulers_per_multiprocessor",)
DEVICE_CC = ("device__attribute_compute_capability_major",
             "device__attribute_compute_capability_minor")

#: Floating-point thread instructions (predicated on) by operation: an FMA counts 2 FLOPs.
#: ncu's full set records only the rate ``<base>.sum.per_cycle_elapsed`` (its roofline chart's
#: input), which times ``smsp__cycles_elapsed.avg`` gives the count back; a ``<base>.sum`` a
#: user collected is taken first.
FLOP_OPS = {
    "fp32": (("ffma", 2), ("fadd", 1), ("fmul", 1)),
    "fp64": (("dfma", 2), ("dadd", 1), ("dmul", 1)),
}


def flop_counter(op: str) -> str:
    """``ffma`` -> ``smsp__sass_thread_inst_executed_op_ffma_pred_on`` (add ``.sum``)."""
    return f"smsp__sass_thread_inst_executed_op_{op}_pred_on"


#: Peak FMA thread instructions per cycle over the device (ncu's roofline chart uses them).
FP32_PEAK_FMA_PER_CYCLE = ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",)
FP64_PEAK_FMA_PER_CYCLE = ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",)


# --- metric groups --------------------------------------------------------------------------------

#: ncu's count of replay passes of one launch (the raw page holds it for every launch, whatever
#: was collected): ``--set full`` took 38 on the H200 (``spmv_full_raw.csv``, ``scalar_raw.csv``).
REPLAY_PASSES = "profiler__replayer_passes"


@dataclass(frozen=True)
class MetricGroup:
    """A named set of metrics (``ncu --metrics``) and sections (``ncu --section``) to collect."""

    name: str
    description: str
    metrics: tuple[str, ...]
    """Metric names passed to ``--metrics``, comma-joined."""
    sections: tuple[str, ...] = ()
    """Section identifiers passed as ``--section``: needed where a quantity is defined by a
    section (source-level sector counts) and to get ncu's rule messages for it."""
    read_by: str = ""
    """What reads what the group collects (the audit behind :data:`DEFAULT_GROUPS`)."""


# Replay passes per group (what ``profile run`` costs: every pass replays the launch and
# restores the memory it wrote). What the H200 recordings tell (``profiler__replayer_passes``):
#
# - ``ncu_metrics_*_analog.csv``: 18 passes per launch for a ``--metrics`` list without sections
#   or SASS-patched (``smsp__sass_*``) metrics that holds every counter of ``launch``,
#   ``occupancy``, ``stalls`` and ``instruction-roofline`` but the clock and peak rates (no
#   passes: ``*.peak_sustained``, ``*.per_second``) and the FLOP counters (``smsp__sass_*``);
# - ``spmv_full_raw.csv``: ``--set full``, every section, 38 passes, 2 of them PC sampling
#   (``smsp__pcsamp_aggregated_passes``, which ``source`` needs);
# - issue 35 (H200, webbase-1M): the five groups of before (``memory`` holding the
#   MemoryWorkloadAnalysis_Tables and SourceCounters sections) took 34.
#
# One group's own cost is not in the recordings: ncu packs the counters of every requested
# metric into passes together (a group's passes alone are not the difference of two runs), and
# no recording collected one group alone. ``benchmarks/profile_speed.py --each-group`` profiles
# a case once per group on a GPU and prints each group's passes from the report.

_LAUNCH = MetricGroup(
    "launch", "launch configuration, resources and duration (seed 4.1 rows 1-3)",
    ("launch__block_size", *BLOCK_DIMS, "launch__grid_size", *GRID_DIMS, REGISTERS_PER_THREAD,
     "launch__shared_mem_per_block", "launch__shared_mem_per_block_static",
     "launch__shared_mem_config_size", "launch__waves_per_multiprocessor", "launch__sm_count",
     DURATION_NS, *SM_CLOCK_HZ),
    ("LaunchStats",),
    "records (block, grid, registers, duration), analyze (waves, shared memory, "
    "l1_check's carveout), the rooflines (SM count and clock); launch attributes cost no pass",
)
_OCCUPANCY = MetricGroup(
    "occupancy", "theoretical and achieved occupancy and what limits it",
    (THEORETICAL_OCCUPANCY_PCT, ACHIEVED_OCCUPANCY_PCT, *ACTIVE_WARPS_PER_SM,
     "sm__maximum_warps_avg_per_active_cycle", "launch__occupancy_limit_blocks",
     "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
     "launch__occupancy_limit_warps", "launch__occupancy_limit_barriers", REGISTERS_PER_THREAD),
    ("Occupancy",),
    "the report's top-level table, analyze's occupancy limits, case counters",
)
_STALLS = MetricGroup(
    "stalls", "warp stall reasons per issued instruction, scheduler statistics (seed 4.1-4.2)",
    (CPI, *(stall_metric(r) for r in STALL_REASONS), *ELIGIBLE_WARPS,
     "smsp__issue_active.avg.per_cycle_active", *NO_ELIGIBLE_PCT, *IPC, *SM_THROUGHPUT_PCT,
     DRAM_THROUGHPUT_PCT[0]),
    ("WarpStateStats", "SchedulerStats"),
    "the stall table, bars and pies, Little's law, analyze's diagnosis; the sections add "
    "their rule messages (CPIStall, IssueSlotUtilization)",
)
_MEMORY = MetricGroup(
    "memory", "coalescing, sectors per request, bank conflicts, cache hit rates (seed 4.3)",
    (*BYTES_PER_SECTOR_LD, *BYTES_PER_SECTOR_ST, *GLOBAL_LD_SECTORS, *GLOBAL_ST_SECTORS,
     *GLOBAL_LD_REQUESTS, *GLOBAL_ST_REQUESTS, *SHARED_LD_WAVEFRONTS, *SHARED_ST_WAVEFRONTS,
     *SHARED_LD_CONFLICTS, *SHARED_ST_CONFLICTS,
     # the hardware counters, not the SASS-patched smsp__sass_* twins: the same counts, and
     # the instruction-roofline group collects them anyway
     SHARED_LD_INST[0], SHARED_ST_INST[0],
     *L1_HIT_RATE_PCT, *L2_HIT_RATE_PCT, "dram__bytes_read.sum", "dram__bytes_write.sum",
     L2_SECTOR_OPS[1][0]),
    (),
    "the memory table (seed 4.3), case counters (DRAM bytes), the profiled-cases README table "
    "(L2 sectors), analyze's evidence",
)
_SOURCE = MetricGroup(
    "source", "per-instruction executions, L2 sectors and warp-stall samples (SASS hotspots)",
    (),
    # SourceCounters defines the theoretical/excessive sector counts behind "excessive sectors"
    # and the source page (``--page source``) the hotspots table reads.
    ("SourceCounters",),
    "the hottest-instructions table and the SASS stall map (the source page), the memory "
    "table's excessive sectors, the uncoalesced-access rules",
)
_MEMORY_TABLES = MetricGroup(
    "memory-tables", "ncu's memory workload tables (every unit and operation)",
    (),
    ("MemoryWorkloadAnalysis_Tables",),
    "nothing of sparsescope's reads the tables' metrics (the memory group collects the ones "
    "the report shows); their rule messages (MemoryCacheAccessPattern, SharedMemoryConflicts) "
    "join the rule list when collected",
)
_INSTRUCTION_ROOFLINE = MetricGroup(
    "instruction-roofline",
    "warp and thread instructions and transactions per memory level (Ding & Williams, seed 004)",
    (*WARP_INST, THREAD_INST[0], THREAD_INST_PRED_ON[0], GLOBAL_LD_INST[0], GLOBAL_ST_INST[0],
     SHARED_LD_INST[0], SHARED_ST_INST[0], *GLOBAL_LD_SECTORS, *GLOBAL_ST_SECTORS,
     *SHARED_LD_WAVEFRONTS, *SHARED_ST_WAVEFRONTS, *L2_SECTOR_OPS[0], *DRAM_SECTORS, DURATION_NS,
     *SM_CLOCK_HZ, *SM_COUNT, *DRAM_PEAK_BYTES_PER_CYCLE, *DRAM_CLOCK_HZ,
     *L2_PEAK_SECTORS_PER_CYCLE_PER_SLICE, *L2_CYCLES_AVG, *L2_CYCLES_SUM, *L2_CLOCK_HZ,
     *L1_PEAK_WRITEBACKS_PER_CYCLE,
     # FLOPs and the FMA peaks for the classic (FLOP/byte) hierarchical roofline
     *(f"{flop_counter(op)}.sum.per_cycle_elapsed" for ops in FLOP_OPS.values() for op, _ in ops),
     SM_CYCLES_ELAPSED[0], *FP32_PEAK_FMA_PER_CYCLE, *FP64_PEAK_FMA_PER_CYCLE),
    (),
    "the instruction, shared-memory and FLOP/byte rooflines, the SpMM and slice sections' "
    "rooflines, Little's law (DRAM sectors)",
)

#: Group name -> group. ``--set full`` collects all of them (and much more) at once.
METRIC_GROUPS: dict[str, MetricGroup] = {
    g.name: g for g in (_LAUNCH, _OCCUPANCY, _STALLS, _MEMORY, _SOURCE, _INSTRUCTION_ROOFLINE,
                        _MEMORY_TABLES)
}
#: What ``profile run`` collects unless told otherwise: every group something reads.
#: ``memory-tables`` is left out: nothing reads its metrics, and its section is one of the two
#: (with SourceCounters) that the 18-pass counter recording lacks and the 34-pass default of
#: issue 35 held; ask for it by name (``--groups ...,memory-tables``).
DEFAULT_GROUPS = ("launch", "occupancy", "stalls", "memory", "source", "instruction-roofline")


def group_metrics(names: tuple[str, ...] | list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Union of the metrics and of the sections of the named groups, first-seen order, no repeats.

    Raises KeyError naming the unknown group (the CLI turns it into UnknownNameError)."""
    metrics: dict[str, None] = {}
    sections: dict[str, None] = {}
    for name in names:
        group = METRIC_GROUPS[name]
        metrics.update(dict.fromkeys(group.metrics))
        sections.update(dict.fromkeys(group.sections))
    return tuple(metrics), tuple(sections)
