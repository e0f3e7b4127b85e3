"""The collection report's predicted-against-measured part: every timed case's prediction
(made before it was timed) against its measurement, summarised per backend -- one figure and
one small table, so it stays readable at 2,000 matrices (the per-case numbers are in the JSON
table and in ``sparsescope results show --json``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from sparsescope.report.collection_figures import _png
from sparsescope.report.collection_render import Cell, Heading, Picture, grid, num, text
from sparsescope.report.prediction_tables import (
    draw_predictions,
    percentile,
    prediction_rows,
    reading,
)
from sparsescope.results.records import RunSet

FIGURE = "collection_predicted_vs_measured"


def backend_errors(rows) -> list[dict]:
    """Per backend: cases modelled, median and 90th-percentile |error|, median signed error
    (positive: slower than predicted), ordered by median |error|."""
    errors: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.error_pct is not None:
            errors[r.backend].append(r.error_pct)
    out = [{"backend": b, "modelled": len(e),
            "median_abs_error_pct": percentile([abs(v) for v in e], 50),
            "p90_abs_error_pct": percentile([abs(v) for v in e], 90),
            "median_signed_error_pct": statistics.median(e)} for b, e in errors.items()]
    return sorted(out, key=lambda r: r["median_abs_error_pct"])


def prediction_part(runset: RunSet) -> tuple[list, tuple[bytes | None, str | None], dict]:
    """(blocks for the main page, (PNG or None, why not drawn), the JSON table)."""
    rows = prediction_rows(runset)
    drawn = draw_predictions(rows, "Predicted against measured, every timed case")
    png, why = (_png(drawn[0]), None) if isinstance(drawn, tuple) else (None, drawn)
    caption = drawn[1] if isinstance(drawn, tuple) else why
    per_backend = backend_errors(rows)
    table = grid(["Backend", "Modelled", "Median |error| %", "p90 |error| %",
                  "Median signed error %"], [False, True, True, True, True],
                 [[Cell(r["backend"]), num(r["modelled"], "d"),
                   num(r["median_abs_error_pct"], ".1f"), num(r["p90_abs_error_pct"], ".1f"),
                   num(r["median_signed_error_pct"], "+.1f")] for r in per_backend])
    blocks = [Heading("Predicted against measured"),
              text(" ".join(reading(rows)) + " Error = (measured - "
                   "predicted) / measured x 100; the prediction is made before the case is "
                   "timed (each matrix's page and results.json hold every case's terms)."),
              table, Picture(f"figures/{FIGURE}.png", "Predicted against measured time",
                             caption or "", png, why)]
    data = {"name": "collection_predictions", "per_backend": per_backend,
            "cases": [{"matrix": r.matrix, "backend": r.backend, "params": r.params,
                       "measured_ms": r.time_ms, "predicted_ms": r.predicted_ms,
                       "error_pct": r.error_pct, "limiter": r.limiter or None,
                       "not_modelled": r.not_modelled or None} for r in rows]}
    return blocks, (png, why), data
