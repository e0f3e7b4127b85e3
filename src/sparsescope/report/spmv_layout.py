"""SpMV's tables and figures, declared once: :data:`SPMV_SECTIONS`.

Each numbered section of SpMV's report lists its tables in order; each table names the function
that builds it, its subheading, whether the body shows it or only its JSON is written, and the
figures drawn under it. Everything else is derived from this one declaration:

* :data:`SPMV_TABLES`, every table name the section can write (``tables/<name>.json``);
* :data:`FIGURE_FUNCS`, every figure name and its plot function, in report order
  (``figures/<name>.png``);
* :func:`build_spmv_tables`, the tables of a run (a builder returning None: nothing to show);
* the section's body (``report.spmv_section``), and what a re-render removes
  (``report.write``).

A new SpMV table or figure is one line here (and its builder or plot function).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from sparsescope.report import figures as fig
from sparsescope.report import gpu_tables as gt
from sparsescope.report import warp_tables as wt
from sparsescope.report.context import ReportContext
from sparsescope.report.dae_validated import dae_validated_table
from sparsescope.report.figure_types import PlotFn
from sparsescope.report.memory_floor_table import memory_floor_table
from sparsescope.report.model_tables import gap_table, index_width_table, roofline_table
from sparsescope.report.peer_tables import own_vs_peer_table
from sparsescope.report.prediction_tables import plot_predicted_vs_measured, prediction_table
from sparsescope.report.run_tables import outcomes_table
from sparsescope.report.seed_claims import seed_claims_table
from sparsescope.report.seed_comparison import seed_comparison_table
from sparsescope.report.selection_tables import auto_choice_table
from sparsescope.report.table_types import Table
from sparsescope.report.timing_tables import floor_table, timing_table

TableBuilder = Callable[[ReportContext], "Table | None"]


@dataclass(frozen=True)
class FigureSpec:
    """A figure drawn under its table."""

    name: str
    """File stem: ``figures/<name>.png``."""
    plot: PlotFn


@dataclass(frozen=True)
class TableSpec:
    """One table of the section."""

    name: str
    """File stem, ``tables/<name>.json``; the built table is given this name."""
    build: TableBuilder
    """The table of a run, or None when the run has nothing for it (no seed matrix, no
    kernel breakdown, no own kernel)."""
    subheading: str = ""
    """Its subheading in the body ("" for none)."""
    figures: tuple[FigureSpec, ...] = ()
    """Figures drawn under it (each drawn whether or not the table was built: a figure with
    nothing to draw says why)."""
    shown: bool = True
    """False: written as JSON and listed in the appendix only."""
    absent: Callable[[ReportContext], str] | None = None
    """Why the run cannot have this table, in one line ("" when it can): its builder is not
    called, its figures are not drawn, and the section says why instead."""

    def absent_reason(self, ctx: ReportContext) -> str:
        return self.absent(ctx) if self.absent is not None else ""


@dataclass(frozen=True)
class SectionSpec:
    """One numbered section of SpMV's report."""

    heading: str
    tables: tuple[TableSpec, ...]


def _kernel_breakdown(which: int) -> TableBuilder:
    def build(ctx: ReportContext) -> Table | None:
        tables = gt.kernel_breakdown_tables(ctx)
        return tables[which] if tables else None
    return build


def _warp_model(ctx: ReportContext) -> str:
    """A table of the warp model: a GPU run's, or a named reference GPU's."""
    return ctx.warp_absent


def _gpu_times(ctx: ReportContext) -> str:
    """A table that judges each case's measured time by a GPU's warps: a GPU run only."""
    return ctx.gpu_run_absent


def _of_run(builder: Callable[..., Table]) -> TableBuilder:
    """A builder of the run's cases (not of the context)."""
    return lambda ctx: builder(ctx.runset)


#: SpMV's numbered sections (seed 000's layout), their tables and figures, in report order.
SPMV_SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec("Predicted against measured", (
        TableSpec("predicted_vs_measured", _of_run(prediction_table),
                  figures=(FigureSpec("predicted_vs_measured", plot_predicted_vs_measured),)),)),
    SectionSpec("Seed 000's claims against this run", (
        TableSpec("seed_claims", _of_run(seed_claims_table)),)),
    # seed 000 sections 3.1-3.3, each shown when its table was built
    SectionSpec("Timing and throughput", (
        TableSpec("timing", timing_table, "Timing and throughput",
                  figures=(FigureSpec("bw_efficiency", fig.plot_bw_efficiency),
                           FigureSpec("nnz_vs_bw", fig.plot_nnz_vs_bw))),
        TableSpec("own_vs_peers", own_vs_peer_table,
                  "Our kernels against the best other backend"),
        TableSpec("auto_choice", auto_choice_table, "How cuda-spmv-auto chose"),
        TableSpec("kernel_breakdown", _kernel_breakdown(0), "Kernel breakdown"),
        TableSpec("kernel_breakdown_all", _kernel_breakdown(1), shown=False),
        TableSpec("timing_stability", gt.stability_table, "Timing stability"),
        TableSpec("bandwidth_models", gt.bandwidth_models_table,
                  "Effective bandwidth under two byte models"),
        TableSpec("seed_comparison", seed_comparison_table,
                  "Against the seed's published H200 numbers",
                  figures=(FigureSpec("seed_vs_ours", fig.plot_seed_vs_ours),)),
    )),
    SectionSpec("Physical floor and roofline", (
        TableSpec("floor", floor_table,
                  figures=(FigureSpec("floor_vs_measured", fig.plot_floor_vs_measured),)),
        TableSpec("memory_floor", memory_floor_table),
        TableSpec("roofline", roofline_table,
                  figures=(FigureSpec("roofline", fig.plot_roofline),)),
    )),
    SectionSpec("Little's law and latency sensitivity", (
        TableSpec("littles_law", wt.littles_law_table, absent=_warp_model),
        TableSpec("latency_sensitivity", wt.sensitivity_table, absent=_warp_model,
                  figures=(FigureSpec("latency_sensitivity", fig.plot_latency_sensitivity),)),
    )),
    SectionSpec("Gap decomposition", (
        TableSpec("gap", gap_table, absent=_gpu_times,
                  figures=(FigureSpec("gap_decomposition", fig.plot_gap_decomposition),)),)),
    SectionSpec("Decoupled access-execute (DAE) what-if", (
        TableSpec("dae_validated", _of_run(dae_validated_table), absent=_gpu_times),
        TableSpec("dae", wt.dae_table, absent=_gpu_times,
                  figures=(FigureSpec("dae_speedup", fig.plot_dae_speedup),)),
        TableSpec("dae_sram", wt.sram_table, absent=_warp_model),
        TableSpec("dae_fifo", wt.fifo_table, absent=_warp_model),
        TableSpec("cross_gpu", wt.cross_gpu_table, absent=_warp_model),
    )),
    SectionSpec("INT32 against INT64 indices", (
        TableSpec("index_width", index_width_table,
                  figures=(FigureSpec("int32_vs_int64", fig.plot_int32_vs_int64),)),)),
    SectionSpec("Skipped and failed cases", (
        TableSpec("outcomes", outcomes_table),)),
)

#: Every table the section can write, in report order.
SPMV_TABLES: tuple[str, ...] = tuple(t.name for s in SPMV_SECTIONS for t in s.tables)

#: Figure name -> plot function, in report order (tests replace entries to inject failures,
#: or the whole mapping to skip drawing).
FIGURE_FUNCS: dict[str, PlotFn] = {
    f.name: f.plot for s in SPMV_SECTIONS for t in s.tables for f in t.figures}

#: Figure name -> the name of the table it is drawn under.
FIGURE_TABLE: dict[str, str] = {
    f.name: t.name for s in SPMV_SECTIONS for t in s.tables for f in t.figures}
_TABLE_SPECS: dict[str, TableSpec] = {t.name: t for s in SPMV_SECTIONS for t in s.tables}


def figure_plots(ctx: ReportContext) -> dict[str, PlotFn]:
    """:data:`FIGURE_FUNCS` less the figures under a table the run cannot have
    (:attr:`TableSpec.absent`: its section says why instead); a figure of a declared table
    the run simply has no rows for is still called, and says why it has nothing to draw."""
    return {name: plot for name, plot in FIGURE_FUNCS.items()
            if name not in FIGURE_TABLE
            or not _TABLE_SPECS[FIGURE_TABLE[name]].absent_reason(ctx)}


def absent_reasons(ctx: ReportContext, section: SectionSpec) -> tuple[str, ...]:
    """Why the run lacks some of ``section``'s tables, each reason once, in table order."""
    return tuple(dict.fromkeys(r for t in section.tables if (r := t.absent_reason(ctx))))


def build_spmv_tables(ctx: ReportContext) -> list[Table]:
    """The run's SpMV tables, in report order: each declared table its builder made (none
    where the run cannot have it: :attr:`TableSpec.absent`), named as declared and naming the
    figures drawn under it."""
    out = []
    for section in SPMV_SECTIONS:
        for spec in section.tables:
            if spec.absent_reason(ctx):
                continue
            table = spec.build(ctx)
            if table is not None:
                out.append(replace(table, name=spec.name,
                                   figures=tuple(f.name for f in spec.figures)))
    return out
