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
  not add, so two entries in one column would race. :func:`sparsescope.ops.base.canonical_csr`
  sums duplicates (with a warning) or refuses them (``strict``) before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import UsageError
from sparsescope.model.case_model import ModelBytes
from sparsescope.model.slice_rows import LINE_BYTES, SECTOR_BYTES
from sparsescope.ops.base import Op, OpCase, ParamSpec, canonical_csr
from sparsescope.ops.params import SliceDerived, SliceParams
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


class SliceOp(Op):
    """``out[r, :] = A[rows[r], :]`` dense (seed 003)."""

    name = "slice"
    description = "CSR row slice out[r, :] = A[rows[r], :] (dense out)"
    params_type = SliceParams
    derived_type = SliceDerived
    tolerances = dict(DEFAULT_TOLERANCE)
    params = (
        ParamSpec("rows_selected", 64, int, minimum=1,
                  help="rows drawn at random (with repeats) when rows is not given; a suite "
                       "with workloads (slice003) sets it per matrix unless given"),
        ParamSpec("rows", None, tuple, help="explicit row indices (repeats allowed)"),
        ParamSpec("weights", "per-nnz", str, choices=WEIGHTS,
                  help="scalar: every nonzero one value; per-nnz: A's values"),
        ParamSpec("out_of_range", "error", str, choices=OUT_OF_RANGE,
                  help="error (default) or zero rows for indices outside [0, rows)"),
    )

    def make_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4, seed=0,
                  tolerance=None, strict=False) -> OpCase:
        from sparsescope.model.slice_rows import slice_traffic
        from sparsescope.model.traffic import csr_slice_traffic

        params = self.resolve_params(params)
        csr = canonical_csr(csr, strict=strict)
        chosen = (params.rows if params.rows is not None
                  else make_rows(csr.shape[0], params.rows_selected, seed))
        rows, invalid = validate_rows(chosen, csr.shape[0], params.out_of_range)
        params = replace(params, rows_selected=int(rows.size))
        matrix = sliced_matrix(csr, params.weights, pad=invalid > 0)
        inputs = SliceInputs(rows=rows, source_rows=csr.shape[0], invalid=invalid,
                             weights=params.weights, out_of_range=params.out_of_range)
        vb = np.dtype(value_dtype).itemsize
        nnz_sel, sectors, lines = selection_counts(matrix, rows, vb)
        derived = SliceDerived(nnz_selected=int(nnz_sel), sectors_32b=int(sectors),
                               lines_128b=int(lines), invalid_rows=int(invalid))
        traffic = slice_traffic(rows.size, csr.shape[1], nnz_sel, value_bytes=vb,
                                index_bytes=index_bytes, weights=params.weights,
                                sector_writes=sectors)
        return OpCase(self.name, params, matrix, inputs, reference_slice(matrix, rows),
                      tolerance if tolerance is not None else self.tolerance(value_dtype),
                      traffic, derived,
                      csr_slice_traffic(rows.size, csr.shape[1], int(nnz_sel), value_bytes=vb,
                                        index_bytes=index_bytes, weights=params.weights))

    def check(self, out, case) -> Correctness:
        return check_output(out, case.reference, case.tolerance)

    def model_bytes(self, traffic) -> ModelBytes:
        """The dense bound's bytes (reads plus the whole output once); a slice does no flop."""
        return ModelBytes(int(traffic.dense_bytes), 0)

    def traffic_for(self, rows, cols, nnz, params, derived, *, value_bytes, index_bytes,
                    y_read=False):
        from sparsescope.model.slice_rows import slice_traffic

        return slice_traffic(params.rows_selected, cols, derived.nnz_selected,
                             value_bytes=value_bytes, index_bytes=index_bytes,
                             weights=params.weights, sector_writes=derived.sectors_32b)

    def workload_params(self, suite: str, matrix: str, given: set[str]) -> list[dict]:
        """slice003's seed workloads of ``matrix`` (16-5,000 rows), when it is one of its and
        the run names no rows of its own."""
        from sparsescope.matrices.suite_dlmc import slice_workloads

        if given & {"rows", "rows_selected"}:
            return []
        return [{"rows_selected": n} for n in slice_workloads(suite, matrix)]
