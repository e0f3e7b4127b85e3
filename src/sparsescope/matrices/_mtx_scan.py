"""The slow, exact path of Matrix Market reading: find lines, re-parse text, word the error.

Used only when fast_matrix_market raises or a vectorised check finds a defect. Line lookups
stream the file in 16 MiB blocks (newlines counted in C) when no blank or comment line gets in
the way, and fall back to a Python pass over the lines otherwise.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices.mtx_header import MtxHeader, open_binary, short_text

BLOCK_BYTES = 1 << 24
"""Bytes read per block by the streaming line counters."""

_FMM_LINE = re.compile(r"[Ll]ine (\d+)")
"""fast_matrix_market names the line in most of its messages: "Line 7: ..."."""


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def _body_lines(path: str | Path, header: MtxHeader) -> Iterator[tuple[int, bytes]]:
    """Yield (line number, stripped line) for every line after the size line."""
    with open_binary(path) as fh:
        for lineno, raw in enumerate(itertools.islice(fh, header.size_line, None),
                                     start=header.size_line + 1):
            yield lineno, raw.strip()


def _entry_lines(path: str | Path, header: MtxHeader) -> Iterator[tuple[int, bytes]]:
    """Yield (line number, stripped line) for entry lines only (blank and % lines skipped)."""
    for lineno, text in _body_lines(path, header):
        if text and not text.startswith(b"%"):
            yield lineno, text


_IRREGULAR = re.compile(rb"\n[ \t\r]*(?:\n|%)")
"""A newline followed by a blank or ``%`` comment line."""


def _regular_prefix(path: str | Path, header: MtxHeader, lines_needed: int) -> bool:
    """True when the first ``lines_needed`` body lines are all entry lines (no blank or % line).

    Then entry k sits on line ``size_line + 1 + k``. Streams 16 MiB blocks, counting newlines
    and searching for an irregular line in C: about 0.3 s for a 350 MB file.
    """
    with open_binary(path) as fh:
        for _ in range(header.size_line):
            fh.readline()
        seen = 0
        partial = b""
        while seen < lines_needed:
            block = fh.read(BLOCK_BYTES)
            if not block:
                stripped = partial.strip()
                return bool(stripped) and not stripped.startswith(b"%") and \
                    seen + 1 >= lines_needed
            text = b"\n" + partial + block  # the leading newline ends the line before
            match = _IRREGULAR.search(text)
            if match and seen + text.count(b"\n", 0, match.start() + 1) <= lines_needed:
                return False
            seen += text.count(b"\n") - 1
            partial = text[text.rfind(b"\n") + 1:]
    return True


def locate_entries(path: str | Path, header: MtxHeader, wanted: list[int]) -> dict[int, int]:
    """Map 0-based entry indices to their 1-based line numbers.

    Fast when no blank or comment line precedes the last wanted entry (the usual case): line
    ``size_line + 1 + k``. Otherwise one Python pass over the lines.
    """
    if _regular_prefix(path, header, max(wanted) + 1):
        return {k: header.size_line + 1 + k for k in wanted}
    remaining = set(wanted)
    found: dict[int, int] = {}
    last = max(wanted)
    for k, (lineno, _) in enumerate(_entry_lines(path, header)):
        if k in remaining:
            found[k] = lineno
        if k >= last:
            break
    return found


def line_text(path: str | Path, lineno: int) -> bytes:
    """The stripped text of 1-based line ``lineno`` (skipping lines in C)."""
    with open_binary(path) as fh:
        return next(itertools.islice(fh, lineno - 1, None), b"").strip()


_INDEX = re.compile(rb"[+-]?[0-9]+")
_NUMBER = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = re.compile(rb"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)


def _parse_index(p: str, lineno: int, token: bytes, what: str, limit: int) -> int:
    if b"\x00" in token:
        raise MatrixFormatError(p, f"NUL byte (\\x00) in the {what} index "
                                   f"'{short_text(token)}': the text is damaged", line=lineno)
    if not _INDEX.fullmatch(token):
        raise MatrixFormatError(p, f"{what} index '{short_text(token)}' is not an integer",
                                line=lineno)
    value = int(token)
    if not 1 <= value <= limit:
        raise MatrixFormatError(p, f"{what} index {value} out of range 1..{limit}", line=lineno)
    return value - 1


def _parse_value(p: str, lineno: int, token: bytes, field: str = "real") -> float:
    """A value token, strictly: a decimal number (an integer for field ``integer``); nothing
    before or after it, no hexadecimal, no underscores, no comma decimal separator."""
    if b"\x00" in token:
        raise MatrixFormatError(p, f"NUL byte (\\x00) in the value '{short_text(token)}': the "
                                   "text is damaged", line=lineno)
    if _NON_FINITE.fullmatch(token):
        raise MatrixFormatError(p, f"value '{short_text(token)}' is not finite (NaN or infinity)",
                                line=lineno)
    if field == "integer" and not _INDEX.fullmatch(token):
        raise MatrixFormatError(
            p, f"value '{short_text(token)}' is not an integer (the banner declares field "
               "'integer')", line=lineno)
    if not _NUMBER.fullmatch(token):
        raise MatrixFormatError(p, f"value '{short_text(token)}' is not a number",
                                line=lineno)
    value = float(token)
    if not math.isfinite(value):
        raise MatrixFormatError(p, f"value '{short_text(token)}' is not finite (NaN or infinity)",
                                line=lineno)
    return value


def parse_entry(p: str, header: MtxHeader, lineno: int, text: bytes) -> tuple[int, int, float]:
    """Check one entry line fully; return 0-based (row, col, value) (row=col=-1 for arrays)."""
    tokens = text.split()
    if header.format == "array":
        if len(tokens) != 1:
            raise MatrixFormatError(
                p, f"expected 1 value per line in an array file, found {len(tokens)}: "
                   f"'{short_text(text)}'", line=lineno)
        return -1, -1, _parse_value(p, lineno, tokens[0], header.field)
    pattern = header.field == "pattern"
    need = 2 if pattern else 3
    if len(tokens) != need:
        shape = "'row col'" if pattern else "'row col value'"
        raise MatrixFormatError(
            p, f"expected {need} fields {shape}, found {len(tokens)}: '{short_text(text)}'",
            line=lineno)
    row = _parse_index(p, lineno, tokens[0], "row", header.rows)
    col = _parse_index(p, lineno, tokens[1], "column", header.cols)
    value = 1.0 if pattern else _parse_value(p, lineno, tokens[2], header.field)
    if header.symmetry == "skew-symmetric" and row == col and value != 0.0:
        raise MatrixFormatError(
            p, f"skew-symmetric matrix has a nonzero diagonal entry ({row + 1}, {col + 1}) = "
               f"{value:g}; its diagonal must be zero", line=lineno)
    return row, col, value


def _check_hint(p: str, path: str | Path, header: MtxHeader, lineno: int) -> None:
    """Parse the one line fast_matrix_market blamed; raise if it is bad on its own."""
    if lineno <= header.size_line:
        return
    text = line_text(path, lineno)
    if text and not text.startswith(b"%"):
        parse_entry(p, header, lineno, text)


_SKIPPED_LINE = re.compile(rb"\n(?=[ \t\r]*(?:\n|%))")
"""Matches at the newline before each blank or ``%`` line (a lookahead: consecutive ones count)."""


def count_entry_lines(path: str | Path, header: MtxHeader) -> tuple[int, int]:
    """(entry lines after the size line, number of the file's last line), streamed in C.

    Same counting as the Python scan (blank and ``%`` lines skipped, a last line without a
    newline counted) at block speed: about 0.5 s for a 350 MB file.
    """
    terminated = skipped = 0
    partial = b""
    with open_binary(path) as fh:
        for _ in range(header.size_line):
            fh.readline()
        while block := fh.read(BLOCK_BYTES):
            text = b"\n" + partial + block  # the leading newline ends the line before
            last_newline = text.rfind(b"\n")
            skipped += sum(1 for m in _SKIPPED_LINE.finditer(text, 0, last_newline + 1)
                           if m.start() < last_newline)
            terminated += text.count(b"\n") - 1
            partial = text[last_newline + 1:]
    tail = partial.strip()
    entries = terminated - skipped + (1 if tail and not tail.startswith(b"%") else 0)
    return entries, header.size_line + terminated + (1 if partial else 0)


def check_entry_count(path: str | Path, header: MtxHeader) -> None:
    """Raise when the file holds fewer or more entry lines than its size line announces."""
    p = str(path)
    entries, last_line = count_entry_lines(path, header)
    if entries < header.entries:
        raise MatrixFormatError(
            p, f"file ends at line {last_line} after {entries} of the "
               f"{_entries(header.entries)} announced by the size line (line {header.size_line})",
            line=last_line)
    if entries > header.entries:
        line = locate_entries(path, header, [header.entries])[header.entries]
        raise MatrixFormatError(
            p, f"extra entry: the size line (line {header.size_line}) announces "
               f"{_entries(header.entries)}", line=line)


def scan_body(path: str | Path, header: MtxHeader, hint: BaseException | None = None):
    """Exact re-scan: raise a precise error for the first defect, else return the entries.

    With ``hint`` (the parser's exception) the line it names is checked first and then the
    entry count, both fast; only then is every line parsed in Python. Blank lines and ``%``
    comment lines between entries are allowed. Returns ``(rows, cols, values)`` 0-based arrays
    for coordinate files, or the values in file order for array files.
    """
    p = str(path)
    if hint is not None:
        match = _FMM_LINE.search(str(hint))
        if match:
            _check_hint(p, path, header, int(match.group(1)))
        check_entry_count(path, header)
    rows: list[int] = []
    cols: list[int] = []
    values: list[float] = []
    count = 0
    last_line = header.size_line
    for lineno, text in _body_lines(path, header):
        last_line = lineno
        if not text or text.startswith(b"%"):
            continue
        if count == header.entries:
            raise MatrixFormatError(
                p, f"extra entry: the size line (line {header.size_line}) announces "
                   f"{_entries(header.entries)}", line=lineno)
        row, col, value = parse_entry(p, header, lineno, text)
        rows.append(row)
        cols.append(col)
        values.append(value)
        count += 1
    if count < header.entries:
        raise MatrixFormatError(
            p, f"file ends at line {last_line} after {count} of the {_entries(header.entries)} "
               f"announced by the size line (line {header.size_line})", line=last_line)
    if header.format == "array":
        return np.asarray(values, dtype=np.float64)
    return (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
            np.asarray(values, dtype=np.float64))
