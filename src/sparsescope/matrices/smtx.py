"""DLMC ``.smtx`` files (the Deep Learning Matrix Collection of Gale et al., used by Sputnik).

The format, as the DLMC files and the public readers of them (Sputnik's benchmarks, Gunrock's
``io/smtx.hxx``, conversion scripts) use it: three lines,

1. ``rows, cols, nnz`` (comma separated; plain whitespace is accepted too),
2. the CSR row pointer array, ``rows + 1`` space-separated integers starting at 0,
3. the ``nnz`` 0-based column indices, space separated.

There are no values: the matrix is a pattern, read with every value 1.0. Lines starting with
``%`` before the first line are skipped (Gunrock allows them). Unsorted columns within a row and
duplicate columns are canonicalized with a :class:`MatrixWarning` (duplicates summed) or refused
with ``strict=True``; every other defect is a :class:`MatrixFormatError` naming the 1-based line.
Sizes on the first line that cannot fit in memory are refused before the arrays are parsed.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices._csr import (
    check_memory,
    csr_memory_parts,
    finish_csr,
    first_row_defects,
    make_csr,
    report_defect,
)

_SIZE_SPLIT = re.compile(rb"[,\s]+")


def _short(raw: bytes, limit: int = 60) -> str:
    text = raw.decode("latin-1").strip()
    text = text if len(text) <= limit else text[:limit] + "..."
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


_INT64_MAX = np.iinfo(np.int64).max
_PLAIN = b"0123456789 \t\r"
_INT_TOKEN = re.compile(rb"-?[0-9]+")


def _parse_ints(p: str, lineno: int, text: bytes, what: str) -> np.ndarray:
    """Parse a line of space-separated integers strictly.

    Fast (NumPy) when the line holds only digits and blanks and no value saturates int64;
    otherwise token by token, naming the first bad token (a NUL byte, a fraction, a value past
    2**63-1 shown exactly, never as the saturated 9223372036854775807).
    """
    if not text.translate(None, _PLAIN):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = np.fromstring(text, dtype=np.int64, sep=" ")
        if not (values == _INT64_MAX).any():
            return values
    out = []
    for position, token in enumerate(text.split()):
        if b"\x00" in token:
            raise MatrixFormatError(
                p, f"{what} {position} is '{_short(token)}': a NUL byte (\\x00), the text is "
                   "damaged", line=lineno)
        if not _INT_TOKEN.fullmatch(token):
            raise MatrixFormatError(
                p, f"{what} {position} is '{_short(token)}', not an integer", line=lineno)
        value = int(token)
        if value > _INT64_MAX:
            raise MatrixFormatError(
                p, f"{what} {position} is {value}, past the largest index 2**63-1",
                line=lineno)
        out.append(value)
    return np.asarray(out, dtype=np.int64)


def _data_lines(content: bytes) -> list[tuple[int, bytes]]:
    """(1-based line number, stripped text) of the lines that carry data."""
    out = []
    seen_data = False
    for lineno, raw in enumerate(content.split(b"\n"), start=1):
        text = raw.strip()
        if not seen_data and (not text or text.startswith(b"%")):
            continue
        seen_data = True
        out.append((lineno, text))
    while out and not out[-1][1]:
        out.pop()  # trailing blank lines
    return out


def read_smtx(path: str | Path, *, strict: bool = False) -> sp.csr_matrix:
    """Read a DLMC ``.smtx`` file into canonical CSR (values 1.0)."""
    p = str(path)
    with open(path, "rb") as fh:
        content = fh.read()
    lines = _data_lines(content)
    last_line = content.count(b"\n") + (0 if content.endswith(b"\n") else 1)
    if not lines:
        raise MatrixFormatError(p, "empty file: expected the line 'rows, cols, nnz'",
                                line=max(last_line, 1))
    size_line, size_text = lines[0]
    parts = [t for t in _SIZE_SPLIT.split(size_text) if t]
    numbers = [int(t) for t in parts] if all(t.isdigit() for t in parts) else []
    if len(numbers) != 3 or min(numbers) < 0:
        raise MatrixFormatError(
            p, f"bad first line: expected 'rows, cols, nnz' as 3 non-negative integers, "
               f"found '{_short(size_text)}'", line=size_line)
    rows, cols, nnz = numbers
    if rows == 0 or cols == 0:
        raise MatrixFormatError(p, f"empty matrix: the first line gives {rows} x {cols}",
                                line=size_line)
    if nnz == 0:
        raise MatrixFormatError(p, "empty matrix: the first line announces 0 nonzeros",
                                line=size_line)
    parsed = [("parsed row pointers and column indices (rows + 1 + nnz) x 8",
               (rows + 1 + nnz) * 8)]
    check_memory(p, f"the first line declares {rows:,} x {cols:,} with {nnz:,} nonzeros",
                 parsed + csr_memory_parts(rows, cols, nnz), line=size_line)
    if len(lines) < 2:
        raise MatrixFormatError(
            p, f"file ends at line {last_line} before the row pointer line "
               f"({rows + 1} integers expected)", line=last_line)
    ptr_line, ptr_text = lines[1]
    indptr = _parse_ints(p, ptr_line, ptr_text, "row pointer")
    _check_indptr(p, ptr_line, indptr, rows, nnz)
    if len(lines) < 3:
        raise MatrixFormatError(
            p, f"file ends at line {last_line} before the column index line "
               f"({nnz} integers expected)", line=last_line)
    col_line, col_text = lines[2]
    indices = _parse_ints(p, col_line, col_text, "column index")
    if len(indices) != nnz:
        raise MatrixFormatError(
            p, f"found {len(indices)} column indices, the first line announces {nnz}",
            line=col_line)
    out_of_range = np.flatnonzero((indices < 0) | (indices >= cols))
    if len(out_of_range):
        k = int(out_of_range[0])
        raise MatrixFormatError(
            p, f"column index {int(indices[k])} at position {k} out of range 0..{cols - 1}",
            line=col_line)
    if len(lines) > 3:
        extra_line, _ = lines[3]
        raise MatrixFormatError(
            p, "unexpected extra line (a .smtx file has 3 lines: sizes, row pointers, "
               "column indices)", line=extra_line)
    return _canonical(p, col_line, rows, cols, indptr, indices, strict)


def _check_indptr(p: str, lineno: int, indptr: np.ndarray, rows: int, nnz: int) -> None:
    if len(indptr) != rows + 1:
        raise MatrixFormatError(
            p, f"expected {rows + 1} row pointers (rows + 1), found {len(indptr)}", line=lineno)
    if indptr[0] != 0:
        raise MatrixFormatError(p, f"the first row pointer must be 0, found {int(indptr[0])}",
                                line=lineno)
    drops = np.flatnonzero(np.diff(indptr) < 0)
    if len(drops):
        k = int(drops[0])
        raise MatrixFormatError(
            p, f"row pointer {k + 1} ({int(indptr[k + 1])}) is smaller than row pointer {k} "
               f"({int(indptr[k])})", line=lineno)
    if indptr[-1] != nnz:
        raise MatrixFormatError(
            p, f"the last row pointer is {int(indptr[-1])} but the first line announces {nnz} "
               "nonzeros", line=lineno)


def _canonical(p: str, col_line: int, rows: int, cols: int, indptr: np.ndarray,
               indices: np.ndarray, strict: bool) -> sp.csr_matrix:
    unsorted, dup = first_row_defects(indptr, indices)
    values = np.ones(len(indices), dtype=np.float64)
    if unsorted < 0 and dup < 0:
        return make_csr(values, indices, indptr, (rows, cols))
    matrix = sp.csr_matrix((values, indices, indptr), shape=(rows, cols))
    if unsorted >= 0:
        row = int(np.searchsorted(indptr, unsorted, side="right")) - 1
        report_defect(
            p, f"column indices of row {row} are not sorted (position {unsorted}: column "
               f"{int(indices[unsorted])} after {int(indices[unsorted - 1])}); rows are sorted",
            strict=strict, line=col_line)
        matrix.sort_indices()
        dup = first_row_defects(matrix.indptr, matrix.indices)[1]
    if dup >= 0:
        row = int(np.searchsorted(indptr, dup, side="right")) - 1
        column = int(matrix.indices[dup])
        start, end = int(indptr[row]), int(indptr[row + 1])
        first, second = (np.flatnonzero(indices[start:end] == column)[:2] + start).tolist()
        report_defect(
            p, f"duplicate column {column} in row {row} (positions {first} and {second}); "
               "duplicates are summed", strict=strict, line=col_line)
    return finish_csr(matrix)


def write_smtx(csr: sp.csr_matrix, handle) -> None:
    """Write the pattern of canonical CSR ``csr`` to a binary file handle (values are dropped)."""
    rows, cols = csr.shape
    handle.write(f"{rows}, {cols}, {csr.nnz}\n".encode())
    step = 1 << 20  # format a million integers at a time: bounded memory for huge matrices
    for array in (csr.indptr, csr.indices):
        for start in range(0, len(array), step):
            if start:
                handle.write(b" ")
            handle.write(" ".join(map(str, array[start:start + step].tolist())).encode())
        handle.write(b"\n")
