"""The in-order issue walk of a loop body (``model.issue_schedule``), against hand schedules."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparsescope.model.issue_schedule import GATHER, STREAM, IssueSchedule, IssueStep
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.predict import DeviceRates, escape_share, iteration_ns
from sparsescope.model.xgather import XGather

#: LDG c; LDG x[c]; FADD s, x -- the seed's col -> x chain, nothing pipelined.
CHAIN = IssueSchedule(steps=(IssueStep(load=0), IssueStep(load=1, reads=(0,)),
                             IssueStep(reads=(1,))), kinds=(STREAM, GATHER))


def _rates() -> DeviceRates:
    """DRAM latency 350 ns, L2 latency 150 ns; the rest does not enter an iteration's time."""
    return DeviceRates(name="t", sm_count=1, max_threads_per_sm=2048, max_blocks_per_sm=32,
                       l2_bytes=1 << 20, dram_bw_gb_s=1000.0, l2_bw_gb_s=None,
                       dram_latency_ns=350.0, l2_latency_ns=150.0, fp32_gflops=1000.0,
                       dram_gather_gsectors_s=None, l2_gather_gsectors_s=None, launch_us=None)


def _l2_hits() -> XGather:
    """Every gather hits L2: the x round is the L2 latency, 150 ns."""
    return XGather(gathers=32, l2_requests=32.0, distinct_sectors=1, dram_sectors=0.0,
                   l2_hit_rate=1.0, onchip_share=0.0, sampled=False, sample_fraction=1.0,
                   method="test")


def test_a_chain_waits_for_each_load_in_turn():
    walk = CHAIN.walk(350.0, 150.0)
    # the gather waits for c (350), the add for x (150)
    assert walk.iteration_ns == pytest.approx(500.0)
    assert (walk.stream_stops, walk.gather_stops) == (1.0, 1.0)


def test_a_column_loaded_one_iteration_ahead_hides_the_gather_round():
    # LDG x[c_prev]; LDG c_next; FADD s, x: the gather waits for last iteration's c (issued
    # right after the last gather), the add for x 150 ns later; the next gather then waits
    # for c until 350 ns after it was issued: 350 ns an iteration, the gather's 150 hidden
    pipelined = IssueSchedule(steps=(IssueStep(load=0, carried=(1,)), IssueStep(load=1),
                                     IssueStep(reads=(0,))), kinds=(GATHER, STREAM))
    walk = pipelined.walk(350.0, 150.0)
    assert walk.iteration_ns == pytest.approx(350.0)
    assert (walk.stream_stops, walk.gather_stops) == (1.0, 1.0)


def test_the_add_between_two_gathers_serialises_them():
    # LDG c1 c2 (one batch); LDG x[c1]; FADD; LDG x[c2]; FADD: the second gather issues only
    # after the first add, so an iteration pays the stream round and two gather rounds
    serial = IssueSchedule(
        steps=(IssueStep(load=0), IssueStep(load=1), IssueStep(load=2, reads=(0,)),
               IssueStep(reads=(2,)), IssueStep(load=3, reads=(1,)), IssueStep(reads=(3,))),
        kinds=(STREAM, STREAM, GATHER, GATHER))
    walk = serial.walk(350.0, 150.0)
    assert walk.iteration_ns == pytest.approx(350.0 + 2 * 150.0)
    assert (walk.stream_stops, walk.gather_stops) == (1.0, 2.0)


def test_iteration_ns_walks_the_schedule_where_the_shape_has_one():
    rates = _rates()
    xg = _l2_hits()
    declared = KernelShape(kernel="k", decomposition="rows", block_threads=256, grid_blocks=1,
                           rounds_per_iteration=2)
    assert iteration_ns(declared, rates, xg) == (pytest.approx(500.0), pytest.approx(150.0))
    serial = IssueSchedule(
        steps=(IssueStep(load=0), IssueStep(load=1), IssueStep(load=2, reads=(0,)),
               IssueStep(reads=(2,)), IssueStep(load=3, reads=(1,)), IssueStep(reads=(3,))),
        kinds=(STREAM, STREAM, GATHER, GATHER))
    walked = replace(declared, issue_schedule=serial)
    assert iteration_ns(walked, rates, xg)[0] == pytest.approx(650.0)
    # a staged kernel keeps the declared rounds (its waits go through shared memory): the
    # longer of its copy's round trip, 350 ns, and one gather round
    staged = replace(walked, staged=True)
    assert iteration_ns(staged, rates, xg)[0] == pytest.approx(350.0)


def test_an_escape_adds_one_stream_round_to_its_share_of_iterations():
    rates, xg = _rates(), _l2_hits()
    shape = KernelShape(kernel="k", decomposition="rows", block_threads=256, grid_blocks=1,
                        nnz_per_iteration=4, issue_schedule=CHAIN,
                        escape_share=((1, 0.1), (2, 0.2), (4, 0.4), (8, 0.8)))
    # 4 entries an iteration: share 0.4 of CHAIN's 500 ns iterations wait 350 ns more
    assert escape_share(shape) == pytest.approx(0.4)
    assert iteration_ns(shape, rates, xg)[0] == pytest.approx(500.0 + 0.4 * 350.0)
    # 6 entries an iteration: the largest declared size not above it, 4; 2: its own
    assert escape_share(replace(shape, nnz_per_iteration=6)) == pytest.approx(0.4)
    assert escape_share(replace(shape, nnz_per_iteration=2)) == pytest.approx(0.2)
    assert escape_share(replace(shape, escape_share=())) == 0.0


def test_a_shape_without_a_schedule_adds_its_instruction_path():
    from sparsescope.model.predict import instruction_path_ns

    rates = replace(_rates(), sm_clock_mhz=1980.0)
    xg = _l2_hits()
    tile = KernelShape(kernel="k", decomposition="nnz", block_threads=256, grid_blocks=1,
                       rounds_per_iteration=2, loop_instructions=364)
    # 364 instructions x 4 cycles at 1,980 MHz: 735.4 ns, on top of 350 + 150 ns of rounds
    assert instruction_path_ns(tile, rates) == pytest.approx(364 * 4 / 1.98)
    assert iteration_ns(tile, rates, xg)[0] == pytest.approx(500.0 + 364 * 4 / 1.98)
    # a walked schedule, no SASS count, or no clock: nothing added
    assert instruction_path_ns(replace(tile, issue_schedule=CHAIN), rates) == 0.0
    assert instruction_path_ns(replace(tile, loop_instructions=0), rates) == 0.0
    assert instruction_path_ns(tile, _rates()) == 0.0
    # a staged kernel's instructions issue while its next copy is in flight
    assert instruction_path_ns(replace(tile, staged=True), rates) == 0.0


#: CHAIN with the instructions the warp issues up to each step: one each.
COUNTED = IssueSchedule(steps=(IssueStep(load=0, issued=1), IssueStep(load=1, reads=(0,), issued=1),
                               IssueStep(reads=(1,), issued=1)), kinds=(STREAM, GATHER))


def test_the_walk_charges_each_instruction_its_issue_interval():
    # 5 ns an instruction: c leaves at 5 (arrives 355), the gather issues at 355 (arrives
    # 505), the add at 505; the next iteration's c leaves at 510: 505 ns an iteration
    walk = COUNTED.walk(350.0, 150.0, issue_ns=5.0)
    assert walk.iteration_ns == pytest.approx(505.0)
    assert (walk.stream_stops, walk.gather_stops) == (1.0, 1.0)
    assert COUNTED.instructions == 3
    # no interval, or steps that count no instructions: the walk of the loads alone
    assert COUNTED.walk(350.0, 150.0).iteration_ns == pytest.approx(500.0)
    assert CHAIN.walk(350.0, 150.0, issue_ns=5.0).iteration_ns == pytest.approx(500.0)
    # the stops a warp makes are counted at unit latencies without issue time
    assert COUNTED.stops() == CHAIN.stops()


def test_instructions_issued_while_a_load_is_in_flight_are_hidden_until_they_outlast_it():
    # LDG c; ten independent instructions; FADD s, c (11 issued up to it); 4 after it (tail)
    body = IssueSchedule(steps=(IssueStep(load=0, issued=1), IssueStep(reads=(0,), issued=11)),
                         kinds=(STREAM,), tail=4)
    assert body.instructions == 16
    # 5 ns each: c arrives at 5 + 350; the add waits for it (its 55 ns of issue hidden), the
    # tail adds 20 ns: 355 + 20 = 375 ns an iteration, one stream stop
    walk = body.walk(350.0, 150.0, issue_ns=5.0)
    assert walk.iteration_ns == pytest.approx(375.0)
    assert walk.stream_stops == 1.0
    # 40 ns each: the add's 11 instructions (440 ns) outlast c's 350 ns: no stop, 16 x 40 ns
    walk = body.walk(350.0, 150.0, issue_ns=40.0)
    assert walk.iteration_ns == pytest.approx(640.0)
    assert walk.stream_stops == 0.0


def test_iteration_ns_charges_the_dependent_issue_cycles_at_the_sm_clock():
    from sparsescope.model.predict import DEPENDENT_ISSUE_CYCLES, issue_interval_ns

    rates = replace(_rates(), sm_clock_mhz=2000.0)
    # 4 cycles at 2,000 MHz: 2 ns an instruction; none without a clock
    assert DEPENDENT_ISSUE_CYCLES == 4
    assert issue_interval_ns(rates) == pytest.approx(2.0)
    assert issue_interval_ns(_rates()) == 0.0
    shape = KernelShape(kernel="k", decomposition="rows", block_threads=256, grid_blocks=1,
                        issue_schedule=COUNTED)
    # c leaves at 2 (arrives 352), the gather at 352 (arrives 502), the add at 502: 502 ns
    assert iteration_ns(shape, rates, _l2_hits())[0] == pytest.approx(502.0)
    assert iteration_ns(shape, _rates(), _l2_hits())[0] == pytest.approx(500.0)


def test_the_own_kernels_schedules_count_the_instructions_of_their_walked_body():
    """The SASS-read schedules (``sass.issue_order``) carry each step's instructions: SELL's
    8-step loop runs every block each iteration, so its walk counts all of the loop's
    instructions; delta16's leaves out the escape blocks the loop goes around."""
    from sparsescope.sass.kernel_shape import kernel_mlps_of, sass_tools_available

    if not sass_tools_available():
        pytest.skip("no CUDA compiler and cuobjdump here: the own kernels' SASS cannot be read")
    sell, delta = "spmv_sell<float, 0, 1, 1, 4, 6, 1>", "spmv_sell<float, 1, 1, 1, 4, 6, 1>"
    mlps = kernel_mlps_of("spmv_own.cu", (sell, delta), "sm_90")
    counts = {k: (m.schedule.instructions, m.loop_instructions) for k, m in mlps.items()}
    assert counts[sell][0] == counts[sell][1] > 100
    assert 0 < counts[delta][0] < counts[delta][1]
    assert all(step.issued >= 1 for step in mlps[sell].schedule.steps)
