"""Which byte model each table counts, named in the table, and why two tables differ.

Three byte models appear in an SpMV report:

* **own**: each case's own bytes (section 2.3 of the report): its format's declared traffic, or
  CSR at the case's index width with y written, plus y read where the backend computes
  ``y = alpha A x + beta y`` (cuSPARSE); the timing, floor and roofline tables use it;
* **CSR, y written** at INT64 and at INT32 (the two-byte-model table): the fewest bytes the
  matrix needs, so bandwidths compare backends by time alone;
* **CSR, y read + written** (seed 000, section 9.3) at both widths: the index-width table,
  per matrix, whatever the kernels did.

For one matrix the models differ by ``rows x value bytes`` (y read or not) and by the index
width: ``bytes(y read + written) - bytes(y written) = rows x value_bytes``. Each table's basis
names its model (:func:`own_model`, :func:`csr_model`) and, where another table shows the same
matrix under another model, the difference with an example (:func:`own_differs`).
"""

from __future__ import annotations

from sparsescope.report.context import CaseView, ReportContext
from sparsescope.report.table_types import MB


def _backends(views: list[CaseView]) -> str:
    return ", ".join(dict.fromkeys(v.case.backend for v in views))


def own_model(ctx: ReportContext) -> str:
    """``Byte model: each case's own bytes (section 2.3): y written (scipy-cpu).``"""
    written = [v for v in ctx.cases if not v.case.y_read]
    read = [v for v in ctx.cases if v.case.y_read]
    parts = []
    if written:
        parts.append(f"y written ({_backends(written)})")
    if read:
        parts.append(f"y read + written, as y = alpha A x + beta y reads it ({_backends(read)})")
    declared = [v for v in ctx.cases if v.model is not None and v.model.bytes_basis == "declared"
                and _declared_format(v)]
    text = "Byte model: each case's own bytes (Methodology, byte model)"
    if parts:
        text += ": CSR at the case's index width, " + "; ".join(parts)
    if declared:
        text += f"; own formats count their declared bytes ({_backends(declared)})"
    return text + "."


def _declared_format(view: CaseView) -> bool:
    """Whether the case's declared bytes are another format's than CSR's (its own count)."""
    csr = view.traffic.total_bytes if hasattr(view.traffic, "total_bytes") else None
    return csr is not None and view.metrics.bytes != csr


def csr_model(y_read: bool) -> str:
    """``CSR at INT64 and at INT32, y written only``."""
    return ("CSR at INT64 and at INT32, y read + written (seed 000, section 9.3)" if y_read
            else "CSR at INT64 and at INT32, y written only")


def own_differs(ctx: ReportContext, int32_mb_by_matrix: dict[str, float], *,
                y_read: bool) -> str:
    """Why the own-bytes tables count a different figure for the same matrix, with the first
    case whose own bytes differ from this table's INT32 figure, "" when none does."""
    for v in ctx.cases:
        here = int32_mb_by_matrix.get(v.case.matrix)
        if here is None or v.case.index_bytes != 4 or v.case.y_read == y_read:
            continue
        own = v.metrics.bytes / MB
        if abs(own - here) < 5e-4:
            continue
        what = ("writes y without reading it" if y_read else "reads y as well (beta y)")
        sign = "fewer" if y_read else "more"
        return (f" The timing, floor and roofline tables count each case's own bytes instead: "
                f"where a case {what} they count rows x {v.case.value_bytes} B {sign} -- "
                f"{v.label}: {own:,.3f} MB there, {here:,.3f} MB here (AI "
                f"{v.metrics.arithmetic_intensity:.3f} there).")
    return ""
