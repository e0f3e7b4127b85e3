"""The dense break-even (``report.break_even``) as the SpMM section shows it: its Markdown,
its figure, its JSON rows. The collection report's part is ``report.collection_break_even``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from sparsescope.report.break_even import (
    MATH_TITLES,
    BreakEvenRow,
    Crossing,
    break_even_rows,
    crossings,
    dense_without_sparse,
)
from sparsescope.report.ops_common import OpView, canvas, fmt_cell, md_table, save_png

FIGURE = "ops_spmm_break_even.png"

BASIS = ("Break-even = best sparse time / dense time at the same (matrix, k, layout): below 1 "
         "the sparse product pays, at or above 1 the dense GEMM (spmm-cublas-dense: cuBLAS on "
         "the matrix stored dense, zeros included, built once) is as fast or faster. Best "
         "sparse: the fastest float32-accurate sparse backend timed, ours or a library's. "
         "Density = nnz / (rows x cols). Crossing: least-squares line through log10(ratio) "
         "against log10(density) per (k, layout, math), density* = 10^(-a/b), from 3 matrices "
         "of distinct density or more; beside it, the bracket the points give.")


def summary_sentence(rows: Sequence[BreakEvenRow]) -> str:
    """How many groups the sparse product pays on, against each dense mode measured."""
    parts = []
    for mode in ("fp32", "tf32"):
        ratios = [q for r in rows if (q := r.ratio(mode)) is not None]
        if ratios:
            pays = sum(q < 1.0 for q in ratios)
            parts.append(f"sparse pays on {pays} of {len(ratios)} (matrix, k, layout) against "
                         f"dense {MATH_TITLES[mode]}")
    return ("; ".join(parts) + ".") if parts else ""


def row_cells(r: BreakEvenRow) -> list:
    return [r.matrix, r.k, r.layout, f"{r.density:.3g}", r.sparse_backend, r.sparse_ms,
            r.dense_fp32_ms, r.ratio("fp32"), r.dense_tf32_ms, r.ratio("tf32"), r.verdict()]


ROW_HEADERS = ["matrix", "k", "layout", "density", "best sparse", "sparse ms",
               "dense FP32 ms", "sparse / dense FP32", "dense TF32 ms", "sparse / dense TF32",
               "verdict"]


def crossing_cells(c: Crossing) -> list:
    return [c.k, c.layout, MATH_TITLES[c.math], c.matrices,
            fmt_cell(c.slope, ".2f"), fmt_cell(c.r2, ".2f"),
            fmt_cell(c.density, ".3g") + (" (extrapolated)" if c.extrapolated else ""),
            c.reading]


CROSSING_HEADERS = ["k", "layout", "math", "matrices", "slope", "R²", "crossing density",
                    "reading"]


def break_even_markdown(rows: Sequence[BreakEvenRow], found: Sequence[Crossing],
                        unpaired: int) -> str:
    """The section's text: basis, the per-matrix table, the crossings; ``unpaired``: groups
    with a dense case and no sparse one."""
    if not rows:
        return (f"A dense case was timed on {unpaired} (matrix, k, layout) without a "
                "float32 sparse case beside it: no break-even to give.")
    text = (f"{BASIS}\n\n{summary_sentence(rows)}\n\n" + md_table(ROW_HEADERS,
                                                                   [row_cells(r) for r in rows])
            + "\n\n**Where sparse stops paying** (per k, layout and math):\n\n"
            + md_table(CROSSING_HEADERS, [crossing_cells(c) for c in found]))
    if unpaired:
        text += (f"\n\n{unpaired} more (matrix, k, layout) had a dense case timed but no "
                 "float32 sparse case.")
    return text


def break_even_figure(rows: Sequence[BreakEvenRow], found: Sequence[Crossing]):
    """(figure, None), or (None, why not drawn): every ratio against its matrix's density
    (log-log), one colour per (k, layout), filled FP32 and hollow TF32, each fitted line and
    its crossing, the break-even line at 1."""
    if not rows:
        return None, "no (matrix, k, layout) has a sparse and a dense case timed"
    fig, (ax,) = canvas(7.5, 4.4)
    keys = sorted({(c.k, c.layout) for c in found})
    colours = {key: f"C{i % 10}" for i, key in enumerate(keys)}
    for c in found:
        key = (c.k, c.layout)
        pts = [(r.density, q) for r in rows if (r.k, r.layout) == key
               and (q := r.ratio(c.math)) is not None and r.density > 0]
        if not pts:
            continue
        colour = colours[key]
        style = ({"color": colour} if c.math == "fp32" else
                 {"facecolors": "none", "edgecolors": colour})
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=22,
                   label=f"k={c.k} {c.layout} {MATH_TITLES[c.math]}", **style)
        if c.slope is not None and c.intercept is not None:
            lo, hi = c.density_min, c.density_max
            if c.density is not None:
                lo, hi = min(lo, c.density), max(hi, min(c.density, 1.0))
            grid = [lo * (hi / lo) ** (i / 40) for i in range(41)]
            ax.plot(grid, [10 ** (c.intercept + c.slope * math.log10(d)) for d in grid],
                    "-" if c.math == "fp32" else "--", color=colour, linewidth=1)
        if c.density is not None and c.density <= 1.0:
            ax.plot([c.density], [1.0], marker="x", color=colour, markersize=9)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set(xscale="log", yscale="log", xlabel="density = nnz / (rows x cols)",
           ylabel="best sparse time / dense time",
           title="Dense break-even: below 1 sparse pays (x: fitted crossing)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return fig, None


def spmm_break_even(views: Sequence[OpView], fig_dir: Path | None
                    ) -> tuple[str, tuple[Path, ...], dict[str, list[dict]]]:
    """The SpMM section's break-even part from its timed cases: (Markdown, figures written,
    JSON tables); ("", (), {}) when no dense case was timed."""
    cases = [v.case for v in views]
    matrices = {v.case.matrix: v.matrix for v in views}
    rows = break_even_rows(cases, matrices)
    unpaired = dense_without_sparse(cases)
    if not rows and not unpaired:
        return "", (), {}
    found = crossings(rows)
    text = break_even_markdown(rows, found, unpaired)
    written: tuple[Path, ...] = ()
    if fig_dir is not None and rows:
        fig, _ = break_even_figure(rows, found)
        written = (save_png(fig, fig_dir / FIGURE),)
        text += (f"\n\n![SpMM: best sparse time over dense time against density]"
                 f"(figures/{FIGURE})")
    return text, written, {"ops_spmm_break_even": [r.to_json() for r in rows],
                           "ops_spmm_break_even_crossing": [c.to_json() for c in found]}
