"""Each matrix's fastest kernels against their formats' memory floors (SpMV).

The floor of a case is ``inputs['gather_floor_ms']`` of its prediction
(:func:`sparsescope.model.predict.format_floor`, formulas in :mod:`sparsescope.model.gathers`):
one launch, the DRAM and L2 latency chain, and the larger of the DRAM bytes at the DRAM bandwidth
and the L2 streams (with the fill of each SM's pinned columns) plus the fewest x sector requests
any of the floor's on-chip strategies needs, at the measured random-gather rate.
``% of floor = floor / time x 100``: how close a kernel came to what its format allows. A case
above 100 % beats its floor: the floor misses a reuse the kernel found (a model defect the
reading names), never a gap.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sparsescope.registry import is_own, is_sparse_library
from sparsescope.report.context import CaseView, ReportContext
from sparsescope.report.table_types import Column, Table

FLOOR_KEY = "gather_floor_ms"


@dataclass(frozen=True)
class MemoryFloorRow:
    matrix: str
    own_backend: str
    own_ms: float
    own_floor_ms: float | None
    own_pct_of_floor: float | None
    binding: str
    """``l2`` (streams and x requests through the L2) or ``dram``: the floor that binds."""
    x_requests_per_nnz: float | None
    hot_share_pct: float | None
    other_backend: str
    other_ms: float | None
    other_pct_of_floor: float | None


def case_floor_ms(view: CaseView) -> float | None:
    """The case's memory floor (ms), or None when its prediction has none."""
    p = view.case.prediction
    value = p.inputs.get(FLOOR_KEY) if p is not None else None
    return float(value) if value else None


def _label(view: CaseView) -> str:
    """The backend, and for a chooser (``cuda-spmv-auto``) the kernel it ran: the floor is that
    kernel's format's."""
    chosen = view.case.notes.get("selected", "")
    return f"{view.case.backend} ({chosen})" if chosen else view.case.backend


def _pct(floor: float | None, time_ms: float | None) -> float | None:
    return 100.0 * floor / time_ms if floor and time_ms else None


def _row(matrix: str, views: list[CaseView]) -> MemoryFloorRow | None:
    own = [v for v in views if is_own(v.case.backend) and case_floor_ms(v)]
    if not own:
        return None
    best = min(own, key=lambda v: v.case.time_ms)
    others = [v for v in views if is_sparse_library(v.case.backend)]
    other = min(others, key=lambda v: v.case.time_ms) if others else None
    inputs = best.case.prediction.inputs
    floor = case_floor_ms(best)
    nnz = best.matrix.stats.nnz
    l2, dram = inputs.get("gather_floor_l2_ms", 0.0), inputs.get("gather_floor_dram_ms", 0.0)
    requests = inputs.get("gather_floor_x_requests")
    hot = inputs.get("gather_floor_hot_share")
    return MemoryFloorRow(
        matrix, _label(best), best.case.time_ms, floor, _pct(floor, best.case.time_ms),
        "l2" if l2 >= dram else "dram",
        requests / nnz if requests is not None and nnz else None,
        100.0 * hot if hot is not None else None,
        other.case.backend if other else "",
        other.case.time_ms if other else None,
        _pct(case_floor_ms(other), other.case.time_ms) if other else None)


def memory_floor_table(ctx: ReportContext) -> Table | None:
    """Per matrix: the fastest own kernel with a floor, its % of that floor, and the fastest
    other backend against its own format's floor; None when no case has a floor."""
    by_matrix: dict[str, list[CaseView]] = {}
    for v in ctx.cases:
        by_matrix.setdefault(v.case.matrix, []).append(v)
    rows = tuple(r for r in (_row(m, vs) for m, vs in by_matrix.items()) if r is not None)
    if not rows:
        return None
    pcts = [r.own_pct_of_floor for r in rows if r.own_pct_of_floor is not None]
    lowest = min(rows, key=lambda r: r.own_pct_of_floor or 0.0)
    beaten = [r.matrix for r in rows if (r.own_pct_of_floor or 0.0) > 100.0]
    reading = (f"The fastest own kernel reaches {statistics.median(pcts):.0f} % of its format's "
               f"memory floor (median of {len(pcts)} matrices); lowest {lowest.matrix} at "
               f"{lowest.own_pct_of_floor:.0f} % ({lowest.binding} floor).")
    if beaten:
        reading += (f" Above 100 % (the floor misses a reuse the kernel found: a model defect): "
                    f"{', '.join(beaten)}.")
    return Table("memory_floor", "Fastest kernels against their formats' memory floors", (
        Column("matrix", "Matrix"), Column("own_backend", "Best own"),
        Column("own_ms", "Own", ".4f"), Column("own_floor_ms", "Its floor", ".4f"),
        Column("own_pct_of_floor", "% of floor", ".1f"), Column("binding", "Floor bound by"),
        Column("x_requests_per_nnz", "x requests / nnz", ".3f"),
        Column("hot_share_pct", "Gathers on chip %", ".1f"),
        Column("other_backend", "Best other"), Column("other_ms", "Other", ".4f"),
        Column("other_pct_of_floor", "Other % of its floor", ".1f")), rows, reading,
        basis="floor = one launch + DRAM and L2 latency + max(DRAM bytes / DRAM bandwidth, (L2 "
              "streams + fill of each SM's pinned columns) / L2 bandwidth + fewest x sector "
              "requests / measured random-gather rate) (model.gathers; an SM pins only the "
              "columns whose gathers outweigh their fill); % of floor = floor / time x 100.")
