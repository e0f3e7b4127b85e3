"""The model's work budget (``model.work_sample``, issue 35): above it the row terms run on a
stratified sample of whole rows, scaled to the whole matrix; below it nothing changes. Checked
by hand-computed samples, by the work done (rows sampled, passes made) and by the sampled
predictions against the whole computation on matrices of a few hundred thousand nonzeros."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.backends.select import matrix_statistics
from sparsescope.context import named_gpu
from sparsescope.context.predict import forget_plans
from sparsescope.matrices import Matrix, generate
from sparsescope.model import iterations, work_sample
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.row_windows import csr_refetches
from sparsescope.model.work_sample import (
    WINDOW_ROWS,
    sample_for,
    stand_in,
    work_budget,
)
from sparsescope.whatif import what_if

BACKENDS = ["cuda-csr-vector", "cuda-spmv-sell", "cuda-spmv-adaptive", "cuda-spmv-merge",
            "cupy-cusparse-i32"]


@pytest.fixture(scope="module")
def h100():
    return named_gpu("H100", use_store=False, sass=False)


@pytest.fixture(scope="module")
def powerlaw():
    return Matrix("powerlaw-150000-600000", generate("powerlaw", 150_000, 600_000, seed=3),
                  "generated", kind="powerlaw")


@pytest.fixture(scope="module")
def banded():
    return Matrix("banded-100000-800000", generate("banded", 100_000, 800_000, seed=3),
                  "generated", kind="banded")


def test_work_sample_by_hand():
    # windows of 32 rows: nine of rows of 1 nonzero (s = 1), the tenth of 31 such and the
    # longest row, of 68 (s = 68, 99 nonzeros); budget 150: n = round(150 x 10 / 387) = 4, the
    # tenth taken whole (68 > 77 / 4), n' = round(51 / 32) = 2 of the nine others from strata of
    # 5 and 4 windows, one each
    lengths = [1] * (9 * 32) + [1] * 31 + [68]
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    sample = work_sample.work_sample(indptr, 150, window_rows=32, min_windows=1)
    assert (sample.windows, sample.certain_windows, sample.strata) == (3, 1, 2)
    weights = sample.row_weight.reshape(-1, 32)[:, 0]
    assert sorted(weights.tolist()) == [1, 4, 5]
    assert weights.sum() == 10                                   # the matrix's 10 windows
    assert 319 in sample.rows.tolist() and sample.row_weight[-1] == 1  # longest row, whole
    assert sample.sample_nnz == 2 * 32 + 99
    assert np.array_equal(sample.starts, indptr[sample.rows])
    assert np.array_equal(np.diff(sample.indptr), np.diff(indptr)[sample.rows])


def test_stand_in_by_hand():
    # running weights 1, 3.5 -> rounded 1, 4: counts 1 and 3
    assert stand_in(np.array([5, 7]), np.array([1.0, 2.5])).tolist() == [5, 7, 7, 7]
    assert stand_in(np.array([4, 6, 8]), np.ones(3)).tolist() == [4, 6, 8]


def test_no_sample_at_or_below_the_budget_or_without_one(powerlaw):
    indptr = powerlaw.csr.indptr
    with work_budget(600_000):
        assert sample_for(indptr) is None             # nnz == budget: the whole matrix
    with work_budget(None):
        assert sample_for(indptr) is None
    with work_budget(60_000):
        sample = sample_for(indptr)
        assert sample is not None and sample is sample_for(indptr)   # drawn once
    # too few windows to sample: 20 windows of 1,024 rows
    small = generate("powerlaw", 20 * WINDOW_ROWS, 400_000, seed=1)
    with work_budget(10_000):
        assert sample_for(small.indptr) is None


def test_the_sample_rows_and_weights(powerlaw):
    indptr = powerlaw.csr.indptr
    with work_budget(60_000):
        sample = sample_for(indptr)
    windows = -(-150_000 // WINDOW_ROWS)                   # 147
    assert sample.total_windows == windows
    # whole windows: every sampled row's window has all of its rows in the sample
    first = sample.rows[::WINDOW_ROWS]
    assert np.all(first % WINDOW_ROWS == 0)
    assert sample.rows.size == sum(min(WINDOW_ROWS, 150_000 - s) for s in first.tolist())
    # the weights of the windows add up to the matrix's windows; every weight >= 1
    per_window = sample.row_weight[::WINDOW_ROWS]
    assert per_window.sum() == pytest.approx(windows) and per_window.min() >= 1
    # the longest row is in, with weight 1; the sample's nonzeros near the budget
    longest = int(np.argmax(np.diff(indptr)))
    where = int(np.searchsorted(sample.rows, longest))
    assert sample.rows[where] == longest and sample.row_weight[where] == 1
    assert 32 <= sample.windows < windows                 # at least MIN_WINDOWS, not all
    assert sample.sample_nnz < 0.7 * powerlaw.nnz
    # the weighted rows and nonzeros are the matrix's (Horvitz-Thompson)
    assert np.dot(sample.row_weight, np.ones(sample.rows.size)) == pytest.approx(150_000,
                                                                                 rel=0.01)
    assert sample.as_dict()["sample_rows"] == sample.rows.size


def test_the_same_seed_draws_the_same_rows(powerlaw):
    indptr = powerlaw.csr.indptr
    a = work_sample.work_sample(indptr, 100_000, seed=0)
    b = work_sample.work_sample(indptr, 100_000, seed=0)
    c = work_sample.work_sample(indptr, 100_000, seed=1)
    assert np.array_equal(a.rows, b.rows) and not np.array_equal(a.rows, c.rows)


def _shape(**kw) -> KernelShape:
    base = dict(kernel="k", block_threads=256, threads_per_row=1, nnz_per_iteration=1,
                grid_blocks=1, decomposition="rows")
    return KernelShape(**{**base, **kw})


@pytest.mark.parametrize("kw", [dict(), dict(threads_per_row=32, block_threads=128),
                                dict(split_long_rows=64, sort_window=256)])
def test_sampled_block_iterations_stand_for_the_kernel(powerlaw, kw):
    indptr = powerlaw.csr.indptr
    shape = _shape(**kw)
    with work_budget(None):
        whole = iterations.block_iterations(indptr, shape)
    before = iterations.ROW_LENGTHS.computed
    with work_budget(60_000):
        sampled = iterations.block_iterations(indptr, shape)
        sample = sample_for(indptr)
        lengths, _ = iterations.sampled_row_lengths(indptr, shape, sample)
    # the rows walked are the sample's (and its cut pieces), not the matrix's 150,000
    assert lengths.size < 150_000 / 3 and iterations.ROW_LENGTHS.computed <= before + 1
    assert sampled.size == pytest.approx(whole.size, rel=0.03)
    assert sampled.max() == whole.max()                  # the longest row's block, taken whole
    assert sampled.sum() == pytest.approx(whole.sum(), rel=0.02)


def test_sampled_refetches_and_padding(powerlaw):
    indptr = powerlaw.csr.indptr
    with work_budget(None):
        whole = csr_refetches(indptr, 1, (4, 16, 8, 4), 4, 4)
        padding = matrix_statistics(powerlaw.csr).sell_padding_ratio
    with work_budget(60_000):
        sampled = csr_refetches(indptr, 1, (4, 16, 8, 4), 4, 4)
        sampled_padding = matrix_statistics(powerlaw.csr).sell_padding_ratio
    assert whole > 0 and sampled == pytest.approx(whole, rel=0.02)
    assert sampled_padding == pytest.approx(padding, rel=0.02)


@pytest.mark.parametrize("fixture", ["powerlaw", "banded"])
def test_sampled_predictions_within_2_percent(h100, fixture, request):
    matrix = request.getfixturevalue(fixture)
    forget_plans()
    with work_budget(None):
        whole = {c.backend: c for c in what_if([matrix], BACKENDS, h100, sass=False).cases}
    with work_budget(60_000):
        sampled = {c.backend: c for c in what_if([matrix], BACKENDS, h100, sass=False).cases}
        rows = sample_for(matrix.csr.indptr).rows.size
    forget_plans()
    assert rows < matrix.rows / 2                          # the work: a sample of the rows
    for name in BACKENDS:
        got, full = sampled[name], whole[name]
        assert got.prediction.predicted_ms == pytest.approx(full.prediction.predicted_ms,
                                                            rel=0.02), name
        words = " ".join(got.assumptions)
        assert "stratified row sample" in words and f"of {matrix.nnz:,} nonzeros" in words
        assert "stratified row sample" not in " ".join(full.assumptions)


def test_predictions_below_the_budget_are_the_whole_computations(h100, powerlaw):
    forget_plans()
    with work_budget(None):
        exact = [c.prediction for c in what_if([powerlaw], BACKENDS, h100, sass=False).cases]
    forget_plans()
    with work_budget(600_000):
        same = [c.prediction for c in what_if([powerlaw], BACKENDS, h100, sass=False).cases]
    forget_plans()
    assert [p.predicted_ms for p in same] == [p.predicted_ms for p in exact]
    assert [p.terms for p in same] == [p.terms for p in exact]
    assert [p.inputs for p in same] == [p.inputs for p in exact]


def test_block_maxima_for_a_loop_count_of_its_own(powerlaw):
    # rows [1, 9, 2, 2], 2 rows a warp (16 lanes a row), 1 warp a block -> [9, 2]
    shape = _shape(threads_per_row=16, block_threads=32)
    assert iterations.block_maxima(np.array([0, 1, 10, 12, 14]), shape,
                                   lambda lengths: lengths).tolist() == [9, 2]
    # a per-row count of its own (a CSR kernel's windows) gets the sample the same way
    def windows(lengths):
        return lengths // 16 + (lengths % 16) * 0.5

    indptr = powerlaw.csr.indptr
    with work_budget(None):
        whole = iterations.block_maxima(indptr, _shape(), windows)
    with work_budget(60_000):
        sampled = iterations.block_maxima(indptr, _shape(), windows)
    assert sampled.size == pytest.approx(whole.size, rel=0.03) and sampled.max() == whole.max()
    assert sampled.sum() == pytest.approx(whole.sum(), rel=0.02)
