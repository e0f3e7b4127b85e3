"""What an op contributes to the one report, and how the report collects it.

Each op registers one section builder in the registry table (``OpEntry.section``); the report
calls it with the run's cases of that op and gets an :class:`OpSection` back: its lines for the
executive summary, its methodology blocks, its numbered body sections, its tables (as JSON) and
its figures. The document (:mod:`sparsescope.report.document`) lays the sections out in the
table's op order; it never asks which op a section belongs to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sparsescope import registry
from sparsescope.report.document import Block, RawMarkdown
from sparsescope.results.records import RunSet

#: How an op section names its tables and figures (``ops_<op>...``, ``ops_iroofline_...``): a
#: re-render of the report removes such a file when no section writes it any more
#: (``report.write``); a table or figure named otherwise is left to whoever wrote it.
OP_FILE_PREFIX = "ops_"


@dataclass(frozen=True)
class SectionInputs:
    """What a section builder is given besides its op's cases."""

    figures_dir: Path
    """Folder the report's figures go to (``<out>/figures``)."""
    profiles: Sequence[Any] = ()
    """Nsight Compute kernel records of profiled cases, if any."""
    labels: Sequence[str] | None = None
    """``"<backend> <matrix> <params>: <kernel>"`` per profile (``target.case_label``)."""
    progress: bool = False
    """Show a progress bar while drawing figures."""


@dataclass(frozen=True)
class OpSection:
    """One op's part of the report."""

    title: str
    """How the report names the op (the registry's ``OpEntry.title``)."""
    summary: tuple[str, ...] = ()
    """Executive-summary bullets."""
    methodology: tuple[tuple[str, tuple[Block, ...]], ...] = ()
    """(subheading, blocks) placed under Methodology, after the timing protocol."""
    body: tuple[tuple[str, tuple[Block, ...]], ...] = ()
    """(heading, blocks) of the op's numbered sections."""
    tables: dict[str, dict] = field(default_factory=dict)
    """Table name -> JSON-ready dict (rows with units), written as ``tables/<name>.json``;
    named :data:`OP_FILE_PREFIX` ``<op>...`` (SpMV's: declared in ``report.spmv_layout``)."""
    figures: tuple[Any, ...] = ()
    """``report.figure_types.FigureResult`` to write (PNG bytes, or skipped with a reason)."""
    written: tuple[Path, ...] = ()
    """Figure files the builder wrote itself."""
    device: tuple[Any, str] | None = None
    """(device table, device call-out) when the op reads the device its own way (SpMV's %
    of datasheet and measured copy); None: the run's plain device table and note."""
    timed: tuple[Any, ...] | None = None
    """Measurements the timing protocol counts; None: every timed case of the op."""


SectionBuilder = Callable[[RunSet, SectionInputs], OpSection]


def op_sections(runset: RunSet, inputs: SectionInputs,
                overrides: dict[Callable, dict[str, Any]] | None = None) -> list[OpSection]:
    """Each op's section for the ops present in ``runset``, in the registry table's order;
    each builder sees the run with its own op's cases only. ``overrides``: builder -> extra
    keyword arguments (a replaced spec table)."""
    present = {c.op for c in runset.cases}
    sections = []
    for name, entry in registry.OPS.items():
        if name not in present:
            continue
        own = replace(runset, cases=tuple(c for c in runset.cases if c.op == name))
        builder = registry.load(entry.section)
        sections.append(builder(own, inputs, **(overrides or {}).get(builder, {})))
    return sections


def markdown_section(title: str, parts: Sequence[tuple[str, str]], *,
                     summary: Sequence[str] = (), tables: dict[str, list[dict]] | None = None,
                     written: Sequence[Path] = ()) -> OpSection:
    """An :class:`OpSection` of (heading, Markdown) parts; tables as ``{"name", "rows"}``."""
    return OpSection(
        title=title, summary=tuple(summary),
        body=tuple((heading, (RawMarkdown(text),)) for heading, text in parts if text),
        tables={name: {"name": name, "rows": rows} for name, rows in (tables or {}).items()},
        written=tuple(written))
