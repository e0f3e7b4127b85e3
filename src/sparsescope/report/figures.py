"""Report figures as PNG bytes (matplotlib's Agg canvas, imported inside the functions).

Each plot function takes the report context and the tables by name and returns
``(figure, caption)``, or a string saying why it has nothing to draw (then the report says so
instead of showing an empty plot). Which figure is drawn, under which table, is declared once,
with the tables, in :mod:`sparsescope.report.spmv_layout` (``FIGURE_FUNCS`` there); this module
only draws. ``figures/<name>.png`` is where :mod:`sparsescope.report.write` puts each one.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from sparsescope.report.context import ReportContext
from sparsescope.report.figure_types import FigureResult, PlotFn
from sparsescope.report.table_types import Table, bw_text, span

DPI = 110
WIDE = (10.0, 5.2)
PAIR = (12.0, 5.0)
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")


def _figure(size=WIDE, ncols: int = 1):
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    axes = fig.subplots(1, ncols)
    return fig, axes


def _colors(rows: list[Any]) -> list[str]:
    """One color per backend, so a multi-backend run reads at a glance."""
    backends = list(dict.fromkeys(getattr(r, "backend", "") for r in rows))
    return [COLORS[backends.index(getattr(r, "backend", "")) % len(COLORS)] for r in rows]


#: Bars (cases) a figure names and values one by one. Past it the names run into one band
#: nobody can read, and laying out their text is most of a large run's report (924 cases:
#: 28,000 text draws, 58 of the report's 71 s): every k-th bar is named and the per-bar values
#: are left to the caption and the tables.
LABELLED_BARS = 24


def each_labelled(count: int) -> bool:
    """Whether a figure of ``count`` bars or points labels every one (:data:`LABELLED_BARS`)."""
    return count <= LABELLED_BARS


def _bar_labels(ax, labels: list[str]) -> None:
    """Name the bars: each of them up to :data:`LABELLED_BARS`, else every
    ``ceil(n / LABELLED_BARS)``-th. Hand check: 924 bars -> every 39th, 24 names."""
    step = -(-len(labels) // LABELLED_BARS) if labels else 1
    ax.set_xticks(range(0, len(labels), step))
    ax.set_xticklabels(labels[::step], rotation=30 if len(labels) > 4 else 0, ha="right"
                       if len(labels) > 4 else "center", fontsize=9)


_bw = bw_text


def _suffix(ctx: ReportContext) -> str:
    return f" — {ctx.device_label}"


def _warp_suffix(ctx: ReportContext) -> str:
    if ctx.gpu_is_run_device:
        return f" — {ctx.gpu.name}"
    return f" — {ctx.gpu.name} (reference GPU; cases ran on {ctx.device_label})"


def plot_roofline(ctx: ReportContext, tables: Mapping[str, Table]):
    import numpy as np

    rows = list(tables["roofline"].rows)
    peak = ctx.device.fp32_peak_gflops
    if peak <= 0:
        return f"{ctx.device.name} has no FP32 peak in its spec"
    if not rows:
        return "no case was timed"
    ridge = peak / ctx.bw_gb_s
    ais = [r.ai_flop_per_byte for r in rows]
    x = np.logspace(np.log10(min(ais) / 3), np.log10(max(ridge * 3, max(ais) * 3)), 200)
    fig, ax = _figure()
    ax.loglog(x, np.minimum(peak, ctx.bw_gb_s * x), color="k", lw=2,
              label=f"roof: {_bw(ctx.bw_gb_s)} GB/s, {peak:,.0f} GFLOP/s")
    if ctx.measured_copy_gb_s:
        ax.loglog(x, np.minimum(peak, ctx.measured_copy_gb_s * x), color="grey", ls="--",
                  label=f"measured copy {_bw(ctx.measured_copy_gb_s)} GB/s")
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:.1f} FLOP/B", (ridge, peak), textcoords="offset points",
                xytext=(5, -15), fontsize=9)
    timing = list(tables["timing"].rows)
    colors = _colors(timing)
    for backend in dict.fromkeys(r.backend for r in timing):
        pick = [i for i, r in enumerate(timing) if r.backend == backend]
        ax.scatter([rows[i].ai_flop_per_byte for i in pick], [rows[i].gflops for i in pick],
                   color=colors[pick[0]], zorder=3, label=backend)
    # Points of one run cluster tightly: label with the matrix only, alternating above and
    # below in throughput order so neighbours do not print on top of each other.
    order = sorted(range(len(rows)), key=lambda i: rows[i].gflops)
    for rank, i in enumerate(order if each_labelled(len(rows)) else ()):
        ax.annotate(timing[i].matrix, (rows[i].ai_flop_per_byte, rows[i].gflops),
                    textcoords="offset points", xytext=(6, 4 if rank % 2 else -11), fontsize=8)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("Throughput (GFLOP/s)")
    ax.set_title("Roofline" + _suffix(ctx))
    ax.legend(loc="lower right", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    lo, hi = min(r.below_ridge_x for r in rows), max(r.below_ridge_x for r in rows)
    who = {1: "The case sits", 2: "Both cases sit"}.get(len(rows), f"All {len(rows)} cases sit")
    return fig, (f"{who} {lo:,.0f}–{hi:,.0f}x left of the ridge "
                 f"({ridge:.1f} FLOP/byte): throughput is set by bandwidth, not FP32.")


def plot_bw_efficiency(ctx: ReportContext, tables: Mapping[str, Table]):
    rows = list(tables["timing"].rows)
    if not rows:
        return "no case was timed"
    fig, ax = _figure()
    bars = ax.bar(range(len(rows)), [r.eff_bw_gb_s for r in rows], color=_colors(rows))
    for bar, r in zip(bars, rows, strict=True) if each_labelled(len(rows)) else ():
        ax.annotate(f"{r.pct_of_peak_bw:.1f}%", (bar.get_x() + bar.get_width() / 2,
                    bar.get_height()), ha="center", va="bottom", fontsize=8)
    ax.axhline(ctx.bw_gb_s, color="k", lw=1.5, label=f"peak {_bw(ctx.bw_gb_s)} GB/s")
    if ctx.measured_copy_gb_s:
        ax.axhline(ctx.measured_copy_gb_s, color="grey", ls="--",
                   label=f"measured copy {_bw(ctx.measured_copy_gb_s)} GB/s")
    if not ctx.on_cpu:
        ll = tables["littles_law"].rows[0]
        ax.axhline(ll.bw_ceiling_gb_s, color="tab:orange", ls="-.",
                   label=f"Little's-law ceiling {ll.bw_ceiling_pct:.1f}%")
        ax.axhline(ll.dep_chain_ceiling_gb_s, color="tab:red", ls=":",
                   label=f"dependent-chain ceiling {ll.dep_chain_ceiling_pct:.1f}%")
    _bar_labels(ax, [r.label for r in rows])
    ax.set_ylabel("Effective bandwidth (GB/s)")
    ax.set_title("Effective bandwidth" + _suffix(ctx))
    ax.legend(fontsize=8, loc="upper left")
    ax.set_ylim(0, ctx.bw_gb_s * 1.12)
    lo, hi = min(r.pct_of_peak_bw for r in rows), max(r.pct_of_peak_bw for r in rows)
    return fig, (f"Effective bandwidth per case: {lo:.1f}–{hi:.1f} % of the "
                 f"{_bw(ctx.bw_gb_s)} GB/s peak (bar labels).")


def plot_floor_vs_measured(ctx: ReportContext, tables: Mapping[str, Table]):
    import numpy as np

    rows = list(tables["floor"].rows)
    if not rows:
        return "no case was timed"
    fig, ax = _figure()
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r.floor_ms for r in rows], 0.4, color="tab:blue",
           label=f"physical floor at {_bw(ctx.bw_gb_s)} GB/s")
    bars = ax.bar(x + 0.2, [r.time_ms for r in rows], 0.4, color="tab:red", label="measured")
    for bar, r in zip(bars, rows, strict=True) if each_labelled(len(rows)) else ():
        ax.annotate(f"{r.gap_vs_floor_x:.1f}x", (bar.get_x() + bar.get_width() / 2,
                    bar.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set_yscale("log")
    _bar_labels(ax, [r.label for r in rows])
    ax.set_ylabel("Time (ms, log scale)")
    ax.set_title("Physical floor against measured time" + _suffix(ctx))
    ax.legend(fontsize=9)
    gaps = [r.gap_vs_floor_x for r in rows]
    return fig, (f"Measured time against bytes / peak bandwidth; the gap (bar labels) spans "
                 f"{min(gaps):.1f}–{max(gaps):.1f}x.")


def plot_nnz_vs_bw(ctx: ReportContext, tables: Mapping[str, Table]):
    rows = list(tables["timing"].rows)
    if not rows:
        return "no case was timed"
    fig, ax = _figure()
    colors = _colors(rows)
    for backend in dict.fromkeys(r.backend for r in rows):
        pick = [i for i, r in enumerate(rows) if r.backend == backend]
        ax.scatter([rows[i].nnz for i in pick], [rows[i].eff_bw_gb_s for i in pick],
                   color=colors[pick[0]], label=backend, zorder=3)
    for r in rows if each_labelled(len(rows)) else ():
        ax.annotate(r.matrix, (r.nnz, r.eff_bw_gb_s), textcoords="offset points",
                    xytext=(4, 4), fontsize=8)
    ax.axhline(ctx.bw_gb_s, color="k", lw=1.5, label=f"peak {_bw(ctx.bw_gb_s)} GB/s")
    ax.set_xscale("log")
    ax.set_ylim(0, ctx.bw_gb_s * 1.1)
    ax.set_xlabel("Nonzeros (log scale)")
    ax.set_ylabel("Effective bandwidth (GB/s)")
    ax.set_title("Nonzeros against effective bandwidth" + _suffix(ctx))
    ax.legend(fontsize=9, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    big = max(rows, key=lambda r: r.nnz)
    small = min(rows, key=lambda r: r.nnz)
    return fig, (f"Effective bandwidth against size: {_bw(small.eff_bw_gb_s)} GB/s at "
                 f"{small.nnz:,} nonzeros ({small.matrix}), {_bw(big.eff_bw_gb_s)} GB/s at "
                 f"{big.nnz:,} ({big.matrix}).")


def plot_gap_decomposition(ctx: ReportContext, tables: Mapping[str, Table]):
    import numpy as np

    rows = list(tables["gap"].rows)
    if not rows:
        return "no case was timed"
    fig, ax = _figure()
    x = np.arange(len(rows))
    parts = (("floor_ms", "physical floor", "tab:blue"),
             ("littles_law_deficit_ms", "Little's-law deficit", "tab:orange"),
             ("dep_chain_and_other_ms", "dependent chain + other", "tab:red"))
    bottom = np.zeros(len(rows))
    for key, label, color in parts:
        share = np.array([100 * getattr(r, key) / r.time_ms for r in rows])
        ax.bar(x, share, bottom=bottom, color=color, label=label)
        bottom += share
    for i, r in enumerate(rows if each_labelled(len(rows)) else ()):
        ax.annotate(f"{r.time_ms:.4f} ms", (i, 100), ha="center", va="bottom", fontsize=8)
    _bar_labels(ax, [r.label for r in rows])
    ax.set_ylim(0, 122)
    ax.set_ylabel("Share of measured time (%)")
    ax.set_title("Gap decomposition" + _suffix(ctx))
    ax.legend(fontsize=9, loc="upper center", ncol=3)
    floor = [100 * r.floor_ms / r.time_ms for r in rows]
    return fig, (f"Each measured time split into floor, Little's-law deficit and the rest; the "
                 f"floor is {min(floor):.0f}–{max(floor):.0f} % of it (total above each bar).")


def plot_latency_sensitivity(ctx: ReportContext, tables: Mapping[str, Table]):
    import numpy as np

    from sparsescope.model import dae_bw_prediction, littles_law

    g = ctx.gpu
    lat = np.linspace(100, 600, 101)
    lls = [littles_law(g.peak_bw_gb_s, float(t), g.sm_count, g.max_warps_per_sm) for t in lat]
    fig, (left, right) = _figure(PAIR, 2)
    left.plot(lat, [ll.bw_ceiling_pct for ll in lls], label="Little's-law ceiling")
    left.plot(lat, [ll.dep_chain_ceiling_pct for ll in lls], label="dependent-chain ceiling")
    left.plot(lat, [min(100.0, 100 * 2 * g.max_warps_per_sm / ll.warps_per_sm_required)
                    for ll in lls], label="DAE ceiling (FIFO depth 2)", ls="--")
    left.axvline(ctx.latency_ns, color="grey", ls=":", label=f"used: {ctx.latency_ns:,.0f} ns")
    best = ctx.best if ctx.gpu_is_run_device else None  # a CPU's % is no GPU's
    if best is not None:
        left.axhline(best.metrics.pct_peak, color="k", lw=1,
                     label=f"best case {best.label}: {best.metrics.pct_peak:.1f}%")
        right.plot(lat, [dae_bw_prediction(best.metrics.pct_peak, ll.bw_ceiling_pct).speedup
                         for ll in lls], color="tab:purple", label="BW-based, best case")
        right.axhline(1.0, color="grey", lw=1)
        right.axvline(ctx.latency_ns, color="grey", ls=":")
        right.legend(fontsize=9)
    else:
        right.text(0.5, 0.5, "no case timed on this GPU", ha="center", transform=right.transAxes)
    left.set_xlabel("DRAM latency (ns)")
    left.set_ylabel(f"% of {g.peak_bw_gb_s:,.0f} GB/s")
    left.set_ylim(0, 105)
    left.legend(fontsize=8)
    left.set_title("Bandwidth ceilings")
    right.set_xlabel("DRAM latency (ns)")
    right.set_ylabel("DAE speedup (x)")
    right.set_title("DAE speedup of the best case")
    fig.suptitle("DRAM latency sensitivity" + _warp_suffix(ctx))
    sens = tables["latency_sensitivity"].rows
    right_text = ("right: the BW-based DAE speedup of the best case" if best is not None
                  else "no case was timed on this GPU, so no DAE speedup")
    return fig, (f"Little's-law ceiling on {g.name} from {sens[0].bw_ceiling_pct:.1f} % at "
                 f"{sens[0].latency_ns:,.0f} ns to {sens[-1].bw_ceiling_pct:.1f} % at "
                 f"{sens[-1].latency_ns:,.0f} ns; {right_text}.")


def plot_dae_speedup(ctx: ReportContext, tables: Mapping[str, Table]):
    import numpy as np

    rows = list(tables["dae"].rows)
    if not rows:
        return "no case was timed"
    with_cpi = any(r.cpi_speedup_x is not None for r in rows)
    fig, ax = _figure()
    x = np.arange(len(rows))
    width = 0.4 if with_cpi else 0.6
    ax.bar(x - (0.2 if with_cpi else 0), [r.bw_speedup_x for r in rows], width,
           color="tab:purple", label="BW-based (Little's-law ceiling lift)")
    if with_cpi:
        ax.bar(x + 0.2, [r.cpi_speedup_x or 0.0 for r in rows], width, color="tab:red",
               label="CPI-based (Long Scoreboard removed)")
    ax.axhline(1.0, color="grey", lw=1)
    _bar_labels(ax, [r.label for r in rows])
    ax.set_ylabel("Predicted speedup (x)")
    ax.set_title("DAE speedup" + _warp_suffix(ctx))  # a GPU run's cases only
    # below 1 a case gains nothing: never labelled a speedup
    for i, r in enumerate(rows if each_labelled(len(rows)) else ()):
        ax.annotate(f"{r.bw_speedup_x:.2f}x" if r.bw_speedup_x >= 1 else "no gain",
                    (i - (0.2 if with_cpi else 0), r.bw_speedup_x), ha="center", va="bottom",
                    fontsize=8)
    ax.legend(fontsize=9)
    s = [r.bw_speedup_x for r in rows]
    gains = [v for v in s if v >= 1]
    cap = (f"BW-based DAE speedup {span(gains, '.2f')}x per case" if gains
           else "BW-based DAE: no gain on any case")
    if len(gains) < len(s):
        cap += (f", no gain on {len(s) - len(gains)} case(s) already above the Little's-law "
                f"ceiling")
    cap += "; CPI-based alongside where profiled." if with_cpi else " (no CPI data: not profiled)."
    return fig, cap


def plot_int32_vs_int64(ctx: ReportContext, tables: Mapping[str, Table]):
    import numpy as np

    rows = list(tables["index_width"].rows)
    if not rows:
        return "the run holds no matrix"
    fig, (left, right) = _figure(PAIR, 2)
    x = np.arange(len(rows))
    left.bar(x - 0.2, [r.int64_mb for r in rows], 0.4, color="tab:red", label="INT64")
    bars = left.bar(x + 0.2, [r.int32_mb for r in rows], 0.4, color="tab:green", label="INT32")
    for bar, r in zip(bars, rows, strict=True) if each_labelled(len(rows)) else ():
        left.annotate(f"-{r.waste_pct:.1f}%", (bar.get_x(), r.int64_mb), ha="center",
                      va="bottom", fontsize=8)
    left.set_yscale("log")
    left.set_ylabel("Bytes moved (MB, log scale)")
    left.set_title("Bytes per SpMV")
    right.bar(x - 0.2, [r.int64_ai_flop_per_byte for r in rows], 0.4, color="tab:red",
              label="INT64")
    right.bar(x + 0.2, [r.int32_ai_flop_per_byte for r in rows], 0.4, color="tab:green",
              label="INT32")
    right.set_ylabel("Arithmetic intensity (FLOP/byte)")
    right.set_title("Arithmetic intensity")
    for ax in (left, right):
        _bar_labels(ax, [r.matrix for r in rows])
        ax.legend(fontsize=9)
    fig.suptitle("INT32 against INT64 indices" + _suffix(ctx))
    w = [r.waste_pct for r in rows]
    ai = [r.int32_ai_flop_per_byte for r in rows]
    tail = ""
    if ctx.device.fp32_peak_gflops > 0:
        ridge = ctx.device.fp32_peak_gflops / ctx.bw_gb_s
        tail = f", still {ridge / max(ai):,.0f}x or more below the {ridge:.1f} FLOP/byte ridge"
    return fig, (f"Left: INT64 wastes {min(w):.1f}–{max(w):.1f} % of the bytes. Right: AI with "
                 f"INT32 is {min(ai):.3f}–{max(ai):.3f} FLOP/byte{tail}.")


def plot_seed_vs_ours(ctx: ReportContext, tables: Mapping[str, Table]):
    """Seed 000 section 3.1's torch.sparse.mm times beside this run's, per seed matrix."""
    import numpy as np

    table = tables.get("seed_comparison")
    if table is None or not table.rows:
        return "no torch-cusparse-i64 case on a matrix of seed 000 section 3.1"
    rows = list(table.rows)
    fig, ax = _figure()
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r.seed_time_ms for r in rows], 0.4, color="tab:grey",
           label="seed 000, section 3.1 (published)")
    bars = ax.bar(x + 0.2, [r.time_ms for r in rows], 0.4, color="tab:blue",
                  label=f"this run ({ctx.device_label})")
    for bar, r in zip(bars, rows, strict=True) if each_labelled(len(rows)) else ():
        ax.annotate(f"{r.ratio_x:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=8)
    _bar_labels(ax, [r.matrix + (" (analog)" if r.analog else "") for r in rows])
    ax.set_ylabel("Time (ms)")
    ax.set_title("torch.sparse.mm, INT64: seed against this run" + _suffix(ctx))
    ax.legend(fontsize=9, loc="upper left")
    ratios = [r.ratio_x for r in rows]
    return fig, (f"Published seed times (grey) against this run's (blue); ours / seed "
                 f"(bar labels): {span(ratios, '.2f')}x.")


def _png(fig) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    # No date or version in the metadata: the same run renders the same bytes.
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def render_figures(ctx: ReportContext, tables: Mapping[str, Table],
                   plots: Mapping[str, PlotFn], *, progress: bool = True,
                   workers: int | None = None) -> list[FigureResult]:
    """Each of ``plots`` (figure name -> plot function, in report order) as PNG bytes, or
    skipped with a reason; a tqdm bar on stderr. Drawn side by side in forked processes where
    the machine has cores for it (``workers``: None chooses, 1 draws in a row; see
    :mod:`sparsescope.report.figure_pool`), the same bytes either way.

    An exception in a plot function propagates: a half-made report is never written.
    """
    from sparsescope.report.figure_pool import draw_figures

    return draw_figures(ctx, tables, plots, png=_png, progress=progress, workers=workers)
