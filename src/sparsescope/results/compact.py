"""Results files made small: every float rounded to 7 significant digits, compressed with xz
(``sparsescope results compact``).

A run writes its floats as Python prints a double, with up to 17 digits. The times are CUDA
event times: float32 milliseconds read back as doubles (``0.008736000396311283`` is the
float32 nearest 0.008736). A float32 carries 24 bits of significand, about 7.2 significant
decimal digits, and an event's own resolution is about half a microsecond; the digits after
the seventh are the binary float's, not the measurement's. What is derived from the times
(bandwidths, ratios, the model's terms) is printed to 3 or 4 digits. So each float is rounded
to 7 significant digits (``float(f"{x:.7g}")``, at most 5e-7 of itself), which gives xz long
runs of equal text: a large run's JSON comes out about 3x smaller than gzip of the original.

Integral floats up to 2**53 are kept exact: they are counts (bytes, sectors, instructions, as
ncu and the byte models give them, ``80628956.0``) that a README may print whole, and rounding
one would change it (``80628960.0``). Ints, strings, booleans, nulls, non-finite numbers, the
structure and the order of keys are never changed.

Each file (``NAME.json`` or ``NAME.json.gz``; a folder stands for every such file below it,
hidden ones left out) becomes ``NAME.json.xz``: its data rounded, written as compact JSON
(no spaces) atomically (a temporary file renamed over the name), read back from the disk and
compared with the original (every float within a relative 1e-6, everything else equal), and
only then is the original removed. An interruption leaves the original in place, beside at
most a complete ``NAME.json.xz`` that a second run writes again. A file whose ``.json.xz``
would not be smaller (a small JSON file) is kept as it is, and so is a ``.json.xz`` given.

Problems are errors naming the file, raised before that file is touched: a path that does
not exist (``UsageError``), a file that is not JSON, a damaged compressed file, a check that
fails (``ResultsFormatError``), two files that would become the same ``NAME.json.xz``, or a
``NAME.json.xz`` already there that holds other data (``UsageError``). The files compacted
before the error stay compacted; nothing already written is lost.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparsescope._atomic import write_bytes_atomic
from sparsescope._compressed import compress, read_bytes, read_json
from sparsescope.errors import ResultsFormatError, UsageError

DIGITS = 7
"""Significant digits kept of each float: a float32's 24-bit significand holds about 7.2
decimal digits, and CUDA event times are float32 milliseconds."""
REL_TOL = 1e-6
"""The check: every float read back within this relative difference of the original (the
rounding moves one by at most 5e-7 of itself)."""
EXACT_INTEGRAL = 2.0 ** 53
"""Integral floats below this magnitude (every integer a double holds exactly) are counts,
kept exact."""
SOURCES = (".json", ".json.gz")
"""The files compacted: plain or gzipped JSON."""
COMPACT = ".json.xz"
"""What each becomes."""

KEPT_SMALLER = "kept: not smaller as .json.xz"
KEPT_COMPACT = "kept: already .json.xz"
COMPACTED = "compacted"


@dataclass(frozen=True)
class CompactedFile:
    """One file of :func:`compact_files`."""

    source: Path
    """The file as given or found."""
    target: Path
    """``NAME.json.xz`` (the source itself when it was kept)."""
    status: str
    """:data:`COMPACTED`, :data:`KEPT_SMALLER` or :data:`KEPT_COMPACT`."""
    before_bytes: int
    """The source's size on disk."""
    after_bytes: int
    """The size now on disk (the target's; the source's when kept)."""
    floats: int
    """Floats in the file."""
    max_rel_change: float
    """The largest relative change of a float read back (0 when kept)."""


def rounded(value: Any, digits: int = DIGITS) -> Any:
    """``value`` (parsed JSON) with every finite, non-integral float (and every integral one of
    2**53 or more) rounded to ``digits`` significant digits."""
    if isinstance(value, float):
        if not math.isfinite(value) or (value.is_integer() and abs(value) < EXACT_INTEGRAL):
            return value
        return float(f"{value:.{digits}g}")
    if isinstance(value, list):
        return [rounded(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    return value


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


class _Differs(Exception):
    """A difference found by :func:`_walk`; the keys down to it are added as it unwinds."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.keys: list[str | int] = []


def _walk(original: Any, back: Any, rel_tol: float) -> tuple[int, float]:
    if type(original) is not type(back):
        raise _Differs(f"{_kind(original)} became {_kind(back)}")
    if isinstance(original, float):
        if original == back or (math.isnan(original) and math.isnan(back)):
            return 1, 0.0
        change = abs(back - original) / abs(original) if original else math.inf
        if not change <= rel_tol:
            raise _Differs(f"{original!r} became {back!r}")
        return 1, change
    if isinstance(original, dict):
        if list(original) != list(back):
            raise _Differs("the keys changed")
        pairs: Iterable = ((k, original[k], back[k]) for k in original)
    elif isinstance(original, list):
        if len(original) != len(back):
            raise _Differs(f"{len(original)} items became {len(back)}")
        pairs = ((i, a, b) for i, (a, b) in enumerate(zip(original, back, strict=True)))
    else:
        if original != back:
            raise _Differs(f"{original!r} became {back!r}")
        return 0, 0.0
    floats, largest = 0, 0.0
    for key, a, b in pairs:
        try:
            n, change = _walk(a, b, rel_tol)
        except _Differs as differs:
            differs.keys.append(key)
            raise
        floats += n
        if change > largest:
            largest = change
    return floats, largest


def compare(original: Any, back: Any, rel_tol: float = REL_TOL) -> tuple[int, float]:
    """``(floats, largest relative change)`` of ``back`` against ``original`` (parsed JSON):
    the same structure, keys in the same order, ints, strings, booleans and nulls equal, and
    every float within ``rel_tol`` of the original (NaN as NaN). A difference is a
    ``ValueError`` naming its JSON path (``$.cases[3].measurement.samples_ms[0]: ...``)."""
    try:
        return _walk(original, back, rel_tol)
    except _Differs as differs:
        where = "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}"
                              for k in reversed(differs.keys))
        raise ValueError(f"{where}: {differs}") from None


def target_of(path: Path) -> Path:
    """``NAME.json.xz`` for ``NAME.json`` or ``NAME.json.gz``."""
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return path.with_name(name + COMPACT)


def _wanted(path: Path) -> bool:
    return path.name.endswith(SOURCES) and not path.name.startswith(".")


def files_of(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """The files ``paths`` stand for: a file as it is (``.json``, ``.json.gz`` or, kept as it
    is, ``.json.xz``), a folder as every ``.json`` and ``.json.gz`` file below it (hidden files
    and folders left out), sorted. A missing path or a file of another kind is a
    ``UsageError``; so are two files that would become one ``NAME.json.xz``."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.json*") if p.is_file() and _wanted(p)
                            and not any(part.startswith(".")
                                        for part in p.relative_to(path).parts[:-1]))
        elif path.is_file():
            if not path.name.endswith((*SOURCES, COMPACT)):
                raise UsageError(f"{path}: not a JSON file (.json or .json.gz); results "
                                 "compact rounds and compresses JSON only")
            found.append(path)
        else:
            raise UsageError(f"{path}: no such file or folder")
    unique = list(dict.fromkeys(found))
    targets: dict[Path, Path] = {}
    for path in unique:
        if path.name.endswith(COMPACT):
            continue
        other = targets.setdefault(target_of(path), path)
        if other != path:
            raise UsageError(f"{other} and {path} would both become {target_of(path)}; "
                             "compact one of them alone, after renaming the other")
    return unique


def _load(path: Path) -> Any:
    """The data of ``path`` (plain, gzip or xz JSON); a file that is not JSON is a
    ``ResultsFormatError`` naming it."""
    try:
        raw = read_bytes(path)
    except OSError as exc:
        raise ResultsFormatError(f"{path}: cannot read: {exc}") from None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ResultsFormatError(f"{path}: not JSON ({exc})") from None


def _holds(target: Path, data: Any) -> bool:
    """Whether ``target`` already holds exactly ``data`` (a run interrupted after writing it)."""
    try:
        compare(data, read_json(target), rel_tol=0.0)
    except (OSError, ValueError, ResultsFormatError):
        return False
    return True


def compact_file(path: str | os.PathLike) -> CompactedFile:
    """Compact one file (:mod:`this module <sparsescope.results.compact>`): ``NAME.json.xz``
    written, read back and checked, then the original removed."""
    source = Path(path)
    before = source.stat().st_size
    if source.name.endswith(COMPACT):
        return CompactedFile(source, source, KEPT_COMPACT, before, before, 0, 0.0)
    target = target_of(source)
    data = _load(source)
    small = rounded(data)
    text = json.dumps(small, separators=(",", ":"), ensure_ascii=False)
    packed = compress(text.encode("utf-8"), target)
    if len(packed) >= before:
        return CompactedFile(source, source, KEPT_SMALLER, before, before, 0, 0.0)
    if target.exists() and not _holds(target, small):
        raise UsageError(f"{target}: already there, with other data than {source} "
                         "compacted; not overwritten")
    write_bytes_atomic(target, packed)
    try:
        floats, largest = compare(data, read_json(target))
    except (OSError, ValueError, ResultsFormatError) as exc:
        target.unlink()
        raise ResultsFormatError(f"{source}: {target.name} read back differs, nothing "
                                 f"removed: {exc}") from None
    source.unlink()
    return CompactedFile(source, target, COMPACTED, before, len(packed), floats, largest)


@dataclass(frozen=True)
class CompactSummary:
    """Every file of :func:`compact_files` and the totals."""

    files: tuple[CompactedFile, ...]
    """Each file, in the order it was done."""

    @property
    def before_bytes(self) -> int:
        """The files' sizes before, summed."""
        return sum(f.before_bytes for f in self.files)

    @property
    def after_bytes(self) -> int:
        """Their sizes now, summed."""
        return sum(f.after_bytes for f in self.files)


def compact_files(paths: Sequence[str | os.PathLike], *,
                  progress: Callable[[CompactedFile], None] | None = None) -> CompactSummary:
    """Compact every file ``paths`` stand for (:func:`files_of`), one after another;
    ``progress`` is told of each as it is done. The first error stops the run (the files
    before it stay compacted)."""
    done = []
    for path in files_of(paths):
        item = compact_file(path)
        done.append(item)
        if progress is not None:
            progress(item)
    return CompactSummary(tuple(done))
