"""Ceilings of the profile section's rooflines and of its Little's-law check, each saying where it
comes from: ``measured`` (the run's measured ceilings, from a RunSet or the results store),
``spec`` (the datasheet table, :mod:`sparsescope.hardware.specs`) or ``ncu peak`` (the profile's
own ``*.peak_sustained`` metrics at the clocks the kernel ran at). :func:`resolve_ceilings` takes
each figure from the first of those three that has it, in that order.

Formulas (``clock`` the SM clock in GHz, 32 B per sector, 128 B per shared-memory wavefront):

    warp_gips = SMs x schedulers x 1 warp instruction / cycle x clock       (seed 004)
    l1_gb_s   = SMs x 128 B / cycle x clock;   shared_gb_s = SMs x 128 B / cycle x clock
    dram_gb_s = measured read bandwidth, else the copy bandwidth, else the datasheet peak
    l2_gb_s   = measured L2-resident read bandwidth, else ncu's peak
    fp32 / fp64 GFLOP/s = measured FMA throughput, else datasheet, else ncu's FMA peak x 2 x clock
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from sparsescope.profile import metrics as M
from sparsescope.profile.records import KernelProfile

SECTOR_BYTES = 32
WAVEFRONT_BYTES = 128
#: L1 and shared-memory data path per SM per cycle, Volta through Hopper.
L1_BYTES_PER_CYCLE_PER_SM = 128.0
KINDS = ("measured", "spec", "ncu peak")


@dataclass(frozen=True)
class Ceiling:
    """One ceiling and its provenance."""

    value: float
    kind: str
    """``measured``, ``spec`` or ``ncu peak``."""
    source: str
    """How it was obtained (method, datasheet line, metrics)."""


@dataclass(frozen=True)
class RooflineCeilings:
    """Every ceiling the profile section uses; None where no source gives one."""

    device: str
    sm_count: int | None = None
    max_warps_per_sm: int | None = None
    warp_gips: Ceiling | None = None
    """Peak warp instructions per second, 10^9."""
    l1_gb_s: Ceiling | None = None
    l2_gb_s: Ceiling | None = None
    dram_gb_s: Ceiling | None = None
    shared_gb_s: Ceiling | None = None
    fp32_gflops: Ceiling | None = None
    fp64_gflops: Ceiling | None = None
    dram_latency_ns: Ceiling | None = None

    def merged(self, fallback: RooflineCeilings) -> RooflineCeilings:
        """Each field from self where set, else from ``fallback``."""
        values = {f.name: getattr(self, f.name) if getattr(self, f.name) not in (None, "")
                  else getattr(fallback, f.name) for f in fields(self)}
        return RooflineCeilings(**values)

    def kinds(self) -> set[str]:
        return {c.kind for c in (getattr(self, f.name) for f in fields(self))
                if isinstance(c, Ceiling)}


def from_spec(spec) -> RooflineCeilings:
    """Datasheet ceilings of a :class:`~sparsescope.hardware.types.DeviceSpec` (GPU)."""
    clock = spec.sm_clock_mhz / 1e3
    where = f"{spec.name} spec table"
    per_sm = spec.sm_count * L1_BYTES_PER_CYCLE_PER_SM * clock
    path = (f"{where}: {spec.sm_count} SMs x {L1_BYTES_PER_CYCLE_PER_SM:g} B/cycle x "
            f"{clock:.3f} GHz")
    return RooflineCeilings(
        device=spec.name, sm_count=spec.sm_count, max_warps_per_sm=spec.max_warps_per_sm,
        warp_gips=Ceiling(spec.sm_count * spec.warp_schedulers_per_sm * clock, "spec",
                          f"{where}: {spec.sm_count} SMs x {spec.warp_schedulers_per_sm} "
                          f"schedulers x 1 inst/cycle x {clock:.3f} GHz"),
        l1_gb_s=Ceiling(per_sm, "spec", path), shared_gb_s=Ceiling(per_sm, "spec", path),
        dram_gb_s=Ceiling(spec.peak_bw_gb_s, "spec",
                          spec.sources.get("peak_bw_gb_s", f"{where}: peak bandwidth")),
        fp32_gflops=Ceiling(spec.fp32_peak_gflops, "spec",
                            spec.sources.get("fp32_peak_gflops", f"{where}: FP32 peak")),
        dram_latency_ns=Ceiling(spec.dram_latency_ns, "spec",
                                spec.sources.get("dram_latency_ns", f"{where}: latency")),
    )


def from_measured(measured) -> RooflineCeilings:
    """Ceilings a :class:`~sparsescope.hardware.types.MeasuredCeilings` holds."""
    method = measured.method

    def made(value, key, what):
        if not value:
            return None
        how = method.get(key)
        return Ceiling(float(value), "measured", f"{what}: {how}" if how else what)

    dram = made(measured.read_bw_gb_s, "read_bw_gb_s", "DRAM read bandwidth")
    if dram is None:
        dram = made(measured.copy_bw_gb_s, "copy_bw_gb_s",
                    "DRAM copy bandwidth (read + write counted)")
    return RooflineCeilings(
        device=measured.device, dram_gb_s=dram,
        l2_gb_s=made(measured.l2_bw_gb_s, "l2_bw_gb_s", "L2-resident read bandwidth"),
        fp32_gflops=made(measured.fp32_gflops, "fp32_gflops", "FP32 FMA rate"),
        dram_latency_ns=made(measured.dram_latency_ns, "dram_latency_ns", "DRAM latency"))


def from_profile(profile: KernelProfile) -> RooflineCeilings:
    """ncu's own peaks (``*.peak_sustained`` x the measured clocks) in one profile."""
    from sparsescope.profile.instruction_roofline import ceilings_from_profile

    inst = ceilings_from_profile(profile)
    clock = profile.value(*M.SM_CLOCK_HZ)
    sms = profile.value(*M.DEVICE_SM_COUNT)

    def made(value, key, scale=1.0):
        return None if value is None else Ceiling(value * scale, "ncu peak",
                                                  inst.sources.get(key, "ncu peak metrics"))

    flops = {}
    for name, peak in (("fp32", M.FP32_PEAK_FMA_PER_CYCLE), ("fp64", M.FP64_PEAK_FMA_PER_CYCLE)):
        per_cycle = profile.value(*peak)
        if per_cycle and clock:
            flops[name] = Ceiling(per_cycle * 2 * clock / 1e9, "ncu peak",
                                  f"{peak[0]} {per_cycle:g}/cycle x 2 x {clock / 1e9:.3f} GHz")
    shared = None
    if sms and clock:
        shared = Ceiling(sms * L1_BYTES_PER_CYCLE_PER_SM * clock / 1e9, "ncu peak",
                         f"{sms:.0f} SMs x 1 wavefront (128 B)/cycle x {clock / 1e9:.3f} GHz")
    warps = profile.value(*M.MAX_WARPS_PER_SM)
    return RooflineCeilings(
        device=profile.text(M.DEVICE_NAME) or "", sm_count=None if sms is None else int(sms),
        max_warps_per_sm=None if warps is None else int(warps),
        warp_gips=made(inst.peak_warp_gips, "peak_warp_gips"),
        l1_gb_s=made(inst.l1_gtxn_s, "l1", SECTOR_BYTES),
        l2_gb_s=made(inst.l2_gtxn_s, "l2", SECTOR_BYTES),
        dram_gb_s=made(inst.dram_gtxn_s, "dram", SECTOR_BYTES), shared_gb_s=shared,
        fp32_gflops=flops.get("fp32"), fp64_gflops=flops.get("fp64"))


def measured_from_store(device: str, store=None):
    """The newest stored run's measured ceilings on ``device`` (the driver's name, e.g.
    ``NVIDIA H200``); None when the store holds none. ``store``: a ResultsStore (default: the
    user's store)."""
    from sparsescope.results.store import ResultsStore

    store = store if store is not None else ResultsStore()
    if not store.path.is_file():
        return None
    for run in reversed(store.runs()):
        if run.device != device:
            continue
        ceilings = store.load(run.run_id).ceilings
        if any(getattr(ceilings, n) for n in ("read_bw_gb_s", "copy_bw_gb_s", "l2_bw_gb_s",
                                              "dram_latency_ns", "fp32_gflops")):
            return ceilings
    return None


def resolve_ceilings(profiles: Sequence[KernelProfile], *, runset=None, measured=None,
                     spec=None, use_store: bool = False) -> RooflineCeilings:
    """Measured first (``measured``, else ``runset.ceilings``, else the store when
    ``use_store``), then the spec table (``spec``, else ``runset.device`` when it is a GPU,
    else the entry named like the profiled device), then ncu's peaks in the profiles."""
    import sparsescope.hardware.specs as spec_table

    device = next((p.text(M.DEVICE_NAME) for p in profiles if p.text(M.DEVICE_NAME)), "")
    if measured is None and runset is not None and runset.device.kind == "gpu":
        measured = runset.ceilings
    if measured is not None and device and measured.device and measured.device != device:
        measured = None  # ceilings of another GPU say nothing about this one
    if measured is None and use_store and device:
        measured = measured_from_store(device)
    if spec is None and runset is not None and runset.device.kind == "gpu":
        spec = runset.device
    lookup = getattr(spec_table, "match_device_name", None)  # a replaced table may lack it
    if spec is None and device and lookup is not None:
        spec = lookup(device)
    result = RooflineCeilings(device=device)
    if measured is not None:
        result = result.merged(from_measured(measured))
    if spec is not None:
        result = result.merged(from_spec(spec))
    for p in profiles:
        result = result.merged(from_profile(p))
    return result
