"""What the client knows of a sweep's source before any worker loads it.

* :func:`source_identity`: a text that changes whenever the matrix the source names may have
  changed. The store remembers ``(ref, identity) -> content hash`` for every source a worker
  loaded (``ResultsStore.remember_sources``), so a resumed sweep finds a source's stored cases
  without loading it, and starts no cluster when every case is stored (issue 35: a 2-GPU sweep
  with all 350 cases stored took 38 s to run nothing).
* :func:`size_hint`: how many nonzeros the source holds, read from the file's header where
  that is cheap (a Matrix Market size line, the ``.npy`` header of an ``.npz`` member: exact
  stored entries, a symmetric file's doubled) or the suite's table, else estimated from the
  file's size: a cluster takes the largest matrices first, so that the last ones to finish
  are small (no GPU left alone with one large matrix at the end). A compressed ``.npz`` (what
  ``scripts/real_matrices.py`` writes) shrinks by its structure: its size alone misorders.

An identity is ``None`` when the client cannot tell (a file it cannot see, a SuiteSparse
matrix not in the cache yet): the source is then loaded, as before.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from sparsescope.sweep.sources import SUITE_PREFIX, SUITESPARSE_PREFIX, MatrixSource

#: Bytes one stored entry takes, per file type (typical of files programs write: a ``.mtx``
#: line ``123456 654321 1.234567890123457e-01``; ``.npz`` 4-byte index + 8-byte value;
#: ``.smtx`` about one index token; gzip shrinks text about 3x). Only the order of sizes
#: matters: they sort the matrices, largest first.
BYTES_PER_ENTRY = {".mtx": 30.0, ".mtx.gz": 10.0, ".npz": 12.0, ".smtx": 7.0,
                   ".tar.gz": 10.0}


@functools.lru_cache(maxsize=1)
def reader_fingerprint() -> str:
    """The first 12 hex digits of SHA-256 over the sparsescope version and every
    ``matrices/*.py`` file (names and contents): the code that turns a source into its CSR
    and so decides its content hash. A change to it makes every identity new."""
    import sparsescope
    import sparsescope.matrices as matrices

    digest = hashlib.sha256(sparsescope.__version__.encode() + b"\0")
    root = Path(matrices.__file__).parent
    for path in sorted(root.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _file_identity(path: str | os.PathLike) -> str | None:
    """Size, modification and change times (ns), inode and device: any write, rename over
    or copy onto the file changes one of them (``ctime`` cannot be set back by a user)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_dev}"


def _suitesparse_file(src: MatrixSource) -> Path | None:
    """Where ``suitesparse:Group/Name`` is cached (None when it is not: a worker downloads
    it, and its identity is unknown until then)."""
    from sparsescope.matrices.suitesparse import cache_root, split_name

    try:
        group, name = split_name(src.ref[len(SUITESPARSE_PREFIX):])
    except Exception:  # noqa: BLE001 (a name the worker will refuse with its own error)
        return None
    path = cache_root() / "suitesparse" / group / name / f"{name}.mtx"
    return path if path.is_file() else None


def source_identity(src: MatrixSource) -> str | None:
    """A text that is the same only while the matrix ``src`` names is the same: the reader
    code's fingerprint, then the file's size, times and inode (a file, an archive, a cached
    SuiteSparse matrix), or the suite reference alone (a generated matrix is a function of
    its reference and the generator code, inside the fingerprint); None when unknown."""
    if src.kind == "suite":
        return f"{reader_fingerprint()}|generated"
    path = _suitesparse_file(src) if src.kind == "suitesparse" else Path(src.ref)
    facts = None if path is None else _file_identity(path)
    return None if facts is None else f"{reader_fingerprint()}|{facts}"


def known_hashes(sources: Iterable[MatrixSource], remembered: dict[str, tuple[str, str]]
                 ) -> tuple[dict[MatrixSource, str], dict[MatrixSource, str]]:
    """``(content hash of each source whose identity matches what the store remembers,
    identity of every source that has one)``; ``remembered``: ``ResultsStore.
    source_hashes()``."""
    known: dict[MatrixSource, str] = {}
    identities: dict[MatrixSource, str] = {}
    for src in sources:
        identity = source_identity(src)
        if identity is None:
            continue
        identities[src] = identity
        seen = remembered.get(src.ref)
        if seen is not None and seen[0] == identity:
            known[src] = seen[1]
    return known, identities


def size_hint(src: MatrixSource) -> float:
    """About how many entries ``src`` holds (0 when unknown): a suite entry's own count, a
    file's header count (:func:`header_entries`), else its bytes over
    :data:`BYTES_PER_ENTRY` of its type."""
    if src.kind == "suite":
        return _suite_nnz(src.ref)
    path = _suitesparse_file(src) if src.kind == "suitesparse" else Path(src.ref)
    if path is None:
        return 0.0
    try:
        size = os.stat(path).st_size
    except OSError:
        return 0.0
    name = path.name.lower()
    suffix = next((s for s in sorted(BYTES_PER_ENTRY, key=len, reverse=True)
                   if name.endswith(s)), ".mtx")
    counted = header_entries(path, suffix)
    return counted if counted is not None else size / BYTES_PER_ENTRY[suffix]


def header_entries(path: Path, suffix: str) -> float | None:
    """The entries a file's header declares, without reading its body: a Matrix Market size
    line's count (doubled for a symmetric or skew-symmetric file, which stores one triangle),
    the element count of an ``.npz``'s ``data`` member (scipy's ``save_npz``; read from its
    ``.npy`` header through the zip stream, compressed or not); None for another type or a
    header that does not read (the worker reports the file's error)."""
    try:
        if suffix in (".mtx", ".mtx.gz"):
            from sparsescope.matrices.mtx_header import read_header

            header = read_header(path)
            return float(header.entries * (1 if header.symmetry == "general" else 2))
        if suffix == ".npz":
            return _npz_data_size(path)
    except Exception:  # noqa: BLE001 (any damage: the size estimate stands in)
        return None
    return None


def _npz_data_size(path: Path) -> float | None:
    """Elements of the ``data.npy`` member of an ``.npz`` (its header alone)."""
    import math
    import zipfile

    from numpy.lib import format as npy

    with zipfile.ZipFile(path) as archive, archive.open("data.npy") as member:
        version = npy.read_magic(member)
        read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, _, _ = read(member)
    return float(math.prod(shape))


def _suite_nnz(ref: str) -> float:
    """The nonzeros of suite entry ``suite:NAME@SCALE#ENTRY`` from the suite's table (nothing
    generated)."""
    from sparsescope.matrices.suites import suite_entries

    suite, _, rest = ref[len(SUITE_PREFIX):].partition("@")
    scale, _, entry = rest.partition("#")
    try:
        entries = suite_entries(suite, scale=float(scale))
    except Exception:  # noqa: BLE001 (the worker reports a bad reference with its reason)
        return 0.0
    return float(next((e.nnz for e in entries if e.name == entry), 0))


def largest_first(sources: Iterable[MatrixSource]) -> list[MatrixSource]:
    """``sources`` by :func:`size_hint`, largest first (ties keep their order): the longest
    jobs start first, so the sweep does not end on one large matrix while the other workers
    wait (longest-processing-time-first scheduling)."""
    order = list(sources)
    hints = {src: size_hint(src) for src in order}
    return sorted(order, key=lambda src: -hints[src])
