"""The SpMM time model (``model.spmm_predict``) against hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.backends.spmm_cuda import plan_rowwarp, rowwarp_launch
from sparsescope.backends.spmm_rowgroup import plan_rowgroup, rowgroup_launch
from sparsescope.model.predict import DeviceRates
from sparsescope.model.spmm_predict import (
    SpmmLaunch,
    block_gathers,
    predict_spmm,
    resident_warps,
    warp_rounds,
    with_transposes,
    x_dram_bytes,
)

RATES = DeviceRates(
    name="T", sm_count=2, max_threads_per_sm=2048, max_blocks_per_sm=32, l2_bytes=1 << 20,
    dram_bw_gb_s=1000.0, l2_bw_gb_s=2000.0, dram_latency_ns=400.0, l2_latency_ns=200.0,
    fp32_gflops=1000.0, dram_gather_gsectors_s=None, l2_gather_gsectors_s=10.0, launch_us=2.0,
    sm_clock_mhz=1000.0)
# rows of 2, 1, 0 and 3 nonzeros over 4 columns
INDPTR = np.array([0, 2, 3, 3, 6])
INDICES = np.array([0, 1, 1, 0, 2, 3])


def _launch(**fields) -> SpmmLaunch:
    base = dict(kernel="k", slice_ptr=np.array([0, 10, 13, 13]), slices_per_warp=2,
                groups_per_slice=1, slab_cols=8, slabs=1, vec=4, chunks=1, stage_pairs=8,
                batch=4, block_warps=2, max_registers=64, registers_source="test")
    return SpmmLaunch(**{**base, **fields})


def test_resident_warps_hand_checks():
    limits = dict(max_threads_per_sm=2048, max_blocks_per_sm=32)
    assert resident_warps(_launch(max_registers=64, block_warps=2), **limits) == 32
    assert resident_warps(_launch(max_registers=91, block_warps=8), **limits) == 16
    # 32 registers: the thread limit binds (64 warps), not the block limit
    assert resident_warps(_launch(max_registers=32, block_warps=1), **limits) == 32
    assert resident_warps(_launch(max_registers=32, block_warps=4), **limits) == 64


def test_warp_rounds_hand_check():
    pairs, xr, busiest = warp_rounds(_launch())
    assert pairs.tolist() == [2, 0] and xr.tolist() == [3, 0] and busiest.tolist() == [10, 0]
    # rowwarp: one slice a warp, 4 groups split it: 13 nonzeros -> 4 a group -> 1 round of 4
    pairs, xr, busiest = warp_rounds(_launch(slice_ptr=np.array([0, 13]), slices_per_warp=1,
                                             groups_per_slice=4, stage_pairs=64))
    assert pairs.tolist() == [1] and xr.tolist() == [1] and busiest.tolist() == [4]


def test_block_gathers_counts_distinct_columns_per_block():
    ptr, cols = np.array([0, 2, 3, 5]), np.array([0, 1, 1, 2, 0])
    assert block_gathers(ptr, cols, 2)[0] == 4      # {0, 1} and {2, 0}
    assert block_gathers(ptr, cols, 1)[0] == 5      # every nonzero its own request
    assert block_gathers(ptr, cols, 3)[0] == 3      # one block: 3 distinct columns
    assert block_gathers(np.array([0, 0]), np.array([], dtype=int), 2)[0] == 0.0
    # sampled: every 2nd block counted, scaled by nnz / counted nonzeros
    ptr = np.arange(0, 41, 2)   # 20 slices of 2 nonzeros, columns 0 and 1 each
    cols = np.tile([0, 1], 20)
    total, how = block_gathers(ptr, cols, 1, max_exact_nnz=20)
    assert total == 40 and "every 2th block" in how


def test_x_from_dram_once_when_a_slab_fits_the_l2_else_the_reuse_model():
    launch = rowgroup_launch(plan_rowgroup(INDPTR, 6, 8, "float32", 4, 2, full_warps=2))
    assert x_dram_bytes(INDPTR, INDICES, 4, 8, launch, 1 << 20)[0] == 4 * 8 * 4
    # an L2 of 32 B holds one X row: the LRU model reads rows again, never less than once
    more, how = x_dram_bytes(INDPTR, INDICES, 4, 8, launch, 32)
    assert more > 4 * 8 * 4 and "LRU" in how


def test_predict_spmm_hand_check():
    """4 x 4, rows of 2, 1, 0, 3 nonzeros, k = 8, rowgroup (VEC 4, G 2, 16 slices a warp,
    DEPTH x G = 8 pairs a stage, BATCH 8), one warp:

    A = 6 x 8 + 5 x 4 = 68 B, X = 4 x 8 x 4 = 128 B, Y = 128 B: dram 324 B / 1,000 GB/s.
    One block holds every row: 4 distinct columns -> 4 gathers of 1 sector. X hit rate in L2
    0 (X's 128 B all from DRAM) -> x round 400 ns; the slice pointers' round, 1 pair round and
    1 x round -> 1,200 ns, slowed by the queues by the MVA's loaded / unloaded round (one warp
    alone: barely above 1).
    Instructions: busiest group 3 x (1 x (1 + 4) + 3) + 1 stage x 4 = 28.
    """
    plan = plan_rowgroup(INDPTR, 6, 8, "float32", 4, 2, full_warps=2)
    launch = rowgroup_launch(plan)
    assert (launch.slices_per_warp, launch.stage_pairs, launch.batch) == (16, 8, 8)
    p = predict_spmm(INDPTR, INDICES, 4, 8, launch, RATES, flushed=False)
    assert p.term("dram").time_ms == pytest.approx(324 / 1e9)
    assert p.inputs["x_l2_gathers"] == 4 and p.inputs["x_round_ns"] == pytest.approx(400)
    loaded = p.inputs["loaded_round_factor"]
    assert 1.0 <= loaded < 1.01
    assert p.term("imbalance").time_ms == pytest.approx(1200e-6 * loaded)
    assert p.inputs["warp_instructions"] == 28
    assert p.term("overhead").time_ms == pytest.approx(0.002)
    binding = max(p.term(n).time_ms for n in ("memory", "imbalance", "compute"))
    assert p.predicted_ms == pytest.approx(0.002 + binding)
    assert p.predicted_ms == pytest.approx(0.0032, rel=0.01)
    # l2: streams (68 + 128) B / 2,000 GB/s + 4 first sectors at 10 G sectors/s
    assert p.term("l2").time_ms == pytest.approx(196 / 2e9 + 4 / 1e10 * 1e3)
    # the L2 flushed before the call: its write-back of what was fetched (68 + 128 B) too
    flushed = predict_spmm(INDPTR, INDICES, 4, 8, launch, RATES, flushed=True)
    assert flushed.term("dram").time_ms == pytest.approx((324 + 196) / 1e9)


def test_rowwarp_and_rowgroup_launches_from_their_plans():
    wide = np.array([0, 40, 80])   # 2 rows of 40, k = 64
    idx = np.tile(np.arange(40), 2)
    rw = rowwarp_launch(plan_rowwarp(wide, 80, 64, "float32", 4, 132))
    assert (rw.slices_per_warp, rw.groups_per_slice, rw.slab_cols, rw.slabs) == (1, 4, 32, 2)
    assert rw.max_registers == 128 and "cap" in rw.registers_source
    rg = rowgroup_launch(plan_rowgroup(wide, 80, 64, "float32", 4, 132, full_warps=2), 64)
    assert (rg.slices_per_warp, rg.groups_per_slice, rg.slab_cols, rg.slabs) == (2, 1, 64, 1)
    assert rg.max_registers == 64 and rg.registers_source == "the compiled kernel"
    for launch in (rw, rg):
        p = predict_spmm(wide, idx, 40, 64, launch, RATES, flushed=False)
        assert p.predicted_ms > 0 and p.limiter
    # rowwarp reads A once per 32-column slab: A's 652 B twice through the L2
    assert predict_spmm(wide, idx, 40, 64, rw, RATES, flushed=False).term("l2").formula \
        .startswith("(A x 2 slab(s)")


def test_with_transposes_adds_the_two_transposes_and_their_launches():
    launch = with_transposes(_launch(), rows=10, cols=20, k=8)
    # X (k x cols) before the kernel, Y (rows x k) after it; no bytes folded into the kernel
    assert launch.transposes == ((8, 20), (10, 8)) and launch.launches == 3
    assert launch.around_bytes == 0
    assert launch.label.endswith("+ device transposes")
