"""Analysis tables on the H200 fixtures, against values computed by hand from the CSV exports."""

from __future__ import annotations

import dataclasses

import pytest

from sparsescope.hardware.types import DeviceSpec
from sparsescope.profile import analysis as A
from sparsescope.profile import instruction_roofline as R


def test_top_level_full_set(full_report):
    row = A.top_level_row(full_report[0])
    # spmv_full_details.csv, ID 0: Achieved Active Warps Per SM 29.69, Eligible Warps Per
    # Scheduler 1.38, No Eligible 49.29 %, Executed Ipc Active 2.03, Compute (SM) Throughput
    # 46.68 %, DRAM Throughput 38.38 %
    assert row.kernel == "csrmv_v3_kernel"
    assert (row.block_size, row.grid_size, row.registers_per_thread) == (512, 1305, 47)
    assert row.active_warps_per_sm == pytest.approx(29.69, abs=0.005)
    assert row.eligible_warps_per_scheduler == pytest.approx(1.38, abs=0.005)
    assert row.no_eligible_pct == pytest.approx(49.29, abs=0.005)
    assert row.ipc == pytest.approx(2.03, abs=0.005)
    assert row.sm_throughput_pct == pytest.approx(46.68, abs=0.005)
    assert row.dram_throughput_pct == pytest.approx(38.38, abs=0.005)
    assert row.cpi == pytest.approx(14.54, abs=0.005)


def test_top_level_metric_group_run_derives_active_warps(cant):
    row = A.top_level_row(cant[1])
    # no sm__warps_active.avg.per_cycle_active in this run: 46.84 % x 64 warps / 100
    assert row.active_warps_per_sm == pytest.approx(46.84 * 64 / 100)
    assert row.no_eligible_pct == 56.63            # smsp__issue_inst0 % of active cycles
    assert row.dram_throughput_pct == 42.97
    assert (row.cpi, row.ipc, row.eligible_warps_per_scheduler) == (17.23, 1.73, 1.12)


def test_stall_breakdown_pct_of_cpi(cant):
    rows = A.stall_breakdown(cant[1])
    assert len(rows) == 19
    assert [r.reason for r in rows[:3]] == ["long_scoreboard", "barrier", "wait"]
    assert rows[0].label == "Long Scoreboard"
    assert rows[0].pct_of_cpi == pytest.approx(100 * 6.12 / 17.23)   # 35.52 %
    assert rows[1].pct_of_cpi == pytest.approx(100 * 3.04 / 17.23)
    assert [r.cycles_per_inst for r in rows] == sorted((r.cycles_per_inst for r in rows),
                                                       reverse=True)


def test_stall_comparison_across_matrices(cant, full_report):
    comparison = A.stall_comparison([cant[1], full_report[3]], ["cant", "scalar"])
    assert comparison.kernels == ("cant", "scalar")
    assert comparison.cpi == (17.23, pytest.approx(50.988995, abs=1e-6))
    top = comparison.rows[0]
    assert top.reason == "long_scoreboard"
    assert top.cycles_per_inst == (6.12, pytest.approx(38.344883, abs=1e-6))
    assert top.pct_of_cpi[1] == pytest.approx(100 * 38.344883 / 50.988995, rel=1e-6)  # 75.2 %
    assert len(comparison.rows) == 19
    with pytest.raises(ValueError):
        A.stall_comparison([cant[1]], ["a", "b"])


def test_cpi_speedup_without_long_scoreboard(cant):
    row = A.cpi_speedup(cant[1], label="cant")
    assert row.projected_cpi == pytest.approx(17.23 - 6.12)       # 11.11
    assert row.speedup == pytest.approx(17.23 / 11.11)            # 1.551x
    assert A.cpi_speedup(cant[1], reason="not_a_reason") is None


def test_memory_row_full_set(full_report):
    row = A.memory_row(full_report[0])
    # spmv_full_raw.csv ID 0 and the rules of spmv_full_details.csv
    assert row.load_bytes_per_sector == pytest.approx(20.468462, abs=1e-6)   # "20.5 of 32"
    assert row.store_bytes_per_sector == pytest.approx(7.050995, abs=1e-6)   # "7.1 of 32"
    assert row.excessive_sectors_pct == pytest.approx(100 * 1130454 / 3250882)  # "35%"
    assert row.load_sectors_per_request == pytest.approx(3198817 / 422685)
    assert row.store_sectors_per_request == pytest.approx(23535 / 20872)
    assert row.shared_load_ways == pytest.approx(408645 / 207458)     # "2.0 - way"
    assert row.shared_load_conflict_pct == pytest.approx(100 * 201181 / 408645)  # "49.23%"
    assert row.shared_store_conflict_pct == pytest.approx(100 * 10106 / 190186)
    assert row.l1_hit_rate_pct == pytest.approx(50.637888, abs=1e-6)
    assert row.l2_hit_rate_pct == pytest.approx(5.569989, abs=1e-6)


def test_memory_row_metric_group_run_leaves_missing_quantities_empty(cant):
    row = A.memory_row(cant[1])
    assert row.excessive_sectors_pct is None and row.load_bytes_per_sector is None
    assert row.load_sectors_per_request == pytest.approx(3198817 / 422685)
    assert row.shared_load_ways == pytest.approx(410174 / 208762)
    assert (row.l1_hit_rate_pct, row.l2_hit_rate_pct) == (50.64, 5.64)


def test_rule_messages_sorted_and_filtered(full_report):
    rules = A.rule_messages(full_report[0])
    assert rules[0].rule in ("IssueSlotUtilization", "TheoreticalOccupancy")
    assert rules[0].estimated_speedup_pct == pytest.approx(49.290907, abs=1e-5)
    assert rules[-1].estimated_speedup_pct is None
    memory = A.rule_messages(full_report[0], sections=A.MEMORY_SECTIONS)
    assert {r.rule for r in memory} == {"MemoryCacheAccessPattern", "MemoryL2Compression",
                                        "SharedMemoryConflicts", "UncoalescedGlobalAccess",
                                        "UncoalescedSharedAccess"}


def test_instruction_roofline_point_metric_group_run(cant):
    p = R.roofline_point(cant[1])
    # ncu_metrics_cant_analog.csv ID 1
    assert p.warp_gips == pytest.approx(9686028 / 24800)                       # 390.57
    assert p.l1_transactions == 3198817 + 23414 + 4 * (410174 + 190295)        # 5,624,107
    assert p.l2_transactions == 2331731 + 31561 + 0 + 41936                    # 2,405,228
    assert p.dram_transactions == 1535072 + 64704                              # 1,599,776
    assert p.l1_intensity == pytest.approx(9686028 / 5624107)
    assert p.l2_intensity == pytest.approx(9686028 / 2405228)
    assert p.dram_intensity == pytest.approx(9686028 / 1599776)
    assert p.global_instructions == 464592 + 125232
    assert p.global_intensity == pytest.approx(589824 / (3198817 + 23414))
    assert p.predicated_on_gips == pytest.approx(276452381 / 32 / 24800)


def test_instruction_roofline_point_full_set_uses_total_l2_sectors(full_report):
    p = R.roofline_point(full_report[0])
    assert p.l2_transactions == 2429143                       # lts__t_sectors.sum
    assert p.global_instructions == 422685 + 20872            # smsp__sass_inst_executed_op_*
    assert p.l1_transactions == 3198817 + 23535 + 4 * (408645 + 190186)


def test_ceilings_from_profile(full_report, cant):
    c = R.ceilings_from_profile(full_report[0])
    clock = full_report[0].value("sm__cycles_elapsed.avg.per_second")
    assert clock == pytest.approx(1.462575e9, rel=1e-6)
    assert c.peak_warp_gips == pytest.approx(132 * 4 * clock / 1e9)           # 772.2
    assert c.dram_gtxn_s == pytest.approx(1504 * 3.195498 / 32, rel=1e-6)      # 150.2 (4.8 TB/s)
    assert c.l2_gtxn_s == pytest.approx(3 * 94 * 1.672019, rel=1e-6)           # 471.5
    assert c.l1_gtxn_s == pytest.approx(16896 / 32 * clock / 1e9)
    partial = R.ceilings_from_profile(cant[1])           # the group run lacks the memory peaks
    assert partial.dram_gtxn_s is None and partial.peak_warp_gips == pytest.approx(
        132 * 4 * 1.96046798631)
    merged = R.merge_ceilings(partial, c)
    assert merged.peak_warp_gips == partial.peak_warp_gips and merged.dram_gtxn_s == c.dram_gtxn_s
    assert merged.sources["dram"] == c.sources["dram"]


def test_ceilings_from_device():
    h200 = DeviceSpec(name="H200", vendor_name="NVIDIA H200", kind="gpu", compute_capability="9.0",
                      sm_count=132, max_warps_per_sm=64, max_threads_per_sm=2048,
                      max_blocks_per_sm=32, registers_per_sm=65536,
                      shared_mem_per_sm_bytes=233472, warp_schedulers_per_sm=4,
                      l2_bytes=50 * 2**20, peak_bw_gb_s=4800.0, fp32_peak_gflops=67000.0,
                      sm_clock_mhz=1980.0, dram_latency_ns=300.0)
    c = R.ceilings_from_device(h200, l2_bw_gb_s=9600.0)
    assert c.peak_warp_gips == pytest.approx(132 * 4 * 1.98)      # 1045.4
    assert c.dram_gtxn_s == pytest.approx(150.0)
    assert c.l2_gtxn_s == pytest.approx(300.0)
    assert c.l1_gtxn_s == pytest.approx(132 * 4 * 1.98)           # 128 B = 4 sectors per cycle


def test_roofline_needs_instructions(full_report, cant):
    launch_only = dataclasses.replace(cant[1], metrics={})
    with pytest.raises(ValueError, match="instruction-roofline"):
        R.roofline_point(launch_only)
    assert R.instruction_roofline([launch_only, full_report[0]]) == (
        R.roofline_point(full_report[0]),)


def test_representative_launches(cant):
    chosen = A.representative_launches(cant)
    assert [(p.name, p.grid_size) for p in chosen] == [
        ("csr_partition_kernel", 6), ("csrmv_v3_kernel", 1305), ("csr_partition_kernel", 4),
        ("csrmv_v3_kernel", 979), ("csr_vector", 1952)]
    # INT64 csrmv launches 1,3,5,22,...,30 took 24544..25504 ns; the lower median is 24768 (ID 3)
    assert chosen[1].index == 3 and chosen[1].duration_ns == 24768.0


def test_kernel_labels_are_unique(cant, full_report):
    assert A.kernel_labels([cant[1], cant[3], full_report[3]]) == (
        "csrmv_v3_kernel#1", "csrmv_v3_kernel#3", "spmv_csr_scalar")
    # launch 1 of two files: the file stem tells them apart
    assert A.kernel_labels([cant[1], full_report[1]]) == (
        "ncu/metrics/cant/analog csrmv_v3_kernel", "spmv/full csrmv_v3_kernel")
    assert A.kernel_labels([cant[1], cant[3], full_report[1]]) == (
        "ncu/metrics/cant/analog csrmv_v3_kernel#1", "ncu/metrics/cant/analog csrmv_v3_kernel#3",
        "spmv/full csrmv_v3_kernel")
    assert A.file_tags(["a/profile_seed6_cant_torch-cusparse-i64_raw.csv",
                        "b/profile_seed6_cage15_cuda-spmv-auto_raw.csv"]) == {
        "a/profile_seed6_cant_torch-cusparse-i64_raw.csv": "cant/torch-cusparse-i64",
        "b/profile_seed6_cage15_cuda-spmv-auto_raw.csv": "cage15/cuda-spmv-auto"}


def _without(profile, *names):
    return dataclasses.replace(profile, metrics={k: v for k, v in profile.metrics.items()
                                                 if k not in names})


def test_top_level_fallbacks(cant, full_report):
    # max warps per SM from theoretical warps / theoretical fraction: 32 / 0.50 = 64
    row = A.top_level_row(_without(cant[1], "device__attribute_max_warps_per_multiprocessor"))
    assert row.active_warps_per_sm == pytest.approx(46.84 * 64 / 100)
    # no-eligible from the issue-active percentage: 100 - 50.709093
    row = A.top_level_row(_without(full_report[0],
                                   "smsp__issue_inst0.avg.pct_of_peak_sustained_active"))
    assert row.no_eligible_pct == pytest.approx(100 - 50.709093, abs=1e-6)
