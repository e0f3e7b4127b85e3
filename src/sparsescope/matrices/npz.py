"""SciPy ``.npz`` files written by :func:`scipy.sparse.save_npz`.

The arrays are read with :func:`numpy.load` (no pickles) and checked before any SciPy object is
built, so a damaged file gets a :class:`MatrixFormatError` naming the 0-based entry index rather
than a crash later: index ranges, pointer monotonicity, non-finite values. ``csr``, ``csc`` and
``coo`` layouts are checked entry by entry; ``bsr`` and ``dia`` are converted by SciPy. Unsorted
indices within a CSR row or CSC column, and duplicates, are canonicalized with a
:class:`MatrixWarning` (or refused with ``strict=True``); COO entry order is free, as in Matrix
Market files. A ``shape`` whose CSR arrays cannot fit in memory is refused before they are built.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices._csr import (
    check_finite,
    check_memory,
    coo_to_csr_unsummed,
    csr_memory_parts,
    finish_csr,
    first_repeat,
    first_row_defects,
    make_csr,
    report_defect,
)

_REQUIRED = {
    "csr": ("data", "indices", "indptr"),
    "csc": ("data", "indices", "indptr"),
    "coo": ("data", "row", "col"),
}


def _load_arrays(p: str, path: str | Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise MatrixFormatError(p, f"not a scipy.sparse .npz file: {exc}") from None


def _int_array(p: str, arrays: dict, key: str) -> np.ndarray:
    array = arrays[key]
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise MatrixFormatError(
            p, f"array '{key}' must be a 1-D integer array, found {array.dtype} with shape "
               f"{array.shape}")
    return array.astype(np.int64, copy=False)


def _values(p: str, arrays: dict) -> np.ndarray:
    data = arrays["data"]
    if data.ndim != 1:
        raise MatrixFormatError(p, f"array 'data' must be 1-D, found shape {data.shape}")
    if np.iscomplexobj(data):
        raise MatrixFormatError(p, "complex values are not supported")
    if not (np.issubdtype(data.dtype, np.number) or data.dtype == bool):
        raise MatrixFormatError(p, f"array 'data' has non-numeric dtype {data.dtype}")
    values = data.astype(np.float64)
    bad = check_finite(values)
    if bad >= 0:
        raise MatrixFormatError(p, f"value {values[bad]} is not finite (NaN or infinity)",
                                index=bad)
    return values


def read_npz(path: str | Path, *, strict: bool = False) -> sp.csr_matrix:
    """Read a ``scipy.sparse.save_npz`` file into canonical CSR."""
    p = str(path)
    arrays = _load_arrays(p, path)
    if "format" not in arrays or "shape" not in arrays:
        raise MatrixFormatError(
            p, "not a scipy.sparse .npz file: arrays 'format' and 'shape' are missing "
               f"(found: {', '.join(sorted(arrays)) or 'none'})")
    layout = arrays["format"].item()
    layout = layout.decode() if isinstance(layout, bytes) else str(layout)
    shape = tuple(int(v) for v in np.asarray(arrays["shape"]).ravel())
    if len(shape) != 2 or min(shape) < 0:
        raise MatrixFormatError(p, f"bad shape {shape}: expected (rows, cols)")
    if shape[0] == 0 or shape[1] == 0:
        raise MatrixFormatError(p, f"empty matrix: shape {shape[0]} x {shape[1]}")
    stored = int(np.size(arrays["data"])) if "data" in arrays else 0
    check_memory(p, f"array 'shape' declares {shape[0]:,} x {shape[1]:,} ({layout}, "
                    f"{stored:,} stored entries)", csr_memory_parts(shape[0], shape[1], stored))
    if layout not in _REQUIRED:
        try:
            matrix = sp.load_npz(path).tocsr()
        except Exception as exc:  # noqa: BLE001 - any SciPy failure means a damaged file
            raise MatrixFormatError(p, f"cannot read {layout} matrix: {exc}") from None
        return _finish_other(p, matrix)
    missing = [key for key in _REQUIRED[layout] if key not in arrays]
    if missing:
        raise MatrixFormatError(p, f"{layout} file lacks array(s) {', '.join(missing)}")
    values = _values(p, arrays)
    if len(values) == 0:
        raise MatrixFormatError(p, "empty matrix: no stored entries")
    if layout == "coo":
        return _read_coo(p, arrays, values, shape, strict)
    return _read_compressed(p, arrays, values, shape, layout, strict)


def _finish_other(p: str, matrix: sp.csr_matrix) -> sp.csr_matrix:
    if matrix.nnz == 0:
        raise MatrixFormatError(p, "empty matrix: no stored entries")
    values = matrix.data.astype(np.float64)
    bad = check_finite(values)
    if bad >= 0:
        raise MatrixFormatError(p, f"value {values[bad]} is not finite (NaN or infinity)",
                                index=bad)
    matrix.sum_duplicates()
    return make_csr(matrix.data, matrix.indices, matrix.indptr, matrix.shape)


def _check_range(p: str, index: np.ndarray, limit: int, what: str) -> None:
    bad = np.flatnonzero((index < 0) | (index >= limit))
    if len(bad):
        k = int(bad[0])
        raise MatrixFormatError(p, f"{what} index {int(index[k])} out of range 0..{limit - 1}",
                                index=k)


def _read_coo(p, arrays, values, shape, strict) -> sp.csr_matrix:
    rows = _int_array(p, arrays, "row")
    cols = _int_array(p, arrays, "col")
    if not len(rows) == len(cols) == len(values):
        raise MatrixFormatError(
            p, f"arrays row, col and data differ in length ({len(rows)}, {len(cols)}, "
               f"{len(values)})")
    _check_range(p, rows, shape[0], "row")
    _check_range(p, cols, shape[1], "column")
    matrix = coo_to_csr_unsummed(rows, cols, values, shape)
    unsorted, dup = first_row_defects(matrix.indptr, matrix.indices)
    if unsorted >= 0:
        matrix.sort_indices()
        dup = first_row_defects(matrix.indptr, matrix.indices)[1]
    matrix.has_sorted_indices = True
    if dup < 0:
        return make_csr(matrix.data, matrix.indices, matrix.indptr, matrix.shape)
    later, earlier = first_repeat(rows * shape[1] + cols)
    report_defect(
        p, f"duplicate entry (row {int(rows[later])}, column {int(cols[later])}): it repeats "
           f"entry {earlier}; duplicates are summed", strict=strict, index=later)
    return finish_csr(matrix)


def _read_compressed(p, arrays, values, shape, layout, strict) -> sp.csr_matrix:
    major, minor = (shape[0], shape[1]) if layout == "csr" else (shape[1], shape[0])
    major_name, minor_name = ("row", "column") if layout == "csr" else ("column", "row")
    indptr = _int_array(p, arrays, "indptr")
    indices = _int_array(p, arrays, "indices")
    if len(indptr) != major + 1:
        raise MatrixFormatError(
            p, f"indptr has {len(indptr)} entries, expected {major + 1} ({major_name}s + 1)")
    if indptr[0] != 0 or indptr[-1] != len(indices) or len(indices) != len(values):
        raise MatrixFormatError(
            p, f"inconsistent arrays: indptr runs {int(indptr[0])}..{int(indptr[-1])}, "
               f"indices has {len(indices)} entries, data {len(values)}")
    drops = np.flatnonzero(np.diff(indptr) < 0)
    if len(drops):
        k = int(drops[0])
        raise MatrixFormatError(
            p, f"indptr decreases at {major_name} {k} ({int(indptr[k])} -> {int(indptr[k + 1])})")
    _check_range(p, indices, minor, minor_name)
    unsorted, dup = first_row_defects(indptr, indices)
    if unsorted < 0 and dup < 0 and layout == "csr":
        return make_csr(values, indices, indptr, shape)
    container = sp.csr_matrix if layout == "csr" else sp.csc_matrix
    matrix = container((values, indices, indptr), shape=shape)
    if unsorted >= 0:
        owner = int(np.searchsorted(indptr, unsorted, side="right")) - 1
        report_defect(
            p, f"{minor_name} indices of {major_name} {owner} are not sorted ({minor_name} "
               f"{int(indices[unsorted])} after {int(indices[unsorted - 1])}); sorted",
            strict=strict, index=unsorted)
        matrix.sort_indices()
        dup = first_row_defects(matrix.indptr, matrix.indices)[1]
    if dup >= 0:
        owner = int(np.searchsorted(indptr, dup, side="right")) - 1
        target = int(matrix.indices[dup])
        start, end = int(indptr[owner]), int(indptr[owner + 1])
        second = int(np.flatnonzero(indices[start:end] == target)[1]) + start
        report_defect(
            p, f"duplicate {minor_name} {target} in {major_name} {owner}; duplicates are summed",
            strict=strict, index=second)
    return finish_csr(matrix.tocsr())
