"""SpMV's section of the report: predicted against measured time, seed 000's claims checked,
then timing, floor and roofline, Little's law, gap, DAE (validated pairs first), index width
and outcomes of the run's SpMV cases (seed 000's layout), with their figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sparsescope.report import spmv_layout
from sparsescope.report.context import ReportContext, build_context
from sparsescope.report.document import (
    Block,
    Code,
    FigureBlock,
    Heading,
    Paragraph,
    TableBlock,
    byte_model,
    device_note,
    summary_items,
)
from sparsescope.report.figure_types import FigureResult
from sparsescope.report.figures import render_figures
from sparsescope.report.run_tables import device_table
from sparsescope.report.sections import OpSection, SectionInputs
from sparsescope.report.table_types import Table
from sparsescope.report.tables import RUN_TABLES, build_tables
from sparsescope.results.records import RunSet


def table_blocks(tables: Mapping[str, Table], figures: Mapping[str, FigureResult],
                 name: str) -> list[Block]:
    """A table and the figures it names (numbered later, in document order)."""
    blocks: list[Block] = [TableBlock(tables[name], 0)]
    for fig_name in tables[name].figures:
        fig = figures.get(fig_name)
        if fig is not None:
            blocks.append(FigureBlock(fig, 0))
    return blocks


def _body(ctx: ReportContext, tables: Mapping[str, Table], figures: Mapping[str, FigureResult]
          ) -> tuple[tuple[str, tuple[Block, ...]], ...]:
    """The numbered sections of :data:`~sparsescope.report.spmv_layout.SPMV_SECTIONS`, each
    shown table (the run has it) under its subheading, its figures beneath; a table the run
    cannot have (a warp model on a CPU run) is replaced by one line saying why."""
    body = []
    for section in spmv_layout.SPMV_SECTIONS:
        absent = "; ".join(spmv_layout.absent_reasons(ctx, section))
        blocks: list[Block] = [Paragraph(f"*Not computed: {absent}.*")] if absent else []
        for spec in section.tables:
            if not spec.shown or spec.name not in tables:
                continue
            if spec.subheading:
                blocks.append(Heading(3, spec.subheading))
            blocks += table_blocks(tables, figures, spec.name)
        body.append((section.heading, tuple(blocks)))
    return tuple(body)


def spmv_section(runset: RunSet, inputs: SectionInputs, *,
                 specs: Sequence | None = None, reference_gpu: str | None = None) -> OpSection:
    """The SpMV section of ``runset`` (its SpMV cases); ``reference_gpu`` names the GPU of a
    CPU run's warp model (:func:`~sparsescope.report.context.build_context`)."""
    ctx = build_context(runset, specs=specs, reference_gpu=reference_gpu)
    tables = {t.name: t for t in build_tables(runset, ctx=ctx)}
    figures = render_figures(ctx, tables, spmv_layout.figure_plots(ctx),
                             progress=inputs.progress)
    by_name = {f.name: f for f in figures}
    methodology = (("Byte model", (
        Paragraph("Bytes are the minimum a CSR SpMV must move, each array once "
                  "(seed 000, section 2.5); 1 GB = 10^9 bytes. These are each case's own "
                  "bytes (timing, floor and roofline tables). Two tables count another model "
                  "on purpose, and name it: the two-byte-model table counts CSR with y written "
                  "only at INT64 and INT32 (to compare backends by time alone), the INT32 "
                  "against INT64 table CSR with y read + written (seed 000, section 9.3)."),
        Code(byte_model(ctx)))),)
    own = {name: t for name, t in tables.items() if name not in RUN_TABLES}
    return OpSection(
        title="SpMV", summary=summary_items(ctx, tables), methodology=methodology,
        body=_body(ctx, tables, by_name), tables={name: t.to_dict() for name, t in own.items()},
        figures=tuple(figures), device=(device_table(ctx), device_note(ctx)),
        timed=tuple(v.case.measurement for v in ctx.cases))
