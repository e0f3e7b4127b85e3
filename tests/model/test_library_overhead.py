"""A library call's fixed cost (model.call_overhead) and the throughput mode's prediction
(model.throughput), by hand: the measured library_call_us replaces the launch count for a
cuSPARSE call, the documented default stands in (and says so) where it was not measured, and
back-to-back calls pay the launch interval and read from DRAM only what the L2 cannot keep."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.model.call_overhead import call_overhead_us, overhead_assumptions, overhead_term
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.predict import BINDING_TERMS, DeviceRates, device_rates, predict_spmv
from sparsescope.model.prediction import PredictionTerm
from sparsescope.model.throughput import (
    rates_for_timing,
    throughput_assumption,
    warm_dram_share,
    warm_dram_term,
)
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.timing.types import TimingConfig

RATES = DeviceRates(
    name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 20, dram_bw_gb_s=100.0, l2_bw_gb_s=400.0, dram_latency_ns=400.0,
    l2_latency_ns=200.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=2.7, call_us=3.7, next_launch_us=1.5,
    library_call_us={"cupy": 12.0, "nvmath": 9.0},
    library_call_throughput_us={"nvmath": 4.0})
THROUGHPUT = dataclasses.replace(RATES, timing_mode="throughput")


@pytest.mark.parametrize("library, launches, us", [
    ("cupy", 3, 12.0),     # measured: the route's own cost, whatever its launches
    ("nvmath", 1, 9.0),
    ("torch", 4, 14.8),    # not measured: 4 launches x call_us 3.7
    ("", 3, 6.7),          # our kernel: 3.7 + 2 x 1.5
])
def test_latency_fixed_cost(library, launches, us):
    assert call_overhead_us(RATES, launches, library)[0] == pytest.approx(us)


@pytest.mark.parametrize("library, launches, us", [
    ("nvmath", 1, 4.0),    # measured back to back
    ("cupy", 3, 4.5),      # not measured back to back: 3 x next_launch 1.5
    ("", 2, 3.0),          # our kernel: 2 x next_launch 1.5
])
def test_throughput_fixed_cost_is_the_back_to_back_interval(library, launches, us):
    assert call_overhead_us(THROUGHPUT, launches, library)[0] == pytest.approx(us)


def test_fallbacks_say_what_they_assume():
    older = dataclasses.replace(RATES, call_us=None, next_launch_us=None,
                                library_call_us={})
    assert call_overhead_us(older, 3, "cupy")[0] == pytest.approx(8.1)  # 3 x launch_us 2.7
    assert call_overhead_us(dataclasses.replace(older, launch_us=None), 3, "cupy")[0] == 0.0
    (note,) = overhead_assumptions(RATES, "torch", 4)
    assert note.startswith("the torch cuSPARSE call's fixed cost, not measured: 14.8 us = "
                           "4 launch(es) x 3.7 us (call_us)")
    assert overhead_assumptions(RATES, "cupy") == () and overhead_assumptions(RATES) == ()
    (tp_note,) = overhead_assumptions(THROUGHPUT, "cupy", 3)
    assert "4.5 us = 3 launch(es) x 1.5 us (next_launch_us)" in tp_note
    (nothing,) = overhead_assumptions(dataclasses.replace(older, launch_us=None), "cupy", 3)
    assert nothing.endswith("nor a launch time: 0")
    term = overhead_term(RATES, 3, "cupy")
    assert term.time_ms == pytest.approx(0.012) and "library_call_us" in term.formula


def test_warm_dram_share_hand_checks():
    assert warm_dram_share(30e6, 50e6) == 0.0
    assert warm_dram_share(200e6, 50e6) == pytest.approx(0.75)
    assert warm_dram_share(0.0, 50e6) == 0.0


def test_warm_dram_term_scales_only_in_throughput():
    term = PredictionTerm("dram", 0.010, "x")
    rates = dataclasses.replace(THROUGHPUT, l2_bytes=50_000_000)
    assert warm_dram_term(term, 200e6, rates).time_ms == pytest.approx(0.0075)
    assert "throughput, L2 warm" in warm_dram_term(term, 200e6, rates).formula
    assert warm_dram_term(term, 200e6, dataclasses.replace(rates, timing_mode="latency")) is term
    assert throughput_assumption(RATES) == () and len(throughput_assumption(THROUGHPUT)) == 1


def test_rates_follow_the_timing_mode():
    assert rates_for_timing(RATES, None) is RATES
    assert rates_for_timing(RATES, TimingConfig()) is RATES
    assert rates_for_timing(RATES, TimingConfig(mode="throughput")).timing_mode == "throughput"


def test_device_rates_read_the_measured_library_calls():
    ceilings = MeasuredCeilings(device="GPU", library_call_us={"nvmath": 9.5},
                                library_call_throughput_us={"nvmath": 3.0})
    rates = device_rates(get_spec("H200"), ceilings)
    assert rates.library_call_us == {"nvmath": 9.5}
    assert rates.library_call_throughput_us == {"nvmath": 3.0}
    assert device_rates(get_spec("H200"), None).library_call_us == {}


def _case():
    """A 2,000 x 2,000 banded matrix of 5 nonzeros a row and the csrmv-like shape."""
    csr = sp.diags([np.ones(2000 - abs(d)) for d in range(-2, 3)], range(-2, 3),
                   format="csr", dtype=np.float64)
    traffic = csr_spmv_traffic(2000, 2000, csr.nnz, value_bytes=4, index_bytes=4)
    shape = KernelShape(kernel="cusparse::csrmv_v3_kernel", decomposition="nnz",
                        block_threads=512, grid_blocks=-(-csr.nnz // 4096), nnz_per_iteration=8,
                        launches=3, library="cupy", resident_blocks_per_sm=2,
                        row_search=True)  # as cupy's unplanned call, and its probe, search
    return csr, traffic, shape


def _predict(rates, shape, flushed=False):
    csr, traffic, _ = _case()
    return predict_spmv(csr.indptr, csr.indices, 2000, traffic, shape, rates, flushed=flushed)


def _bound(p):
    return max(p.term(n).time_ms for n in BINDING_TERMS)


def test_a_cusparse_prediction_carries_its_route_s_fixed_cost():
    _, _, shape = _case()
    library = _predict(RATES, shape)
    # the probe's 12 us, and the search of the 2,000 rows' offsets beyond the 32 of the probe:
    # (ceil(log2 2,001) - ceil(log2 33)) = 11 - 6 levels x 400 ns
    assert library.term("overhead").time_ms == pytest.approx(0.012 + 5 * 0.0004)
    assert library.predicted_ms == pytest.approx(0.014 + _bound(library))
    own = _predict(RATES, dataclasses.replace(shape, library=""))
    assert own.term("overhead").time_ms == pytest.approx(0.0067)  # 3.7 + 2 x 1.5 us
    # the device terms do not depend on who makes the call
    assert _bound(own) == pytest.approx(_bound(library))
    unmeasured = _predict(RATES, dataclasses.replace(shape, library="torch"))
    assert unmeasured.term("overhead").time_ms == pytest.approx(0.0111)  # 3 x 3.7 us
    assert any(a.startswith("the torch cuSPARSE call's fixed cost, not measured: 11.1 us")
               for a in unmeasured.assumptions)


def test_throughput_reads_from_dram_only_what_the_l2_cannot_keep():
    csr, traffic, shape = _case()
    alone = _predict(RATES, shape)
    fits = _predict(THROUGHPUT, shape)  # ~120 kB of data, a 1 MiB L2: all of it stays
    assert fits.term("dram").time_ms == 0.0
    assert fits.term("l2").time_ms == pytest.approx(alone.term("l2").time_ms)
    assert fits.term("overhead").time_ms == pytest.approx(0.0045)  # 3 launches x 1.5 us
    assert any("throughput mode" in a for a in fits.assumptions)
    small_l2 = 40_000
    big_alone = _predict(dataclasses.replace(RATES, l2_bytes=small_l2), shape)
    big = _predict(dataclasses.replace(THROUGHPUT, l2_bytes=small_l2), shape)
    fetched = traffic.total_bytes - traffic.x_bytes + big_alone.inputs["x_dram_bytes"]
    share = (fetched - small_l2) / fetched
    assert big.term("dram").time_ms == pytest.approx(big_alone.term("dram").time_ms * share)


def test_predict_call_predicts_the_mode_it_is_timed_in():
    from sparsescope.context.device import rates_context
    from sparsescope.context.predict import predict_call
    from sparsescope.ops.registry import get_op

    csr, traffic, shape = _case()
    case = get_op("spmv").make_case(csr, None, value_dtype="float32", index_bytes=4)
    device = rates_context(RATES)
    latency = predict_call(case, traffic, shape, device, timing=TimingConfig(flush_l2=False))
    throughput = predict_call(case, traffic, shape, device,
                              timing=TimingConfig(mode="throughput"))
    assert latency.term("overhead").time_ms == pytest.approx(0.014)   # with its row search
    assert throughput.term("overhead").time_ms == pytest.approx(0.0045)
    assert throughput.term("dram").time_ms == 0.0 < latency.term("dram").time_ms
