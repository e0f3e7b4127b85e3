"""Issue 36: the prediction reading and figure per family (our kernels; the libraries), on a
committed H200 run, so one family's error never hides behind the other's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparsescope.report.prediction_tables import (
    draw_predictions,
    family_lines,
    prediction_rows,
    reading,
)
from sparsescope.results.io import read_runset

RUN = Path(__file__).resolve().parents[2] / "results/h200/model/results.json.xz"


def _rows():
    return list(prediction_rows(read_runset(RUN)))


def test_each_family_has_its_own_median_and_p90():
    rows = _rows()
    ours = [abs(r.error_pct) for r in rows if r.own and r.error_pct is not None]
    libs = [abs(r.error_pct) for r in rows if not r.own and r.error_pct is not None]
    assert ours and libs
    lines = family_lines(rows)
    assert lines == [
        f"Our kernels: {len(ours)} modelled, median |error| {np.percentile(ours, 50):.1f} %, "
        f"90th percentile {np.percentile(ours, 90):.1f} %.",
        f"Libraries: {len(libs)} modelled, median |error| {np.percentile(libs, 50):.1f} %, "
        f"90th percentile {np.percentile(libs, 90):.1f} %."]
    assert reading(rows)[-2:] == lines


def test_one_family_alone_adds_no_family_line():
    rows = [r for r in _rows() if r.own]
    assert family_lines(rows) == []


def test_the_figure_has_one_panel_per_family_titled_with_its_errors():
    fig, caption = draw_predictions(_rows(), "Predicted against measured")
    titles = [ax.get_title() for ax in fig.axes]
    assert len(titles) == 2
    assert titles[0].splitlines()[1].startswith("our kernels: median |error| ")
    assert titles[1].splitlines()[1].startswith("libraries: median |error| ")
    assert "inside the ±25 % band" in caption
    only_ours, _ = draw_predictions([r for r in _rows() if r.own], "t")
    assert len(only_ours.axes) == 1
