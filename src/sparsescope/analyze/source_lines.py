"""Quote the CUDA source line of each finding's location, only where that line exists.

SASS line info (nvdisasm ``-g`` of a ``-lineinfo`` build, an ncu report's source view) names a
file and a line. The file is not always the kernel's ``.cu``: a function inlined from an
included header carries the header's file and line, which can lie far past the end of the
``.cu``. So a location is quoted from the file its line info names, and only when that file,
read where the analysis runs, has the line; otherwise the location keeps the file and line and
a note on why they are not quoted (:class:`~sparsescope.analyze.records.Location`).

Lines are counted as compilers count them: split on ``\\n`` (a ``\\r`` before it dropped), a
final newline ending the last line rather than starting an empty one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from sparsescope.analyze.records import Finding, Location


def _read_lines(path: str) -> list[str] | str:
    """The file's lines, or why it cannot be read (a string)."""
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return "the file is not found where the analysis ran"
    except OSError as exc:
        return f"the file is not readable ({exc.strerror or exc})"
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def source_line(path: str, line: int, cache: dict | None = None) -> tuple[str | None, str]:
    """``(text, "")`` when line ``line`` (1-based) of ``path`` exists, stripped of surrounding
    blanks; ``(None, why)`` otherwise. ``cache`` (path -> lines) saves reading a file twice."""
    if line < 1:
        return None, f"line {line} is not a line number"
    if not path:
        return None, "the line info names no file"
    cache = {} if cache is None else cache
    if path not in cache:
        cache[path] = _read_lines(path)
    lines = cache[path]
    if isinstance(lines, str):
        return None, lines
    if line > len(lines):
        return None, f"the file has {len(lines)} line{'s' * (len(lines) != 1)}"
    return lines[line - 1].strip(), ""


def quote_location(loc: Location, cache: dict | None = None) -> Location:
    """``loc`` with ``source_text`` (or ``source_note``) filled; unchanged without a line."""
    if not loc.source_line:
        return loc
    text, why = source_line(loc.source_file, loc.source_line, cache)
    return dataclasses.replace(loc, source_text=text, source_note=why)


def quote_locations(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """Every finding with its locations quoted (each file read once)."""
    cache: dict = {}
    return tuple(dataclasses.replace(f, locations=tuple(quote_location(loc, cache)
                                                        for loc in f.locations))
                 if f.locations else f for f in findings)
