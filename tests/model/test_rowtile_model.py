"""The row-tile SpMM kernel's time model (``model.rowtile``) against hand-computed numbers: the
format's bytes, X staged, shared-memory wavefronts and instructions of an item, a block's time,
the occupancy, and how the terms combine; and its X bytes against the gather kernels'."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.model.predict import DeviceRates
from sparsescope.model.rowtile import (
    RowTileLaunch,
    atomic_bytes,
    block_times_ns,
    entry_cost,
    format_bytes,
    item_work,
    predict_rowtile,
    resident_blocks,
    rowtile_traffic,
    smem_per_l2,
    smem_wavefronts,
    split_runs,
    warp_chain_cycles,
    warp_instructions,
    x_staged_bytes,
)


def _rates(**kw) -> DeviceRates:
    fields = dict(name="T", sm_count=132, max_threads_per_sm=2048, max_blocks_per_sm=32,
                  l2_bytes=50 << 20, dram_bw_gb_s=4000.0, l2_bw_gb_s=8000.0,
                  dram_latency_ns=340.0, l2_latency_ns=150.0, fp32_gflops=60000.0,
                  dram_gather_gsectors_s=40.0, l2_gather_gsectors_s=150.0, launch_us=2.7,
                  sm_clock_mhz=1980.0)
    fields.update(kw)
    return DeviceRates(**fields)


def _launch(**kw) -> RowTileLaunch:
    """Two tiles of 8 rows (the second without an item), VEC 1, C 32, 8 warps, k 32: item 0 of
    3 nonzeros (4 staged, 2 entry loads, busiest warp 3), item 1 of 40 (20 loads, busiest 10)."""
    fields = dict(kernel="spmm_rowtile<float, int, 8, 1, 32, 8, 2, 0, 4>", rows=16, cols=64, k=32,
                  tile_rows=8, chunk_rows=32, vec=1, slices=1, tile_items=np.array([2, 0]),
                  item_x_rows=np.array([32, 32]), item_entries=np.array([3, 40]),
                  item_staged=np.array([4, 40]), item_warp_entries=np.array([3, 10]),
                  item_entry_reads=np.array([2, 20]), smem_bytes=rowtile_smem(8, 1, 32),
                  block_warps=8, max_registers=56, registers_source="test")
    fields.update(kw)
    return RowTileLaunch(**fields)


def rowtile_smem(r: int, vec: int, c: int) -> int:
    from sparsescope.model.rowtile import rowtile_smem_bytes

    return rowtile_smem_bytes(4, r, vec, c, 2, False)


def test_traffic_hand_check():
    t = rowtile_traffic(10, 12, 7, 3, tiles=2, items=3, entries=8, tile_rows=8, value_bytes=4,
                        index_bytes=4)
    assert (t.values_bytes, t.indices_bytes, t.row_meta_bytes) == (32, 32, 100)
    assert (t.padding_bytes, t.x_bytes, t.y_written_bytes, t.flops) == (8, 144, 120, 42)
    d = rowtile_traffic(10, 12, 7, 3, tiles=2, items=3, entries=8, tile_rows=8, value_bytes=8,
                        index_bytes=8)
    assert (d.values_bytes, d.indices_bytes, d.row_meta_bytes) == (64, 64, 60 + 80)
    assert d.padding_bytes == 16 + 28   # the pad entry, and each entry's pad word


def test_x_staged_bytes_hand_check():
    three = dict(item_x_rows=np.array([32, 32, 8]), item_entries=np.array([1, 1, 1]),
                 item_staged=np.array([2, 2, 2]), item_warp_entries=np.array([1, 1, 1]),
                 item_entry_reads=np.array([1, 1, 1]), tile_items=np.array([3]), k=3)
    assert x_staged_bytes(_launch(**three)) == 72 * 3 * 4
    assert x_staged_bytes(_launch(**three, x_layout="col", cols=72)) == 3 * 9 * 32
    # columns 70 x 4 bytes apart: a run may straddle one more sector
    assert x_staged_bytes(_launch(**three, x_layout="col", cols=70)) == 3 * 12 * 32


def test_format_bytes_hand_check():
    # 44 staged entries x 8 + 2 items x 10 x 2 + (2 x 2 + 1 + 2 + 1) x 4
    assert format_bytes(_launch()) == 352 + 40 + 32


def test_entry_cost():
    assert entry_cost(_launch(vec=2)) == (7.0, 2.0)
    assert entry_cost(_launch(vec=2, x_layout="col")) == (8.0, 2.0)
    assert entry_cost(_launch(vec=2, value_bytes=8)) == (7.0, 4.0)


def test_item_work_hand_check():
    waves, instructions = item_work(_launch())
    # item 0: 3 x 1 + 2 + (8 + 8) + (32 x 32 x 4 + 4 x 8 + 10 x 2) / 128
    # item 1: 40 x 1 + 20 + 16 + (4,096 + 320 + 20) / 128
    assert waves.tolist() == pytest.approx([21 + 4148 / 128, 76 + 4436 / 128])
    # 3 x 6 + 8 x 16 + 8 x (30 + 8 x (1 + 1)); 40 x 6 + 128 + 368
    assert instructions.tolist() == [514, 736]
    assert smem_wavefronts(_launch()) == pytest.approx(sum(waves))
    assert warp_instructions(_launch(slices=3)) == 3 * 1250
    # column-major Y: each block's tile written and read (2 x 8 x 32 x 4 / 128), 2 blocks
    col = _launch(x_layout="col")
    assert smem_wavefronts(col) == pytest.approx(sum(item_work(col)[0]) + 2 * 16)


def test_block_times_hand_check():
    """x_round 100 ns, 1,000 MHz, 4 schedulers; the busiest warp's chain (one row a warp):
    30 + entries x max(t_entry 6, (2 x 30 + 4) / 4 = 16) clocks: item 0 = max(100 + 78, 53.4,
    514 / 4) = 178; item 1 = max(100 + 190, 110.7, 184) = 290; tile 0 = 100 + 178 + 290 = 568;
    tile 1 (no item) = 100."""
    assert warp_chain_cycles(_launch()).tolist() == [78.0, 190.0]
    assert block_times_ns(_launch(), 100.0, 1000.0, 4).tolist() == pytest.approx([568, 100])
    # the round trip is charged whole each item: more stages do not shorten the chain
    four = block_times_ns(_launch(), 400.0, 1000.0, 4).tolist()
    assert four == pytest.approx([400 + 478 + 590, 400])
    assert block_times_ns(_launch(stages=3), 400.0, 1000.0, 4).tolist() == four
    # two splits: tile 0's items one a block, tile 1's runs empty (the round trip alone)
    assert block_times_ns(_launch(splits=2), 100.0, 1000.0, 4).tolist() == pytest.approx(
        [278, 390, 100, 100])


def test_split_runs_and_atomic_bytes():
    assert split_runs(np.array([5, 0, 2]), 2).tolist() == [[2, 3], [0, 0], [1, 1]]
    assert split_runs(np.array([5, 0, 2]), 1).tolist() == [[5], [0], [2]]
    # S 3 on 2 items: one run empty, and every item in exactly one run
    runs = split_runs(np.array([2, 7, 1]), 3)
    assert runs.tolist() == [[0, 1, 1], [2, 2, 3], [0, 0, 1]] and runs.sum() == 10
    assert atomic_bytes(_launch()) == 0.0
    # S 2: 2 blocks with items (tile 0), each 8 rows x 32 columns added (read + write), and
    # the memset of 16 x 32 float32
    assert atomic_bytes(_launch(splits=2)) == 2 * 2 * 8 * 32 * 4 + 16 * 32 * 4
    assert _launch(splits=3).blocks == 2 * 1 * 3


def test_resident_blocks_hand_check():
    launch = _launch(smem_bytes=32_928, max_registers=56)
    assert resident_blocks(launch, _rates()) == 4            # registers: 16 x 256 x 8 a block
    assert resident_blocks(_launch(smem_bytes=100_000, max_registers=32), _rates()) == 2


def test_smem_per_l2():
    assert smem_per_l2(None) == 4.0
    h200 = _rates(l2_bw_gb_s=7964.0)
    assert smem_per_l2(h200) == pytest.approx(132 * 128 * 1.98e9 / 7.964e12)
    assert round(smem_per_l2(h200), 2) == 4.20


def test_terms_combine_as_documented():
    launch = _launch()
    rates = _rates()
    p = predict_rowtile(launch, rates, flushed=False)
    t = {term.name: term.time_ms for term in p.terms}
    assert t["memory"] == max(t[n] for n in ("dram", "l2", "smem", "issue", "latency"))
    assert p.predicted_ms == pytest.approx(t["overhead"] + max(t["memory"], t["imbalance"],
                                                               t["compute"]))
    # 2 blocks on 132 SMs: their items' time binds, the slower block's (no station loaded);
    # each X row is staged once, so from DRAM: a round is the DRAM latency
    assert p.inputs["x_round_ns"] == 340.0
    blocks = block_times_ns(launch, 340.0, 1980.0, 4)
    assert t["latency"] == pytest.approx(blocks.mean() * 1e-6) == t["memory"]
    assert p.limiter == "imbalance" and t["imbalance"] == pytest.approx(blocks.max() * 1e-6)
    assert p.inputs["x_staged_bytes"] == 64 * 32 * 4
    flushed = predict_rowtile(launch, rates, flushed=True)
    assert flushed.inputs["flush_writeback_bytes"] >= 0


def test_own_spmm_dispatches_the_rowtile_launch():
    from sparsescope.model.own_spmm import OWN_SPMM_LAUNCHES, predict_own_spmm

    assert RowTileLaunch in OWN_SPMM_LAUNCHES
    p = predict_own_spmm(np.array([0]), np.array([]), 64, 32, _launch(label="rowtile x"),
                         _rates(), flushed=False)
    assert p.kernel == "rowtile x" and any(term.name == "smem" for term in p.terms)


def test_x_bytes_below_the_gathers_on_a_dense_weight():
    """A 512 x 512 weight at 80 % sparsity, k 256: rowtile's X staged (R 32: 16 tiles x 512
    rows) is 5.2 M B, every gather kernel requests nnz x 256 x 4 = 53.7 M B (rowgroup's
    model: its L2 gathers less its L1 hits)."""
    from sparsescope.backends.spmm_rowgroup import plan_rowgroup, rowgroup_launch
    from sparsescope.backends.spmm_rowtile import plan_rowtile, rowtile_launch
    from sparsescope.model.spmm_predict import predict_spmm

    w = sp.random(512, 512, density=0.2, format="csr", random_state=5)
    w.sort_indices()
    tile = rowtile_launch(plan_rowtile(w, 256, "float32", 4, "row", 132, rows=32, ks=64))
    staged = x_staged_bytes(tile)
    assert staged == 16 * 512 * 256 * 4
    group = rowgroup_launch(plan_rowgroup(w.indptr, w.nnz, 256, "float32", 4, 132))
    gathered = predict_spmm(w.indptr, w.indices, 512, 256, group, _rates(),
                            flushed=False).inputs["x_l2_bytes"]
    assert gathered > 4 * staged and w.nnz * 256 * 4 > 6 * staged


def test_a_split_launch_shortens_the_chain_and_pays_memset_and_atomics():
    """Tile 0's two items cut into two blocks: the slowest block holds one item, not two; the
    call pays a second launch (the memset) and the partial tiles' L2 bytes; with the L2
    flushed every item waits the DRAM round trip (its entries come from DRAM)."""
    rates = _rates()
    one = predict_rowtile(_launch(), rates, flushed=True)
    two = predict_rowtile(_launch(splits=2, launches=2), rates, flushed=True)
    t1 = {t.name: t.time_ms for t in one.terms}
    t2 = {t.name: t.time_ms for t in two.terms}
    assert one.inputs["x_round_ns"] == two.inputs["x_round_ns"] == 340.0
    blocks = block_times_ns(_launch(splits=2), 340.0, 1980.0, 4)
    assert t2["imbalance"] == pytest.approx(blocks.max() * 1e-6)
    assert t2["imbalance"] < t1["imbalance"]
    assert t2["overhead"] > t1["overhead"]
    assert two.inputs["atomic_bytes"] == atomic_bytes(_launch(splits=2)) > 0
    assert one.inputs["atomic_bytes"] == 0.0
    l2_extra = (t2["l2"] - t1["l2"]) * 1e6 * rates.l2_bw_gb_s
    assert l2_extra == pytest.approx(atomic_bytes(_launch(splits=2)) - 16 * 32 * 4)
