"""The longest block's x gathers through its SM's L1 (``model.l1_wavefronts``): its lines per
gather from the kernel's own lane layout (long rows cut into pieces, sorted windows, 1 x B
blocks), and the imbalance term bound by them (``predict.l1_bound_block``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.l1_wavefronts import (
    BlockWavefronts,
    block_columns,
    longest_block_wavefronts,
)
from sparsescope.model.predict import DeviceRates, l1_bound_block, predict_spmv
from sparsescope.model.prediction import PredictionTerm
from sparsescope.model.traffic import csr_spmv_traffic

#: one warp a block, one thread a row, 4 entries an iteration, rows cut at 64 entries
SELL = KernelShape(kernel="spmv_sell", decomposition="rows", block_threads=32, grid_blocks=1,
                   threads_per_row=1, nnz_per_iteration=4, rounds_per_iteration=2,
                   setup_rounds=1, split_long_rows=64, sort_window=256)
RATES = DeviceRates(
    name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 26, dram_bw_gb_s=1000.0, l2_bw_gb_s=4000.0, dram_latency_ns=336.0,
    l2_latency_ns=145.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=3.0, sm_clock_mhz=1000.0)


def _csr(rows: list[list[int]], cols: int) -> sp.csr_matrix:
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.array([c for r in rows for c in r], dtype=np.int32)
    return sp.csr_matrix((np.ones(indices.size, np.float32), indices, indptr),
                         shape=(len(rows), cols))


def test_a_long_rows_pieces_gather_32_lines_a_step():
    # one row of 2,048 columns cut into 32 pieces of 64: lane l reads columns 64 l + k, 256 B
    # apart (4-byte x): 32 lines every step, 64 steps -> W = 2,048
    m = _csr([list(range(2048))], 2048)
    got = longest_block_wavefronts(m.indptr, m.indices, SELL)
    assert (got.wavefronts, got.gathers, got.warps, got.block) == (2048.0, 64, 1, 0)
    assert got.lines_per_gather == 32.0
    assert got.time_ns(1000.0) == pytest.approx(2048.0)
    # lanes that read the same column share its line: 32 rows of the same 64 columns -> 1 line
    # a step, W = 64
    same = _csr([list(range(64))] * 32, 64)
    shared = longest_block_wavefronts(same.indptr, same.indices, SELL)
    assert (shared.wavefronts, shared.gathers) == (64.0, 64)


def test_the_longest_block_is_the_one_counted_and_8_byte_values_halve_the_line():
    # block 0: 32 short rows (columns 0, 1); block 1 (rows 32-63): rows of 8 columns 32 apart
    # -> lane r's columns 32 j + r: 4-byte x: 8 steps... the rows are sorted in windows of 256
    # (one window), so the 8-column rows come first: block 0 holds them
    short = [[0, 1]] * 32
    long = [[32 * j + r for j in range(8)] for r in range(32)]
    m = _csr(short + long, 256)
    got = longest_block_wavefronts(m.indptr, m.indices, SELL)
    # step j: columns 32 j .. 32 j + 31 -> 128 B of 4-byte x: one line; 8 steps
    assert (got.block, got.wavefronts, got.gathers) == (0, 8.0, 8)
    # 8-byte x: 256 B, two lines a step
    assert longest_block_wavefronts(m.indptr, m.indices, SELL, value_bytes=8).wavefronts == 16.0


def test_block_columns_are_greedy_and_gathered_one_column_after_another():
    assert block_columns(np.array([0, 1, 5]), 2).tolist() == [0, 1, 5, 6]
    assert block_columns(np.array([0, 2, 3, 9]), 3).tolist() == [0, 1, 2, 3, 4, 5, 9, 10, 11]
    assert block_columns(np.array([4, 7]), 1).tolist() == [4, 7]
    # a 1 x 2 block format: one row of 8 columns 64 apart -> 8 blocks, 16 entries (half fill);
    # one lane (no cut), 16 steps, one line each
    m = _csr([[64 * j for j in range(8)]], 512)
    blocked = dataclasses.replace(SELL, split_long_rows=0, block_width=2,
                                  entries_per_nonzero=2.0)
    got = longest_block_wavefronts(m.indptr, m.indices, blocked)
    assert (got.wavefronts, got.gathers) == (16.0, 16)


def test_kernels_it_does_not_follow_get_none():
    m = _csr([list(range(128))], 128)
    assert longest_block_wavefronts(m.indptr, m.indices,
                                    dataclasses.replace(SELL, threads_per_row=2)) is None
    assert longest_block_wavefronts(m.indptr, m.indices,
                                    dataclasses.replace(SELL, decomposition="nnz")) is None
    assert longest_block_wavefronts(np.zeros(3, np.int64), np.zeros(0, np.int32), SELL) is None


def test_the_imbalance_term_is_the_blocks_mva_with_its_l1_lines():
    block = PredictionTerm("imbalance", 0.001, "round trips")   # 1 us
    lines = BlockWavefronts(block=0, wavefronts=2400.0, gathers=16, warps=1)
    # D = 2,400 cycles / 1,000 MHz / 4 iterations = 600 ns; one warp: X = 1 / (600 + 500) ns;
    # 100 + 4 x 1,100 = 4,500 ns
    got = l1_bound_block(block, lines, 4, 100.0, 500.0, RATES)
    assert got.time_ms == pytest.approx(4.5e-3)
    assert "L1" in got.formula
    # the round trips longer than the pipe: the block as it was
    assert l1_bound_block(PredictionTerm("imbalance", 0.01, "x"), lines, 4, 100.0, 500.0,
                          RATES).time_ms == 0.01
    # no clock, no lines: unchanged
    assert l1_bound_block(block, lines, 4, 100.0, 500.0,
                          dataclasses.replace(RATES, sm_clock_mhz=None)) is block
    assert l1_bound_block(block, None, 4, 100.0, 500.0, RATES) is block


def test_two_warps_queue_for_the_one_pipe():
    # 2 warps, 2 iterations each, W = 2,000 lines at 1,000 MHz: D = 500 ns an iteration,
    # Z = 500 ns. MVA: n=1: R = 500, X = 1/1000; Q = 0.5. n=2: R = 500 x 1.5 = 750,
    # X = 2 / 1,250 ns. 4 warp-iterations / X = 2,500 ns, no setup
    lines = BlockWavefronts(block=0, wavefronts=2000.0, gathers=8, warps=2)
    got = l1_bound_block(PredictionTerm("imbalance", 0.0, "x"), lines, 2, 0.0, 500.0, RATES)
    assert got.time_ms == pytest.approx(2.5e-3)


def test_a_split_long_row_raises_the_predicted_imbalance():
    # 32 pieces of one 2,048-column row: the SM's L1 passes 2,048 lines, 20.5 us at a clock of
    # 100 MHz, more than the block's 16 round trips (about 11 us here)
    m = _csr([list(range(2048))], 2048)
    traffic = csr_spmv_traffic(1, 2048, m.nnz)
    slow = dataclasses.replace(RATES, sm_clock_mhz=100.0)
    with_clock = predict_spmv(m.indptr, m.indices, 2048, traffic, SELL, slow, flushed=False)
    without = predict_spmv(m.indptr, m.indices, 2048, traffic, SELL,
                           dataclasses.replace(RATES, sm_clock_mhz=None), flushed=False)
    term = {t.name: t for t in with_clock.terms}["imbalance"]
    old = {t.name: t for t in without.terms}["imbalance"]
    assert term.time_ms >= 20.48e-3 > old.time_ms
    assert "L1" in term.formula and "L1" not in old.formula
    assert with_clock.predicted_ms > without.predicted_ms
