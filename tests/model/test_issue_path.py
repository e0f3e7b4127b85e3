"""The issue term counts what a loop iteration issues, not the loop body's size
(``model.onchip.loop_issued_instructions``): the blocks every iteration runs (the issue
schedule's path) plus, on the declared share of iterations that take them, the blocks a warp
branches around (delta16's escape columns)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sparsescope.model.issue_schedule import GATHER, STREAM, IssueSchedule, IssueStep
from sparsescope.model.kernel_shape import KernelShape, escape_iteration_share
from sparsescope.model.onchip import loop_issued_instructions, sm_work, warp_instructions
from sparsescope.model.predict import DeviceRates, escape_share

#: A walked path of 40 + 30 + 11 instructions up to its steps and a tail of 10: 91 in all.
PATH = IssueSchedule(steps=(IssueStep(load=0, issued=40), IssueStep(load=1, reads=(0,), issued=30),
                            IssueStep(reads=(1,), issued=11)),
                     kinds=(STREAM, GATHER), tail=10)

#: One warp of 1 thread a row, 4 entries an iteration, a 139-instruction body, 115 outside it.
DELTA16_LIKE = KernelShape(kernel="k", decomposition="rows", block_threads=32, grid_blocks=1,
                           nnz_per_iteration=4, loop_instructions=139, other_instructions=115,
                           issue_schedule=PATH)

RATES = DeviceRates(
    name="test GPU", sm_count=132, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 20, dram_bw_gb_s=100.0, l2_bw_gb_s=400.0, dram_latency_ns=400.0,
    l2_latency_ns=200.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=3.0, schedulers_per_sm=4, sm_clock_mhz=1000.0)


def rows_of(length: int, rows: int = 32) -> np.ndarray:
    return np.arange(rows + 1, dtype=np.int64) * length


def test_the_schedule_counts_its_path():
    assert PATH.instructions == 91


def test_an_iteration_issues_its_path_and_the_escapes_share_of_the_rest():
    # docstring hand check: 91 + 0.25 x (139 - 91) = 103; no escapes: 91
    escaping = dataclasses.replace(DELTA16_LIKE, escape_share=((4, 0.25),))
    assert loop_issued_instructions(escaping) == pytest.approx(103.0)
    assert loop_issued_instructions(DELTA16_LIKE) == pytest.approx(91.0)


def test_without_a_path_the_body_is_issued_whole():
    # staged (cp.async: no schedule walked), no schedule, or a schedule that counts nothing
    assert loop_issued_instructions(dataclasses.replace(DELTA16_LIKE, staged=True)) == 139.0
    assert loop_issued_instructions(dataclasses.replace(DELTA16_LIKE, issue_schedule=None)) \
        == 139.0
    uncounted = IssueSchedule(steps=tuple(dataclasses.replace(s, issued=0) for s in PATH.steps),
                              kinds=PATH.kinds)
    assert loop_issued_instructions(
        dataclasses.replace(DELTA16_LIKE, issue_schedule=uncounted)) == 139.0


def test_warp_instructions_and_the_issue_term_count_the_issued_path():
    # 32 rows of 8 entries: one warp, 8 / 4 = 2 main iterations, no remainder:
    # 2 x 91 + 115 = 297 (the body count gave 2 x 139 + 115 = 393)
    indptr = rows_of(8)
    assert warp_instructions(indptr, DELTA16_LIKE) == pytest.approx(297.0)
    escaping = dataclasses.replace(DELTA16_LIKE, escape_share=((4, 0.25),))
    assert warp_instructions(indptr, escaping) == pytest.approx(2 * 103 + 115)
    # issue = 297 / (132 SMs x 4 schedulers x 1,000 MHz) = 5.625e-10 s
    work = sm_work(indptr, DELTA16_LIKE, RATES)
    assert work.instructions == pytest.approx(297.0)
    assert work.term.time_ms == pytest.approx(297 / 5.28e11 * 1e3)


def test_escape_share_picks_the_declared_size_the_iteration_reads():
    # docstring hand check: ((4, 0.1), (8, 0.3)) -> 0.1 at 6 and 2 entries, 0.3 at 8
    declared = dataclasses.replace(DELTA16_LIKE, escape_share=((4, 0.1), (8, 0.3)))
    for entries, share in ((6, 0.1), (2, 0.1), (8, 0.3)):
        shaped = dataclasses.replace(declared, nnz_per_iteration=entries)
        assert escape_iteration_share(shaped) == share
        assert escape_share(shaped) == share   # the iteration time reads the same share
    assert escape_iteration_share(DELTA16_LIKE) == 0.0


def test_compiled_delta16_loop_issues_less_than_its_body():
    # the SASS of delta16's SELL loop (this host's compiler): the escape column's blocks lie
    # off the every-iteration path, so an analog without escapes issues the path alone
    from sparsescope.sass.kernel_shape import kernel_mlp_of, sass_tools_available

    if not sass_tools_available():
        pytest.skip("no CUDA compiler and cuobjdump here to read the SASS")
    mlp = kernel_mlp_of("spmv_own.cu", "spmv_sell<float, 1, 1, 1, 4, 6, 1>")
    assert mlp is not None and mlp.schedule is not None
    assert 0 < mlp.schedule.instructions < mlp.loop_instructions
    shape = dataclasses.replace(DELTA16_LIKE, loop_instructions=mlp.loop_instructions,
                                issue_schedule=mlp.schedule)
    assert loop_issued_instructions(shape) == mlp.schedule.instructions
