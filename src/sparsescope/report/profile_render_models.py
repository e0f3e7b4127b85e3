"""Markdown pieces of the profile section that rest on models and ceilings: hottest instructions,
DAE estimates, Little's law, the instruction / shared-memory / FLOP-per-byte rooflines and the
table of ceilings; plus the formatting helpers :mod:`sparsescope.report.profile_render` shares."""

from __future__ import annotations

from collections.abc import Sequence

from sparsescope.profile import metrics as M
from sparsescope.profile.ceilings import Ceiling, RooflineCeilings
from sparsescope.profile.hotspots import KernelHotspots
from sparsescope.profile.instruction_roofline import InstructionCeilings, instruction_roofline
from sparsescope.profile.records import KernelProfile

NA = "n/a"


def f(value: float | int | None, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return NA
    if isinstance(value, int):
        return f"{value:,}{suffix}"
    return f"{value:,.{digits}f}{suffix}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _absent(profile: KernelProfile, metric: str) -> bool:
    return metric not in profile.metrics


def missing_note(items, profiles: Sequence[KernelProfile], names: Sequence[str]) -> str:
    """A note naming, for each ``n/a`` cell whose metrics the profile lacks, the row, the
    metrics and the kernels. ``items``: (row label, cells, groups), a group being alternative
    metric names of which one is needed."""
    lines = []
    for label, cells, groups in items:
        by_missing: dict[tuple[str, ...], list[str]] = {}
        for cell, p, name in zip(cells, profiles, names, strict=True):
            if cell != NA:
                continue
            missing = tuple(g[0] for g in groups if all(_absent(p, m) for m in g))
            if missing:
                by_missing.setdefault(missing, []).append(name)
        for missing, kernels in by_missing.items():
            lines.append(f"- {label}: " + ", ".join(f"`{m}`" for m in missing)
                         + f" ({', '.join(kernels)})")
    if not lines:
        return ""
    return ("\n\n*n/a where the profile lacks the metric (another metric set or ncu version); "
            "not in the profile:*\n\n" + "\n".join(lines))


# --- hottest instructions ------------------------------------------------------------------------

def hotspots_section(hotspots: Sequence[KernelHotspots] | None) -> str:
    if not hotspots:
        return ("No per-instruction samples: give a `.ncu-rep` profiled with the SourceCounters "
                "section (the `source` group, a default, or `--set full`), or a raw CSV with its "
                "`_source.csv` export beside it.")
    parts = []
    for h in hotspots:
        shares = ", ".join(f"{k} {100.0 * v / h.total_samples:.0f}%"
                           for k, v in list(h.reason_totals.items())[:4] if v)
        chains = (f"{h.chain_pct:.0f}% on the {h.load_chains} dependent global-load pair(s) "
                  "the SASS analysis found (producer, address arithmetic, consumer and its "
                  "users)." if h.load_chains else "no dependent global-load pair found.")
        head = f"**{h.kernel}**: {h.total_samples:,} warp-stall samples ({shares}); {chains}"
        if h.note:
            head += f" *{h.note}*"
        rows = [[f"`{r.offset:#06x}`", f"`{r.sass}`", f(r.samples), f(r.pct_of_samples, 1, "%"),
                 r.dominant_reason,
                 ", ".join(f"{k} {v}" for k, v in list(r.reasons.items())[:3]),
                 r.role or "", f(r.executed)] for r in h.rows]
        parts.append(head + "\n\n" + table(
            ["Offset", "SASS", "Samples", "% of kernel", "Dominant stall", "Reasons (samples)",
             "Load-chain role", "Warp executions"], rows))
    return "\n\n".join(parts)


# --- DAE and Little's law -------------------------------------------------------------------------

def _ceiling_text(c: Ceiling | None, unit: str) -> str:
    return NA if c is None else f"{c.value:,.0f} {unit} ({c.kind})"


def dae_section(profiles, names, rc: RooflineCeilings) -> str:
    from sparsescope.profile.latency import dae_estimates

    rows = dae_estimates(profiles, names, rc)
    if not rows:
        return ("No CPI and Long Scoreboard figures, and no DRAM traffic with a bandwidth and "
                "latency to compare it with, in these profiles.")
    text = ("Seed 000 section 7.7's two estimates of a decoupled access-execute unit, from "
            "measured figures. CPI-based: the speedup if Long Scoreboard stalls vanished, "
            "CPI / (CPI - long_scoreboard). Bandwidth-based: DAE keeps one line per warp in "
            "flight again (doubling the achieved DRAM bandwidth) up to the Little's-law ceiling "
            f"of 100 % occupancy; bandwidth {_ceiling_text(rc.dram_gb_s, 'GB/s')}, latency "
            f"{_ceiling_text(rc.dram_latency_ns, 'ns')}.\n\n")
    return text + table(
        ["Kernel", "CPI", "Long Scoreboard", "CPI-based speedup", "DRAM achieved",
         "Little's-law ceiling", "BW-based speedup", "Limited by"],
        [[r.kernel, f(r.cpi, 2), f(r.long_scoreboard, 2),
          NA if r.cpi_speedup is None else f"**{r.cpi_speedup:.2f}x**",
          f(r.achieved_pct, 1, "%"), f(r.bw_ceiling_pct, 1, "%"),
          NA if r.bw_speedup is None else f"**{r.bw_speedup:.2f}x**" if r.bw_speedup >= 1
          else "no gain: limited by the Little's-law ceiling" if r.limited_by == "littles_law"
          else f"no gain: limited by {r.limited_by.replace('_', ' ')}",
          r.limited_by.replace("_", " ")] for r in rows])


def littles_law_section(profiles, names, rc: RooflineCeilings) -> str:
    from sparsescope.profile.latency import littles_law_checks

    rows = littles_law_checks(profiles, names, rc)
    if not rows:
        need = []
        if rc.dram_gb_s is None or rc.dram_latency_ns is None or not rc.sm_count:
            need.append("a DRAM bandwidth, latency and SM count (results file, store or spec "
                        "table)")
        if all(p.achieved_occupancy_pct is None and p.value(*M.ACTIVE_WARPS_PER_SM) is None
               for p in profiles):
            need.append(f"the occupancy (`{M.ACHIEVED_OCCUPANCY_PCT}`)")
        return "Not computed: needs " + " and ".join(need or ["the occupancy"]) + "."
    text = (f"Bandwidth {_ceiling_text(rc.dram_gb_s, 'GB/s')}, DRAM latency "
            f"{_ceiling_text(rc.dram_latency_ns, 'ns')}, {rc.sm_count} SMs, one 128-byte line "
            "in flight per warp: required warps/SM = bw x latency / SMs / 128 B. The ceiling "
            "at the measured active warps, and half of it for the dependent col -> x chain; "
            "lines in flight per warp = achieved bandwidth x latency / SMs / 128 B / active "
            "warps.\n\n")
    return text + table(
        ["Kernel", "Active warps/SM", "Required warps/SM", "Ceiling (1 line/warp)",
         "Chain ceiling", "DRAM achieved", "Lines in flight/warp", "Reading"],
        [[r.kernel, f(r.active_warps_per_sm, 1), f(r.required_warps_per_sm, 1),
          f(r.ceiling_pct, 1, "%"), f(r.chain_ceiling_pct, 1, "%"),
          NA if r.achieved_gb_s is None else f"{r.achieved_gb_s:,.0f} GB/s "
          f"({f(r.achieved_pct, 1, '%')})", f(r.lines_in_flight_per_warp, 2), r.verdict]
         for r in rows])


# --- rooflines ----------------------------------------------------------------------------------

_ROOFLINE_GROUPS = (M.WARP_INST, (M.DURATION_NS,))


def roofline_section(profiles, names, ceilings: InstructionCeilings, figures) -> str:
    from sparsescope.profile.instruction_roofline import BANK_CONFLICT_WALLS

    points = instruction_roofline(profiles, names)
    without = [n for p, n in zip(profiles, names, strict=True)
               if any(all(_absent(p, m) for m in g) for g in _ROOFLINE_GROUPS)]
    if not points:
        return ("No instruction-roofline metrics (`smsp__inst_executed.sum`, "
                "`gpu__time_duration.sum`): collect `instruction-roofline` or `--set full`.")
    rows = [[p.kernel, f(p.warp_gips, 1), f(p.thread_gips, 1), f(p.predicated_on_gips, 1),
             f(p.active_lanes_pct, 1, "%"), f(p.predicated_on_pct, 1, "%"),
             f(p.l1_intensity, 3), f(p.l2_intensity, 3), f(p.dram_intensity, 3),
             f(p.global_intensity, 4)] for p in points]
    text = ("Ding & Williams' hierarchical instruction roofline: warp instructions per 32-byte "
            "transaction at each memory level, against warp GIPS. Global ld/st intensity compares "
            "with the walls stride-0 = 1, stride-1 = 0.25, stride-8 = 0.031. Thread-level GIPS "
            "(thread instructions / 32, all and predicated on) below the warp GIPS measure "
            "idle and predicated-off lanes.\n\n")
    text += table(["Kernel", "Warp GIPS", "Thread GIPS", "Predicated-on GIPS", "Active lanes",
                   "Predicated-on lanes", "II L1", "II L2", "II DRAM", "II global ld/st"], rows)
    text += missing_note(
        [("L1 / global intensity", [NA if p.l1_intensity is None else "" for p in points],
          (M.GLOBAL_LD_SECTORS, M.GLOBAL_ST_SECTORS, M.SHARED_LD_WAVEFRONTS,
           M.SHARED_ST_WAVEFRONTS)),
         ("L2 intensity", [NA if p.l2_intensity is None else "" for p in points],
          (tuple(g[0] for g in M.L2_SECTOR_OPS),)),
         ("DRAM intensity", [NA if p.dram_intensity is None else "" for p in points],
          tuple((m,) for m in M.DRAM_SECTORS)),
         ("Thread GIPS", [NA if p.thread_gips is None else "" for p in points],
          (M.THREAD_INST,))],
        [p for p, n in zip(profiles, names, strict=True) if n in {q.kernel for q in points}],
        [p.kernel for p in points])
    if without:
        text += ("\n\n*Not placed (no `smsp__inst_executed.sum` or `gpu__time_duration.sum`): "
                 + ", ".join(without) + ".*")
    items = (("Peak warp GIPS", ceilings.peak_warp_gips, "peak_warp_gips"),
             ("L1 (G sectors/s)", ceilings.l1_gtxn_s, "l1"),
             ("L2 (G sectors/s)", ceilings.l2_gtxn_s, "l2"),
             ("DRAM (G sectors/s)", ceilings.dram_gtxn_s, "dram"),
             ("Shared (G wavefronts/s)", ceilings.shared_gtxn_s, "shared"))
    text += "\n\nCeilings:\n\n" + "\n".join(
        f"- {label}: {f(value, 1)}"
        + (f" ({ceilings.kinds[key]})" if key in ceilings.kinds else "")
        + (f" — {ceilings.sources[key]}" if key in ceilings.sources else "")
        for label, value, key in items)
    if "instruction_roofline" in figures:
        text += f"\n\n![Hierarchical instruction roofline]({figures['instruction_roofline']})"
    shared = [p for p in points if p.shared_intensity]
    if shared:
        walls = ", ".join(f"{k} = {v:g}" for k, v in BANK_CONFLICT_WALLS.items())
        text += ("\n\nShared-memory roofline: shared ld/st warp instructions per wavefront "
                 f"(walls {walls}) against their GIPS.\n\n" + table(
                     ["Kernel", "Shared ld/st instructions", "Wavefronts",
                      "Instructions per wavefront", "Shared GIPS"],
                     [[p.kernel, f(p.shared_instructions, 0), f(p.shared_wavefronts, 0),
                       f(p.shared_intensity, 3), f(p.shared_gips, 2)] for p in shared]))
        if "shared_roofline" in figures:
            text += f"\n\n![Shared-memory instruction roofline]({figures['shared_roofline']})"
    return text


def _binding(point, rc: RooflineCeilings) -> tuple[str, float | None]:
    """(ceiling that binds at the point's intensities, % of it reached)."""
    peak = rc.fp64_gflops if point.precision == "fp64" else rc.fp32_gflops
    bounds = [("compute", peak.value)] if peak is not None else []
    for name, ai, c in (("L1", point.l1_ai, rc.l1_gb_s), ("L2", point.l2_ai, rc.l2_gb_s),
                        ("DRAM", point.dram_ai, rc.dram_gb_s)):
        if ai and c is not None:
            bounds.append((name, ai * c.value))
    if not bounds:
        return NA, None
    name, value = min(bounds, key=lambda b: b[1])
    return name, 100.0 * point.gflops / value


def classic_section(profiles, names, rc: RooflineCeilings, figures) -> str:
    from sparsescope.profile.classic_roofline import classic_roofline

    points = classic_roofline(profiles, names)
    if not points:
        return ("No FLOP counters (`smsp__sass_thread_inst_executed_op_{ffma,fadd,fmul}_pred_on`"
                ", `.sum` or `.sum.per_cycle_elapsed` with `smsp__cycles_elapsed.avg`) or no "
                "FLOPs in these profiles: collect `instruction-roofline` or `--set full`.")
    rows = []
    for p in points:
        name, pct = _binding(p, rc)
        rows.append([p.kernel, p.precision.upper(), f(p.flops / 1e6, 2), f(p.gflops, 1),
                     f(p.l1_ai, 3), f(p.l2_ai, 3), f(p.dram_ai, 3),
                     f"{name} ({f(pct, 1, '%')} of it)"])
    text = ("FLOPs (FMA = 2, predicated-on thread instructions) per byte moved at L1 (global "
            "sectors x 32 + shared wavefronts x 128), L2 and DRAM (sectors x 32), against "
            "GFLOP/s; the binding ceiling is the lowest of the FLOP peak and bandwidth x "
            "intensity at each level.\n\n")
    text += table(["Kernel", "Precision", "MFLOP", "GFLOP/s", "AI L1", "AI L2", "AI DRAM",
                   "Binding ceiling"], rows)
    if "classic_roofline" in figures:
        text += f"\n\n![Hierarchical roofline (FLOP/byte)]({figures['classic_roofline']})"
    return text


def ceilings_section(rc: RooflineCeilings, inst: InstructionCeilings) -> str:
    """Every ceiling with its kind and source: ``measured`` (the run's measured ceilings),
    ``spec`` (datasheet table), ``ncu peak`` (the profile's own peak metrics)."""
    items = (("Peak warp instructions", rc.warp_gips, "GIPS"), ("L1", rc.l1_gb_s, "GB/s"),
             ("Shared memory", rc.shared_gb_s, "GB/s"), ("L2", rc.l2_gb_s, "GB/s"),
             ("DRAM", rc.dram_gb_s, "GB/s"), ("FP32", rc.fp32_gflops, "GFLOP/s"),
             ("FP64", rc.fp64_gflops, "GFLOP/s"), ("DRAM latency", rc.dram_latency_ns, "ns"))
    rows = [[label, NA if c is None else f"{c.value:,.1f} {unit}",
             NA if c is None else c.kind, "" if c is None else c.source.replace("|", "/")]
            for label, c, unit in items]
    device = rc.device or "unknown device"
    return (f"{device}, {rc.sm_count or NA} SMs. Measured values come from the results file or "
            "store, `spec` from the datasheet table, `ncu peak` from the profile's own "
            "`*.peak_sustained` metrics.\n\n"
            + table(["Ceiling", "Value", "Kind", "Source"], rows))
