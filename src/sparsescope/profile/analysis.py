"""Tables a profile section of the report shows, as typed rows (seed 000 sections 4.1-4.4 and 7.7,
seed 004's hierarchical instruction roofline).

Every quantity names the ncu metrics it comes from and its formula. A quantity the profile does not
hold (a metric-group run without that group) is None, never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsescope.profile import metrics as M
from sparsescope.profile.records import KernelProfile, RuleMessage


def _ratio(num: float | None, den: float | None, scale: float = 1.0) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return scale * num / den


def file_tags(sources: Sequence[str]) -> dict[str, str]:
    """Short, distinct tags of profile files: the ``_``-separated words of each file stem that
    not every stem shares (``profile_seed6_cant_torch-cusparse-i64_raw`` among other
    ``profile_seed6_*_raw`` files -> ``cant/torch-cusparse-i64``); the stem when that is empty."""
    stems = {src: Path(src).stem for src in dict.fromkeys(sources)}
    words = {src: stem.split("_") for src, stem in stems.items()}
    common = set.intersection(*(set(w) for w in words.values())) if len(words) > 1 else set()
    tags = {src: "/".join(w for w in ws if w not in common) or stems[src]
            for src, ws in words.items()}
    if len(set(tags.values())) < len(tags):
        return stems
    return tags


def kernel_labels(profiles: Sequence[KernelProfile]) -> tuple[str, ...]:
    """Default column labels, unique: the kernel name; when a name is found in several files
    (a comparison across runs), every label gets its file's tag, ``<file tag> <name>``
    (:func:`file_tags`); ``#index`` added where a label still repeats."""
    names = [p.name for p in profiles]
    files_of: dict[str, set[str]] = {}
    for p in profiles:
        files_of.setdefault(p.name, set()).add(p.source)
    if any(len(files) > 1 for files in files_of.values()):
        tags = file_tags([p.source for p in profiles])
        names = [f"{tags[p.source]} {p.name}" for p in profiles]
    return tuple(f"{lab}#{p.index}" if names.count(lab) > 1 else lab
                 for p, lab in zip(profiles, names, strict=True))


def representative_launches(profiles: Sequence[KernelProfile]) -> tuple[KernelProfile, ...]:
    """One launch per distinct kernel launch of each file: launches with the same source file,
    demangled name, block and grid size are repeats; keep the one of median duration (the lower
    median for an even count), a real launch rather than an average. Groups in the order their
    first launch appears."""
    groups: dict[tuple, list[KernelProfile]] = {}
    for p in profiles:
        groups.setdefault((p.source, p.demangled_name, p.block_size, p.grid_size), []).append(p)
    chosen = []
    for launches in groups.values():  # dicts keep insertion order: groups in first-seen order
        timed = sorted(launches, key=lambda p: (p.duration_ns is None, p.duration_ns or 0.0))
        chosen.append(timed[(len(timed) - 1) // 2])
    return tuple(chosen)


def _labels(profiles: Sequence[KernelProfile], labels: Sequence[str] | None) -> tuple[str, ...]:
    if labels is None:
        return kernel_labels(profiles)
    if len(labels) != len(profiles):
        raise ValueError(f"{len(labels)} labels for {len(profiles)} profiles")
    return tuple(labels)


# --- 4.1 top-level metrics -----------------------------------------------------------------------

@dataclass(frozen=True)
class TopLevelRow:
    """One kernel's launch, occupancy and scheduler figures (seed 000, section 4.1)."""

    kernel: str
    block_size: int | None
    grid_size: int | None
    registers_per_thread: int | None
    theoretical_occupancy_pct: float | None
    achieved_occupancy_pct: float | None
    active_warps_per_sm: float | None
    """``sm__warps_active.avg.per_cycle_active``, else achieved % x max warps per SM / 100."""
    sm_throughput_pct: float | None
    """``sm__throughput.avg.pct_of_peak_sustained_elapsed``."""
    dram_throughput_pct: float | None
    """``dram__throughput`` (``gpu__dram_throughput`` in the full set), % of peak, elapsed."""
    eligible_warps_per_scheduler: float | None
    """``smsp__warps_eligible.avg.per_cycle_active``."""
    no_eligible_pct: float | None
    """Cycles in which a scheduler had no eligible warp: ``smsp__issue_inst0`` % of active
    cycles, else 100 - ``smsp__issue_active.avg.pct_of_peak_sustained_active``."""
    cpi: float | None
    """Warp cycles per issued instruction."""
    ipc: float | None
    """Executed warp instructions per active cycle per SM
    (``sm__inst_executed.avg.per_cycle_active``)."""


def _active_warps_per_sm(p: KernelProfile) -> float | None:
    direct = p.value(*M.ACTIVE_WARPS_PER_SM)
    if direct is not None:
        return direct
    max_warps = p.value(*M.MAX_WARPS_PER_SM)
    if max_warps is None:  # theoretical warps / theoretical fraction = hardware maximum
        max_warps = _ratio(p.value("sm__maximum_warps_avg_per_active_cycle"),
                           p.theoretical_occupancy_pct, 100.0)
    if p.achieved_occupancy_pct is None or max_warps is None:
        return None
    return p.achieved_occupancy_pct * max_warps / 100.0


def _no_eligible_pct(p: KernelProfile) -> float | None:
    direct = p.value(*M.NO_ELIGIBLE_PCT)
    if direct is not None:
        return direct
    issue_pct = p.value(*M.ISSUE_ACTIVE_PCT)
    if issue_pct is not None:
        return 100.0 - issue_pct
    per_cycle = p.value("smsp__issue_active.avg.per_cycle_active")
    return None if per_cycle is None else 100.0 * (1.0 - per_cycle)


def top_level_row(profile: KernelProfile, label: str | None = None) -> TopLevelRow:
    p = profile
    return TopLevelRow(
        kernel=label or p.name, block_size=p.block_size, grid_size=p.grid_size,
        registers_per_thread=p.registers_per_thread,
        theoretical_occupancy_pct=p.theoretical_occupancy_pct,
        achieved_occupancy_pct=p.achieved_occupancy_pct,
        active_warps_per_sm=_active_warps_per_sm(p),
        sm_throughput_pct=p.value(*M.SM_THROUGHPUT_PCT),
        dram_throughput_pct=p.value(*M.DRAM_THROUGHPUT_PCT),
        eligible_warps_per_scheduler=p.value(*M.ELIGIBLE_WARPS),
        no_eligible_pct=_no_eligible_pct(p), cpi=p.cpi, ipc=p.value(*M.IPC),
    )


def top_level_table(profiles: Sequence[KernelProfile],
                    labels: Sequence[str] | None = None) -> tuple[TopLevelRow, ...]:
    names = _labels(profiles, labels)
    return tuple(top_level_row(p, lab) for p, lab in zip(profiles, names, strict=True))


# --- 4.2 warp stalls -----------------------------------------------------------------------------

@dataclass(frozen=True)
class StallRow:
    """One stall reason of one kernel."""

    reason: str
    label: str
    cycles_per_inst: float
    """Warp cycles per issued instruction spent in this state."""
    pct_of_cpi: float | None
    """100 x cycles_per_inst / CPI (the seed's "% of CPI")."""


def _cpi_denominator(profile: KernelProfile) -> float | None:
    """The CPI; when the profile lacks it, the sum of the stall cycles (what CPI sums to)."""
    if profile.cpi:
        return profile.cpi
    total = sum(profile.stalls.values())
    return total or None


def stall_breakdown(profile: KernelProfile) -> tuple[StallRow, ...]:
    """Every reason the profile reports, most cycles first::

        pct_of_cpi = 100 * smsp__average_warps_issue_stalled_<r>_per_issue_active.ratio
                     / smsp__average_warp_latency_per_inst_issued.ratio
    """
    cpi = _cpi_denominator(profile)
    rows = [StallRow(r, M.stall_label(r), c, _ratio(c, cpi, 100.0))
            for r, c in profile.stalls.items()]
    return tuple(sorted(rows, key=lambda row: -row.cycles_per_inst))


@dataclass(frozen=True)
class StallComparisonRow:
    """One stall reason across kernels (one column per kernel)."""

    reason: str
    label: str
    cycles_per_inst: tuple[float | None, ...]
    pct_of_cpi: tuple[float | None, ...]


@dataclass(frozen=True)
class StallComparison:
    """Stall breakdown across matrices or kernels (seed 000, section 4.2 table and Figure 4)."""

    kernels: tuple[str, ...]
    cpi: tuple[float | None, ...]
    rows: tuple[StallComparisonRow, ...]
    """Every reason any kernel reports, by mean cycles, largest first."""


def stall_comparison(profiles: Sequence[KernelProfile],
                     labels: Sequence[str] | None = None) -> StallComparison:
    names = _labels(profiles, labels)
    reasons: dict[str, None] = {}
    for p in profiles:
        reasons.update(dict.fromkeys(p.stalls))
    rows = []
    for r in reasons:
        cycles = tuple(p.stalls.get(r) for p in profiles)
        pct = tuple(_ratio(c, _cpi_denominator(p), 100.0)
                    for c, p in zip(cycles, profiles, strict=True))
        rows.append(StallComparisonRow(r, M.stall_label(r), cycles, pct))
    rows.sort(key=lambda row: -sum(c or 0.0 for c in row.cycles_per_inst))
    return StallComparison(names, tuple(p.cpi for p in profiles), tuple(rows))


@dataclass(frozen=True)
class CpiSpeedupRow:
    """Seed 000 section 7.7: the speedup if one stall reason vanished from the CPI."""

    kernel: str
    cpi: float
    removed_stall_cycles: float
    projected_cpi: float
    """cpi - removed_stall_cycles."""
    speedup: float
    """cpi / projected_cpi."""


def cpi_speedup(profile: KernelProfile, reason: str = "long_scoreboard",
                label: str | None = None) -> CpiSpeedupRow | None:
    """CPI-based speedup if ``reason``'s stalls were removed (seed 000, 7.7)::

        projected_cpi = cpi - stall_cycles(reason)        speedup = cpi / projected_cpi

    None when the profile lacks the CPI or the reason. Computed by
    :func:`sparsescope.model.dae.dae_cpi_prediction`."""
    from sparsescope.model.dae import dae_cpi_prediction

    cycles = profile.stalls.get(reason)
    if profile.cpi is None or cycles is None or cycles >= profile.cpi:
        return None  # nothing to project (a stall >= CPI only arises from rounded exports)
    pred = dae_cpi_prediction(profile.cpi, cycles)
    return CpiSpeedupRow(label or profile.name, pred.cpi, pred.removed_stall_cycles,
                         pred.projected_cpi, pred.speedup)


# --- 4.3 memory efficiency -----------------------------------------------------------------------

@dataclass(frozen=True)
class MemoryRow:
    """Memory access efficiency of one kernel (seed 000, section 4.3)."""

    kernel: str
    load_bytes_per_sector: float | None
    """Bytes a thread uses of each 32-byte sector loaded from global memory
    (``smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio``); 32 is perfect."""
    store_bytes_per_sector: float | None
    excessive_sectors_pct: float | None
    """100 x ``derived__memory_l2_theoretical_sectors_global_excessive`` /
    ``memory_l2_theoretical_sectors_global``: sectors beyond a fully coalesced access."""
    load_sectors_per_request: float | None
    """``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum`` / ``..._t_requests_...``; 4 is a
    coalesced 32-bit warp load, 32 a fully scattered one."""
    store_sectors_per_request: float | None
    shared_load_ways: float | None
    """Shared-load wavefronts per shared-load instruction: the n of an n-way bank conflict."""
    shared_load_conflict_pct: float | None
    """100 x bank conflicts / wavefronts of shared loads."""
    shared_store_ways: float | None
    shared_store_conflict_pct: float | None
    l1_hit_rate_pct: float | None
    l2_hit_rate_pct: float | None


def memory_row(profile: KernelProfile, label: str | None = None) -> MemoryRow:
    p = profile
    ld_wave, st_wave = p.value(*M.SHARED_LD_WAVEFRONTS), p.value(*M.SHARED_ST_WAVEFRONTS)
    return MemoryRow(
        kernel=label or p.name,
        load_bytes_per_sector=p.value(*M.BYTES_PER_SECTOR_LD),
        store_bytes_per_sector=p.value(*M.BYTES_PER_SECTOR_ST),
        excessive_sectors_pct=_ratio(p.value(*M.L2_SECTORS_GLOBAL_EXCESSIVE),
                                     p.value(*M.L2_SECTORS_GLOBAL), 100.0),
        load_sectors_per_request=_ratio(p.value(*M.GLOBAL_LD_SECTORS),
                                        p.value(*M.GLOBAL_LD_REQUESTS)),
        store_sectors_per_request=_ratio(p.value(*M.GLOBAL_ST_SECTORS),
                                         p.value(*M.GLOBAL_ST_REQUESTS)),
        shared_load_ways=_ratio(ld_wave, p.value(*M.SHARED_LD_INST)),
        shared_load_conflict_pct=_ratio(p.value(*M.SHARED_LD_CONFLICTS), ld_wave, 100.0),
        shared_store_ways=_ratio(st_wave, p.value(*M.SHARED_ST_INST)),
        shared_store_conflict_pct=_ratio(p.value(*M.SHARED_ST_CONFLICTS), st_wave, 100.0),
        l1_hit_rate_pct=p.value(*M.L1_HIT_RATE_PCT),
        l2_hit_rate_pct=p.value(*M.L2_HIT_RATE_PCT),
    )


def memory_table(profiles: Sequence[KernelProfile],
                 labels: Sequence[str] | None = None) -> tuple[MemoryRow, ...]:
    names = _labels(profiles, labels)
    return tuple(memory_row(p, lab) for p, lab in zip(profiles, names, strict=True))


#: Sections whose rules speak about memory access (seed 000, 4.3).
MEMORY_SECTIONS = ("MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Chart",
                   "MemoryWorkloadAnalysis_Tables", "SourceCounters")


def rule_messages(profile: KernelProfile, *, sections: Sequence[str] | None = None,
                  types: Sequence[str] = ("ERR", "WRN", "OPT", "INF")) -> tuple[RuleMessage, ...]:
    """ncu's rule messages (seed 000, 4.4), largest estimated speedup first, those without an
    estimate after; optionally only some sections or types."""
    chosen = [r for r in profile.rules
              if r.type in types and (sections is None or r.section in sections)]
    return tuple(sorted(chosen, key=lambda r: -(r.estimated_speedup_pct or -1.0)))
