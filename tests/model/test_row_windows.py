"""Sector refetches of a CSR kernel that reads each row in windows (``model.row_windows``):
the docstring's hand checks, and the vectorised count against a brute-force walk of every
window of every row."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.model.row_windows import csr_refetches, window_refetches

WINDOWS = (4, 16, 8, 4)   # NVRTC's CSR loop (cuda_kernels.CSR_WINDOWS)


def brute_force(indptr, threads, windows, e) -> int:
    """Walk each row's windows one by one (module docstring) and count the boundaries between
    two windows that fall inside a 32-byte sector."""
    u, w, *peeled = windows
    total = 0
    for r in range(len(indptr) - 1):
        n = (indptr[r + 1] - indptr[r]) // threads
        sizes = [1] * (n % u)
        left = n - n % u
        sizes += [w] * (left // w)
        left %= w
        for p in peeled:
            sizes += [p] * (left // p)
            left %= p
        position = indptr[r] * e
        for size in sizes[:-1]:
            position += threads * size * e
            total += position % 32 != 0
    return total


def test_docstring_hand_checks():
    # a row of 49 entries at entry 49: 1 single, then 3 windows of 16 -> boundaries at bytes
    # 200, 264, 328, all unaligned: 3
    assert window_refetches(np.array([49, 98]), 1, WINDOWS, 4) == 3
    # a row of 27 entries at entry 8 (byte 32): 3 singles, one 16, one 8 -> boundaries at
    # 36, 40, 44 and 108: 4
    assert window_refetches(np.array([8, 35]), 1, WINDOWS, 4) == 4


def test_aligned_rows_refetch_nothing():
    # rows of 64 entries starting on a sector: windows of 16 x 4 B = 64 B stay aligned
    assert window_refetches(np.arange(0, 64 * 5, 64), 1, WINDOWS, 4) == 0


@pytest.mark.parametrize("threads", [1, 2, 8, 32])
@pytest.mark.parametrize("e", [4, 8])
def test_matches_a_brute_force_walk(threads, e):
    rng = np.random.default_rng(threads * 10 + e)
    lengths = np.concatenate([rng.integers(0, 90, 300), [0, 1, 5000, 17, 4096 * threads + 3]])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    assert window_refetches(indptr, threads, WINDOWS, e) == brute_force(indptr, threads,
                                                                        WINDOWS, e)


def test_csr_refetches_sum_both_streams():
    indptr = np.array([0, 49, 98, 125])
    one = window_refetches(indptr, 1, WINDOWS, 4)
    assert csr_refetches(indptr, 1, WINDOWS, 4, 4) == 2 * one
    assert csr_refetches(indptr, 1, WINDOWS, 8, 4) == one + window_refetches(indptr, 1,
                                                                             WINDOWS, 8)


def test_no_windows_or_no_rows_refetch_nothing():
    assert window_refetches(np.array([0, 49]), 1, (), 4) == 0.0
    assert window_refetches(np.array([0]), 1, WINDOWS, 4) == 0.0
