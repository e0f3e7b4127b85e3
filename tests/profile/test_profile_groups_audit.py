"""The default metric groups against what the readers take: every quantity the report, the
analyses and ``analyze`` read from a ``profile run`` has a metric (or a section) in the default
groups, and the H200 recordings cut down to those metrics read back into the same tables."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from sparsescope.profile import analysis as A
from sparsescope.profile import metrics as M
from sparsescope.profile.classic_roofline import classic_point
from sparsescope.profile.instruction_roofline import roofline_point
from sparsescope.profile.records import build_profile

DEFAULT_METRICS, DEFAULT_SECTIONS = M.group_metrics(M.DEFAULT_GROUPS)
#: Metrics a section defines (not requestable with --metrics): SourceCounters' sector counts.
SOURCE_COUNTERS_METRICS = (*M.L2_SECTORS_GLOBAL, *M.L2_SECTORS_GLOBAL_EXCESSIVE)

#: (what reads it, candidates: one of them is enough).
READ = [
    ("CPI", (M.CPI,)), ("achieved occupancy", (M.ACHIEVED_OCCUPANCY_PCT,)),
    ("theoretical occupancy", (M.THEORETICAL_OCCUPANCY_PCT,)), ("duration", (M.DURATION_NS,)),
    ("registers", (M.REGISTERS_PER_THREAD,)), ("block", (M.BLOCK_SIZE, *M.BLOCK_DIMS)),
    ("grid", (M.GRID_SIZE, *M.GRID_DIMS)), ("active warps", M.ACTIVE_WARPS_PER_SM),
    ("SM throughput", M.SM_THROUGHPUT_PCT), ("DRAM throughput", M.DRAM_THROUGHPUT_PCT),
    ("eligible warps", M.ELIGIBLE_WARPS), ("no eligible", M.NO_ELIGIBLE_PCT + M.ISSUE_ACTIVE_PCT),
    ("IPC", M.IPC), ("bytes per sector ld", M.BYTES_PER_SECTOR_LD),
    ("bytes per sector st", M.BYTES_PER_SECTOR_ST), ("global ld sectors", M.GLOBAL_LD_SECTORS),
    ("global st sectors", M.GLOBAL_ST_SECTORS), ("global ld requests", M.GLOBAL_LD_REQUESTS),
    ("global st requests", M.GLOBAL_ST_REQUESTS), ("shared ld waves", M.SHARED_LD_WAVEFRONTS),
    ("shared st waves", M.SHARED_ST_WAVEFRONTS), ("shared ld conflicts", M.SHARED_LD_CONFLICTS),
    ("shared st conflicts", M.SHARED_ST_CONFLICTS), ("shared ld inst", M.SHARED_LD_INST),
    ("shared st inst", M.SHARED_ST_INST), ("L1 hit", M.L1_HIT_RATE_PCT),
    ("L2 hit", M.L2_HIT_RATE_PCT), ("warp inst", M.WARP_INST), ("thread inst", M.THREAD_INST),
    ("thread inst pred on", M.THREAD_INST_PRED_ON), ("global ld inst", M.GLOBAL_LD_INST),
    ("global st inst", M.GLOBAL_ST_INST), ("SM clock", M.SM_CLOCK_HZ), ("SMs", M.SM_COUNT),
    ("DRAM peak", M.DRAM_PEAK_BYTES_PER_CYCLE), ("DRAM clock", M.DRAM_CLOCK_HZ),
    ("L2 peak", M.L2_PEAK_SECTORS_PER_CYCLE_PER_SLICE), ("L2 cycles", M.L2_CYCLES_AVG),
    ("L2 cycles sum", M.L2_CYCLES_SUM), ("L2 clock", M.L2_CLOCK_HZ),
    ("L1 peak", M.L1_PEAK_WRITEBACKS_PER_CYCLE), ("SM cycles", M.SM_CYCLES_ELAPSED),
    ("FP32 peak", M.FP32_PEAK_FMA_PER_CYCLE), ("FP64 peak", M.FP64_PEAK_FMA_PER_CYCLE),
    ("DRAM sectors", M.DRAM_SECTORS[:1]), ("case counters: DRAM bytes", ("dram__bytes_read.sum",)),
    ("profiled-cases README: L2 sectors", ("lts__t_sectors.sum",)),
    ("l1_check: carveout", ("launch__shared_mem_config_size",)),
    ("analyze: occupancy limit", ("launch__occupancy_limit_registers",)),
    ("analyze: waves", ("launch__waves_per_multiprocessor",)),
    *((f"FLOPs {op}", (f"{M.flop_counter(op)}.sum.per_cycle_elapsed",))
      for ops in M.FLOP_OPS.values() for op, _ in ops),
    *((f"stall {r}", (M.stall_metric(r),)) for r in M.STALL_REASONS),
]


@pytest.mark.parametrize("what, candidates", READ, ids=[w for w, _ in READ])
def test_every_quantity_read_is_collected_by_default(what, candidates):
    assert set(candidates) & set(DEFAULT_METRICS), what


def test_the_l2_sector_sets_and_the_source_page_are_collected_by_default():
    assert set(M.L2_SECTOR_OPS[0]) <= set(DEFAULT_METRICS)   # one whole set of L2 sectors
    assert "SourceCounters" in DEFAULT_SECTIONS               # excessive sectors, hotspots
    assert "source" in M.DEFAULT_GROUPS


def test_memory_tables_are_available_by_name_not_by_default():
    assert "memory-tables" in M.METRIC_GROUPS and "memory-tables" not in M.DEFAULT_GROUPS
    assert "MemoryWorkloadAnalysis_Tables" not in DEFAULT_SECTIONS
    assert M.group_metrics(["memory-tables"]) == ((), ("MemoryWorkloadAnalysis_Tables",))


def test_no_sass_patched_twin_of_a_hardware_counter_is_collected():
    # the shared-memory instruction counts come from the hardware counters the roofline reads
    assert M.SHARED_LD_INST[0] in DEFAULT_METRICS and M.SHARED_LD_INST[1] not in DEFAULT_METRICS
    assert M.SHARED_ST_INST[0] in DEFAULT_METRICS and M.SHARED_ST_INST[1] not in DEFAULT_METRICS


def _cut_down(profile):
    """``profile`` as a run of the default groups would hold it: their metrics (or the twin the
    full set names differently, ``gpu__dram_throughput`` for ``dram__throughput``: a candidate
    of the same quantity), the sections' sector counts, and ncu's bookkeeping (passes)."""
    twins = {m for _, candidates in READ if set(candidates) & set(DEFAULT_METRICS)
             for m in candidates}
    keep = set(DEFAULT_METRICS) | twins | set(SOURCE_COUNTERS_METRICS) | {M.REPLAY_PASSES}
    metrics = {k: v for k, v in profile.metrics.items() if k in keep}
    return build_profile(profile.index, profile.demangled_name, metrics, name=profile.name,
                         rules=profile.rules, source=profile.source)


@pytest.mark.parametrize("fixture", ["cant", "full_csv"])
def test_the_recordings_cut_to_the_default_groups_read_into_the_same_tables(request, fixture):
    profiles = request.getfixturevalue(fixture)
    filled = 0
    for p in profiles:
        small = _cut_down(p)
        assert small.metrics.keys() < p.metrics.keys()            # something was cut
        for rows in ((A.top_level_row(p), A.top_level_row(small)),
                     (A.memory_row(p), A.memory_row(small)),
                     (roofline_point(p), roofline_point(small)),
                     (classic_point(p), classic_point(small))):
            assert rows[0] == rows[1]
            if rows[0] is not None:
                filled += sum(v is not None for v in asdict(rows[0]).values())
        assert small.stalls == p.stalls and small.cpi == p.cpi
    assert filled > 20 * len(profiles)                            # the tables are not empty


def test_replay_passes_per_launch_are_read_from_the_recordings(cant, full_csv):
    assert {p.summary()["replay_passes"] for p in cant} == {18}
    assert [p.summary()["replay_passes"] for p in full_csv] == [38, 38, 38, 38]
