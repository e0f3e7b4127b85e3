"""The report's table record: title, columns with units, typed rows, a computed reading.

Rows are frozen dataclasses whose field names carry their units (``time_ms``, ``eff_bw_gb_s``);
:func:`unit_of` turns a field name into the unit string written next to it in JSON and in the
column header, so a unit is stated once, in the name.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

MB = 1e6
"""The seed's MB: 10^6 bytes."""

#: Field names whose unit does not follow from a suffix.
_EXACT_UNITS = {
    "nnz": "nonzeros",
    "rows": "rows",
    "cols": "columns",
    "empty_rows": "rows",
    "bandwidth": "columns",
    "nnz_per_row_mean": "nnz/row",
    "nnz_per_row_std": "nnz/row",
    "nnz_per_row_max": "nnz/row",
    "x_reuse": "reads per touched x entry",
    "bytes": "B",
    "flops": "FLOP",
    "gflops": "GFLOP/s",
    "attainable_gflops": "GFLOP/s",
    "samples": "repeats",
    "rel_err": "relative L2 error",
    "value_bytes": "B",
    "index_bytes": "B",
    "sm_count": "SMs",
    "line_bytes": "B",
    "outstanding_bytes": "B",
    "outstanding_requests_per_sm": "requests/SM",
    "cpi": "cycles/instruction",
    "projected_cpi": "cycles/instruction",
    "pct_of_register_file": "%",
    "kib_per_sm": "KiB/SM",
}

#: Suffix -> unit, longest suffix first (checked in this order).
_SUFFIX_UNITS = (
    ("_flop_per_byte", "FLOP/byte"),
    ("_bytes_per_sm", "B/SM"),
    ("_warps_per_sm", "warps/SM"),
    ("_per_warp", "B/warp"),
    ("_per_sm", "warps/SM"),
    ("_entries", "entries"),
    ("_gb_s", "GB/s"),
    ("_gflops", "GFLOP/s"),
    ("_mib", "MiB"),
    ("_mb", "MB"),
    ("_ms", "ms"),
    ("_ns", "ns"),
    ("_us", "us"),
    ("_pct", "%"),
    ("_x", "x"),
    ("_bytes", "B"),
)


def unit_of(key: str) -> str:
    """The unit a field name states (``time_ms`` -> ``ms``); empty for names and flags."""
    if key in _EXACT_UNITS:
        return _EXACT_UNITS[key]
    if key.startswith("pct_"):
        return "%"
    for suffix, unit in _SUFFIX_UNITS:
        if key.endswith(suffix):
            return unit
    return ""


@dataclass(frozen=True)
class Column:
    """One displayed column of a table."""

    key: str
    """Row field name (carries the unit, see :func:`unit_of`)."""
    header: str
    """Header text without the unit; the unit is appended in parentheses."""
    fmt: str = ""
    """Python format spec for numbers (``,.1f``); empty: ``str``."""
    suffix: str = ""
    """Text glued after the number (``x`` for ratios shown as ``1.6x``)."""
    code: bool = False
    """Shown as code: a name the reader meets as written elsewhere (a kernel, a file)."""

    @property
    def unit(self) -> str:
        return unit_of(self.key)

    @property
    def title(self) -> str:
        """Header with the unit, e.g. ``Time (ms)``; none for ratios, counts, descriptive units
        and headers that already name their unit (``GFLOP/s``, ``Max warps/SM``)."""
        unit = self.unit
        if (not unit or unit in ("x", "nonzeros", "rows", "columns") or self.suffix
                or " " in unit or unit.lower() in self.header.lower()):
            return self.header
        return f"{self.header} ({unit})"


def plain(value: Any) -> Any:
    """NumPy scalars (live runs compute stats with NumPy) as the Python number they hold."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, list | tuple | dict | str | bytes):
        try:
            return item()
        except (TypeError, ValueError):
            return value
    return value


def format_value(value: Any, fmt: str = "", suffix: str = "") -> str:
    """Text of one cell: ``—`` for missing, ``yes``/``no`` for flags, ``fmt`` for numbers."""
    value = plain(value)
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and not math.isfinite(value):
        return "∞" if value > 0 else "n/a"
    if isinstance(value, int | float) and fmt:
        return f"{format(value, fmt)}{suffix}"
    return f"{value}{suffix}"


def _cell_text(value: Any, column: Column) -> str:
    """A cell's text; a :attr:`Column.code` value as an inline code span."""
    text = format_value(value, column.fmt, column.suffix)
    if column.code and value is not None and text and "`" not in text:
        return f"`{text}`"
    return text


def json_safe(value: Any) -> Any:
    """Non-finite floats become None (JSON has no NaN); containers are walked."""
    value = plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


@dataclass(frozen=True)
class Table:
    """One report table: what it shows, its typed rows and a sentence computed from them."""

    name: str
    """File stem: written as ``tables/<name>.json``."""
    title: str
    columns: tuple[Column, ...]
    rows: tuple[Any, ...]
    """Frozen dataclass instances, one per row."""
    reading: str
    """One or two sentences computed from the numbers."""
    figures: tuple[str, ...] = ()
    """Names of the figures that belong under this table."""
    vertical: bool = False
    """Render as ``quantity | value`` (a single record, e.g. Little's law)."""
    basis: str = ""
    """What the numbers are computed for (device, bandwidth, latency), stated with the table."""

    def cells(self) -> list[list[str]]:
        """Formatted cell text, one list per row (or per column when vertical)."""
        if self.vertical:
            return [[c.title, _cell_text(getattr(row, c.key), c)]
                    for row in self.rows for c in self.columns]
        return [[_cell_text(getattr(row, c.key), c) for c in self.columns] for row in self.rows]

    def headers(self) -> list[str]:
        if self.vertical:
            return ["Quantity", "Value"]
        return [c.title for c in self.columns]

    def to_dict(self) -> dict[str, Any]:
        """JSON form: every row field with its unit in ``units`` (keys carry units too)."""
        rows = [dataclasses.asdict(row) for row in self.rows]
        keys: list[str] = []
        for row in rows:
            keys.extend(k for k in row if k not in keys)
        if not rows:
            keys = [c.key for c in self.columns]
        return json_safe({
            "name": self.name,
            "title": self.title,
            "basis": self.basis,
            "reading": self.reading,
            "columns": [{"key": c.key, "header": c.title, "unit": c.unit} for c in self.columns],
            "units": {key: unit_of(key) for key in keys},
            "rows": rows,
            "figures": list(self.figures),
        })


def adaptive_fmt(values, big: str = ",.0f", small: str = ",.2f", threshold: float = 100.0) -> str:
    """``big`` when every value is at least ``threshold`` (GB/s of a GPU), else ``small``
    (a CPU's 7.3 GB/s must not print as 7)."""
    values = [v for v in values if v is not None]
    return big if values and min(abs(v) for v in values) >= threshold else small


def count_text(n: float) -> str:
    """3.1M, 250k, 512: counts in sentences."""
    if n >= 1e6:
        return f"{n / 1e6:,.1f}M"
    if n >= 1e4:
        return f"{n / 1e3:,.0f}k"
    return f"{n:,.0f}"


def span(values: list[float], spec: str = ".1f", sep: str = "–") -> str:
    """``lo–hi`` of values, or a single number when they agree at this precision."""
    lo, hi = format(min(values), spec), format(max(values), spec)
    return lo if lo == hi else f"{lo}{sep}{hi}"


def bw_text(value: float) -> str:
    """A bandwidth in GB/s for sentences and headers: 4,800 on a GPU, 12.5 on a CPU."""
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def is_numeric_text(text: str) -> bool:
    """Whether a formatted cell is a number (``1,296``, ``1.6x``, ``—``): right-aligned."""
    stripped = text.replace(",", "").replace("x", "").replace("—", "").replace("∞", "")
    if not stripped:
        return True
    try:
        float(stripped)
    except ValueError:
        return False
    return True
