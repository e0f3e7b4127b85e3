"""PNG figures of the profile section: stall bars across kernels, a per-kernel stall pie, and the
hierarchical instruction roofline. matplotlib (Agg, no display) is imported inside each function;
figures are drawn on a bare ``Figure`` (no pyplot global state) and written atomically.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

from sparsescope._atomic import write_bytes_atomic
from sparsescope.profile.analysis import StallComparison, StallRow
from sparsescope.profile.instruction_roofline import (
    BANK_CONFLICT_WALLS,
    WALLS,
    InstructionCeilings,
    InstructionRooflinePoint,
)

#: Stall reasons beyond this many (by size) are drawn as one "Other" segment.
TOP_REASONS = 7


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: str | Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return write_bytes_atomic(path, buffer.getvalue())


def _colors(n: int) -> list:
    from matplotlib import colormaps

    name, size = ("tab10", 10) if n <= 10 else ("tab20", 20)
    cmap = colormaps[name]
    return [cmap(i % size) for i in range(n)]


def stall_bars(comparison: StallComparison, path: str | Path, *, top: int = TOP_REASONS) -> Path:
    """Stacked bars, one per kernel: warp cycles per issued instruction split by stall reason
    (seed 000 Figure 4). The ``top`` largest reasons get their own colour, the rest "Other"."""
    if not comparison.kernels or not comparison.rows:
        raise ValueError("no stall data to draw")
    shown, rest = comparison.rows[:top], comparison.rows[top:]
    series = [(row.label, [c or 0.0 for c in row.cycles_per_inst]) for row in shown]
    if rest:
        other = [sum(row.cycles_per_inst[k] or 0.0 for row in rest)
                 for k in range(len(comparison.kernels))]
        series.append(("Other", other))
    fig = _figure(max(5.0, 1.2 * len(comparison.kernels) + 3.0), 4.5)
    ax = fig.add_subplot(1, 1, 1)
    bottoms = [0.0] * len(comparison.kernels)
    x = list(range(len(comparison.kernels)))
    for (label, values), color in zip(series, _colors(len(series)), strict=True):
        ax.bar(x, values, bottom=bottoms, label=label, color=color, width=0.6)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    for k, cpi in enumerate(comparison.cpi):
        if cpi is not None:
            ax.plot([k - 0.35, k + 0.35], [cpi, cpi], color="black", linewidth=1.2)
            ax.annotate(f"CPI {cpi:.1f}", (k, cpi), textcoords="offset points", xytext=(0, 4),
                        ha="center", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels(comparison.kernels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("warp cycles per issued instruction")
    ax.set_title("Warp stall breakdown")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, path)


def stall_pie(rows: Sequence[StallRow], path: str | Path, *, title: str = "",
              top: int = TOP_REASONS) -> Path:
    """Share of each stall reason in one kernel's CPI (seed 000 Figure 3)."""
    ordered = sorted((r for r in rows if r.cycles_per_inst > 0), key=lambda r: -r.cycles_per_inst)
    if not ordered:
        raise ValueError("no stall cycles to draw")
    slices = [(r.label, r.cycles_per_inst) for r in ordered[:top]]
    if len(ordered) > top:
        slices.append(("Other", sum(r.cycles_per_inst for r in ordered[top:])))
    fig = _figure(6.0, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    ax.pie([v for _, v in slices], labels=[lab for lab, _ in slices], autopct="%1.1f%%",
           colors=_colors(len(slices)), textprops={"fontsize": 8}, startangle=90)
    ax.set_title(title or "Warp stall reasons (share of CPI)")
    ax.axis("equal")
    return _save(fig, path)


def _log_range(values: list[float], pad: float = 3.0) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    return 10 ** math.floor(math.log10(lo / pad)), 10 ** math.ceil(math.log10(hi * pad))


def instruction_roofline_figure(points: Sequence[InstructionRooflinePoint],
                                ceilings: InstructionCeilings, path: str | Path) -> Path:
    """Hierarchical instruction roofline (Ding & Williams; seed 004): per kernel a filled circle
    (L1), triangle (L2) and square (DRAM) at the warp GIPS, an open circle for global ld/st
    instructions against their L1 sectors, a dashed tick at the thread-level (predicated-on)
    GIPS; ceilings as lines, each labelled measured / spec / ncu peak, access-pattern walls as
    dotted verticals."""
    if not points:
        raise ValueError("no instruction-roofline points to draw")
    xs = [v for p in points for v in (p.l1_intensity, p.l2_intensity, p.dram_intensity,
                                      p.global_intensity) if v]
    xs += list(WALLS.values())
    x_lo, x_hi = _log_range(xs)
    ys = [p.warp_gips for p in points] + [p.global_gips for p in points if p.global_gips]
    ys += [p.predicated_on_gips for p in points if p.predicated_on_gips]
    if ceilings.peak_warp_gips:
        ys.append(ceilings.peak_warp_gips)
    y_lo, y_hi = _log_range(ys)
    fig = _figure(7.5, 5.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    steps = 200
    grid = [x_lo * (x_hi / x_lo) ** (i / steps) for i in range(steps + 1)]
    peak = ceilings.peak_warp_gips or float("inf")
    for name, bw, style in (("L1", ceilings.l1_gtxn_s, "-"), ("L2", ceilings.l2_gtxn_s, "--"),
                            ("DRAM", ceilings.dram_gtxn_s, "-.")):
        if bw:
            ax.plot(grid, [min(peak, x * bw) for x in grid], style, color="gray", linewidth=1.2,
                    label=f"{name} {bw:.0f} GTXN/s{_kind(ceilings, name.lower())}")
    if ceilings.peak_warp_gips:
        ax.axhline(ceilings.peak_warp_gips, color="black", linewidth=1.4,
                   label=f"peak {ceilings.peak_warp_gips:.0f} warp GIPS"
                         f"{_kind(ceilings, 'peak_warp_gips')}")
    for name, value in WALLS.items():
        ax.axvline(value, color="silver", linestyle=":", linewidth=1.0)
        ax.text(value, y_hi / 1.6, name, rotation=90, fontsize=7, color="gray", va="top")
    for p, color in zip(points, _colors(len(points)), strict=True):
        for value, marker in ((p.l1_intensity, "o"), (p.l2_intensity, "^"),
                              (p.dram_intensity, "s")):
            if value:
                ax.plot(value, p.warp_gips, marker, color=color, markersize=7)
        if p.global_intensity and p.global_gips:
            ax.plot(p.global_intensity, p.global_gips, "o", markerfacecolor="none",
                    markeredgecolor=color, markersize=7)
        if p.predicated_on_gips and p.l1_intensity:
            ax.plot([p.l1_intensity / 1.5, p.l1_intensity * 1.5],
                    [p.predicated_on_gips] * 2, "--", color=color, linewidth=1.0)
        ax.plot([], [], "o", color=color, label=p.kernel)
    ax.plot([], [], "o", color="gray", label="L1")
    ax.plot([], [], "^", color="gray", label="L2")
    ax.plot([], [], "s", color="gray", label="DRAM")
    ax.plot([], [], "o", markerfacecolor="none", markeredgecolor="gray", label="global ld/st")
    ax.plot([], [], "--", color="gray", label="thread-level (pred. on)")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("instruction intensity (warp instructions per 32 B transaction)")
    ax.set_ylabel("performance (warp GIPS)")
    ax.set_title("Hierarchical instruction roofline")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, path)



def _kind(ceilings: InstructionCeilings, key: str) -> str:
    kind = ceilings.kinds.get(key)
    return f" ({kind})" if kind else ""


def shared_roofline_figure(points: Sequence[InstructionRooflinePoint],
                           ceilings: InstructionCeilings, path: str | Path) -> Path:
    """Shared-memory instruction roofline (Ding & Williams): shared ld/st warp instructions per
    wavefront against their GIPS, the wavefront ceiling, and the bank-conflict walls."""
    shown = [p for p in points if p.shared_intensity and p.shared_gips]
    if not shown:
        raise ValueError("no kernel with shared-memory instructions to draw")
    x_lo, x_hi = _log_range([p.shared_intensity for p in shown]  # type: ignore[misc]
                            + list(BANK_CONFLICT_WALLS.values()), pad=2.0)
    ys = [p.shared_gips for p in shown]
    bw = ceilings.shared_gtxn_s
    if bw:
        ys.append(bw)
    y_lo, y_hi = _log_range(ys)  # type: ignore[arg-type]
    fig = _figure(7.0, 4.6)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    if bw:
        grid = [x_lo * (x_hi / x_lo) ** (i / 100) for i in range(101)]
        ax.plot(grid, [x * bw for x in grid], "-", color="gray", linewidth=1.2,
                label=f"shared {bw:.0f} G wavefronts/s{_kind(ceilings, 'shared')}")
    for name, value in BANK_CONFLICT_WALLS.items():
        ax.axvline(value, color="silver", linestyle=":", linewidth=1.0)
        ax.text(value, y_hi / 1.6, name, rotation=90, fontsize=7, color="gray", va="top")
    for p, color in zip(shown, _colors(len(shown)), strict=True):
        ax.plot(p.shared_intensity, p.shared_gips, "D", color=color, markersize=7, label=p.kernel)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("shared ld/st warp instructions per wavefront")
    ax.set_ylabel("shared ld/st warp GIPS")
    ax.set_title("Shared-memory instruction roofline (bank-conflict walls)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, path)


def classic_roofline_figure(points, ceilings, path: str | Path) -> Path:
    """Hierarchical FLOP/byte roofline: per kernel a circle (L1), triangle (L2) and square (DRAM)
    at its GFLOP/s; the L1, L2 and DRAM bandwidth lines and the FLOP peak of the kernels'
    precision, each labelled with its kind. ``ceilings``: a RooflineCeilings."""
    if not points:
        raise ValueError("no classic-roofline points to draw")
    precision = points[0].precision
    peak = ceilings.fp64_gflops if precision == "fp64" else ceilings.fp32_gflops
    xs = [v for p in points for v in (p.l1_ai, p.l2_ai, p.dram_ai) if v]
    x_lo, x_hi = _log_range(xs + [1.0])
    ys = [p.gflops for p in points] + ([peak.value] if peak else [])
    y_lo, y_hi = _log_range(ys)
    fig = _figure(7.5, 5.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    grid = [x_lo * (x_hi / x_lo) ** (i / 200) for i in range(201)]
    top = peak.value if peak else float("inf")
    for name, c, style in (("L1", ceilings.l1_gb_s, "-"), ("L2", ceilings.l2_gb_s, "--"),
                           ("DRAM", ceilings.dram_gb_s, "-.")):
        if c is not None:
            ax.plot(grid, [min(top, x * c.value) for x in grid], style, color="gray",
                    linewidth=1.2, label=f"{name} {c.value:,.0f} GB/s ({c.kind})")
    if peak is not None:
        ax.axhline(peak.value, color="black", linewidth=1.4,
                   label=f"{precision.upper()} peak {peak.value:,.0f} GFLOP/s ({peak.kind})")
    for p, color in zip(points, _colors(len(points)), strict=True):
        for value, marker in ((p.l1_ai, "o"), (p.l2_ai, "^"), (p.dram_ai, "s")):
            if value:
                ax.plot(value, p.gflops, marker, color=color, markersize=7)
        ax.plot([], [], "o", color=color, label=p.kernel)
    ax.plot([], [], "o", color="gray", label="L1")
    ax.plot([], [], "^", color="gray", label="L2")
    ax.plot([], [], "s", color="gray", label="DRAM")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("arithmetic intensity (FLOP per byte)")
    ax.set_ylabel(f"performance ({precision.upper()} GFLOP/s)")
    ax.set_title("Hierarchical roofline (FLOP/byte)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, path)
