"""``read_matrix`` and ``write_matrix``: dispatch on the file name to the format modules."""

from __future__ import annotations

import errno
import gzip
import os
from collections.abc import Callable
from pathlib import Path

import scipy.sparse as sp

from sparsescope._atomic import atomic_writer
from sparsescope.errors import (
    MatrixFormatError,
    MatrixNotAvailableError,
    MatrixTooLargeError,
    UsageError,
)
from sparsescope.matrices._csr import make_csr
from sparsescope.matrices.mtx import read_mtx
from sparsescope.matrices.npz import read_npz
from sparsescope.matrices.smtx import read_smtx, write_smtx
from sparsescope.matrices.suitesparse import fetch_suitesparse, split_name
from sparsescope.matrices.types import Matrix

SUITESPARSE_PREFIX = "suitesparse:"

#: file suffix -> reader(path, *, strict) -> canonical CSR
READERS: dict[str, Callable[..., sp.csr_matrix]] = {
    ".mtx": read_mtx,
    ".mtx.gz": read_mtx,
    ".smtx": read_smtx,
    ".npz": read_npz,
}


def matrix_suffix(path: str | os.PathLike) -> str:
    """The format suffix of a file name, lower case: ``.mtx.gz`` counts as one suffix."""
    name = Path(path).name.lower()
    if name.endswith(".mtx.gz"):
        return ".mtx.gz"
    return Path(name).suffix


def _unknown_suffix(path: str | os.PathLike) -> MatrixFormatError:
    found = matrix_suffix(path) or "no extension"
    return MatrixFormatError(
        str(path), f"unknown matrix file type ({found}): expected one of "
                   f"{', '.join(READERS)} or suitesparse:Group/Name")


def read_matrix(path: str | os.PathLike, *, strict: bool = False,
                name: str | None = None) -> Matrix:
    """Read ``.mtx``, ``.mtx.gz``, ``.smtx``, ``.npz`` or ``suitesparse:Group/Name``.

    Returns a :class:`Matrix` holding canonical CSR (float64 values, int32 indices when they fit,
    sorted columns, no duplicates); ``name`` defaults to the file stem. Defects raise
    :class:`~sparsescope.errors.MatrixFormatError` naming the file and line (or entry);
    duplicates and unsorted rows are canonicalized with a :class:`MatrixWarning`, or refused when
    ``strict`` is true.
    """
    text = os.fspath(path)
    if isinstance(text, str) and text.startswith(SUITESPARSE_PREFIX):
        group_name = text[len(SUITESPARSE_PREFIX):]
        _, short = split_name(group_name)
        csr = read_mtx(fetch_suitesparse(group_name), strict=strict)
        return Matrix(name=name or short, csr=csr, source=text)
    file = Path(text)
    suffix = matrix_suffix(file)
    reader = READERS.get(suffix)
    if reader is None:
        raise _unknown_suffix(file)
    if file.is_dir():
        raise MatrixFormatError(str(file), "is a directory, not a matrix file")
    if not file.exists():
        if file.is_symlink():
            _broken_link(file)
        raise MatrixNotAvailableError(f"{file}: no such file")
    if not file.is_file():
        raise MatrixFormatError(str(file), "is not a regular file (a device, pipe or socket)")
    try:  # inline, not a helper: MatrixWarning stack levels count the frames down to here
        csr = reader(file, strict=strict)
    except MemoryError as exc:  # an allocation the size checks did not foresee
        raise MatrixTooLargeError(str(file), f"not enough memory to read it ({exc})") from None
    except OSError as exc:  # unreadable (permissions, I/O error): name the file, no traceback
        raise MatrixFormatError(str(file), f"cannot read file: {exc.strerror or exc}") from None
    stem = file.name[: len(file.name) - len(suffix)]
    return Matrix(name=name or stem, csr=csr, source=str(file))


def _broken_link(file: Path) -> None:
    """A symbolic link that leads nowhere: a loop, or a dangling target, named as such."""
    try:
        file.resolve(strict=True)
    except RuntimeError:  # Python < 3.13 raises RuntimeError for a loop
        raise MatrixNotAvailableError(f"{file}: symbolic link loop (it never reaches a "
                                      "file)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MatrixNotAvailableError(f"{file}: symbolic link loop (it never reaches a "
                                          "file)") from None
        raise MatrixNotAvailableError(
            f"{file}: dangling symbolic link to {os.readlink(file)} (no such file)") from None


def _canonical(matrix) -> sp.csr_matrix:
    csr = matrix.csr if isinstance(matrix, Matrix) else sp.csr_matrix(matrix)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    return make_csr(csr.data, csr.indices, csr.indptr, csr.shape)


def write_matrix(matrix: Matrix | sp.spmatrix, path: str | os.PathLike) -> Path:
    """Write a matrix to ``.mtx`` (coordinate real general), ``.mtx.gz``, ``.smtx`` or ``.npz``.

    ``.smtx`` stores the pattern only (its values read back as 1.0). The file is written beside
    the target and renamed over it, so a failure never leaves a half-written file.
    """
    target = Path(path)
    suffix = matrix_suffix(target)
    if suffix not in READERS:
        raise UsageError(str(_unknown_suffix(target)))
    csr = _canonical(matrix)
    with atomic_writer(target) as handle:
        _write(csr, suffix, handle)
    return target


def _write(csr: sp.csr_matrix, suffix: str, handle) -> None:
    if suffix == ".smtx":
        write_smtx(csr, handle)
    elif suffix == ".npz":
        sp.save_npz(handle, csr, compressed=False)
    else:
        import fast_matrix_market as fmm

        if suffix == ".mtx.gz":
            with gzip.GzipFile(fileobj=handle, mode="wb", compresslevel=6) as zipped:
                fmm.write_scipy(zipped, csr)
        else:
            fmm.write_scipy(handle, csr)
