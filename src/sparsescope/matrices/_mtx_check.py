"""Strict validation of a Matrix Market body as ``fast_matrix_market`` reads it.

``fast_matrix_market`` reads each entry line as "integer, spaces, integer, spaces, number" and
then skips to the next newline, so it guesses silently on text that is not exactly that:
``2 2.5 2.0`` becomes entry (2, 2) = 0.5, ``1.0abc`` becomes 1.0, ``1e`` becomes 1, extra tokens
are ignored. Worse, a NUL byte after a number makes its ``strchr``-based skip to the next line
return NULL, and the process dies with a segmentation fault (exit 139).

:class:`CheckedBody` is the file as the parser reads it: the header as it is (the caller parsed
it), then the body in blocks of whole lines (:data:`BLOCK_BYTES`), read ahead and checked
against the strict grammar of the header's field on a few threads, handed over in file order
once checked. A ``.gz`` is decompressed once: the parser reads these blocks as they come
(issue 35: it was decompressed once by the check and again by the parser). A plain file is
checked first and then read by the parser's own reader (``mtx._parsed_checked``). The first
block that is not strictly valid ends the text the parser gets, and
:attr:`CheckedBody.strict` is False: the caller then uses the exact Python scan
(:func:`~sparsescope.matrices._mtx_scan.scan_body`), which names the defect's line or reads
valid but irregular text (blank or comment lines between entries, a leading ``+`` on an
index), never guessing. A NUL byte is never handed over: :attr:`CheckedBody.nul` holds the
error naming its line.
"""

from __future__ import annotations

import os
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices.mtx_header import GZIP_ERRORS, MtxHeader, open_binary

#: Bytes the vectorised check takes at a time: 1 MiB keeps its NumPy temporaries in the CPU
#: caches (8 MiB blocks cost about 1.5x the CPU time on the 2-core machine).
BLOCK_BYTES = 1 << 20
#: Blocks read and checked at once, on as many threads (NumPy releases the GIL), while the
#: parser's own threads parse the text handed over before.
CHECK_THREADS = max(1, min(4, os.cpu_count() or 1))

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


def _nul_in(path, first_line: int, block: bytes) -> MatrixFormatError:
    """The error of the first NUL byte of ``block``, whose first line is ``first_line``."""
    at = block.find(b"\x00")
    start = block.rfind(b"\n", 0, at) + 1
    end = block.find(b"\n", at)
    line = first_line + block.count(b"\n", 0, at)
    return nul_error(path, line, block[start:end if end >= 0 else len(block)])


def _block_lines(grammar: re.Pattern[bytes], text: bytes, header: MtxHeader) -> int:
    """Entry lines of the whole lines ``text``, or -1 when one is not strictly valid."""
    found = fast_lines(text, len(text), header.field) if header.format == "coordinate" else None
    if found is None:
        if grammar.match(text).end() != len(text):
            return -1
        found = text.count(b"\n")
    return found


class CheckedBody:
    """A Matrix Market file opened for the fast parser (a binary stream with ``read``): see
    the module docstring. Blocks are read ahead and checked on a small thread pool (up to
    ``2 x`` :data:`CHECK_THREADS` in flight), and handed over in file order once checked.
    After the parser, :meth:`finish` checks what it left unread; then :attr:`strict` says
    whether every body line was strictly valid and the file held exactly the announced number
    of entry lines, :attr:`nul` holds the error of a NUL byte, and :attr:`error` the read
    error (a damaged ``.gz``, an I/O error) that ended the text."""

    def __init__(self, path: str | Path, header: MtxHeader) -> None:
        self.path, self.header = path, header
        self.grammar = _GRAMMARS[(header.format, header.field)]
        self.file = open_binary(path)
        self.head = b"".join(self.file.readline() for _ in range(header.size_line))
        self.carry = b""
        self.lines = 0       # entry lines handed over: every body line so far
        self.ended = False   # the whole body was read
        self.stopped = False  # a block was refused: nothing more is handed over
        self.nul: MatrixFormatError | None = None
        self.error: BaseException | None = None
        self.pool: ThreadPoolExecutor | None = None
        self.ahead: deque = deque()  # (block, its check: a future or a done count, has NUL)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """The header, then the next strictly valid block of whole lines; ``b""`` at the end
        of the body or from the first block that is not strictly valid."""
        if self.head:
            head, self.head = self.head, b""
            return head
        while not self.stopped:
            self._read_ahead()
            if not self.ahead:
                return b""
            block, check, nul = self.ahead.popleft()
            found = check if isinstance(check, int) else check.result()
            if found < 0 or nul:
                if found >= 0:  # every line before the NUL byte valid: the NUL is the defect
                    self.nul = _nul_in(self.path, self.header.size_line + self.lines + 1,
                                       block)
                self.stopped = True
                self.ahead.clear()
                return b""
            self.lines += found  # every line of a strictly valid block is an entry line
            return block
        return b""

    def _read_ahead(self) -> None:
        """Read blocks and start their checks until enough are in flight or the text ends."""
        while not self.ended and len(self.ahead) < 2 * CHECK_THREADS:
            block = self._next_lines()
            if not block:
                continue
            at = block.find(b"\x00")
            if at >= 0:  # check the lines before it, hand over nothing from here on
                block_before = block[:block.rfind(b"\n", 0, at) + 1]
                self.ahead.append((block, _block_lines(self.grammar, block_before,
                                                       self.header), True))
                self.ended = True
                return
            if not self.ahead and (self.ended or self.pool is None):
                # the first block, or a lone last one: no thread needed
                self.ahead.append((block, _block_lines(self.grammar, block, self.header),
                                   False))
                continue
            if self.pool is None:
                self.pool = ThreadPoolExecutor(CHECK_THREADS, thread_name_prefix="mtx-check")
            self.ahead.append((block, self.pool.submit(_block_lines, self.grammar, block,
                                                       self.header), False))

    def _next_lines(self) -> bytes:
        if self.stopped:
            self.ended = True
            return b""
        try:
            block = self.file.read(BLOCK_BYTES)
        except (*GZIP_ERRORS, OSError) as exc:  # raised again by the caller, not the parser
            self.error, self.ended = exc, True
            return b""
        if not block:
            self.ended = True
            text, self.carry = self.carry, b""
            if text.strip():
                return text if text.endswith(b"\n") else text + b"\n"  # a last line
            if text:  # blanks after the last newline: the exact scan decides
                self.stopped = True
            return b""
        text = self.carry + block
        end = text.rfind(b"\n") + 1
        self.carry = text[end:]
        if b"\x00" in self.carry:  # a line not ended yet, already damaged
            end, self.carry = len(text), b""
        return text[:end]

    def finish(self) -> bool:
        """Check what the parser left unread (without keeping it), close the file, and
        return :attr:`strict`."""
        try:
            while self.read():
                pass
        finally:
            self.close()
        return self.strict

    @property
    def strict(self) -> bool:
        """Every body line strictly valid, exactly the announced entries, nothing refused."""
        return (self.ended and not self.ahead and not self.stopped and self.nul is None
                and self.error is None and self.lines == self.header.entries)

    def close(self) -> None:
        self.file.close()
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


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
    # a sign right after an exponent mark is the exponent's own (symbol XSIGN, same digit bit)
    after_exp = (symbols[1:] == _SIGN) & (symbols[:-1] == _EXP)
    codes[1:] += after_exp.view(np.uint8) * np.uint8(2 * (_XSIGN - _SIGN))
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
