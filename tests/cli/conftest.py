"""Fixtures of the CLI tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def figures_not_drawn(monkeypatch):
    """Each figure "not drawn" (a reason, the report's own skip path): for tests about exit
    codes and outputs, where drawing the PNGs is most of a small run's time."""
    from sparsescope.report import spmv_layout

    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {
        name: (lambda ctx, tables: "not drawn in this test") for name in spmv_layout.FIGURE_FUNCS})
