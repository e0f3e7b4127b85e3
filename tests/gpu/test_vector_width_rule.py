"""The CSR-vector width rule (a pure function: runs without a GPU too)."""

from __future__ import annotations

import pytest

from sparsescope.backends._gpu import threads_per_row


@pytest.mark.parametrize("mean, longest, tpr", [
    # the seed6 analogs (mean nnz/row, longest row) and the widths the H200 sweep favoured
    (3.11, 4700, 8),        # webbase-1M: the 4,700-entry rows ask for 8 lanes
    (64.17, 80, 8),         # cant: 64.17 / 16 = 4.01 -> 8
    (53.39, 67, 4),         # pwtk
    (48.86, 61, 4),         # ldoor
    (10.71, 1_278_415, 32),  # circuit5M: a 1.28 M-entry row, capped at a warp
    (19.24, 29, 2),         # cage15
    (0.0, 0, 2),            # empty matrix: the narrowest width
    (1.0, 1, 2),
    (32.0, 32, 2),          # 32 / 16 = 2
    (33.0, 33, 4),
    (600.0, 900, 32),       # 37.5 -> capped at 32
    (1.0, 1025, 2),         # 1025 / 1024 just above 1 -> 2
    (1.0, 4097, 8),         # 4.0 + -> 8
])
def test_threads_per_row(mean, longest, tpr):
    assert threads_per_row(mean, longest) == tpr
