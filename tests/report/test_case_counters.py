"""Profiler readings attached to their cases (report.case_counters), from the real H200 profile
of the cant analog (tests/fixtures/h200/ncu_metrics_cant_analog.csv)."""

from __future__ import annotations

import dataclasses

import pytest
from report_builders import make_gpu_runset

from sparsescope.model.prediction import ModelPrediction
from sparsescope.profile.read_csv import load_profiles_csv
from sparsescope.report.case_counters import counters_of, with_profile_counters
from sparsescope.results.records import CaseResult


@pytest.fixture(scope="module")
def cant(h200_fixtures):
    """Metric-group run (raw page) over the cant analog: 51 launches."""
    return load_profiles_csv(h200_fixtures / "ncu_metrics_cant_analog.csv")


def test_counters_of_the_csrmv_launch(cant):
    c = counters_of(cant[1])  # ID 1: torch INT64 csrmv_v3_kernel, block 512
    assert cant[1].value("dram__bytes_read.sum") == 49_122_304
    assert c.dram_bytes == pytest.approx(49_122_304 + cant[1].value("dram__bytes_write.sum"))
    assert c.block_size == 512
    assert c.achieved_occupancy_pct == pytest.approx(cant[1].achieved_occupancy_pct)
    assert c.long_scoreboard_cycles == cant[1].stalls["long_scoreboard"]
    assert c.stall_reasons == cant[1].stalls


def test_the_longest_launch_stands_for_its_case(cant):
    case = CaseResult(matrix="cant", backend="torch-cusparse-i64", op="spmv", outcome="ok",
                      prediction=ModelPrediction(0.02, "dram", inputs={"dram_bytes": 4.0e7}))
    other = CaseResult(matrix="pwtk", backend="torch-cusparse-i64", op="spmv", outcome="ok")
    runset = dataclasses.replace(make_gpu_runset(), cases=(case, other))
    label = "torch-cusparse-i64 cant"
    # ID 0 is the partition kernel (8 us), ID 1 the SpMV (24.8 us): the SpMV is kept
    out = with_profile_counters(runset, [cant[0], cant[1]],
                                [f"{label}: csr_partition_kernel", f"{label}: csrmv_v3_kernel"])
    assert out.cases[0].counters.block_size == 512
    assert out.cases[0].counters.dram_bytes > 4.9e7
    assert out.cases[1].counters is None
    assert with_profile_counters(runset, [], None) is runset
