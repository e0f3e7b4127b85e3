"""The pieces of the SpMV time model (``model.predict``): iterations per row and per block, the
row cutting and window sort, the iteration's round trips, the device's rates, and structural
facts of the whole prediction (its numbers may still move, so only relations are pinned)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.model.iterations import WAVES_SCHEDULED, wave_makespan
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.predict import (
    DeviceRates,
    _cut,
    _sorted_in_windows,
    block_iterations,
    device_rates,
    iteration_ns,
    longest_block,
    predict_spmv,
    row_iterations,
)
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.model.xgather import XGather


def rows_shape(**kw) -> KernelShape:
    base = dict(kernel="csr_scalar<float, int>", decomposition="rows", block_threads=64,
                grid_blocks=2)
    return KernelShape(**{**base, **kw})


def indptr_of(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


RATES = DeviceRates(
    name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 20, dram_bw_gb_s=100.0, l2_bw_gb_s=400.0, dram_latency_ns=400.0,
    l2_latency_ns=200.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=3.0, sources={"dram_bw": "hand"})


# ----------------------------------------------------------------------------- iterations

@pytest.mark.parametrize("length, threads, step, remainder, iterations", [
    (37, 1, 16, 1, 7),    # floor(37 / 16) = 2, then the last 5 one at a time: 2 + 5
    (37, 1, 16, 0, 3),    # ceil(37 / 16): the remainder by a whole step
    (37, 1, 16, 4, 4),    # 2 + ceil(5 / 4)
    (37, 1, 16, 16, 3),   # a remainder step >= the step is the step
    (37, 2, 16, 1, 4),    # chunk 32: floor(37 / 32) = 1, then ceil(5 / (2 x 1)) = 3
    (37, 2, 16, 0, 2),    # ceil(37 / 32)
    (32, 2, 16, 1, 1),    # no remainder
    (0, 1, 16, 1, 0),     # an empty row takes no iteration
])
def test_row_iterations(length, threads, step, remainder, iterations):
    assert row_iterations(np.array([length]), threads, step, remainder).tolist() == [iterations]


def test_row_iterations_is_elementwise():
    # step 16, remainder 1: 0 -> 0; 16 -> 1; 17 -> 1 + 1; 40 -> 2 + 8
    assert row_iterations(np.array([0, 16, 17, 40]), 1, 16, 1).tolist() == [0, 1, 2, 10]


def test_cut_long_rows_into_pieces():
    assert _cut(np.array([5, 0, 2]), 2).tolist() == [2, 2, 1, 0, 2]
    assert _cut(np.array([7]), 3).tolist() == [3, 3, 1]
    # nothing above the piece: unchanged
    assert _cut(np.array([1, 2, 0]), 2).tolist() == [1, 2, 0]


def test_sorted_in_windows():
    # windows [1, 3], [2, 5], [4]: each sorted longest first
    assert _sorted_in_windows(np.array([1, 3, 2, 5, 4]), 2).tolist() == [3, 1, 5, 2, 4]
    assert _sorted_in_windows(np.array([1, 3, 2, 5, 4]), 8).tolist() == [5, 4, 3, 2, 1]
    assert _sorted_in_windows(np.array([4, 3]), 1).tolist() == [4, 3]


def test_block_iterations_rows_docstring_example():
    # 128 rows of length 1 except row 70 of length 9, 1 thread per row, 64-thread blocks:
    # warps (32 rows each) take [1, 1, 9, 1] iterations, blocks (2 warps each) [1, 9]
    lengths = np.ones(128, dtype=np.int64)
    lengths[70] = 9
    assert block_iterations(indptr_of(lengths), rows_shape()).tolist() == [1, 9]


def test_block_iterations_several_threads_per_row():
    # 16 rows of length 4 except row 9 of length 20, 4 threads per row, 1 nonzero each per
    # iteration: rows take ceil(L / 4) = 1 (row 9: 5); a warp holds 8 rows: warps [1, 5]
    lengths = np.full(16, 4)
    lengths[9] = 20
    ip = indptr_of(lengths)
    assert block_iterations(ip, rows_shape(threads_per_row=4, block_threads=32)).tolist() == [
        1, 5]
    assert block_iterations(ip, rows_shape(threads_per_row=4, block_threads=64)).tolist() == [5]


def test_block_iterations_sort_window_and_split():
    # 64 rows of length 1 except row 40 of length 9, 32-thread blocks (one warp each)
    lengths = np.ones(64, dtype=np.int64)
    lengths[40] = 9
    ip = indptr_of(lengths)
    assert block_iterations(ip, rows_shape(block_threads=32)).tolist() == [1, 9]
    # sorted within one window of 64 rows: the long row moves to the first warp
    assert block_iterations(ip, rows_shape(block_threads=32, sort_window=64)).tolist() == [9, 1]
    # cut into pieces of 3: 66 pieces, the longest 3 (2 warps + a short third one)
    assert block_iterations(ip, rows_shape(block_threads=32, split_long_rows=3)).tolist() == [
        1, 3, 1]


def test_block_iterations_nnz_decomposition():
    # 1,000 nonzeros over 2 blocks x 64 threads: ceil(1000 / 128) = 8 per thread
    ip = indptr_of([500, 0, 300, 200])
    four = KernelShape(kernel="merge", decomposition="nnz", block_threads=64, grid_blocks=2,
                       nnz_per_iteration=4)
    assert block_iterations(ip, four).tolist() == [2, 2]  # 8 / 4, every block alike
    # 3 per iteration, the rest one at a time: floor(8 / 3) + 2 = 4
    three = dataclasses.replace(four, nnz_per_iteration=3, remainder_step=1)
    assert block_iterations(ip, three).tolist() == [4, 4]


# ----------------------------------------------------------------------------- t_iter

def xgather(gathers: int, l2_requests: float, hit: float) -> XGather:
    return XGather(gathers=gathers, l2_requests=l2_requests, distinct_sectors=1,
                   dram_sectors=l2_requests * (1 - hit), l2_hit_rate=hit, onchip_share=0.0,
                   sampled=False, sample_fraction=1.0, method="by hand")


def test_iteration_ns_docstring_hand_check():
    rates = dataclasses.replace(RATES, dram_latency_ns=350.0, l2_latency_ns=150.0)
    # s = 1 sector per warp gather (32 gathers, 1 request): x round = 150 + (1 - 0.5) x 200
    # = 250 ns; t_iter = 350 (streams) + (2 - 1) x 250 = 600 ns
    t_iter, x_round = iteration_ns(rows_shape(), rates, xgather(32, 1, 0.5))
    assert (t_iter, x_round) == pytest.approx((600.0, 250.0))
    # staged: the streams' round trip overlaps the gathers, and a chunk waits for the longer
    # one: its copy, issued one chunk ahead, 350 ns; with 3 gather rounds (750 ns) those
    assert iteration_ns(rows_shape(staged=True), rates, xgather(32, 1, 0.5))[0] == (
        pytest.approx(350.0))
    assert iteration_ns(rows_shape(staged=True, rounds_per_iteration=4), rates,
                        xgather(32, 1, 0.5))[0] == pytest.approx(750.0)
    # s = 2 sectors per warp gather: P(miss) = 1 - 0.5^2 = 0.75 -> x round 150 + 150 = 300
    assert iteration_ns(rows_shape(), rates, xgather(32, 2, 0.5)) == pytest.approx((650.0, 300.0))
    # 3 rounds: 350 + 2 x 250 = 850
    assert iteration_ns(rows_shape(rounds_per_iteration=3), rates, xgather(32, 1, 0.5))[0] == (
        pytest.approx(850.0))
    # no measured L2 latency: the x round is the DRAM latency, 350 + 350
    no_l2 = dataclasses.replace(rates, l2_latency_ns=None)
    assert iteration_ns(rows_shape(), no_l2, xgather(32, 1, 0.5)) == pytest.approx((700.0,
                                                                                     350.0))


# ----------------------------------------------------------------------------- device rates

def test_device_rates_take_measured_ceilings_over_the_datasheet():
    spec = get_spec("H200")
    ceilings = MeasuredCeilings(device="NVIDIA H200", copy_bw_gb_s=3800.0, read_bw_gb_s=4100.0,
                                l2_bw_gb_s=10_000.0, dram_latency_ns=550.0, l2_latency_ns=250.0,
                                fp32_gflops=60_000.0, dram_gather_gsectors_s=20.0,
                                l2_gather_gsectors_s=80.0, launch_us=2.5,
                                l2_write_bw_gb_s=7_000.0, flush_writeback_share=0.0,
                                call_us=3.7, next_launch_us=1.5)
    r = device_rates(spec, ceilings)
    assert (r.call_us, r.next_launch_us) == (3.7, 1.5)
    assert r.flush_writeback_share == 0.0  # a measured 0 (the write-back is free) stays 0
    assert (r.name, r.sm_count, r.max_threads_per_sm, r.max_blocks_per_sm, r.l2_bytes) == (
        "H200", spec.sm_count, spec.max_threads_per_sm, spec.max_blocks_per_sm, spec.l2_bytes)
    assert (r.dram_bw_gb_s, r.l2_bw_gb_s, r.dram_latency_ns, r.l2_latency_ns) == (
        4100.0, 10_000.0, 550.0, 250.0)
    assert (r.fp32_gflops, r.dram_gather_gsectors_s, r.l2_gather_gsectors_s, r.launch_us) == (
        60_000.0, 20.0, 80.0, 2.5)
    assert r.sources == {"dram_bw": "measured read bandwidth", "l2_bw": "measured L2 bandwidth",
                         "dram_latency": "measured pointer chase",
                         "l2_latency": "measured pointer chase", "fp32": "measured FMA chains",
                         "launch": "measured empty kernel",
                         "dram_gathers": "measured random gathers",
                         "l2_gathers": "measured random gathers",
                         "l2_write_bw": "measured L2 write bandwidth",
                         "sm_clock": "spec (boost clock)",
                         "tf32_tensor": "datasheet dense TF32 per SM and clock x spec clock",
                         "dram_access": "JEDEC JESD238 (HBM3, also HBM3e): 64-bit "
                                        "pseudo-channel x burst length 8"}
    # 132 SMs x 1,024 TF32 FMAs a clock x 2 x 1.98 GHz (Hopper)
    assert r.tf32_tensor_gflops == pytest.approx(132 * 1024 * 2 * 1.98)
    assert (r.l2_write_bw_gb_s, r.sm_clock_mhz, r.schedulers_per_sm) == (
        7_000.0, spec.sm_clock_mhz, spec.warp_schedulers_per_sm)
    # no read bandwidth measured: the copy bandwidth stands in
    copy_only = device_rates(spec, MeasuredCeilings(device="x", copy_bw_gb_s=3800.0))
    assert (copy_only.dram_bw_gb_s, copy_only.sources["dram_bw"]) == (
        3800.0, "measured copy bandwidth")


@pytest.mark.parametrize("ceilings", [None, MeasuredCeilings(device="NVIDIA H200")])
def test_device_rates_without_ceilings_use_the_spec(ceilings):
    spec = get_spec("H200")
    r = device_rates(spec, ceilings)
    assert (r.dram_bw_gb_s, r.sources["dram_bw"]) == (spec.peak_bw_gb_s, "datasheet peak")
    assert (r.dram_latency_ns, r.sources["dram_latency"]) == (spec.dram_latency_ns,
                                                              "spec estimate")
    assert (r.fp32_gflops, r.sources["fp32"]) == (spec.fp32_peak_gflops, "datasheet")
    assert r.l2_bw_gb_s is None and r.l2_latency_ns is None and r.launch_us is None
    assert r.dram_gather_gsectors_s is None and r.l2_gather_gsectors_s is None
    assert r.sources["l2_bw"] == r.sources["launch"] == r.sources["l2_write_bw"] == "unknown"
    assert r.l2_write_bw_gb_s is None and r.sm_clock_mhz == spec.sm_clock_mhz
    assert r.flush_writeback_share is None
    assert r.call_us is None and r.next_launch_us is None


def test_flush_writeback_by_hand():
    from sparsescope.model.predict import flush_writeback

    rates = dataclasses.replace(device_rates(get_spec("H200")), l2_bytes=50_000_000)
    # not measured: every evicted dirty byte, min(L2, fetched)
    assert flush_writeback(rates, 80e6) == 50e6 and flush_writeback(rates, 20e6) == 20e6
    # measured share 0.4: 50 MB x 0.4 = 20 MB
    measured = dataclasses.replace(rates, flush_writeback_share=0.4)
    assert flush_writeback(measured, 80e6) == pytest.approx(20e6)


# ----------------------------------------------------------------------------- predict_spmv

N = 2000


@pytest.fixture(scope="module")
def banded() -> sp.csr_matrix:
    """2,000 x 2,000, 5 diagonals: 5 x 2000 - 2 - 2 - 1 - 1 = 9,994 nonzeros."""
    a = sp.diags([np.ones(N - 2), np.ones(N - 1), np.ones(N), np.ones(N - 1), np.ones(N - 2)],
                 [-2, -1, 0, 1, 2], shape=(N, N), format="csr", dtype=np.float64)
    assert a.nnz == 9994
    return a


SHAPE = KernelShape(kernel="csr_scalar<float, int>", decomposition="rows", block_threads=128,
                    grid_blocks=-(-N // 128))


def predict(a, shape=SHAPE, rates=RATES, flushed=False, **kw):
    traffic = csr_spmv_traffic(N, N, a.nnz)
    return predict_spmv(a.indptr, a.indices, N, traffic, shape, rates, flushed=flushed, **kw)


def test_prediction_is_overhead_plus_the_binding_term(banded):
    p = predict(banded)
    names = [t.name for t in p.terms]
    assert names == ["dram", "l2", "latency", "memory", "imbalance", "compute", "overhead"]
    assert all(math.isfinite(t.time_ms) and t.time_ms >= 0 for t in p.terms)
    t = {term.name: term.time_ms for term in p.terms}
    assert p.predicted_ms == pytest.approx(
        t["overhead"] + max(t["memory"], t["imbalance"], t["compute"]))
    assert p.predicted_ms > t["overhead"] > 0
    assert p.limiter in {"dram", "l2", "latency", "imbalance", "compute"}
    # MVA's throughput lies below both of its bounds: the memory term is above each of them
    for bound in ("dram", "l2", "latency"):
        assert t["memory"] >= t[bound] * (1 - 1e-12), bound
    assert p.error_pct is None and p.not_modelled == ""
    # the blocks of the kernel's own decomposition: ceil(2000 rows / 128) = 16
    assert p.inputs["blocks"] == 16
    assert p.inputs["customers"] <= RATES.sm_count * 16  # resident: min(2048 / 128, 32) = 16
    assert p.inputs["dram_bytes"] >= csr_spmv_traffic(N, N, banded.nnz).total_bytes - 4 * N


def test_without_a_measured_l2_bandwidth_there_is_no_l2_term(banded):
    p = predict(banded, rates=dataclasses.replace(RATES, l2_bw_gb_s=None))
    assert p.term("l2") is None and p.term("dram") is not None
    assert p.term("memory").time_ms >= p.term("dram").time_ms


def test_overhead_is_measured_or_launches(banded):
    assert predict(banded, overhead_ms=0.0123).term("overhead").time_ms == 0.0123
    two = predict(banded, shape=dataclasses.replace(SHAPE, launches=2))
    assert two.term("overhead").time_ms == pytest.approx(2 * 3.0e-3)  # 2 x 3 us
    none = predict(banded, rates=dataclasses.replace(RATES, launch_us=None))
    assert none.term("overhead").time_ms == 0.0
    # measured through the timing protocol: one call, then each further launch
    protocol = dataclasses.replace(RATES, call_us=3.7, next_launch_us=1.5)
    assert predict(banded, rates=protocol).term("overhead").time_ms == pytest.approx(3.7e-3)
    two = predict(banded, rates=protocol, shape=dataclasses.replace(SHAPE, launches=2))
    assert two.term("overhead").time_ms == pytest.approx(5.2e-3)
    assert two.term("overhead").formula == ("one call 3.7 us + 1 further launch(es) x 1.5 us "
                                            "(measured through the timing protocol)")
    # a fixup launch also waits on its own two dependent loads: DRAM 400 ns + L2 200 ns
    fixup = predict(banded, rates=protocol,
                    shape=dataclasses.replace(SHAPE, launches=2, fixup=True))
    assert fixup.term("overhead").time_ms == pytest.approx(5.8e-3)
    assert fixup.term("overhead").formula.endswith("then the partial slots from L2 (600 ns)")
    # split rows finished in the one launch: one launch, and the finishing tile's chain of
    # 2 DRAM + 3 L2 trips: 2 x 400 + 3 x 200 = 1,400 ns
    finished = predict(banded, rates=protocol, shape=dataclasses.replace(SHAPE, finish_split=True))
    assert finished.term("overhead").time_ms == pytest.approx(3.7e-3 + 1.4e-3)
    assert finished.term("overhead").formula.endswith("3 x L2 latency, 1,400 ns)")


def test_a_flushed_l2_adds_its_write_back(banded):
    cold, warm = predict(banded, flushed=True), predict(banded, flushed=False)
    assert warm.inputs["flush_writeback_bytes"] == 0.0
    streams = csr_spmv_traffic(N, N, banded.nnz).total_bytes - 4 * N  # less x
    writeback = cold.inputs["flush_writeback_bytes"]
    assert writeback == min(RATES.l2_bytes, streams + cold.inputs["x_dram_bytes"]) > 0
    assert cold.inputs["dram_bytes"] == pytest.approx(warm.inputs["dram_bytes"] + writeback)
    # the write-back goes through DRAM at its bandwidth: bytes / (GB/s x 1e6) ms
    assert cold.term("dram").time_ms - warm.term("dram").time_ms == pytest.approx(
        writeback / (RATES.dram_bw_gb_s * 1e6))
    assert cold.predicted_ms >= warm.predicted_ms
    assert any("flushed" in a for a in cold.assumptions)
    assert not any("flushed" in a for a in warm.assumptions)


def test_staged_twin_pairs_with_its_sibling_and_iterates_faster(banded):
    plain = predict(banded)
    staged = predict(banded, shape=dataclasses.replace(SHAPE, staged=True))
    assert staged.inputs["iteration_ns"] < plain.inputs["iteration_ns"]
    assert (staged.kernel, staged.staged, plain.staged) == (plain.kernel, True, False)
    assert plain.kernel.startswith("CSR INT32, ") and SHAPE.label in plain.kernel
    # a different decomposition is another kernel: no pair
    vector = predict(banded, shape=dataclasses.replace(SHAPE, threads_per_row=8))
    assert vector.kernel != plain.kernel


def test_a_given_x_gather_model_is_used(banded):
    xg = XGather(gathers=banded.nnz, l2_requests=500.0, distinct_sectors=250,
                 dram_sectors=250.0, l2_hit_rate=0.5, onchip_share=0.0, sampled=False,
                 sample_fraction=1.0, method="given by the test")
    p = predict(banded, xg=xg)
    assert (p.inputs["x_l2_requests"], p.inputs["x_dram_bytes"]) == (500.0, 250 * 32)
    assert "x gathers: given by the test" in p.assumptions


def test_nonzero_split_shape_predicts(banded):
    from sparsescope.backends._gpu import cusparse_csrmv_shape

    shape = cusparse_csrmv_shape(banded.nnz, 4, launches=2)
    p = predict(banded, shape=shape)
    assert p.predicted_ms > 0 and math.isfinite(p.predicted_ms)
    assert p.inputs["blocks"] == shape.grid_blocks  # ceil(9994 / 4096) = 3
    assert shape.grid_blocks == 3
    assert p.kernel == "CSR INT32, nonzeros split evenly"


def test_the_longest_block_is_loaded_while_the_rest_runs():
    # 100 iterations, setup 300 ns, t_iter 500, loaded 800, the rest busy for 40 us: the first
    # 40 us / 800 ns = 50 iterations loaded, the other 50 alone
    term = longest_block(100, 300.0, 500.0, 800.0, 40_000.0)
    assert term.name == "imbalance"
    assert term.time_ms == pytest.approx((300 + 50 * 800 + 50 * 500) * 1e-6)
    # nothing else to run: every iteration alone; a long busy time: every iteration loaded
    assert longest_block(100, 300.0, 500.0, 800.0, 0.0).time_ms == pytest.approx(50.3e-3)
    assert longest_block(100, 300.0, 500.0, 800.0, 1e9).time_ms == pytest.approx(80.3e-3)
    # a queue never makes an iteration faster than unloaded
    assert longest_block(10, 0.0, 500.0, 100.0, 1e9).time_ms == pytest.approx(5e-3)


def test_wave_makespan_by_hand():
    assert wave_makespan(np.ones(3), 2) == 2.0                 # 1.5 waves: two rounds
    assert wave_makespan(np.array([5.0, 1, 1, 1]), 2) == 5.0   # the short ones beside the long
    assert wave_makespan(np.array([1.0, 1, 5, 1]), 2) == 6.0   # the long one starts late
    assert wave_makespan(np.array([2.0, 3.0]), 8) == 3.0       # one round: the longest block
    assert wave_makespan(np.array([]), 4) == 0.0
    # many rounds: the average, not the schedule
    many = np.ones(WAVES_SCHEDULED * 4 + 1)
    assert wave_makespan(many, 4) == pytest.approx(many.sum() / 4)


def test_the_latency_term_counts_whole_rounds_of_blocks():
    # 4 SMs x 32 resident blocks = 128 slots (RATES, 32 threads a block); 192 blocks of one
    # iteration each are 1.5 rounds: the latency term is two block times, not 1.5
    n = 192 * 32
    a = sp.identity(n, format="csr")
    shape = KernelShape(kernel="k", decomposition="rows", block_threads=32,
                        grid_blocks=192, rounds_per_iteration=2, setup_rounds=0)
    p = predict_spmv(a.indptr, a.indices, n, csr_spmv_traffic(n, n, n), shape, RATES,
                     flushed=False)
    block_ms = p.inputs["iteration_ns"] * 1e-6
    assert p.term("latency").time_ms == pytest.approx(2 * block_ms)
    assert "(2 round(s))" in p.term("latency").formula
