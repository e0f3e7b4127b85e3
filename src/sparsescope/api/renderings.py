"""Markdown renderings of records the API returns, each renderer (:mod:`sparsescope.report`)
imported only when called, so ``import sparsescope.api`` loads no report module.

- :func:`sass_markdown`: a kernel's SASS analysis (:func:`~sparsescope.api.sass_analysis`'s
  ``KernelSass.analysis``), with its occupancy when known.
"""

from __future__ import annotations


def sass_markdown(analysis, *, occupancy=None, level: int = 2,
                  occupancy_reason: str = "") -> str:
    """A Markdown section per kernel (a ``sass.analysis.KernelAnalysis`` or several):
    resources, instruction mix, control flow, load chains, stalls; ``occupancy`` (a
    ``sass.occupancy.Occupancy``) adds the occupancy table, ``occupancy_reason`` says why
    there is none (``sass.occupancy.missing_occupancy_reason``)."""
    from sparsescope.report.sass_render import render_markdown

    return render_markdown(analysis, occupancy=occupancy, level=level,
                           occupancy_reason=occupancy_reason)
