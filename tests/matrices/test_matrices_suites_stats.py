"""Suites (seed6 sizes, scaling, laziness, awkward cases) and structure statistics."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import scipy.sparse as sp
from _matrices_helpers import assert_canonical

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.matrices import (
    SUITES,
    Matrix,
    compute_stats,
    generate,
    list_suites,
    load_suite,
    suite_entries,
)

SEED6 = {  # name: (rows, nnz, kind), the real SuiteSparse sizes
    "webbase-1M": (1_000_005, 3_105_536, "powerlaw"),
    "cant": (62_451, 4_007_383, "banded"),
    "pwtk": (217_918, 11_634_424, "banded"),
    "ldoor": (952_203, 46_522_475, "banded"),
    "circuit5M": (5_558_326, 59_524_291, "powerlaw"),
    "cage15": (5_154_859, 99_199_551, "scattered"),
}


def test_suite_registry():
    parts = ["population-held-out", "population-tuning", "spmm-population-held-out",
             "spmm-population-tuning"]
    assert list_suites() == ["seed6", "awkward", "dlmc3", "slice003", "population",
                             "spmm-population", *parts]
    assert set(SUITES) == {"seed6", "awkward", "dlmc3", "slice003", "population",
                           "spmm-population", *parts}
    with pytest.raises(UnknownNameError, match="unknown suite 'nope'; known: awkward, dlmc3, "
                                            "population, population-held-out, "
                                            "population-tuning, seed6, slice003, "
                                            "spmm-population, spmm-population-held-out, "
                                            "spmm-population-tuning"):
        suite_entries("nope")
    with pytest.raises(UnknownNameError):
        load_suite("nope")  # raised at once, not on the first next()
    with pytest.raises(UsageError, match=r"scale must be in \(0, 1\]"):
        suite_entries("seed6", scale=0)
    with pytest.raises(UsageError, match=r"got 2"):
        suite_entries("seed6", scale=2)


def test_suite_name_with_entries_names_only_those_in_order():
    picked = suite_entries("seed6#pwtk, cant", scale=0.5)
    assert [e.name for e in picked] == ["pwtk", "cant"]
    assert picked[1] == [e for e in suite_entries("seed6", scale=0.5) if e.name == "cant"][0]
    assert [m.name for m in load_suite("seed6#cant", scale=0.01)] == ["cant"]
    with pytest.raises(UnknownNameError, match="entry of suite 'seed6'.*'nope'"):
        suite_entries("seed6#cant,nope")


def test_seed6_at_scale_one_lists_the_exact_sizes():
    entries = suite_entries("seed6")
    assert [e.name for e in entries] == list(SEED6)
    for entry in entries:
        rows, nnz, kind = SEED6[entry.name]
        assert (entry.rows, entry.cols, entry.nnz, entry.kind) == (rows, rows, nnz, kind)
        assert entry.analog_of == entry.name
    assert sum(e.nnz for e in entries) == 223_993_660


def test_seed6_small_scale_generates_lazily_with_the_right_shapes():
    scale = 0.002
    matrices = load_suite("seed6", scale=scale, seed=3)
    assert inspect.isgenerator(matrices)
    first = next(matrices)
    assert isinstance(first, Matrix) and first.name == "webbase-1M"
    for matrix in [first, *matrices]:
        rows, nnz, kind = SEED6[matrix.name]
        small_rows = max(1, round(rows * scale))
        assert matrix.csr.shape == (small_rows, small_rows)
        assert matrix.nnz == round(nnz * small_rows / rows)
        assert (matrix.kind, matrix.analog_of, matrix.seed) == (kind, matrix.name, 3)
        assert matrix.source.startswith(f"generated:{kind}(rows={small_rows}")
        assert_canonical(matrix.csr)


def test_suite_entry_is_reproducible_from_its_record():
    matrix = next(load_suite("seed6", scale=0.001, seed=5))
    entry = suite_entries("seed6", scale=0.001)[0]
    again = generate(entry.kind, entry.rows, entry.nnz, cols=entry.cols, seed=matrix.seed,
                     **dict(entry.params))
    assert np.array_equal(again.indices, matrix.csr.indices)


def test_awkward_suite_covers_the_hard_cases():
    matrices = {m.name: m for m in load_suite("awkward", scale=0.5)}  # scale is ignored
    for matrix in matrices.values():
        assert_canonical(matrix.csr)
    lengths = {name: np.diff(m.csr.indptr) for name, m in matrices.items()}
    assert (lengths["empty-rows"] == 0).sum() >= 70
    assert lengths["heavy-row"].max() > matrices["heavy-row"].nnz / 2
    assert matrices["one-by-one"].csr.shape == (1, 1) and matrices["one-by-one"].nnz == 1
    assert matrices["one-row"].csr.shape == (1, 1000)
    assert matrices["one-col"].csr.shape == (1000, 1)
    assert matrices["single-entry"].nnz == 1 and matrices["single-entry"].rows % 32 != 0
    assert any(m.rows % 32 and m.nnz > 1000 for m in matrices.values())


# --- stats -----------------------------------------------------------------------------------

# 4 x 70: row 0 -> cols 0, 1, 40; row 1 empty; row 2 -> 2, 33, 69; row 3 -> 64, 65.
# 128-byte lines (32 columns): row 0 reads lines 0, 0, 1; row 2 reads 0, 1, 2; row 3 reads 2, 2.
TINY = sp.csr_matrix((np.ones(8), [0, 1, 40, 2, 33, 69, 64, 65], [0, 3, 3, 6, 8]), shape=(4, 70))


def test_stats_against_hand_computed_values():
    s = compute_stats(TINY)
    assert (s.rows, s.cols, s.nnz) == (4, 70, 8)
    assert s.nnz_per_row_mean == 2.0
    assert s.nnz_per_row_std == pytest.approx(math.sqrt(1.5))  # lengths 3, 0, 3, 2
    assert (s.nnz_per_row_min, s.nnz_per_row_max, s.empty_rows) == (0, 3, 1)
    assert s.bandwidth == 67  # row 2, column 69
    assert s.distinct_columns == 8 and s.x_reuse == 1.0
    # window 32: hits are row 0's second line-0 read, row 2's lines 0 and 1 (read by row 0,
    # 2 rows back), row 3's two line-2 reads (row 2, 1 row back; then itself): 5 of 8.
    assert s.x_reuse_in_window == 5 / 8
    # window 1: row 2 is 2 rows after row 0, so only row 0's repeat and row 3's two reads hit.
    assert compute_stats(TINY, window_rows=1).x_reuse_in_window == 3 / 8
    assert compute_stats(TINY, window_rows=0).x_reuse_in_window == 2 / 8


def test_stats_reuse_and_canonicalisation():
    # Column 5 read by all three rows; duplicates in the input are summed first.
    coo = sp.coo_matrix((np.ones(5), ([0, 1, 2, 2, 2], [5, 5, 5, 9, 9])), shape=(3, 10))
    s = compute_stats(coo)
    assert (s.nnz, s.distinct_columns, s.x_reuse) == (4, 2, 2.0)
    assert s.x_reuse_in_window == 3 / 4  # every read but the first of line 0
    assert s.bandwidth == 7


def test_stats_matches_a_brute_force_window_count():
    a = generate("powerlaw", 1500, 20000, seed=2)
    window = 5
    last_row: dict[int, int] = {}
    hits = 0
    for i in range(a.shape[0]):
        for c in a.indices[a.indptr[i]:a.indptr[i + 1]]:
            line = int(c) // 32
            hits += line in last_row and i - last_row[line] <= window
            last_row[line] = i
    assert compute_stats(a, window_rows=window).x_reuse_in_window == hits / a.nnz
    dense_rows = np.repeat(np.arange(1500), np.diff(a.indptr))
    assert compute_stats(a).bandwidth == np.abs(a.indices - dense_rows).max()


def test_stats_of_an_empty_matrix_and_bad_window():
    s = compute_stats(sp.csr_matrix((3, 4)))
    assert (s.nnz, s.bandwidth, s.distinct_columns, s.x_reuse, s.x_reuse_in_window) == \
        (0, 0, 0, 0.0, 0.0)
    with pytest.raises(UsageError, match="window_rows must be >= 0"):
        compute_stats(TINY, window_rows=-1)
