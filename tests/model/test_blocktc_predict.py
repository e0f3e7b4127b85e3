"""The block tensor-core SpMM model (model.blocktc_predict) against hand-computed terms."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.model.blocktc_predict import (
    BlockTcLaunch,
    per_group_instructions,
    predict_blocktc,
)
from sparsescope.model.predict import DeviceRates
from sparsescope.model.spmm_predict import with_transposes


def _rates(**over):
    base = dict(name="T", sm_count=2, max_threads_per_sm=2048, max_blocks_per_sm=32,
                l2_bytes=1 << 20, dram_bw_gb_s=1000.0, l2_bw_gb_s=2000.0,
                dram_latency_ns=500.0, l2_latency_ns=200.0, fp32_gflops=1000.0,
                dram_gather_gsectors_s=None, l2_gather_gsectors_s=10.0, launch_us=2.0,
                sm_clock_mhz=1000.0, tf32_tensor_gflops=100_000.0)
    base.update(over)
    return DeviceRates(**base)


def _launch(**over):
    # two block rows of 3 and 2 blocks; 32 x 24 A, k = 64 in two slabs of 32 columns
    base = dict(kernel="spmm_blocktc<3, 1, true, 1, 1>", rows=32, cols=24, k=64,
                block_ptr=np.array([0, 3, 5]), groups=1, slabs=2, passes=3, max_registers=64,
                registers_source="test", block_warps=4)
    base.update(over)
    return BlockTcLaunch(**base)


def test_instructions_per_group():
    assert per_group_instructions(3) == 38 and per_group_instructions(1) == 14


def test_terms_by_hand():
    p = predict_blocktc(_launch(), _rates(), flushed=False)
    t = {term.name: term.time_ms for term in p.terms}
    # A = 5 x 516 + 3 x 4 = 2,592; X = 24 x 64 x 4 = 6,144; Y = 32 x 64 x 4 = 8,192 bytes
    assert t["dram"] == pytest.approx((2592 + 6144 + 8192) / 1e9)
    # 5 blocks x 2 slabs x 1 group x 8 segments = 80: 80 / 10 G/s + 80 x 96 B / 2,000 GB/s
    assert t["l2"] == pytest.approx((2592 * 2 + 8192) / 2e9 + 80 / 1e7 + 80 * 96 / 2e9)
    # 5 x 2 x 4 fragments x 3 passes = 120 mma of 2,048 flops at 100 TFLOP/s
    assert t["tensor"] == pytest.approx(120 * 2048 / 1e11)
    # 5 x 2 x (6 + 12 + 38) = 560 warp instructions / (2 SMs x 4 x 1 GHz)
    assert t["issue"] == pytest.approx(560 / 8e9 * 1e3)
    # one CTA a slab (4 warps, rows of 3 and 2 blocks: 4 and 3 rounds -> the CTA's 4), two
    # slabs: 8 CTA rounds over 2 CTAs at 500 ns
    assert t["latency"] == pytest.approx(8 * 500 / 2 * 1e-6)
    # MVA: 2 active SMs, one CTA each (n = 1): X = 2 / (Z + D'), D' = 2 x (the four
    # stations' demand a round) -- dram, l2, issue and tensor over the 8 rounds
    per_round = (t["dram"] + t["l2"] + t["issue"] + t["tensor"]) * 1e-3 / 8
    cycle = 500e-9 + 2 * per_round
    assert t["memory"] == pytest.approx(8 / (2 / cycle) * 1e3)
    # the slowest CTA's 4 rounds, each slowed by the loaded cycle over the bare round trip
    assert t["imbalance"] == pytest.approx(4 * 500e-9 * (cycle / 500e-9) * 1e3)
    assert p.predicted_ms == pytest.approx(0.002 + max(t["memory"], t["imbalance"]))
    assert p.inputs["mma"] == 120 and p.inputs["blocks"] == 5


def test_one_pass_and_no_tensor_peak():
    one = predict_blocktc(_launch(passes=1), _rates(tf32_tensor_gflops=None), flushed=False)
    names = {term.name for term in one.terms}
    assert "tensor" not in names
    assert one.inputs["mma"] == 40 and one.inputs["warp_instructions"] == 5 * 2 * (6 + 4 + 14)


def test_transposes_add_their_kernels_and_launches():
    """Between the device transposes the block kernel's own terms are unchanged; the
    transposes (``model.transpose``) and their two launches are added after it
    (``model.own_spmm``)."""
    from sparsescope.model.own_spmm import predict_own_spmm

    base = predict_blocktc(_launch(), _rates(), flushed=False)
    wrapped = with_transposes(_launch(), 32, 24, 64)
    assert wrapped.transposes == ((64, 24), (32, 64)) and wrapped.launches == 3
    p = predict_own_spmm(None, None, 24, 64, wrapped, _rates(), flushed=False)
    assert p.term("dram").time_ms == base.term("dram").time_ms
    assert p.predicted_ms == pytest.approx(base.predicted_ms + 2 * 0.002
                                           + p.term("transposes").time_ms)


def test_split_and_batch_shorten_the_rounds():
    # rows of 3 and 2 blocks, SPLIT 2, BATCH 2: 1 batch + 1 window each -> 2 rounds; a CTA of
    # 4 warps holds both rows; two slabs: 4 CTA rounds over 2 CTAs
    from sparsescope.model.blocktc_predict import launch_rounds

    rounds, cta = launch_rounds(_launch(split=2, batch=2))
    assert list(rounds) == [2, 2] and list(cta) == [2]
    assert [list(x) for x in launch_rounds(_launch())] == [[4, 3], [4]]
    p = predict_blocktc(_launch(split=2, batch=2), _rates(), flushed=False)
    t = {term.name: term.time_ms for term in p.terms}
    assert p.inputs["warps"] == 2 * 2 * 2
    assert t["latency"] == pytest.approx(4 * 500 / 2 * 1e-6)


def test_issue_term_by_hand():
    from sparsescope.model.spmm_predict import issue_term

    # 8,000 warp instructions on 2 SMs x 4 schedulers at 1,000 MHz
    assert issue_term(8000, _rates()).time_ms == pytest.approx(0.001)
