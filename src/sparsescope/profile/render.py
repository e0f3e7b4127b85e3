"""Markdown for the report stage: the profile section (seed 000, 4.1-4.4 and 7.7; seed 004).

:func:`write_figures` draws the PNGs; :func:`render_markdown` returns the section text, linking the
figures it is given. Both take the same profiles and labels (one column per kernel or matrix).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sparsescope.profile import analysis as A
from sparsescope.profile import metrics as M
from sparsescope.profile.instruction_roofline import (
    InstructionCeilings,
    ceilings_from_profile,
    instruction_roofline,
    merge_ceilings,
)
from sparsescope.profile.records import KernelProfile

NA = "n/a"


def _f(value: float | int | None, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return NA
    if isinstance(value, int):
        return f"{value:,}{suffix}"
    return f"{value:,.{digits}f}{suffix}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _default_ceilings(profiles: Sequence[KernelProfile]) -> InstructionCeilings | None:
    """Each ceiling from the first profile whose own peak metrics give it (None if none does)."""
    found = None
    for p in profiles:
        c = ceilings_from_profile(p)
        found = c if found is None else merge_ceilings(found, c)
    if found is None or all(v is None for v in (found.peak_warp_gips, found.l1_gtxn_s,
                                                 found.l2_gtxn_s, found.dram_gtxn_s)):
        return None
    return found


def write_figures(profiles: Sequence[KernelProfile], out_dir: str | Path, *,
                  labels: Sequence[str] | None = None,
                  ceilings: InstructionCeilings | None = None,
                  prefix: str = "profile") -> dict[str, Path]:
    """Draw the stall bars, one stall pie per kernel and the instruction roofline into
    ``out_dir``; returns figure key -> path (keys: ``stalls``, ``pie:<label>``,
    ``instruction_roofline``). Figures whose data the profiles lack are left out."""
    from sparsescope.profile import figures as F

    out = Path(out_dir)
    names = A.kernel_labels(profiles) if labels is None else tuple(labels)
    made: dict[str, Path] = {}
    with_stalls = [(p, n) for p, n in zip(profiles, names, strict=True) if p.stalls]
    if with_stalls:
        comparison = A.stall_comparison([p for p, _ in with_stalls], [n for _, n in with_stalls])
        made["stalls"] = F.stall_bars(comparison, out / f"{prefix}_stalls.png")
        for i, (p, name) in enumerate(with_stalls):
            if any(v > 0 for v in p.stalls.values()):
                made[f"pie:{name}"] = F.stall_pie(A.stall_breakdown(p),
                                                  out / f"{prefix}_stall_pie_{i}.png",
                                                  title=f"Warp stalls: {name}")
    points = instruction_roofline(profiles, names)
    if points:
        ceilings = ceilings or _default_ceilings(profiles) or InstructionCeilings(None, None,
                                                                                   None, None)
        made["instruction_roofline"] = F.instruction_roofline_figure(
            points, ceilings, out / f"{prefix}_instruction_roofline.png")
    return made


def _top_level(profiles, names) -> str:
    rows = A.top_level_table(profiles, names)
    spec = (
        ("Block Size", lambda r: _f(r.block_size)), ("Grid Size", lambda r: _f(r.grid_size)),
        ("Registers/Thread", lambda r: _f(r.registers_per_thread)),
        ("Theoretical Occupancy", lambda r: _f(r.theoretical_occupancy_pct, 1, "%")),
        ("Achieved Occupancy", lambda r: _f(r.achieved_occupancy_pct, 1, "%")),
        ("Active Warps/SM", lambda r: _f(r.active_warps_per_sm)),
        ("SM Throughput", lambda r: _f(r.sm_throughput_pct, 1, "%")),
        ("DRAM Throughput", lambda r: _f(r.dram_throughput_pct, 1, "%")),
        ("Eligible Warps/Scheduler", lambda r: _f(r.eligible_warps_per_scheduler)),
        ("No Eligible Warp", lambda r: _f(r.no_eligible_pct, 1, "%")),
        ("CPI (warp cycles per issued instruction)", lambda r: _f(r.cpi, 1)),
        ("IPC (executed, per SM)", lambda r: _f(r.ipc)),
    )
    return _table(["Metric", *names], [[label, *(get(r) for r in rows)] for label, get in spec])


def _stalls(profiles, names, figures) -> str:
    comparison = A.stall_comparison(profiles, names)
    rows = []
    for row in comparison.rows:
        cells = [NA if c is None else f"{c:.2f} ({_f(p, 1, '%')})"
                 for c, p in zip(row.cycles_per_inst, row.pct_of_cpi, strict=True)]
        rows.append([row.label, *cells, M.STALL_LABELS.get(row.reason, ("", ""))[1]])
    rows.append(["**CPI**", *(f"**{_f(c, 2)}**" for c in comparison.cpi), ""])
    text = ("Cycles per issued instruction in each state "
            "(`smsp__average_warps_issue_stalled_*_per_issue_active.ratio`) and % of CPI.\n\n")
    text += _table(["Stall Reason", *comparison.kernels, "Warp is waiting for"], rows)
    if "stalls" in figures:
        text += f"\n\n![Warp stall breakdown]({figures['stalls']})"
    for name in names:
        if f"pie:{name}" in figures:
            text += f"\n\n![Warp stalls: {name}]({figures[f'pie:{name}']})"
    return text


def _memory(profiles, names) -> str:
    rows = A.memory_table(profiles, names)
    spec = (
        ("Global load bytes used per 32 B sector", lambda r: _f(r.load_bytes_per_sector, 1)),
        ("Global store bytes used per 32 B sector", lambda r: _f(r.store_bytes_per_sector, 1)),
        ("Excessive sectors", lambda r: _f(r.excessive_sectors_pct, 1, "%")),
        ("Global load sectors per request", lambda r: _f(r.load_sectors_per_request)),
        ("Global store sectors per request", lambda r: _f(r.store_sectors_per_request)),
        ("Shared load bank conflicts", lambda r: _conflict(r.shared_load_ways,
                                                           r.shared_load_conflict_pct)),
        ("Shared store bank conflicts", lambda r: _conflict(r.shared_store_ways,
                                                            r.shared_store_conflict_pct)),
        ("L1 hit rate", lambda r: _f(r.l1_hit_rate_pct, 1, "%")),
        ("L2 hit rate", lambda r: _f(r.l2_hit_rate_pct, 1, "%")),
    )
    text = _table(["Metric", *names], [[label, *(get(r) for r in rows)] for label, get in spec])
    lines = _rule_lines(profiles, names, memory=True)
    if lines:
        text += "\n\nncu's memory rules:\n\n" + "\n".join(lines)
    return text


def _conflict(ways: float | None, pct: float | None) -> str:
    if ways is None:
        return NA
    return f"{ways:.1f}-way ({_f(pct, 0, '%')})" if pct is not None else f"{ways:.1f}-way"


def _rule_lines(profiles, names, *, memory: bool) -> list[str]:
    """OPT/WRN/ERR messages (INF messages only restate figures the tables show); the memory
    sections' messages go under the memory table, the others into the rule summary."""
    lines = []
    for p, name in zip(profiles, names, strict=True):
        for rule in A.rule_messages(p, types=("ERR", "WRN", "OPT")):
            if (rule.section in A.MEMORY_SECTIONS) != memory:
                continue
            gain = (f", est. speedup {rule.estimated_speedup_pct:.1f}%"
                    if rule.estimated_speedup_pct is not None else "")
            lines.append(f"- **{name} — {rule.rule}** ({rule.type}{gain}): *{rule.message}*")
    return lines


def _rules(profiles, names) -> str:
    lines = _rule_lines(profiles, names, memory=False)
    return "\n".join(lines) if lines else "No rule messages (collect sections or `--set full`)."


def _roofline(profiles, names, ceilings, figures) -> str:
    points = instruction_roofline(profiles, names)
    if not points:
        return "No instruction-roofline metrics (collect `instruction-roofline` or `--set full`)."
    rows = [[p.kernel, _f(p.warp_gips, 1), _f(p.predicated_on_gips, 1), _f(p.l1_intensity, 3),
             _f(p.l2_intensity, 3), _f(p.dram_intensity, 3), _f(p.global_intensity, 4)]
            for p in points]
    text = ("Ding & Williams' hierarchical instruction roofline: warp instructions per 32-byte "
            "transaction at each memory level, against warp GIPS. Global ld/st intensity compares "
            "with the walls stride-0 = 1, stride-1 = 0.25, stride-8 = 0.031.\n\n")
    text += _table(["Kernel", "Warp GIPS", "Predicated-on GIPS", "II L1", "II L2", "II DRAM",
                    "II global ld/st"], rows)
    ceilings = ceilings or _default_ceilings(profiles)
    if ceilings is not None:
        items = (("Peak warp GIPS", ceilings.peak_warp_gips, "peak_warp_gips"),
                 ("L1 (G sectors/s)", ceilings.l1_gtxn_s, "l1"),
                 ("L2 (G sectors/s)", ceilings.l2_gtxn_s, "l2"),
                 ("DRAM (G sectors/s)", ceilings.dram_gtxn_s, "dram"))
        text += "\n\nCeilings:\n\n" + "\n".join(
            f"- {label}: {_f(value, 1)}" + (f" — {ceilings.sources[key]}"
                                           if key in ceilings.sources else "")
            for label, value, key in items)
    if "instruction_roofline" in figures:
        text += f"\n\n![Hierarchical instruction roofline]({figures['instruction_roofline']})"
    return text


def _cpi_speedup(profiles, names) -> str:
    rows = [r for r in (A.cpi_speedup(p, label=n) for p, n in zip(profiles, names, strict=True))
            if r is not None]
    if not rows:
        return "No CPI or Long Scoreboard figure in the profiles."
    return ("If Long Scoreboard stalls vanished (projected CPI = CPI - long_scoreboard, "
            "speedup = CPI / projected):\n\n" + _table(
                ["Kernel", "CPI", "Long Scoreboard", "Projected CPI", "Speedup"],
                [[r.kernel, _f(r.cpi, 2), _f(r.removed_stall_cycles, 2), _f(r.projected_cpi, 2),
                  f"**{r.speedup:.2f}x**"] for r in rows]))


def render_markdown(profiles: Sequence[KernelProfile], *, labels: Sequence[str] | None = None,
                    ceilings: InstructionCeilings | None = None,
                    figures: Mapping[str, str | Path] | None = None, level: int = 2) -> str:
    """The profile section: top-level table, stall breakdown, memory efficiency, rule summary,
    instruction roofline and CPI-based speedup; ``figures`` as returned by
    :func:`write_figures` (paths written as given, so pass them relative to the report)."""
    if not profiles:
        raise ValueError("no kernel profiles to render")
    names = A.kernel_labels(profiles) if labels is None else tuple(labels)
    figs = {k: str(v) for k, v in (figures or {}).items()}
    h, hh = "#" * level, "#" * (level + 1)
    parts = [
        f"{h} NCU Kernel Analysis",
        f"{hh} Top-Level Metrics\n\n{_top_level(profiles, names)}",
        f"{hh} Warp Stall Breakdown\n\n{_stalls(profiles, names, figs)}",
        f"{hh} Memory Access Efficiency\n\n{_memory(profiles, names)}",
        f"{hh} NCU Rule Summary\n\n{_rules(profiles, names)}",
        f"{hh} Instruction Roofline\n\n{_roofline(profiles, names, ceilings, figs)}",
        f"{hh} CPI-Based Speedup Without Long Scoreboard Stalls\n\n"
        f"{_cpi_speedup(profiles, names)}",
    ]
    return "\n\n".join(parts) + "\n"
