"""An op's report section from Markdown parts: what SpMM's and row slicing's sections are.

An op's builder (``ops_spmm.spmm_sections``, ``ops_slice.slice_sections``) writes its parts as
``(title, markdown)`` pairs, its figures and its JSON tables from the op's timed cases
(:func:`~sparsescope.report.ops_common.op_views`); :func:`markdown_op_section` adds what every
such op shows -- first its cases' predicted against measured time
(:func:`~sparsescope.report.prediction_tables.prediction_markdown`), with profiles the kernels'
hierarchical instruction roofline (seed 004), and the skipped and failed cases -- and returns
the :class:`~sparsescope.report.sections.OpSection` the report lays out.
"""

from __future__ import annotations

from collections.abc import Callable

from sparsescope.report.document import op_summary_item
from sparsescope.report.ops_common import OpsReport, OpView, op_views, outcome_markdown
from sparsescope.report.ops_profiled import roofline_markdown
from sparsescope.report.prediction_tables import prediction_markdown
from sparsescope.report.sections import OpSection, SectionInputs, markdown_section
from sparsescope.results.records import RunSet
from sparsescope.timing.types import Measurement

OpBuilder = Callable[..., OpsReport]
"""``(runset, views, profiles, labels, figure folder) -> OpsReport``."""


def markdown_op_section(runset: RunSet, inputs: SectionInputs, op: str, title: str,
                        builder: OpBuilder) -> OpSection:
    """The section of ``op`` (``runset`` holds its cases only)."""
    views: list[OpView] = op_views(runset, op)
    part = builder(runset, views, inputs.profiles, inputs.labels, inputs.figures_dir)
    predicted, predicted_rows, predicted_fig = prediction_markdown(runset, op, title,
                                                                   inputs.figures_dir)
    parts = [(f"{title}: predicted against measured", predicted), *part.sections]
    written = [*predicted_fig, *part.figures]
    if inputs.profiles:
        roof, drawn = roofline_markdown(runset, inputs.profiles, inputs.labels,
                                        inputs.figures_dir)
        written += drawn
        parts.append((f"{title}: instruction roofline", roof))
    parts.append((f"{title}: skipped and failed cases", outcome_markdown(runset)))
    section = markdown_section(title, parts, summary=[op_summary_item(runset, title)],
                               tables={**predicted_rows, **part.tables}, written=written)
    timed: tuple[Measurement, ...] = tuple(v.case.measurement for v in views)
    return OpSection(title=section.title, summary=section.summary, body=section.body,
                     tables=section.tables, written=section.written, timed=timed)
