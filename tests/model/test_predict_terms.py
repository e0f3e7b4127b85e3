"""The terms the model gained past the seed's (``model.predict``): the per-SM queueing network,
register spills and window refetches in the L2 and DRAM terms, and the issue term inside a
whole prediction."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.predict import (
    DeviceRates,
    _dram_term,
    _l2_term,
    _refetches,
    onchip_fill_bytes,
    per_sm_mva,
    predict_spmv,
)
from sparsescope.model.queueing import mva
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.model.xgather import XGather

RATES = DeviceRates(
    name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 20, dram_bw_gb_s=100.0, l2_bw_gb_s=400.0, dram_latency_ns=400.0,
    l2_latency_ns=200.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=3.0, schedulers_per_sm=4, sm_clock_mhz=1000.0,
    l2_write_bw_gb_s=200.0)

XG = XGather(gathers=1000, l2_requests=100.0, distinct_sectors=50, dram_sectors=50.0,
             l2_hit_rate=0.5, onchip_share=0.0, sampled=False, sample_fraction=1.0,
             method="given")


def test_per_sm_mva_docstring_hand_check():
    # 2 SMs, 4 blocks, 2 resident a SM, D_dram 0.5 (whole GPU), Z = 1: each SM sees D' = 1
    # with n = 2 customers: X_SM(2) = 0.8 (mva's own hand check), X = 2 x 0.8 = 1.6
    r = per_sm_mva({"dram": 0.5}, 1.0, sms=2, per_sm=2, blocks=4)
    assert r.throughput_per_s == pytest.approx(1.6) and r.customers == 4
    assert r.residence_s == {"dram": pytest.approx(1.5)}


def test_per_sm_mva_scales_issue_by_every_sm_and_shared_stations_by_the_active_ones():
    # 4 SMs but 2 blocks: 2 active SMs of 1 block each. The shared DRAM's demand 0.5 doubles
    # (each active SM's share), the issue demand 0.25 (GPU-wide) is x 4 SMs on one SM
    r = per_sm_mva({"dram": 0.5, "issue": 0.25}, 1.0, sms=4, per_sm=8, blocks=2)
    one = mva({"dram": 1.0, "issue": 1.0}, 1.0, 1)
    assert r.customers == 2
    assert r.throughput_per_s == pytest.approx(2 * one.throughput_per_s)
    assert one.throughput_per_s == pytest.approx(1 / 3)   # one customer: 1 / (Z + D + D)


def test_dram_term_adds_refetched_lone_sectors_at_the_sector_rate():
    # 1e6 B of streams at 100 GB/s = 0.01 ms; (50 x sectors + 30 refetches) x 32 B at
    # 100 GB/s = 2,560 B -> 2.56e-5 ms
    t = _dram_term(1e6, XG, RATES, writeback=0.0, refetch=30.0)
    assert t.time_ms == pytest.approx(0.01 + 80 * 32 / 1e8)
    assert "30 refetched stream sectors" in t.formula
    assert _dram_term(1e6, XG, RATES, 0.0).time_ms == pytest.approx(0.01 + 50 * 32 / 1e8)


def test_l2_term_adds_spill_stores_at_the_write_bandwidth():
    # 4e6 B streams / 400 GB/s = 0.01 ms; 2e6 B spills / 200 GB/s = 0.01 ms;
    # (100 + 20) sectors x 32 B / 400 GB/s = 9.6e-6 ms
    t = _l2_term(4e6, XG, RATES, spills=2e6, refetch=20.0)
    assert t.time_ms == pytest.approx(0.01 + 0.01 + 120 * 32 / 4e8)
    assert "spill stores / 200 GB/s" in t.formula
    # without a measured write bandwidth the read bandwidth stands in
    no_write = dataclasses.replace(RATES, l2_write_bw_gb_s=None)
    assert _l2_term(4e6, XG, no_write, spills=2e6).time_ms == pytest.approx(
        0.01 + 0.005 + 100 * 32 / 4e8)


def test_refetches_reach_dram_only_for_one_thread_a_row_beyond_the_l2():
    indptr = np.array([0, 49, 98])    # 2 rows of 49 at entries 0 and 49
    traffic = csr_spmv_traffic(2, 200, 98)
    scalar = KernelShape(kernel="s", decomposition="rows", block_threads=64, grid_blocks=1,
                         row_windows=(4, 16, 8, 4))
    # row 0 at byte 0: 1 single + 3 x 16: boundaries at 4, 68, 132: 3; row 1: 3 (test above):
    # 6 a stream, 12 over values and indices
    near = _refetches(indptr, traffic, scalar, RATES, footprint=1e3)
    far = _refetches(indptr, traffic, scalar, RATES, footprint=1e9)
    assert near == (12.0, 0.0) and far == (12.0, 12.0)
    vector = dataclasses.replace(scalar, threads_per_row=2)
    assert _refetches(indptr, traffic, vector, RATES, footprint=1e9)[1] == 0.0
    assert _refetches(indptr, traffic, dataclasses.replace(scalar, row_windows=()), RATES,
                      1e9) == (0.0, 0.0)


def _random_case(n: int = 2000):
    """(matrix, INT32 CSR traffic, a thread-per-row shape) of a random n x n, 0.5 % dense."""
    a = sp.random(n, n, density=0.005, format="csr", random_state=1)
    shape = KernelShape(kernel="csr_scalar<float, int>", decomposition="rows",
                        block_threads=128, grid_blocks=-(-n // 128))
    return a, csr_spmv_traffic(n, n, a.nnz), shape


def test_a_shape_with_instructions_gets_an_issue_term_that_can_bind():
    n = 2000
    a, traffic, base = _random_case(n)
    plain = predict_spmv(a.indptr, a.indices, n, traffic, base, RATES, flushed=False)
    assert plain.term("issue") is None
    heavy = dataclasses.replace(base, loop_instructions=10_000, other_instructions=100)
    p = predict_spmv(a.indptr, a.indices, n, traffic, heavy, RATES, flushed=False)
    issue = p.term("issue")
    assert p.inputs["warp_instructions"] > 0
    assert issue.time_ms == pytest.approx(
        p.inputs["warp_instructions"] / (4 * 4 * 1000e6) * 1e3)
    # an SM that issues for 10,000 instructions an iteration is the bottleneck: the memory
    # term (MVA through the issue station) is at least the issue time
    assert p.term("memory").time_ms >= issue.time_ms * (1 - 1e-9)
    assert p.predicted_ms > plain.predicted_ms


def test_the_prediction_carries_its_formats_memory_floor():
    from sparsescope.model.predict import format_floor

    n = 2000
    a, traffic, shape = _random_case(n)
    p = predict_spmv(a.indptr, a.indices, n, traffic, shape, RATES, flushed=True)
    floor = format_floor(a.indptr, a.indices, n, traffic, RATES, 4)
    assert p.inputs["gather_floor_ms"] == pytest.approx(floor.floor_ms)
    # 228 KiB of shared memory a SM (the default) hold 58,368 > 2,000 columns, but pinning all
    # of them costs 4 SMs x 250 sectors = 1,000 fill sectors (a request's time each, no
    # measured gather rate); runs of 58,368 x 4 / 32 = 7,296 nonzeros fetch each of the 250
    # sectors once: 3 runs (20,000 nonzeros, every run touching every sector), 750 requests.
    # DRAM binds: streams + x at 100 GB/s, plus a 3 us launch and the 400 + 200 ns latency
    # chain (the flush write-back the prediction counts is left out)
    assert p.inputs["gather_floor_x_requests"] == 750.0
    assert p.inputs["gather_floor_hot_share"] == 0.0
    assert p.inputs["gather_floor_fill_sectors"] == 0.0
    assert p.inputs["flush_writeback_bytes"] > 0 and floor.binding == "dram"
    assert floor.floor_ms == pytest.approx(0.003 + 0.0006 + traffic.total_bytes / 1e8)
    assert any(a.startswith("memory floor of this format") for a in p.assumptions)
    # with a measured share of 0.5 the prediction's write-back halves and the floor counts it
    half = dataclasses.replace(RATES, flush_writeback_share=0.5)
    q = predict_spmv(a.indptr, a.indices, n, traffic, shape, half, flushed=True)
    assert q.inputs["flush_writeback_bytes"] == pytest.approx(
        0.5 * p.inputs["flush_writeback_bytes"])
    assert q.inputs["gather_floor_dram_ms"] == pytest.approx(
        (traffic.total_bytes + q.inputs["flush_writeback_bytes"]) / 1e8)
    # without an L2 bandwidth there is no floor
    assert format_floor(a.indptr, a.indices, n, traffic,
                        dataclasses.replace(RATES, l2_bw_gb_s=None)) is None


@pytest.mark.slow
def test_a_100m_nonzero_prediction_completes_with_every_term():
    """The whole prediction at 10^8 nonzeros (x gathers sampled, row windows counted by kind,
    warp iterations and instructions vectorised): measured 0.9-1.1 s on the cage15 analog
    (99 M nonzeros) on the 2-core CI machine; with the L1 model's sampled SMs on Hopper,
    1.6 s on this matrix. No wall time is asserted.

    The matrix is ten stacked copies of a generated power-law block of 10^7 nonzeros (10^7
    rows and columns in all, 10 a row, 30 rows of 100,000): the prediction reads only the
    structure, and generating 10^8 nonzeros directly costs 8 s where stacking costs 0.3 s."""

    from sparsescope.backends.cuda_kernels import CSR_WINDOWS
    from sparsescope.matrices.generators import generate

    copies = 10
    block = generate("powerlaw", 1_000_000, 10_000_000, cols=10_000_000, seed=0)
    indices = np.tile(block.indices, copies)
    ends = block.indptr[1:][None, :] + block.nnz * np.arange(copies, dtype=np.int64)[:, None]
    indptr = np.concatenate(([0], ends.ravel()))
    rows, cols = copies * block.shape[0], block.shape[1]
    assert (rows, cols, int(indptr[-1]), len(indices)) == (10**7, 10**7, 10**8, 10**8)
    shape = KernelShape(kernel="csr_scalar<float, int>", decomposition="rows",
                        block_threads=128, grid_blocks=-(-rows // 128),
                        nnz_per_iteration=16, remainder_step=1, rounds_per_iteration=2,
                        row_windows=CSR_WINDOWS, loop_instructions=89,
                        remainder_instructions=17, other_instructions=145)
    traffic = csr_spmv_traffic(rows, cols, 10**8)
    hopper = dataclasses.replace(RATES, compute_capability="9.0")   # the L1 model too
    # what keeps it fast is sampling the x gathers (no wall time asserted: machines differ)
    p = predict_spmv(indptr, indices, cols, traffic, shape, hopper, flushed=True)
    # csr_scalar, 128 threads, no shared memory: the whole 256 KB stays L1 on Hopper
    assert any("an SM's L1 of 256 KB serves" in a for a in p.assumptions)
    # the work the L1 model did: a sample of SMs, not all 4 (model.work_sample)
    assert any("x gathers of 100,000,000 nonzeros" in a and "above the work budget: 2 sampled SMs"
               in a for a in p.assumptions)
    assert {t.name for t in p.terms} == {"dram", "l2", "issue", "latency", "memory",
                                         "imbalance", "compute", "overhead"}
    assert p.term("issue") is not None and p.inputs["refetched_sectors"] > 0
    assert p.inputs["gather_floor_ms"] > 0


def test_onchip_x_fill_is_charged_to_the_l2_term():
    # x[0, 8,192) of 4 bytes = 1,024 sectors in each of 1,056 persistent blocks: 34.6 MB
    shape = KernelShape(kernel="spmv_tile", decomposition="nnz", block_threads=256,
                        grid_blocks=1056, onchip_x_entries=8192, onchip_x_copies=1056)
    assert onchip_fill_bytes(shape, 1_000_000, 4) == 1056 * 1024 * 32
    # capped by the columns: 100 columns of 4 bytes = 13 sectors (12.5 rounded up)
    assert onchip_fill_bytes(shape, 100, 4) == 1056 * 13 * 32
    assert onchip_fill_bytes(dataclasses.replace(shape, onchip_x_copies=0), 10**6, 4) == 0.0
    # the fill passes through the L2 at its bandwidth: 400 GB/s -> 1e6 B = 2.5 us more
    plain, filled = _l2_term(0.0, XG, RATES), _l2_term(0.0, XG, RATES, fill=1e6)
    assert filled.time_ms - plain.time_ms == pytest.approx(1e6 / 4e11 * 1e3)
    assert "+ 1,000,000 B on-chip x fill" in filled.formula


def test_the_hub_kernels_declare_their_on_chip_copies():
    from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive

    # 90,000 nonzeros in tiles of about 1,024: 90 tiles, fewer than 8 blocks on each of 132
    # SMs, so the persistent grid (and its shared-memory copies) is the 90 tiles
    a = sp.random(3000, 3000, density=0.01, format="csr", random_state=2)
    for hub, copies in ((8192, 90), (-16384, 132), (0, 0)):
        backend = CudaSpmvAdaptive(hub=hub)
        fmt = backend.build_format(a)
        assert fmt.ntiles == 90
        shape = backend.host_shape(fmt, a, "float32", 132)
        assert (shape.onchip_x_entries, shape.onchip_x_copies) == (abs(hub), copies)


def test_the_walked_schedule_charges_the_warps_issue_path_in_the_prediction():
    """``model.predict.issue_interval_ns``: 4 cycles at 1,000 MHz, 4 ns an instruction. A
    ``LDG c; LDG x[c]; FADD s, x`` loop issued one instruction a step: c leaves 4 ns into the
    iteration, the gather waits for it and the add for x, so the path adds the first 4 ns and
    the rest hides behind the loads: 4 ns an iteration, whatever the x round."""
    from sparsescope.model.issue_schedule import GATHER, STREAM, IssueSchedule, IssueStep

    n = 2000
    a, traffic, base = _random_case(n)
    steps = (IssueStep(load=0, issued=1), IssueStep(load=1, reads=(0,), issued=1),
             IssueStep(reads=(1,), issued=1))
    counted = dataclasses.replace(base, issue_schedule=IssueSchedule(steps=steps,
                                                                     kinds=(STREAM, GATHER)))
    uncounted = dataclasses.replace(base, issue_schedule=IssueSchedule(
        steps=tuple(dataclasses.replace(s, issued=0) for s in steps), kinds=(STREAM, GATHER)))
    p = predict_spmv(a.indptr, a.indices, n, traffic, counted, RATES, flushed=True)
    q = predict_spmv(a.indptr, a.indices, n, traffic, uncounted, RATES, flushed=True)
    assert p.inputs["issue_path_ns"] == pytest.approx(4.0)
    assert q.inputs["issue_path_ns"] == 0.0
    assert p.inputs["iteration_ns"] == pytest.approx(q.inputs["iteration_ns"] + 4.0)
    assert p.predicted_ms > q.predicted_ms


def test_a_partial_last_round_runs_at_its_own_concurrency():
    """4 SMs x 2 slots = 8 slots, 10 blocks of 3 iterations: the last 2 blocks (a partial
    round) run at X(2 blocks), the first 8 at X(10 blocks); a grid of whole rounds (8 blocks)
    is all at X(8)."""
    from sparsescope.model.predict import _delay_ns, _loop_terms
    from sparsescope.model.prediction import PredictionTerm

    shape = KernelShape(kernel="k", decomposition="nnz", block_threads=256, grid_blocks=10,
                        nnz_per_iteration=4, rounds_per_iteration=2, setup_rounds=1)
    bandwidth = [PredictionTerm("dram", 30 * 1e-6 * 1e3, "")]   # 30 iterations x 1 us: 30 us
    iters = np.full(10, 3)
    _, memory, queue = _loop_terms(iters, 500.0, shape, RATES, 2, bandwidth, 400.0)
    demands = {"dram": 1e-6}
    delay = _delay_ns(500.0, iters, 400.0) * 1e-9
    full = per_sm_mva(demands, delay, 4, 2, 10)
    tail = per_sm_mva(demands, delay, 4, 2, 2)
    assert queue.throughput_per_s == pytest.approx(full.throughput_per_s)
    assert memory.time_ms == pytest.approx((24 / full.throughput_per_s
                                            + 6 / tail.throughput_per_s) * 1e3)
    assert "the last 2 blocks (a partial round)" in memory.formula
    whole = np.full(8, 3)
    bandwidth8 = [PredictionTerm("dram", 24 * 1e-6 * 1e3, "")]
    _, memory8, queue8 = _loop_terms(whole, 500.0, shape, RATES, 2, bandwidth8, 400.0)
    assert memory8.time_ms == pytest.approx(24 / queue8.throughput_per_s * 1e3)
    assert "partial round" not in memory8.formula


def test_a_programmatic_tile_call_back_to_back_pays_the_pdl_launch():
    from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive

    # 27,000 nonzeros in tiles of about 1,024: 27 tiles, one wave on 4 SMs x 8 blocks of 256
    a = sp.random(3000, 3000, density=0.003, format="csr", random_state=2)
    backend = CudaSpmvAdaptive()
    fmt = backend.build_format(a)
    shape = backend.host_shape(fmt, a, "float32", RATES.sm_count)
    assert shape.programmatic_launch  # spmv_tile waits before it reads x
    traffic = backend.format_traffic(fmt, a, 4)
    ordinary = dataclasses.replace(RATES, timing_mode="throughput", call_us=3.7,
                                   next_launch_us=1.5)
    pdl = dataclasses.replace(ordinary, pdl_launch_us=0.4)
    before = predict_spmv(a.indptr, a.indices, a.shape[1], traffic, shape, ordinary,
                          flushed=False)
    after = predict_spmv(a.indptr, a.indices, a.shape[1], traffic, shape, pdl, flushed=False)
    # the launch: 1 x 1.5 us back to back, 0.4 us with PDL
    assert before.term("overhead").time_ms == pytest.approx(1.5e-3)
    assert after.term("overhead").time_ms == pytest.approx(0.4e-3)
    assert after.term("overhead").formula.startswith("1 programmatic launch(es) (PDL)")
    # only the launch: the blocks' own work, setup round included, is what it was (the
    # real development set on the H200 saved the launch difference and no more)
    assert after.predicted_ms == pytest.approx(before.predicted_ms - 1.1e-3)
    assert after.term("imbalance") == before.term("imbalance")
