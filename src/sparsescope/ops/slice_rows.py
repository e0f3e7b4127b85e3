"""CSR row slicing, ``out[r, :] = A[rows[r], :]`` into a dense float output (seed 003).

Rules every backend inherits from here, so none can give a silent wrong answer:

* ``rows`` may repeat and may be in any order;
* an out-of-range index (``< 0`` or ``>= A.rows``) raises :class:`RowIndexError` *before any
  launch* (:func:`validate_rows`), unless the caller asks for ``out_of_range="zero"``: the
  index is then mapped to an extra empty row appended to A (:func:`sliced_matrix`), so every
  backend returns an all-zero output row for it without a masking pass;
* ``weights="scalar"`` gives every nonzero the one value :data:`SCALAR_WEIGHT` (seed 003's
  homogeneous weights: kernels may read one value instead of ``data``); ``per-nnz`` keeps A's;
* A must be canonical (sorted, no duplicate column in a row): a scatter kernel writes, it does
  not add, so two entries in one column would race. :func:`sparsescope.ops.registry.canonical_csr`
  sums duplicates (with a warning) or refuses them (``strict``) before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import UsageError
from sparsescope.model.slice_rows import LINE_BYTES, SECTOR_BYTES
from sparsescope.ops.spmv import check_output as _check_vector
from sparsescope.results.records import Correctness

OP_NAME = "slice"
WEIGHTS = ("scalar", "per-nnz")
OUT_OF_RANGE = ("error", "zero")
SCALAR_WEIGHT = 0.75
"""The homogeneous weight: not 1, so a kernel writing 1 (or a count) fails the check."""

#: Relative L2 error allowed: slicing copies values, so only the cast of A's float64 values to
#: the value dtype differs from the reference (<= 2^-24 relative in float32).
DEFAULT_TOLERANCE = {"float32": 1e-6, "float64": 1e-14}


class RowIndexError(UsageError):
    """A selected row index outside ``[0, rows)``."""


@dataclass(frozen=True)
class SliceInputs:
    """The selection after validation: what every backend is given."""

    rows: np.ndarray
    """int64 row indices into the (possibly padded) matrix; length = output rows."""
    source_rows: int
    """Rows of A before padding."""
    invalid: int
    """Indices that were out of range (mapped to the appended empty row)."""
    weights: str
    out_of_range: str

    @property
    def padded(self) -> bool:
        """Whether A got an appended empty row for out-of-range indices."""
        return self.invalid > 0


def validate_rows(rows, n_rows: int, out_of_range: str = "error") -> tuple[np.ndarray, int]:
    """(int64 rows, number mapped) -- raise for an out-of-range index unless asked for zeros.

    ``error``: :class:`RowIndexError` naming the first bad position, its value and the valid
    range. ``zero``: bad indices become ``n_rows`` (the appended empty row).
    """
    if out_of_range not in OUT_OF_RANGE:
        raise UsageError(f"out_of_range must be one of {', '.join(OUT_OF_RANGE)}, "
                         f"got {out_of_range!r}")
    array = np.asarray(rows)
    if array.ndim != 1:
        raise UsageError(f"rows must be a 1-D sequence of integers, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise UsageError(f"rows must be integers, got dtype {array.dtype}")
    array = array.astype(np.int64, copy=True)
    bad = (array < 0) | (array >= n_rows)
    count = int(bad.sum())
    if count and out_of_range == "error":
        first = int(np.flatnonzero(bad)[0])
        raise RowIndexError(
            f"row index {int(array[first])} at position {first} is out of range for a matrix "
            f"with {n_rows} rows (valid: 0 to {n_rows - 1}); {count} of {array.size} indices "
            "are out of range (use out_of_range='zero' to get zero rows for them)")
    array[bad] = n_rows
    return array, count


def make_rows(n_rows: int, selected: int, seed: int = 0) -> np.ndarray:
    """``selected`` row indices drawn uniformly from ``[0, n_rows)`` with repeats (seed 003's
    workloads pick rows at random; repeats are part of the contract)."""
    if selected < 1:
        raise UsageError(f"rows_selected must be >= 1, got {selected}")
    if n_rows < 1:
        raise UsageError("the matrix has no rows to select")
    return np.random.default_rng(seed).integers(0, n_rows, size=selected, dtype=np.int64)


def sliced_matrix(csr: sp.csr_matrix, weights: str, pad: bool) -> sp.csr_matrix:
    """A (canonical, float64) with the weight mode applied and, when ``pad``, one empty row
    appended for the out-of-range indices."""
    if weights not in WEIGHTS:
        raise UsageError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    data = (np.full(csr.nnz, SCALAR_WEIGHT) if weights == "scalar"
            else np.asarray(csr.data, dtype=np.float64))
    indptr = np.asarray(csr.indptr, dtype=np.int64)
    if pad:
        indptr = np.append(indptr, indptr[-1])
    out = sp.csr_matrix((data, csr.indices.copy(), indptr),
                        shape=(csr.shape[0] + int(pad), csr.shape[1]))
    out.has_sorted_indices = True
    return out


def reference_slice(csr: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """``A[rows].toarray()`` in float64 (rows already validated against ``csr``)."""
    a64 = sp.csr_matrix(csr, dtype=np.float64, copy=False)
    return np.ascontiguousarray(a64[np.asarray(rows, dtype=np.int64)].toarray())


def selection_counts(csr: sp.csr_matrix, rows: np.ndarray, value_bytes: int = 4
                     ) -> tuple[int, int, int]:
    """(nnz_selected, distinct 32-byte sectors, distinct 128-byte lines) the entries of the
    output occupy, for a dense C-ordered output whose row p starts at byte ``p * cols * vb``.

    Element (p, c) lies in sector ``(p * cols + c) * vb // 32``. Columns are sorted within a
    row and p increases, so the sector sequence of all entries, row after row, is
    non-decreasing: the distinct count is 1 + the number of steps. Exact, whatever the
    alignment of the rows.
    """
    rows = np.asarray(rows, dtype=np.int64)
    indptr = np.asarray(csr.indptr, dtype=np.int64)
    lengths = indptr[rows + 1] - indptr[rows]
    total = int(lengths.sum())
    if total == 0:
        return 0, 0, 0
    starts = np.repeat(indptr[rows] - (np.cumsum(lengths) - lengths), lengths)
    positions = starts + np.arange(total, dtype=np.int64)
    out_row = np.repeat(np.arange(rows.size, dtype=np.int64), lengths)
    byte = (out_row * csr.shape[1] + csr.indices[positions].astype(np.int64)) * value_bytes
    counts = []
    for unit in (SECTOR_BYTES, LINE_BYTES):
        ids = byte // unit
        counts.append(1 + int(np.count_nonzero(np.diff(ids))))
    return total, counts[0], counts[1]


def check_output(out: np.ndarray, ref: np.ndarray, tolerance: float) -> Correctness:
    """Relative L2 error over the whole output; a wrong shape or a NaN fails."""
    out = np.asarray(out)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return Correctness(rel_err=float("inf"), tolerance=tolerance, max_abs_err=float("inf"))
    return _check_vector(out.reshape(-1), ref.reshape(-1), tolerance)
