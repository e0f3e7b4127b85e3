"""Generators: exact sizes, canonical rows, determinism, and each kind's structure."""

from __future__ import annotations

import numpy as np
import pytest
from _matrices_helpers import assert_canonical

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.matrices import GENERATORS, compute_stats, generate
from sparsescope.matrices._sampling import apportion

KINDS = sorted(GENERATORS)


def same(a, b) -> bool:
    return (np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data, b.data))


@pytest.mark.parametrize("kind", KINDS)
def test_exact_sizes_canonical_and_deterministic(kind):
    a = generate(kind, 2000, 30011, seed=7)
    assert a.shape == (2000, 2000) and a.nnz == 30011
    assert_canonical(a)
    assert ((a.data > 0) & (a.data <= 1)).all()
    assert same(a, generate(kind, 2000, 30011, seed=7))
    assert not same(a, generate(kind, 2000, 30011, seed=8))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("rows", "cols", "nnz"), [
    (1, 1, 1), (1, 1000, 300), (1000, 1, 300), (513, 513, 1), (33, 95, 500), (40, 60, 2400),
    (37, 37, 1369)])
def test_edge_shapes_including_full_rows_and_dense(kind, rows, cols, nnz):
    a = generate(kind, rows, nnz, cols=cols, seed=1)
    assert a.shape == (rows, cols) and a.nnz == nnz
    assert_canonical(a)


def test_bad_arguments():
    with pytest.raises(UnknownNameError, match="unknown generator 'nope'; known: banded"):
        generate("nope", 10, 10)
    with pytest.raises(UsageError, match="nnz must be between 1 and rows \\* cols = 100"):
        generate("uniform", 10, 101)
    with pytest.raises(UsageError, match="nnz must be between 1"):
        generate("uniform", 10, 0)
    with pytest.raises(UsageError, match="rows >= 1 and cols >= 1"):
        generate("banded", 0, 1)
    with pytest.raises(UsageError, match="generator 'banded' has no parameter foo; its "
                                         "parameters: halfwidth, block, jitter"):
        generate("banded", 10, 10, foo=1)
    with pytest.raises(UsageError, match="a=-1.0 must be >= 0"):
        generate("rmat", 10, 10, a=-1.0)


def test_apportion_is_exact_and_respects_caps():
    lengths = apportion(np.array([1.0, 1.0, 8.0]), 11, 5)
    assert lengths.tolist() == [3, 3, 5]  # 1.1, 1.1, 8.8 -> cap 5; 3.9 left split evenly
    assert apportion(np.array([1.0, 2.0, 1.0]), 7, np.array([9, 9, 9])).sum() == 7
    with pytest.raises(UsageError, match="at most 6 fit"):
        apportion(np.ones(3), 7, 2)


def row_ids(a):
    return np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))


def test_banded_is_a_narrow_band_of_column_runs():
    a = generate("banded", 20000, 400000, seed=0, halfwidth=60, block=3)
    stats = compute_stats(a)
    assert stats.bandwidth <= 2 * 60 + 1
    lengths = np.diff(a.indptr)
    assert lengths.min() >= 15 and lengths.max() <= 25  # mean 20 +- 25%
    steps = np.diff(a.indices.astype(np.int64))[np.diff(row_ids(a)) == 0]
    assert np.mean(steps == 1) > 0.6  # columns come in runs (3-dof blocks)
    assert stats.x_reuse_in_window > 0.9


def test_powerlaw_has_long_rows_and_hub_columns():
    a = generate("powerlaw", 20000, 200000, seed=0, long_rows=3, long_row_frac=0.2)
    lengths = np.diff(a.indptr)
    assert np.sort(lengths)[-3:].tolist() == [4000, 4000, 4000]
    assert lengths.max() >= 100 * lengths.mean()
    assert 10 * lengths.mean() <= np.sort(lengths)[-4] <= 4000  # a heavy tail below them
    popularity = np.sort(np.bincount(a.indices, minlength=a.shape[1]))[::-1]
    # Column position cols * u**3: the top 1% of columns draw about 0.01**(1/3) = 21.5% of reads.
    assert 0.17 < popularity[:200].sum() / a.nnz < 0.26
    assert popularity[0] > 50 * np.median(popularity)


def test_scattered_is_mostly_local_with_a_scattered_fraction():
    a = generate("scattered", 20000, 400000, seed=0, halfwidth=40, far_fraction=0.1)
    distance = np.abs(a.indices.astype(np.int64) - row_ids(a))
    local = np.mean(distance <= 41)
    assert 0.88 <= local <= 0.92
    assert np.mean(distance > 2000) > 0.07  # far entries really are spread out


def test_uniform_spreads_evenly():
    a = generate("uniform", 5000, 200000, seed=0)
    lengths = np.diff(a.indptr)
    assert abs(lengths.std() - np.sqrt(40)) < 1.0  # multinomial ~ Poisson(40)
    deciles = np.bincount(a.indices * 10 // a.shape[1], minlength=10) / a.nnz
    assert np.all(np.abs(deciles - 0.1) < 0.01)


def test_rmat_follows_its_quadrant_probabilities():
    a = generate("rmat", 16384, 100000, seed=0, a=0.57, b=0.19, c=0.19, d=0.05)
    half = 8192
    top = row_ids(a) < half
    left = a.indices < half
    assert abs(a.indptr[half] / a.nnz - 0.76) < 0.01  # rows: a + b
    assert abs(np.mean(left) - 0.76) < 0.01  # columns: a + c
    assert abs(np.mean(left[top]) - 0.57 / 0.76) < 0.01  # given a top row: a / (a + b)
    assert abs(np.mean(left[~top]) - 0.19 / 0.24) < 0.01  # given a bottom row: c / (c + d)
