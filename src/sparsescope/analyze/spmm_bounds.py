"""SpMM runs against the best library and the memory bound (``sparsescope model score
--spmm-bounds``; issue 18's figures), from a run's results alone.

Per k and layout, our ``spmm-cuda-auto`` against the best library configuration (the fastest
sparse library case of the same matrix, k and layout, ``registry.is_sparse_library``: cuSPARSE
through PyTorch, CuPy or nvmath, and any other library timed; never the dense break-even
peer), as a geometric mean of ``best library time / auto time``, the smallest ratio and the
cases below 0.95x; which kernel auto chose, against the fastest of the own fixed kernels;
and, for every case, the share of the better of the DRAM and L2 bounds for the traffic model's
bytes that auto and the best library reach (``model.spmm.memory_bound`` at the run's measured
bandwidths), with issue 18's group: graphs (power-law and R-MAT kinds) of more than 100 k
rows at k >= 64, target >= 70 %. ``newer`` runs' (matrix, k, layout) triples replace the first
run's whole (every backend of a triple from one run, so each ratio is measured within one run).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparsescope.analyze.score_runs import run_csr, suite_csr
from sparsescope.errors import UsageError
from sparsescope.model.predict import device_rates
from sparsescope.model.spmm import NOT_A_FLOOR, memory_bound, spmm_traffic, x_reuse_dram_floors
from sparsescope.registry import is_own, is_sparse_library
from sparsescope.results.io import read_runset

AUTO = "spmm-cuda-auto"
#: Issue 18's memory-bound group: graphs of more than this many rows, at k >= GROUP_MIN_K.
GRAPH_KINDS = ("powerlaw", "rmat")
GROUP_MIN_ROWS = 100_000
GROUP_MIN_K = 64
TARGET_PCT = 70.0


def _median_ms(case) -> float | None:
    if case.outcome != "ok" or case.measurement is None or not case.measurement.samples_ms:
        return None
    return float(statistics.median(case.measurement.samples_ms))


def x_reuse_floor(group: list[dict], rates, csr_of: Callable[[str], Any] | None = None
                  ) -> None:
    """Add to each row of the memory group the DRAM floor with X's capacity misses
    (``model.spmm.x_reuse_dram_floors``, the smallest over slab widths; column-major X adds the
    two transposes, X and Y read and written once more) and the bound that takes it in:
    ``x_reuse_bound_ms`` = max(memory bound, that floor), with auto's and the library's share.
    ``csr_of(matrix)``: the matrix, built again (default: the ``spmm-population`` suite's
    entry, seed 0, full scale)."""
    csr_of = csr_of or (lambda name: suite_csr("spmm-population", name))
    for r in group:
        csr = csr_of(r["matrix"])
        floors = x_reuse_dram_floors(csr.indptr, csr.indices, csr.shape[1], r["k"],
                                     l2_bytes=rates.l2_bytes, dram_bw_gb_s=rates.dram_bw_gb_s)
        best = min(floors, key=lambda f: f.floor_ms)
        around = 0.0
        if r["layout"] == "col":  # X and Y each read and written once more (memory_bound's)
            t = spmm_traffic(csr.shape[0], csr.shape[1], csr.nnz, r["k"])
            around = 2 * (t.x_bytes + t.y_bytes) / (rates.dram_bw_gb_s * 1e9) * 1e3
        floor = best.floor_ms + around
        bound = max(r["memory_bound_ms"], floor)
        r.update(x_reuse_floor_ms=floor, x_reuse_slab=best.slab,
                 x_reuse_misses_per_row=best.x_misses_per_row, x_reuse_bound_ms=bound,
                 x_reuse_bound_by="dram, X re-read" if floor > r["memory_bound_ms"]
                 else r["memory_bound_by"],
                 auto_pct_of_x_reuse_bound=100 * bound / r["auto_ms"],
                 library_pct_of_x_reuse_bound=100 * bound / r["library_ms"])


def _triple(case) -> tuple:
    return (case.matrix, int(case.params.k), case.params.layout)


def merged_cases(path: str | Path, newer: Sequence[str | Path] = ()):
    """(the first run, its cases with every (matrix, k, layout) that a ``newer`` run measured
    replaced whole by that run's cases, the matrices of all): each triple's ratio stays
    within one run; the device's rates are the first run's."""
    rs = read_runset(path)
    cases, matrices = list(rs.cases), {m.name: m for m in rs.matrices}
    for later in newer:
        other = read_runset(later)
        if other.device.name != rs.device.name:
            raise UsageError(f"{later}: measured on {other.device.name}, not "
                             f"{rs.device.name}")
        replaced = {_triple(c) for c in other.cases if c.outcome == "ok"}
        cases = [c for c in cases if _triple(c) not in replaced]
        cases += [c for c in other.cases if _triple(c) in replaced]
        matrices.update({m.name: m for m in other.matrices})
    return rs, cases, matrices


def summarise(path: str | Path, x_reuse: bool = False, newer: Sequence[str | Path] = ()
              ) -> dict:
    """The SpMM run at ``path`` (``newer`` runs' triples replacing its own): per (matrix, k,
    layout) auto against the best library and the memory bound; per (k, layout) the speedup's
    geomean, smallest and count below 0.95x; and issue 18's group against its target."""
    rs, cases, stats = merged_cases(path, newer)
    rates = device_rates(rs.device, rs.ceilings)
    value_bytes = {c.matrix: c.value_bytes for c in cases}
    times: dict[tuple, dict[str, float]] = defaultdict(dict)
    chosen: dict[tuple, str] = {}
    for c in cases:
        key = (c.matrix, int(c.params.k), c.params.layout)
        t = _median_ms(c)
        if t is not None:
            times[key][c.backend] = t
        if c.backend == AUTO:
            chosen[key] = c.notes.get("selected", "?")
    rows = []
    for key, by in sorted(times.items()):
        libs = {b: t for b, t in by.items() if is_sparse_library(b)}
        if AUTO not in by or not libs:
            continue
        lib = min(libs, key=libs.get)
        own = {b: t for b, t in by.items() if is_own(b) and b != AUTO}
        fastest_own = min(own, key=own.get) if own else ""
        m = stats[key[0]]
        traffic = spmm_traffic(m.stats.rows, m.stats.cols, m.stats.nnz, key[1], layout=key[2],
                               value_bytes=value_bytes.get(key[0], 4))
        bound = memory_bound(traffic, rates.dram_bw_gb_s, rates.l2_bw_gb_s)
        # the gathers of the bound's strategy (row-major ones when X is best transposed)
        gathered = (spmm_traffic(m.stats.rows, m.stats.cols, m.stats.nnz, key[1],
                                 value_bytes=value_bytes.get(key[0], 4))
                    if bound.strategy == "transposed" else traffic).gather_bytes
        rows.append(dict(matrix=key[0], kind=m.kind, rows=m.stats.rows, k=key[1],
                         layout=key[2], auto_ms=by[AUTO],
                         library=lib, library_ms=libs[lib], speedup=libs[lib] / by[AUTO],
                         auto_chose=chosen.get(key, "?"), fastest_own=fastest_own,
                         fastest_own_ms=own.get(fastest_own),
                         memory_bound_ms=bound.bound_ms,
                         memory_bound_by=f"{bound.binding}, {bound.strategy}",
                         auto_pct_of_memory_bound=bound.pct_of(by[AUTO]),
                         # the L2 sectors the model's gathers ask for, per second of auto's time
                         auto_l2_gsectors_s=gathered / 32 / (by[AUTO] * 1e-3) / 1e9,
                         library_pct_of_memory_bound=bound.pct_of(libs[lib])))
    groups = defaultdict(list)
    for r in rows:
        groups[(r["k"], r["layout"])].append(r["speedup"])
        groups[("all", r["layout"])].append(r["speedup"])
        groups[("all", "all")].append(r["speedup"])
    table = [dict(k=k, layout=layout, cases=len(v),
                  geomean=math.exp(sum(map(math.log, v)) / len(v)), min=min(v),
                  below_0_95=sum(s < 0.95 for s in v))
             for (k, layout), v in sorted(groups.items(), key=lambda g: (str(g[0][0]).zfill(4),
                                                                          g[0][1]))]
    group = [r for r in rows if r["kind"] in GRAPH_KINDS and r["rows"] > GROUP_MIN_ROWS
             and r["k"] >= GROUP_MIN_K]
    if x_reuse:
        x_reuse_floor(group, rates, lambda name: run_csr(rs, name))
    return dict(source=str(path), newer=[str(p) for p in newer], device=rs.device.name,
                cases=len(cases), rows=rows,
                table=table, rates={"dram_bw_gb_s": rates.dram_bw_gb_s,
                                    "dram_source": rates.sources.get("dram_bw", ""),
                                    "l2_bw_gb_s": rates.l2_bw_gb_s,
                                    "l2_gather_gsectors_s": rates.l2_gather_gsectors_s},
                memory_group=dict(cases=len(group),
                                  auto_at_target=sum(r["auto_pct_of_memory_bound"] >= TARGET_PCT
                                                     for r in group),
                                  library_at_target=sum(
                                      r["library_pct_of_memory_bound"] >= TARGET_PCT
                                      for r in group),
                                  auto_at_target_x_reuse=sum(
                                      r.get("auto_pct_of_x_reuse_bound", 0) >= TARGET_PCT
                                      for r in group) if x_reuse else None,
                                  rows=group))


def gather_rate_lines(rows: list[dict], gather: float | None) -> list[str]:
    """The reading of the group against the measured random-sector rate: the memory bound
    charges X's sectors at the L2's streaming bandwidth; a graph's gathers are 32-byte sectors
    of scattered rows, whose measured rate is the better-justified ceiling for them."""
    if not gather or not rows:
        return []
    shares = [100 * r["auto_l2_gsectors_s"] / gather for r in rows]
    at = sum(s >= TARGET_PCT for s in shares)
    return [f"- Against that random-sector rate, spmm-cuda-auto's sector throughput is "
            f"{min(shares):.0f}-{max(shares):.0f} % ({at} of {len(rows)} at "
            f">= {TARGET_PCT:.0f} %). Each gather reads a row slice of X that starts at a "
            "scattered row, so its sectors arrive between the random-sector rate and the "
            "streaming bandwidth; the bound above charges all of them at the streaming "
            "bandwidth. The misses of the target lie in that gap (the ncu profile of graph-08 "
            "at k = 128, results/h200/profile/2026-11-25-cases: both our kernel and cuSPARSE's "
            "stall mostly on long scoreboards, waiting on these loads)."]


def bounds_markdown(s: dict) -> str:
    """The memory-bound page: issue 18's group first, then every (matrix, k, layout)."""
    g, rates = s["memory_group"], s["rates"]
    lines = [
        f"# {s['device']}: share of the memory bound reached (issue 18)", "",
        f"Written by `sparsescope model score --spmm-bounds` from "
        f"`{Path(s['source']).name}`. "
        "Memory bound = max(compulsory bytes (A, X and Y once) / DRAM bandwidth, gather bytes "
        "(A, X's 32-byte sectors per nonzero, Y) / L2 bandwidth), `model.spmm.memory_bound`, "
        f"at {rates['dram_bw_gb_s']:,.0f} GB/s DRAM ({rates['dram_source']}) and "
        f"{rates['l2_bw_gb_s'] or 0:,.0f} GB/s L2 (measured by the run). % = bound / time.",
        "",
        f"## Graphs of more than {GROUP_MIN_ROWS:,} rows at k >= {GROUP_MIN_K} "
        f"(target >= {TARGET_PCT:.0f} %)", "",
        f"- {g['cases']} (matrix, k, layout) cases; spmm-cuda-auto reaches the target in "
        f"{g['auto_at_target']}, the best library configuration in {g['library_at_target']}.",
        "- L2 sectors/s: the sectors the model's gathers request (gather bytes / 32) over "
        "auto's time, against the run's measured rate of random 32-byte sector gathers from "
        f"L2, {rates['l2_gather_gsectors_s'] or float('nan'):,.1f} G/s, and its streaming "
        f"bandwidth, {(rates['l2_bw_gb_s'] or float('nan')) / 32:,.1f} G sectors/s.",
        *gather_rate_lines(g["rows"], rates.get("l2_gather_gsectors_s")),
        "",
        "| matrix | rows | k | layout | bound by | bound us | auto us | auto % | auto L2 "
        "G sectors/s | % of the gather rate | best library | library % |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|"]
    gather = rates.get("l2_gather_gsectors_s")
    for r in g["rows"]:
        share = f"{100 * r['auto_l2_gsectors_s'] / gather:.0f}" if gather else "-"
        lines.append(f"| {r['matrix']} | {r['rows']:,} | {r['k']} | {r['layout']} | "
                     f"{r['memory_bound_by']} | {1e3 * r['memory_bound_ms']:,.1f} | "
                     f"{1e3 * r['auto_ms']:,.1f} | {r['auto_pct_of_memory_bound']:.0f} | "
                     f"{r['auto_l2_gsectors_s']:,.1f} | {share} | "
                     f"{r['library']} | {r['library_pct_of_memory_bound']:.0f} |")
    if g.get("auto_at_target_x_reuse") is not None:
        lines += [
            "", "### With X's capacity misses (`--x-reuse`)", "",
            "The bound above counts X once in DRAM. Where X is larger than the L2, a kernel "
            "that walks the rows in order re-reads X's rows from DRAM as the L2 drops them: "
            "`model.spmm.x_reuse_dram_floors` counts those misses with the LRU reuse model at "
            "every column-slab width (A read once a slab) and keeps the smallest floor; the "
            "bound here is the larger of it and the bound above.",
            "",
            f"- spmm-cuda-auto reaches the target against this bound in "
            f"{g['auto_at_target_x_reuse']} of {g['cases']} cases.", "",
            "| matrix | k | layout | X misses per row | at slab | floor us | bound us | by | "
            "auto % | library % |",
            "|---|---:|---|---:|---:|---:|---:|---|---:|---:|"]
        for r in g["rows"]:
            lines.append(f"| {r['matrix']} | {r['k']} | {r['layout']} | "
                         f"{r['x_reuse_misses_per_row']:.2f} | {r['x_reuse_slab']} | "
                         f"{1e3 * r['x_reuse_floor_ms']:,.1f} | "
                         f"{1e3 * r['x_reuse_bound_ms']:,.1f} | {r['x_reuse_bound_by']} | "
                         f"{r['auto_pct_of_x_reuse_bound']:.0f} | "
                         f"{r['library_pct_of_x_reuse_bound']:.0f} |")
    broken = [r for r in s["rows"] if max(r["auto_pct_of_memory_bound"],
                                          r["library_pct_of_memory_bound"]) > 100]
    if broken:
        kinds = sorted({r["kind"] for r in broken})
        lines += ["", "## Cases faster than the bound", "",
                  f"{len(broken)} of {len(s['rows'])} cases ran faster than their memory bound "
                  f"(kinds: {', '.join(kinds)}). {NOT_A_FLOOR} No profile here says which "
                  "of the two it is; cases at large k dominate.", "",
                  "| matrix | kind | k | layout | bound by | auto % | library % |",
                  "|---|---|---:|---|---|---:|---:|"]
        for r in broken:
            lines.append(f"| {r['matrix']} | {r['kind']} | {r['k']} | {r['layout']} | "
                         f"{r['memory_bound_by']} | {r['auto_pct_of_memory_bound']:.0f} | "
                         f"{r['library_pct_of_memory_bound']:.0f} |")
    lines += ["", "## Every case", "",
              "| matrix | kind | k | layout | bound by | auto % | library % |",
              "|---|---|---:|---|---|---:|---:|"]
    for r in s["rows"]:
        lines.append(f"| {r['matrix']} | {r['kind']} | {r['k']} | {r['layout']} | "
                     f"{r['memory_bound_by']} | {r['auto_pct_of_memory_bound']:.0f} | "
                     f"{r['library_pct_of_memory_bound']:.0f} |")
    return "\n".join(lines) + "\n"
