"""The one reader of Nsight Compute's source page: SASS per instruction with its counts and
warp-stall samples, as ``ncu --import R.ncu-rep --page source --print-source sass --csv`` writes it.

Layout: a ``"Kernel Name","<name>",`` row, a header row, then one row per instruction with its
absolute address (``0x7efa397a0000``); the next ``"Kernel Name"`` row starts the next launch's
block. Rows whose address cell is not a hexadecimal address (program output, CUDA-source rows of
a ``--print-source cuda,sass`` export) are passed over, and ncu's own ``==PROF==`` /
``==WARNING==`` lines are dropped wherever they stand.

Column names changed across ncu releases. Every known spelling maps to one canonical name
(:data:`SOURCE_COLUMNS`, :func:`stall_column`); columns are found by name, never by position:

- ncu 2023 and later (the H200 fixtures, ncu 2025.3.1): ``Warp Stall Sampling (All Samples)``,
  ``Warp Stall Sampling (Not-issued Samples)``;
- earlier 2021-2022 releases: ``Warp Stall Sampling (All Cycles)``,
  ``Warp Stall Sampling (Not-issued Cycles)`` (same ``stall_*`` columns);
- the first releases: ``Sampling Data (All)``, ``Sampling Data (Not Issued)`` (the Nsight Compute
  documentation: "This metric was previously called Sampling Data (All)").

Per-reason stall columns come as the page's short names (``stall_long_sb``,
``stall_long_sb (Not Issued)``; ``stall_sleep`` but ``stall_sleeping (Not Issued)`` in the same
2025.3 header) or as the per-PC metric names a report stores
(``smsp__pcsamp_warps_issue_stalled_long_scoreboard[_not_issued]``). Both become ncu's reason name
(``long_scoreboard``, the ``<reason>`` of ``smsp__average_warps_issue_stalled_<reason>_...``).

Used by :func:`sparsescope.sass.stall_map.read_source_sass_csv` (the stall map) and
:func:`sparsescope.profile.read_csv.load_instruction_samples_csv` (profile records); the profile
stage depends on this one, never the other way round. Bad input raises
:class:`~sparsescope.errors.UsageError` naming the file, the line and what was found.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sparsescope._compressed import decompress
from sparsescope.errors import ResultsFormatError, UsageError

#: Every known spelling of a fixed source-page column -> its canonical name (the field of
#: :class:`SourcePageRow`). Newest spelling first; a header holding two spellings of one column
#: is read from the first it holds in this order.
SOURCE_COLUMNS: dict[str, str] = {
    "Address": "address",
    "Source": "sass",
    "Warp Stall Sampling (All Samples)": "samples",
    "Warp Stall Sampling (All Cycles)": "samples",
    "Sampling Data (All)": "samples",
    "Warp Stall Sampling (Not-issued Samples)": "samples_not_issued",
    "Warp Stall Sampling (Not-issued Cycles)": "samples_not_issued",
    "Sampling Data (Not Issued)": "samples_not_issued",
    "Instructions Executed": "instructions_executed",
    "Thread Instructions Executed": "thread_instructions_executed",
    "Predicated-On Thread Instructions Executed": "predicated_on_thread_instructions",
    "L2 Theoretical Sectors Global": "l2_sectors_global",
    "L2 Theoretical Sectors Global Excessive": "l2_sectors_global_excessive",
}
#: ``stall_<short>`` suffixes that differ from ncu's reason name; the others (``stall_wait``)
#: are the reason itself.
SHORT_REASONS: dict[str, str] = {
    "dispatch": "dispatch_stall", "imc": "imc_miss", "lg": "lg_throttle",
    "long_sb": "long_scoreboard", "math": "math_pipe_throttle", "mio": "mio_throttle",
    "no_inst": "no_instruction", "short_sb": "short_scoreboard", "sleep": "sleeping",
    "tex": "tex_throttle",
}
#: ncu reason (``long_scoreboard``) -> the source page's short name (``long_sb``).
SHORT_NAMES: dict[str, str] = {reason: short for short, reason in SHORT_REASONS.items()}
#: Per-PC metric reasons spelt differently from the ratio metric's (plural ``instructions``).
METRIC_REASONS = {"no_instructions": "no_instruction"}
_SHORT_COLUMN = re.compile(r"^stall_(\w+?)( \(Not Issued\))?$")
_METRIC_COLUMN = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+?)(_not_issued)?$")
_COUNT_FIELDS = ("samples", "samples_not_issued", "instructions_executed",
                 "thread_instructions_executed", "predicated_on_thread_instructions",
                 "l2_sectors_global", "l2_sectors_global_excessive")
#: How many column names an error message lists before "and N more".
_LISTED_COLUMNS = 20


def stall_column(column: str) -> tuple[str, bool] | None:
    """(ncu reason, only not-issued samples) of a per-reason stall column in any known
    spelling; None for any other column.

    ``stall_long_sb`` -> (``long_scoreboard``, False); ``stall_sleeping (Not Issued)`` ->
    (``sleeping``, True); ``smsp__pcsamp_warps_issue_stalled_no_instructions`` ->
    (``no_instruction``, False)."""
    name = column.strip()
    match = _SHORT_COLUMN.match(name)
    if match:
        return SHORT_REASONS.get(match.group(1), match.group(1)), match.group(2) is not None
    match = _METRIC_COLUMN.match(name)
    if match:
        return METRIC_REASONS.get(match.group(1), match.group(1)), match.group(2) is not None
    return None


@dataclass(frozen=True)
class SourcePageRow:
    """One SASS instruction of a source-page block, read under the canonical column names."""

    address: int
    """Program counter, absolute, as ncu printed it."""
    sass: str
    """Instruction text without the page's leading blanks (``LDC R1, c[0x0][0x28]``)."""
    samples: int
    """Warp-stall PC samples on this instruction, issued and not issued; the sum of the
    per-reason columns when the page has no total column."""
    samples_not_issued: int
    """Samples taken while the warp's scheduler issued nothing (likewise summed when absent)."""
    instructions_executed: int
    """Warp-level executions."""
    thread_instructions_executed: int
    predicated_on_thread_instructions: int
    """Thread executions with the predicate true."""
    l2_sectors_global: int
    """Theoretical L2 sectors of this instruction's global accesses."""
    l2_sectors_global_excessive: int
    """Sectors beyond the fully coalesced count."""
    stalls: Mapping[str, int]
    """ncu reason (``long_scoreboard``) -> samples (all samples), one entry per reason column
    the page has, zeros included; the not-issued twins are not here."""


@dataclass(frozen=True)
class SourcePageBlock:
    """One kernel launch's block of a source page."""

    kernel: str
    """The kernel's name as the ``"Kernel Name"`` row gives it."""
    rows: tuple[SourcePageRow, ...]
    """Instructions in page order (address order)."""


@dataclass(frozen=True)
class _Columns:
    """Where each canonical column stands in one block's header."""

    fields: Mapping[str, int]
    """Canonical name -> column index."""
    stalls: Mapping[str, int]
    """Reason -> index of its all-samples column."""
    stalls_not_issued: Mapping[str, int]
    """Reason -> index of its not-issued column."""

    def row(self, cells: list[str], address: int) -> SourcePageRow:
        def count(i: int | None) -> int:
            return _count(cells[i]) if i is not None and i < len(cells) else 0

        stalls = {reason: count(i) for reason, i in self.stalls.items()}
        counts = {name: count(self.fields.get(name)) for name in _COUNT_FIELDS}
        if "samples" not in self.fields:
            counts["samples"] = sum(stalls.values())
        if "samples_not_issued" not in self.fields:
            counts["samples_not_issued"] = sum(count(i) for i in self.stalls_not_issued.values())
        sass = self.fields.get("sass")
        text = cells[sass].strip() if sass is not None and sass < len(cells) else ""
        return SourcePageRow(address=address, sass=text, stalls=stalls, **counts)


def _count(text: str) -> int:
    """``"4,096"`` -> 4096; ``""``, ``"-"`` and any other non-number -> 0 (ncu prints ``-`` where
    a column does not apply to the instruction)."""
    try:
        return int(float(text.replace(",", "").strip()))
    except ValueError:
        return 0


def _columns_found(header: list[str]) -> str:
    names = [repr(h) for h in header if h.strip()]
    more = len(names) - _LISTED_COLUMNS
    listed = ", ".join(names[:_LISTED_COLUMNS]) or "none"
    return listed + (f" and {more} more" if more > 0 else "")


def _columns(header: list[str], where: str) -> _Columns:
    """Canonical columns of ``header``; UsageError naming what was found when the header has no
    address column or no column of counts."""
    found: dict[str, list[int]] = {}
    for i, name in enumerate(header):
        canonical = SOURCE_COLUMNS.get(name.strip())
        if canonical is not None:
            found.setdefault(canonical, []).append(i)
    if "address" not in found:
        raise UsageError(f"{where}: the source page's header has no instruction address column "
                         f"(known: Address); columns found: {_columns_found(header)}")
    address = found["address"][0]
    # a --print-source cuda,sass header has two "Source" columns: the SASS text follows Address
    fields = {name: next((i for i in at if i > address), at[0]) for name, at in found.items()}
    fields["address"] = address
    stalls: dict[str, int] = {}
    not_issued: dict[str, int] = {}
    for i, name in enumerate(header):
        parsed = stall_column(name)
        if parsed is not None:
            (not_issued if parsed[1] else stalls).setdefault(parsed[0], i)
    if not stalls and not not_issued and not set(fields) & set(_COUNT_FIELDS):
        raise UsageError(
            f"{where}: the source page's header has none of the known columns (Warp Stall "
            "Sampling (All Samples) or an older spelling, stall_<reason>, "
            "smsp__pcsamp_warps_issue_stalled_<reason>, Instructions Executed); columns found: "
            f"{_columns_found(header)}")
    return _Columns(fields, stalls, not_issued)


def read_export_text(path: str | Path) -> str:
    """The text of an ncu CSV export, compressed (xz or gzip, told by its first bytes) or not;
    UsageError for a missing, unreadable, damaged, empty or binary file (a ``.ncu-rep`` report
    given where an export was expected)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from exc
    try:                                # compressed, as the results folders keep exports
        data = decompress(data, path)
    except ResultsFormatError as exc:   # damaged: "PATH: cannot read: damaged xz data (...)"
        raise UsageError(str(exc)) from None
    if not data.strip():
        raise UsageError(f"{path}: empty file, not an ncu CSV export")
    if b"\x00" in data[:4096]:
        raise UsageError(f"{path}: binary file, not an ncu CSV export (for a .ncu-rep report "
                         "use the report reader)")
    return data.decode("utf-8-sig", errors="replace")


def _address(cells: list[str], column: int) -> int | None:
    text = cells[column].strip() if column < len(cells) else ""
    if not text.lower().startswith("0x"):
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


def read_source_page(path: str | Path) -> list[SourcePageBlock]:
    """Every kernel block of a source-page export, in file order (one per profiled launch; ncu
    may print a launch's block twice, callers decide what a repeat means)."""
    lines = [(n, line) for n, line in enumerate(read_export_text(path).splitlines(), 1)
             if line.strip() and not line.startswith("==")]
    rows = [(n, next(csv.reader([line]))) for n, line in lines]
    starts = [k for k, (_, cells) in enumerate(rows) if cells[:1] == ["Kernel Name"]]
    if not starts:
        raise UsageError(f"{path}: no 'Kernel Name' row, so not a source-page export (expected "
                         "the CSV of ncu --page source --print-source sass --csv)")
    blocks = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(rows)
        line, cells = rows[start]
        kernel = cells[1] if len(cells) > 1 else ""
        if start + 1 >= end:
            raise UsageError(f"{path}, line {line}: kernel {kernel!r} has no header row")
        header_line, header = rows[start + 1]
        columns = _columns(header, f"{path}, line {header_line}")
        body = []
        for _, cells in rows[start + 2:end]:
            address = _address(cells, columns.fields["address"])
            if address is not None:
                body.append(columns.row(cells, address))
        blocks.append(SourcePageBlock(kernel, tuple(body)))
    return blocks
