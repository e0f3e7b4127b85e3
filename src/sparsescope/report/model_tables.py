"""The model tables of seed 000: the roofline, the gap decomposition (floor + Little's-law
deficit + the rest, section 5.5) and INT32 against INT64 indices (section 9.3)."""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.model import gap_decomposition, index_width_row, littles_law, roofline_point
from sparsescope.model.roofline import ridge_point
from sparsescope.report.byte_models import csr_model, own_differs, own_model
from sparsescope.report.ceiling_causes import cause_above
from sparsescope.report.context import ReportContext
from sparsescope.report.table_types import MB, Column, Table, adaptive_fmt, bw_text, span


@dataclass(frozen=True)
class RooflineRow:
    label: str
    ai_flop_per_byte: float
    gflops: float
    attainable_gflops: float
    pct_of_roof: float
    below_ridge_x: float
    """ridge / AI."""
    memory_bound: bool


@dataclass(frozen=True)
class GapRow:
    """Seed 000 section 5.5: the measured time as floor + Little's-law deficit + the rest."""

    label: str
    floor_ms: float
    littles_law_deficit_ms: float
    dep_chain_and_other_ms: float
    time_ms: float
    deficit_share_pct: float
    """Little's-law deficit as % of the time above the floor."""
    beats_littles_law: bool


@dataclass(frozen=True)
class IndexWidthRow:
    """Seed 000 section 9.3 for one matrix (y counted read + write, as the seed does)."""

    matrix: str
    int64_mb: float
    int32_mb: float
    waste_mb: float
    waste_pct: float
    int64_ai_flop_per_byte: float
    int32_ai_flop_per_byte: float
    int32_fits: bool


def roofline_table(ctx: ReportContext) -> Table:
    d = ctx.device
    gf = adaptive_fmt([v.metrics.gflops for v in ctx.cases])
    columns = (Column("label", "Case"), Column("ai_flop_per_byte", "AI", ".3f"),
               Column("gflops", "Achieved", gf),
               Column("attainable_gflops", "Roof at this AI", gf),
               Column("pct_of_roof", "% of roof", ".1f"),
               Column("below_ridge_x", "Below ridge", ",.0f", "x"),
               Column("memory_bound", "Memory-bound"))
    if d.fp32_peak_gflops <= 0:
        return Table("roofline", "Roofline", columns, (),
                     f"{d.name} has no FP32 peak in its spec, so no roofline is drawn.")
    ridge = ridge_point(d.fp32_peak_gflops, ctx.bw_gb_s)
    rows = []
    for v in ctx.cases:
        p = roofline_point(v.label, v.metrics.arithmetic_intensity, v.metrics.gflops,
                           d.fp32_peak_gflops, ctx.bw_gb_s)
        rows.append(RooflineRow(p.label, p.arithmetic_intensity, p.gflops, p.attainable_gflops,
                                100 * p.gflops / p.attainable_gflops, p.below_ridge_factor,
                                p.memory_bound))
    if rows:
        bound = sum(r.memory_bound for r in rows)
        reading = (f"{bound} of {len(rows)} cases are memory-bound: AI "
                   f"{span([r.ai_flop_per_byte for r in rows], '.3f')} FLOP/byte, "
                   f"{span([r.below_ridge_x for r in rows], ',.0f')}x below the ridge at "
                   f"{ridge:.1f} FLOP/byte; achieved "
                   f"{span([r.gflops for r in rows], gf)} GFLOP/s of "
                   f"{d.fp32_peak_gflops:,.0f}.")
    else:
        reading = f"Ridge point {ridge:.1f} FLOP/byte; no timed case to place on it."
    return Table("roofline", "Roofline", columns, tuple(rows), reading,
                 basis=f"{d.fp32_peak_gflops:,.0f} GFLOP/s FP32 and {bw_text(ctx.bw_gb_s)} GB/s "
                       f"({ctx.bw_label}); ridge {ridge:.1f} FLOP/byte. AI = flops / bytes. "
                       + own_model(ctx))


def gap_table(ctx: ReportContext) -> Table:
    """A GPU run's cases only (``report.spmv_layout``): a CPU's time has no warp deficit."""
    ll = littles_law(ctx.gpu.peak_bw_gb_s, ctx.latency_ns, ctx.gpu.sm_count,
                     ctx.gpu.max_warps_per_sm)
    ceiling = ll.bw_ceiling_pct
    basis = (f"Little's-law ceiling {ceiling:.1f} % of {ctx.gpu.peak_bw_gb_s:,.0f} GB/s at "
             f"{ctx.latency_ns:,.0f} ns; floor at {bw_text(ctx.bw_gb_s)} GB/s.")
    rows = []
    for v in ctx.cases:
        g = gap_decomposition(v.metrics.time_ms, v.metrics.floor_ms, ceiling)
        above = g.time_ms - g.floor_ms
        rows.append(GapRow(v.label, g.floor_ms, g.littles_law_deficit_ms,
                           g.dep_chain_and_other_ms, g.time_ms,
                           100 * g.littles_law_deficit_ms / above if above > 0 else 0.0,
                           g.beats_littles_law))
    if not rows:
        reading = "No timed case to decompose."
    else:
        share = [r.deficit_share_pct for r in rows]
        big = max(rows, key=lambda r: r.dep_chain_and_other_ms / r.time_ms)
        reading = (f"The Little's-law deficit explains {span(share)} % of the time above the "
                   f"floor; the dependent chain and other effects take the rest, most for "
                   f"{big.label} ({100 * big.dep_chain_and_other_ms / big.time_ms:.0f} % of its "
                   f"time).")
        pct = {v.label: v.metrics.pct_peak for v in ctx.cases}
        beat = [f"{r.label}: {cause_above(ctx, pct[r.label], ceiling)}" for r in rows
                if r.beats_littles_law and pct[r.label] > ceiling]
        if beat:
            reading += (f" Faster than the Little's-law ceiling (its deficit is capped at the "
                        f"time above the floor) -- {'; '.join(beat)}.")
    return Table("gap", "Gap decomposition", (
        Column("label", "Case"), Column("floor_ms", "Physical floor", ".4f"),
        Column("littles_law_deficit_ms", "Little's-law deficit", ".4f"),
        Column("dep_chain_and_other_ms", "Dep. chain + other", ".4f"),
        Column("time_ms", "Total", ".4f"),
        Column("deficit_share_pct", "Deficit share of gap", ".0f")), tuple(rows), reading,
        basis=basis)


def index_width_table(ctx: ReportContext) -> Table:
    value_bytes: dict[str, int] = {}
    for c in ctx.runset.cases:
        value_bytes.setdefault(c.matrix, c.value_bytes)
    rows = []
    for m in ctx.runset.matrices:
        r = index_width_row(m.name, m.stats.rows, m.stats.cols, m.stats.nnz,
                            value_bytes=value_bytes.get(m.name, 4), y_read=True)
        rows.append(IndexWidthRow(r.name, r.int64_bytes / MB, r.int32_bytes / MB,
                                  r.waste_bytes / MB, r.waste_pct, r.int64_ai, r.int32_ai,
                                  r.int32_fits))
    if rows:
        lo = min(rows, key=lambda r: r.waste_pct)
        hi = max(rows, key=lambda r: r.waste_pct)
        fits = sum(r.int32_fits for r in rows)
        reading = (f"INT64 indices waste {span([r.waste_pct for r in rows])} % of the bytes "
                   f"({lo.matrix} least, {hi.matrix} most); {fits} of {len(rows)} matrices fit "
                   f"INT32; AI rises from {span([r.int64_ai_flop_per_byte for r in rows], '.3f')}"
                   f" to {span([r.int32_ai_flop_per_byte for r in rows], '.3f')} FLOP/byte.")
        i64 = sorted({v.label for v in ctx.cases if v.case.index_bytes == 8})
        reading += (f" {len(i64)} timed case(s) used INT64 indices." if i64 else
                    " No timed case used INT64 indices.")
    else:
        reading = "The run holds no matrices."
    mb = adaptive_fmt([r.waste_mb for r in rows], ",.1f", ",.3f", 1.0)
    return Table("index_width", "INT32 against INT64 indices", (
        Column("matrix", "Matrix"), Column("int64_mb", "INT64 bytes", mb),
        Column("int32_mb", "INT32 bytes", mb), Column("waste_mb", "INT64 waste", mb),
        Column("waste_pct", "Waste", ".1f"),
        Column("int64_ai_flop_per_byte", "AI INT64", ".3f"),
        Column("int32_ai_flop_per_byte", "AI INT32", ".3f"),
        Column("int32_fits", "Fits INT32")), tuple(rows), reading,
        basis=f"Byte model: {csr_model(True)}, per matrix, whatever the kernels did."
              + own_differs(ctx, {r.matrix: r.int32_mb for r in rows}, y_read=True))
