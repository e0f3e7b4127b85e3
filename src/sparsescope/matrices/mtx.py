"""Matrix Market (``.mtx``, ``.mtx.gz``) reading with exact error locations.

Fast path: the header (banner, comments, size line) is parsed in Python
(:mod:`~sparsescope.matrices.mtx_header`), the body is checked against the strict grammar
(:mod:`~sparsescope.matrices._mtx_check`: a NUL byte is refused there, since it crashes the fast
parser, and irregular text goes to the exact scan, since the fast parser guesses on it), then
parsed by ``fast_matrix_market`` (multi-threaded C++), then everything else is checked
vectorised with NumPy: non-finite values, nonzero diagonal of a skew-symmetric file, duplicates.
Only when a check fails (or ``fast_matrix_market`` raises) is the text looked at again
(:mod:`~sparsescope.matrices._mtx_scan`), to name the exact 1-based line and write a precise
message.

Supported: ``coordinate`` and ``array`` formats; ``real``, ``integer`` and ``pattern`` fields
(pattern values read as 1.0); ``general``, ``symmetric`` and ``skew-symmetric`` symmetry, expanded
to full storage (skew mirrors with the sign negated; its diagonal must be zero). Symmetric and
skew-symmetric files store the lower triangle (row >= column); an entry above the diagonal is a
defect: mirrored like the others with a :class:`MatrixWarning` naming its line, or refused with
``strict=True``. An entry given in both triangles is then reported as a duplicate too.

The Matrix Market format lets coordinate entries come in any order (SuiteSparse files are
column-major), so entry order is not a defect here: rows are sorted silently. Duplicates are a
defect: summed with a :class:`MatrixWarning`, or refused with ``strict=True``. In ``array`` files
only the nonzero values become stored entries.

Before anything is allocated the sizes on the size line are checked against physical memory
(:func:`~sparsescope.matrices._csr.check_memory`), and a damaged ``.gz`` (bad magic, corrupt or
truncated stream) is reported with the line where its text stops, never as a raw ``EOFError``.
"""

from __future__ import annotations

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
from sparsescope.matrices._mtx_check import CheckedBody
from sparsescope.matrices._mtx_scan import (
    check_entry_count,
    line_text,
    locate_entries,
    parse_entry,
    scan_body,
)
from sparsescope.matrices.mtx_header import (
    GZIP_ERRORS,
    MtxHeader,
    gzip_damage,
    gzip_error,
    read_header,
)

__all__ = ["MtxHeader", "read_header", "read_mtx"]

_WARN_LEVEL = 6
"""Warnings from _coordinate_to_csr point at the caller of read_matrix: report_defect,
_coordinate_to_csr, _read_body, read_mtx, read_matrix, caller."""


def read_mtx(path: str | Path, *, strict: bool = False) -> sp.csr_matrix:
    """Read a ``.mtx``/``.mtx.gz`` file into canonical CSR; see the module docstring."""
    header = read_header(path)
    _check_announced_size(path, header)
    _check_memory(path, header)
    try:
        return _read_body(path, header, strict)
    except GZIP_ERRORS as exc:  # a damaged .gz: name where its text stops, not a raw EOFError
        raise gzip_error(path, exc) from None


def _read_body(path: str | Path, header: MtxHeader, strict: bool) -> sp.csr_matrix:
    if header.format == "array":
        return _read_array(path, header)
    import fast_matrix_market as fmm

    checked, parsed = _parsed_checked(
        path, header, lambda source: fmm.read_coo(source, generalize_symmetry=False))
    if not checked:
        # Not strictly regular: the exact scan raises a precise error, or reads what is valid
        # but irregular (comment lines between entries), never guessing.
        rows, cols, values = scan_body(path, header)
    elif isinstance(parsed, Exception):
        _check_gzip(path, parsed)
        rows, cols, values = scan_body(path, header, hint=parsed)
    else:
        (values, (rows, cols)), _ = parsed
    values = np.asarray(values, dtype=np.float64)
    bad = check_finite(values)
    if bad >= 0:
        _raise_via_scan(path, header, bad, f"value {values[bad]} is not finite (NaN or infinity)")
    if header.symmetry == "skew-symmetric":
        diag = np.flatnonzero((rows == cols) & (values != 0.0))
        if len(diag):
            k = int(diag[0])
            _raise_via_scan(path, header, k, "skew-symmetric matrix has a nonzero diagonal entry")
    return _coordinate_to_csr(path, header, rows, cols, values, strict)


def _parsed_checked(path, header: MtxHeader, parse) -> tuple[bool, object]:
    """``(checked, what parse(source) returned or raised)``: the parser only ever gets text
    that :class:`CheckedBody` checked strictly (``checked`` False: the body is not strictly
    valid, and the parser got none of it, or only the part before the defect).

    A ``.gz`` is decompressed once: the parser reads the checked blocks as they come. A plain
    file is checked first (its blocks on the check's threads), then read by the parser's own
    multi-threaded reader, from the page cache: on the 2-core machine that is faster than
    handing it the blocks through Python, which serialises its reading with the check.
    """
    body = CheckedBody(path, header)
    if not str(path).endswith(".gz"):
        if not _finished(body):
            return False, None
        body = str(path)
    try:
        parsed = parse(body)
    except Exception as exc:  # noqa: BLE001 - any parser failure goes to the exact re-scan
        parsed = exc
    if isinstance(body, CheckedBody) and not _finished(body):
        return False, parsed
    return True, parsed


def _finished(body: CheckedBody) -> bool:
    """Whether the body the parser read was strictly valid (:class:`CheckedBody`); raises
    what stopped it: a NUL byte (named with its line) or a read error (a damaged ``.gz``)."""
    strict = body.finish()
    if body.nul is not None:
        raise body.nul
    if body.error is not None:
        raise body.error
    return strict


def _check_announced_size(path, header: MtxHeader) -> None:
    """A size line announcing more entries than the file can hold: name where the file ends.

    Each entry line takes at least 4 bytes (``i j\\n``; 2 for an array value), so a count the
    file cannot hold is caught before the parser allocates arrays for it. Compressed files are
    not checked here (a parser failure reaches the same re-scan).
    """
    if str(path).endswith(".gz"):
        return
    min_bytes = 2 if header.format == "array" else 4
    if header.entries * min_bytes > Path(path).stat().st_size:
        check_entry_count(path, header)  # raises "file ends at line ... after n of N entries"


def _check_gzip(path, exc: Exception) -> None:
    """After a parser failure on a ``.gz``, blame a damaged stream first: a line cut by the
    truncation must not be reported as a bad entry."""
    if isinstance(exc, GZIP_ERRORS):
        raise exc
    if str(path).endswith(".gz") and gzip_damage(path) is not None:
        raise gzip_error(path, exc)


def _check_memory(path, header: MtxHeader) -> None:
    """Refuse a size line whose arrays cannot fit in memory, before the parser allocates them.

    Coordinate files: the parsed entries (row, column, value: 24 bytes each), then canonical CSR
    of up to twice the entries for symmetric storage (see
    :func:`~sparsescope.matrices._csr.csr_memory_parts`). Array files: the dense array,
    rows x cols x 8 bytes, plus the same CSR.
    """
    n, m, entries = header.rows, header.cols, header.entries
    stored = entries if header.symmetry == "general" else 2 * entries
    if header.format == "array":
        first = [("dense array rows x cols x 8", n * m * 8)]
        declared = f"the size line declares a dense {n:,} x {m:,} array"
    else:
        first = [("parsed entries x 24", entries * 24)]
        declared = f"the size line declares {n:,} x {m:,} with {entries:,} entries"
    check_memory(str(path), declared, first + csr_memory_parts(n, m, min(stored, n * m)),
                 line=header.size_line)


def _check_upper_triangle(path, header: MtxHeader, rows, cols, strict: bool) -> None:
    """Symmetric storage keeps the lower triangle: warn about (or refuse) the first entry above
    the diagonal, naming its line. It is mirrored like any other entry when not refused."""
    above = np.flatnonzero(rows < cols)
    if not len(above):
        return
    k = int(above[0])
    line = locate_entries(path, header, [k])[k]
    report_defect(
        str(path),
        f"entry ({int(rows[k]) + 1}, {int(cols[k]) + 1}) lies above the diagonal, but a "
        f"{header.symmetry} file stores only the lower triangle (row >= column); the file has "
        f"{len(above):,} such {'entry' if len(above) == 1 else 'entries'}, mirrored like "
        "lower-triangle ones",
        strict=strict, line=line, stacklevel=_WARN_LEVEL + 1)


def _raise_via_scan(path, header: MtxHeader, entry: int, message: str):
    """A vectorised check found the first defect at ``entry``: name its line and its token.

    fast_matrix_market parsed every line, so this entry is the first defect in file order; only
    its line is located and parsed again to word the message.
    """
    line = locate_entries(path, header, [entry])[entry]
    parse_entry(str(path), header, line, line_text(path, line))  # raises, quoting the token
    raise MatrixFormatError(str(path), message, line=line)


def _coordinate_to_csr(path, header: MtxHeader, rows, cols, values, strict: bool):
    n_file = len(values)
    mirrored = None
    if header.symmetry != "general":
        _check_upper_triangle(path, header, rows, cols, strict)
        mirrored = np.flatnonzero(rows != cols)
        sign = -1.0 if header.symmetry == "skew-symmetric" else 1.0
        rows, cols = (np.concatenate((rows, cols[mirrored])),
                      np.concatenate((cols, rows[mirrored])))
        values = np.concatenate((values, sign * values[mirrored]))
    matrix = coo_to_csr_unsummed(rows, cols, values, (header.rows, header.cols))
    unsorted, dup = first_row_defects(matrix.indptr, matrix.indices)
    if unsorted >= 0:
        matrix.sort_indices()
        dup = first_row_defects(matrix.indptr, matrix.indices)[1]
    matrix.has_sorted_indices = True
    if dup < 0:
        return make_csr(matrix.data, matrix.indices, matrix.indptr, matrix.shape)
    keys = np.asarray(rows, dtype=np.int64) * header.cols + np.asarray(cols, dtype=np.int64)
    later, earlier = first_repeat(keys)

    def origin(k: int) -> int:
        return k if k < n_file else int(mirrored[k - n_file])

    first_entry, second_entry = sorted((origin(later), origin(earlier)))
    lines = locate_entries(path, header, [first_entry, second_entry])
    note = " (symmetric storage mirrors each off-diagonal entry)" if mirrored is not None else ""
    report_defect(
        str(path),
        f"duplicate entry ({int(rows[later]) + 1}, {int(cols[later]) + 1}): it repeats the entry "
        f"on line {lines[first_entry]}{note}; duplicates are summed",
        strict=strict, line=lines[second_entry], stacklevel=_WARN_LEVEL)
    return finish_csr(matrix)


def _array_positions(header: MtxHeader) -> tuple[np.ndarray, np.ndarray]:
    """0-based (row, col) of each value of an array file, in file (column-major) order."""
    n, m = header.rows, header.cols
    if header.symmetry == "general":
        cols, rows = np.divmod(np.arange(n * m, dtype=np.int64), n)
        return rows, cols
    upper_r, upper_c = np.triu_indices(n, k=0 if header.symmetry == "symmetric" else 1)
    return upper_c, upper_r  # lower triangle, column by column


def _read_array(path: str | Path, header: MtxHeader) -> sp.csr_matrix:
    """Dense ``array`` files: keep the nonzero values only."""
    import fast_matrix_market as fmm

    checked, dense = _parsed_checked(path, header, fmm.read_array)
    if not checked:
        dense = None  # not strictly regular
    elif not isinstance(dense, Exception):
        dense = np.asarray(dense, dtype=np.float64)
    if not isinstance(dense, np.ndarray):
        file_values = scan_body(path, header, hint=dense)
        rows, cols = _array_positions(header)
        dense = np.zeros((header.rows, header.cols))
        dense[rows, cols] = file_values
        if header.symmetry != "general":
            sign = -1.0 if header.symmetry == "skew-symmetric" else 1.0
            dense[cols, rows] = sign * file_values
    if not np.isfinite(dense).all():
        scan_body(path, header)  # raises at the first non-finite value
        raise MatrixFormatError(str(path), "non-finite value (NaN or infinity)")
    csr = sp.csr_matrix(dense)
    if csr.nnz == 0:
        raise MatrixFormatError(str(path), "empty matrix: every value is zero",
                                line=header.size_line)
    csr.sort_indices()
    return make_csr(csr.data, csr.indices, csr.indptr, csr.shape)
