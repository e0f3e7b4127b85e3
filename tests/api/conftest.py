"""Fixtures of the API tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def figures_stubbed(monkeypatch):
    """Each figure "not drawn" (the report's own skip path): drawing PNGs would be most of a
    small run's time, and these tests are about what the run records."""
    from sparsescope.report import spmv_layout

    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {
        name: (lambda ctx, tables: "not drawn in this test") for name in spmv_layout.FIGURE_FUNCS})
