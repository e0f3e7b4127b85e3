"""Read ncu's CSV exports into the same records as :mod:`sparsescope.profile.read_report`.

Pages (``ncu --import R.ncu-rep --csv --page <page>``):

- ``raw``: one row per launch, one column per metric. Row 1 is the header, row 2 the units; numbers
  may carry thousands separators and scaled units (converted back to base units here).
- ``details``: one row per section metric or rule message; the rule rows (``Rule Name``,
  ``Rule Type``, ``Rule Description``, ``Estimated Speedup``) become :class:`RuleMessage`.
  This "long" layout is also what ``ncu --csv`` prints by default, so files others recorded with
  ``ncu --csv --metrics a,b`` (section "Command line profiler metrics") are read as profiles too:
  rows naming a metric are taken as they are, the section tables' display names that mean one
  metric (:data:`DISPLAY_METRICS`) are mapped to it, everything else is left out.
- ``source`` with ``--print-source sass``: a ``"Kernel Name",<name>`` row, then a header and one row
  per SASS instruction, repeated per launch. Read by :mod:`sparsescope.sass.source_page`, the one
  reader of that page (shared with the SASS stage's stall map; every known ncu spelling of its
  columns), whose errors become :class:`ProfileError` here.

ncu writes its own ``==PROF==``/``==WARNING==`` lines, and the profiled program its output, into the
same stream when the CSV comes straight from a profiling run; those lines are skipped.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from sparsescope.errors import UsageError
from sparsescope.profile import metrics as M
from sparsescope.profile.errors import ProfileError
from sparsescope.profile.records import (
    InstructionSample,
    KernelProfile,
    MetricValue,
    RuleMessage,
    build_profile,
)
from sparsescope.profile.units import parse_number, to_base_unit
from sparsescope.sass.source_page import read_export_text, read_source_page

#: Columns ncu adds to the raw and details pages that are not metrics (metric names have no spaces).
ID_COLUMNS = frozenset({"ID", "Context", "Stream", "Device", "CC"})
#: What the raw page prints for a metric the report holds no value for.
NO_VALUE = frozenset({"no data", "n/a", "N/A"})
_DETAILS_COLUMNS = ("Section Name", "Metric Name", "Rule Name")
_LONG_COLUMNS = ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value")

#: Display names of the details page (section tables, ncu 2023-2025) -> the metric each shows.
#: Only names that mean one metric in every section are listed ("Memory Throughput" is not).
DISPLAY_METRICS = {
    "Duration": M.DURATION_NS,
    "Block Size": M.BLOCK_SIZE,
    "Grid Size": M.GRID_SIZE,
    "Registers Per Thread": M.REGISTERS_PER_THREAD,
    "# SMs": M.SM_COUNT[0],
    "Theoretical Occupancy": M.THEORETICAL_OCCUPANCY_PCT,
    "Achieved Occupancy": M.ACHIEVED_OCCUPANCY_PCT,
    "Achieved Active Warps Per SM": M.ACTIVE_WARPS_PER_SM[0],
    "Warp Cycles Per Issued Instruction": M.CPI,
    "Compute (SM) Throughput": M.SM_THROUGHPUT_PCT[0],
    "DRAM Throughput": M.DRAM_THROUGHPUT_PCT[1],
    "SM Frequency": M.SM_CLOCK_HZ[0],
    "DRAM Frequency": M.DRAM_CLOCK_HZ[0],
    "Executed Ipc Active": M.IPC[0],
    "Eligible Warps Per Scheduler": M.ELIGIBLE_WARPS[0],
    "No Eligible": M.NO_ELIGIBLE_PCT[0],
    "Executed Instructions": M.WARP_INST[0],
    "L1/TEX Hit Rate": M.L1_HIT_RATE_PCT[0],
    "L2 Hit Rate": M.L2_HIT_RATE_PCT[0],
}


def not_a_report(exc: UsageError, path: str | Path) -> ProfileError:
    """The shared reader's error as this stage's: same words (the file named once), reason
    ``not_a_report``."""
    detail = str(exc).removeprefix(str(path)).lstrip(":, ")
    return ProfileError("not_a_report", detail, path=str(path))


def _read_text(path: str | Path) -> str:
    try:
        return read_export_text(path)
    except UsageError as exc:
        raise not_a_report(exc, path) from exc


def _table(path: str | Path, first_cell: str) -> list[list[str]]:
    """CSV rows from the first row whose first cell is ``first_cell``; ncu log lines dropped."""
    lines = _read_text(path).splitlines()
    marker = f'"{first_cell}"'
    start = next((i for i, line in enumerate(lines) if line.startswith(marker)), None)
    if start is None:
        raise ProfileError("not_a_report", f"not an ncu CSV export (no row starting with "
                           f"{marker})", path=str(path))
    kept = [line for line in lines[start:] if line.strip() and not line.startswith("==")]
    return list(csv.reader(io.StringIO("\n".join(kept))))


def _dims_product(text: str) -> int | None:
    """``"(512, 1, 1)"`` -> 512."""
    parts = [parse_number(p) for p in text.strip("() ").split(",")]
    if not parts or any(p is None for p in parts):
        return None
    product = 1
    for p in parts:
        product *= int(p)  # type: ignore[arg-type]
    return product


def read_raw_rows(path: str | Path) -> list[dict[str, str]]:
    """The raw page as dicts (header -> text), units row excluded; for callers needing text."""
    rows = _table(path, "ID")
    header = rows[0]
    if "Section Name" in header:
        raise ProfileError("not_a_report", "this is a --page details export; the raw page "
                           "(--page raw) holds the metrics", path=str(path))
    return [dict(zip(header, row, strict=False))
            for row in rows[2:] if row and row[0].strip().isdigit()]


def _raw_metrics(header: list[str], units: list[str], row: list[str]) -> dict[str, MetricValue]:
    metrics: dict[str, MetricValue] = {}
    for name, unit, text in zip(header, units, row, strict=False):
        if " " in name or name in ID_COLUMNS or not text.strip() or text.strip() in NO_VALUE:
            continue
        number = parse_number(text)
        if number is None:
            metrics[name] = (text, unit)
        else:
            metrics[name] = to_base_unit(number, unit)
    return metrics


def read_details_rules(path: str | Path) -> dict[int, tuple[RuleMessage, ...]]:
    """Rule messages of a details-page export: launch ID -> messages in page order."""
    rows = _table(path, "ID")
    header = rows[0]
    if any(col not in header for col in _DETAILS_COLUMNS):
        raise ProfileError("not_a_report", "not a --page details export (no Section Name, "
                           "Metric Name and Rule Name columns)", path=str(path))
    col = {name: i for i, name in enumerate(header)}

    def cell(row: list[str], name: str) -> str:
        i = col.get(name)
        return row[i] if i is not None and i < len(row) else ""

    rules: dict[int, list[RuleMessage]] = {}
    for row in rows[1:]:
        if not row or not row[0].strip().isdigit():
            continue
        rule, message = cell(row, "Rule Name"), cell(row, "Rule Description")
        if not rule or not message:
            continue
        rules.setdefault(int(row[0]), []).append(RuleMessage(
            rule=rule, section=cell(row, "Section Name"), type=cell(row, "Rule Type"),
            message=message, speedup_type=cell(row, "Estimated Speedup Type"),
            estimated_speedup_pct=parse_number(cell(row, "Estimated Speedup")),
        ))
    return {k: tuple(v) for k, v in rules.items()}


def _long_format_profiles(rows: list[list[str]], path: str | Path) -> tuple[KernelProfile, ...]:
    """Profiles of a long-layout export (one row per metric: details page, or ``ncu --csv``)."""
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    launches: dict[int, tuple[str, dict[str, MetricValue]]] = {}
    for row in rows[1:]:
        if not row or not row[0].strip().isdigit() or len(row) <= col["Metric Value"]:
            continue
        launch = launches.setdefault(int(row[0]), (row[col["Kernel Name"]], {}))
        name = row[col["Metric Name"]].strip()
        # metric names are lower case without spaces; display names ("Duration") are not
        metric = DISPLAY_METRICS.get(name) or (name if name and " " not in name
                                               and name == name.lower() else None)
        text = row[col["Metric Value"]].strip()
        if metric is None or metric in launch[1] or not text or text in NO_VALUE:
            continue
        number = parse_number(text)
        unit = row[col["Metric Unit"]].strip()
        launch[1][metric] = (text, unit) if number is None else to_base_unit(number, unit)
    if not launches:
        raise ProfileError("not_a_report", "long-layout export with no metric rows",
                           path=str(path))
    rules = read_details_rules(path) if "Rule Name" in col else {}
    return tuple(build_profile(i, demangled, metrics, rules=rules.get(i, ()), source=str(path))
                 for i, (demangled, metrics) in sorted(launches.items()))


def load_profiles_csv(raw_path: str | Path,
                      details_path: str | Path | None = None) -> tuple[KernelProfile, ...]:
    """Every launch of a raw-page export; rule messages joined from a details export by ID.

    A long-layout file (details page, or the default ``ncu --csv`` output) given as
    ``raw_path`` is read by :func:`_long_format_profiles`: fewer metrics, same records."""
    rows = _table(raw_path, "ID")
    header = rows[0]
    if all(c in header for c in _LONG_COLUMNS):
        if details_path is not None:
            raise ProfileError("not_a_report", "a long-layout (details) export holds its own "
                               "rule messages; give --details only with a --page raw export",
                               path=str(raw_path))
        return _long_format_profiles(rows, raw_path)
    if len(rows) < 2 or rows[1][:1] != [""]:  # the units row: the ID column has no unit
        raise ProfileError("not_a_report", "raw export without its units row (row 2)",
                           path=str(raw_path))
    units = rows[1]
    rules = read_details_rules(details_path) if details_path is not None else {}
    col = {name: i for i, name in enumerate(header)}
    profiles = []
    for row in rows[2:]:
        if not row or not row[0].strip().isdigit():
            continue
        launch_id = int(row[0])
        metrics = _raw_metrics(header, units, row)
        for column, names in (("Block Size", (M.BLOCK_SIZE,)), ("Grid Size", (M.GRID_SIZE,))):
            # ncu always prints these two columns; use them when the metrics were not collected
            if names[0] not in metrics and column in col:
                product = _dims_product(row[col[column]])
                if product is not None:
                    metrics[names[0]] = (float(product), "")
        demangled = row[col["Kernel Name"]] if "Kernel Name" in col else ""
        profiles.append(build_profile(launch_id, demangled, metrics,
                                      rules=rules.get(launch_id, ()), source=str(raw_path)))
    if not profiles:
        raise ProfileError("not_a_report", "raw export with no kernel rows", path=str(raw_path))
    return tuple(profiles)


def load_instruction_samples_csv(path: str | Path) -> dict[int, tuple[InstructionSample, ...]]:
    """A ``--page source --print-source sass`` export: block order (one block per profiled
    launch) -> instructions in address order, like
    :func:`~sparsescope.profile.read_report.load_instruction_samples`. Stall samples are keyed
    by ncu's reason name (``long_scoreboard``), reasons without a sample left out."""
    try:
        blocks = read_source_page(path)
    except UsageError as exc:
        raise not_a_report(exc, path) from exc
    return {index: tuple(InstructionSample(
        kernel=block.kernel, address=r.address, sass=r.sass,
        warp_stall_samples=r.samples, warp_stall_samples_not_issued=r.samples_not_issued,
        instructions_executed=r.instructions_executed,
        thread_instructions_executed=r.thread_instructions_executed,
        predicated_on_thread_instructions=r.predicated_on_thread_instructions,
        stall_samples={reason: n for reason, n in r.stalls.items() if n},
        l2_sectors_global=r.l2_sectors_global,
        l2_sectors_global_excessive=r.l2_sectors_global_excessive,
    ) for r in block.rows) for index, block in enumerate(blocks)}
