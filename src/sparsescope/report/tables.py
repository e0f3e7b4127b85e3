"""Report tables computed from a RunSet: typed rows, units in the field names, a reading each.

``build_tables(runset)`` returns every table in report order; the warp-based ones (Little's law,
latency sensitivity, DAE, cross-GPU) live in :mod:`sparsescope.report.warp_tables`. Which
bandwidth and which GPU each table uses is decided once, in :mod:`sparsescope.report.context`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sparsescope.hardware.types import DeviceSpec
from sparsescope.model import gap_decomposition, index_width_row, littles_law, roofline_point
from sparsescope.model.roofline import ridge_point
from sparsescope.report.context import ReportContext, build_context
from sparsescope.report.table_types import (
    Column,
    Table,
    adaptive_fmt,
    bw_text,
    count_text,
    span,
)
from sparsescope.results.records import RunSet

MB = 1e6
"""The seed's MB: 10^6 bytes."""
UNSTABLE_COV_PCT = 10.0
"""Above this coefficient of variation a timing is flagged as unstable in the reading."""


@dataclass(frozen=True)
class DeviceRow:
    """One figure of the device that ran the cases: datasheet beside measured."""

    quantity: str
    unit: str
    datasheet: str | None
    """Datasheet (or spec-table) figure, as text."""
    measured: str | None
    """Ceiling measured in this run, as text."""
    source: str


@dataclass(frozen=True)
class MatrixRow:
    name: str
    analog_of: str | None
    """The real matrix a generated stand-in imitates (None for a real matrix)."""
    kind: str
    rows: int
    cols: int
    nnz: int
    nnz_per_row_mean: float
    nnz_per_row_std: float
    nnz_per_row_max: int
    empty_rows: int
    bandwidth: int
    """max |col - row|."""
    x_reuse: float


@dataclass(frozen=True)
class TimingRow:
    """One ok case of seed 000 section 3.1 (timing, throughput, floor, error)."""

    label: str
    matrix: str
    backend: str
    op: str
    value_bytes: int
    index_bytes: int
    y_read: bool
    nnz: int
    bytes: int
    samples: int
    time_ms: float
    """The protocol's statistic (median unless configured otherwise)."""
    median_ms: float
    mean_ms: float
    std_ms: float
    cov_pct: float
    """100 x std / mean."""
    eff_bw_gb_s: float
    gflops: float
    ai_flop_per_byte: float
    pct_of_peak_bw: float
    """100 x eff_bw / basis bandwidth."""
    gap_vs_floor_x: float
    rel_err: float | None
    pct_of_measured_copy_bw: float | None
    """100 x eff_bw / measured copy bandwidth (None when not measured)."""
    gap_vs_measured_floor_x: float | None
    flushed: bool


@dataclass(frozen=True)
class FloorRow:
    """Seed 000 section 5.1: bytes, floor, measured, gap."""

    label: str
    bytes_mb: float
    floor_ms: float
    """bytes / basis bandwidth."""
    time_ms: float
    gap_vs_floor_x: float
    pct_of_peak_bw: float
    measured_floor_ms: float | None
    """bytes / measured copy bandwidth."""


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


@dataclass(frozen=True)
class OutcomeRow:
    matrix: str
    backend: str
    op: str
    outcome: str
    reason: str
    rel_err: float | None


@dataclass(frozen=True)
class ProvenanceRow:
    field: str
    value: str


def device_table(ctx: ReportContext) -> Table:
    d, c = ctx.device, ctx.runset.ceilings
    src = d.sources

    def row(quantity, unit, datasheet, measured=None, key=""):
        return DeviceRow(quantity, unit, datasheet, measured, src.get(key, ""))

    def num(value, spec=None):
        if value is None:
            return None
        return format(value, spec or adaptive_fmt([value], small=",.1f"))

    gpu = d.kind == "gpu"
    rows = [
        row("Device", "", d.vendor_name or d.name, c.device or None, "name"),
        row("Kind", "", d.kind),
        row("Compute capability", "", d.compute_capability or None, None, "compute_capability"),
        row("SMs (cores on a CPU)", "", str(d.sm_count), None, "sm_count"),
        row("Max warps per SM", "warps", str(d.max_warps_per_sm) if gpu else None, None,
            "max_warps_per_sm"),
        row("Registers per SM", "32-bit", f"{d.registers_per_sm:,}" if gpu else None, None,
            "registers_per_sm"),
        row("L2 cache", "MB", num(d.l2_bytes / MB, ",.1f"), None, "l2_bytes"),
        row("Memory", "", d.memory or None, None, "memory"),
        row("Peak bandwidth", "GB/s", num(d.peak_bw_gb_s), num(c.copy_bw_gb_s), "peak_bw_gb_s"),
        row("Read bandwidth", "GB/s", None, num(c.read_bw_gb_s)),
        row("L2 bandwidth", "GB/s", None, num(c.l2_bw_gb_s)),
        row("Peak FP32", "GFLOP/s", num(d.fp32_peak_gflops), num(c.fp32_gflops),
            "fp32_peak_gflops"),
        row("SM clock", "MHz", num(d.sm_clock_mhz), None, "sm_clock_mhz"),
        row("DRAM latency", "ns", num(d.dram_latency_ns), num(c.dram_latency_ns, ",.1f"),
            "dram_latency_ns"),
        row("L2 latency", "ns", None, num(c.l2_latency_ns, ",.1f")),
    ]
    rows = [r for r in rows if r.datasheet is not None or r.measured is not None]
    if ctx.on_cpu:
        reading = (f"The cases ran on a CPU: its measured copy bandwidth, "
                   f"{num(d.peak_bw_gb_s)} GB/s, is the peak every % of peak refers to; the "
                   f"warp-based tables use the reference GPU {ctx.gpu.name}.")
    elif ctx.measured_copy_gb_s:
        pct = 100 * ctx.measured_copy_gb_s / d.peak_bw_gb_s
        reading = (f"The measured copy bandwidth is {bw_text(ctx.measured_copy_gb_s)} GB/s, "
                   f"{pct:.1f} % of the {d.peak_bw_gb_s:,.0f} GB/s datasheet figure; tables give "
                   f"% of peak against both.")
    else:
        reading = (f"No copy bandwidth was measured: every % of peak is against "
                   f"{d.peak_bw_gb_s:,.0f} GB/s ({ctx.bw_label}).")
    return Table("device", f"Device: {ctx.device_label}", (
        Column("quantity", "Quantity"), Column("unit", "Unit"),
        Column("datasheet", "Datasheet / spec"), Column("measured", "Measured"),
        Column("source", "Source")), tuple(rows), reading)


def matrices_table(ctx: ReportContext) -> Table:
    rows = tuple(MatrixRow(
        name=m.name, analog_of=m.analog_of, kind=m.kind, rows=m.stats.rows, cols=m.stats.cols,
        nnz=m.stats.nnz, nnz_per_row_mean=m.stats.nnz_per_row_mean,
        nnz_per_row_std=m.stats.nnz_per_row_std, nnz_per_row_max=m.stats.nnz_per_row_max,
        empty_rows=m.stats.empty_rows, bandwidth=m.stats.bandwidth, x_reuse=m.stats.x_reuse,
    ) for m in ctx.runset.matrices)
    if rows:
        lo = min(rows, key=lambda r: r.nnz_per_row_mean)
        hi = max(rows, key=lambda r: r.nnz_per_row_mean)
        analogs = sum(r.analog_of is not None for r in rows)
        nnz = [r.nnz for r in rows]
        nnz_text = count_text(min(nnz)) + ("" if min(nnz) == max(nnz) else
                                           f"–{count_text(max(nnz))}")
        reading = (f"{len(rows)} matrices, {nnz_text} nonzeros; "
                   f"mean nnz/row from {lo.nnz_per_row_mean:.1f} ({lo.name}) to "
                   f"{hi.nnz_per_row_mean:.1f} ({hi.name}).")
        if analogs:
            reading += (f" {analogs} of {len(rows)} are generated analogs (same rows and nnz as "
                        f"the real matrix, synthetic column pattern).")
    else:
        reading = "The run holds no matrices."
    return Table("matrices", "Matrices", (
        Column("name", "Matrix"), Column("analog_of", "Analog of"), Column("kind", "Kind"),
        Column("rows", "Rows", ",d"), Column("cols", "Cols", ",d"), Column("nnz", "NNZ", ",d"),
        Column("nnz_per_row_mean", "NNZ/row mean", ".1f"),
        Column("nnz_per_row_std", "NNZ/row std", ".1f"),
        Column("nnz_per_row_max", "NNZ/row max", ",d"), Column("empty_rows", "Empty rows", ",d"),
        Column("bandwidth", "Bandwidth", ",d"), Column("x_reuse", "x reuse", ".1f")), rows, reading)


def timing_table(ctx: ReportContext) -> Table:
    rows = []
    for v in ctx.cases:
        m, meas, err = v.metrics, v.case.measurement, v.case.correctness
        rows.append(TimingRow(
            label=v.label, matrix=v.case.matrix, backend=v.case.backend, op=v.case.op,
            value_bytes=v.case.value_bytes, index_bytes=v.case.index_bytes, y_read=v.case.y_read,
            nnz=v.traffic.nnz, bytes=m.bytes, samples=len(meas.samples_ms), time_ms=m.time_ms,
            median_ms=meas.median_ms, mean_ms=meas.mean_ms, std_ms=meas.std_ms,
            cov_pct=100 * meas.cov, eff_bw_gb_s=m.eff_bw_gb_s, gflops=m.gflops,
            ai_flop_per_byte=m.arithmetic_intensity, pct_of_peak_bw=m.pct_peak,
            gap_vs_floor_x=m.gap, rel_err=err.rel_err if err else None,
            pct_of_measured_copy_bw=v.measured.pct_peak if v.measured else None,
            gap_vs_measured_floor_x=v.measured.gap if v.measured else None,
            flushed=meas.flushed,
        ))
    columns = [
        Column("label", "Case"), Column("nnz", "NNZ", ",d"),
        Column("time_ms", f"Time, {ctx.runset.timing.statistic}", ".4f"),
        Column("mean_ms", "Mean", ".4f"), Column("std_ms", "Std", ".4f"),
        Column("cov_pct", "CoV", ".1f"),
        Column("eff_bw_gb_s", "Eff. BW", adaptive_fmt([r.eff_bw_gb_s for r in rows])),
        Column("gflops", "GFLOP/s", adaptive_fmt([r.gflops for r in rows])),
        Column("ai_flop_per_byte", "AI", ".3f"),
        Column("pct_of_peak_bw", f"% of {bw_text(ctx.bw_gb_s)} GB/s", ".1f"),
        Column("gap_vs_floor_x", "Gap vs floor", ".1f", "x"),
    ]
    if ctx.measured_copy_gb_s:
        columns += [
            Column("pct_of_measured_copy_bw",
                   f"% of measured {bw_text(ctx.measured_copy_gb_s)} GB/s", ".1f"),
            Column("gap_vs_measured_floor_x", "Gap vs measured floor", ".1f", "x")]
    columns.append(Column("rel_err", "Rel. error", ".1e"))
    basis = f"% of peak and floor against {bw_text(ctx.bw_gb_s)} GB/s ({ctx.bw_label})"
    if ctx.measured_copy_gb_s:
        basis += f", and against the measured copy bandwidth {bw_text(ctx.measured_copy_gb_s)} GB/s"
    return Table("timing", "Timing and throughput", tuple(columns), tuple(rows),
                 _timing_reading(ctx, rows), figures=("bw_efficiency", "nnz_vs_bw"),
                 basis=basis + ".")


def _timing_reading(ctx: ReportContext, rows: list[TimingRow]) -> str:
    if not rows:
        return "No case ran successfully, so nothing was timed."
    best = max(rows, key=lambda r: r.pct_of_peak_bw)
    worst = min(rows, key=lambda r: r.pct_of_peak_bw)
    text = (f"{best.label} comes closest to the floor at {best.pct_of_peak_bw:.1f} % of peak "
            f"(gap {best.gap_vs_floor_x:.1f}x)")
    if worst is not best:
        text += f"; {worst.label} is furthest (gap {worst.gap_vs_floor_x:.1f}x)"
    text += "."
    if best.pct_of_measured_copy_bw is not None:
        text += (f" Against the measured copy bandwidth the best case reaches "
                 f"{best.pct_of_measured_copy_bw:.1f} %.")
    noisy = max(rows, key=lambda r: r.cov_pct)
    text += f" Largest timing spread: {noisy.label}, CoV {noisy.cov_pct:.1f} %"
    unstable = [r.label for r in rows if r.cov_pct > UNSTABLE_COV_PCT]
    text += (f"; CoV above {UNSTABLE_COV_PCT:.0f} % (treat these times with care): "
             f"{', '.join(unstable)}." if unstable else ".")
    return text


def floor_table(ctx: ReportContext) -> Table:
    rows = tuple(FloorRow(
        label=v.label, bytes_mb=v.metrics.bytes / MB, floor_ms=v.metrics.floor_ms,
        time_ms=v.metrics.time_ms, gap_vs_floor_x=v.metrics.gap,
        pct_of_peak_bw=v.metrics.pct_peak,
        measured_floor_ms=v.measured.floor_ms if v.measured else None) for v in ctx.cases)
    mb_fmt = adaptive_fmt([r.bytes_mb for r in rows], ",.1f", ",.3f", 1.0)
    columns = [Column("label", "Case"), Column("bytes_mb", "Bytes", mb_fmt),
               Column("floor_ms", "Floor", ".4f"), Column("time_ms", "Actual", ".4f"),
               Column("gap_vs_floor_x", "Gap", ".1f", "x"),
               Column("pct_of_peak_bw", "% of peak BW", ".1f")]
    if ctx.measured_copy_gb_s:
        columns.insert(3, Column("measured_floor_ms", "Floor at measured copy BW", ".4f"))
    if rows:
        reading = (f"Floors range {span([r.floor_ms for r in rows], '.4f')} ms at "
                   f"{bw_text(ctx.bw_gb_s)} GB/s; measured times sit "
                   f"{span([r.gap_vs_floor_x for r in rows])}x above them.")
    else:
        reading = "No timed case, so no floor to compare with."
    return Table("floor", "Physical floor (bytes / bandwidth) against measured time",
                 tuple(columns), rows, reading, figures=("floor_vs_measured",),
                 basis=f"floor = bytes / {bw_text(ctx.bw_gb_s)} GB/s ({ctx.bw_label}).")


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
    return Table("roofline", "Roofline", columns, tuple(rows), reading, figures=("roofline",),
                 basis=f"{d.fp32_peak_gflops:,.0f} GFLOP/s FP32 and {bw_text(ctx.bw_gb_s)} GB/s "
                       f"({ctx.bw_label}); ridge {ridge:.1f} FLOP/byte.")


def gap_table(ctx: ReportContext) -> Table:
    if ctx.on_cpu:
        # Warps do not describe a CPU: no Little's-law part, the whole gap is "other".
        ceiling, basis = 100.0, ("Cases ran on a CPU: no Little's-law deficit is modelled "
                                 "(ceiling 100 %); floor at " f"{bw_text(ctx.bw_gb_s)} GB/s.")
    else:
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
    elif ctx.on_cpu:
        reading = (f"On the CPU the time above the floor is "
                   f"{span([r.time_ms - r.floor_ms for r in rows], '.4f')} ms; the warp-based "
                   f"Little's-law part is not modelled for a CPU.")
    else:
        share = [r.deficit_share_pct for r in rows]
        big = max(rows, key=lambda r: r.dep_chain_and_other_ms / r.time_ms)
        reading = (f"The Little's-law deficit explains {span(share)} % of the time above the "
                   f"floor; the dependent chain and other effects take the rest, most for "
                   f"{big.label} ({100 * big.dep_chain_and_other_ms / big.time_ms:.0f} % of its "
                   f"time).")
        beat = [r.label for r in rows if r.beats_littles_law]
        if beat:
            reading += f" Faster than the Little's-law ceiling: {', '.join(beat)}."
    return Table("gap", "Gap decomposition", (
        Column("label", "Case"), Column("floor_ms", "Physical floor", ".4f"),
        Column("littles_law_deficit_ms", "Little's-law deficit", ".4f"),
        Column("dep_chain_and_other_ms", "Dep. chain + other", ".4f"),
        Column("time_ms", "Total", ".4f"),
        Column("deficit_share_pct", "Deficit share of gap", ".0f")), tuple(rows), reading,
        figures=("gap_decomposition",), basis=basis)


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
        figures=("int32_vs_int64",),
        basis="Bytes count y read + write (seed 000, 9.3), whatever the kernels did.")


def outcomes_table(ctx: ReportContext) -> Table:
    rows = tuple(OutcomeRow(c.matrix, c.backend, c.op, c.outcome, c.reason or "(no reason given)",
                            c.correctness.rel_err if c.correctness else None)
                 for c in ctx.runset.cases if c.outcome != "ok")
    counts = Counter(r.outcome for r in rows)
    if rows:
        reading = (f"{counts.get('skipped', 0)} case(s) skipped and {counts.get('failed', 0)} "
                   f"failed, of {len(ctx.runset.cases)}; none of them appears in the timing "
                   f"tables.")
    else:
        reading = f"All {len(ctx.runset.cases)} cases ran and passed the correctness check."
    return Table("outcomes", "Skipped and failed cases", (
        Column("matrix", "Matrix"), Column("backend", "Backend"), Column("op", "Op"),
        Column("outcome", "Outcome"), Column("reason", "Reason"),
        Column("rel_err", "Rel. error", ".1e")), rows, reading)


def provenance_table(ctx: ReportContext) -> Table:
    p, rs = ctx.runset.provenance, ctx.runset
    fields = [("run id", rs.run_id), ("schema version", str(rs.schema_version)),
              ("created (UTC)", p.created_utc), ("command", p.command),
              ("sparsescope", p.sparsescope_version), ("git commit", p.git_commit),
              ("host", p.hostname), ("platform", p.platform), ("python", p.python),
              ("device", p.device), ("driver", p.driver or "—"),
              ("suite", f"{rs.suite} (scale {rs.scale:g})")]
    fields += [(f"library: {k}", v) for k, v in sorted(p.libraries.items())]
    fields += [(f"ceiling method: {k}", v) for k, v in sorted(rs.ceilings.method.items())]
    return Table("provenance", "Provenance", (Column("field", "Field"), Column("value", "Value")),
                 tuple(ProvenanceRow(k, v) for k, v in fields),
                 f"Run {rs.run_id} created {p.created_utc} on {p.hostname} by sparsescope "
                 f"{p.sparsescope_version} (commit {p.git_commit}).")


def build_tables(runset: RunSet, *, specs: Sequence[DeviceSpec] | None = None,
                 ctx: ReportContext | None = None) -> list[Table]:
    """Every table of the report, in report order (``specs`` replaces the spec table)."""
    from sparsescope.report import gpu_tables as gt
    from sparsescope.report import warp_tables as wt
    from sparsescope.report.seed_comparison import seed_comparison_table

    ctx = ctx or build_context(runset, specs=specs)
    # Shown only when the run has them: kernel breakdowns, a seed matrix timed as the seed did.
    kernels = gt.kernel_breakdown_tables(ctx) or ()
    seed = seed_comparison_table(ctx)
    return [
        device_table(ctx), matrices_table(ctx), timing_table(ctx), *kernels,
        gt.stability_table(ctx), gt.bandwidth_models_table(ctx), *([seed] if seed else []),
        floor_table(ctx), roofline_table(ctx), wt.littles_law_table(ctx),
        wt.sensitivity_table(ctx), gap_table(ctx), wt.dae_table(ctx), wt.sram_table(ctx),
        wt.fifo_table(ctx), wt.cross_gpu_table(ctx), index_width_table(ctx),
        outcomes_table(ctx), provenance_table(ctx),
    ]
