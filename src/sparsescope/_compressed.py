"""Files that may be compressed, gzip or xz, read and written by one set of helpers.

Results folders keep large files compressed: JSON was gzipped (``results.json.gz``) and is now
xz-compressed with its floats rounded (``results.json.xz``, written by ``sparsescope results
compact``). A reader opens either through :func:`read_bytes` (or :func:`read_text`,
:func:`read_json`): the format is told by the file's first bytes, not its name, so a file reads
the same whatever it is called. A damaged file is a :class:`~sparsescope.errors.ResultsFormatError`
naming it and what is wrong (``results.json.xz: cannot read: damaged xz data (Corrupt input
data)``); a missing or unreadable one is the ``OSError`` of the read, for the caller to word.

Other large files (ncu's CSV exports ``NAME_raw.csv.xz``, logs, Markdown) are kept compressed
the same way, under their name plus ``.xz`` (or ``.gz``, as results folders kept them before):
:func:`kept_file` finds a file as it is kept, :func:`compressed_files` lists a folder's,
:func:`without_compression` is a name less that suffix.

Writers pick the format by the name asked for (:func:`compress`): ``.xz`` -> xz, ``.gz`` ->
gzip, anything else as it is; :func:`write_bytes_compressed_atomic` and :func:`write_json`
write the way :mod:`sparsescope._atomic` does (a failure midway leaves the old file intact).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sparsescope._atomic import write_bytes_atomic
from sparsescope.errors import ResultsFormatError

GZIP_MAGIC = b"\x1f\x8b"
"""The first bytes of a gzip file."""
XZ_MAGIC = b"\xfd7zXZ\x00"
"""The first bytes of an xz file."""
JSON_SUFFIXES = (".json", ".json.xz", ".json.gz")
"""The names a JSON file is kept under: plain, xz (what ``results compact`` writes) or gzip
(what results folders kept before)."""
COMPRESSED_SUFFIXES = (".xz", ".gz")
"""The suffixes of a compressed file's name, the preferred first: xz, then gzip (what results
folders kept before)."""


def _xz_preset() -> int:
    """xz's strongest preset (9, extreme): results files are written once and read many times,
    and a 7 MB file takes about two seconds."""
    import lzma

    return 9 | lzma.PRESET_EXTREME


def compression_of(data: bytes) -> str | None:
    """``"xz"``, ``"gzip"`` or None (not compressed), from the first bytes of a file."""
    if data.startswith(XZ_MAGIC):
        return "xz"
    if data.startswith(GZIP_MAGIC):
        return "gzip"
    return None


def decompress(data: bytes, path: str | os.PathLike) -> bytes:
    """``data`` (the contents of ``path``) decompressed when it is gzip or xz, else as it is.
    Damaged or truncated data is a ``ResultsFormatError`` naming ``path``."""
    kind = compression_of(data)
    if kind is None:
        return data
    import gzip
    import lzma
    import zlib

    try:
        return lzma.decompress(data) if kind == "xz" else gzip.decompress(data)
    except (lzma.LZMAError, OSError, EOFError, zlib.error) as exc:
        what = str(exc) or type(exc).__name__
        raise ResultsFormatError(f"{path}: cannot read: damaged {kind} data ({what})") from None


def read_bytes(path: str | os.PathLike) -> bytes:
    """The contents of ``path``, decompressed when it is gzip or xz."""
    return decompress(Path(path).read_bytes(), path)


def read_text(path: str | os.PathLike, encoding: str = "utf-8") -> str:
    """The text of ``path``, decompressed when it is gzip or xz."""
    return read_bytes(path).decode(encoding)


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document of ``path`` (plain, gzip or xz); ``json.JSONDecodeError`` (a
    ``ValueError``) when it is not JSON."""
    import json

    return json.loads(read_bytes(path))


def compress(data: bytes, path: str | os.PathLike) -> bytes:
    """``data`` as a file named ``path`` holds it: xz for ``.xz``, gzip for ``.gz`` (no time
    stamp in the header, so equal data gives equal files), as it is otherwise."""
    name = os.fspath(path)
    if name.endswith(".xz"):
        import lzma

        return lzma.compress(data, preset=_xz_preset())
    if name.endswith(".gz"):
        import gzip

        return gzip.compress(data, compresslevel=9, mtime=0)
    return data


def write_bytes_compressed_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically, compressed as the name says (:func:`compress`)."""
    return write_bytes_atomic(path, compress(data, path))


def write_json(path: str | os.PathLike, data: Any) -> Path:
    """``data`` as indented JSON at ``path``, atomically, compressed as the name says (a
    ``NAME.json.xz`` xz, a ``NAME.json.gz`` gzip, a ``NAME.json`` plain)."""
    import json

    text = json.dumps(data, indent=2) + "\n"
    return write_bytes_compressed_atomic(path, text.encode("utf-8"))


def kept_file(path: str | os.PathLike) -> Path | None:
    """``path`` as it is kept: the file itself, else its ``.xz`` or ``.gz`` copy; None when
    there is none of them."""
    path = Path(path)
    for candidate in (path, *(path.with_name(path.name + s) for s in COMPRESSED_SUFFIXES)):
        if candidate.is_file():
            return candidate
    return None


def without_compression(name: str) -> str:
    """``name`` less a ``.xz`` or ``.gz`` suffix: ``A_raw.csv.xz`` -> ``A_raw.csv``."""
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def compressed_files(folder: str | os.PathLike, pattern: str) -> list[Path]:
    """The compressed files in ``folder`` whose name less ``.xz`` / ``.gz`` matches the glob
    ``pattern`` (``*_raw.csv`` finds ``A_raw.csv.xz`` and ``B_raw.csv.gz``), sorted by name;
    where both copies of one name are there, the ``.xz`` one."""
    found: dict[str, Path] = {}
    for suffix in reversed(COMPRESSED_SUFFIXES):     # the preferred suffix last, so it wins
        for path in Path(folder).glob(pattern + suffix):
            if path.is_file():
                found[without_compression(path.name)] = path
    return sorted(found.values(), key=lambda p: p.name)
