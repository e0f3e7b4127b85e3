"""Strict pre-validation of a Matrix Market body before ``fast_matrix_market`` sees it.

``fast_matrix_market`` reads each entry line as "integer, spaces, integer, spaces, number" and
then skips to the next newline, so it guesses silently on text that is not exactly that:
``2 2.5 2.0`` becomes entry (2, 2) = 0.5, ``1.0abc`` becomes 1.0, ``1e`` becomes 1, extra tokens
are ignored. Worse, a NUL byte after a number makes its ``strchr``-based skip to the next line
return NULL, and the process dies with a segmentation fault (exit 139).

:func:`check_body` streams the body once (8 MiB blocks) and returns True only when every entry
line matches the strict grammar of the header's field and the file holds exactly the announced
number of entry lines; then the fast parser cannot guess. A NUL byte is refused at once with its
line. Anything else (a defect, or text that is valid but irregular: blank or comment lines between
entries, a leading ``+`` on an index) returns False and the caller uses the exact Python scan
(:func:`~sparsescope.matrices._mtx_scan.scan_body`), which either names the line or reads it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices.mtx_header import MtxHeader, open_binary

BLOCK_BYTES = 1 << 23

_INT = rb"[0-9]++"
_SIGNED_INT = rb"[+-]?+[0-9]++"
_FLOAT = rb"[+-]?+(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)(?:[eE][+-]?+[0-9]++)?+"


def _grammar(tokens: list[bytes]) -> re.Pattern[bytes]:
    line = rb"[ \t]*+" + rb"[ \t]++".join(tokens) + rb"[ \t]*+\r?+\n"
    return re.compile(rb"(?:" + line + rb")*+")


_GRAMMARS = {
    ("coordinate", "real"): _grammar([_INT, _INT, _FLOAT]),
    ("coordinate", "integer"): _grammar([_INT, _INT, _SIGNED_INT]),
    ("coordinate", "pattern"): _grammar([_INT, _INT]),
    ("array", "real"): _grammar([_FLOAT]),
    ("array", "integer"): _grammar([_SIGNED_INT]),
}


def nul_error(path: str | Path, line: int, text: bytes) -> MatrixFormatError:
    column = text.find(b"\x00") + 1
    return MatrixFormatError(
        str(path), f"NUL byte (\\x00) at column {column}: the text is damaged (a file whose "
                   "tail was zero-filled by a crash looks like this)", line=line)


def _raise_nul(path, header: MtxHeader, lines_before: int, block: bytes) -> None:
    at = block.find(b"\x00")
    start = block.rfind(b"\n", 0, at) + 1
    end = block.find(b"\n", at)
    line = header.size_line + lines_before + block.count(b"\n", 0, at) + 1
    raise nul_error(path, line, block[start:end if end >= 0 else len(block)])


def _block_lines(grammar: re.Pattern[bytes], text: bytes, end: int, header: MtxHeader) -> int:
    """Entry lines of the whole lines ``text[:end]``, or -1 when one is not strictly valid."""
    found = fast_lines(text, end, header.field) if header.format == "coordinate" else None
    if found is None:
        if grammar.match(text, 0, end).end() != end:
            return -1
        found = text.count(b"\n", 0, end)
    return found


def _newlines(path: str | Path, header: MtxHeader, count: int) -> int:
    """Newlines in the first ``count`` bytes of the body (read again: only for an error)."""
    total = 0
    with open_binary(path) as fh:
        for _ in range(header.size_line):
            fh.readline()
        while count > 0 and (block := fh.read(min(count, BLOCK_BYTES))):
            total += block.count(b"\n")
            count -= len(block)
    return total


def check_body(path: str | Path, header: MtxHeader) -> bool:
    """True when the body is strictly well-formed (see the module docstring); raises
    :class:`MatrixFormatError` at a NUL byte; False when the exact scan must decide.

    Blocks are checked on a small thread pool (NumPy releases the GIL), at most a few in flight.
    """
    from concurrent.futures import ThreadPoolExecutor

    grammar = _GRAMMARS[(header.format, header.field)]
    lines = 0  # entry lines in the blocks already checked
    pending: list = []
    workers = max(1, min(4, os.cpu_count() or 1))

    def drain(keep: int) -> bool:
        nonlocal lines
        while len(pending) > keep:
            found = pending.pop(0).result()
            if found < 0:
                return False
            lines += found
        return True

    with open_binary(path) as fh, ThreadPoolExecutor(workers) as pool:
        for _ in range(header.size_line):
            fh.readline()
        carry = b""
        consumed = 0  # body bytes before ``carry``
        while True:
            block = fh.read(BLOCK_BYTES)
            at_end = not block
            text = carry + block
            if b"\x00" in block:
                if not drain(0):
                    return False  # an earlier defect: the exact scan names the first one
                _raise_nul(path, header, _newlines(path, header, consumed), text)
            if at_end:
                if not text.strip():
                    return drain(0) and not text and lines == header.entries
                if not text.endswith(b"\n"):
                    text += b"\n"  # a last line without its newline
                end = len(text)
            else:
                end = text.rfind(b"\n") + 1
            carry = text[end:]
            if end:
                consumed += end
                pending.append(pool.submit(_block_lines, grammar, text, end, header))
                if not drain(workers):
                    return False
            if at_end:
                return drain(0) and lines == header.entries


# --- the vectorised check of the common layout ------------------------------------------------
# Entry lines written by a program: single spaces, no leading or trailing blanks, "\n" endings.
# Every non-digit byte is an event; each gets a code (symbol x 2 + "digits right before it");
# the allowed successions of codes (the table below) spell exactly the strict grammar, and every
# line must hold exactly K-1 spaces. Anything else goes to the regular expression.

_SP, _LF, _SIGN, _DOT, _EXP, _XSIGN, _BAD = 1, 2, 3, 4, 5, 6, 7
_SYMBOL = bytearray([_BAD]) * 256
for _ch, _sym in ((b" ", _SP), (b"\n", _LF), (b"+", _SIGN), (b"-", _SIGN), (b".", _DOT),
                  (b"e", _EXP), (b"E", _EXP)):
    _SYMBOL[_ch[0]] = _sym
_SYMBOL = bytes(_SYMBOL)


def _code(symbol: int, digits_before: bool) -> int:
    return symbol * 2 + int(digits_before)


def _successions(field: str) -> np.ndarray:
    ok = np.zeros(256, dtype=bool)

    def allow(first: list[int], then: list[int]) -> None:
        for a in first:
            for b in then:
                ok[a * 16 + b] = True

    lf = [_code(_LF, False), _code(_LF, True)]
    sp1, lf1 = _code(_SP, True), _code(_LF, True)
    sign0, xsign0 = _code(_SIGN, False), _code(_XSIGN, False)
    dot0, dot1 = _code(_DOT, False), _code(_DOT, True)
    exp0, exp1 = _code(_EXP, False), _code(_EXP, True)
    allow(lf, [sp1])  # a line starts with an index token and its space
    if field == "pattern":
        allow([sp1], [lf1])
        return ok
    allow([sp1], [sp1])
    if field == "integer":
        allow([sp1], [sign0, lf1])
        allow([sign0], [lf1])
        return ok
    allow([sp1], [sign0, dot1, dot0, exp1, lf1])
    allow([sign0], [dot1, dot0, exp1, lf1])
    allow([dot1], [exp1, exp0, lf1, _code(_LF, False)])
    allow([dot0], [exp1, lf1])
    allow([exp1, exp0], [xsign0, lf1])
    allow([xsign0], [lf1])
    return ok


_SUCCESSIONS = {field: _successions(field) for field in ("real", "integer", "pattern")}


def fast_lines(text: bytes, end: int, field: str) -> int | None:
    """Entry lines in ``text[:end]`` (whole lines, starting a line) when they all have the common
    layout and are strictly valid; None when the regular expression must decide."""
    data = np.frombuffer(text, dtype=np.uint8, count=end)
    events = np.flatnonzero(np.subtract(data, 48, dtype=np.uint8) >= 10)
    if not len(events):
        return None
    symbols = np.frombuffer(data[events].tobytes().translate(_SYMBOL), dtype=np.uint8)
    codes = symbols * np.uint8(2)
    codes[1:] += (np.diff(events) > 1).view(np.uint8)
    codes[0] += np.uint8(events[0] > 0)
    exp_sign = np.flatnonzero(symbols[1:] == _SIGN) + 1
    exp_sign = exp_sign[symbols[exp_sign - 1] == _EXP]
    codes[exp_sign] = _code(_XSIGN, False) + (codes[exp_sign] & 1)
    ok = _SUCCESSIONS[field]
    if not ok[_code(_LF, True) * 16 + int(codes[0])]:
        return None
    pairs = codes[:-1] * np.uint8(16)
    pairs += codes[1:]
    if not ok[pairs].all():
        return None
    spaces = 1 if field == "pattern" else 2
    frame = symbols[symbols <= _LF]
    if len(frame) % (spaces + 1):
        return None
    frame = frame.reshape(-1, spaces + 1)
    if not ((frame[:, :spaces] == _SP).all() and (frame[:, spaces] == _LF).all()):
        return None
    return len(frame)
