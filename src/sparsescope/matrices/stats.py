"""Structure statistics of a CSR matrix: what drives SpMV performance.

Costs (nnz entries, R rows, C columns): row-length statistics and bandwidth O(R) (with sorted
rows the farthest column of a row from the diagonal is its first or its last); distinct columns
O(nnz + C); x reuse within a window one CSR -> CSC transposition (O(nnz + C/32), SciPy's C++
counting sort) plus two vectorised passes. About 3 s for 100M nonzeros on one core.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import UsageError
from sparsescope.matrices._csr import within_row_pairs
from sparsescope.matrices.types import MatrixStats

LINE_BYTES = 128
"""Cache line / memory sector group size the reuse estimate counts in."""
X_BYTES = 4
"""Bytes per x entry assumed by the reuse estimate (float32: 32 columns per 128-byte line)."""
COLS_PER_LINE = LINE_BYTES // X_BYTES


def _canonical(matrix) -> sp.csr_matrix:
    csr = matrix if isinstance(matrix, sp.csr_matrix) else sp.csr_matrix(matrix)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    return csr


def bandwidth(csr: sp.csr_matrix) -> int:
    """max |col - row| over all nonzeros (0 when there are none); needs sorted rows.

    For each non-empty row only its first and last column can be farthest from the diagonal.
    """
    lengths = np.diff(csr.indptr)
    full = np.flatnonzero(lengths > 0)
    if len(full) == 0:
        return 0
    first = csr.indices[csr.indptr[full]].astype(np.int64)
    last = csr.indices[csr.indptr[full + 1] - 1].astype(np.int64)
    return int(max(np.abs(first - full).max(), np.abs(last - full).max()))


def x_reuse_in_window(csr: sp.csr_matrix, window_rows: int = 32) -> float:
    """Fraction of x reads whose 128-byte line was already read within the last ``window_rows``.

    Reading x[c] touches line ``c // 32`` (32 float32 columns per 128-byte line). Visiting the
    nonzeros in row order, the read of line ``l`` by row ``i`` is a *hit* when line ``l`` was
    read before by a row ``i'`` with ``i - window_rows <= i' <= i`` (the same row included)::

        x_reuse_in_window = #hits / nnz

    Computed exactly, not sampled: transposing the (row, line) pattern lists, for each line, the
    rows reading it in increasing order; a read is a hit when it is not its line's first and the
    row gap to the previous read of that line is at most ``window_rows``. It models a cache that
    keeps exactly the lines of the last ``window_rows`` rows (an LRU proxy, no capacity misses).
    """
    nnz = csr.nnz
    if nnz == 0:
        return 0.0
    lines = csr.indices // COLS_PER_LINE
    n_lines = (csr.shape[1] + COLS_PER_LINE - 1) // COLS_PER_LINE
    pattern = sp.csr_matrix((np.ones(nnz, dtype=np.int8), lines, csr.indptr),
                            shape=(csr.shape[0], n_lines))
    by_line = pattern.tocsc()  # rows of each line, increasing: csr_tocsc is a stable bucket sort
    readers = by_line.indices
    gap_ok = np.diff(readers) <= window_rows
    gap_ok &= within_row_pairs(by_line.indptr, nnz)  # the previous read is of the same line
    return float(np.count_nonzero(gap_ok)) / nnz


def compute_stats(matrix, window_rows: int = 32) -> MatrixStats:
    """Structure statistics of a CSR matrix (any SciPy sparse matrix is converted to CSR).

    Row statistics use population moments over all rows (empty rows included):
    mean = nnz / rows, std = sqrt(mean((len - mean)**2)). ``x_reuse = nnz / distinct_columns``
    (0 when there is no nonzero). See :func:`x_reuse_in_window` for the window formula.
    """
    if window_rows < 0:
        raise UsageError(f"window_rows must be >= 0, got {window_rows}")
    csr = _canonical(matrix)
    rows, cols = (int(v) for v in csr.shape)
    nnz = int(csr.nnz)
    lengths = np.diff(csr.indptr)
    seen = np.zeros(cols, dtype=bool)
    seen[csr.indices] = True
    distinct = int(np.count_nonzero(seen))
    return MatrixStats(
        rows=rows,
        cols=cols,
        nnz=nnz,
        nnz_per_row_mean=float(nnz / rows) if rows else 0.0,
        nnz_per_row_std=float(lengths.std()) if rows else 0.0,
        nnz_per_row_min=int(lengths.min()) if rows else 0,
        nnz_per_row_max=int(lengths.max()) if rows else 0,
        empty_rows=int(np.count_nonzero(lengths == 0)),
        bandwidth=bandwidth(csr),
        distinct_columns=distinct,
        x_reuse=float(nnz / distinct) if distinct else 0.0,
        x_reuse_in_window=x_reuse_in_window(csr, window_rows),
    )
