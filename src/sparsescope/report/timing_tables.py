"""The measured-time tables of seed 000: timing and throughput of every ok case (section 3.1)
and the physical floor, bytes / bandwidth, against the measured time (section 5.1)."""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.report.byte_models import own_model
from sparsescope.report.ceiling_causes import peak_cause
from sparsescope.report.context import ReportContext
from sparsescope.report.table_types import MB, Column, Table, adaptive_fmt, bw_text, span
from sparsescope.timing.modes import mode_suffix

UNSTABLE_COV_PCT = 10.0
"""Above this coefficient of variation a timing is flagged as unstable in the reading."""


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
    bytes_basis: str = "op model"
    """Whose bytes: ``declared`` (the backend's own format) or ``op model`` (CSR)."""
    csr_equiv_gb_s: float | None = None
    """INT32 CSR's bytes / time: compares formats by time alone (not a bandwidth reached)."""
    above_peak: str = ""
    """The named cause when the case reads above 100 % by its own bytes."""


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
            flushed=meas.flushed, **_model_fields(v),
        ))
    columns = [
        Column("label", "Case"), Column("nnz", "NNZ", ",d"),
        Column("time_ms", f"Time, {ctx.runset.timing.statistic}"
                          f"{mode_suffix(ctx.runset.timing)}", ".4f"),
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
    if any(r.bytes_basis == "declared" for r in rows):
        columns += [Column("bytes", "Bytes (own format)", ",d"),
                    Column("csr_equiv_gb_s", "INT32-CSR-equivalent",
                           adaptive_fmt([r.csr_equiv_gb_s or 0.0 for r in rows]))]
    columns.append(Column("rel_err", "Rel. error", ".1e"))
    basis = f"% of peak and floor against {bw_text(ctx.bw_gb_s)} GB/s ({ctx.bw_label})"
    if ctx.measured_copy_gb_s:
        basis += f", and against the measured copy bandwidth {bw_text(ctx.measured_copy_gb_s)} GB/s"
    return Table("timing", "Timing and throughput", tuple(columns), tuple(rows),
                 _timing_reading(ctx, rows),
                 basis=basis + ". " + own_model(ctx))


def _model_fields(v) -> dict:
    """The stored model's basis, CSR-equivalent throughput and above-peak cause of a view."""
    if v.model is None:
        return {}
    return {"bytes_basis": v.model.bytes_basis, "csr_equiv_gb_s": v.model.csr_equiv_gb_s,
            "above_peak": v.model.above_peak}


def above_peak_text(ctx: ReportContext, labels=None) -> str:
    """One sentence per case above 100 % by its own bytes, with its cause (``because``), ""
    when none is; ``labels``: only those cases."""
    causes = [peak_cause(ctx, v) for v in ctx.cases if labels is None or v.label in labels]
    return " ".join(f"**Above the ceiling:** {c}." for c in causes if c)


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
    if any(r.bytes_basis == "declared" for r in rows):
        text += (" Bytes, % of peak and floor use each backend's own format (its declared "
                 "traffic); the INT32-CSR-equivalent column compares formats by time alone.")
    flags = above_peak_text(ctx)
    return text + (" " + flags if flags else "")


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
        flags = above_peak_text(ctx)
        reading += " " + flags if flags else ""
    else:
        reading = "No timed case, so no floor to compare with."
    return Table("floor", "Physical floor (bytes / bandwidth) against measured time",
                 tuple(columns), rows, reading,
                 basis=f"floor = bytes / {bw_text(ctx.bw_gb_s)} GB/s ({ctx.bw_label}). "
                       + own_model(ctx))
