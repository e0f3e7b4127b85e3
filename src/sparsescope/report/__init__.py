"""report stage: tables, figures, Markdown and self-contained HTML from a RunSet.

``write_report(runset, out_dir)`` is the entry point; ``build_tables(runset)`` gives the typed
tables alone. Matplotlib is imported only when figures are drawn.
"""

from sparsescope.report.tables import build_tables
from sparsescope.report.write import ReportPaths, write_report

__all__ = ["ReportPaths", "build_tables", "write_report"]
