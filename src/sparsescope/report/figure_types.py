"""What a report figure is, apart from how it is drawn: :class:`FigureResult` and the plot
function's signature. The document (:mod:`sparsescope.report.document`) lays figures out from
these records alone, so it never imports the plotting code (:mod:`sparsescope.report.figures`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sparsescope.report.context import ReportContext
from sparsescope.report.table_types import Table


@dataclass(frozen=True)
class FigureResult:
    """One rendered (or skipped) figure."""

    name: str
    title: str
    caption: str
    """One line under the figure in the report."""
    png: bytes | None
    """None when skipped."""
    skipped_reason: str = ""

    @property
    def path(self) -> str:
        """Path relative to the report folder."""
        return f"figures/{self.name}.png"


PlotFn = Callable[[ReportContext, Mapping[str, Table]], Any]
"""``(report context, tables by name) -> (matplotlib figure, caption)``, or a string saying
why there is nothing to draw."""
