"""Canonical CSR construction and the vectorised checks every reader shares.

Canonical CSR (what :class:`~sparsescope.matrices.types.Matrix` holds): float64 values, int32
indices and index pointers when ``max(rows, cols, nnz) < 2**31`` (else int64), columns sorted
within each row, no duplicate (row, column) pair.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import MatrixFormatError, MatrixTooLargeError

INT32_MAX = np.iinfo(np.int32).max


class MatrixWarning(UserWarning):
    """A matrix file had a repairable defect (duplicates, unsorted columns) that was canonicalized.

    The message names the file and the first offending line (text formats) or entry (``.npz``).
    """


def index_dtype(rows: int, cols: int, nnz: int) -> type[np.integer]:
    """int32 when every index and offset fits in it (what GPU kernels want), else int64."""
    return np.int32 if max(rows, cols, nnz) <= INT32_MAX else np.int64


def physical_memory_bytes() -> int | None:
    """Physical memory of this machine (``SC_PHYS_PAGES * SC_PAGE_SIZE``), or None where the
    platform does not report it (then only an allocation failure stops a too-large file)."""
    try:
        pages, page_bytes = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page_bytes if pages > 0 and page_bytes > 0 else None


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{count:,} bytes" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{count:,} bytes"  # pragma: no cover - the loop always returns


def csr_memory_parts(rows: int, cols: int, nnz: int) -> list[tuple[str, int]]:
    """Bytes that canonical CSR of these sizes and one SpMV over it take, part by part.

    With ``i`` the index width (:func:`index_dtype`: 4 or 8 bytes)::

        row pointers   (rows + 1) * i
        column indices nnz * i
        values         nnz * 8
        x and y        (cols + rows) * 8     (an SpMV needs them; statistics need cols bytes)
    """
    width = np.dtype(index_dtype(rows, cols, nnz)).itemsize
    return [(f"row pointers (rows + 1) x {width}", (rows + 1) * width),
            (f"column indices nnz x {width}", nnz * width),
            ("values nnz x 8", nnz * 8),
            ("vectors x and y (cols + rows) x 8", (cols + rows) * 8)]


def check_memory(path: str, declared: str, parts: list[tuple[str, int]], *,
                 line: int | None = None) -> None:
    """Refuse declared sizes whose arrays exceed physical memory, before anything is allocated.

    ``declared`` says what the file declares (``the size line declares 10 x 10 with 5 entries``);
    ``parts`` lists (what, bytes). Raises :class:`MatrixTooLargeError` naming the file and line.
    """
    memory = physical_memory_bytes()
    needed = sum(count for _, count in parts)
    if memory is None or needed <= memory:
        return
    detail = ", ".join(f"{what} = {count:,}" for what, count in parts)
    raise MatrixTooLargeError(
        path, f"{declared}: holding it needs {needed:,} bytes ({_size(needed)}: {detail}), more "
              f"than this machine's {_size(memory)} of memory", line=line,
        needed_bytes=needed, memory_bytes=memory)


def make_csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
             shape: tuple[int, int]) -> sp.csr_matrix:
    """Wrap already-canonical arrays (sorted, no duplicates) without copying where possible."""
    rows, cols = int(shape[0]), int(shape[1])
    itype = index_dtype(rows, cols, int(indptr[-1]) if len(indptr) else 0)
    csr = sp.csr_matrix(
        (np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=itype),
         np.asarray(indptr, dtype=itype)),
        shape=(rows, cols), copy=False,
    )
    # scipy may widen index arrays on construction; force the documented dtype back.
    if csr.indices.dtype != itype:
        csr.indices = csr.indices.astype(itype)
        csr.indptr = csr.indptr.astype(itype)
    csr.has_sorted_indices = True
    csr.has_canonical_format = True
    return csr


def coo_to_csr_unsummed(rows: np.ndarray, cols: np.ndarray, data: np.ndarray,
                        shape: tuple[int, int]) -> sp.csr_matrix:
    """COO -> CSR by a stable counting sort on rows (O(nnz + rows)); duplicates are kept.

    Within a row the entries keep their input order, so a column-major file yields sorted rows
    already. Uses SciPy's C++ ``coo_tocsr`` (the routine behind ``coo_matrix.tocsr``) directly
    because the public method sums duplicates before we can report them.
    """
    n_rows, n_cols = int(shape[0]), int(shape[1])
    nnz = len(data)
    itype = np.int64 if max(n_rows, n_cols, nnz) > INT32_MAX else np.int32
    rows = np.asarray(rows, dtype=itype)
    cols = np.asarray(cols, dtype=itype)
    data = np.asarray(data, dtype=np.float64)
    try:
        from scipy.sparse._sparsetools import coo_tocsr
    except ImportError:  # pragma: no cover - private SciPy module moved; slower public path
        order = np.argsort(rows, kind="stable")
        indptr = np.zeros(n_rows + 1, dtype=itype)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
        matrix = sp.csr_matrix((data[order], cols[order], indptr), shape=(n_rows, n_cols))
    else:
        indptr = np.empty(n_rows + 1, dtype=itype)
        indices = np.empty(nnz, dtype=itype)
        values = np.empty(nnz, dtype=np.float64)
        coo_tocsr(n_rows, n_cols, nnz, rows, cols, data, indptr, indices, values)
        matrix = sp.csr_matrix((values, indices, indptr), shape=(n_rows, n_cols), copy=False)
    matrix.has_canonical_format = False
    return matrix


def within_row_pairs(indptr: np.ndarray, nnz: int) -> np.ndarray:
    """Boolean mask over positions ``p`` in ``0..nnz-2``: entries p and p+1 lie in the same row."""
    inner = np.ones(max(nnz - 1, 0), dtype=bool)
    ends = np.asarray(indptr[1:-1], dtype=np.int64) - 1
    ends = ends[(ends >= 0) & (ends < nnz - 1)]
    inner[ends] = False
    return inner


#: Entries the row checks compare at a time: their temporaries (a boolean each) stay in cache.
CHECK_CHUNK = 1 << 22


def first_row_defects(indptr: np.ndarray, indices: np.ndarray) -> tuple[int, int]:
    """Positions (0-based, in storage order) of the first unsorted and first duplicate entry.

    An entry at position p+1 is *unsorted* when ``indices[p+1] < indices[p]`` in the same row and a
    *duplicate* when they are equal (duplicates are only all found once rows are sorted).
    Returns -1 for "none". ``indptr`` must be non-decreasing from 0 to ``len(indices)``.

    One pass, :data:`CHECK_CHUNK` entries at a time, in the arrays' own integer types::

        suspect(p) = indices[p+1] <= indices[p]  and  p+1 is not the first entry of a row

    and only the suspects (none in canonical rows) are told apart into unsorted and duplicate.
    """
    nnz = len(indices)
    if nnz < 2:
        return -1, -1
    starts = np.asarray(indptr[1:-1])
    unsorted = dup = -1
    for lo in range(0, nnz - 1, CHECK_CHUNK):
        hi = min(nnz - 1, lo + CHECK_CHUNK)          # pairs (p, p + 1) for lo <= p < hi
        suspect = indices[lo + 1:hi + 1] <= indices[lo:hi]
        if not suspect.any():
            continue
        # a pair that crosses into a new row (p + 1 = a row's start) is no defect
        first, last = np.searchsorted(starts, np.array([lo + 1, hi + 1], starts.dtype))
        suspect[starts[first:last] - 1 - lo] = False
        where = np.flatnonzero(suspect) + lo
        if where.size == 0:
            continue
        equal = indices[where + 1] == indices[where]
        if unsorted < 0 and not equal.all():
            unsorted = int(where[np.argmin(equal)]) + 1
        if dup < 0 and equal.any():
            dup = int(where[np.argmax(equal)]) + 1
        if unsorted >= 0 and dup >= 0:
            break
    return unsorted, dup


def first_repeat(keys: np.ndarray) -> tuple[int, int]:
    """In input order, the first index whose key already appeared, and that earlier index.

    Returns (-1, -1) when all keys are distinct. O(n log n); used only once a duplicate is known
    to exist, to name the offending line.
    """
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    later = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1]) + 1
    if len(later) == 0:
        return -1, -1
    candidates = order[later]
    best = int(np.argmin(candidates))
    group_start = int(np.searchsorted(sorted_keys, sorted_keys[later[best]], side="left"))
    return int(candidates[best]), int(order[group_start])


def report_defect(path: str, message: str, *, strict: bool, line: int | None = None,
                  index: int | None = None, stacklevel: int = 5) -> None:
    """Refuse (strict) or warn-and-repair a canonicalizable defect, naming file and line/entry.

    The default ``stacklevel`` points the warning at the caller of ``read_matrix``.
    """
    if strict:
        raise MatrixFormatError(path, message + " (refused: strict mode)", line=line, index=index)
    where = str(path)
    if line is not None:
        where += f", line {line}"
    elif index is not None:
        where += f", entry {index}"
    warnings.warn(MatrixWarning(f"{where}: {message}"), stacklevel=stacklevel)


def finish_csr(matrix: sp.csr_matrix) -> sp.csr_matrix:
    """Sort rows, sum duplicates and return canonical CSR (float64 values, narrow indices)."""
    if not matrix.has_sorted_indices:
        matrix.sort_indices()
    matrix.sum_duplicates()
    return make_csr(matrix.data, matrix.indices, matrix.indptr, matrix.shape)


def check_finite(values: np.ndarray) -> int:
    """Index of the first NaN or infinite value, or -1.

    First their sum, with no temporary: a NaN or an infinity makes it NaN or infinite, so a
    finite sum clears every value; only a non-finite one (a bad value, or finite values whose
    sum overflows) pays the elementwise pass that finds the first."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(values, axis=None) if values.size else 0.0
    if np.isfinite(total):
        return -1
    bad = ~np.isfinite(values)
    if not bad.any():
        return -1
    return int(np.argmax(bad))
