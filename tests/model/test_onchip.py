"""The SM-side terms of the time model (``model.onchip``): loop iterations a warp runs, the warp
instructions it issues (read from SASS), the issue time, and the register-spill bytes; and the
loop counts (``model.iterations``) they share with the memory terms."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.model.iterations import kernel_row_lengths
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.onchip import (
    issue_ms,
    knows_instructions,
    loop_issued_instructions,
    sm_work,
    spill_bytes,
    split_iterations,
    warp_instructions,
    warp_iterations,
)
from sparsescope.model.predict import DeviceRates


def shape(**kw) -> KernelShape:
    base = dict(kernel="k", decomposition="rows", block_threads=64, grid_blocks=1,
                nnz_per_iteration=16, remainder_step=1)
    return KernelShape(**{**base, **kw})


def indptr_of(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


RATES = DeviceRates(
    name="test GPU", sm_count=132, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 20, dram_bw_gb_s=100.0, l2_bw_gb_s=400.0, dram_latency_ns=400.0,
    l2_latency_ns=200.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=3.0, schedulers_per_sm=4, sm_clock_mhz=1000.0)


@pytest.mark.parametrize("length, threads, step, rs, expected", [
    (37, 1, 16, 1, (2, 5)),     # 37 = 2 x 16 + 5 singles
    (37, 1, 16, 0, (3, 0)),     # no remainder loop: ceil(37 / 16)
    (37, 1, 16, 16, (3, 0)),    # a remainder step >= the step is no remainder loop
    (37, 2, 16, 1, (1, 3)),     # chunk 32: 1 main, 5 left over 2 lanes: ceil(5 / 2) = 3
    (37, 1, 16, 4, (2, 2)),     # 5 left, 4 at a time: 2
    (32, 1, 16, 1, (2, 0)),
    (0, 1, 16, 1, (0, 0)),
])
def test_split_iterations(length, threads, step, rs, expected):
    main, rem = split_iterations(np.array([length]), threads, step, rs)
    assert (int(main[0]), int(rem[0])) == expected


@pytest.mark.parametrize("length, threads, step, rs, peeled, expected", [
    # csr_scalar: 16 a step, straight-line copies of 8 and 4, then singles
    (37, 1, 16, 1, 12, (2, 2)),   # tail 5: the 4-copy, 1 single
    (47, 1, 16, 1, 12, (2, 5)),   # tail 15: the 8- and 4-copies, 3 singles
    (32, 1, 16, 1, 12, (2, 0)),
    (3, 1, 16, 1, 12, (0, 3)),
    # spmv_sell UNROLL 4 as a 2 x 4 loop, its odd 4-step peeled, every step guarded
    (19, 1, 8, 0, 4, (2, 1)),     # 19 -> 5 steps of 4: 2 loop iterations and the copy
    (24, 1, 8, 0, 4, (3, 0)),
    (1, 1, 8, 0, 4, (0, 1)),
    (0, 1, 8, 0, 4, (0, 0)),
    (19, 2, 8, 0, 4, (1, 1)),     # 10 a lane -> 12: 1 iteration and the copy
    (37, 1, 16, 1, 16, (2, 5)),   # peeled a whole step or more: not a tail copy, ignored
])
def test_split_iterations_with_peeled_copies(length, threads, step, rs, peeled, expected):
    main, rem = split_iterations(np.array([length]), threads, step, rs, peeled)
    assert (int(main[0]), int(rem[0])) == expected
    # where every step is guarded, loop and copies together take the steps of old
    if not rs:
        assert int(main[0] + rem[0]) == -(-length // (threads * step))


def test_warp_iterations_take_each_warps_longest_row():
    # 1 thread a row: 32 rows a warp. Warp 0 holds rows 37 and 20 long (and 30 rows of 1);
    # warp 1 rows of 16: main max(2, 1, 0) = 2, remainder max(5, 4, 1) = 5; warp 1 (1, 0)
    lengths = [37, 20] + [1] * 30 + [16] * 32
    main, rem = warp_iterations(indptr_of(lengths), shape())
    assert main.tolist() == [2, 1] and rem.tolist() == [5, 0]


def test_warp_iterations_of_a_vector_kernel_group_fewer_rows_per_warp():
    # 8 lanes a row: 4 rows a warp; chunk 8 x 16 = 128: a 300-row is 2 main + ceil(44 / 8) = 6
    lengths = [300, 0, 0, 0, 10, 10, 10, 10]
    main, rem = warp_iterations(indptr_of(lengths), shape(threads_per_row=8))
    assert main.tolist() == [2, 0] and rem.tolist() == [6, 2]


def test_warp_iterations_of_a_nonzero_split_are_even():
    # 2 blocks of 2 warps: 4 warps x 32 threads = 128 threads for 1,000 nonzeros: 8 a thread,
    # 8 per iteration -> 1 main iteration, no remainder, for every warp
    s = shape(decomposition="nnz", grid_blocks=2, nnz_per_iteration=8, remainder_step=1)
    main, rem = warp_iterations(indptr_of([1000]), s)
    assert main.tolist() == [1, 1, 1, 1] and rem.tolist() == [0, 0, 0, 0]


def test_warp_instructions_docstring_hand_check():
    iterations = (np.array([2, 1]), np.array([5, 0]))
    s = shape(loop_instructions=89, remainder_instructions=17, other_instructions=145)
    # (2 x 89 + 5 x 17 + 145) + (89 + 145) = 408 + 234 = 642
    assert warp_instructions(indptr_of([1]), s, iterations) == 642.0


def test_a_staged_loop_stages_on_all_but_a_warps_last_iteration():
    iterations = (np.array([5, 1]), np.array([0, 0]))
    s = shape(loop_instructions=405, other_instructions=125, staged=True,
              staged_path=(145, 124))
    # (5 x 145 + 4 x 124 + 125) + (145 + 0 + 125) = 1,346 + 270 = 1,616
    assert warp_instructions(indptr_of([1]), s, iterations) == 1616.0
    assert loop_issued_instructions(s) == 269.0          # an iteration that stages
    # without the path read: the whole body every iteration
    plain = shape(loop_instructions=405, other_instructions=125, staged=True)
    assert warp_instructions(indptr_of([1]), plain, iterations) == 6 * 405 + 2 * 125


def test_warp_instructions_per_nonzero_for_a_library_kernel():
    s = shape(decomposition="nnz", instructions_per_nonzero=1.82)
    assert warp_instructions(indptr_of([600, 400]), s) == pytest.approx(1820.0)
    assert knows_instructions(s) and not knows_instructions(shape())
    assert warp_instructions(indptr_of([600, 400]), shape()) == 0.0


def test_issue_time_hand_check():
    # 1.32e9 / (132 x 4 x 1e9 per s) = 2.5 ms
    assert issue_ms(1.32e9, 132, 4, 1000.0) == pytest.approx(2.5)


def test_spill_bytes_hand_check():
    # 3 warps of 4 iterations, 84 B stored a thread an iteration: 12 x 32 x 84
    s = shape(local_store_bytes_per_iteration=84)
    assert spill_bytes(s, np.array([4, 4, 4])) == 32_256.0
    assert spill_bytes(shape(), np.array([4, 4, 4])) == 0.0


def test_sm_work_gives_the_issue_term_of_the_device_clock():
    # one warp of 32 rows of 16: 1 main iteration, no remainder: 100 + 50 = 150 instructions
    s = shape(loop_instructions=100, remainder_instructions=10, other_instructions=50,
              local_store_bytes_per_iteration=8)
    work = sm_work(indptr_of([16] * 32), s, RATES)
    assert work.instructions == 150.0 and work.spill_bytes == 1 * 32 * 8
    assert work.term.name == "issue"
    assert work.term.time_ms == pytest.approx(150 / (132 * 4 * 1e9) * 1e3)
    assert "132 SMs x 4 schedulers" in work.term.formula


def test_sm_work_without_a_clock_or_instructions_has_no_term():
    import dataclasses

    s = shape(loop_instructions=100)
    no_clock = dataclasses.replace(RATES, sm_clock_mhz=None)
    assert sm_work(indptr_of([16] * 32), s, no_clock).term is None
    empty = sm_work(indptr_of([16] * 32), shape(), RATES)
    assert (empty.instructions, empty.spill_bytes, empty.term) == (0.0, 0.0, None)


def test_kernel_row_lengths_count_a_block_formats_entries():
    # a 1 x B format storing 1.5 entries a nonzero: rows [4, 1] walk [6, 2] entries
    s = shape(entries_per_nonzero=1.5)
    assert kernel_row_lengths(indptr_of([4, 1]), s).tolist() == [6, 2]
    # then cut (at 4 entries) and sorted in windows of 4 as the row split does
    cut = shape(entries_per_nonzero=1.5, split_long_rows=4, sort_window=4)
    assert kernel_row_lengths(indptr_of([4, 1]), cut).tolist() == [4, 2, 2]
    # the nonzero split takes the entries as they are
    assert kernel_row_lengths(indptr_of([4, 1]), shape(decomposition="nnz",
                                                       entries_per_nonzero=1.5,
                                                       split_long_rows=4)).tolist() == [6, 2]
