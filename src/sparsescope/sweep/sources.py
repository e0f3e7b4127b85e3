"""What a sweep reads: SOURCE arguments expanded to small :class:`MatrixSource` records.

A SOURCE is

* a folder: every ``.mtx``, ``.mtx.gz``, ``.smtx`` and ``.npz`` inside, recursively, sorted,
  each named by its file stem (a repeated stem gets ``~2``) -- except a *DLMC tree*: a folder
  whose matrix files are all ``.smtx`` with at least one in a subfolder is read as
  ``dlmc:FOLDER``;
* ``dlmc:FOLDER``: every ``.smtx`` under FOLDER at any depth (kind ``dlmc``), each named by its
  path relative to FOLDER without ``.smtx``, ``/`` replaced by ``__``
  (``rn50/magnitude_pruning/0.8/bottleneck_2_block_group3_5_1.smtx`` ->
  ``rn50__magnitude_pruning__0.8__bottleneck_2_block_group3_5_1``), so names are unique;
* a glob, a single matrix file, a SuiteSparse ``Group/Name.tar.gz`` archive (its
  ``Name/Name.mtx`` read through a temporary file, streamed out of the archive);
* ``suite:NAME[#ENTRY[,ENTRY]][@SCALE]`` (a generated suite, each entry one source;
  ``#ENTRY``: those entries alone; parsed by :mod:`sparsescope.matrices.names`, which also
  reads the old forms ``NAME#ENTRY`` and ``NAME:ENTRY`` with a deprecation warning);
* ``suitesparse:FILTERS`` (a selection of the SuiteSparse collection from its published index,
  e.g. ``suitesparse:group=Williams,nnz=..5e7,real=1,limit=50``; see
  :mod:`sparsescope.sweep.suitesparse_index`) or ``suitesparse:Group/Name``: each matrix one
  source, loaded from the cache or downloaded by
  :func:`~sparsescope.matrices.suitesparse.fetch_suitesparse`.

A record holds a path or a reference, never the matrix: it travels to workers, which call
:func:`load_source`.
"""

from __future__ import annotations

import glob as globlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sparsescope.errors import UsageError
from sparsescope.matrices.io import READERS, matrix_suffix
from sparsescope.matrices.types import Matrix

SUITE_PREFIX = "suite:"
SUITESPARSE_PREFIX = "suitesparse:"
DLMC_PREFIX = "dlmc:"
SMTX_SUFFIX = ".smtx"
ARCHIVE_SUFFIX = ".tar.gz"


@dataclass(frozen=True)
class MatrixSource:
    """One matrix of a sweep, as a reference a worker can load."""

    ref: str
    """A file path, an archive path, ``suite:NAME@SCALE#ENTRY`` (the scale always written)
    or ``suitesparse:Group/Name``."""
    name: str
    """The matrix's name in results (unique within a sweep)."""
    kind: str
    """``file``, ``archive``, ``dlmc`` (a ``.smtx`` file), ``suite`` or ``suitesparse``."""


def _is_matrix_file(path: Path) -> bool:
    return path.is_file() and matrix_suffix(path) in READERS


def _is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIX)


def _stem(path: Path) -> str:
    name = path.name
    if _is_archive(path):
        return name[: -len(ARCHIVE_SUFFIX)]
    return name[: len(name) - len(matrix_suffix(path))]


def _file_source(path: Path) -> MatrixSource:
    kind = "archive" if _is_archive(path) else "file"
    return MatrixSource(ref=str(path), name=_stem(path), kind=kind)


def _suite_sources(name) -> list[MatrixSource]:
    """Each entry ``name`` (a ``matrices.names.SuiteName``) names, checked, one source each."""
    from sparsescope.matrices.selection import named_entries

    scale = 1.0 if name.scale is None else name.scale
    return [MatrixSource(ref=f"{SUITE_PREFIX}{name.suite}@{scale}#{e.name}", name=e.name,
                         kind="suite")
            for e in named_entries(name, scale)]


def _suitesparse_sources(spec: str) -> list[MatrixSource]:
    from sparsescope.sweep import suitesparse_index

    one = suitesparse_index.single_name(spec)
    names = [one] if one else [row.group_name for row in suitesparse_index.select(spec)]
    return [MatrixSource(ref=f"{SUITESPARSE_PREFIX}{gn}", name=gn.split("/")[1],
                         kind="suitesparse") for gn in names]


def _dlmc_sources(folder: Path, spec: str) -> list[MatrixSource]:
    if folder.is_file() and folder.name.lower().endswith(SMTX_SUFFIX):
        return [MatrixSource(ref=str(folder), name=_stem(folder), kind="dlmc")]
    if not folder.is_dir():
        raise UsageError(f"{spec}: no such folder (dlmc:FOLDER wants a folder of .smtx files)")
    found = sorted(p for p in folder.rglob("*")
                   if p.is_file() and p.name.lower().endswith(SMTX_SUFFIX))
    if not found:
        raise UsageError(f"{spec}: no .smtx file under {folder}")
    return [MatrixSource(ref=str(p), kind="dlmc",
                         name=p.relative_to(folder).as_posix()[:-len(SMTX_SUFFIX)]
                         .replace("/", "__"))
            for p in found]


def _is_dlmc_tree(folder: Path, found: list[Path]) -> bool:
    """Every matrix file is ``.smtx`` and one at least lies in a subfolder."""
    return all(p.name.lower().endswith(SMTX_SUFFIX) for p in found) and \
        any(p.parent != folder for p in found)


def _paths_of(spec: str) -> list[Path]:
    path = Path(spec)
    if path.is_dir():
        found = [p for p in path.rglob("*") if _is_matrix_file(p) or _is_archive(p)]
        if not found:
            raise UsageError(f"{spec}: no .mtx, .mtx.gz, .smtx, .npz or .tar.gz file inside")
        return sorted(found)
    if path.is_file():
        if not (_is_matrix_file(path) or _is_archive(path)):
            raise UsageError(f"{spec}: not a matrix file (.mtx, .mtx.gz, .smtx, .npz) nor a "
                             f"SuiteSparse Group/Name.tar.gz archive")
        return [path]
    if globlib.has_magic(spec):
        found = [Path(p) for p in globlib.glob(spec, recursive=True)]
        found = [p for p in found if _is_matrix_file(p) or (p.is_file() and _is_archive(p))]
        if not found:
            raise UsageError(f"{spec}: the glob matches no matrix file")
        return sorted(found)
    raise UsageError(f"{spec}: no such file or folder (give a folder, a glob, a matrix file, "
                     f"a Group/Name.tar.gz archive, dlmc:FOLDER, suite:NAME[#ENTRY][@SCALE] or "
                     f"suitesparse:FILTERS)")


def expand_sources(specs: list[str] | tuple[str, ...]) -> list[MatrixSource]:
    """Every matrix the SOURCE arguments name, in order, duplicates (same ref) dropped and
    names made unique (a second ``a.mtx`` becomes ``a~2``)."""
    if not specs:
        raise UsageError("give at least one SOURCE (a folder, glob, file, archive, dlmc:FOLDER, "
                         "suite:NAME or suitesparse:FILTERS)")
    sources: list[MatrixSource] = []
    from sparsescope.matrices.selection import user_matrix_name

    for spec in specs:
        suite = user_matrix_name(spec)  # suite:NAME#ENTRY@SCALE, or an old form (warns)
        if suite is not None:
            sources += _suite_sources(suite)
        elif spec.startswith(SUITESPARSE_PREFIX):
            sources += _suitesparse_sources(spec)
        elif spec.startswith(DLMC_PREFIX):
            sources += _dlmc_sources(Path(spec[len(DLMC_PREFIX):]).expanduser(), spec)
        else:
            paths = _paths_of(spec)
            folder = Path(spec)
            if folder.is_dir() and _is_dlmc_tree(folder, paths):
                sources += _dlmc_sources(folder, spec)
            else:
                sources += [_file_source(p) for p in paths]
    unique: dict[str, MatrixSource] = {}
    taken: dict[str, int] = {}
    for src in sources:
        if src.ref in unique:
            continue
        count = taken.get(src.name, 0) + 1
        taken[src.name] = count
        name = src.name if count == 1 else f"{src.name}~{count}"
        unique[src.ref] = MatrixSource(ref=src.ref, name=name, kind=src.kind)
    return list(unique.values())


def _load_archive(src: MatrixSource) -> Matrix:
    """``Name/Name.mtx`` of the archive, extracted under the byte and member caps (never the
    first ``.mtx`` that happens to come first; a tar bomb stops at its cap)."""
    from sparsescope.matrices.archive_read import read_archive

    # extraction already turns a broken archive into a MatrixFormatError naming it
    matrix = read_archive(Path(src.ref), name=src.name)
    return Matrix(name=src.name, csr=matrix.csr, source=src.ref)


def load_source(src: MatrixSource) -> Matrix:
    """The matrix ``src`` names (what a worker calls); a file that cannot be read raises the
    reader's :class:`~sparsescope.errors.MatrixFormatError`."""
    if src.kind == "suite":
        from sparsescope.matrices.selection import load_named_matrix

        return load_named_matrix(src.ref)
    if src.kind == "archive":
        return _load_archive(src)
    from sparsescope.matrices.io import read_matrix

    # a file (kinds file, dlmc) or suitesparse:Group/Name (fetch_suitesparse: cache, else
    # download, else MatrixNotAvailableError naming the URL and the cache path)
    return read_matrix(src.ref, name=src.name)


def matrix_hash(csr) -> str:
    """sha256 over shape, indptr, indices and data of the canonical CSR (hex, 16 digits):
    the same matrix read from another file or format has the same hash."""
    digest = hashlib.sha256()
    digest.update(np.asarray(csr.shape, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(csr.indptr, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(csr.indices, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(csr.data, dtype=np.float64).tobytes())
    return digest.hexdigest()[:16]


def source_hash(src: MatrixSource) -> str:
    """A key for a source that cannot be read: ``file-`` + sha256 of its bytes (a fixed file
    gets a new key), or of its reference when it cannot be opened."""
    digest = hashlib.sha256()
    try:
        with open(src.ref, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        digest.update(os.fsencode(src.ref))
    return "file-" + digest.hexdigest()[:16]
