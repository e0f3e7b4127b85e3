"""The collection report's figures, drawn in memory as PNG bytes (Agg, as ``ops_common``).

Each function returns ``(png bytes, None)`` or ``(None, why not drawn)``; cheap at any size
(one line per backend, one point per matrix).
"""

from __future__ import annotations

import io

from sparsescope.report.collection_data import Collection
from sparsescope.report.ops_common import canvas


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def _plain_log(axis) -> None:
    """Log scale with plain tick labels at 1, 2 and 5 times a power of ten (``0.5``, ``2``)."""
    import math

    from matplotlib.ticker import FuncFormatter

    def minor(v, _):
        mantissa = round(v / 10 ** math.floor(math.log10(v)), 6) if v > 0 else 0
        return f"{v:g}" if mantissa in (2.0, 5.0) else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(minor))


def speedup_cdf(col: Collection) -> tuple[bytes | None, str | None]:
    """One step CDF per backend of its speedup over the best library backend (log x)."""
    series = []
    for b in col.backends:
        values = sorted(s for r in col.rows if (s := r.backend_speedup(b)) is not None)
        if values:
            series.append((b, values))
    if not series:
        return None, "no matrix has both a library and an own backend timed"
    fig, (ax,) = canvas(7.5, 4.2)
    for b, values in series:
        n = len(values)
        style = "-" if b in col.summary["own_backends"] else "--"
        ax.step(values, [(i + 1) / n for i in range(n)], style, where="post",
                label=f"{b} (n={n})", linewidth=1.4)
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    ax.set_xlabel("speedup over the best library backend (x, log scale)")
    ax.set_ylabel("fraction of matrices at or below")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig), None


def speedup_vs_nnz_row(col: Collection) -> tuple[bytes | None, str | None]:
    """Our best kernel's speedup over the best library against mean nnz/row, by kind."""
    points = [r for r in col.rows if r.speedup_x is not None and r.nnz_per_row_mean > 0]
    if not points:
        return None, "no matrix has both a library and an own backend timed"
    fig, (ax,) = canvas(7.5, 4.2)
    for kind in sorted({r.kind for r in points}):
        mine = [r for r in points if r.kind == kind]
        ax.scatter([r.nnz_per_row_mean for r in mine], [r.speedup_x for r in mine],
                   s=10 if len(points) > 300 else 18, alpha=0.7, label=kind or "(none)",
                   linewidths=0, rasterized=True)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    ax.set_xlabel("mean nonzeros per row (log scale)")
    ax.set_ylabel("best own / best library speedup (x, log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, title="kind", title_fontsize=8)
    return _png(fig), None


#: Figure file stem -> (function, title, caption).
FIGURES = {
    "collection_speedup_cdf": (
        speedup_cdf, "Speedup over the best library backend, per backend",
        "Cumulative distribution over matrices of each backend's time against the fastest "
        "library backend of the same matrix (right of 1 = faster than the library; dashed: "
        "library backends)."),
    "collection_speedup_vs_nnz_row": (
        speedup_vs_nnz_row, "Best own speedup against mean nnz/row",
        "One point per matrix: our fastest kernel's speedup over the fastest library "
        "backend against the matrix's mean nonzeros per row, coloured by kind."),
}


def draw_all(col: Collection) -> dict[str, tuple[bytes | None, str | None]]:
    """Figure stem -> (PNG bytes or None, why not drawn or None)."""
    return {name: func(col) for name, (func, _, _) in FIGURES.items()}
