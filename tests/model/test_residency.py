"""Where the loop's dependent loads find their data (``model.residency``): a warm L2 in the
throughput mode, a lane's own row on chip after its first stop; the issue walk's reuse
latency; and the DRAM access size behind the lane rule."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.hardware.specs import get_spec
from sparsescope.model.issue_schedule import GATHER, STREAM, IssueSchedule, IssueStep
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.predict import DeviceRates, device_rates, iteration_ns, predict_spmv
from sparsescope.model.residency import dram_access_bytes, lane_reuse, load_latencies
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.model.xgather import XGather

MiB = 1 << 20
RATES = DeviceRates(
    name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=60 * MiB, dram_bw_gb_s=100.0, l2_bw_gb_s=400.0, dram_latency_ns=336.0,
    l2_latency_ns=145.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=3.0, dram_access_bytes=64)
WARM = dataclasses.replace(RATES, timing_mode="throughput")
#: csr_scalar's main loop: 1 lane a row, 16 entries an iteration
SCALAR = KernelShape(kernel="csr_scalar", decomposition="rows", block_threads=256,
                     grid_blocks=1, threads_per_row=1, nnz_per_iteration=16,
                     rounds_per_iteration=2, setup_rounds=1, row_windows=(4, 16, 8, 4))
SELL = dataclasses.replace(SCALAR, kernel="spmv_sell", row_windows=())


def test_latency_mode_streams_from_dram_and_the_warm_share_back_to_back():
    alone = load_latencies(RATES, SELL, 30e6, 4.0)
    assert (alone.stream_ns, alone.x_miss_scale, alone.reuse_ns) == (336.0, 1.0, None)
    # 30 MB fits in the 60 MiB L2: every stream load an L2 hit
    fits = load_latencies(WARM, SELL, 30e6, 4.0)
    assert (fits.stream_ns, fits.x_miss_scale) == (145.0, 0.0)
    # 120 MiB: half of it stays in DRAM -> 145 + 0.5 x 191 = 240.5 ns
    half = load_latencies(WARM, SELL, 120 * MiB, 4.0)
    assert (half.stream_ns, half.x_miss_scale) == (pytest.approx(240.5), pytest.approx(0.5))


def test_a_lane_reading_one_access_unit_an_iteration_reuses_it():
    assert lane_reuse(SCALAR, 4.0, 64)                       # 1 x 16 x 4 B = 64 B
    assert not lane_reuse(SCALAR, 8.0, 64)                   # 8-byte values: 128 B
    assert not lane_reuse(dataclasses.replace(SCALAR, threads_per_row=2), 4.0, 64)
    assert not lane_reuse(SCALAR, 4.0, 32)                   # one sector an access
    assert not lane_reuse(SELL, 4.0, 64)                     # not a lane walking its row
    trips = load_latencies(RATES, SCALAR, 30e6, 4.0)
    assert (trips.stream_ns, trips.reuse_ns) == (336.0, 145.0)
    # warm and fitting: the streams are L2 hits already, no reuse to add
    assert load_latencies(WARM, SCALAR, 30e6, 4.0).reuse_ns is None


def test_walk_reads_later_stream_loads_at_the_reuse_latency():
    # LDG c; FADD s, c; LDG v; FADD s, v: 350 + 350 = 700 ns; with reuse 150 the second load,
    # issued after the iteration's first stop, takes 150: 500 ns
    s = IssueSchedule(steps=(IssueStep(load=0), IssueStep(reads=(0,)), IssueStep(load=1),
                             IssueStep(reads=(1,))), kinds=(STREAM, STREAM))
    assert s.walk(350.0, 150.0).iteration_ns == 700.0
    assert s.walk(350.0, 150.0, 150.0).iteration_ns == 500.0
    # a gather keeps the gather latency whatever the reuse
    g = IssueSchedule(steps=(IssueStep(load=0), IssueStep(reads=(0,)), IssueStep(load=1),
                             IssueStep(reads=(1,))), kinds=(STREAM, GATHER))
    assert g.walk(350.0, 200.0, 100.0).iteration_ns == 550.0


def test_iteration_ns_in_the_throughput_mode():
    # 2 rounds, h = 0.5, s = 1: alone 336 + (145 + 0.5 x 191) = 576.5 ns; warm and fitting:
    # 145 + 145 = 290 ns
    xg = XGather(gathers=32, l2_requests=1.0, distinct_sectors=1, dram_sectors=1.0,
                 l2_hit_rate=0.5, onchip_share=0.0, sampled=False, sample_fraction=1.0,
                 method="given")
    assert iteration_ns(SELL, RATES, xg, load_latencies(RATES, SELL, 1e6, 4.0))[0] == \
        pytest.approx(576.5)
    assert iteration_ns(SELL, WARM, xg, load_latencies(WARM, SELL, 1e6, 4.0))[0] == \
        pytest.approx(290.0)


def test_dram_access_bytes_by_memory_type():
    assert dram_access_bytes("141 GB HBM3e")[0] == 64
    assert dram_access_bytes("80 GB HBM3")[0] == 64
    assert dram_access_bytes("80 GB HBM2e")[0] == 32
    assert dram_access_bytes("")[0] == 32
    assert device_rates(get_spec("H200")).dram_access_bytes == 64
    assert device_rates(get_spec("A100-80GB")).dram_access_bytes == 32


def test_a_warm_l2_shortens_a_latency_bound_prediction():
    """A banded matrix whose data fits in the L2: the throughput prediction's round trips are
    the L2's, its DRAM term nil, so its memory term is shorter than timed alone."""
    a = sp.diags([np.ones(4000 - abs(k)) for k in range(-2, 3)], range(-2, 3), format="csr")
    traffic = csr_spmv_traffic(*a.shape, a.nnz)
    shape = dataclasses.replace(SELL, grid_blocks=16)
    alone = predict_spmv(a.indptr, a.indices, a.shape[1], traffic, shape, RATES, flushed=True)
    warm = predict_spmv(a.indptr, a.indices, a.shape[1], traffic, shape, WARM, flushed=False)
    assert alone.inputs["stream_round_ns"] == 336.0 and warm.inputs["stream_round_ns"] == 145.0
    terms = {t.name: t.time_ms for t in warm.terms}
    assert terms["dram"] == 0.0
    assert warm.predicted_ms < alone.predicted_ms
