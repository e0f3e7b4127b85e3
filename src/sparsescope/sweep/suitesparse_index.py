"""``suitesparse:FILTERS``: a selection of the SuiteSparse Matrix Collection from its index.

The collection publishes its index as CSV at :data:`INDEX_URL` (``ssstats.csv``). Format, as
the collection documents it (and SuiteSparse's own ``ssgetpy`` reads it): line 1 the number of
matrices, line 2 the last revision date, then line ``k + 2`` the matrix of id ``k``, no header,
13 columns::

    Group, Name, nrows, ncols, nnz, isReal, isBinary, isND, posdef,
    pattern_symmetry, numerical_symmetry, kind, pattern_entries

(``pattern_entries`` is missing from older copies; only the first 12 columns are required.)

Spec syntax, every filter optional, comma separated::

    suitesparse:group=Williams,kind=graph,rows=1e5..1e7,nnz=..5e7,name=web*,real=1,limit=50

* ``group=GLOB``, ``name=GLOB``: shell globs, case-insensitive (``name=web*``);
* ``kind=TEXT``: case-insensitive substring of the ``kind`` column (``kind=graph``);
* ``rows=``, ``cols=``, ``nnz=``: ``LO..HI`` (inclusive, either end optional: ``..5e7``,
  ``1e5..``) or one number (exact);
* ``real=``, ``binary=``, ``posdef=``, ``nd=``: ``1``/``0`` (``yes``/``no``, ``true``/``false``);
* ``limit=N``: the N smallest (by nnz) of the matches;
* ``index=PATH``: a local copy of ``ssstats.csv`` (else ``$SPARSESCOPE_SUITESPARSE_INDEX``, else
  ``<cache>/suitesparse/ssstats.csv``, downloaded once when missing).

``suitesparse:Group/Name`` names one matrix directly (no index needed). Matches are sorted by
nnz (then Group/Name); each becomes a source ``suitesparse:Group/Name`` loaded through
:func:`~sparsescope.matrices.suitesparse.fetch_suitesparse` (cache, else download).

Offline (``SPARSESCOPE_OFFLINE=1``, or no network: the index download gives up after
:data:`INDEX_TIMEOUT_S` seconds without an answer) a missing index is a
:class:`~sparsescope.errors.MatrixNotAvailableError` naming the URL to fetch by hand, where to put
it and ``index=PATH``.
"""

from __future__ import annotations

import fnmatch
import math
import os
import urllib.error
from dataclasses import dataclass
from pathlib import Path

from sparsescope.errors import MatrixFormatError, MatrixNotAvailableError, UsageError
from sparsescope.matrices.suitesparse import cache_root, is_offline, split_name

PREFIX = "suitesparse:"
INDEX_URL = "https://sparse.tamu.edu/files/ssstats.csv"
INDEX_ENV = "SPARSESCOPE_SUITESPARSE_INDEX"
#: Socket timeout of the index download (connect, and each read): offline fails within it.
INDEX_TIMEOUT_S = 5.0
COLUMNS = ("group", "name", "rows", "cols", "nnz", "real", "binary", "nd", "posdef",
           "pattern_symmetry", "numerical_symmetry", "kind", "pattern_entries")
RANGE_KEYS = ("rows", "cols", "nnz")
FLAG_KEYS = ("real", "binary", "nd", "posdef")
KEYS = ("group", "name", "kind", *RANGE_KEYS, *FLAG_KEYS, "limit", "index")
_TRUE = {"1", "yes", "true", "y"}
_FALSE = {"0", "no", "false", "n"}


@dataclass(frozen=True)
class IndexRow:
    """One matrix of the index."""

    id: int
    group: str
    name: str
    rows: int
    cols: int
    nnz: int
    real: bool
    binary: bool
    nd: bool
    posdef: bool
    kind: str

    @property
    def group_name(self) -> str:
        return f"{self.group}/{self.name}"


@dataclass(frozen=True)
class Selection:
    """A parsed ``suitesparse:`` spec."""

    group: str | None = None
    name: str | None = None
    kind: str | None = None
    ranges: tuple[tuple[str, float, float], ...] = ()
    flags: tuple[tuple[str, bool], ...] = ()
    limit: int | None = None
    index: str | None = None

    def matches(self, row: IndexRow) -> bool:
        if self.group is not None and not _glob(row.group, self.group):
            return False
        if self.name is not None and not _glob(row.name, self.name):
            return False
        if self.kind is not None and self.kind.lower() not in row.kind.lower():
            return False
        if any(not lo <= getattr(row, key) <= hi for key, lo, hi in self.ranges):
            return False
        return all(getattr(row, key) == want for key, want in self.flags)


def _glob(value: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(value.lower(), pattern.lower())


def _number(spec: str, key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{spec}: {key}= wants a number or LO..HI, got {text!r}") from None
    if math.isnan(value):
        raise UsageError(f"{spec}: {key}= wants a number, got {text!r}")
    return value


def _range(spec: str, key: str, text: str) -> tuple[str, float, float]:
    if ".." in text:
        lo_text, _, hi_text = text.partition("..")
        lo = _number(spec, key, lo_text) if lo_text.strip() else -math.inf
        hi = _number(spec, key, hi_text) if hi_text.strip() else math.inf
        if lo > hi:
            raise UsageError(f"{spec}: {key}={text} is empty (low end above high end)")
        return key, lo, hi
    value = _number(spec, key, text)
    return key, value, value


def parse_spec(spec: str) -> Selection:
    """Parse ``suitesparse:k=v,...`` (the prefix optional); unknown keys are a usage error."""
    body = spec[len(PREFIX):] if spec.startswith(PREFIX) else spec
    fields: dict = {}
    ranges: list[tuple[str, float, float]] = []
    flags: list[tuple[str, bool]] = []
    for part in filter(None, (p.strip() for p in body.split(","))):
        key, eq, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or key not in KEYS:
            raise UsageError(f"{spec}: {part!r} is not a filter; use KEY=VALUE with KEY one of "
                             f"{', '.join(KEYS)} (e.g. suitesparse:group=Williams,nnz=..1e6)")
        if key in fields or any(k == key for k, *_ in ranges) or any(k == key for k, _ in flags):
            raise UsageError(f"{spec}: {key}= is given twice")
        if key in RANGE_KEYS:
            ranges.append(_range(spec, key, value))
        elif key in FLAG_KEYS:
            if value.lower() not in _TRUE | _FALSE:
                raise UsageError(f"{spec}: {key}= wants 1 or 0, got {value!r}")
            flags.append((key, value.lower() in _TRUE))
        elif key == "limit":
            try:
                fields["limit"] = int(value)
            except ValueError:
                raise UsageError(f"{spec}: limit= wants a whole number, got {value!r}") from None
            if fields["limit"] < 1:
                raise UsageError(f"{spec}: limit= must be at least 1")
        else:
            if not value:
                raise UsageError(f"{spec}: {key}= is empty")
            fields[key] = value
    return Selection(ranges=tuple(ranges), flags=tuple(flags), **fields)


def _flag(path: Path, line: int, text: str) -> bool:
    try:
        return bool(int(float(text)))
    except ValueError:
        raise MatrixFormatError(str(path), f"expected 0 or 1, got {text!r}", line=line) from None


def read_index(path: str | os.PathLike) -> list[IndexRow]:
    """The rows of an ``ssstats.csv`` file (see the module docstring for the format)."""
    import csv

    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as handle:
            lines = list(csv.reader(handle))
    except OSError as exc:
        raise MatrixNotAvailableError(f"cannot read the SuiteSparse index {path}: "
                                      f"{exc.strerror or exc}") from None
    if len(lines) < 2 or len(lines[0]) != 1:
        raise MatrixFormatError(str(path), "not a SuiteSparse ssstats.csv index (line 1 should "
                                           "be the number of matrices, line 2 a date)", line=1)
    rows: list[IndexRow] = []
    for number, cells in enumerate(lines[2:], start=3):
        if not cells or not "".join(cells).strip():
            continue
        if len(cells) < 12:
            raise MatrixFormatError(str(path), f"expected 12 or 13 columns ({', '.join(COLUMNS)})"
                                               f", got {len(cells)}", line=number)
        try:
            rows_, cols, nnz = (int(float(c)) for c in cells[2:5])
        except ValueError:
            raise MatrixFormatError(str(path), "nrows, ncols and nnz must be numbers",
                                    line=number) from None
        rows.append(IndexRow(
            id=number - 2, group=cells[0].strip(), name=cells[1].strip(), rows=rows_,
            cols=cols, nnz=nnz, real=_flag(path, number, cells[5]),
            binary=_flag(path, number, cells[6]), nd=_flag(path, number, cells[7]),
            posdef=_flag(path, number, cells[8]), kind=cells[11].strip()))
    return rows


def default_index_path() -> Path:
    """Where the downloaded index is kept: ``<cache>/suitesparse/ssstats.csv``."""
    return cache_root() / "suitesparse" / "ssstats.csv"


def _how(path: Path) -> str:
    return (f"download {INDEX_URL} by hand and save it as {path}, or point at a copy with "
            f"suitesparse:index=PATH,... (or ${INDEX_ENV}=PATH)")


def index_file(explicit: str | None = None) -> Path:
    """The index to read: ``index=PATH``, else ``$SPARSESCOPE_SUITESPARSE_INDEX``, else the
    cached copy, downloaded when missing (raises :class:`MatrixNotAvailableError` offline)."""
    named = explicit or os.environ.get(INDEX_ENV)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise MatrixNotAvailableError(f"the SuiteSparse index {path} does not exist; "
                                          f"download {INDEX_URL} and save it there")
        return path
    path = default_index_path()
    if path.is_file():
        return path
    if is_offline():
        raise MatrixNotAvailableError(f"the SuiteSparse index is not cached and "
                                      f"SPARSESCOPE_OFFLINE is set; {_how(path)}")
    from sparsescope.matrices import suitesparse

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        suitesparse._download(INDEX_URL, path, timeout_s=INDEX_TIMEOUT_S)
    except (urllib.error.URLError, OSError, TimeoutError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MatrixNotAvailableError(
            f"cannot download the SuiteSparse index ({reason}); {_how(path)}") from None
    return path


def select(spec: str) -> list[IndexRow]:
    """The index rows a ``suitesparse:`` spec selects, sorted by nnz (then Group/Name), at
    most ``limit``; none is a :class:`UsageError` naming the filters."""
    selection = parse_spec(spec)
    path = index_file(selection.index)
    rows = read_index(path)
    found = sorted((r for r in rows if selection.matches(r)),
                   key=lambda r: (r.nnz, r.group, r.name))
    if not found:
        body = spec[len(PREFIX):] if spec.startswith(PREFIX) else spec
        filters = [p.strip() for p in body.split(",")
                   if p.strip() and not p.strip().lower().startswith(("index=", "limit="))]
        raise UsageError(f"{spec}: no matrix of the SuiteSparse index ({len(rows)} matrices, "
                         f"{path}) matches the filters {', '.join(filters) or '(none)'}")
    return found[:selection.limit] if selection.limit else found


def single_name(spec: str) -> str | None:
    """``Group/Name`` when the spec names one matrix (``suitesparse:Group/Name``), else None."""
    body = spec[len(PREFIX):] if spec.startswith(PREFIX) else spec
    if "=" in body or "/" not in body:
        return None
    group, name = split_name(body)
    return f"{group}/{name}"
