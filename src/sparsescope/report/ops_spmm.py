"""The SpMM sections: time, GFLOP/s, effective bandwidth and % of the roofline bound of every
timed case (a dense baseline named as the break-even peer it is); our kernel against the best
sparse library at each (matrix, k, layout), with the nearest
profiled case where a loss was not profiled; the arithmetic-intensity-against-k table of each
matrix (``model.spmm``); their figure; the dense break-even where ``spmm-cublas-dense`` was
timed beside a sparse backend (``report.break_even``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparsescope.model.spmm import NOT_A_FLOOR, intensity_table, memory_bound, spmm_bound_ms
from sparsescope.model.spmv import GB
from sparsescope.report.break_even import backend_title
from sparsescope.report.break_even_render import spmm_break_even
from sparsescope.report.ops_common import (
    OpsReport,
    OpView,
    canvas,
    figure_markdown,
    fmt_cell,
    md_table,
    peer_rows,
    save_png,
    spmm_key,
    timed_markdown,
)
from sparsescope.report.ops_profiled import profiled_cases, with_profiled
from sparsescope.results.records import RunSet
from sparsescope.timing.modes import mode_suffix

KS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def memory_rates(runset: RunSet) -> tuple[float, float | None]:
    """(DRAM, L2) bandwidth in GB/s for the memory bound: the run's measured read (else copy)
    bandwidth and L2 bandwidth, the datasheet peak where none was measured (L2: None)."""
    from sparsescope.model.predict import device_rates

    rates = device_rates(runset.device, runset.ceilings)
    return rates.dram_bw_gb_s, rates.l2_bw_gb_s


def spmm_rows(runset: RunSet, views: Sequence[OpView]) -> list[dict]:
    """One row per timed case: time, GFLOP/s, bandwidth, AI, the roofline bound (datasheet
    peak) and its %, and the better of the DRAM and L2 bounds at the run's measured rates
    (``model.spmm.memory_bound``) and its %."""
    dev = runset.device
    dram_bw, l2_bw = memory_rates(runset)
    rows = []
    for v in views:
        t = v.traffic
        bound = spmm_bound_ms(t, dev.peak_bw_gb_s, dev.fp32_peak_gflops)
        memory = memory_bound(t, dram_bw, l2_bw)
        rows.append({"matrix": v.case.matrix, "k": t.k, "layout": t.layout,
                     "backend": v.case.backend, "time_ms": v.time_ms,
                     "gflops": v.model.peak.gflops,
                     "eff_bw_gb_s": v.model.peak.eff_bw_gb_s,
                     "ai_flop_per_byte": t.arithmetic_intensity, "bound_ms": bound,
                     "pct_of_bound": 100.0 * bound / v.time_ms,
                     "memory_bound_ms": memory.bound_ms,
                     "memory_bound_by": f"{memory.binding}, {memory.strategy}",
                     "pct_of_memory_bound": memory.pct_of(v.time_ms),
                     "rel_err": v.case.correctness.rel_err if v.case.correctness else None,
                     "precision": precision_label(v.case.notes, t.value_bytes)})
    return rows


def precision_label(notes: dict, value_bytes: int) -> str:
    """What the products ran in: a kernel's ``precision`` note's first word (the tensor-core
    kernel's ``3xTF32`` or ``TF32``), else the value type (``float32``, ``float64``)."""
    note = notes.get("precision", "")
    return note.split(" ")[0] if note else ("float64" if value_bytes == 8 else "float32")


def faster_than_bound(rows: Sequence[dict], shown: int = 8) -> str:
    """A paragraph naming the cases that ran faster than their memory bound (% > 100), or ""
    when none did: there the bound is not a floor, and the report says so rather than print a
    share above 100 % without a word."""
    broken = [r for r in rows if r["pct_of_memory_bound"] > 100]
    if not broken:
        return ""
    names = "; ".join(f"{r['matrix']} k={r['k']} {r['layout']} {r['backend']} "
                      f"({r['pct_of_memory_bound']:.0f} %)" for r in broken[:shown])
    more = f"; and {len(broken) - shown} more" if len(broken) > shown else ""
    return (f"**Faster than the memory bound** in {len(broken)} of {len(rows)} cases: "
            f"{names}{more}. {NOT_A_FLOOR}")


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
                     and " ".join(spmm_key(v)) == loss["case"]), None)
        text = (f"- **{loss['case']}** ({loss['speedup_x']:.2f}x): at k={k_near} (profiled) our "
                f"`{own['main_kernel']}` alone takes {own['main_us']:.2f} µs at "
                f"{fmt_cell(own['main_achieved_occupancy_pct'], '.1f')} % achieved occupancy "
                f"({own['main_grid_blocks']} blocks of {own['main_block_threads']} threads)")
        if peer is not None:
            text += (f", {loss['best_peer']}'s `{peer['main_kernel']}` {peer['main_us']:.2f} "
                     f"µs at {fmt_cell(peer['main_achieved_occupancy_pct'], '.1f')} % "
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


def spmm_figure(runset: RunSet, views: Sequence[OpView], path: Path) -> Path:
    """(a) AI against k per matrix (compulsory and row-major gather); (b) the timed cases on
    the roofline of the device (GFLOP/s against compulsory AI)."""
    dev = runset.device
    fig, (left, right) = canvas(11.0, 4.2, 2)
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
                   label=backend_title(backend))
    right.set(xscale="log", yscale="log", xlabel="AI (FLOP/byte)", ylabel="GFLOP/s",
              title="Timed cases on the roofline")
    right.legend(fontsize=7)
    return save_png(fig, path)


def spmm_sections(runset: RunSet, views: Sequence[OpView], profiles: Sequence[Any],
                  labels: Sequence[str] | None, fig_dir: Path | None) -> OpsReport:
    """The SpMM sections of ``runset`` (``views``: its timed SpMM cases), the figure into
    ``fig_dir`` when given, and the tables ``ops_spmm``, ``ops_spmm_peers``,
    ``ops_spmm_intensity`` and ``ops_spmm_profiled``."""
    rows = spmm_rows(runset, views)
    peers = peer_rows(views, spmm_key)
    intensity, ai_rows = intensity_markdown(runset, views)
    kernels = profiled_cases(views, profiles, labels, spmm_key)
    text = timed_markdown(["matrix", "k", "layout", "backend",
                           f"ms{mode_suffix(runset.timing)}", "GFLOP/s", "GB/s", "AI",
                           "bound ms", "% of bound", "memory bound ms", "by",
                           "% of memory bound", "rel err", "precision"],
                          [{**r, "backend": backend_title(r["backend"])} for r in rows], "SpMM",
                          peers, kernels, bool(profiles))
    dram_bw, l2_bw = memory_rates(runset)
    peak = runset.device.peak_bw_gb_s
    text = (f"bound = max(compulsory bytes / {peak:g} GB/s, flops / FP32 peak) "
            f"(datasheet); memory bound = max(compulsory bytes / {dram_bw:,.0f} GB/s, gather "
            f"bytes / {f'{l2_bw:,.0f} GB/s' if l2_bw else 'L2 unknown'}) at the run's measured "
            "DRAM and L2 bandwidth (`model.spmm.memory_bound`: the better of the DRAM and L2 "
            "bounds for the traffic model's bytes).\n\n" + text)
    for extra in (faster_than_bound(rows), unprofiled_losses(peers, views, kernels)):
        if extra:
            text += "\n\n" + extra
    link, figures = figure_markdown(fig_dir, views, "ops_spmm_roofline.png",
                                    "SpMM: AI against k, and the timed cases on the roofline",
                                    lambda path: spmm_figure(runset, views, path))
    parts = [("SpMM: time, bandwidth and % of bound", text + link),
             ("SpMM: arithmetic intensity against k", intensity)]
    choice, choice_rows = auto_choice_markdown(views)
    if choice:
        parts.append(("SpMM: how spmm-cuda-auto chose", choice))
    dense, dense_figures, dense_tables = spmm_break_even(views, fig_dir)
    if dense:
        parts.append(("SpMM: the dense break-even", dense))
    sections = with_profiled("SpMM", parts, kernels)
    return OpsReport(sections, (*figures, *dense_figures),
                     {"ops_spmm": rows, "ops_spmm_peers": peers,
                      "ops_spmm_intensity": ai_rows, "ops_spmm_profiled": kernels,
                      **({"ops_spmm_auto_choice": choice_rows} if choice else {}),
                      **dense_tables})


def auto_choice_markdown(views: Sequence[OpView]) -> tuple[str, list[dict]]:
    """``spmm-cuda-auto``'s prediction tables (``report.selection_tables``), one block of rows
    per (matrix, k, layout), as Markdown and JSON rows; ("", []) when no auto case kept one."""
    import dataclasses

    from sparsescope.report.markdown import table_markdown
    from sparsescope.report.selection_tables import choice_rows, choice_table

    rows = choice_rows((v.case for v in views), "spmm-cuda-auto",
                       lambda c: f"{c.matrix} k={c.params.k} {c.params.layout}")
    table = choice_table(rows, "spmm-cuda-auto", "ops_spmm_auto_choice", "cases")
    if table is None:
        return "", []
    return (f"{table.reading}\n\n*{table.basis}*\n\n{table_markdown(table)}",
            [dataclasses.asdict(r) for r in rows])


def spmm_section(runset: RunSet, inputs):
    """SpMM's section of the report (registered in ``sparsescope.registry``)."""
    from sparsescope.report.ops_sections import markdown_op_section

    return markdown_op_section(runset, inputs, "spmm", "SpMM", spmm_sections)
