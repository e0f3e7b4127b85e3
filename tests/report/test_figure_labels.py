"""A figure names and values each bar up to ``LABELLED_BARS`` cases; a larger run's figures
name every k-th bar and leave the values to the caption (the labels of 924 cases were most of
a report's time and one unreadable band)."""

from __future__ import annotations

import dataclasses

from report_builders import make_gpu_runset

from sparsescope.report import build_tables
from sparsescope.report.context import build_context
from sparsescope.report.figures import (
    LABELLED_BARS,
    each_labelled,
    plot_bw_efficiency,
    plot_gap_decomposition,
)


def _runset(copies: int):
    """The six seed analogs, each ``copies`` times under names of its own."""
    rs = make_gpu_runset()
    matrices, cases = [], []
    for k in range(copies):
        for m, c in zip(rs.matrices, rs.cases, strict=True):
            matrices.append(dataclasses.replace(m, name=f"{m.name}-{k}"))
            cases.append(dataclasses.replace(c, matrix=f"{m.name}-{k}"))
    return dataclasses.replace(rs, matrices=tuple(matrices), cases=tuple(cases))


def _drawn(plot, copies: int):
    rs = _runset(copies)
    ctx = build_context(rs)
    tables = {t.name: t for t in build_tables(rs, ctx=ctx)}
    fig, caption = plot(ctx, tables)
    ax = fig.axes[0]
    names = [t.get_text() for t in ax.get_xticklabels()]
    return len(ax.texts), names, caption


def test_each_bar_is_named_and_valued_up_to_the_limit():
    assert each_labelled(LABELLED_BARS) and not each_labelled(LABELLED_BARS + 1)
    values, names, _ = _drawn(plot_bw_efficiency, 4)                  # 24 bars
    assert values == 24 and len(names) == 24 and names[0].startswith("webbase-1M-0")


def test_a_large_run_names_every_kth_bar_and_values_none():
    copies = 160                                                        # 960 bars
    values, names, caption = _drawn(plot_bw_efficiency, copies)
    step = -(-6 * copies // LABELLED_BARS)
    assert (LABELLED_BARS, step) == (24, 40) and len(names) == 24 and values == 0
    assert names[1].startswith("circuit5M-6")    # bar 40: copy 6 (bars 36-41), its 5th matrix
    assert "% of the" in caption                 # the values' range is still in the caption
    values, names, _ = _drawn(plot_gap_decomposition, copies)
    assert values == 0 and len(names) == 24
