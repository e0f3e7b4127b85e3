"""The fixed cost of a timed call (model.call_overhead), by hand."""

import dataclasses

import pytest

from sparsescope.model.call_overhead import call_overhead_us, overhead_term
from sparsescope.model.predict import DeviceRates

RATES = DeviceRates(
    name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 20, dram_bw_gb_s=100.0, l2_bw_gb_s=400.0, dram_latency_ns=400.0,
    l2_latency_ns=200.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=2.7, call_us=3.7, next_launch_us=1.5)


@pytest.mark.parametrize("launches, us", [(1, 3.7), (2, 5.2), (3, 6.7), (0, 3.7)])
def test_a_call_then_each_further_launch(launches, us):
    assert call_overhead_us(RATES, launches)[0] == pytest.approx(us)


def test_older_ceilings_charge_the_empty_launch_per_launch():
    older = dataclasses.replace(RATES, call_us=None, next_launch_us=None)
    assert call_overhead_us(older, 2) == (pytest.approx(5.4),
                                          "2 launch(es) x 2.7 us (measured empty kernel)")
    nothing = dataclasses.replace(older, launch_us=None)
    assert call_overhead_us(nothing, 2)[0] == 0.0


def test_a_call_without_a_measured_further_launch_charges_the_call_once():
    assert call_overhead_us(dataclasses.replace(RATES, next_launch_us=None), 3)[0] == 3.7


def test_the_term_is_in_milliseconds():
    term = overhead_term(RATES, 2)
    assert (term.name, term.time_ms) == ("overhead", pytest.approx(5.2e-3))
    assert term.formula.startswith("one call 3.7 us + 1 further launch(es) x 1.5 us")


# -- programmatic dependent launch (PDL), the throughput mode --------------------------------
THROUGHPUT = dataclasses.replace(RATES, timing_mode="throughput", pdl_launch_us=0.4)


def test_a_programmatic_launch_back_to_back_costs_the_measured_pdl_launch():
    # hand check of the docstring: 2 x 0.4 = 0.8 us for two launches
    us, how = call_overhead_us(THROUGHPUT, 2, programmatic=True)
    assert us == pytest.approx(0.8)
    assert how.startswith("2 programmatic launch(es) (PDL)")
    assert call_overhead_us(THROUGHPUT, 1, programmatic=True)[0] == pytest.approx(0.4)


def test_pdl_changes_nothing_alone_unmeasured_or_for_a_kernel_without_the_wait():
    # the latency mode: a call timed alone has no call before it to overlap
    alone = dataclasses.replace(THROUGHPUT, timing_mode="latency")
    assert call_overhead_us(alone, 1, programmatic=True)[0] == pytest.approx(3.7)
    # not measured (no cuda.bindings where the ceilings ran): the ordinary back-to-back cost
    unmeasured = dataclasses.replace(THROUGHPUT, pdl_launch_us=None)
    assert call_overhead_us(unmeasured, 2, programmatic=True)[0] == pytest.approx(3.0)
    # a kernel that does not wait (SELL, CSR) keeps launches x next launch
    assert call_overhead_us(THROUGHPUT, 2)[0] == pytest.approx(3.0)
    # a library call is never launched programmatically
    assert call_overhead_us(THROUGHPUT, 2, library="nvmath", programmatic=True)[0] == \
        pytest.approx(3.0)


def test_overlaps_previous_call_needs_the_mode_the_measurement_and_the_wait():
    from sparsescope.model.call_overhead import overlaps_previous_call

    assert overlaps_previous_call(THROUGHPUT, True)
    assert not overlaps_previous_call(THROUGHPUT, False)
    assert not overlaps_previous_call(dataclasses.replace(THROUGHPUT, timing_mode="latency"),
                                      True)
    assert not overlaps_previous_call(dataclasses.replace(THROUGHPUT, pdl_launch_us=None), True)
