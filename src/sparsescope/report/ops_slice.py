"""The CSR row-slicing sections: time, bandwidth and % of the dense-output bound of every case;
the five bounds of ``model.slice_rows`` for each workload; which bound the measurements support
(the scatter kernel's own time, memset excluded, as seed 003 timed it), seed 003's 128-byte-line
model held against them, and -- with ncu profiles -- the scatter kernel's DRAM and L2 sectors
against what each model predicts; their figure.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from sparsescope.report.ops_common import (
    OpsReport,
    OpView,
    canvas,
    figure_markdown,
    kernel_ms,
    l2_bw_gb_s,
    md_table,
    peer_rows,
    save_png,
    slice_key,
    timed_markdown,
)
from sparsescope.report.ops_profiled import case_profiles, profiled_cases, with_profiled
from sparsescope.results.records import RunSet
from sparsescope.timing.modes import mode_suffix

SCATTER_KERNEL = "slice_scatter"
RMW_BOUND = "32-byte sector read + write-back in DRAM"


def slice_rows_table(runset: RunSet, views: Sequence[OpView]) -> list[dict]:
    dram, l2 = runset.device.peak_bw_gb_s, l2_bw_gb_s(runset)
    rows = []
    for v in views:
        t = v.traffic
        dense = dense_bound_ms(t, dram)
        rows.append({
            "matrix": v.case.matrix, "rows_selected": t.selected_rows, "weights": t.weights,
            "backend": v.case.backend, "time_ms": v.time_ms,
            "kernel_ms": kernel_ms(v.case, SCATTER_KERNEL),
            "eff_bw_gb_s": v.model.peak.eff_bw_gb_s,
            "streaming_bound_ms": streaming_bound_ms(t, dram), "dense_bound_ms": dense,
            "sector_bound_ms": sector_scatter_bound_ms(t, dram, l2) if l2 else None,
            "sector_rmw_bound_ms": sector_rmw_bound_ms(t, dram),
            "seed_line_bound_ms": seed_line_bound_ms(t, dram, l2) if l2 else None,
            "pct_of_dense_bound": 100.0 * dense / v.time_ms,
            "sectors_per_write": t.sector_writes / t.nnz_selected if t.nnz_selected else None})
    return rows


def bound_verdict(runset: RunSet, views: Sequence[OpView], profiles: Sequence[Any] = (),
                  labels: Sequence[str] | None = None) -> str:
    """Which kernel-only bound the scatter kernel's times support (seed 003's question), and,
    with profiles of the scatter kernel, its DRAM and L2 sectors against each model."""
    dram, l2 = runset.device.peak_bw_gb_s, l2_bw_gb_s(runset)
    # the scatter kernel by the kernel it launches (seed 003's form), not by a backend's name
    scatter = [v for v in views if kernel_ms(v.case, SCATTER_KERNEL) is not None]
    if not scatter:
        return (f"No case launching ``{SCATTER_KERNEL}`` was timed in this run, so the scatter "
                "bounds cannot be held against seed 003's kernel form (a GPU run times it).")
    if l2 is None:
        return "The run measured no L2 bandwidth: the scatter bounds cannot be computed."
    times, source = [], "kernel time from the breakdown (memset excluded, as seed 003 timed)"
    for v in scatter:
        kernel = kernel_ms(v.case, SCATTER_KERNEL)
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
        for p in case_profiles(v, profiles, labels):
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


def slice_figure(runset: RunSet, views: Sequence[OpView], path: Path) -> Path:
    """Measured times per workload and backend (markers) against the bounds (ticks)."""
    dram, l2 = runset.device.peak_bw_gb_s, l2_bw_gb_s(runset)
    keys = list(dict.fromkeys(slice_key(v) for v in views))
    fig, (ax,) = canvas(max(6.0, 0.9 * len(keys) + 3), 4.5)
    for backend in dict.fromkeys(v.case.backend for v in views):
        xs, ys = zip(*[(keys.index(slice_key(v)), v.time_ms) for v in views
                       if v.case.backend == backend], strict=True)
        line, = ax.plot(xs, ys, "o", label=backend)
        kernel = [(keys.index(slice_key(v)), kernel_ms(v.case, SCATTER_KERNEL)) for v in views
                  if v.case.backend == backend and kernel_ms(v.case, SCATTER_KERNEL)]
        if kernel:
            kx, ky = zip(*kernel, strict=True)
            ax.plot(kx, ky, "o", markerfacecolor="none", color=line.get_color(),
                    label=f"{backend}: kernel only")
    first = {k: next(v for v in views if slice_key(v) == k) for k in keys}
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
    return save_png(fig, path)


def slice_sections(runset: RunSet, views: Sequence[OpView], profiles: Sequence[Any],
                   labels: Sequence[str] | None, fig_dir: Path | None) -> OpsReport:
    """The slice sections of ``runset`` (``views``: its timed slice cases), the figure into
    ``fig_dir`` when given, and the tables ``ops_slice``, ``ops_slice_peers`` and
    ``ops_slice_profiled``."""
    rows = slice_rows_table(runset, views)
    peers = peer_rows(views, slice_key)
    kernels = profiled_cases(views, profiles, labels, slice_key)
    text = timed_markdown(["matrix", "rows", "weights", "backend",
                           f"ms{mode_suffix(runset.timing)}", "kernel ms", "GB/s",
                           "streaming ms", "dense ms", "sector ms", "sector RMW ms",
                           "seed line ms", "% of dense bound", "sectors/write"], rows, "slice",
                          peers, kernels, bool(profiles))
    link, figures = figure_markdown(fig_dir, views, "ops_slice_bounds.png",
                                    "Slice: measured times against the four bounds",
                                    lambda path: slice_figure(runset, views, path))
    sections = with_profiled("Slice", [("Slice: time, bandwidth and % of bound", text + link),
                                       ("Slice: which bound the measurements support",
                                        bound_verdict(runset, views, profiles, labels))],
                             kernels)
    return OpsReport(sections, figures,
                     {"ops_slice": rows, "ops_slice_peers": peers, "ops_slice_profiled": kernels})


def slice_section(runset: RunSet, inputs):
    """Row slicing's section of the report (registered in ``sparsescope.registry``)."""
    from sparsescope.report.ops_sections import markdown_op_section

    return markdown_op_section(runset, inputs, "slice", "CSR row slicing", slice_sections)
