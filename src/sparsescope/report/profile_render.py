"""Markdown for the report stage: the profile section (seed 000, 4.1-4.4, 5.3-5.4 and 7.7;
seed 004's instruction roofline; the classic hierarchical roofline).

:func:`write_figures` draws the PNGs; :func:`render_markdown` returns the section text, linking the
figures it is given. Both take the same profiles and labels (one column per kernel or matrix);
:func:`build_section` does both for the launches
:func:`~sparsescope.profile.section.select_section` chose.
A quantity a profile lacks is ``n/a`` in its table, and a note under the table names the metrics
behind each such cell and the kernels without them: a profile recorded with other metrics or
another ncu version renders, and says what it could not show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsescope.profile import analysis as A
from sparsescope.profile import metrics as M
from sparsescope.profile.ceilings import RooflineCeilings, resolve_ceilings
from sparsescope.profile.hotspots import KernelHotspots
from sparsescope.profile.instruction_roofline import (
    InstructionCeilings,
    instruction_ceilings,
    instruction_roofline,
)
from sparsescope.profile.records import KernelProfile
from sparsescope.profile.section import SectionInputs, select_section
from sparsescope.report.profile_render_models import (
    NA,
    ceilings_section,
    classic_section,
    dae_section,
    f,
    hotspots_section,
    littles_law_section,
    missing_note,
    roofline_section,
    table,
)

__all__ = ["Section", "build_section", "render_markdown", "write_figures"]


def _resolve(profiles: Sequence[KernelProfile],
             ceilings: RooflineCeilings | InstructionCeilings | None
             ) -> tuple[RooflineCeilings, InstructionCeilings]:
    """(all ceilings, the instruction roofline's): given ones win; the rest from the spec table
    of the profiled device and ncu's peaks (:func:`.ceilings.resolve_ceilings`)."""
    if isinstance(ceilings, RooflineCeilings):
        return ceilings, instruction_ceilings(ceilings)
    resolved = resolve_ceilings(profiles)
    if isinstance(ceilings, InstructionCeilings):
        return resolved, ceilings
    return resolved, instruction_ceilings(resolved)


def write_figures(profiles: Sequence[KernelProfile], out_dir: str | Path, *,
                  labels: Sequence[str] | None = None,
                  ceilings: RooflineCeilings | InstructionCeilings | None = None,
                  prefix: str = "profile") -> dict[str, Path]:
    """Draw the stall bars, one stall pie per kernel, the instruction roofline, the shared-memory
    roofline and the FLOP/byte roofline into ``out_dir``; returns figure key -> path (keys:
    ``stalls``, ``pie:<label>``, ``instruction_roofline``, ``shared_roofline``,
    ``classic_roofline``). Figures whose data the profiles lack are left out."""
    from sparsescope.profile.classic_roofline import classic_roofline
    from sparsescope.report import profile_figures as F

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
    resolved, inst = _resolve(profiles, ceilings)
    points = instruction_roofline(profiles, names)
    if points:
        made["instruction_roofline"] = F.instruction_roofline_figure(
            points, inst, out / f"{prefix}_instruction_roofline.png")
        if any(p.shared_intensity and p.shared_gips for p in points):
            made["shared_roofline"] = F.shared_roofline_figure(
                points, inst, out / f"{prefix}_shared_roofline.png")
    classic = classic_roofline(profiles, names)
    if classic:
        made["classic_roofline"] = F.classic_roofline_figure(
            classic, resolved, out / f"{prefix}_classic_roofline.png")
    return made


def _spec_table(rows, names, spec, profiles) -> str:
    """A metric-per-row table; ``spec``: (label, getter, groups of alternative metric names, one
    of each group needed) -- the groups name what a ``n/a`` cell lacks."""
    cells = [(label, [get(r) for r in rows], groups) for label, get, groups in spec]
    text = table(["Metric", *names], [[label, *row] for label, row, _ in cells])
    return text + missing_note(cells, profiles, names)


def _top_level(profiles, names) -> str:
    rows = A.top_level_table(profiles, names)
    spec = (
        ("Block Size", lambda r: f(r.block_size), ((M.BLOCK_SIZE, *M.BLOCK_DIMS),)),
        ("Grid Size", lambda r: f(r.grid_size), ((M.GRID_SIZE, *M.GRID_DIMS),)),
        ("Registers/Thread", lambda r: f(r.registers_per_thread), ((M.REGISTERS_PER_THREAD,),)),
        ("Theoretical Occupancy", lambda r: f(r.theoretical_occupancy_pct, 1, "%"),
         ((M.THEORETICAL_OCCUPANCY_PCT,),)),
        ("Achieved Occupancy", lambda r: f(r.achieved_occupancy_pct, 1, "%"),
         ((M.ACHIEVED_OCCUPANCY_PCT,),)),
        ("Active Warps/SM", lambda r: f(r.active_warps_per_sm),
         (M.ACTIVE_WARPS_PER_SM + (M.ACHIEVED_OCCUPANCY_PCT,),)),
        ("SM Throughput", lambda r: f(r.sm_throughput_pct, 1, "%"), (M.SM_THROUGHPUT_PCT,)),
        ("DRAM Throughput", lambda r: f(r.dram_throughput_pct, 1, "%"),
         (M.DRAM_THROUGHPUT_PCT,)),
        ("Eligible Warps/Scheduler", lambda r: f(r.eligible_warps_per_scheduler),
         (M.ELIGIBLE_WARPS,)),
        ("No Eligible Warp", lambda r: f(r.no_eligible_pct, 1, "%"),
         (M.NO_ELIGIBLE_PCT + M.ISSUE_ACTIVE_PCT,)),
        ("CPI (warp cycles per issued instruction)", lambda r: f(r.cpi, 1), ((M.CPI,),)),
        ("IPC (executed, per SM)", lambda r: f(r.ipc), (M.IPC,)),
    )
    return _spec_table(rows, names, spec, profiles)


def _stalls(profiles, names, figures) -> str:
    comparison = A.stall_comparison(profiles, names)
    rows = []
    for row in comparison.rows:
        cells = [NA if c is None else f"{c:.2f} ({f(p, 1, '%')})"
                 for c, p in zip(row.cycles_per_inst, row.pct_of_cpi, strict=True)]
        rows.append([row.label, *cells, M.STALL_LABELS.get(row.reason, ("", ""))[1]])
    rows.append(["**CPI**", *(f"**{f(c, 2)}**" for c in comparison.cpi), ""])
    text = ("Cycles per issued instruction in each state "
            "(`smsp__average_warps_issue_stalled_*_per_issue_active.ratio`) and % of CPI.\n\n")
    text += table(["Stall Reason", *comparison.kernels, "Warp is waiting for"], rows)
    without = [n for p, n in zip(profiles, names, strict=True) if not p.stalls]
    if without:
        text += ("\n\n*Not in the profile of " + ", ".join(without) + ": the stall reasons "
                 "(`smsp__average_warps_issue_stalled_*_per_issue_active.ratio`, or the older "
                 "`smsp__warp_issue_stalled_*_per_warp_active.pct` with the CPI); collect the "
                 "`stalls` group or `--set full`.*")
    if "stalls" in figures:
        text += f"\n\n![Warp stall breakdown]({figures['stalls']})"
    for name in names:
        if f"pie:{name}" in figures:
            text += f"\n\n![Warp stalls: {name}]({figures[f'pie:{name}']})"
    return text


def _conflict(ways: float | None, pct: float | None) -> str:
    if ways is None:
        return NA
    return f"{ways:.1f}-way ({f(pct, 0, '%')})" if pct is not None else f"{ways:.1f}-way"


def _memory(profiles, names) -> str:
    rows = A.memory_table(profiles, names)
    spec = (
        ("Global load bytes used per 32 B sector", lambda r: f(r.load_bytes_per_sector, 1),
         (M.BYTES_PER_SECTOR_LD,)),
        ("Global store bytes used per 32 B sector", lambda r: f(r.store_bytes_per_sector, 1),
         (M.BYTES_PER_SECTOR_ST,)),
        ("Excessive sectors", lambda r: f(r.excessive_sectors_pct, 1, "%"),
         (M.L2_SECTORS_GLOBAL, M.L2_SECTORS_GLOBAL_EXCESSIVE)),
        ("Global load sectors per request", lambda r: f(r.load_sectors_per_request),
         (M.GLOBAL_LD_SECTORS, M.GLOBAL_LD_REQUESTS)),
        ("Global store sectors per request", lambda r: f(r.store_sectors_per_request),
         (M.GLOBAL_ST_SECTORS, M.GLOBAL_ST_REQUESTS)),
        ("Shared load bank conflicts",
         lambda r: _conflict(r.shared_load_ways, r.shared_load_conflict_pct),
         (M.SHARED_LD_WAVEFRONTS, M.SHARED_LD_INST)),
        ("Shared store bank conflicts",
         lambda r: _conflict(r.shared_store_ways, r.shared_store_conflict_pct),
         (M.SHARED_ST_WAVEFRONTS, M.SHARED_ST_INST)),
        ("L1 hit rate", lambda r: f(r.l1_hit_rate_pct, 1, "%"), (M.L1_HIT_RATE_PCT,)),
        ("L2 hit rate", lambda r: f(r.l2_hit_rate_pct, 1, "%"), (M.L2_HIT_RATE_PCT,)),
    )
    text = _spec_table(rows, names, spec, profiles)
    lines = _rule_lines(profiles, names, memory=True)
    if lines:
        text += "\n\nncu's memory rules:\n\n" + "\n".join(lines)
    return text


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


def render_markdown(profiles: Sequence[KernelProfile], *, labels: Sequence[str] | None = None,
                    ceilings: RooflineCeilings | InstructionCeilings | None = None,
                    figures: Mapping[str, str | Path] | None = None, level: int = 2,
                    hotspots: Sequence[KernelHotspots] | None = None) -> str:
    """The profile section: top-level table, stall breakdown, memory efficiency, rule summary,
    hottest instructions, DAE estimates, Little's-law check, instruction and FLOP/byte
    rooflines, and the ceilings used. ``ceilings``: a RooflineCeilings (e.g. from
    :func:`~sparsescope.profile.ceilings.resolve_ceilings` with the run's measured ceilings);
    None takes the spec table of the profiled device, then ncu's peaks. ``figures`` as
    returned by :func:`write_figures` (paths written as given: pass them relative to the
    report). ``hotspots``: from :func:`sparsescope.profile.hotspots.hotspots_for`."""
    if not profiles:
        raise ValueError("no kernel profiles to render")
    names = A.kernel_labels(profiles) if labels is None else tuple(labels)
    figs = {k: str(v) for k, v in (figures or {}).items()}
    resolved, inst = _resolve(profiles, ceilings)
    h, hh = "#" * level, "#" * (level + 1)
    parts = [
        f"{h} NCU Kernel Analysis",
        f"{hh} Top-Level Metrics\n\n{_top_level(profiles, names)}",
        f"{hh} Warp Stall Breakdown\n\n{_stalls(profiles, names, figs)}",
        f"{hh} Memory Access Efficiency\n\n{_memory(profiles, names)}",
        f"{hh} NCU Rule Summary\n\n{_rules(profiles, names)}",
        f"{hh} Hottest SASS Instructions\n\n{hotspots_section(hotspots)}",
        f"{hh} DAE Estimates From Measured Stalls and Bandwidth\n\n"
        f"{dae_section(profiles, names, resolved)}",
        f"{hh} Little's Law at the Measured Occupancy\n\n"
        f"{littles_law_section(profiles, names, resolved)}",
        f"{hh} Instruction Roofline\n\n{roofline_section(profiles, names, inst, figs)}",
        f"{hh} Hierarchical Roofline (FLOP/byte)\n\n"
        f"{classic_section(profiles, names, resolved, figs)}",
        f"{hh} Ceilings Used\n\n{ceilings_section(resolved, inst)}",
    ]
    return "\n\n".join(parts) + "\n"


@dataclass(frozen=True)
class Section:
    """The rendered section and what went into it."""

    markdown: str
    figures: dict[str, Path]
    profiles: tuple[KernelProfile, ...]
    labels: tuple[str, ...]
    ceilings: object
    """The :class:`~sparsescope.profile.ceilings.RooflineCeilings` used."""
    files: tuple[str, ...]


def build_section(inputs: SectionInputs, *, figure_dir: str | Path | None = None,
                  figure_prefix: str = "profile", figure_link_root: str = "",
                  runset=None, use_store: bool = False, kernel: str | None = None,
                  all_launches: bool = False, labels: Sequence[str] | None = None,
                  level: int = 2) -> Section:
    """Choose the launches and resolve the ceilings (:func:`select_section`: measured from
    ``runset`` or the store, else the spec table, else ncu's peaks), draw the figures into
    ``figure_dir`` (linked as ``figure_link_root + name``), and render. Raises UsageError for a
    kernel filter that keeps nothing or labels that do not match."""
    data = select_section(inputs, runset=runset, use_store=use_store, kernel=kernel,
                          all_launches=all_launches, labels=labels)
    profiles, names, ceilings = list(data.profiles), data.labels, data.ceilings
    figures: dict[str, Path] = {}
    if figure_dir is not None:
        figures = write_figures(profiles, figure_dir, labels=names, ceilings=ceilings,
                                prefix=figure_prefix)
    links = {k: f"{figure_link_root}{p.name}" for k, p in figures.items()}
    markdown = render_markdown(profiles, labels=names, ceilings=ceilings, figures=links,
                               level=level, hotspots=data.hotspots)
    return Section(markdown, figures, data.profiles, names, ceilings, data.files)
