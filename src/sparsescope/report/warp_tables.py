"""Warp-based tables: Little's law, latency sensitivity, DAE, FIFO depth and SRAM, cross-GPU.

They describe a GPU: the run's own when the cases ran on one, else the reference GPU the user
named (see :mod:`sparsescope.report.context`), and every reading says which. A reference GPU's
tables use its spec alone: no case measured on a CPU is compared with its ceilings (the
per-case DAE table is a GPU run's only, ``report.spmv_layout``). A case above a ceiling the
table states gets its cause (:mod:`sparsescope.report.ceiling_causes`).

Optional per-case inputs read from ``CaseResult.counters`` (profiler readings attached to a
case): ``cpi`` and ``long_scoreboard_cycles`` (the CPI-based DAE speedup, seed 000 section 7.7)
and ``achieved_occupancy_pct`` (the occupancy-adjusted ceiling of seed 000 section 5.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparsescope.model import (
    cross_gpu_row,
    dae_bw_prediction,
    dae_cpi_prediction,
    fifo_depth_table,
    latency_sensitivity,
    littles_law,
    min_fifo_depth,
    occupancy_adjusted_ceiling_pct,
    sram_cost_table,
)
from sparsescope.model.littles_law import LINE_BYTES
from sparsescope.report.ceiling_causes import cause_above, lines_needed
from sparsescope.report.context import CaseView, ReportContext
from sparsescope.report.dae_validated import gain_text
from sparsescope.report.labels import label
from sparsescope.report.table_types import Column, Table, adaptive_fmt, span


def ceiling_name(pct: float) -> str:
    """What caps a DAE gain below 1: the case already runs above the Little's-law ceiling."""
    return f"the {pct:.1f} % Little's-law ceiling"


SENSITIVITY_LATENCIES_NS = (200.0, 300.0, 400.0)
"""The seed's sweep (section 12.3); the run's own latency is added to it."""
EXAMPLE_OCCUPANCY_PCT = 50.0
"""Occupancy of the seed's worked example when no case reports an achieved one: cuSPARSE
``csrmv_v3_kernel``'s theoretical occupancy on H200 (seed 000, section 4.1)."""


def counter(view: CaseView, key: str) -> float | None:
    """A profiler reading of the case (``CaseResult.counters``; None when absent or not
    finite)."""
    value = getattr(view.case.counters, key, None)
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _ll(ctx: ReportContext, latency_ns: float | None = None):
    g = ctx.gpu
    return littles_law(g.peak_bw_gb_s, latency_ns or ctx.latency_ns, g.sm_count,
                       g.max_warps_per_sm)


def _reference(ctx: ReportContext) -> str:
    return (f"Computed for the reference GPU {ctx.gpu.name} from its spec, not for the CPU that "
            f"ran the cases (warps do not describe a CPU). ")


def cases_above_ceilings(ctx: ReportContext, ceilings: list[tuple[float, str, float]]) -> str:
    """One sentence for the (ceiling %, name, lines per warp it counts) the run's cases exceed:
    how many run above each, and why, from the fastest case (the lines in flight it takes:
    ``ceiling_causes``); "" when none is exceeded."""
    best, n = ctx.best, len(ctx.cases)
    above = [(c, name, lines, sum(v.metrics.pct_peak > c for v in ctx.cases))
             for c, name, lines in ceilings]
    above = [a for a in above if a[3]]
    if best is None or not above:
        return ""
    verb = {0: lambda k: " runs" if k == 1 else " run"}
    runs = [f"{count}{verb.get(i, lambda k: '')(count)} above the {c:.1f} % {name} ceiling"
            for i, (c, name, _, count) in enumerate(above)]
    listed = runs[0] if len(runs) == 1 else ", ".join(runs[:-1]) + " and " + runs[-1]
    counted = [f"{lines:g}" for _, _, lines, _ in above]
    counts = counted[0] if len(counted) == 1 else ", ".join(counted[:-1]) + " and " + counted[-1]
    pct = best.metrics.pct_peak
    need = lines_needed(pct, above[0][0], above[0][2])
    which = "that ceiling counts" if len(above) == 1 else "these ceilings count"
    why = (f"{which} {counts} of a 128-byte line in flight per resident warp at "
           f"{ctx.latency_ns:,.0f} ns, and the fastest, {best.label}, at {pct:.1f} % takes at "
           f"least {need:.2f} lines per warp: the kernels keep more in flight per warp than "
           f"the ceilings count (independent loads)")
    if ctx.latency_source != "measured":
        why += f", or the DRAM latency is below the {ctx.latency_ns:,.0f} ns estimate"
    return f" Of the {n} cases, {listed}, because {why}."


@dataclass(frozen=True)
class LittlesLawRow:
    """Seed 000 sections 5.3-5.4 for one GPU and one latency."""

    gpu: str
    bw_gb_s: float
    latency_ns: float
    sm_count: int
    max_warps_per_sm: int
    outstanding_mb: float
    """bw x latency, 10^6 bytes in flight."""
    outstanding_bytes_per_sm: float
    required_warps_per_sm: float
    warp_deficit_per_sm: float
    """required - available (negative: surplus)."""
    headroom_x: float
    """available / required."""
    bw_ceiling_pct: float
    bw_ceiling_gb_s: float
    dep_chain_ceiling_pct: float
    dep_chain_ceiling_gb_s: float
    example_occupancy_pct: float
    example_active_warps_per_sm: float
    occupancy_adjusted_ceiling_pct: float
    """Dependent-chain ceiling at the example occupancy (seed 5.4)."""


def littles_law_table(ctx: ReportContext) -> Table:
    g, ll = ctx.gpu, _ll(ctx)
    occupancy = next((o for v in sorted(ctx.cases, key=lambda v: -v.metrics.pct_peak)
                      if (o := counter(v, "achieved_occupancy_pct")) is not None),
                     EXAMPLE_OCCUPANCY_PCT)
    active = g.max_warps_per_sm * occupancy / 100
    row = LittlesLawRow(
        gpu=g.name, bw_gb_s=g.peak_bw_gb_s, latency_ns=ctx.latency_ns, sm_count=g.sm_count,
        max_warps_per_sm=g.max_warps_per_sm, outstanding_mb=ll.outstanding_bytes / 1e6,
        outstanding_bytes_per_sm=ll.outstanding_bytes_per_sm,
        required_warps_per_sm=ll.warps_per_sm_required, warp_deficit_per_sm=ll.warp_deficit,
        headroom_x=ll.headroom, bw_ceiling_pct=ll.bw_ceiling_pct,
        bw_ceiling_gb_s=ll.bw_ceiling_gb_s, dep_chain_ceiling_pct=ll.dep_chain_ceiling_pct,
        dep_chain_ceiling_gb_s=ll.dep_chain_ceiling_gb_s, example_occupancy_pct=occupancy,
        example_active_warps_per_sm=active,
        occupancy_adjusted_ceiling_pct=occupancy_adjusted_ceiling_pct(
            active, ll.warps_per_sm_required))
    if ll.warp_deficit > 0:
        verdict = (f"{g.name} needs {ll.warps_per_sm_required:.1f} warps/SM at "
                   f"{ctx.latency_ns:,.0f} ns to keep {g.peak_bw_gb_s:,.0f} GB/s in flight but "
                   f"holds {g.max_warps_per_sm}: a deficit of {ll.warp_deficit:.1f} warps/SM "
                   f"caps bandwidth at {ll.bw_ceiling_pct:.1f} % of peak "
                   f"({ll.dep_chain_ceiling_pct:.1f} % with the dependent-load chain).")
    else:
        verdict = (f"{g.name} needs {ll.warps_per_sm_required:.1f} warps/SM at "
                   f"{ctx.latency_ns:,.0f} ns and holds {g.max_warps_per_sm}: enough to saturate "
                   f"bandwidth with independent loads, {ll.dep_chain_ceiling_pct:.1f} % with the "
                   f"dependent-load chain.")
    verdict += (f" At {occupancy:.0f} % occupancy the naive chain ceiling is "
                f"{row.occupancy_adjusted_ceiling_pct:.1f} %.")
    if ctx.gpu_is_run_device:  # the run's own cases against each ceiling stated here
        verdict += cases_above_ceilings(ctx, [
            (ll.bw_ceiling_pct, "Little's-law", 1.0),
            (ll.dep_chain_ceiling_pct, "dependent-chain", 0.5),
            (row.occupancy_adjusted_ceiling_pct, f"{occupancy:.0f} %-occupancy chain",
             0.5 * occupancy / 100)])
    if not ctx.gpu_is_run_device:
        verdict = _reference(ctx) + verdict
    cols = (Column("gpu", "GPU"), Column("bw_gb_s", "Peak bandwidth", ",.0f"),
            Column("latency_ns", "DRAM latency", ",.0f"), Column("sm_count", "SMs", ",d"),
            Column("max_warps_per_sm", "Max warps/SM", "d"),
            Column("outstanding_mb", "Bytes in flight needed", ".2f"),
            Column("outstanding_bytes_per_sm", "Per SM", ",.0f"),
            Column("required_warps_per_sm", "Required warps/SM", ".1f"),
            Column("warp_deficit_per_sm", "Deficit", ".1f"),
            Column("headroom_x", "Headroom (available / required)", ".2f", "x"),
            Column("bw_ceiling_pct", "Little's-law ceiling", ".1f"),
            Column("bw_ceiling_gb_s", "Little's-law ceiling", ",.0f"),
            Column("dep_chain_ceiling_pct", "Dependent-chain ceiling", ".1f"),
            Column("dep_chain_ceiling_gb_s", "Dependent-chain ceiling", ",.0f"),
            Column("example_occupancy_pct", "Example occupancy", ".0f"),
            Column("example_active_warps_per_sm", "Active warps", ".1f"),
            Column("occupancy_adjusted_ceiling_pct", "Chain ceiling at that occupancy", ".1f"))
    return Table("littles_law", f"Little's law: {g.name}", cols, (row,), verdict, vertical=True,
                 basis=ctx.warp_basis())


@dataclass(frozen=True)
class SensitivityRow:
    """Seed 000 section 12.3: one DRAM latency."""

    latency_ns: float
    primary: bool
    """The latency the other tables use."""
    required_warps_per_sm: float
    bw_ceiling_pct: float
    bw_ceiling_gb_s: float
    dep_chain_ceiling_pct: float
    dep_chain_ceiling_gb_s: float
    dae_ceiling_pct: float
    """With a FIFO of 2 entries per warp."""
    dae_ceiling_gb_s: float
    dae_bw_speedup_x: float | None
    """BW-based DAE speedup of the best case."""

    @property
    def dae_speedup_text(self) -> str:
        """The speedup, or "no gain: limited by ..." below 1 (never a speedup under 1)."""
        return gain_text(self.dae_bw_speedup_x, ceiling_name(self.bw_ceiling_pct))


def sensitivity_table(ctx: ReportContext) -> Table:
    # A case's % of peak belongs to the GPU that ran it: none on a reference GPU.
    g, best = ctx.gpu, ctx.best if ctx.gpu_is_run_device else None
    latencies = sorted(set(SENSITIVITY_LATENCIES_NS) | {float(ctx.latency_ns)})
    current = best.metrics.pct_peak if best is not None else None
    rows = tuple(SensitivityRow(
        r.latency_ns, math.isclose(r.latency_ns, ctx.latency_ns), r.warps_per_sm_required,
        r.bw_ceiling_pct, r.bw_ceiling_gb_s, r.dep_chain_ceiling_pct, r.dep_chain_ceiling_gb_s,
        r.dae_ceiling_pct, r.dae_ceiling_gb_s, r.dae_bw_speedup)
        for r in latency_sensitivity(g.peak_bw_gb_s, g.sm_count, g.max_warps_per_sm, latencies,
                                     current_pct=current))
    lo, hi = rows[0], rows[-1]
    reading = (f"Between {lo.latency_ns:,.0f} and {hi.latency_ns:,.0f} ns the required warps/SM "
               f"on {g.name} grow from {lo.required_warps_per_sm:.1f} to "
               f"{hi.required_warps_per_sm:.1f} and the Little's-law ceiling falls from "
               f"{lo.bw_ceiling_pct:.1f} % to {hi.bw_ceiling_pct:.1f} %.")
    if best is not None:
        speedups = "; ".join(f"{r.latency_ns:,.0f} ns: {r.dae_speedup_text}" for r in rows)
        reading += (f" BW-based DAE speedup of the best case ({best.label}, {current:.1f} %): "
                    f"{speedups}.")
        if current > 0:
            # Latency at which the Little's-law ceiling falls to the best measured %:
            # max_warps x SMs x line / (pct x bw); bytes / (GB/s) is ns.
            limit = g.max_warps_per_sm * g.sm_count * LINE_BYTES * 100 / (current * g.peak_bw_gb_s)
            used = next(r for r in rows if r.primary)
            above = cause_above(ctx, current, used.bw_ceiling_pct)
            if above:
                reading += f" At the {ctx.latency_ns:,.0f} ns used, the best case's {above}."
            else:
                reading += (f" With one line in flight per warp, the best measured case needs a "
                            f"latency of at most ~{limit:,.0f} ns; above it the ceiling falls "
                            f"below that case.")
    if not ctx.gpu_is_run_device:
        reading = _reference(ctx) + reading
    columns = [
        Column("latency_ns", "DRAM latency", ",.0f"), Column("primary", "Used in tables"),
        Column("required_warps_per_sm", "Required warps/SM", ".1f"),
        Column("bw_ceiling_pct", "Little's-law ceiling", ".1f"),
        Column("bw_ceiling_gb_s", "Little's-law ceiling", ",.0f"),
        Column("dep_chain_ceiling_pct", "Dep-chain ceiling", ".1f"),
        Column("dep_chain_ceiling_gb_s", "Dep-chain ceiling", ",.0f"),
        Column("dae_ceiling_pct", "DAE ceiling (depth 2)", ".1f")]
    if best is not None:
        columns.append(Column("dae_speedup_text", "DAE speedup, best case"))
    return Table("latency_sensitivity", f"DRAM latency sensitivity: {g.name}", tuple(columns),
                 rows, reading, basis=ctx.warp_basis())


@dataclass(frozen=True)
class DaeRow:
    """Seed 000 section 7.7 for one case: BW-based, and CPI-based when profiled."""

    label: str
    current_bw_gb_s: float
    current_pct: float
    predicted_pct: float
    """min(Little's-law ceiling, 2 x current)."""
    predicted_bw_gb_s: float
    """current bandwidth x speedup."""
    bw_speedup_x: float
    limited_by: str
    """What caps the gain: ``mlp_gain`` (doubled memory-level parallelism) or
    ``littles_law`` (the ceiling); shown through :func:`~sparsescope.report.labels.label`."""
    cpi: float | None
    projected_cpi: float | None
    cpi_speedup_x: float | None
    ceiling_pct: float = 100.0
    """The Little's-law ceiling the BW-based speedup is capped by."""

    above_ceiling: str = ""
    """Why the case runs above the Little's-law ceiling ("" when it does not)."""

    @property
    def bw_speedup_text(self) -> str:
        """The speedup, or "no gain: limited by ..." below 1 (never a speedup under 1)."""
        return gain_text(self.bw_speedup_x, ceiling_name(self.ceiling_pct))

    @property
    def limited_by_text(self) -> str:
        return label(self.limited_by)


def _dae_reading(rows: list[DaeRow], ceiling: float) -> str:
    """The DAE table's reading; a gain below 1 is "no gain", never a speedup."""
    if not rows:
        return "No timed case, so no DAE prediction."
    top = max(rows, key=lambda r: r.bw_speedup_x)
    low = min(rows, key=lambda r: r.bw_speedup_x)
    if top.bw_speedup_x < 1:
        reading = (f"Doubling memory-level parallelism gains nothing on any case: each already "
                   f"runs above {ceiling_name(ceiling)} ({top.bw_speedup_text})")
    else:
        reading = (f"Doubling memory-level parallelism lifts {top.label} most "
                   f"({top.bw_speedup_text}, to {top.predicted_pct:.1f} % of peak)")
    if low is not top and top.bw_speedup_x >= 1:
        if low.bw_speedup_x < 1:
            reading += (f"; {low.label}, already at {low.current_pct:.1f} %, gets "
                        f"{low.bw_speedup_text}")
        else:
            why = (f"capped by {ceiling_name(ceiling)}" if low.limited_by == "littles_law"
                   else "MLP-limited")
            reading += f"; {low.label} least ({low.bw_speedup_text}, {why})"
    reading += "."
    above = [r for r in rows if r.above_ceiling]
    if above:
        reading += " " + " ".join(f"{r.label}: {r.above_ceiling}." for r in above)
    cpis = [r.cpi_speedup_x for r in rows if r.cpi_speedup_x is not None]
    if cpis:
        reading += (f" Removing Long Scoreboard stalls from the measured CPI gives "
                    f"{span(cpis, '.2f')}x.")
    return reading


def dae_table(ctx: ReportContext) -> Table:
    ll = _ll(ctx)
    rows = []
    for v in ctx.cases:
        p = dae_bw_prediction(v.metrics.pct_peak, ll.bw_ceiling_pct)
        cpi, stalls = counter(v, "cpi"), counter(v, "long_scoreboard_cycles")
        c = dae_cpi_prediction(cpi, stalls) if cpi and stalls is not None and stalls < cpi \
            else None
        rows.append(DaeRow(v.label, v.metrics.eff_bw_gb_s, p.current_pct, p.predicted_pct,
                           v.metrics.eff_bw_gb_s * p.speedup, p.speedup, p.limited_by,
                           c.cpi if c else None, c.projected_cpi if c else None,
                           c.speedup if c else None, ll.bw_ceiling_pct,
                           cause_above(ctx, p.current_pct, ll.bw_ceiling_pct)))
    bw = adaptive_fmt([r.current_bw_gb_s for r in rows])
    columns = [Column("label", "Case"), Column("current_bw_gb_s", "Current BW", bw),
               Column("current_pct", "Current % of peak", ".1f"),
               Column("predicted_pct", "With DAE % of peak", ".1f"),
               Column("predicted_bw_gb_s", "With DAE BW", bw),
               Column("bw_speedup_text", "BW-based speedup"),
               Column("limited_by_text", "Limited by")]
    if any(r.cpi is not None for r in rows):
        columns += [Column("cpi", "CPI", ".1f"), Column("projected_cpi", "CPI without LSB", ".1f"),
                    Column("cpi_speedup_x", "CPI-based speedup", ".2f", "x")]
    reading = _dae_reading(rows, ll.bw_ceiling_pct)
    return Table("dae", f"DAE what-if per case: {ctx.gpu.name}", tuple(columns), tuple(rows),
                 reading,
                 basis=ctx.warp_basis() + f" Little's-law ceiling {ll.bw_ceiling_pct:.1f} %.")


@dataclass(frozen=True)
class SramRow:
    """Seed 000 section 7.8: FIFO SRAM at one depth (8-byte entries)."""

    depth_entries: int
    bytes_per_warp: int
    kib_per_sm: float
    total_mib: float
    pct_of_register_file: float


def sram_table(ctx: ReportContext) -> Table:
    g, ll = ctx.gpu, _ll(ctx)
    need = min_fifo_depth(ll.warps_per_sm_required, g.max_warps_per_sm)
    depths = sorted({need, 2, 8, 16, 32, 64})
    rows = tuple(SramRow(r.depth, r.bytes_per_warp, r.kib_per_sm, r.total_mib,
                         r.pct_of_register_file)
                 for r in sram_cost_table(g.sm_count, g.max_warps_per_sm, g.registers_per_sm,
                                          depths))
    first = next(r for r in rows if r.depth_entries == need)
    d32 = next(r for r in rows if r.depth_entries == 32)
    reading = (f"The minimum depth of {need} entries per warp costs {first.total_mib:.2f} MiB on "
               f"{g.name} ({first.pct_of_register_file:.1f} % of the register file); depth 32 "
               f"costs {d32.total_mib:.2f} MiB ({d32.pct_of_register_file:.1f} %).")
    if not ctx.gpu_is_run_device:
        reading = _reference(ctx) + reading
    return Table("dae_sram", f"DAE FIFO SRAM cost: {g.name}", (
        Column("depth_entries", "FIFO depth", "d"),
        Column("bytes_per_warp", "Bytes/warp", ",d"), Column("kib_per_sm", "Per SM", ",.1f"),
        Column("total_mib", f"Total ({g.sm_count} SMs)", ",.2f"),
        Column("pct_of_register_file", "% of register file", ".1f")), rows, reading,
        basis=ctx.warp_basis() + " 8-byte entries (4 B data + 4 B paired value).")


@dataclass(frozen=True)
class FifoRow:
    """Seed 000 section 7.9: bandwidth ceiling at one FIFO depth."""

    depth_entries: int
    outstanding_requests_per_sm: float
    ceiling_pct: float
    ceiling_gb_s: float


def fifo_table(ctx: ReportContext) -> Table:
    g, ll = ctx.gpu, _ll(ctx)
    rows = tuple(FifoRow(r.depth, r.outstanding_requests_per_sm, r.ceiling_pct,
                         g.peak_bw_gb_s * r.ceiling_pct / 100)
                 for r in fifo_depth_table(ll.warps_per_sm_required, g.max_warps_per_sm))
    need = min_fifo_depth(ll.warps_per_sm_required, g.max_warps_per_sm)
    sat = next((r for r in rows if r.ceiling_pct >= 100.0), None)
    reading = f"Without a FIFO the dependent chain caps bandwidth at {rows[0].ceiling_pct:.1f} %"
    reading += (f"; {sat.depth_entries} entries per warp reach 100 % (Little's law asks for "
                f"{need})." if sat else f"; no listed depth saturates (needs {need}).")
    if not ctx.gpu_is_run_device:
        reading = _reference(ctx) + reading
    return Table("dae_fifo", f"DAE FIFO depth against bandwidth ceiling: {g.name}", (
        Column("depth_entries", "FIFO depth", "d"),
        Column("outstanding_requests_per_sm", "Outstanding requests/SM", ",.0f"),
        Column("ceiling_pct", "Ceiling", ".1f"), Column("ceiling_gb_s", "Ceiling", ",.0f")),
        rows, reading, basis=ctx.warp_basis())


@dataclass(frozen=True)
class CrossGpuRow:
    """Seed 000 sections 7.10-7.11: one GPU of the spec table."""

    gpu: str
    this_run: bool
    bw_gb_s: float
    sm_count: int
    max_warps_per_sm: int
    latency_ns: float
    required_warps_per_sm: float
    warp_deficit_per_sm: float
    headroom_x: float
    bw_ceiling_pct: float
    dep_chain_ceiling_pct: float
    min_fifo_depth_entries: int
    current_pct: float | None
    """Best measured % of peak, only for the GPU that ran the cases."""
    dae_bw_speedup_x: float | None

    @property
    def dae_speedup_text(self) -> str:
        """The speedup, or "no gain: limited by ..." below 1 (never a speedup under 1)."""
        return gain_text(self.dae_bw_speedup_x, ceiling_name(self.bw_ceiling_pct))


def cross_gpu_table(ctx: ReportContext) -> Table:
    gpus = [s for s in ctx.specs if s.kind == "gpu"]
    run_name = ctx.device.name.lower() if ctx.gpu_is_run_device else None
    if run_name is not None and all(s.name.lower() != run_name for s in gpus):
        gpus.insert(0, ctx.device)
    best = ctx.best
    rows = []
    for s in gpus:
        mine = run_name is not None and s.name.lower() == run_name
        spec = ctx.device if mine else s
        r = cross_gpu_row(spec.name, spec.peak_bw_gb_s, spec.sm_count, spec.max_warps_per_sm,
                          ctx.latency_ns if mine else spec.dram_latency_ns,
                          current_pct=best.metrics.pct_peak if mine and best else None)
        rows.append(CrossGpuRow(r.gpu, mine, r.bw_gb_s, r.sm_count, r.max_warps_per_sm,
                                r.latency_ns, r.warps_per_sm_required, r.warp_deficit, r.headroom,
                                r.bw_ceiling_pct, r.dep_chain_ceiling_pct, r.min_fifo_depth,
                                r.current_pct, r.dae_speedup))
    if rows:
        most = max(rows, key=lambda r: r.warp_deficit_per_sm)
        least = min(rows, key=lambda r: r.warp_deficit_per_sm)
        reading = (f"Of {len(rows)} GPUs in the spec table, {most.gpu} is the most warp-starved "
                   f"(needs {most.required_warps_per_sm:.1f} warps/SM, ceiling "
                   f"{most.bw_ceiling_pct:.1f} %) and {least.gpu} the least "
                   f"({least.required_warps_per_sm:.1f}, ceiling {least.bw_ceiling_pct:.1f} %).")
        here = next((r for r in rows if r.this_run and r.current_pct is not None), None)
        if here is not None:
            above = cause_above(ctx, here.current_pct, here.bw_ceiling_pct)
            reading += (f" {here.gpu} (this run) reaches {here.current_pct:.1f} % at best"
                        + (f": {above}" if above else "")
                        + f"; DAE would give {here.dae_speedup_text}.")
        elif not ctx.gpu_is_run_device:
            reading += (f" The cases ran on a CPU, so no GPU has a measured % of peak; "
                        f"{ctx.gpu.name} is the reference GPU.")
    else:
        reading = "The spec table holds no GPU."
    return Table("cross_gpu", "Cross-GPU Little's law and DAE", (
        Column("gpu", "GPU"), Column("this_run", "This run"),
        Column("bw_gb_s", "Peak BW", ",.0f"), Column("sm_count", "SMs", "d"),
        Column("max_warps_per_sm", "Max warps/SM", "d"),
        Column("latency_ns", "DRAM latency", ",.0f"),
        Column("required_warps_per_sm", "Required warps/SM", ".1f"),
        Column("warp_deficit_per_sm", "Deficit", ".1f"),
        Column("headroom_x", "Headroom", ".2f", "x"),
        Column("bw_ceiling_pct", "Little's-law ceiling", ".1f"),
        Column("dep_chain_ceiling_pct", "Dep-chain ceiling", ".1f"),
        Column("min_fifo_depth_entries", "Min FIFO depth", "d"),
        Column("current_pct", "Current % of peak", ".1f"),
        Column("dae_speedup_text", "DAE speedup")), tuple(rows), reading,
        basis="Every GPU of the spec table at its datasheet latency (the run's GPU at the run's "
              "latency).")
