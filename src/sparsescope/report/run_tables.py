"""The tables that say what ran: the device (datasheet beside measured), the matrices, the
skipped and failed cases, and the run's provenance."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from sparsescope.hardware.cpu_ceilings import busy_share_pct, was_busy
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.report.context import ReportContext
from sparsescope.report.labels import humanize, label
from sparsescope.report.table_types import MB, Column, Table, adaptive_fmt, bw_text, count_text


@dataclass(frozen=True)
class DeviceRow:
    """One figure of the device that ran the cases: the stated figure, labelled with what
    states it, beside the measured one."""

    quantity: str
    unit: str
    datasheet: str | None
    """The figure stated without measuring it (a datasheet's, the OS's, an estimate), as
    text; None when the only figure is measured (a CPU's bandwidth)."""
    measured: str | None
    """Ceiling measured on the device (this run's, or its cached measurement), as text."""
    source: str
    spread: str | None = None
    """Spread of the trials the measured figure is the best of, ``100 (max - min) / best``,
    as text (``6.1 % (7 trials)``); None when it was not measured in trials."""
    stated_by: str | None = None
    """What states :attr:`datasheet`: ``datasheet``, ``OS``, ``estimate``, ``derived``,
    ``device query`` or ``convention`` (:func:`stated_by`)."""


#: Source prefix -> what states the figure (the spec's ``sources`` say where each came from).
_STATED_BY = (("measured", "measured"), ("os:", "OS"), ("estimate", "estimate"),
              ("default estimate", "estimate"), ("derived", "derived"),
              ("queried", "device query"), ("convention", "convention"),
              ("assumed", "estimate"))


def stated_by(source: str) -> str:
    """What a spec figure with this ``source`` is: ``measured`` (a CPU's bandwidth and FP32,
    measured, not stated), ``OS``, ``estimate``, ``derived``, ``device query``, ``convention``,
    else ``datasheet`` (a datasheet, whitepaper or guide the spec table cites)."""
    text = source.strip().lower()
    return next((kind for prefix, kind in _STATED_BY if text.startswith(prefix)), "datasheet")


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


def device_table(ctx: ReportContext, *, spmv: bool = True) -> Table:
    """Stated beside measured, each stated figure labelled with what states it (a CPU has no
    datasheet: its bandwidth and FP32 are measured and shown as such, its cores and caches as
    the OS names them); ``spmv=False``: the reading speaks of the bounds of a report of other
    ops (SpMM, slicing), which use ``device.peak_bw_gb_s`` alone."""
    d, c = ctx.device, ctx.runset.ceilings
    src = d.sources

    def row(quantity, unit, datasheet, measured=None, key="", ceiling=""):
        source = src.get(key, "")
        kind = None
        if datasheet is not None and key:  # no source: the spec table's (GPU) or the OS's
            kind = stated_by(source) if source else ("datasheet" if gpu else "OS")
        if kind == "measured":  # a measured figure is never shown as a stated one
            datasheet, kind = None, None
        return DeviceRow(quantity, unit, datasheet, measured, source,
                         spread_text(c, ceiling) if measured is not None else None, kind)

    def num(value, spec=None):
        if value is None:
            return None
        return format(value, spec or adaptive_fmt([value], small=",.1f"))

    gpu = d.kind == "gpu"
    # The cache as the machine names it: a CPU's last level, at the level the OS reports.
    level = re.search(r"\b(L[1-4])\b", src.get("l2_bytes", ""))
    cache = "L2 cache" if gpu else "Last-level cache" + (f" ({level.group(1)})" if level else "")
    rows = [
        row("Device", "", d.vendor_name or d.name, c.device or None,
            "vendor_name" if "vendor_name" in src else "name"),
        row("Kind", "", {"gpu": "GPU", "cpu": "CPU"}.get(d.kind, d.kind)),
        row("Compute capability", "", d.compute_capability or None, None, "compute_capability"),
        row("SMs" if gpu else "Logical cores", "", str(d.sm_count), None, "sm_count"),
        row("Max warps per SM", "warps", str(d.max_warps_per_sm) if gpu else None, None,
            "max_warps_per_sm"),
        row("Registers per SM", "32-bit", f"{d.registers_per_sm:,}" if gpu else None, None,
            "registers_per_sm"),
        row(cache, "MB", num(d.l2_bytes / MB, ",.1f"), None, "l2_bytes"),
        row("Memory", "", d.memory or None, None, "memory"),
        row("Peak bandwidth", "GB/s", num(d.peak_bw_gb_s), num(c.copy_bw_gb_s), "peak_bw_gb_s",
            "copy_bw_gb_s"),
        row("Read bandwidth", "GB/s", None, num(c.read_bw_gb_s), ceiling="read_bw_gb_s"),
        row("L2 bandwidth", "GB/s", None, num(c.l2_bw_gb_s)),
        row("L2 write bandwidth", "GB/s", None, num(c.l2_write_bw_gb_s)),
        row("Peak FP32", "GFLOP/s", num(d.fp32_peak_gflops), num(c.fp32_gflops),
            "fp32_peak_gflops", "fp32_gflops"),
        row("SM clock" if gpu else "Clock", "MHz", num(d.sm_clock_mhz), None, "sm_clock_mhz"),
        row("DRAM latency", "ns", num(d.dram_latency_ns), num(c.dram_latency_ns, ",.1f"),
            "dram_latency_ns"),
        row("L2 latency", "ns", None, num(c.l2_latency_ns, ",.1f")),
        row("DRAM random gathers", "G sectors/s", None, num(c.dram_gather_gsectors_s, ",.1f")),
        row("L2 random gathers", "G sectors/s", None, num(c.l2_gather_gsectors_s, ",.1f")),
        row("Empty kernel launch", "us", None, num(c.launch_us, ",.2f")),
        row("Timed call of one empty launch", "us", None, num(c.call_us, ",.2f")),
        row("Each further launch of a call", "us", None, num(c.next_launch_us, ",.2f")),
        row("PDL launch back to back", "us", None, num(getattr(c, "pdl_launch_us", None),
                                                        ",.2f")),
        row("L2 flush write-back share", "-", None, num(c.flush_writeback_share, ".2f")),
    ]
    rows = [r for r in rows if r.datasheet is not None or r.measured is not None]
    if not spmv:
        reading = _ops_device_reading(ctx, num(d.peak_bw_gb_s))
    elif ctx.on_cpu:
        warps = (f"the warp-based tables use the reference GPU {ctx.gpu.name}'s spec"
                 if ctx.gpu is not None else "no warp-based table is computed (no GPU named)")
        reading = (f"The cases ran on a CPU: its measured copy bandwidth, "
                   f"{num(d.peak_bw_gb_s)} GB/s{cpu_peak_note(c)}, is the peak every % of peak "
                   f"refers to; {warps}.{busy_note(c)}")
    elif ctx.measured_copy_gb_s:
        pct = 100 * ctx.measured_copy_gb_s / d.peak_bw_gb_s
        reading = (f"The measured copy bandwidth is {bw_text(ctx.measured_copy_gb_s)} GB/s, "
                   f"{pct:.1f} % of the {d.peak_bw_gb_s:,.0f} GB/s datasheet figure; tables give "
                   f"% of peak against both.")
    else:
        reading = (f"No copy bandwidth was measured: every % of peak is against "
                   f"{d.peak_bw_gb_s:,.0f} GB/s ({ctx.bw_label}).")
    spread = (Column("spread", "Spread of trials"),) if any(r.spread for r in rows) else ()
    return Table("device", f"Device: {ctx.device_label}", (
        Column("quantity", "Quantity"), Column("unit", "Unit"),
        Column("datasheet", "Stated (not measured)"), Column("stated_by", "Stated by"),
        Column("measured", "Measured"), *spread, Column("source", "Source")), tuple(rows),
        reading, basis="Stated: a figure taken from the datasheet, the OS or an estimate, "
                       "labelled by which; Measured: a ceiling measured on the device itself.")


#: Spread of a CPU ceiling's trials above which the reading calls the machine busy.
BUSY_SPREAD_PCT = 10.0


def spread_text(c: MeasuredCeilings, ceiling: str) -> str | None:
    """``6.1 % (7 trials)``: the spread of the trials of ``ceiling``; None when not known."""
    spread = c.spread_pct(ceiling) if ceiling else None
    if spread is None:
        return None
    return f"{spread:.1f} %" + (f" ({c.trials} trials)" if c.trials else "")


def cpu_peak_note(c: MeasuredCeilings) -> str:
    """`` (best of 7 trials spread over 6.1 %, measured 2026-...)``, or "" without trials."""
    if c.copy_bw_spread_pct is None:
        return ""
    when = f", measured {c.measured_utc}" if c.measured_utc else ""
    best = f"best of {c.trials} trials" if c.trials else "best trial"
    return f" ({best} spread over {c.copy_bw_spread_pct:.1f} %{when})"


def busy_note(c: MeasuredCeilings) -> str:
    """A sentence when a CPU ceiling's trials spread over more than :data:`BUSY_SPREAD_PCT` (a
    fact about the trials), saying the machine was busy only where the load recorded while
    measuring shows it (``cpu_ceilings.was_busy``: other processes' share of the CPUs; a wide
    spread alone is no such signal: one slow trial on an idle VM makes one)."""
    wide = [(label, spread) for label, spread in (("copy", c.copy_bw_spread_pct),
                                                  ("read", c.read_bw_spread_pct),
                                                  ("FP32", c.fp32_spread_pct))
            if spread is not None and spread > BUSY_SPREAD_PCT]
    busy = was_busy(c.method)
    if not wide and not busy:
        return ""
    listed = ", ".join(f"{label} {spread:.0f} %" for label, spread in wide)
    kept = "the best trial is kept, and `sparsescope ceilings --refresh`"
    if not busy:
        return f" The trials spread widely ({listed}); {kept} measures the ceilings again."
    took = (f"other processes took {busy_share_pct(c.method):.0f} % of the CPUs' time while "
            f"measuring: the machine was busy")
    lead = f" The trials spread widely ({listed}): {took}" if wide else f" O{took[1:]}"
    return f"{lead}; {kept} on a quiet machine measures the ceilings again."


def _ops_device_reading(ctx: ReportContext, peak: str) -> str:
    d = ctx.device
    if ctx.on_cpu:
        c = ctx.runset.ceilings
        return (f"The cases ran on a CPU: its measured copy bandwidth, {peak} GB/s"
                f"{cpu_peak_note(c)}, is the DRAM bandwidth the bounds of this report use."
                f"{busy_note(c)}")
    if ctx.measured_copy_gb_s:
        pct = 100 * ctx.measured_copy_gb_s / d.peak_bw_gb_s
        return (f"The measured copy bandwidth is {bw_text(ctx.measured_copy_gb_s)} GB/s, "
                f"{pct:.1f} % of the {d.peak_bw_gb_s:,.0f} GB/s datasheet figure; the DRAM "
                f"bounds of this report use the datasheet figure.")
    return (f"No copy bandwidth was measured: the DRAM bounds of this report use "
            f"{d.peak_bw_gb_s:,.0f} GB/s ({ctx.bw_label}).")


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


def outcomes_table(ctx: ReportContext) -> Table:
    rows = tuple(OutcomeRow(c.matrix, c.backend, c.op, c.outcome,
                            humanize(c.reason) or "(no reason given)",
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
    fields += [(f"library: {label(k)}", v) for k, v in sorted(p.libraries.items())]
    fields += [(f"ceiling method: {label(k)}", v) for k, v in sorted(rs.ceilings.method.items())]
    return Table("provenance", "Provenance", (Column("field", "Field"), Column("value", "Value")),
                 tuple(ProvenanceRow(k, v) for k, v in fields),
                 f"Run {rs.run_id} created {p.created_utc} on {p.hostname} by sparsescope "
                 f"{p.sparsescope_version} (commit {p.git_commit}).")
