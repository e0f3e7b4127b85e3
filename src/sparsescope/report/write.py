"""Write a report folder: report.md, report.html, figures/*.png, tables/*.json.

Everything is computed and rendered in memory first; only then are files written, each one
atomically (temporary file + rename). A failure anywhere before the writes (a bad RunSet, a
plot that raises) leaves an existing report exactly as it was.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparsescope._atomic import write_bytes_atomic, write_json_atomic, write_text_atomic
from sparsescope.errors import UsageError
from sparsescope.hardware.types import DeviceSpec
from sparsescope.report import spmv_layout
from sparsescope.report.context import build_context
from sparsescope.report.document import build_document
from sparsescope.report.html import render_html
from sparsescope.report.markdown import render_markdown
from sparsescope.report.sections import OP_FILE_PREFIX
from sparsescope.report.tables import RUN_TABLES, build_tables
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


def report_outputs(out: Path) -> tuple[set[str], set[str]]:
    """(figure file names, table file names) in ``out`` that a report of this folder may have
    written: every declared one (:data:`RUN_TABLES`, ``spmv_layout.SPMV_TABLES`` and
    ``FIGURE_FUNCS``) and the op sections' files present (named ``OP_FILE_PREFIX...``).
    Nothing else there (a collection's ``collection_*``, a profile section's ``profile_*``, a
    file of one's own) is the report's."""
    figures = {f"{n}.png" for n in spmv_layout.FIGURE_FUNCS}
    figures |= {p.name for p in (out / "figures").glob(f"{OP_FILE_PREFIX}*.png")}
    tables = {f"{n}.json" for n in (*RUN_TABLES, *spmv_layout.SPMV_TABLES)}
    tables |= {p.name for p in (out / "tables").glob(f"{OP_FILE_PREFIX}*.json")}
    return figures, tables


def write_report(runset: RunSet, out_dir: str | os.PathLike, *,
                 extra_sections: Sequence[tuple[str, str]] = (),
                 specs: Sequence[DeviceSpec] | None = None, progress: bool = True,
                 note: str | None = None, profiles: Sequence[Any] = (),
                 labels: Sequence[str] | None = None,
                 reference_gpu: str | None = None) -> ReportPaths:
    """Compute every section of ``runset`` and write the report into ``out_dir``.

    Each op present contributes the section its registry entry names
    (:func:`sparsescope.report.sections.op_sections`). ``extra_sections``: (title, Markdown)
    pairs appended by later stages (profiling, SASS). ``specs`` replaces the spec table.
    ``profiles`` / ``labels``: Nsight Compute records of profiled cases, for the op sections
    that show them. ``progress`` shows a bar on stderr while figures are drawn.
    ``reference_gpu``: the GPU whose warp model a CPU run's report computes (over the one the
    run named, ``RunSet.reference_gpu``); without either, a CPU run's report has none and says
    why.

    A table or figure of this report not made this time is removed from ``out_dir`` if an
    earlier report left it there: the folder never shows what the text does not.
    """
    from sparsescope.report.case_counters import with_profile_counters
    from sparsescope.report.sections import SectionInputs, op_sections
    from sparsescope.report.spmv_section import spmv_section

    checked = _check_sections(extra_sections)
    out = Path(out_dir)
    runset = with_profile_counters(runset, profiles, labels)
    ctx = build_context(runset, specs=specs, reference_gpu=reference_gpu)
    run_tables = {t.name: t for t in build_tables(runset, ctx=ctx, spmv=False)}
    inputs = SectionInputs(figures_dir=out / "figures", profiles=profiles, labels=labels,
                           progress=progress and sys.stderr.isatty())
    sections = op_sections(runset, inputs, overrides={
        spmv_section: {"specs": specs, "reference_gpu": reference_gpu}})
    own_device = next((s.device for s in sections if s.device is not None), None)
    if own_device is not None:  # an op that reads the device its own way (SpMV's % of peak)
        run_tables["device"] = own_device[0]
    doc = build_document(ctx, run_tables, sections, checked, note=note)
    markdown, page = render_markdown(doc), render_html(doc, image_root=out)

    figures = [f for s in sections for f in s.figures]
    tables = {**{n: t.to_dict() for n, t in run_tables.items()},
              **{n: t for s in sections for n, t in s.tables.items()}}
    fig_paths = tuple(write_bytes_atomic(out / f.path, f.png) for f in figures
                      if f.png is not None) + tuple(Path(p) for s in sections for p in s.written)
    table_paths = tuple(write_json_atomic(out / "tables" / f"{name}.json", t)
                        for name, t in tables.items())
    html_path = write_text_atomic(out / "report.html", page)
    md_path = write_text_atomic(out / "report.md", markdown)
    _remove_stale_outputs(out, figures={Path(p).name for p in fig_paths},
                          tables={Path(p).name for p in table_paths})
    return ReportPaths(out_dir=out, markdown=md_path, html=html_path, figures=fig_paths,
                       tables=table_paths,
                       skipped_figures=tuple((f.name, f.skipped_reason) for f in figures
                                             if f.png is None),
                       readings={name: t.get("reading", "") for name, t in tables.items()
                                 if t.get("reading")})


def _remove_stale_outputs(out: Path, *, figures: set[str], tables: set[str]) -> None:
    """The report's figures and tables (:func:`report_outputs`) not written this time: an SpMV
    report rewritten as an SpMM one, a table the run no longer has (no own kernel, no memory
    floor), a figure with nothing left to draw, op figures an earlier render drew from
    profiles. Each is removed only after every new file is in place."""
    ours = dict(zip(("figures", "tables"), report_outputs(out), strict=True))
    for folder, written in (("figures", figures), ("tables", tables)):
        for name in ours[folder] - written:
            (out / folder / name).unlink(missing_ok=True)
