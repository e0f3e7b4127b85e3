"""The hierarchical instruction roofline (Ding & Williams, "An Instruction Roofline Model for GPUs",
PMBS 2019; seed 004) from a kernel profile.

Axes: instruction intensity (warp instructions per 32-byte transaction) against warp-instruction
throughput (GIPS). One point per memory level, all at the same height:

    GIPS      = smsp__inst_executed.sum / gpu__time_duration.sum[ns]
    II_level  = smsp__inst_executed.sum / transactions_level
    L1  txn   = global ld+st sectors (l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st})
                + 4 x shared wavefronts (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st});
                a shared wavefront moves 128 bytes = 4 sectors (seed 004's normalisation)
    L2  txn   = lts__t_sectors_op_{read,write,atom,red}.sum (lts__t_sectors.sum in the full set)
    DRAM txn  = dram__sectors_{read,write}.sum

Ceilings: a horizontal line at the peak warp-instruction rate and one slanted line per level,
``GIPS = II x bandwidth[G transactions/s]``. The global-memory point (global ld/st instructions per
global L1 sector, their own GIPS) sits against the access-pattern walls: stride-0 (II = 1),
unit stride 32-bit (II = 1/4), stride 8 (II = 1/32).

Thread predication: the same instructions counted per thread, ``thread_gips = thread instructions
/ 32 / duration`` (and the predicated-on part), sit below the warp GIPS by the share of idle lanes.

Shared-memory roofline: shared ld/st warp instructions per shared wavefront against their GIPS;
an n-way bank conflict needs n wavefronts per instruction, so the walls are II = 1 (no conflict),
1/2, 1/4, ... 1/32 (32-way); the ceiling is one wavefront per SM per cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sparsescope.profile import metrics as M
from sparsescope.profile.records import KernelProfile

SECTOR_BYTES = 32
#: Shared-memory wavefront size in sectors (128 bytes / 32).
SHARED_WAVEFRONT_SECTORS = 4
#: Assumed L1 load bandwidth per SM per cycle when neither profile nor caller gives one; it is
#: what ncu's own peak says on H200 (derived__l1tex__lsu_writeback_bytes_mem_lgds peak
#: 16,896 B/cycle over 132 SMs) and the L1 width of Volta through Hopper.
L1_BYTES_PER_CYCLE_PER_SM = 128.0
#: Access-pattern walls for 4-byte elements: warp instructions per sector.
WALLS = {"stride-0": 1.0, "stride-1": 0.25, "stride-8": 1.0 / 32.0}
#: Bank-conflict walls of the shared-memory roofline: warp instructions per wavefront.
BANK_CONFLICT_WALLS = {"no conflict": 1.0, "2-way": 0.5, "4-way": 0.25, "8-way": 0.125,
                       "16-way": 1.0 / 16.0, "32-way": 1.0 / 32.0}


def _sum(p: KernelProfile, names: Sequence[str]) -> float | None:
    values = [p.value(n) for n in names]
    return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


@dataclass(frozen=True)
class InstructionRooflinePoint:
    """One kernel on the hierarchical instruction roofline."""

    kernel: str
    duration_ns: float
    warp_instructions: float
    """``smsp__inst_executed.sum``."""
    warp_gips: float
    """warp_instructions / duration_ns (instructions per ns = 10^9 per s)."""
    predicated_on_gips: float | None
    """Predicated-on thread instructions / 32 / duration_ns (warp-equivalent GIPS of the lanes
    that did work); its gap below warp_gips measures predication and divergence."""
    l1_transactions: float | None
    l2_transactions: float | None
    dram_transactions: float | None
    l1_intensity: float | None
    """warp_instructions / l1_transactions (inst per sector)."""
    l2_intensity: float | None
    dram_intensity: float | None
    global_instructions: float | None
    """Global load + store warp instructions."""
    global_sectors: float | None
    """Global load + store L1 sectors."""
    global_intensity: float | None
    """global_instructions / global_sectors: compare with :data:`WALLS`."""
    global_gips: float | None
    """global_instructions / duration_ns."""
    thread_gips: float | None = None
    """Thread instructions / 32 / duration_ns: the warp-equivalent rate of the active lanes."""
    active_lanes_pct: float | None = None
    """100 x thread instructions / (32 x warp instructions): lanes active per instruction."""
    predicated_on_pct: float | None = None
    """100 x predicated-on thread instructions / (32 x warp instructions)."""
    shared_instructions: float | None = None
    """Shared load + store warp instructions."""
    shared_wavefronts: float | None = None
    shared_intensity: float | None = None
    """shared_instructions / shared_wavefronts: 1 without bank conflicts, 1/n for n-way."""
    shared_gips: float | None = None


def _l2_transactions(p: KernelProfile) -> float | None:
    for names in M.L2_SECTOR_OPS:
        total = _sum(p, names)
        if total is not None:
            return total
    return None


def roofline_point(profile: KernelProfile, label: str | None = None) -> InstructionRooflinePoint:
    """Place one kernel; raises ValueError when the profile lacks instructions or duration (the
    instruction-roofline metric group or the full set provides them)."""
    p = profile
    inst, time_ns = p.value(*M.WARP_INST), p.duration_ns
    if inst is None or not time_ns:
        raise ValueError(f"{p.name}: profile has no {M.WARP_INST[0]} or {M.DURATION_NS}; "
                         "collect the instruction-roofline group or --set full")
    global_sectors = _sum(p, (M.GLOBAL_LD_SECTORS[0], M.GLOBAL_ST_SECTORS[0]))
    shared = _sum(p, (M.SHARED_LD_WAVEFRONTS[0], M.SHARED_ST_WAVEFRONTS[0]))
    l1 = (None if global_sectors is None or shared is None
          else global_sectors + SHARED_WAVEFRONT_SECTORS * shared)
    l2 = _l2_transactions(p)
    dram = _sum(p, M.DRAM_SECTORS)
    ld, st = p.value(*M.GLOBAL_LD_INST), p.value(*M.GLOBAL_ST_INST)
    global_inst = None if ld is None or st is None else ld + st
    pred_on, threads = p.value(*M.THREAD_INST_PRED_ON), p.value(*M.THREAD_INST)
    sld, sst = p.value(*M.SHARED_LD_INST), p.value(*M.SHARED_ST_INST)
    shared_inst = None if sld is None or sst is None else sld + sst
    return InstructionRooflinePoint(
        kernel=label or p.name, duration_ns=time_ns, warp_instructions=inst,
        warp_gips=inst / time_ns,
        predicated_on_gips=None if pred_on is None else pred_on / 32.0 / time_ns,
        l1_transactions=l1, l2_transactions=l2, dram_transactions=dram,
        l1_intensity=_div(inst, l1), l2_intensity=_div(inst, l2), dram_intensity=_div(inst, dram),
        global_instructions=global_inst, global_sectors=global_sectors,
        global_intensity=_div(global_inst, global_sectors),
        global_gips=_div(global_inst, time_ns),
        thread_gips=None if threads is None else threads / 32.0 / time_ns,
        active_lanes_pct=_div(None if threads is None else 100.0 * threads, 32.0 * inst),
        predicated_on_pct=_div(None if pred_on is None else 100.0 * pred_on, 32.0 * inst),
        shared_instructions=shared_inst, shared_wavefronts=shared,
        shared_intensity=_div(shared_inst, shared) if shared_inst else None,
        shared_gips=_div(shared_inst, time_ns) if shared_inst else None,
    )


@dataclass(frozen=True)
class InstructionCeilings:
    """Ceilings of the instruction roofline; None where neither profile nor device gives one."""

    peak_warp_gips: float | None
    """SMs x warp instructions per cycle per SM (one per scheduler) x SM clock [GHz]."""
    l1_gtxn_s: float | None
    """L1 bandwidth in 10^9 sectors per second."""
    l2_gtxn_s: float | None
    dram_gtxn_s: float | None
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    """Ceiling -> how it was obtained (metrics used, or datasheet)."""
    kinds: dict[str, str] = field(default_factory=dict, compare=False)
    """Ceiling (``peak_warp_gips``, ``l1``, ``l2``, ``dram``, ``shared``) -> ``measured``,
    ``spec`` or ``ncu peak``; what the figure's legend says."""
    shared_gtxn_s: float | None = None
    """Shared-memory wavefronts per second, 10^9."""


def instruction_ceilings(rc) -> InstructionCeilings:
    """The instruction roofline's ceilings from a
    :class:`~sparsescope.profile.ceilings.RooflineCeilings`: bandwidths over 32-byte sectors
    (GB/s / 32 = G transactions/s), shared memory over 128-byte wavefronts."""
    items = (("peak_warp_gips", rc.warp_gips, 1.0), ("l1", rc.l1_gb_s, 32.0),
             ("l2", rc.l2_gb_s, 32.0), ("dram", rc.dram_gb_s, 32.0),
             ("shared", rc.shared_gb_s, 128.0))
    values = {key: None if c is None else c.value / scale for key, c, scale in items}
    return InstructionCeilings(
        peak_warp_gips=values["peak_warp_gips"], l1_gtxn_s=values["l1"],
        l2_gtxn_s=values["l2"], dram_gtxn_s=values["dram"],
        sources={k: c.source for k, c, _ in items if c is not None},
        kinds={k: c.kind for k, c, _ in items if c is not None},
        shared_gtxn_s=values["shared"])


def ceilings_from_profile(profile: KernelProfile) -> InstructionCeilings:
    """Ceilings from ncu's own peak metrics, at the clocks the kernel ran at::

        peak_warp_gips = launch__sm_count x device__attribute_max_ipc_per_multiprocessor
                         x sm__cycles_elapsed.avg.per_second / 1e9
        dram = dram__bytes.sum.peak_sustained x dram__cycles_elapsed.avg.per_second / 32 / 1e9
        l2   = lts__t_sectors.avg.peak_sustained x slices
               x lts__cycles_elapsed.avg.per_second / 1e9,
               slices = lts__cycles_elapsed.sum / lts__cycles_elapsed.avg
        l1   = derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained / 32 x SM clock / 1e9
               (else l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained x 128 B / 32 x clock)
    """
    p = profile
    clock = p.value(*M.SM_CLOCK_HZ)
    sms, ipc = p.value(*M.SM_COUNT), p.value(*M.IPC_PER_SM_MAX)
    sources: dict[str, str] = {}
    peak = None
    if clock and sms and ipc:
        peak = sms * ipc * clock / 1e9
        sources["peak_warp_gips"] = f"{sms:.0f} SMs x {ipc:.0f} inst/cycle x {clock / 1e9:.3f} GHz"
    dram = None
    dram_peak, dram_clock = p.value(*M.DRAM_PEAK_BYTES_PER_CYCLE), p.value(*M.DRAM_CLOCK_HZ)
    if dram_peak and dram_clock:
        dram = dram_peak * dram_clock / SECTOR_BYTES / 1e9
        sources["dram"] = f"{dram_peak:.0f} B/cycle x {dram_clock / 1e9:.3f} GHz (ncu peak)"
    l2 = None
    per_slice, l2_clock = p.value(*M.L2_PEAK_SECTORS_PER_CYCLE_PER_SLICE), p.value(*M.L2_CLOCK_HZ)
    slices = _div(p.value(*M.L2_CYCLES_SUM), p.value(*M.L2_CYCLES_AVG))
    if per_slice and l2_clock and slices:
        l2 = per_slice * round(slices) * l2_clock / 1e9
        sources["l2"] = (f"{per_slice:.0f} sectors/cycle x {round(slices)} slices x "
                         f"{l2_clock / 1e9:.3f} GHz (ncu peak)")
    l1 = None
    l1_bytes = p.value(*M.L1_PEAK_BYTES_PER_CYCLE)
    if l1_bytes is None:
        writebacks = p.value(*M.L1_PEAK_WRITEBACKS_PER_CYCLE)
        l1_bytes = None if writebacks is None else writebacks * L1_BYTES_PER_CYCLE_PER_SM
    if l1_bytes and clock:
        l1 = l1_bytes / SECTOR_BYTES * clock / 1e9
        sources["l1"] = f"{l1_bytes:.0f} B/cycle x {clock / 1e9:.3f} GHz (ncu peak)"
    return InstructionCeilings(peak, l1, l2, dram, sources)


def ceilings_from_device(device, *, l2_bw_gb_s: float | None = None) -> InstructionCeilings:
    """Ceilings from a :class:`~sparsescope.hardware.types.DeviceSpec` (datasheet, boost clock)::

        peak_warp_gips = sm_count x warp_schedulers_per_sm x sm_clock_mhz / 1e3
        dram = peak_bw_gb_s / 32;  l2 = l2_bw_gb_s / 32 (a measured figure, when given)
        l1   = sm_count x 128 B/cycle / 32 x sm_clock_mhz / 1e3
    """
    clock_ghz = device.sm_clock_mhz / 1e3
    sources = {
        "peak_warp_gips": f"{device.name} datasheet: {device.sm_count} SMs x "
                          f"{device.warp_schedulers_per_sm} schedulers x {clock_ghz:.3f} GHz",
        "dram": f"{device.name} datasheet: {device.peak_bw_gb_s:g} GB/s",
        "l1": f"{L1_BYTES_PER_CYCLE_PER_SM:g} B/cycle/SM assumed x {clock_ghz:.3f} GHz",
    }
    if l2_bw_gb_s:
        sources["l2"] = f"measured {l2_bw_gb_s:g} GB/s"
    return InstructionCeilings(
        peak_warp_gips=device.sm_count * device.warp_schedulers_per_sm * clock_ghz,
        l1_gtxn_s=device.sm_count * L1_BYTES_PER_CYCLE_PER_SM / SECTOR_BYTES * clock_ghz,
        l2_gtxn_s=l2_bw_gb_s / SECTOR_BYTES if l2_bw_gb_s else None,
        dram_gtxn_s=device.peak_bw_gb_s / SECTOR_BYTES,
        sources=sources,
    )


def merge_ceilings(first: InstructionCeilings,
                   fallback: InstructionCeilings) -> InstructionCeilings:
    """Each ceiling from ``first`` where it has one, else from ``fallback``."""
    names = ("peak_warp_gips", "l1_gtxn_s", "l2_gtxn_s", "dram_gtxn_s")
    keys = ("peak_warp_gips", "l1", "l2", "dram")
    values, sources = {}, {}
    for name, key in zip(names, keys, strict=True):
        own = getattr(first, name)
        chosen, src = (own, first) if own is not None else (getattr(fallback, name), fallback)
        values[name] = chosen
        if key in src.sources:
            sources[key] = src.sources[key]
    return InstructionCeilings(**values, sources=sources)


def instruction_roofline(profiles: Sequence[KernelProfile], labels: Sequence[str] | None = None,
                         ) -> tuple[InstructionRooflinePoint, ...]:
    """Points of every profile that holds the instruction-roofline metrics (others are skipped)."""
    labels = labels or [None] * len(profiles)  # type: ignore[list-item]
    points = []
    for p, label in zip(profiles, labels, strict=True):
        if p.value(*M.WARP_INST) is not None and p.duration_ns:
            points.append(roofline_point(p, label))
    return tuple(points)
