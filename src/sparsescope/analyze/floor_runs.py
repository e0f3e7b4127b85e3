"""Stored runs read against each format's memory floor (``sparsescope model score
--memory-floor``; the cases of an op that declares one, ``Op.memory_floor``: SpMV), on this
host: the floor today's predictions carry (``model.predict.format_floor``, formulas in
``model.gathers``), computed for runs made before it existed, from the run's own measured rates
and each case's declared traffic; the matrices built again as the run built them
(:func:`sparsescope.analyze.score_runs.run_csr`).

Per matrix: the fastest own kernel, ``cuda-spmv-auto`` and the fastest library case, each
against its own format's floor: ``% of floor = floor / measured median x 100``. The speedup
over the best library a kernel at its format's floor would reach is ``library time / floor``
(geomean over matrices), beside today's ``library time / fastest own``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from sparsescope.analyze.score_runs import run_csr, run_rates
from sparsescope.analyze.score_summary import geomean
from sparsescope.model.predict import format_floor
from sparsescope.registry import is_own, is_sparse_library

AUTO = "cuda-spmv-auto"


def _median_ms(case) -> float:
    return statistics.median(case.measurement.samples_ms)


def case_floor(case, csr, rates):
    """The case's memory floor (``GatherFloor``), or None when it declared no traffic. The
    flush write-back is the case's own prediction's (``inputs['flush_writeback_bytes']``),
    counted only where the run measured the device's ``flush_writeback_share``, as the
    prediction's floor counts it; a case without a stored prediction gets none."""
    if case.traffic is None:
        return None
    inputs = case.prediction.inputs if case.prediction is not None else {}
    writeback = (float(inputs.get("flush_writeback_bytes", 0.0))
                 if rates.flush_writeback_share is not None else 0.0)
    return format_floor(csr.indptr, csr.indices, csr.shape[1], case.traffic, rates,
                        case.value_bytes, writeback)


def floor_rows(path: str | Path, matrices: Sequence[str] = (),
               progress: Callable[[str], None] | None = None) -> list[dict]:
    """Per matrix of the run at ``path`` (its cases with a memory floor): the fastest own
    kernel (the choosers left out), ``cuda-spmv-auto`` and the fastest library case, each as
    ``{backend, ms, floor_ms, pct, binding, strategy, x_requests, hot_share, formula}`` (None
    where the run has no such case), and the matrix's nonzeros."""
    from sparsescope.ops.registry import get_op
    from sparsescope.results.io import read_runset

    rs = read_runset(path)
    rates = run_rates(rs)
    only = set(matrices)
    by_matrix: dict[str, list] = {}
    for c in rs.cases:   # the cases of an op whose traffic has a format floor
        if (c.outcome == "ok" and get_op(c.op).memory_floor and c.measurement is not None
                and (not only or c.matrix in only)):
            by_matrix.setdefault(c.matrix, []).append(c)
    rows = []
    for matrix, cases in by_matrix.items():
        csr = run_csr(rs, matrix)
        # the fastest own kernel proper: the choosers (auto, auto-rules) ran one of them
        own = [c for c in cases if is_own(c.backend) and not c.backend.startswith(AUTO)]
        picks = {"own": min(own, key=_median_ms) if own else None,
                 "auto": next((c for c in cases if c.backend == AUTO), None),
                 "library": min((c for c in cases if is_sparse_library(c.backend)),
                                key=_median_ms, default=None)}
        row = {"gpu": rs.device.name, "matrix": matrix, "nnz": csr.nnz}
        for role, case in picks.items():
            floor = case_floor(case, csr, rates) if case is not None else None
            row[role] = None if case is None else {
                "backend": case.backend, "ms": _median_ms(case),
                "floor_ms": floor.floor_ms if floor else None,
                "pct": 100 * floor.floor_ms / _median_ms(case) if floor else None,
                "binding": floor.binding if floor else "",
                "strategy": floor.strategy if floor else "",
                "x_requests": floor.x_requests if floor else None,
                "hot_share": floor.hot_share if floor else None,
                "formula": floor.formula if floor else ""}
        rows.append(row)
        if progress:
            progress(f"{rs.device.name} {matrix}: floors read")
    return rows


def _cell(part: dict | None, key: str, fmt: str) -> str:
    if part is None or part.get(key) is None:
        return "-"
    return format(part[key], fmt)


def floor_markdown(rows: list[dict]) -> str:
    lines = ["| GPU | matrix | fastest own | us | floor us | % of floor | bound by | x requests "
             "/ nnz | on chip % | auto us | auto % of floor | best library | us | library % "
             "of its floor |", "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        own, auto, lib = r["own"], r["auto"], r["library"]
        per_nnz = (own["x_requests"] / r["nnz"] if own and own["x_requests"] is not None
                   and r["nnz"] else None)
        hot = None if not own or own["hot_share"] is None else 100 * own["hot_share"]
        lines.append(
            f"| {r['gpu']} | {r['matrix']} | {own['backend'] if own else '-'} | "
            f"{_cell(own, 'ms', '.4f')} | {_cell(own, 'floor_ms', '.4f')} | "
            f"{_cell(own, 'pct', '.1f')} | {own['binding'] if own else '-'} | "
            f"{'-' if per_nnz is None else format(per_nnz, '.3f')} | "
            f"{'-' if hot is None else format(hot, '.1f')} | {_cell(auto, 'ms', '.4f')} | "
            f"{_cell(auto, 'pct', '.1f')} | "
            f"{lib['backend'] if lib else '-'} | {_cell(lib, 'ms', '.4f')} | "
            f"{_cell(lib, 'pct', '.1f')} |")
    pcts = [r["own"]["pct"] for r in rows if r["own"] and r["own"]["pct"] is not None]
    reach = [(r["matrix"], r["library"]["ms"] / r["own"]["floor_ms"],
              r["library"]["ms"] / r["own"]["ms"]) for r in rows
             if r["own"] and r["own"]["floor_ms"] and r["library"]]
    if reach:
        geo = geomean(x for _, x, _ in reach)
        now = geomean(x for _, _, x in reach)
        lines += ["", f"- Speedup over the best library: {now:.2f}x geomean now (fastest own "
                      f"kernel); at most {geo:.2f}x for a kernel at its format's floor "
                      f"(library time / floor, over {len(reach)} matrices): "
                      + ", ".join(f"{m} {x:.2f}x" for m, x, _ in reach) + "."]
    if pcts:
        below = [f"{r['matrix']} ({r['own']['pct']:.0f} %)" for r in rows
                 if r["own"] and r["own"]["pct"] is not None and r["own"]["pct"] < 80]
        lines += ["", f"- Fastest own kernel: median {statistics.median(pcts):.1f} % of its "
                      f"format's floor over {len(pcts)} matrices; below 80 %: "
                      f"{', '.join(below) or 'none'}."]
    lines += ["", "Floors (fastest own kernel's format):", ""]
    lines += [f"- {r['matrix']}: {r['own']['strategy']}; {r['own']['formula']}" for r in rows
              if r["own"] and r["own"]["formula"]]
    return "\n".join(lines) + "\n"
