"""Write a report folder: report.md, report.html, figures/*.png, tables/*.json.

Everything is computed and rendered in memory first; only then are files written, each one
atomically (temporary file + rename). A failure anywhere before the writes (a bad RunSet, a
plot that raises) leaves an existing report exactly as it was.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sparsescope._atomic import write_bytes_atomic, write_json_atomic, write_text_atomic
from sparsescope.errors import UsageError
from sparsescope.hardware.types import DeviceSpec
from sparsescope.report.context import build_context
from sparsescope.report.document import build_document
from sparsescope.report.figures import FIGURE_FUNCS, render_figures
from sparsescope.report.html import render_html
from sparsescope.report.markdown import render_markdown
from sparsescope.report.tables import RUN_TABLES, SPMV_TABLES, build_tables
from sparsescope.results.records import RunSet


@dataclass(frozen=True)
class ReportPaths:
    """What :func:`write_report` wrote."""

    out_dir: Path
    markdown: Path
    html: Path
    figures: tuple[Path, ...]
    tables: tuple[Path, ...]
    skipped_figures: tuple[tuple[str, str], ...] = ()
    """(figure name, why it was not drawn)."""
    readings: dict[str, str] = field(default_factory=dict, compare=False)
    """Table name -> its computed reading."""

    def to_dict(self) -> dict:
        return {
            "out_dir": str(self.out_dir), "markdown": str(self.markdown), "html": str(self.html),
            "figures": [str(p) for p in self.figures], "tables": [str(p) for p in self.tables],
            "skipped_figures": [{"name": n, "reason": r} for n, r in self.skipped_figures],
            "readings": dict(self.readings),
        }


def _check_sections(extra_sections: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    checked = []
    for i, item in enumerate(extra_sections):
        if (not isinstance(item, tuple | list) or len(item) != 2
                or not all(isinstance(x, str) for x in item)):
            raise UsageError(f"extra_sections[{i}] must be a (title, markdown_text) pair of "
                             f"strings, got {item!r}")
        checked.append((item[0], item[1]))
    return checked


def _remove_stale(folder: Path, suffix: str, names) -> None:
    for name in names:
        stale = folder / f"{name}{suffix}"
        if stale.exists():
            stale.unlink()


def write_report(runset: RunSet, out_dir: str | os.PathLike, *,
                 extra_sections: Sequence[tuple[str, str]] = (),
                 specs: Sequence[DeviceSpec] | None = None,
                 progress: bool = True, ops_label: str | None = None,
                 note: str | None = None, backends_label: str | None = None,
                 whole_run: RunSet | None = None) -> ReportPaths:
    """Compute every table and figure of ``runset`` and write the report into ``out_dir``.

    ``extra_sections``: (title, Markdown) pairs appended by later stages (profiling, SASS),
    rendered in both report.md and report.html. ``specs`` replaces the spec table
    (``sparsescope.hardware.specs.list_specs()``). ``progress`` shows a tqdm bar on stderr.

    ``whole_run``: the run ``runset`` holds the SpMV cases of, when ``extra_sections`` report
    its other ops (:func:`sparsescope.report.ops_sections.write_ops_report`). If ``runset``
    then has no case, the report has no SpMV section, table or figure: only the device, the
    matrices, the timing protocol (counting ``whole_run``'s cases) and the provenance.

    A table or figure of this report not made this time is removed from ``out_dir`` if an
    earlier report left it there: the folder never shows what the text does not.
    """
    sections = _check_sections(extra_sections)
    spmv = whole_run is None or bool(runset.cases)
    ctx = build_context(runset, specs=specs)
    tables = {t.name: t for t in build_tables(runset, ctx=ctx, spmv=spmv)}
    figures = render_figures(ctx, tables, progress=progress) if spmv else []
    doc = build_document(ctx, tables, {f.name: f for f in figures}, sections,
                         ops_label=ops_label, note=note, backends_label=backends_label,
                         ops_run=None if spmv else whole_run)
    out = Path(out_dir)
    markdown, page = render_markdown(doc), render_html(doc, image_root=out)

    fig_paths = tuple(write_bytes_atomic(out / f.path, f.png) for f in figures
                      if f.png is not None)
    table_paths = tuple(write_json_atomic(out / "tables" / f"{name}.json", t.to_dict())
                        for name, t in tables.items())
    html_path = write_text_atomic(out / "report.html", page)
    md_path = write_text_atomic(out / "report.md", markdown)
    skipped = tuple((f.name, f.skipped_reason) for f in figures if f.png is None)
    # A table or figure written by an earlier report of this folder would now contradict the
    # text (an SpMV report rewritten as an SpMM one, a figure with nothing left to draw).
    drawn = {f.name for f in figures if f.png is not None}
    _remove_stale(out / "figures", ".png", (n for n in FIGURE_FUNCS if n not in drawn))
    _remove_stale(out / "tables", ".json", (n for n in (*RUN_TABLES, *SPMV_TABLES)
                                            if n not in tables))
    return ReportPaths(out_dir=out, markdown=md_path, html=html_path, figures=fig_paths,
                       tables=table_paths, skipped_figures=skipped,
                       readings={name: t.reading for name, t in tables.items()})
