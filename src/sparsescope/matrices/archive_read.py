"""Reading a SuiteSparse-style ``Name.tar.gz``: its ``Name/Name.mtx`` extracted under the caps of
:mod:`sparsescope.matrices.archive` into a temporary file, read, and every error relabelled with
the archive's own name (the temporary file is gone by the time a user reads the message).

Kept apart from :mod:`~sparsescope.matrices.archive` so that extraction (used by the SuiteSparse
cache, under :mod:`~sparsescope.matrices.io`) does not import the reader back.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sparsescope.errors import MatrixFormatError, MatrixNotAvailableError, MatrixTooLargeError
from sparsescope.matrices.archive import extract_matrix
from sparsescope.matrices.io import read_matrix
from sparsescope.matrices.types import Matrix


def _relabel(exc: MatrixFormatError, temp: Path, label: str) -> MatrixFormatError:
    """The same error, naming ``label`` (archive:member) instead of the temporary file."""
    text = str(exc)
    where = exc.path + (f", line {exc.line}" if exc.line is not None else
                        f", entry {exc.index}" if exc.index is not None else "")
    message = text[len(where) + 2:] if text.startswith(where + ": ") else text
    message = message.replace(str(temp), label)
    if isinstance(exc, MatrixTooLargeError):
        return MatrixTooLargeError(label, message, line=exc.line, needed_bytes=exc.needed_bytes,
                                   memory_bytes=exc.memory_bytes)
    return MatrixFormatError(label, message, line=exc.line, index=exc.index)


def read_archive(archive: str | os.PathLike, *, name: str | None = None, strict: bool = False):
    """Read ``Name/Name.mtx`` of the SuiteSparse-style ``Name.tar.gz`` ``archive`` (``Name`` is
    the file name less ``.tar.gz``) into a :class:`~sparsescope.matrices.types.Matrix`."""
    archive = Path(archive)
    if not archive.is_file():
        raise MatrixNotAvailableError(f"{archive}: no such file")
    stem = archive.name[:-len(".tar.gz")] if archive.name.endswith(".tar.gz") else archive.stem
    label = f"{archive}:{stem}/{stem}.mtx"
    with tempfile.TemporaryDirectory(prefix="sparsescope-archive-") as tmp:
        member = Path(tmp) / f"{stem}.mtx"
        extract_matrix(archive, stem, member)
        try:
            matrix = read_matrix(member, name=name or stem, strict=strict)
        except MatrixFormatError as exc:
            raise _relabel(exc, member, label) from None
    return Matrix(name=matrix.name, csr=matrix.csr, source=str(archive))



__all__ = ["read_archive"]
