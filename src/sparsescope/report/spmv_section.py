"""SpMV's section of the report: predicted against measured time, seed 000's claims checked,
then timing, floor and roofline, Little's law, gap, DAE (validated pairs first), index width
and outcomes of the run's SpMV cases (seed 000's layout), with their figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sparsescope.report.context import build_context
from sparsescope.report.document import (
    TIMING_SUBSECTIONS,
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
from sparsescope.report.figures import FigureResult, render_figures
from sparsescope.report.run_tables import device_table
from sparsescope.report.sections import OpSection, SectionInputs
from sparsescope.report.table_types import Table
from sparsescope.report.tables import RUN_TABLES, build_tables
from sparsescope.results.records import RunSet

#: SpMV's numbered sections: (heading, tables in it); TIMING_SUBSECTIONS get subheadings.
BODY = (
    ("Predicted against measured", (("", "predicted_vs_measured"),)),
    ("Seed 000's claims against this run", (("", "seed_claims"),)),
    ("Timing and throughput", TIMING_SUBSECTIONS),
    ("Physical floor and roofline", (("", "floor"), ("", "memory_floor"), ("", "roofline"))),
    ("Little's law and latency sensitivity", (("", "littles_law"),
                                              ("", "latency_sensitivity"))),
    ("Gap decomposition", (("", "gap"),)),
    ("Decoupled access-execute (DAE) what-if", (("", "dae_validated"), ("", "dae"),
                                                ("", "dae_sram"), ("", "dae_fifo"),
                                                ("", "cross_gpu"))),
    ("INT32 against INT64 indices", (("", "index_width"),)),
    ("Skipped and failed cases", (("", "outcomes"),)),
)


def table_blocks(tables: Mapping[str, Table], figures: Mapping[str, FigureResult],
                 name: str) -> list[Block]:
    """A table and the figures it names (numbered later, in document order)."""
    blocks: list[Block] = [TableBlock(tables[name], 0)]
    for fig_name in tables[name].figures:
        fig = figures.get(fig_name)
        if fig is not None:
            blocks.append(FigureBlock(fig, 0))
    return blocks


def _body(tables: Mapping[str, Table], figures: Mapping[str, FigureResult]
          ) -> tuple[tuple[str, tuple[Block, ...]], ...]:
    body = []
    for heading, parts in BODY:
        blocks: list[Block] = []
        present = [(sub, name) for sub, name in parts if name in tables]
        for sub, name in present:
            if sub:
                blocks.append(Heading(3, sub))
            blocks += table_blocks(tables, figures, name)
        body.append((heading, tuple(blocks)))
    return tuple(body)


def spmv_section(runset: RunSet, inputs: SectionInputs, *,
                 specs: Sequence | None = None) -> OpSection:
    """The SpMV section of ``runset`` (its SpMV cases)."""
    ctx = build_context(runset, specs=specs)
    tables = {t.name: t for t in build_tables(runset, ctx=ctx)}
    figures = render_figures(ctx, tables, progress=inputs.progress)
    by_name = {f.name: f for f in figures}
    methodology = (("Byte model", (
        Paragraph("Bytes are the minimum a CSR SpMV must move, each array once "
                  "(seed 000, section 2.5); 1 GB = 10^9 bytes."), Code(byte_model(ctx)))),)
    own = {name: t for name, t in tables.items() if name not in RUN_TABLES}
    return OpSection(
        title="SpMV", summary=summary_items(ctx, tables), methodology=methodology,
        body=_body(tables, by_name), tables={name: t.to_dict() for name, t in own.items()},
        figures=tuple(figures), device=(device_table(ctx), device_note(ctx)),
        timed=tuple(v.case.measurement for v in ctx.cases))
