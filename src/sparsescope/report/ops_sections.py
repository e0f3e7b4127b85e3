"""Report sections for SpMM and CSR row slicing, as ``(title, markdown)`` pairs for
``write_report(runset, out, extra_sections=...)``, plus their figures and JSON tables.

* SpMM: time, GFLOP/s, effective bandwidth and % of the roofline bound of every timed case;
  our kernel against the best peer at each (matrix, k, layout); the arithmetic-intensity-
  against-k table of each matrix (``model.spmm``); the hierarchical instruction roofline of
  profiled kernels (L1, L2, DRAM points, measured or spec ceilings, stride walls, predication
  ticks, as seed 004 draws them) when ncu profiles are given.
* Slice: time, bandwidth and % of the dense-output bound of every case; the five bounds of
  ``model.slice_rows`` for each workload; which bound the measurements support (the scatter
  kernel's own time, memset excluded, as seed 003 timed it), seed 003's 128-byte-line model
  held against them, and -- with ncu profiles -- the scatter kernel's DRAM and L2 sectors
  against what each model predicts.
* With profiles (labels ``"<backend> <matrix> <params>: <kernel>"``, as
  ``backends.op_runner.split_marked_profiles`` makes them): the kernels of every profiled
  case (count, time under ncu, the longest one's occupancy and first stall), and the
  instruction roofline of each op.
* Skipped and failed cases of both ops, with their reasons.

Each case's parameters come from ``CaseResult.notes`` (``op.k``, ``op.nnz_selected``, ...).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sparsescope.model.slice_rows import (
    dense_bound_ms,
    judge_bounds,
    sector_rmw_bound_ms,
    sector_scatter_bound_ms,
    seed_line_bound_ms,
    streaming_bound_ms,
)
from sparsescope.model.spmm import intensity_table, spmm_bound_ms
from sparsescope.model.spmv import GB
from sparsescope.ops.registry import get_op
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet

OPS = ("spmm", "slice")
OWN_BACKENDS = {"spmm": ("spmm-cuda-rowwarp",),
                "slice": ("slice-cuda-scatter", "slice-cuda-gather")}
KS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
SCATTER_KERNEL = "slice_scatter"


@dataclass(frozen=True)
class OpView:
    """A timed op case with its matrix and byte model."""

    case: CaseResult
    matrix: MatrixRecord
    traffic: Any

    @property
    def time_ms(self) -> float:
        return self.case.measurement.time_ms

    def note(self, name: str, default: str = "") -> str:
        return self.case.notes.get(f"op.{name}", default)


@dataclass(frozen=True)
class OpsReport:
    """What :func:`ops_sections` produced."""

    sections: tuple[tuple[str, str], ...]
    figures: tuple[Path, ...] = ()
    tables: dict[str, list[dict]] = field(default_factory=dict)
    """Table name -> rows (field names carry units), for ``tables/<name>.json``."""


def op_views(runset: RunSet, op: str) -> list[OpView]:
    """The ok, timed cases of ``op`` with their matrix records and byte models."""
    matrices = {m.name: m for m in runset.matrices}
    op_obj = get_op(op)
    views = []
    for case in runset.cases:
        if case.op != op or case.outcome != "ok" or case.measurement is None:
            continue
        record = matrices[case.matrix]
        st = record.stats
        traffic = op_obj.traffic_for(st.rows, st.cols, st.nnz, case.notes,
                                     value_bytes=case.value_bytes, index_bytes=case.index_bytes,
                                     y_read=case.y_read)
        views.append(OpView(case, record, traffic))
    return views


def _fmt(value: Any, spec: str = ".4g") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return format(value, spec) if isinstance(value, int | float) else str(value)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A pipe table; numbers formatted with 4 significant digits."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _kernel_ms(case: CaseResult, token: str) -> float | None:
    """Time per call of the breakdown's kernels whose name holds ``token`` (None without)."""
    if case.measurement is None:
        return None
    hits = [k["time_ms"] for k in case.measurement.kernel_breakdown if token in k.get("name", "")]
    return sum(hits) if hits else None


# ----------------------------------------------------------------------------- SpMM

def spmm_rows(runset: RunSet, views: Sequence[OpView]) -> list[dict]:
    dev = runset.device
    rows = []
    for v in views:
        t = v.traffic
        bound = spmm_bound_ms(t, dev.peak_bw_gb_s, dev.fp32_peak_gflops)
        rows.append({"matrix": v.case.matrix, "k": t.k, "layout": t.layout,
                     "backend": v.case.backend, "time_ms": v.time_ms,
                     "gflops": t.flops / (v.time_ms * 1e-3) / GB,
                     "eff_bw_gb_s": t.compulsory_bytes / (v.time_ms * 1e-3) / GB,
                     "ai_flop_per_byte": t.arithmetic_intensity, "bound_ms": bound,
                     "pct_of_bound": 100.0 * bound / v.time_ms,
                     "rel_err": v.case.correctness.rel_err if v.case.correctness else None})
    return rows


def peer_rows(views: Sequence[OpView], op: str, key) -> list[dict]:
    """Per group (``key(view)``): the fastest own backend against the fastest peer."""
    groups: dict[tuple, list[OpView]] = {}
    for v in views:
        groups.setdefault(key(v), []).append(v)
    rows = []
    for group, members in groups.items():
        own = [v for v in members if v.case.backend in OWN_BACKENDS[op]]
        peers = [v for v in members if v.case.backend not in OWN_BACKENDS[op]]
        if not own or not peers:
            continue
        best_own = min(own, key=lambda v: v.time_ms)
        best_peer = min(peers, key=lambda v: v.time_ms)
        ratio = best_peer.time_ms / best_own.time_ms
        rows.append({"case": " ".join(str(g) for g in group),
                     "own_backend": best_own.case.backend, "own_ms": best_own.time_ms,
                     "best_peer": best_peer.case.backend, "peer_ms": best_peer.time_ms,
                     "speedup_x": ratio, "at_least_as_fast": ratio >= 1.0})
    return rows


def _peer_markdown(rows: list[dict], what: str, profiled: set[str] | None = None) -> str:
    if not rows:
        return (f"No case of this run has both an own kernel and a peer timed ({what}); "
                "the comparison needs a GPU run.")
    table = md_table(["case", "own backend", "own ms", "best peer", "peer ms", "speedup x",
                      "own >= peer"],
                     [[r["case"], r["own_backend"], r["own_ms"], r["best_peer"], r["peer_ms"],
                       r["speedup_x"], "yes" if r["at_least_as_fast"] else "**no**"]
                      for r in rows])
    slower = [r["case"] for r in rows if not r["at_least_as_fast"]]
    verdict = ("Our kernel is at least as fast as the best peer on every case."
               if not slower else
               f"Our kernel is slower than the best peer on {len(slower)} of {len(rows)} cases "
               f"({', '.join(slower)}): the instruction roofline and the bounds below say where "
               "the time goes.")
    if slower and profiled is not None:
        unprofiled = [c for c in slower if c not in profiled]
        if unprofiled:
            verdict += (f" Not profiled in this run: {', '.join(unprofiled)}; the profiled "
                        "kernels below show the mechanism on the nearest profiled cases.")
    return f"{table}\n\n{verdict}"


def intensity_markdown(runset: RunSet, views: Sequence[OpView]) -> tuple[str, list[dict]]:
    dev = runset.device
    seen: dict[str, OpView] = {}
    for v in views:
        seen.setdefault(v.case.matrix, v)
    parts, rows = [], []
    ridge = dev.fp32_peak_gflops / dev.peak_bw_gb_s if dev.peak_bw_gb_s > 0 else float("nan")
    for name, v in seen.items():
        st = v.matrix.stats
        table = intensity_table(st.rows, st.cols, st.nnz, KS, value_bytes=v.case.value_bytes,
                                index_bytes=v.case.index_bytes, bw_gb_s=dev.peak_bw_gb_s,
                                fp32_peak_gflops=dev.fp32_peak_gflops)
        col = intensity_table(st.rows, st.cols, st.nnz, KS, layout="col",
                              value_bytes=v.case.value_bytes, index_bytes=v.case.index_bytes,
                              bw_gb_s=dev.peak_bw_gb_s, fp32_peak_gflops=dev.fp32_peak_gflops)
        body = []
        for r, c in zip(table, col, strict=True):
            body.append([r.k, r.compulsory_bytes / 1e6, r.flops / 1e6, r.arithmetic_intensity,
                         r.x_sectors_per_nnz, r.gather_intensity, c.gather_intensity,
                         r.bound_ms * 1e3, "memory" if r.memory_bound else "compute"])
            rows.append({"matrix": name, "k": r.k, "compulsory_mb": r.compulsory_bytes / 1e6,
                         "ai_flop_per_byte": r.arithmetic_intensity,
                         "x_sectors_per_nnz_row": r.x_sectors_per_nnz,
                         "gather_ai_row_flop_per_byte": r.gather_intensity,
                         "gather_ai_col_flop_per_byte": c.gather_intensity,
                         "bound_us": r.bound_ms * 1e3})
        parts.append(f"**{name}** ({st.rows} x {st.cols}, {st.nnz:,} nnz):\n\n" + md_table(
            ["k", "bytes MB", "MFLOP", "AI FLOP/B", "X sectors/nnz (row)", "gather AI row",
             "gather AI col", "bound µs", "bound by"], body))
    intro = (f"AI = 2 nnz k / (A + X once + Y); gather AI counts X as the 32-byte sectors each "
             f"nonzero requests (row-major: (4k + 32 - gcd(4k, 32)) / 32 per nonzero for "
             f"float32; column-major: k). Ridge of {dev.name}: {ridge:.1f} FLOP/byte; bound = "
             f"max(bytes / {dev.peak_bw_gb_s:g} GB/s, flops / {dev.fp32_peak_gflops:g} GFLOP/s).")
    return intro + "\n\n" + "\n\n".join(parts), rows


# ----------------------------------------------------------------------------- slice

def _l2_bw(runset: RunSet) -> float | None:
    value = runset.ceilings.l2_bw_gb_s
    return value if value and value > 0 else None


def slice_rows_table(runset: RunSet, views: Sequence[OpView]) -> list[dict]:
    dram, l2 = runset.device.peak_bw_gb_s, _l2_bw(runset)
    rows = []
    for v in views:
        t = v.traffic
        dense = dense_bound_ms(t, dram)
        rows.append({
            "matrix": v.case.matrix, "rows_selected": t.selected_rows, "weights": t.weights,
            "backend": v.case.backend, "time_ms": v.time_ms,
            "kernel_ms": _kernel_ms(v.case, SCATTER_KERNEL),
            "eff_bw_gb_s": t.dense_bytes / (v.time_ms * 1e-3) / GB,
            "streaming_bound_ms": streaming_bound_ms(t, dram), "dense_bound_ms": dense,
            "sector_bound_ms": sector_scatter_bound_ms(t, dram, l2) if l2 else None,
            "sector_rmw_bound_ms": sector_rmw_bound_ms(t, dram),
            "seed_line_bound_ms": seed_line_bound_ms(t, dram, l2) if l2 else None,
            "pct_of_dense_bound": 100.0 * dense / v.time_ms,
            "sectors_per_write": t.sector_writes / t.nnz_selected if t.nnz_selected else None})
    return rows


RMW_BOUND = "32-byte sector read + write-back in DRAM"


def bound_verdict(runset: RunSet, views: Sequence[OpView], profiles: Sequence[Any] = (),
                  labels: Sequence[str] | None = None) -> str:
    """Which kernel-only bound the scatter kernel's times support (seed 003's question), and,
    with profiles of the scatter kernel, its DRAM and L2 sectors against each model."""
    dram, l2 = runset.device.peak_bw_gb_s, _l2_bw(runset)
    scatter = [v for v in views if v.case.backend == "slice-cuda-scatter"]
    if not scatter:
        return ("No ``slice-cuda-scatter`` case was timed in this run, so the scatter bounds "
                "cannot be held against seed 003's kernel form (a GPU run times it).")
    if l2 is None:
        return "The run measured no L2 bandwidth: the scatter bounds cannot be computed."
    times, source = [], "kernel time from the breakdown (memset excluded, as seed 003 timed)"
    for v in scatter:
        kernel = _kernel_ms(v.case, SCATTER_KERNEL)
        if kernel is None:
            source = "end-to-end time (no kernel breakdown: memset included)"
        times.append(kernel if kernel is not None else v.time_ms)
    bounds = {"streaming (DRAM, every byte once)": [streaming_bound_ms(v.traffic, dram)
                                                    for v in scatter],
              "32-byte sector scatter": [sector_scatter_bound_ms(v.traffic, dram, l2)
                                         for v in scatter],
              RMW_BOUND: [sector_rmw_bound_ms(v.traffic, dram) for v in scatter],
              "seed 003: 128-byte line read + write per store": [
                  seed_line_bound_ms(v.traffic, dram, l2) for v in scatter]}
    largest = max(range(len(scatter)), key=lambda i: scatter[i].traffic.read_bytes)
    verdicts = judge_bounds(bounds, times, decisive=largest)
    table = md_table(["bound", f"% of bound, largest case ({scatter[largest].case.matrix}, "
                      f"{scatter[largest].traffic.selected_rows} rows)", "median % of bound",
                      "refuted by a faster case", "supported"],
                     [[v.name, v.pct_of_bound[largest], v.median_pct,
                       "yes" if v.refuted else "no", "**yes**" if v.supported else "no"]
                      for v in verdicts])
    supported = [v.name for v in verdicts if v.supported]
    seed = next(v for v in verdicts if v.name.startswith("seed"))
    text = (f"Times: {source}; DRAM {dram:g} GB/s, L2 {l2:.0f} GB/s (measured). "
            + (f"The measurements support the **{supported[0]}** bound. " if supported else
               "Every bound is refuted by some case. ")
            + ("Seed 003's line model is **refuted**: the kernel ran faster than it allows."
               if seed.refuted else
               "Seed 003's line model is not refuted by these times.")
            + " Small workloads are launch- and latency-bound (every bound is far below their "
              "times), so the largest workload decides.")
    counters = scatter_counters(scatter, profiles, labels)
    if counters:
        text += "\n\n" + counters
    return f"{table}\n\n{text}"


def scatter_counters(scatter: Sequence[OpView], profiles: Sequence[Any],
                     labels: Sequence[str] | None) -> str:
    """The scatter kernel's measured sectors (ncu) against the models' predictions, per
    profiled case: DRAM reads (CSR reads, plus one sector per touched sector if read-modify-
    write), DRAM writes (touched sectors), L2 sectors (seed 003: 8 per store)."""
    from sparsescope.profile import metrics as M

    rows = []
    for v in scatter:
        for p in _case_profiles(v, profiles, labels):
            if p.name != SCATTER_KERNEL:
                continue
            t = v.traffic
            read = sum(p.value(n) or 0 for n in M.DRAM_SECTORS[:1])
            write = sum(p.value(n) or 0 for n in M.DRAM_SECTORS[1:])
            l2 = sum(p.value(n) or 0 for n in M.L2_SECTOR_OPS[0])
            rows.append([f"{v.case.matrix} rows={t.selected_rows} {t.weights}",
                         p.duration_ns / 1e3, t.read_bytes / 32 / 1e6,
                         (t.read_bytes / 32 + t.sector_writes) / 1e6, read / 1e6,
                         t.sector_writes / 1e6, write / 1e6, t.nnz_selected * 8 / 1e6,
                         l2 / 1e6])
    if not rows:
        return ""
    return ("Sectors of the scatter kernel under ncu (caches flushed before it, memset "
            "not profiled), in millions, against what each model predicts:\n\n"
            + md_table(["case", "ncu µs", "DRAM read: reads only", "DRAM read: reads + RMW",
                        "DRAM read: measured", "DRAM write: touched sectors",
                        "DRAM write: measured", "L2: seed 003 (8 per store)",
                        "L2: measured"], rows)
            + "\n\nA DRAM read count near *reads + RMW* and a write count near the touched "
              "sectors say each touched 32-byte sector is read from and written back to DRAM "
              "(the sector read-modify-write bound); an L2 count far below seed 003's says "
              "no 128-byte line is read and written back per store. Where the output fits "
              "in L2 (the smaller cases) the counts say less: ncu's flush before the kernel "
              "sends the zero fill to DRAM, which the timed runs (memset just before the "
              "kernel) do not, and the written sectors are still in L2 when the kernel ends.")


def _case_key(v: OpView) -> str:
    """The profile label prefix of a view's case (``backends.op_runner.case_label``)."""
    from sparsescope.backends.op_runner import case_label

    if v.case.op == "spmm":
        params = {"k": v.traffic.k, "layout": v.traffic.layout}
    else:
        params = {"rows_selected": v.traffic.selected_rows, "weights": v.traffic.weights}
    return case_label({"backend": v.case.backend, "matrix": v.case.matrix, "params": params})


def _case_profiles(v: OpView, profiles: Sequence[Any], labels: Sequence[str] | None) -> list:
    if not profiles or not labels:
        return []
    key = _case_key(v) + ": "
    return [p for p, label in zip(profiles, labels, strict=True) if label.startswith(key)]


def profiled_cases(views: Sequence[OpView], profiles: Sequence[Any],
                   labels: Sequence[str] | None) -> list[dict]:
    """Per profiled (case, backend): kernels launched, their summed time under ncu, and the
    longest kernel with its achieved occupancy and first stall reason."""
    rows = []
    for v in views:
        found = [p for p in _case_profiles(v, profiles, labels) if p.duration_ns]
        if not found:
            continue
        main = max(found, key=lambda p: p.duration_ns)
        stall = max(main.stalls.items(), key=lambda kv: kv[1]) if main.stalls else None
        rows.append({"case": " ".join(str(x) for x in _view_key(v)),
                     "backend": v.case.backend, "time_ms": v.time_ms,
                     "kernels": len(found),
                     "ncu_sum_us": sum(p.duration_ns for p in found) / 1e3,
                     "main_kernel": main.name, "main_us": main.duration_ns / 1e3,
                     "main_grid_blocks": main.grid_size, "main_block_threads": main.block_size,
                     "main_achieved_occupancy_pct": main.achieved_occupancy_pct,
                     "main_top_stall": stall[0] if stall else None,
                     "main_top_stall_cycles_per_inst": stall[1] if stall else None})
    return rows


def unprofiled_losses(peers: Sequence[dict], views: Sequence[OpView],
                      profiled: Sequence[dict]) -> str:
    """For each case where our kernel is slower and which was not profiled: the nearest
    profiled case of the same matrix (largest k below), our kernel against the peer's there
    under ncu, and our launch of the slower case from its notes."""
    by_case = {(r["case"], r["backend"]): r for r in profiled}
    lines = []
    for loss in (r for r in peers if not r["at_least_as_fast"]):
        if any(case == loss["case"] for case, _ in by_case):
            continue
        matrix, k_text, layout = loss["case"].split(" ")
        k = int(k_text.removeprefix("k="))
        near = sorted((int(c.split(" ")[1].removeprefix("k=")), c) for c, b in by_case
                      if b == loss["own_backend"] and c.startswith(matrix + " ")
                      and c.endswith(" " + layout) and int(c.split(" ")[1][2:]) < k)
        if not near:
            continue
        k_near, case_near = near[-1]
        own = by_case[(case_near, loss["own_backend"])]
        peer = by_case.get((case_near, loss["best_peer"]))
        view = next((v for v in views if v.case.backend == loss["own_backend"]
                     and " ".join(_view_key(v)) == loss["case"]), None)
        text = (f"- **{loss['case']}** ({loss['speedup_x']:.2f}x): at k={k_near} (profiled) our "
                f"`{own['main_kernel']}` alone takes {own['main_us']:.2f} µs at "
                f"{_fmt(own['main_achieved_occupancy_pct'], '.1f')} % achieved occupancy "
                f"({own['main_grid_blocks']} blocks of {own['main_block_threads']} threads)")
        if peer is not None:
            text += (f", {loss['best_peer']}'s `{peer['main_kernel']}` {peer['main_us']:.2f} "
                     f"µs at {_fmt(peer['main_achieved_occupancy_pct'], '.1f')} % "
                     f"({peer['main_grid_blocks']} blocks of {peer['main_block_threads']}); "
                     f"our call wins there by launching {own['kernels']} kernel against "
                     f"{peer['kernels']} ({peer['ncu_sum_us']:.1f} µs in all)")
        if view is not None:
            n = view.case.notes
            text += (f". At k={k} the launch is the same size ({n.get('grid_blocks', '?')} "
                     f"blocks of {n.get('block_threads', '?')} threads, "
                     f"{n.get('slices', '?')} warps, one per row slice) with {k // k_near}x "
                     f"the gathers per warp: a kernel that already ran latency-bound at a "
                     f"few % occupancy takes about {k // k_near}x as long, while the launches "
                     f"our one kernel saves cost the same")
        lines.append(text + ".")
    if not lines:
        return ""
    return ("Where our kernel is slower and was not profiled, the nearest profiled case of "
            "the same matrix says why (ncu, caches flushed):\n\n" + "\n".join(lines))


def _profiled_markdown(rows: list[dict]) -> str:
    return ("Every kernel of one call under ncu (caches flushed before each kernel): the "
            "count, their summed duration, and the longest one. The event-timed `ms` is the "
            "whole call, launch gaps included.\n\n"
            + md_table(["case", "backend", "timed ms", "kernels", "ncu µs (sum)",
                        "longest kernel", "µs", "grid", "block", "achieved occ. %",
                        "top stall", "cycles/inst"],
                       [[r["case"], r["backend"], r["time_ms"], r["kernels"], r["ncu_sum_us"],
                         r["main_kernel"], r["main_us"], r["main_grid_blocks"],
                         r["main_block_threads"], r["main_achieved_occupancy_pct"],
                         r["main_top_stall"], r["main_top_stall_cycles_per_inst"]]
                        for r in rows]))


# ----------------------------------------------------------------------------- roofline

def roofline_markdown(runset: RunSet, profiles: Sequence[Any], labels: Sequence[str] | None,
                      figure_dir: Path | None) -> tuple[str, list[Path]]:
    """Instruction-roofline table of profiled kernels and one figure per backend (the first
    word of a label, as seed 004 draws one roofline per library); ceilings from the profile's
    own peaks where present, else the spec (datasheet) and the run's measured L2."""
    from sparsescope.profile.instruction_roofline import (
        WALLS,
        ceilings_from_device,
        ceilings_from_profile,
        instruction_roofline,
        merge_ceilings,
    )

    points = instruction_roofline(list(profiles), list(labels) if labels else None)
    if not points:
        return ("No profile with the instruction-roofline metrics was given (collect with "
                "`--groups instruction-roofline` or `--set full`).", [])
    ceilings = merge_ceilings(ceilings_from_profile(profiles[0]),
                              ceilings_from_device(runset.device, l2_bw_gb_s=_l2_bw(runset)))
    body = []
    for p in points:
        placed = []
        for level, ii, bw in (("L1", p.l1_intensity, ceilings.l1_gtxn_s),
                              ("L2", p.l2_intensity, ceilings.l2_gtxn_s),
                              ("DRAM", p.dram_intensity, ceilings.dram_gtxn_s)):
            if ii and bw:
                roof = min(ceilings.peak_warp_gips or float("inf"), ii * bw)
                placed.append((p.warp_gips / roof, level))
        bound = max(placed)[1] if placed else "–"
        wall = (min(WALLS, key=lambda w: abs(math.log(p.global_intensity / WALLS[w])))
                if p.global_intensity else "–")
        # thread instructions predicated on / 32 <= warp instructions: the shortfall is the
        # share of lanes idle or predicated off (seed 004's thread-predication gap)
        predication = (100.0 * (1 - p.predicated_on_gips / p.warp_gips)
                       if p.predicated_on_gips else None)
        body.append([p.kernel, p.duration_ns / 1e3, p.warp_gips, p.l1_intensity,
                     p.l2_intensity, p.dram_intensity, p.global_intensity, wall, bound,
                     predication])
    table = md_table(["kernel", "µs", "warp GIPS", "II L1", "II L2", "II DRAM",
                      "II global ld/st", "nearest wall", "closest ceiling", "predicated off %"],
                     body)
    sources = "; ".join(f"{k}: {v}" for k, v in ceilings.sources.items())
    text, written = f"{table}\n\nCeilings: {sources}.", []
    if figure_dir is not None:
        from sparsescope.profile.figures import instruction_roofline_figure

        groups: dict[str, list] = {}
        for p in points:
            groups.setdefault(p.kernel.split(" ")[0] if labels else "kernels", []).append(p)
        for key, members in groups.items():
            name = "ops_iroofline_" + "".join(c if c.isalnum() or c in "-_" else "-" for c in key)
            written.append(instruction_roofline_figure(members, ceilings,
                                                       figure_dir / f"{name}.png"))
            text += f"\n\n![Instruction roofline: {key}](figures/{name}.png)"
    return text, written


# ----------------------------------------------------------------------------- figures

def _canvas(width: float, height: float, ncols: int = 1):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]


def _save(fig, path: Path) -> Path:
    import io

    from sparsescope._atomic import write_bytes_atomic

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return write_bytes_atomic(path, buffer.getvalue())


def spmm_figure(runset: RunSet, views: Sequence[OpView], path: Path) -> Path:
    """(a) AI against k per matrix (compulsory and row-major gather); (b) the timed cases on
    the roofline of the device (GFLOP/s against compulsory AI)."""
    dev = runset.device
    fig, (left, right) = _canvas(11.0, 4.2, 2)
    for name in dict.fromkeys(v.case.matrix for v in views):
        v = next(v for v in views if v.case.matrix == name)
        st = v.matrix.stats
        table = intensity_table(st.rows, st.cols, st.nnz, KS, bw_gb_s=dev.peak_bw_gb_s,
                                fp32_peak_gflops=dev.fp32_peak_gflops)
        line, = left.plot(KS, [r.arithmetic_intensity for r in table], "o-", label=name)
        left.plot(KS, [r.gather_intensity for r in table], "--", color=line.get_color())
    ridge = dev.fp32_peak_gflops / dev.peak_bw_gb_s
    left.axhline(ridge, color="black", linewidth=1, label=f"ridge {ridge:.1f}")
    left.set(xscale="log", yscale="log", xlabel="k", ylabel="FLOP/byte",
             title="AI (solid) and gather AI (dashed) against k")
    left.legend(fontsize=7)
    ais = [v.traffic.arithmetic_intensity for v in views]
    grid = [min(ais) / 2 * (max(ais) * 4 / (min(ais) / 2)) ** (i / 100) for i in range(101)]
    right.plot(grid, [min(dev.fp32_peak_gflops, a * dev.peak_bw_gb_s) for a in grid],
               color="gray", label=f"roof ({dev.peak_bw_gb_s:g} GB/s)")
    for backend in dict.fromkeys(v.case.backend for v in views):
        mine = [v for v in views if v.case.backend == backend]
        right.plot([v.traffic.arithmetic_intensity for v in mine],
                   [v.traffic.flops / (v.time_ms * 1e-3) / GB for v in mine], "o",
                   label=backend)
    right.set(xscale="log", yscale="log", xlabel="AI (FLOP/byte)", ylabel="GFLOP/s",
              title="Timed cases on the roofline")
    right.legend(fontsize=7)
    return _save(fig, path)


def slice_figure(runset: RunSet, views: Sequence[OpView], path: Path) -> Path:
    """Measured times per workload and backend (markers) against the bounds (ticks)."""
    dram, l2 = runset.device.peak_bw_gb_s, _l2_bw(runset)
    keys = list(dict.fromkeys(_slice_key(v) for v in views))
    fig, (ax,) = _canvas(max(6.0, 0.9 * len(keys) + 3), 4.5)
    for backend in dict.fromkeys(v.case.backend for v in views):
        xs, ys = zip(*[(keys.index(_slice_key(v)), v.time_ms) for v in views
                       if v.case.backend == backend], strict=True)
        line, = ax.plot(xs, ys, "o", label=backend)
        kernel = [(keys.index(_slice_key(v)), _kernel_ms(v.case, SCATTER_KERNEL)) for v in views
                  if v.case.backend == backend and _kernel_ms(v.case, SCATTER_KERNEL)]
        if kernel:
            kx, ky = zip(*kernel, strict=True)
            ax.plot(kx, ky, "o", markerfacecolor="none", color=line.get_color(),
                    label=f"{backend}: kernel only")
    first = {k: next(v for v in views if _slice_key(v) == k) for k in keys}
    bounds = [("dense (whole call)", lambda t: dense_bound_ms(t, dram), "black"),
              ("streaming (kernel)", lambda t: streaming_bound_ms(t, dram), "gray")]
    if l2:
        bounds += [("32-B sector (kernel)", lambda t: sector_scatter_bound_ms(t, dram, l2),
                    "tab:blue"),
                   ("32-B sector RMW in DRAM (kernel)", lambda t: sector_rmw_bound_ms(t, dram),
                    "tab:green"),
                   ("seed 128-B line (kernel)", lambda t: seed_line_bound_ms(t, dram, l2),
                    "tab:red")]
    for label, fn, color in bounds:
        ax.plot(range(len(keys)), [fn(first[k].traffic) for k in keys], "_", color=color,
                markersize=22, markeredgewidth=2, label=f"{label} bound")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([" ".join(k) for k in keys], rotation=30, ha="right", fontsize=7)
    ax.set(yscale="log", ylabel="ms", title="Row slicing: times against the bounds")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, path)


# ----------------------------------------------------------------------------- assembly

def outcome_markdown(runset: RunSet, ops: Sequence[str]) -> str:
    rows = [[c.op, c.matrix, c.backend, c.outcome, c.reason] for c in runset.cases
            if c.op in ops and c.outcome != "ok"]
    return md_table(["op", "matrix", "backend", "outcome", "reason"], rows) if rows else \
        "Every case ran and passed its correctness check."


def _spmm_key(v: OpView) -> tuple:
    return (v.case.matrix, f"k={v.traffic.k}", v.traffic.layout)


def _slice_key(v: OpView) -> tuple:
    return (v.case.matrix, f"rows={v.traffic.selected_rows}", v.traffic.weights)


def _view_key(v: OpView) -> tuple:
    return _spmm_key(v) if v.case.op == "spmm" else _slice_key(v)


def ops_sections(runset: RunSet, *, profiles: Sequence[Any] = (),
                 labels: Sequence[str] | None = None,
                 figures_dir: str | os.PathLike | None = None) -> OpsReport:
    """The SpMM and slice sections of ``runset`` (only ops present get sections); figures are
    written into ``figures_dir`` (e.g. ``<report>/figures``) when given."""
    sections, figures, tables = [], [], {}
    fig_dir = Path(figures_dir) if figures_dir is not None else None
    present = {c.op for c in runset.cases}
    if "spmm" in present:
        views = op_views(runset, "spmm")
        rows = spmm_rows(runset, views)
        tables["ops_spmm"] = rows
        text = md_table(["matrix", "k", "layout", "backend", "ms", "GFLOP/s", "GB/s",
                         "AI", "bound ms", "% of bound", "rel err"],
                        [list(r.values()) for r in rows]) if rows else "No SpMM case was timed."
        peers = peer_rows(views, "spmm", _spmm_key)
        tables["ops_spmm_peers"] = peers
        intensity, ai_rows = intensity_markdown(runset, views)
        tables["ops_spmm_intensity"] = ai_rows
        kernels = profiled_cases(views, profiles, labels)
        tables["ops_spmm_profiled"] = kernels
        text += "\n\n" + _peer_markdown(peers, "SpMM", {r["case"] for r in kernels}
                                         if profiles else None)
        explained = unprofiled_losses(peers, views, kernels)
        if explained:
            text += "\n\n" + explained
        if fig_dir is not None and views:
            figures.append(spmm_figure(runset, views, fig_dir / "ops_spmm_roofline.png"))
            text += "\n\n![SpMM: AI against k, and the timed cases on the roofline]" \
                    "(figures/ops_spmm_roofline.png)"
        sections.append(("SpMM: time, bandwidth and % of bound", text))
        sections.append(("SpMM: arithmetic intensity against k", intensity))
        if kernels:
            sections.append(("SpMM: profiled kernels per case", _profiled_markdown(kernels)))
    if "slice" in present:
        views = op_views(runset, "slice")
        rows = slice_rows_table(runset, views)
        tables["ops_slice"] = rows
        text = md_table(["matrix", "rows", "weights", "backend", "ms", "kernel ms", "GB/s",
                         "streaming ms", "dense ms", "sector ms", "sector RMW ms",
                         "seed line ms", "% of dense bound", "sectors/write"],
                        [list(r.values()) for r in rows]) if rows else "No slice case was timed."
        peers = peer_rows(views, "slice", _slice_key)
        tables["ops_slice_peers"] = peers
        kernels = profiled_cases(views, profiles, labels)
        tables["ops_slice_profiled"] = kernels
        text += "\n\n" + _peer_markdown(peers, "slice", {r["case"] for r in kernels}
                                         if profiles else None)
        if fig_dir is not None and views:
            figures.append(slice_figure(runset, views, fig_dir / "ops_slice_bounds.png"))
            text += "\n\n![Slice: measured times against the four bounds]" \
                    "(figures/ops_slice_bounds.png)"
        sections.append(("Slice: time, bandwidth and % of bound", text))
        sections.append(("Slice: which bound the measurements support",
                         bound_verdict(runset, views, profiles, labels)))
        if kernels:
            sections.append(("Slice: profiled kernels per case", _profiled_markdown(kernels)))
    ops = [op for op in OPS if op in present]
    if profiles and ops:
        roof, written = roofline_markdown(runset, profiles, labels, fig_dir)
        figures += written
        names = {"spmm": "SpMM", "slice": "Slice"}
        sections.append((" and ".join(names[o] for o in ops) + ": instruction roofline", roof))
    if ops:
        sections.append(("SpMM and slice: skipped and failed cases", outcome_markdown(runset,
                                                                                       ops)))
    return OpsReport(tuple(sections), tuple(figures), tables)


def write_ops_report(runset: RunSet, out_dir: str | os.PathLike, *, profiles: Sequence[Any] = (),
                     labels: Sequence[str] | None = None, progress: bool = False):
    """Figures and op tables into ``out_dir``, then ``write_report`` with the op sections.

    The main report's SpMV tables get the run's ``spmv`` cases only (its byte model is SpMV's);
    ``results.json`` keeps every case.
    """
    from sparsescope._atomic import write_json_atomic
    from sparsescope.report.write import write_report

    out = Path(out_dir)
    report = ops_sections(runset, profiles=profiles, labels=labels,
                          figures_dir=out / "figures")
    for name, rows in report.tables.items():
        write_json_atomic(out / "tables" / f"{name}.json", {"name": name, "rows": rows})
    spmv_only = replace(runset, cases=tuple(c for c in runset.cases if c.op == "spmv"))
    ops = [op for op in dict.fromkeys(c.op for c in runset.cases) if op != "spmv"]
    label = ", ".join({"spmm": "SpMM", "slice": "CSR row slicing"}.get(o, o) for o in ops)
    note = None
    if ops and not spmv_only.cases:
        note = (f"**This run measured {label}.** Its results are in the sections after the "
                "SpMV ones; the SpMV tables (timing, floor, Little's law, DAE) hold no case of "
                "this run and are kept for the matrices, the device and the model.")
    return write_report(spmv_only, out, extra_sections=report.sections, progress=progress,
                        ops_label=label or None, note=note,
                        backends_label=", ".join(dict.fromkeys(c.backend for c in runset.cases)))
