"""SpMM byte/flop model against hand-computed numbers (model.spmm)."""

from __future__ import annotations

import pytest

from sparsescope.model.spmm import (
    intensity_table,
    l2_gather_bound_ms,
    spmm_bound_ms,
    spmm_traffic,
    x_sectors_per_nonzero,
)
from sparsescope.model.spmv import spmv_traffic


@pytest.mark.parametrize(("k", "value_bytes", "sectors"), [
    (1, 4, 1.0),      # 4 B at a 4-B-aligned start: always inside one sector
    (2, 4, 1.0),      # 8 B, 8-aligned
    (3, 4, 1.25),     # 12 B: starts 0,12,24,4,16,28,8,20 need 1,1,2,1,1,2,1,1 sectors
    (5, 4, 1.5),      # 20 B: (20 + 32 - 4) / 32
    (8, 4, 1.0),      # 32 B, aligned: exactly one sector
    (64, 4, 8.0),     # 256 B: eight sectors
    (4, 8, 1.0),      # float64: 32 B
    (3, 8, 1.0 + 0.5),  # 24 B, 8-aligned: (24 + 32 - 8) / 32
])
def test_row_major_sectors_per_nonzero(k, value_bytes, sectors):
    assert x_sectors_per_nonzero(k, value_bytes, "row") == pytest.approx(sectors)


def test_row_major_sector_formula_matches_brute_force_over_starts():
    for k in (1, 3, 5, 6, 7, 9, 13):
        length = 4 * k
        period = 32  # starts repeat with period lcm(length, 32) / length rows
        counts = [((j * length + length - 1) // 32) - (j * length // 32) + 1
                  for j in range(period * 8)]
        assert x_sectors_per_nonzero(k) == pytest.approx(sum(counts) / len(counts))


def test_column_major_needs_a_sector_per_value():
    assert x_sectors_per_nonzero(64, 4, "col") == 64.0
    assert x_sectors_per_nonzero(1, 4, "col") == 1.0


def test_dlmc_512x1024_k64_hand_numbers():
    t = spmm_traffic(512, 1024, 157_286, 64)
    assert t.a_bytes == 157_286 * 8 + 513 * 4 == 1_260_340
    assert t.x_bytes == 262_144 and t.y_bytes == 131_072
    assert t.compulsory_bytes == 1_653_556
    assert t.flops == 20_132_608
    assert t.arithmetic_intensity == pytest.approx(12.1753, abs=1e-4)
    assert t.x_gather_bytes == 157_286 * 256
    assert t.gather_bytes == pytest.approx(41_656_628)
    assert t.gather_intensity == pytest.approx(0.48330, abs=1e-5)
    assert t.x_useful_fraction == 1.0


def test_k1_is_exactly_the_spmv_model():
    for ib in (4, 8):
        s = spmv_traffic(512, 1024, 157_286, value_bytes=4, index_bytes=ib)
        t = spmm_traffic(512, 1024, 157_286, 1, index_bytes=ib)
        assert t.compulsory_bytes == s.total_bytes
        assert t.flops == s.flops


def test_intensity_grows_with_k_and_column_major_gathers_more():
    ais = [spmm_traffic(256, 512, 39_321, k).arithmetic_intensity for k in (1, 8, 64, 256)]
    assert ais == sorted(ais) and ais[-1] > 20 * ais[0]
    row = spmm_traffic(256, 512, 39_321, 8)
    col = spmm_traffic(256, 512, 39_321, 8, layout="col")
    assert col.compulsory_bytes == row.compulsory_bytes
    assert col.x_gather_bytes == 8 * row.x_gather_bytes  # 8 sectors against 1
    assert col.x_useful_fraction == pytest.approx(4 / 32)


def test_bounds_are_the_larger_of_bytes_and_flops():
    t = spmm_traffic(512, 1024, 157_286, 64)
    # 1,653,556 B / 4,800 GB/s = 0.3445 us; 20,132,608 FLOP / 66,900 GFLOP/s = 0.3009 us
    assert spmm_bound_ms(t, 4800.0, 66_900.0) == pytest.approx(1_653_556 / 4.8e12 * 1e3)
    assert spmm_bound_ms(t, 4800.0, 10_000.0) == pytest.approx(20_132_608 / 1e13 * 1e3)
    assert l2_gather_bound_ms(t, 10_000.0) == pytest.approx(41_656_628 / 1e13 * 1e3)


def test_intensity_table_marks_the_ridge():
    table = intensity_table(512, 1024, 157_286, (1, 64, 256), bw_gb_s=4800.0,
                            fp32_peak_gflops=66_900.0)
    assert [r.k for r in table] == [1, 64, 256]
    # ridge 13.94 FLOP/B: k = 1 (AI 0.248) and k = 64 (12.18) below it, k = 256 (28.4) above
    assert [r.memory_bound for r in table] == [True, True, False]
    assert table[2].arithmetic_intensity == pytest.approx(28.424, abs=1e-3)
    # the smallest DLMC layer never crosses it: X and Y grow with k as fast as the flops
    small = spmm_traffic(128, 256, 9_830, 1024).arithmetic_intensity
    assert small == pytest.approx(12.19, abs=0.01) and small < 66_900 / 4800


def test_bad_arguments():
    with pytest.raises(ValueError, match="k must be >= 1"):
        x_sectors_per_nonzero(0)
    with pytest.raises(ValueError, match="layout"):
        x_sectors_per_nonzero(4, layout="diag")
    with pytest.raises(ValueError, match="index_bytes"):
        spmm_traffic(1, 1, 1, 1, index_bytes=2)
    with pytest.raises(ValueError, match="> 0"):
        spmm_bound_ms(spmm_traffic(1, 1, 1, 1), 0.0, 1.0)


def test_memory_bound_hand_check():
    from sparsescope.model.spmm import memory_bound

    t = spmm_traffic(512, 1024, 157_286, 64)
    b = memory_bound(t, 4000.0, 8000.0)
    # compulsory 1,653,556 B / 4,000 GB/s = 0.41339 us; gather 41,656,628 B / 8,000 GB/s
    # = 5.20708 us: L2-bound
    assert b.dram_ms == pytest.approx(1_653_556 / 4e12 * 1e3)
    assert b.l2_ms == pytest.approx(41_656_628 / 8e12 * 1e3)
    assert b.binding == "l2" and b.bound_ms == b.l2_ms
    assert b.pct_of(2 * b.bound_ms) == pytest.approx(50.0)
    # k = 1: one sector per nonzero against 8 B of A each: the gather bytes 1,260,340 +
    # 5,033,152 + 2,048 = 6,295,540 B at 8,000 GB/s = 0.78694 us; DRAM 1,266,484 B at 1,000
    # GB/s = 1.26648 us: DRAM-bound
    k1 = memory_bound(spmm_traffic(512, 1024, 157_286, 1), 1000.0, 8000.0)
    assert k1.binding == "dram" and k1.bound_ms == pytest.approx(1_266_484 / 1e12 * 1e3)
    # without an L2 bandwidth only DRAM bounds
    assert memory_bound(t, 4000.0, None).binding == "dram"
    with pytest.raises(ValueError):
        memory_bound(t, 0.0, 8000.0)


def test_memory_bound_of_column_major_x_takes_the_cheaper_strategy():
    from sparsescope.model.spmm import memory_bound

    # k = 64, column-major: direct gathers 64 sectors a nonzero (322 MB at 8,000 GB/s =
    # 40.26 us); transposed: row-major gathers (41,656,628 B) + 2 (X + Y) = 2 x 393,216 B
    # -> 42,443,060 B / 8,000 GB/s = 5.3054 us; DRAM 1,653,556 + 786,432 B / 4,000 GB/s
    # = 0.6100 us: the transposes win, L2-bound
    b = memory_bound(spmm_traffic(512, 1024, 157_286, 64, layout="col"), 4000.0, 8000.0)
    assert b.strategy == "transposed" and b.binding == "l2"
    assert b.l2_ms == pytest.approx(42_443_060 / 8e12 * 1e3)
    assert b.dram_ms == pytest.approx(2_439_988 / 4e12 * 1e3)
    # k = 1: one sector either way; the direct gathers skip the transposes' bytes
    one = memory_bound(spmm_traffic(512, 1024, 157_286, 1, layout="col"), 4000.0, 8000.0)
    assert one.strategy == "direct"
    row = memory_bound(spmm_traffic(512, 1024, 157_286, 64), 4000.0, 8000.0)
    assert row.strategy == "direct"


def test_x_reuse_dram_floors_by_hand():
    import numpy as np

    from sparsescope.model.spmm import x_reuse_dram_floors

    # rows [0: cols 0, 1], [1: col 0], k = 8, an L2 that holds everything.
    # s = 8 (one slab, 32-byte slices): A 3 x 8 + 3 x 4 = 36 B, X 2 slices x 32 B = 64 B,
    # Y 2 x 8 x 4 = 64 B: 164 B at 1 GB/s = 164 ns.
    # s = 4 is below the smallest slab asked for (8): only one floor.
    (f,) = x_reuse_dram_floors(np.array([0, 2, 3]), np.array([0, 1, 0]), 2, 8,
                               l2_bytes=1 << 20, dram_bw_gb_s=1.0)
    assert (f.slab, f.x_misses_per_row) == (8, 1.0)
    assert f.floor_ms == pytest.approx(164e-6)
    # smallest slab 4: two slabs of 4 -- A twice (72 B), X 2 x 2 slices of 16 B (64 B), Y 64 B
    four, eight = x_reuse_dram_floors(np.array([0, 2, 3]), np.array([0, 1, 0]), 2, 8,
                                      l2_bytes=1 << 20, dram_bw_gb_s=1.0, smallest_slab=4)
    assert (four.slab, eight.slab) == (4, 8)
    assert four.floor_ms == pytest.approx(200e-6)


def test_x_reuse_dram_floors_count_capacity_misses():
    import numpy as np

    from sparsescope.model.spmm import x_reuse_dram_floors

    # 64 rows, each gathering all 64 X rows in order (a dense pattern), k = 8 floats: X is
    # 64 x 32 B = 2 KB. With an L2 of 1 KB (32 slices), LRU over a cyclic sweep of 64 misses
    # every gather: 64 misses per X row. With 4 KB, X stays: 1 miss per X row.
    indptr = np.arange(0, 64 * 64 + 1, 64)
    indices = np.tile(np.arange(64), 64)
    (small,) = x_reuse_dram_floors(indptr, indices, 64, 8, l2_bytes=1024, dram_bw_gb_s=1.0)
    (large,) = x_reuse_dram_floors(indptr, indices, 64, 8, l2_bytes=4096, dram_bw_gb_s=1.0)
    assert large.x_misses_per_row == pytest.approx(1.0)
    assert small.x_misses_per_row == pytest.approx(64.0, rel=0.05)
    # the floor grows by the extra X bytes: 63 x 64 slices x 32 B at 1 GB/s
    assert small.floor_ms - large.floor_ms == pytest.approx(63 * 64 * 32 / 1e9 * 1e3, rel=0.05)
