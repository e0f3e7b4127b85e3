"""The SpMM time model on column-major X (``spmm-cuda-colmajor``: a lane a row slice, C columns
a thread) against hand-computed numbers: a sector per value, shared by neighbouring columns."""

from __future__ import annotations

import numpy as np
import pytest
from test_spmm_predict import RATES  # the toy device of the SpMM model's tests

from sparsescope.backends.spmm_colmajor import colmajor_launch, plan_colmajor
from sparsescope.backends.spmm_rowgroup import plan_rowgroup, rowgroup_launch
from sparsescope.model.spmm_predict import predict_spmm, sector_columns, x_dram_bytes

# 4 x 40: rows of cols [0, 1, 9], [17], [], [8, 30, 31]
INDPTR = np.array([0, 3, 4, 4, 7])
INDICES = np.array([0, 1, 9, 17, 8, 30, 31])


def test_sector_columns():
    assert sector_columns([0, 7, 8, 17], 4).tolist() == [0, 0, 1, 2]
    assert sector_columns([0, 3, 4, 17], 8).tolist() == [0, 0, 1, 4]   # 4 doubles a sector


def test_colmajor_launch_hand_check():
    """k = 8: C = 8, BATCH = 2, one tile; a lane a slice (32 a warp); 8 int32 pairs a
    sector; the cap of __launch_bounds__(256) without a compiled kernel."""
    launch = colmajor_launch(plan_colmajor(INDPTR, 7, 8, "float32", 4, 2))
    assert (launch.slices_per_warp, launch.groups_per_slice, launch.slab_cols, launch.slabs,
            launch.vec, launch.chunks, launch.stage_pairs, launch.batch) == \
        (32, 1, 8, 1, 1, 8, 8, 2)
    assert launch.x_layout == "col" and launch.max_registers == 256
    assert launch.label.startswith("colmajor spmm_colmajor<float, int, 8, 2>")
    # k = 20: three tiles of 8 (the last masked to 4); float64 with int64: 4 pairs a sector
    wide = colmajor_launch(plan_colmajor(INDPTR, 7, 20, "float64", 8, 2), registers=60)
    assert (wide.slabs, wide.stage_pairs, wide.max_registers, wide.value_bytes) == (3, 4, 60, 8)


def test_column_major_gathers_a_sector_per_value_shared_by_neighbours():
    """One block holds every slice: sectors {0, 1, 2, 3} of the 7 nonzeros, each asked for
    every one of the k = 8 columns -> 32 requests, none streaming after them; row-major X
    asks for 7 distinct X rows once (one slab) -> 7 requests of 1 sector each."""
    col = colmajor_launch(plan_colmajor(INDPTR, 7, 8, "float32", 4, 2), registers=61)
    p = predict_spmm(INDPTR, INDICES, 40, 8, col, RATES, flushed=False)
    assert p.inputs["x_l2_gathers"] == 32 and p.inputs["x_l2_bytes"] == 32 * 32
    row = rowgroup_launch(plan_rowgroup(INDPTR, 7, 8, "float32", 4, 2, full_warps=2))
    q = predict_spmm(INDPTR, INDICES, 40, 8, row, RATES, flushed=False)
    assert q.inputs["x_l2_gathers"] == 7 and q.inputs["x_l2_bytes"] == 7 * 32
    # the L2 term: streams + 32 gathers at 10 G sectors/s (3.2 ns), nothing more per sector
    streams = (7 * 8 + 5 * 4 + 4 * 8 * 4) / (2000.0 * 1e6)
    assert p.term("l2").time_ms == pytest.approx(streams + 32 / (10.0 * 1e6))


def test_k_values_of_a_row_each_cost_a_request_at_every_k():
    """Column-major requests grow with k (k per distinct sector); row-major ones with the
    slabs (ceil(k / 128) for rowgroup) only."""
    for k in (1, 8, 64):
        col = colmajor_launch(plan_colmajor(INDPTR, 7, k, "float32", 4, 2), registers=61)
        p = predict_spmm(INDPTR, INDICES, 40, k, col, RATES, flushed=False)
        assert p.inputs["x_l2_gathers"] == 4 * k


def test_x_from_dram_by_sectors_when_a_tile_of_x_overflows_the_l2():
    launch = colmajor_launch(plan_colmajor(INDPTR, 7, 8, "float32", 4, 2))
    assert x_dram_bytes(INDPTR, INDICES, 40, 8, launch, 1 << 20)[0] == 40 * 8 * 4
    # rows of columns [0, 16] three times: sectors 0, 2, 0, 2, 0, 2; an L2 of 256 B holds one
    # sector of each of the 8 columns (one unit), so every request misses: 6 x 256 B
    indptr, indices = np.array([0, 2, 4, 6]), np.array([0, 16, 0, 16, 0, 16])
    launch = colmajor_launch(plan_colmajor(indptr, 6, 8, "float32", 4, 2))
    more, how = x_dram_bytes(indptr, indices, 40, 8, launch, 256)
    assert more == pytest.approx(6 * 256, rel=0.01) and "LRU" in how and "sector" in how
    assert more > 40 * 8 * 4


def test_cut_rows_inside_their_warps_are_one_launch_in_the_model():
    """Rows of 3, 1, 0, 3 in 1-pair slices: two rows cut, each inside one warp (aligned): no
    zero fill, one launch, Y written once (4 rows x 8 x 4 = 128 bytes of the DRAM term). The plain
    layout (``aligned=False``) cuts the same rows into atomics: the zero fill, two launches,
    Y twice."""
    aligned = colmajor_launch(plan_colmajor(INDPTR, 7, 8, "float32", 4, 2, slice_nnz=1,
                                            batch=2))
    plain = colmajor_launch(plan_colmajor(INDPTR, 7, 8, "float32", 4, 2, slice_nnz=1,
                                          batch=2, aligned=False))
    assert (aligned.zero_fill, aligned.launches) == (False, 1)
    assert (plain.zero_fill, plain.launches) == (True, 2)
    one = predict_spmm(INDPTR, INDICES, 40, 8, aligned, RATES, flushed=False)
    two = predict_spmm(INDPTR, INDICES, 40, 8, plain, RATES, flushed=False)
    assert two.term("overhead").time_ms > one.term("overhead").time_ms
    assert "Y 128 B" in one.term("dram").formula and "Y 256 B" in two.term("dram").formula
