"""What bounds a kernel: DRAM or L1/L2 bandwidth, compute (issue), or latency -- from the
measured throughputs against the ceilings and Little's law at the measured warps."""

from __future__ import annotations

from dataclasses import replace

from sparsescope.analyze.evidence import Evidence, KernelEvidence
from sparsescope.analyze.records import Bottleneck

#: A unit's throughput above this % of peak means the unit bounds the kernel (ncu's own
#: guidance treats > 60 % of peak as "high utilization").
BOUND_PCT = 60.0


def _r(x: float | None, digits: int = 4):
    return None if x is None else round(float(x), digits)


def kernel_bytes(ev: Evidence, ke: KernelEvidence) -> tuple[float | None, str]:
    """Bytes this kernel moves: DRAM bytes from the profile, else the ideal bytes when the
    workload has one kernel."""
    if ke.profile is not None and ke.profile.dram_bytes is not None:
        return ke.profile.dram_bytes, "dram"
    if ev.ideal_bytes and len(ev.kernels) == 1:
        return float(ev.ideal_bytes), "ideal"
    return None, ""


#: FP32 work below this % of peak is not what a busy SM is doing.
FLOP_SHARE_PCT = 10.0


def _compute_reason(top: float, flops_pct: float | None, bw_pct: float | None) -> str:
    """Why the SM bounds the kernel, and by what: floating-point work only when the FLOPs are
    a real share of the FP32 peak; otherwise issuing instructions (address arithmetic, index
    decoding, loads), which is not "compute" in the roofline's sense."""
    dram = f"DRAM at {(bw_pct or 0):.1f} %"
    if flops_pct is not None and flops_pct < FLOP_SHARE_PCT:
        return (f"instruction issue at {top:.1f} % of peak (>= {BOUND_PCT:.0f} %) while FP32 "
                f"work is {flops_pct:.1f} % of its peak and {dram}: issue-bound, by "
                f"instructions that are not floating-point math (addressing, decoding, loads)")
    return f"SM/issue at {top:.1f} % of peak (>= {BOUND_PCT:.0f} %) with {dram}"


def _dram_pct(ev: Evidence, ke: KernelEvidence, nums: dict) -> float | None:
    """DRAM bandwidth as % of peak: the profile's, else bytes / time against the peak (the
    achieved bandwidth and the bytes go into ``nums``)."""
    nbytes, kind = kernel_bytes(ev, ke)
    p = ke.profile
    bw_pct = p.dram_throughput_pct if p is not None else None
    if nbytes is not None and ke.time_ms:
        per_launch_ms = ke.time_ms / max(1, ke.launches)
        bw = nbytes / (per_launch_ms * 1e-3) / 1e9
        nums["achieved_bw_gb_s"] = _r(bw, 1)
        nums[f"{kind}_bytes"] = int(nbytes)
        bw_pct = bw_pct if bw_pct is not None else 100.0 * bw / ev.device.peak_bw_gb_s
    nums["bw_pct_of_peak"] = _r(bw_pct, 2)
    return bw_pct


def bottleneck(ev: Evidence, ke: KernelEvidence) -> Bottleneck:
    """Bandwidth, compute or latency bound (formulas in the returned reason)::

        bw_pct   = 100 x bytes / time / peak_bw        (DRAM bytes, or ideal bytes)
        bound    = bandwidth if bw_pct >= 60; compute if SM throughput or issue >= 60 (issue
                   when the FLOPs are under 10 % of the FP32 peak: not floating-point work);
                   latency otherwise, with Little's law at the measured active warps:
        required = peak_bw x latency / SMs / 128 B,  ceiling = 100 x min(1, active / required)
    """
    from sparsescope.model.littles_law import ceiling_pct, warps_per_sm_required

    dev = ev.device
    nums: dict = {}
    p = ke.profile
    bw_pct = _dram_pct(ev, ke, nums)
    cache_pct, cache = None, ""
    if p is not None:
        for name, v in (("L2", p.l2_throughput_pct), ("L1", p.l1_throughput_pct)):
            if v is not None and v > (cache_pct or 0.0):
                cache_pct, cache = v, name
        nums["l2_throughput_pct"] = _r(p.l2_throughput_pct, 2)
        nums["l1_throughput_pct"] = _r(p.l1_throughput_pct, 2)
    sm_pct = None if p is None else max(x for x in (p.sm_throughput_pct or 0.0,
                                                    p.issue_active_pct or 0.0))
    if p is not None:
        nums["sm_throughput_pct"] = _r(p.sm_throughput_pct, 2)
        nums["issue_active_pct"] = _r(p.issue_active_pct, 2)
    flops_pct = None
    if ev.ideal_flops and ev.time_ms and len(ev.kernels) == 1:
        flops_pct = 100.0 * ev.ideal_flops / (ev.time_ms * 1e-3) / 1e9 / dev.fp32_peak_gflops
        nums["flops_pct_of_peak"] = _r(flops_pct, 3)
    required = warps_per_sm_required(dev.peak_bw_gb_s, dev.dram_latency_ns, dev.sm_count)
    nums["required_warps_per_sm"] = _r(required, 1)
    nums["dram_latency_ns"] = dev.dram_latency_ns
    active = None
    if p is not None and p.active_warps_per_sm is not None:
        active = p.active_warps_per_sm
    elif ke.occupancy is not None:
        active = ke.occupancy.active_warps_per_sm
    above = ""
    if active is not None:
        nums["active_warps_per_sm"] = _r(active, 2)
        nums["littles_law_ceiling_pct"] = _r(ceiling_pct(active, required), 2)
        above = _above_ceiling(bw_pct, nums, dev, p)
    if bw_pct is None and sm_pct is None:
        return Bottleneck(ke.name, "unknown", "no time, bytes or profile to compare with the "
                          "ceilings", nums)
    found = _bound(ke, bw_pct, cache_pct, cache, sm_pct, flops_pct, nums, active, required,
                   dev)
    return replace(found, reason=found.reason + above) if above else found


def _above_ceiling(bw_pct: float | None, nums: dict, dev, p) -> str:
    """Why DRAM runs above its Little's-law ceiling ("" at or below it)::

        lines per warp needed = achieved % / ceiling %   (the ceiling counts one 128-B line)

    Each warp keeps more lines in flight than one (independent loads; lanes whose loads touch
    several lines: sectors per request x 32 B / 128 B), or the latency used is lower than
    the estimate it is -- the cause is named, never left as two numbers side by side."""
    ceiling = nums.get("littles_law_ceiling_pct")
    if bw_pct is None or not ceiling or bw_pct <= ceiling:
        return ""
    need = bw_pct / ceiling
    nums["lines_in_flight_per_warp_needed"] = _r(need, 2)
    text = (f"; DRAM at {bw_pct:.1f} % is above the {ceiling:.1f} % Little's-law ceiling "
            f"because that ceiling counts one 128-byte line in flight per active warp, and "
            f"{bw_pct:.1f} % takes at least {need:.2f} lines per warp: the kernel keeps more "
            f"in flight per warp")
    if p is not None and p.ld_sectors and p.ld_requests:
        per_request = p.ld_sectors / p.ld_requests
        text += (f" (its global loads touch {per_request:.1f} sectors, "
                 f"{per_request * 32 / 128:.1f} lines, per request)")
    if "measured" not in dev.source:  # a measured latency is the unloaded one: never lower
        text += f", or the DRAM latency is below the {dev.dram_latency_ns:.0f} ns estimate"
    return text


def _bound(ke, bw_pct, cache_pct, cache, sm_pct, flops_pct, nums, active, required,
           dev) -> Bottleneck:
    """The bound of :func:`bottleneck`, from the figures it gathered."""
    if bw_pct is not None and bw_pct >= BOUND_PCT:
        return Bottleneck(ke.name, "bandwidth", f"DRAM at {bw_pct:.1f} % of peak "
                          f"(>= {BOUND_PCT:.0f} %)", nums)
    if cache_pct is not None and cache_pct >= BOUND_PCT:
        return Bottleneck(ke.name, "bandwidth", f"{cache} at {cache_pct:.1f} % of peak "
                          f"(>= {BOUND_PCT:.0f} %) with DRAM at {(bw_pct or 0):.1f} %: the "
                          "traffic between SM and L2 bounds it, not DRAM", nums)
    top = max(x for x in (sm_pct or 0.0, flops_pct or 0.0))
    if top >= BOUND_PCT:
        issue = flops_pct is not None and flops_pct < FLOP_SHARE_PCT
        return Bottleneck(ke.name, "issue" if issue else "compute",
                          _compute_reason(top, flops_pct, bw_pct), nums)
    why = f"neither DRAM ({(bw_pct or 0):.1f} %) nor SM ({(sm_pct or 0):.1f} %) above " \
          f"{BOUND_PCT:.0f} % of peak: the kernel waits on latency"
    if active is not None:
        why += (f"; {active:.1f} active warps/SM against {required:.1f} needed to cover "
                f"{dev.dram_latency_ns:.0f} ns at peak bandwidth (Little's law ceiling "
                f"{nums['littles_law_ceiling_pct']:.1f} %)")
    return Bottleneck(ke.name, "latency", why, nums)


