"""The model's CPU time on large matrices (issue 35): what it keeps per matrix, and the passes
made cheaper, pinned by equality and by work counts, never by a wall time.

- every prediction of every GPU backend the same, bit for bit, with the model's memos on and
  off (``model.last_matrix.answers_kept``) and with its x-gather parts side by side or one
  after another, on small awkward matrices (empty rows, one huge row, 1 x 1, one row);
- the longest block's L1 lines (``model.l1_wavefronts``) found once for every kernel that walks
  the same lanes, and its lane layout (a sort of the few windows the block lies in) equal to a
  sort of the whole matrix;
- different questions of one matrix answered side by side by planning threads, the same
  question once; the answers released with their matrix;
- the row of each sampled nonzero (``model.xgather._rows_of``) the one a search finds.
"""

from __future__ import annotations

import dataclasses
import gc
import threading

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.context import rates_context
from sparsescope.context.predict import forget_plans
from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices import Matrix, generate
from sparsescope.model import l1_wavefronts, side_by_side, xgather
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.last_matrix import LastMatrixAnswers, answers_kept
from sparsescope.model.predict import device_rates
from sparsescope.model.work_sample import work_budget
from sparsescope.whatif import expand_backends, what_if

SELL = KernelShape(kernel="spmv_sell", decomposition="rows", block_threads=256, grid_blocks=1,
                   threads_per_row=1, nnz_per_iteration=4, rounds_per_iteration=2,
                   setup_rounds=1, split_long_rows=64, sort_window=256)


def _csr(rows: list[list[int]], cols: int) -> sp.csr_matrix:
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.array([c for r in rows for c in r], dtype=np.int32)
    return sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(len(rows), cols))


def _awkward() -> dict[str, sp.csr_matrix]:
    """Empty rows, one row holding most entries, 1 x 1, one row, and a power law."""
    rng = np.random.default_rng(7)
    sparse_rows = [sorted(rng.choice(300, 3, replace=False).tolist()) if r % 9 == 0 else []
                   for r in range(300)]
    huge = [list(range(0, 3000, 2))] + [[r] for r in range(1, 700)]
    return {"empty-rows": _csr(sparse_rows, 300), "huge-row": _csr(huge, 3000),
            "one-by-one": _csr([[0]], 1), "one-row": _csr([list(range(0, 900, 3))], 900),
            "powerlaw": generate("powerlaw", 3000, 40_000, seed=2)}


def _predictions(result) -> dict:
    """Every case's prediction, as plain values (the time, the limiter, every term and
    input), or why it is not modelled."""
    out = {}
    for c in result.cases:
        p = c.prediction
        out[(c.matrix, c.backend)] = (
            c.not_modelled if p is None else
            (p.predicted_ms, p.limiter, tuple((t.name, t.time_ms, t.formula) for t in p.terms),
             tuple(sorted(p.inputs.items()))))
    return out


@pytest.fixture(scope="module")
def h200():
    """The H200 with the ceilings measured in the seed6 run of 2026-11-28 (results/h200): the
    L2 bandwidth and gather rates that the datasheet lacks bring in the L2 term and the
    format's memory floor."""
    ceilings = MeasuredCeilings(
        device="NVIDIA H200", copy_bw_gb_s=4248.2, read_bw_gb_s=4356.0, l2_bw_gb_s=8494.3,
        l2_write_bw_gb_s=4203.0, dram_latency_ns=337.3, l2_latency_ns=145.3,
        fp32_gflops=60346.4, dram_gather_gsectors_s=39.72, l2_gather_gsectors_s=152.39,
        launch_us=2.688, call_us=3.488, next_launch_us=1.568, flush_writeback_share=0.39,
        library_call_us={"nvmath": 7.65, "cupy": 10.69, "torch": 11.17})
    spec = get_spec("H200")
    return rates_context(device_rates(spec, ceilings), spec=spec, origin="rates: measured")


def test_predictions_are_the_same_with_and_without_the_memos(h200):
    backends = expand_backends(["all"])
    matrices = [Matrix(n, m, "generated", kind="test") for n, m in _awkward().items()]
    forget_plans()
    kept = _predictions(what_if(matrices, ["all"], h200, sass=False))
    assert len(kept) == len(matrices) * len(backends)
    # every backend on its own, nothing kept between or within them
    fresh = {}
    with answers_kept(False):
        for matrix in matrices:
            for name in backends:
                forget_plans()
                fresh.update(_predictions(what_if([matrix], [name], h200, sass=False)))
    assert fresh == kept
    # some of them are real predictions, not all "not modelled", with the format's floor
    done = [v for v in kept.values() if isinstance(v, tuple)]
    assert len(done) >= 3 * len(backends)
    assert sum("gather_floor_ms" in dict(v[3]) for v in done) >= 3 * len(backends)


def test_predictions_are_the_same_above_the_work_budget_and_with_parts_side_by_side(
        h200, monkeypatch):
    # a work budget below the matrix's nonzeros: the row terms on a row sample, the L1 on two
    # SMs; the x-gather parts on threads from 1,000 nonzeros
    matrix = [Matrix("powerlaw", _awkward()["powerlaw"], "generated", kind="powerlaw")]
    names = ["cuda-spmv-sell", "cuda-spmv-blocked16", "cuda-csr-vector", "cuda-spmv-merge",
             "cupy-cusparse-i32"]
    with work_budget(10_000):
        forget_plans()
        with answers_kept(False):
            serial = _predictions(what_if(matrix, names, h200, sass=False))
        forget_plans()
        monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_NNZ", 1_000)
        before = side_by_side.COUNTS["parallel"]
        parallel = _predictions(what_if(matrix, names, h200, sass=False))
    assert side_by_side.COUNTS["parallel"] > before
    assert parallel == serial
    assert all(isinstance(v, tuple) for v in serial.values())


def test_the_longest_block_is_found_once_for_every_kernel_that_walks_its_lanes():
    m = _awkward()["powerlaw"]
    forget_plans()
    before = l1_wavefronts.WAVEFRONTS.computed
    first = l1_wavefronts.longest_block_wavefronts(m.indptr, m.indices, SELL)
    # a kernel of another name and launch bounds, the same lanes and steps: found kept
    same = dataclasses.replace(SELL, kernel="spmv_sell_dae", registers=40, grid_blocks=9)
    assert l1_wavefronts.longest_block_wavefronts(m.indptr, m.indices, same) is first
    assert l1_wavefronts.WAVEFRONTS.computed - before == 2   # the block, its warps' maxima
    # another step: its own block, the same lanes' maxima
    other = dataclasses.replace(SELL, nnz_per_iteration=8)
    l1_wavefronts.longest_block_wavefronts(m.indptr, m.indices, other)
    assert l1_wavefronts.WAVEFRONTS.computed - before == 3
    # without the memo: computed again, equal
    with answers_kept(False):
        again = l1_wavefronts.longest_block_wavefronts(m.indptr, m.indices, SELL)
    assert again == first and again is not first


@pytest.mark.parametrize("name", ["powerlaw", "huge-row", "empty-rows"])
def test_every_lane_layout_asked_in_a_row_is_answered_as_on_its_own(name):
    # kernels that share some of what the kept answers are keyed by and differ in the rest
    m = _awkward()[name]
    shapes = [dataclasses.replace(SELL, split_long_rows=cut, sort_window=window,
                                  block_threads=threads, nnz_per_iteration=step,
                                  block_width=width, entries_per_nonzero=epn)
              for cut in (0, 16) for window in (0, 256) for threads in (64, 256)
              for step in (1, 4) for width, epn in ((1, 1.0), (2, 1.5))]
    asked = [(s, 4) for s in shapes] + [(s, 8) for s in shapes[::5]]
    forget_plans()
    kept = [l1_wavefronts.longest_block_wavefronts(m.indptr, m.indices, s, vb)
            for s, vb in asked]
    with answers_kept(False):
        alone = [l1_wavefronts.longest_block_wavefronts(m.indptr, m.indices, s, vb)
                 for s, vb in asked]
    assert kept == alone
    assert len({k for k in kept}) > 8   # the layouts differ: the answers do too


def _lanes_by_whole_sort(indptr: np.ndarray, shape: KernelShape):
    """The lane layout by its definition: every row cut, then one stable sort of the whole
    matrix by (window, -entries)."""
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    if shape.entries_per_nonzero != 1.0:
        lengths = np.ceil(lengths * shape.entries_per_nonzero).astype(np.int64)
    rows, firsts, entries = [], [], []
    for r, n in enumerate(lengths.tolist()):
        piece = shape.split_long_rows or max(n, 1)
        for k in range(max(1, -(-n // piece))):
            rows.append(r)
            firsts.append(k * piece)
            entries.append(min(n - k * piece, piece))
    rows, firsts, entries = (np.array(a, dtype=np.int64) for a in (rows, firsts, entries))
    if shape.sort_window > 1:
        order = np.lexsort((-entries, np.arange(entries.size) // shape.sort_window))
        rows, firsts, entries = rows[order], firsts[order], entries[order]
    return rows, firsts, entries


@pytest.mark.parametrize("name", sorted(_awkward()))
@pytest.mark.parametrize("cut,window,epn", [(0, 0, 1.0), (64, 256, 1.0), (5, 32, 1.0),
                                            (7, 256, 1.5)])
def test_the_lane_layout_of_a_few_windows_is_the_whole_sort(name, cut, window, epn):
    m = _awkward()[name]
    shape = dataclasses.replace(SELL, split_long_rows=cut, sort_window=window,
                                entries_per_nonzero=epn)
    want = _lanes_by_whole_sort(m.indptr, shape)
    walked = l1_wavefronts._walked_lengths(m.indptr, shape)
    ends = l1_wavefronts._piece_ends(walked, cut)
    lanes = want[0].size
    assert np.array_equal(l1_wavefronts._lane_lengths(walked, shape), want[2])
    # every lane at once, and ranges that start and end inside a window
    for lo, hi in ((0, lanes), (lanes // 3, min(lanes, lanes // 3 + 40)),
                   (max(0, lanes - 7), lanes)):
        got = l1_wavefronts._virtual_rows(walked, ends, shape, lo, hi)
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a, b[lo:hi]), (name, lo, hi)


def test_block_columns_are_the_greedy_blocks():
    def greedy(columns, width):   # one block at the first column no block covers yet
        starts, covered = [], -1
        for c in columns.tolist():
            if c > covered:
                starts.append(c)
                covered = c + width - 1
        return [s + k for s in starts for k in range(width)]

    rng = np.random.default_rng(3)
    for _ in range(300):
        columns = np.unique(rng.integers(0, int(rng.integers(1, 200)), int(rng.integers(0, 40))))
        for width in (2, 3, 8):
            assert l1_wavefronts.block_columns(columns, width).tolist() == greedy(columns,
                                                                                 width)


def test_different_questions_are_answered_side_by_side_and_the_same_once():
    answers = LastMatrixAnswers()
    arrays = (np.arange(10), np.arange(4))
    b_started = threading.Event()
    overlapped = []

    def slow_a():   # holds its question open until another question is being computed
        overlapped.append(b_started.wait(timeout=10))
        return "a"

    def slow_b():
        b_started.set()
        return "b"

    a = threading.Thread(target=lambda: answers.get(arrays, "a", slow_a))
    a.start()
    assert answers.get(arrays, "b", slow_b) == "b"
    a.join(timeout=20)
    assert overlapped == [True]   # "b" was computed while "a" was still being computed
    assert answers.computed == 2 and answers.kept == 2

    # the same question from two threads: computed once, the second waits for it
    release, entered = threading.Event(), threading.Event()
    calls = []

    def once():
        calls.append(1)
        entered.set()
        release.wait(timeout=10)
        return 42

    first = threading.Thread(target=lambda: answers.get(arrays, "c", once))
    first.start()
    entered.wait(timeout=10)
    got = []
    second = threading.Thread(target=lambda: got.append(answers.get(arrays, "c", once)))
    second.start()
    release.set()
    first.join(timeout=20)
    second.join(timeout=20)
    assert got == [42] and calls == [1] and answers.waited == 1 and answers.computed == 3


def test_a_failed_answer_is_not_kept_and_is_asked_again():
    answers = LastMatrixAnswers()
    arrays = (np.arange(3),)

    def fails():
        raise ValueError("no")

    with pytest.raises(ValueError):
        answers.get(arrays, "k", fails)
    assert answers.get(arrays, "k", lambda: 7) == 7 and answers.kept == 1


def test_the_answers_go_with_their_matrix():
    m = generate("banded", 500, 3000, seed=1)
    forget_plans()
    xgather.x_gather(m.indptr, m.indices, cols=m.shape[1], l2_bytes=1 << 20,
                     stream_bytes_per_nnz=0.0)
    assert xgather.X_GATHERS.kept >= 3   # the whole answer and its parts
    del m
    gc.collect()
    assert xgather.X_GATHERS.kept == 0


def test_side_by_side_keeps_the_order_and_raises_the_first_error():
    names = []

    def part(i):
        def run():
            names.append(threading.current_thread().name)
            return i * i
        return run

    assert side_by_side.side_by_side([part(i) for i in range(4)], parallel=True) == [0, 1, 4, 9]
    assert sum(n.startswith("sparsescope-model-part") for n in names) == 3
    assert side_by_side.side_by_side([part(i) for i in range(3)], parallel=False) == [0, 1, 4]

    def bad():
        raise KeyError("part")

    with pytest.raises(KeyError):
        side_by_side.side_by_side([part(1), bad, part(2)], parallel=True)


@pytest.mark.parametrize("name", sorted(_awkward()))
def test_the_row_of_each_sampled_nonzero_is_the_one_a_search_finds(name):
    m = _awkward()[name]
    indptr = np.asarray(m.indptr, dtype=np.int64)
    rows = indptr.size - 1
    rng = np.random.default_rng(5)
    for group in (1, 4, 32):
        units = np.flatnonzero(rng.random(-(-rows // group)) < 0.5)
        first = units * group
        last = np.minimum(first + group, rows)
        pos = xgather._ranges(indptr[first], indptr[last])
        assert np.array_equal(xgather._rows_of(indptr, first, last),
                              np.searchsorted(indptr, pos, side="right") - 1)
        for tpr in (1, 8, 32):
            args = (indptr, m.indices, tpr, 4, 32, None)
            assert xgather._count(pos, *args, row=xgather._rows_of(indptr, first, last)) == \
                xgather._count(pos, *args)
