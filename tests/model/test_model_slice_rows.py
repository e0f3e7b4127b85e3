"""Row-slice byte model and bounds: seed 003's own figures and the 32-byte-sector alternative."""

from __future__ import annotations

import math

import pytest

from sparsescope.model.slice_rows import (
    dense_bound_ms,
    expected_sectors_uniform,
    judge_bounds,
    sector_rmw_bound_ms,
    sector_scatter_bound_ms,
    seed_line_bound_ms,
    slice_traffic,
    streaming_bound_ms,
)

A100_DRAM, A100_L2 = 1500.0, 3000.0  # seed 003's figures


@pytest.fixture()
def seed_workload():
    """Seed 003's large workload: 5,000 rows x 1,000 nnz, float32, INT32, per-nnz weights,
    selected from a 10,000-column matrix."""
    return slice_traffic(5000, 10_000, 5_000_000)


def test_seed003_reads_are_40_mb(seed_workload):
    t = seed_workload
    assert t.row_ptr_bytes == 40_000           # "indptr: 0.04 MB"
    assert t.col_index_bytes == 20_000_000     # "indices: 20 MB"
    assert t.values_bytes == 20_000_000        # "data: 20 MB"
    assert t.csr_read_bytes == 40_040_000      # "Total reads: 40 MB"
    assert t.read_bytes == 40_060_000          # + the 5,000 row indices
    assert t.csr_read_bytes / (A100_DRAM * 1e9) * 1e3 == pytest.approx(0.027, abs=5e-4)


def test_seed003_line_model_is_1280_mb_and_0_453_ms(seed_workload):
    t = seed_workload
    assert t.seed_line_bytes == 1_280_000_000  # "Total L2 traffic: 1280 MB"
    assert t.seed_line_bytes / (A100_L2 * 1e9) * 1e3 == pytest.approx(0.427, abs=5e-4)
    assert seed_line_bound_ms(t, A100_DRAM, A100_L2) == pytest.approx(0.453, abs=5e-4)
    # and 1.25 ms measured is 36.3 % of it (the seed says 36.4 %, from rounded figures)
    assert 100 * seed_line_bound_ms(t, A100_DRAM, A100_L2) / 1.25 == pytest.approx(36.3, abs=0.1)


def test_sector_alternative_on_the_seed_workload(seed_workload):
    t = seed_workload
    # upper estimate, every 4-B write its own 32-B sector: 160 MB at 3,000 GB/s
    assert t.sector_write_bytes == 160_000_000
    assert sector_scatter_bound_ms(t, A100_DRAM, A100_L2) == pytest.approx(
        40.06 / 1500 + 160 / 3000, abs=1e-6)  # 0.0267 + 0.0533 = 0.0800 ms
    # with the distinct sectors of uniform rows of 1,000 in 10,000 columns (712.08 per row)
    sectors = round(5000 * expected_sectors_uniform(1000, 10_000))
    assert sectors == 3_560_417
    counted = slice_traffic(5000, 10_000, 5_000_000, sector_writes=sectors)
    assert sector_scatter_bound_ms(counted, A100_DRAM, A100_L2) == pytest.approx(
        0.026707 + sectors * 32 / 3e12 * 1e3, abs=1e-6)  # 0.0647 ms: 7x below the seed's 0.453


def test_streaming_and_dense_bounds(seed_workload):
    t = seed_workload
    assert t.entry_write_bytes == 20_000_000 and t.dense_out_bytes == 200_000_000
    assert streaming_bound_ms(t, 4800.0) == pytest.approx(60_060_000 / 4.8e12 * 1e3)
    assert dense_bound_ms(t, 4800.0) == pytest.approx(240_060_000 / 4.8e12 * 1e3)  # 0.050 ms


def test_scalar_weights_read_one_value():
    t = slice_traffic(64, 1000, 6400, weights="scalar", index_bytes=8)
    assert t.values_bytes == 4
    assert t.read_bytes == 64 * 8 + 2 * 64 * 8 + 6400 * 8 + 4
    with pytest.raises(ValueError, match="weights"):
        slice_traffic(1, 1, 1, weights="both")


def test_expected_sectors_hand_checks():
    assert expected_sectors_uniform(1, 16) == pytest.approx(1.0)
    assert expected_sectors_uniform(2, 16) == pytest.approx(2 * (1 - 28 / 120))  # 1.5333
    assert expected_sectors_uniform(16, 16) == pytest.approx(2.0)
    assert expected_sectors_uniform(0, 100) == 0.0
    # 10 columns: sectors of 8 and 2; one nonzero lands in the short one with p = 2/10
    assert expected_sectors_uniform(1, 10) == pytest.approx(0.8 + 0.2)
    untouched = math.prod((9000 - i) / (10_000 - i) for i in range(8))
    assert expected_sectors_uniform(1000, 10_000) == pytest.approx(1250 * (1 - untouched))
    with pytest.raises(ValueError):
        expected_sectors_uniform(11, 10)


def test_judge_bounds_refutes_beaten_bounds_and_supports_the_tightest_left():
    times = [1.0, 2.0]
    verdicts = {v.name: v for v in judge_bounds(
        {"loose": [0.2, 0.5], "tight": [0.8, 1.9], "wrong": [1.5, 1.0]}, times)}
    assert verdicts["wrong"].refuted and not verdicts["wrong"].supported
    assert verdicts["tight"].supported and not verdicts["loose"].supported
    assert verdicts["tight"].median_pct == pytest.approx((80 + 95) / 2)
    # medians 57.5 % (a) and 55 % (b), but on the largest case (index 1) 25 % against 90 %
    two = {"a": [0.9, 0.5], "b": [0.2, 1.8]}
    assert {v.name: v.supported for v in judge_bounds(two, [1.0, 2.0])} == {"a": True,
                                                                            "b": False}
    assert {v.name: v.supported for v in judge_bounds(two, [1.0, 2.0], decisive=1)} == {
        "a": False, "b": True}
    # within the 5 % noise allowance a bound is not refuted
    (v,) = judge_bounds({"edge": [1.04]}, [1.0])
    assert not v.refuted and v.supported
    with pytest.raises(ValueError, match="2 values for 1 times"):
        judge_bounds({"x": [1.0, 2.0]}, [1.0])


def test_sector_rmw_bound_by_hand():
    # seed workload, every write its own sector: 40.06 MB read + 2 x 160 MB, at 1,500 GB/s
    t = slice_traffic(5_000, 10_000, 5_000_000, index_bytes=4, sector_writes=5_000_000)
    assert t.read_bytes == 40_060_000
    assert sector_rmw_bound_ms(t, 1_500) == pytest.approx((40_060_000 + 320_000_000)
                                                          / 1.5e12 * 1e3)
    assert sector_rmw_bound_ms(t, 1_500) == pytest.approx(0.240, abs=5e-4)
    # fewer distinct sectors (merged stores) lower it: 712 of 1,250 sectors per row
    merged = slice_traffic(5_000, 10_000, 5_000_000, sector_writes=3_560_000)
    assert sector_rmw_bound_ms(merged, 1_500) == pytest.approx(
        (40_060_000 + 2 * 3_560_000 * 32) / 1.5e12 * 1e3)
