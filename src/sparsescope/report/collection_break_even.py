"""The collection report's dense break-even (``report.break_even``): per matrix and (k,
layout), the best sparse time over the dense GEMM's, its verdict, and across the matrices the
density where sparse stops paying -- a sortable table, the crossings, one figure, one JSON
table. Nothing when the sweep timed no dense case.
"""

from __future__ import annotations

from sparsescope.report.break_even import (
    MATH_TITLES,
    break_even_rows,
    crossings,
    dense_without_sparse,
)
from sparsescope.report.break_even_render import BASIS, break_even_figure, summary_sentence
from sparsescope.report.collection_figures import _png
from sparsescope.report.collection_render import Cell, Heading, Picture, grid, num, text
from sparsescope.results.records import RunSet

FIGURE = "collection_break_even"
TITLE = "Best sparse time over dense time against density"


def break_even_part(runset: RunSet, pages: dict[str, str] | None = None
                    ) -> tuple[list, tuple[bytes | None, str | None] | None, dict | None]:
    """(blocks for the main page, (PNG or None, why not drawn), the JSON table); ([], None,
    None) when no dense case was timed. ``pages``: matrix -> page stem, to link each row."""
    matrices = {m.name: m for m in runset.matrices}
    rows = break_even_rows(runset.cases, matrices)
    unpaired = dense_without_sparse(runset.cases)
    if not rows and not unpaired:
        return [], None, None
    heading = Heading("Dense break-even")
    if not rows:
        return ([heading, text(f"A dense case was timed on {unpaired} (matrix, k, layout) "
                               "without a float32 sparse case beside it: no break-even.")],
                (None, "no (matrix, k, layout) has a sparse and a dense case timed"),
                {"name": FIGURE, "rows": [], "crossings": []})
    found = crossings(rows)
    fig, why = break_even_figure(rows, found)
    png = _png(fig) if fig is not None else None

    def matrix_cell(name: str) -> Cell:
        stem = (pages or {}).get(name)
        return (Cell(name, md_href=f"matrices/{stem}.md", html_href=f"matrices/{stem}.html")
                if stem else Cell(name))

    table = grid(["Matrix", "k", "Layout", "Density", "Best sparse", "Sparse ms",
                  "Dense FP32 ms", "Sparse / dense FP32", "Dense TF32 ms",
                  "Sparse / dense TF32", "Verdict"],
                 [False, True, False, True, False, True, True, True, True, True, False],
                 [[matrix_cell(r.matrix), num(r.k, "d"), Cell(r.layout), num(r.density, ".3g"),
                   Cell(r.sparse_backend), num(r.sparse_ms), num(r.dense_fp32_ms),
                   num(r.ratio("fp32"), ".3f"), num(r.dense_tf32_ms),
                   num(r.ratio("tf32"), ".3f"), Cell(r.verdict())] for r in rows],
                 sortable=True, ident="break-even")
    fits = grid(["k", "Layout", "Math", "Matrices", "Slope", "R²", "Crossing density",
                 "Reading"], [True, False, False, True, True, True, True, False],
                [[num(c.k, "d"), Cell(c.layout), Cell(MATH_TITLES[c.math]),
                  num(c.matrices, "d"), num(c.slope, ".2f"), num(c.r2, ".2f"),
                  num(c.density, ".3g", " (extrapolated)" if c.extrapolated else ""),
                  Cell(c.reading)] for c in found])
    tail = (f" {unpaired} more (matrix, k, layout) had a dense case and no float32 sparse one."
            if unpaired else "")
    blocks = [heading, text(BASIS), text(summary_sentence(rows) + tail), table,
              Heading("Where sparse stops paying", 3), fits,
              Picture(f"figures/{FIGURE}.png", TITLE,
                      "Each point a matrix; filled FP32, hollow TF32; lines: the log-log fits, "
                      "x: their crossing of 1.", png, why)]
    data = {"name": FIGURE, "rows": [r.to_json() for r in rows],
            "crossings": [c.to_json() for c in found]}
    return blocks, (png, why), data
