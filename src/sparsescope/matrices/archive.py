"""SuiteSparse-style archives (``Name.tar.gz`` holding ``Name/Name.mtx``): the one right member,
extracted with caps.

Only the member named exactly ``Name/Name.mtx`` is taken (an archive also holds right-hand sides
such as ``Name/Name_b.mtx``, which must never be measured in its place); without it the error
lists the ``.mtx`` members found. Extraction streams the archive once and stops with a clear
error past :data:`MAX_MEMBERS` members or when the member would exceed the byte cap
(:func:`byte_cap`: a tar bomb cannot fill the disk). Errors name the archive and its member,
never a temporary file.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from pathlib import Path

from sparsescope.errors import MatrixFormatError, MatrixTooLargeError

MAX_MEMBERS = 10_000
"""Members an archive may hold before the scan stops (SuiteSparse archives hold a handful)."""
MAX_RATIO = 100
"""An extracted member may be at most this many times the compressed archive (Matrix Market
text compresses 3-10x)..."""
MIN_CAP_BYTES = 256 << 20
"""...and at least this (small archives of very regular text), ..."""
MAX_CAP_BYTES = 64 << 30
"""...and never more than this, unless ``SPARSESCOPE_ARCHIVE_MAX_BYTES`` says otherwise."""


def byte_cap(archive: Path) -> int:
    """Bytes the matrix member of ``archive`` may expand to (see the module constants)."""
    env = os.environ.get("SPARSESCOPE_ARCHIVE_MAX_BYTES", "").strip()
    if env.isdigit():
        return int(env)
    size = archive.stat().st_size
    return min(MAX_CAP_BYTES, max(MIN_CAP_BYTES, MAX_RATIO * size))


def _copy_capped(src, target, cap: int, archive: Path, member: str) -> None:
    written = 0
    while chunk := src.read(1 << 20):
        written += len(chunk)
        if written > cap:
            raise MatrixTooLargeError(
                str(archive), f"member {member} expands past {cap:,} bytes, the extraction cap "
                              f"for this {archive.stat().st_size:,}-byte archive (set "
                              "SPARSESCOPE_ARCHIVE_MAX_BYTES to allow more); refused as a "
                              "possible tar bomb", needed_bytes=written)
        target.write(chunk)


def extract_matrix(archive: str | os.PathLike, name: str, out: str | os.PathLike) -> None:
    """Stream ``name/name.mtx`` of the ``.tar.gz`` ``archive`` into the file ``out``."""
    archive = Path(archive)
    wanted = f"{name}/{name}.mtx"
    cap = byte_cap(archive)
    seen: list[str] = []
    try:
        with tarfile.open(archive, mode="r|gz") as tar:  # streaming: members in order
            for count, member in enumerate(tar, start=1):
                if count > MAX_MEMBERS:
                    raise MatrixFormatError(
                        str(archive), f"more than {MAX_MEMBERS:,} members before {wanted}; "
                                      "refused as a possible tar bomb")
                if member.name.lstrip("./") != wanted:
                    if member.name.endswith(".mtx"):
                        seen.append(member.name)
                    continue
                if not member.isfile():
                    raise MatrixFormatError(str(archive), f"member {wanted} is not a file")
                if member.size > cap:
                    raise MatrixTooLargeError(
                        str(archive), f"member {wanted} declares {member.size:,} bytes, past "
                                      f"the extraction cap of {cap:,} (set "
                                      "SPARSESCOPE_ARCHIVE_MAX_BYTES to allow more)",
                        needed_bytes=member.size)
                handle = tar.extractfile(member)
                with open(out, "wb") as target:
                    _copy_capped(handle, target, cap, archive, wanted)
                return
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise MatrixFormatError(str(archive), f"cannot extract the archive: {exc}") from None
    found = f"it holds {', '.join(seen[:5])}" if seen else "it holds no .mtx at all"
    raise MatrixFormatError(
        str(archive), f"the archive holds no {wanted} ({found}; a SuiteSparse archive "
                      "Name.tar.gz holds its matrix as Name/Name.mtx)")


def extract_into(archive: Path, dest: Path, name: str) -> None:
    """Extract ``name/name.mtx`` of ``archive`` to ``dest`` atomically (a temporary file beside
    it, renamed), with the caps of :func:`extract_matrix`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    os.close(fd)
    try:
        extract_matrix(archive, name, tmp)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


__all__ = ["extract_into", "extract_matrix"]
