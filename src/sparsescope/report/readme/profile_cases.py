"""Profiled cases side by side: per case (``NAME.json`` of ``sparsescope profile run --json``
with ``NAME_raw.csv.xz``, ncu's raw export), the main kernel's time, DRAM bytes, L2 sectors and
hit rate, L1 hit rate, warp instructions, occupancy, DRAM throughput and its top warp stalls.

The main kernel is the first launch of the kernel that takes the longest launch of the case
(a library's set-up kernels, copies and partitions are shorter)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from sparsescope._compressed import compressed_files, kept_file, read_json, without_compression

METRICS = (
    ("time us", "gpu__time_duration.sum", 1e-3),
    ("DRAM read MB", "dram__bytes_read.sum", 1e-6),
    ("L2 sectors M", "lts__t_sectors.sum", 1e-6),
    ("L2 hit %", "lts__t_sector_hit_rate.pct", 1.0),
    ("L1 hit %", "l1tex__t_sector_hit_rate.pct", 1.0),
    ("warp instructions M", "smsp__inst_executed.sum", 1e-6),
    ("achieved occupancy %", "sm__warps_active.avg.pct_of_peak_sustained_active", 1.0),
    ("DRAM throughput %", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1.0),
)
"""(row label, ncu metric, scale) of the table."""


@dataclass(frozen=True)
class ProfiledCase:
    """One case's main kernel."""

    name: str
    kernel: str
    """The main kernel's full name."""
    values: tuple[float, ...]
    """:data:`METRICS`' values, scaled, in their order."""
    stalls: tuple[tuple[str, float], ...]
    """The three largest stall reasons (cycles per warp instruction), largest first."""


def number(text: str) -> float:
    return float(text.replace(",", "")) if text.strip() else float("nan")


def _rows(raw_csv: str) -> list[dict[str, str]]:
    rows = list(csv.reader(io.StringIO(raw_csv)))
    header = rows[0]
    return [dict(zip(header, row, strict=False)) for row in rows[2:]]  # ncu pads short rows


def main_kernel(rows: list[dict[str, str]]) -> dict[str, str] | None:
    """The first launch of the kernel with the longest launch (None for no launch)."""
    timed = [r for r in rows if r.get("gpu__time_duration.sum", "").strip()]
    if not timed:
        return None
    longest = max(timed, key=lambda r: number(r["gpu__time_duration.sum"]))
    return next(r for r in timed if r.get("Kernel Name") == longest.get("Kernel Name"))


def profiled_cases(folder: Path) -> tuple[ProfiledCase, ...]:
    """The folder's cases (``NAME.json``, or its compressed ``NAME.json.xz``, beside
    ``NAME_raw.csv.xz`` or ``.gz``), sorted by name."""
    from sparsescope.sass.source_page import read_export_text

    found = []
    for raw in compressed_files(folder, "*_raw.csv"):
        name = without_compression(raw.name).removesuffix("_raw.csv")
        described = kept_file(folder / f"{name}.json")
        if described is None:
            continue
        row = main_kernel(_rows(read_export_text(raw)))
        if row is None:
            continue
        kernel = row.get("Kernel Name", "")
        data = read_json(described)
        launch = next((k for k in data.get("kernels", ())
                       if k.get("demangled_name") == kernel or k.get("name") == kernel
                       or kernel.startswith(f"void {k.get('name')}")
                       or f" {k.get('name')}<" in kernel or f"::{k.get('name')}<" in kernel),
                      None)
        stalls = {k: v for k, v in (launch or {}).get("stalls", {}).items() if k != "selected"}
        top = tuple(sorted(stalls.items(), key=lambda kv: -kv[1])[:3])
        values = tuple(number(row.get(key, "")) * scale for _, key, scale in METRICS)
        found.append(ProfiledCase(name, kernel, values, top))
    return tuple(found)


def table(cases: tuple[ProfiledCase, ...]) -> list[str]:
    """The Markdown table, one column per case."""
    lines = ["| metric | " + " | ".join(f"`{c.name}`" for c in cases) + " |",
             "|---|" + "---:|" * len(cases),
             "| kernel | " + " | ".join(c.kernel[:40] for c in cases) + " |"]
    for i, (label, _, _) in enumerate(METRICS):
        lines.append(f"| {label} | " + " | ".join(f"{c.values[i]:,.1f}" for c in cases) + " |")
    lines.append("| top stalls (cycles a warp instruction) | " + " | ".join(
        ", ".join(f"{k} {v:.1f}" for k, v in c.stalls) for c in cases) + " |")
    return lines
