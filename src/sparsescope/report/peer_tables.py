"""Our own kernels against the best of the other backends, per matrix (SpMV).

A backend is ours when its registry name (a kernel variant's label before ``[``) is in
``registry.OWN_BACKENDS``. Bandwidth here is the INT32-CSR-equivalent one: INT32 CSR's bytes
over the measured time, the same bytes for every format, so formats compare by time alone;
the bytes each format itself moves are in the case's declared ``traffic``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparsescope.registry import is_own, is_sparse_library
from sparsescope.report.collection_data import backend_label
from sparsescope.report.context import CaseView, ReportContext
from sparsescope.report.table_types import Column, Table


@dataclass(frozen=True)
class PeerRow:
    matrix: str
    own_backend: str
    own_ms: float
    own_format_bytes: int | None
    """Bytes the best own kernel's format declares (None when it declared none)."""
    csr_equiv_gb_s: float
    """INT32 CSR's bytes / own time (GB/s): a comparison by time, not a bandwidth reached."""
    best_peer: str
    peer_ms: float
    speedup_x: float
    auto_ms: float | None
    auto_choice: str


def _rows(ctx: ReportContext) -> list[PeerRow]:
    by_matrix: dict[str, list[CaseView]] = {}
    for v in ctx.cases:
        by_matrix.setdefault(v.case.matrix, []).append(v)
    rows = []
    for matrix, views in by_matrix.items():
        own = [v for v in views if is_own(v.case.backend)]
        peers = [v for v in views if is_sparse_library(v.case.backend)]
        if not own or not peers:
            continue
        best, peer = (min(group, key=lambda v: v.case.time_ms) for group in (own, peers))
        auto = next((v for v in views if v.case.backend == "cuda-spmv-auto"), None)
        st = best.matrix.stats
        csr_bytes = 8 * st.nnz + 4 * (st.rows + 1) + 4 * (st.rows + st.cols)
        rows.append(PeerRow(
            matrix, best.case.backend, best.case.time_ms,
            best.case.traffic.total_bytes if best.case.traffic else None,
            csr_bytes / (best.case.time_ms * 1e-3) / 1e9, backend_label(peer.case),
            peer.case.time_ms,
            peer.case.time_ms / best.case.time_ms,
            auto.case.time_ms if auto else None,
            auto.case.notes.get("selected", "") if auto else ""))
    return rows


def own_vs_peer_table(ctx: ReportContext) -> Table | None:
    """Per matrix: the fastest own kernel, the fastest other backend, the speedup and what
    ``cuda-spmv-auto`` chose; None when no matrix has both."""
    rows = _rows(ctx)
    if not rows:
        return None
    geomean = math.exp(sum(math.log(r.speedup_x) for r in rows) / len(rows))
    slowest = min(rows, key=lambda r: r.speedup_x)
    reading = (f"Our fastest kernel against the fastest other backend: {geomean:.2f}x geomean "
               f"over {len(rows)} matrices; lowest {slowest.speedup_x:.2f}x "
               f"({slowest.matrix}, {slowest.own_backend} against {slowest.best_peer}).")
    return Table("own_vs_peers", "Our kernels against the best other backend", (
        Column("matrix", "Matrix"), Column("own_backend", "Best own"),
        Column("own_ms", "Own", ".4f"), Column("own_format_bytes", "Own format bytes", ",d"),
        Column("csr_equiv_gb_s", "INT32-CSR-equivalent", ",.0f"),
        Column("best_peer", "Best other"), Column("peer_ms", "Other", ".4f"),
        Column("speedup_x", "Speedup", ".2f", "x"), Column("auto_ms", "Auto", ".4f"),
        Column("auto_choice", "Auto chose")), tuple(rows), reading,
        basis="Medians of the timed cases; own = registry.OWN_BACKENDS and their variants. "
              "INT32-CSR-equivalent GB/s = INT32 CSR's bytes / time, for comparing formats "
              "by time alone.")
