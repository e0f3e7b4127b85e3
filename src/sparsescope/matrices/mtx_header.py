"""Matrix Market banner and size line: parsed in Python, checked word by word.

Also the wording of a damaged ``.gz`` file (bad magic, corrupt or truncated stream) for every
reader of Matrix Market text: :data:`GZIP_ERRORS` are what Python's gzip raises for them.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass
from pathlib import Path

from sparsescope.errors import MatrixFormatError

BANNER = "%%MatrixMarket"
BANNER_HELP = "'%%MatrixMarket matrix <coordinate|array> <real|integer|pattern> <symmetry>'"
FORMATS = ("coordinate", "array")
FIELDS = ("real", "integer", "pattern")
SYMMETRIES = ("general", "symmetric", "skew-symmetric")


@dataclass(frozen=True)
class MtxHeader:
    """What the banner and the size line of a Matrix Market file say."""

    format: str
    """``coordinate`` or ``array``."""
    field: str
    """``real``, ``integer`` or ``pattern``."""
    symmetry: str
    """``general``, ``symmetric`` or ``skew-symmetric``."""
    rows: int
    cols: int
    entries: int
    """Entries stored in the file: the third number of a coordinate size line, or the count of
    values an array file must hold for its symmetry."""
    size_line: int
    """1-based line number of the size line; the body starts after it."""


def open_binary(path: str | Path):
    """Open a file for binary reading, through gzip when it ends in ``.gz``."""
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)
"""What reading a damaged ``.gz`` raises: truncated stream, corrupt deflate data, bad header."""

_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_BLOCK = 1 << 20
_GZIP_PIECE = 256
"""A block that fails to inflate is fed again in pieces this small, to place the damage."""


def _inflate(stream, data: bytes, newlines: int):
    """Feed ``data`` to a gzip decompressor; return (newlines so far, decompressor). A further
    member after the end of one (concatenated .gz files) starts a new decompressor."""
    while data:
        newlines += stream.decompress(data).count(b"\n")
        data = stream.unused_data if stream.eof else b""
        if data:
            stream = zlib.decompressobj(wbits=31)
    return newlines, stream


def gzip_damage(path: str | Path) -> tuple[int | None, str] | None:
    """Where and why a gzip file cannot be decompressed: (1-based line of the decompressed text
    where reading stops, or None for a bad header; cause), or None when the stream is whole.

    One streamed pass (1 MiB blocks through zlib, newlines counted in C; a failing block is fed
    again in 256-byte pieces to place the damage); only called once a read has failed, so a good
    file never pays for it.
    """
    with open(path, "rb") as fh:
        head = fh.read(2)
        if head != _GZIP_MAGIC:
            shown = head.hex(" ") if head else "nothing (the file is empty)"
            return None, (f"not a gzip file: it starts with {shown}, a .gz file starts with "
                          "1f 8b")
        fh.seek(0)
        newlines = 0
        stream = zlib.decompressobj(wbits=31)
        while block := fh.read(_GZIP_BLOCK):
            saved, saved_newlines = stream.copy(), newlines
            try:
                newlines, stream = _inflate(stream, block, newlines)
            except zlib.error:
                stream, newlines = saved, saved_newlines
                try:
                    for i in range(0, len(block), _GZIP_PIECE):
                        newlines, stream = _inflate(stream, block[i:i + _GZIP_PIECE], newlines)
                except zlib.error as exc:
                    return newlines + 1, (f"compressed stream is corrupt ({exc}); it fails to "
                                          "decompress past this line")
        if not stream.eof:
            return newlines + 1, ("compressed stream ends early, in this line: the .gz file is "
                                  "truncated (no gzip end-of-stream marker)")
    return None


def gzip_error(path: str | Path, exc: BaseException) -> MatrixFormatError:
    """A :class:`MatrixFormatError` for a damaged ``.gz``, naming where its text stops."""
    damage = gzip_damage(path)
    if damage is None:
        return MatrixFormatError(str(path), f"cannot decompress: {exc}")
    line, cause = damage
    return MatrixFormatError(str(path), cause, line=line)


def short_text(raw: bytes, limit: int = 80) -> str:
    """The text of ``raw`` for a message: control bytes (a NUL) shown as ``\\xNN``."""
    text = raw.decode("latin-1").strip()
    text = text if len(text) <= limit else text[:limit] + "..."
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def read_header(path: str | Path) -> MtxHeader:
    """Parse and check the banner and size line; raise :class:`MatrixFormatError` on any defect."""
    p = str(path)
    try:
        return _parse_header(p, path)
    except GZIP_ERRORS as exc:
        raise gzip_error(path, exc) from None
    except OSError as exc:
        raise MatrixFormatError(p, f"cannot read file: {exc.strerror or exc}") from None


def _parse_header(p: str, path: str | Path) -> MtxHeader:
    with open_binary(path) as fh:
        first = fh.readline()
        tokens = first.decode("latin-1").split()
        if not first and p.endswith(".gz") and gzip_damage(path) is not None:
            # Python's gzip reads an empty file as empty text; it is no gzip file at all
            raise gzip_error(path, EOFError("empty file"))
        if not tokens or tokens[0] != BANNER:
            found = short_text(first) or "an empty line"
            raise MatrixFormatError(p, f"bad banner: expected {BANNER_HELP}, found '{found}'",
                                    line=1)
        if len(tokens) != 5:
            raise MatrixFormatError(
                p, f"bad banner: expected 5 words {BANNER_HELP}, found {len(tokens)}", line=1)
        obj, fmt, field, symmetry = (t.lower() for t in tokens[1:])
        _check_banner(p, obj, fmt, field, symmetry)
        lineno = 1
        size_raw = b""
        for raw in fh:
            lineno += 1
            stripped = raw.strip()
            if stripped and not stripped.startswith(b"%"):
                size_raw = stripped
                break
        if not size_raw:
            raise MatrixFormatError(p, "file ends before the size line", line=lineno)
    want = 3 if fmt == "coordinate" else 2
    shape_help = "'rows cols entries'" if want == 3 else "'rows cols'"
    parts = size_raw.split()
    numbers = [int(t) for t in parts] if all(t.isdigit() for t in parts) else []
    if len(numbers) != want or min(numbers) < 0:
        raise MatrixFormatError(
            p, f"bad size line: expected {shape_help} as {want} non-negative integers, "
               f"found '{short_text(size_raw)}'", line=lineno)
    rows, cols = numbers[0], numbers[1]
    if rows == 0 or cols == 0:
        raise MatrixFormatError(p, f"empty matrix: the size line gives {rows} x {cols}",
                                line=lineno)
    if symmetry != "general" and rows != cols:
        raise MatrixFormatError(
            p, f"a {symmetry} matrix must be square; the size line gives {rows} x {cols}",
            line=lineno)
    if want == 3:
        entries = numbers[2]
    elif symmetry == "general":
        entries = rows * cols
    elif symmetry == "symmetric":
        entries = rows * (rows + 1) // 2
    else:
        entries = rows * (rows - 1) // 2
    if entries == 0:
        raise MatrixFormatError(p, "empty matrix: the size line announces 0 entries", line=lineno)
    return MtxHeader(fmt, field, symmetry, rows, cols, entries, lineno)


def _check_banner(p: str, obj: str, fmt: str, field: str, symmetry: str) -> None:
    if obj != "matrix":
        raise MatrixFormatError(p, f"unsupported object '{obj}' (only 'matrix')", line=1)
    if fmt not in FORMATS:
        raise MatrixFormatError(p, f"unknown format '{fmt}' (expected coordinate or array)",
                                line=1)
    if field == "complex":
        raise MatrixFormatError(
            p, "field 'complex' is not supported (expected real, integer or pattern)", line=1)
    if field not in FIELDS:
        raise MatrixFormatError(p, f"unknown field '{field}' (expected real, integer or pattern)",
                                line=1)
    if symmetry == "hermitian":
        raise MatrixFormatError(
            p, "symmetry 'hermitian' is not supported (it needs complex values)", line=1)
    if symmetry not in SYMMETRIES:
        raise MatrixFormatError(
            p, f"unknown symmetry '{symmetry}' (expected general, symmetric or skew-symmetric)",
            line=1)
    if fmt == "array" and field == "pattern":
        raise MatrixFormatError(p, "field 'pattern' is not allowed with format 'array'", line=1)
