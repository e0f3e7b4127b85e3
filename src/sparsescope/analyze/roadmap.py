"""Roadmap: findings ranked by the gain the model predicts for fixing them.

Gain models (pure functions, formula in each docstring); every roadmap item carries the formula
with its numbers and the assumption under which it holds:

* ``bytes-removed``: time scales with the bytes moved -- ``speedup = bytes_before / bytes_after``
  (bytes removed / bandwidth, at the achieved bandwidth);
* ``stall-removed``: the CPI model of seed 000 section 7.7 -- ``speedup = CPI / (CPI - removed)``
  (:func:`sparsescope.model.dae.dae_cpi_prediction`);
* ``littles-law``: throughput scales with the warps that keep loads in flight, up to the
  Little's-law ceiling (:mod:`sparsescope.model.littles_law`);
* ``dae``: a dependent chain of depth d divides memory-level parallelism by d; breaking it
  multiplies it back, capped by the ceiling (:func:`sparsescope.model.dae.dae_bw_prediction`);
* ``waves``: idle block slots or a partial last wave;
* ``issue-reduced``: divergence serialises paths; issue-bound time falls with branch efficiency.

A kernel's speedup ``S_k`` becomes the workload's through Amdahl over its time share ``s``:
``S = 1 / (1 - s + s / S_k)``, capped by the physical floor: ``S <= time / floor``.
"""

from __future__ import annotations

from collections.abc import Iterable

from sparsescope.analyze.bound import kernel_bytes
from sparsescope.analyze.evidence import Evidence, KernelEvidence
from sparsescope.analyze.records import Finding, RoadmapItem, UnrankedFinding

#: Latency of a shared-memory load (cycles), against which a cached search step is judged
#: (Hopper/Ampere microbenchmarks put LDS at ~23-33 cycles).
SHARED_LATENCY_CYCLES = 30.0
#: No kernel finishes faster than this (launch, ramp-up and drain of an empty grid take
#: 2-3 us on Hopper), so a predicted kernel speedup never exceeds kernel time / this.
MIN_KERNEL_TIME_MS = 0.002
#: Items of one group remove the same cost; applied together only the largest counts.
GROUPS = {"uncoalesced_access": "memory-traffic", "overfetch": "memory-traffic",
          "dependent_load_chain": "latency-hiding", "low_occupancy": "latency-hiding",
          "too_few_blocks": "latency-hiding"}
#: Findings that diagnose rather than prescribe, or have no gain model, and why.
UNRANKED = {
    "dominant_stall": "a diagnosis: the steps that remove its cause carry the gain",
    "missing_read_only": "no traffic change to model (the read-only path changes caching, "
                         "typically a few %)",
    "atomics": "contention depends on the address distribution, which the evidence lacks",
}


# --------------------------------------------------------------------------- gain models


def amdahl(kernel_speedup: float, share: float) -> float:
    """Workload speedup when a kernel taking ``share`` of the time speeds up ``kernel_speedup``
    times: ``1 / (1 - share + share / kernel_speedup)``."""
    if kernel_speedup <= 0:
        raise ValueError(f"kernel_speedup must be > 0, got {kernel_speedup}")
    return 1.0 / ((1.0 - share) + share / kernel_speedup)


def cap_at_floor(speedup: float, time_ms: float | None, floor_ms: float | None) -> float:
    """No step can beat the physical floor: ``min(speedup, time / floor)`` (never below 1 when
    the time is already under the floor: the byte count then overstates the traffic)."""
    if time_ms and floor_ms and floor_ms > 0:
        return min(speedup, max(1.0, time_ms / floor_ms))
    return speedup


def bytes_removed_speedup(bytes_before: float, bytes_after: float,
                          utilization: float = 1.0) -> float:
    """Bytes removed / bandwidth. A unit at utilization ``u`` of its peak moved ``bytes_before``
    in ``u x t x peak``; removing ``b = before - after`` bytes saves ``b / peak = u t b /
    before``::

        speedup = 1 / (1 - u x (1 - after / before))

    ``u = 1`` (the unit bounds the kernel) gives ``before / after``."""
    if bytes_after <= 0 or bytes_before <= 0:
        raise ValueError("byte counts must be > 0")
    u = min(1.0, max(0.0, utilization))
    removed = max(0.0, 1.0 - bytes_after / bytes_before)
    return 1.0 / (1.0 - u * removed) if u * removed < 1 else float(bytes_before / bytes_after)


def stall_removed_speedup(cpi: float, removed_cycles: float) -> float:
    """Seed 000 section 7.7: ``CPI / (CPI - removed)``."""
    from sparsescope.model.dae import dae_cpi_prediction

    removed = min(max(0.0, removed_cycles), 0.95 * cpi)  # a warp always pays its issue cycle
    return dae_cpi_prediction(cpi, removed).speedup


def littles_law_speedup(current_warps: float, new_warps: float, current_pct: float | None,
                        ceiling_pct: float | None) -> float:
    """More resident warps keep more loads in flight (Little's law):
    ``min(new / current, ceiling / current_pct)``, at least 1; without a bandwidth figure the
    warp ratio alone."""
    gain = new_warps / current_warps if current_warps > 0 else 1.0
    if current_pct and ceiling_pct:
        gain = min(gain, max(1.0, ceiling_pct / current_pct))
    return max(1.0, gain)


def waves_speedup(grid_blocks: int, block_slots: int) -> float:
    """Idle slots or a partial last wave: ``slots / grid`` for a grid smaller than one wave
    (the work spread over every slot); ``ceil(w) / w`` for ``w = grid / slots >= 1``."""
    waves = grid_blocks / block_slots
    if waves < 1:
        return block_slots / grid_blocks
    return -(-grid_blocks // block_slots) / waves


def issue_reduced_speedup(issue_active_pct: float, branch_efficiency_pct: float) -> float:
    """Divergent paths run one after the other; an issue-bound share ``u`` of the time shrinks
    by the branch efficiency ``e``: ``1 / (1 - u (1 - e))``."""
    u = min(1.0, max(0.0, issue_active_pct / 100.0))
    e = min(1.0, max(0.0, branch_efficiency_pct / 100.0))
    return 1.0 / (1.0 - u * (1.0 - e))


# --------------------------------------------------------------------------- per-rule gains


def _bw_pct(ev: Evidence, ke: KernelEvidence) -> float | None:
    p = ke.profile
    if p is not None and p.dram_throughput_pct:
        return p.dram_throughput_pct
    nbytes, _ = kernel_bytes(ev, ke)
    if nbytes and ke.time_ms:
        return 100.0 * nbytes / (ke.time_ms / max(1, ke.launches) * 1e-3) / 1e9 / \
            ev.device.peak_bw_gb_s
    return None


def _required(ev: Evidence) -> float:
    from sparsescope.model.littles_law import warps_per_sm_required

    d = ev.device
    return warps_per_sm_required(d.peak_bw_gb_s, d.dram_latency_ns, d.sm_count)


def _cache_utilization(ke: KernelEvidence) -> tuple[float, str]:
    p = ke.profile
    got = [(v, n) for v, n in ((p.l2_throughput_pct, "L2"), (p.l1_throughput_pct, "L1"))
           if p is not None and v is not None]
    if not got:
        return 1.0, "assumed 100 %"
    v, name = max(got)
    return v / 100.0, f"{name} at {v:.1f} %"


def _gain_overfetch(ev, ke, f: Finding):
    n = f.numbers
    after = ev.ideal_bytes
    if n.get("dram_overfetch") and n["dram_overfetch"] >= 1.25:
        before, level = n["dram_bytes"], "DRAM"
        pct = _bw_pct(ev, ke)
        u, unit = ((pct / 100.0, f"DRAM at {pct:.1f} %") if pct else (1.0, "assumed 100 %"))
    else:
        before, level = n["requested_bytes"], "requested (sectors x 32)"
        u, unit = _cache_utilization(ke)
    s = bytes_removed_speedup(before, after, u)
    return ("bytes-removed", s, f"1 / (1 - {u:.3f} x (1 - {after / 1e6:.2f} MB ideal / "
            f"{before / 1e6:.2f} MB {level})) = {s:.2f}x ({unit})",
            "the unit moving the excess bytes spends u x t on them at its peak rate; reading "
            "every byte once removes that share (bytes removed / peak bandwidth)",
            {"bytes_before": before, "bytes_after": after, "utilization": u},
            "read every byte once")


def _gain_uncoalesced(ev, ke, f: Finding):
    p = ke.profile
    if p is None or not p.l2_theoretical_sectors:
        return None
    excess = f.numbers.get("flagged_excess_sectors") or 0
    if excess <= 0 and p.l2_ideal_sectors:
        excess = p.l2_theoretical_sectors - p.l2_ideal_sectors
    before = p.l2_theoretical_sectors
    after = max(1.0, before - excess)
    u, unit = _cache_utilization(ke)
    s = bytes_removed_speedup(before, after, u)
    return ("bytes-removed", s, f"1 / (1 - {u:.3f} x {excess:.0f} excess / {before:.0f} "
            f"sectors) = {s:.2f}x ({unit})", "the flagged accesses become fully coalesced; "
            "the L1/L2 time spent on their excess sectors goes (bytes removed / peak bandwidth)",
            {"sectors_before": before, "sectors_after": after, "utilization": u},
            "coalesce the flagged accesses")


def _gain_chain(ev, ke, f: Finding):
    p = ke.profile
    s_ev = ke.static
    depth = max(2, s_ev.max_chain_depth if s_ev else 2)
    search = bool(f.numbers.get("searches"))
    if p is not None and p.cpi and p.stalls.get("long_scoreboard"):
        ls = p.stalls["long_scoreboard"]
        if search:
            clock_ghz = (p.sm_clock_hz / 1e9 if p.sm_clock_hz else
                         (ev.device.sm_clock_mhz / 1e3 or 1.98))
            global_cycles = ev.device.dram_latency_ns * clock_ghz
            frac = 1.0 - SHARED_LATENCY_CYCLES / global_cycles
            removed = ls * frac
            why = (f"long scoreboard {ls:.2f} x (1 - {SHARED_LATENCY_CYCLES:.0f} / "
                   f"{global_cycles:.0f} cycles)")
            assumption = ("every long-scoreboard stall is a wait on the searched (chained) "
                          "loads, and a cached search step costs a shared-memory latency")
        else:
            removed = ls * (1.0 - 1.0 / depth)
            why = f"long scoreboard {ls:.2f} x (1 - 1/{depth})"
            assumption = (f"every long-scoreboard stall is a wait on the chained loads; "
                          f"prefetching overlaps the {depth} dependent latencies")
        s = stall_removed_speedup(p.cpi, removed)
        return ("stall-removed", s, f"CPI {p.cpi:.2f} / ({p.cpi:.2f} - {why} = {removed:.2f}) "
                f"= {s:.2f}x", assumption, {"cpi": p.cpi, "removed_cycles": removed},
                "cache the searched data in shared memory / prefetch the index"
                if search else "prefetch the index loads one iteration ahead")
    pct = _bw_pct(ev, ke)
    occ = ke.occupancy
    if pct and occ is not None:
        from sparsescope.model.dae import dae_bw_prediction
        from sparsescope.model.littles_law import ceiling_pct

        ceiling = max(pct, ceiling_pct(occ.active_warps_per_sm, _required(ev)))
        pred = dae_bw_prediction(pct, ceiling, mlp_gain=depth)
        return ("dae", pred.speedup, f"min(ceiling {ceiling:.1f} %, {depth} x {pct:.2f} %) / "
                f"{pct:.2f} % = {pred.speedup:.2f}x", f"breaking the chain lets each warp keep "
                f"{depth} loads in flight instead of 1, up to the Little's-law ceiling of "
                f"{occ.active_warps_per_sm} warps/SM", {"current_pct": pct, "ceiling_pct": ceiling},
                "break the dependent loads (prefetch, cache, cooperate)")
    return None


def _gain_stall(reason_cycles: Iterable[str], fraction: float, what: str, action: str):
    def gain(ev, ke, f):
        p = ke.profile
        if p is None or not p.cpi:
            return None
        cycles = sum(p.stalls.get(r, 0.0) for r in reason_cycles)
        frac = fraction if not callable(fraction) else fraction(ev, ke, f)
        if not cycles or frac is None or frac <= 0:
            return None
        removed = cycles * frac
        s = stall_removed_speedup(p.cpi, removed)
        names = " + ".join(reason_cycles)
        return ("stall-removed", s, f"CPI {p.cpi:.2f} / ({p.cpi:.2f} - ({names}) {cycles:.2f} x "
                f"{frac:.2f}) = {s:.2f}x", what, {"cpi": p.cpi, "removed_cycles": removed},
                action)
    return gain


def _narrow_fraction(ev, ke, f):
    widths = [int(w) for w in str(f.numbers.get("widths_bytes", "")).split(",") if w]
    return 1.0 - min(widths) / 16.0 if widths else None


def _bank_fraction(ev, ke, f):
    ways = f.numbers.get("shared_load_ways") or f.numbers.get("static_max_ways")
    return 1.0 - 1.0 / ways if ways and ways > 1 else None


def _spill_fraction(ev, ke, f):
    p = ke.profile
    local = f.numbers.get("local_executed")
    if p is None or not local:
        return None
    global_inst = (p.ld_requests or 0.0) + (p.st_requests or 0.0)
    return local / (local + global_inst) if local + global_inst else None


def _gain_divergence(ev, ke, f):
    p = ke.profile
    if p is None or p.branch_uniform_pct is None or p.issue_active_pct is None:
        return None
    s = issue_reduced_speedup(p.issue_active_pct, p.branch_uniform_pct)
    return ("issue-reduced", s, f"1 / (1 - {p.issue_active_pct:.1f} % x (1 - "
            f"{p.branch_uniform_pct:.1f} %)) = {s:.3f}x", "the issue-active share of the time "
            "shrinks by the branch efficiency (divergent paths run serially)",
            {"issue_active_pct": p.issue_active_pct,
             "branch_efficiency_pct": p.branch_uniform_pct}, "make the branches warp-uniform")


def _gain_occupancy(ev, ke, f):
    occ = ke.occupancy
    if occ is None:
        return None
    others = sorted(v for k, v in occ.limits_blocks.items() if k not in occ.limiter.split(", "))
    if not others:
        return None
    new_blocks = others[0]
    new_warps = min(new_blocks * occ.warps_per_block, occ.max_warps_per_sm)
    cur = ke.profile.active_warps_per_sm if ke.profile and ke.profile.active_warps_per_sm \
        else occ.active_warps_per_sm
    cur_theoretical = occ.active_warps_per_sm
    pct = _bw_pct(ev, ke)
    from sparsescope.model.littles_law import ceiling_pct

    ceiling = ceiling_pct(new_warps * cur / cur_theoretical, _required(ev)) if pct else None
    s = littles_law_speedup(cur_theoretical, new_warps, pct, ceiling)
    return ("littles-law", s, f"min({new_warps} / {cur_theoretical} warps, ceiling "
            f"{ceiling or 0:.1f} % / {pct or 0:.2f} %) = {s:.2f}x",
            "latency-bound: throughput proportional to resident warps (Little's law) up to "
            f"the ceiling; the next limit allows {new_blocks} blocks/SM",
            {"warps_before": cur_theoretical, "warps_after": new_warps},
            f"lift the {occ.limiter} limit")


def _gain_waves(ev, ke, f):
    n = f.numbers
    s = waves_speedup(n["grid_blocks"], n["block_slots"])
    pct = _bw_pct(ev, ke)
    if pct:
        s = min(s, max(1.0, 100.0 / pct))
    return ("waves", s, f"{n['grid_blocks']} blocks over {n['block_slots']} slots "
            f"(waves {n['waves']}) = {s:.2f}x" + (f", capped at 100 / {pct:.2f} % of peak"
                                                   if pct else ""),
            "the work splits into enough blocks to fill every slot and time falls with the "
            "resident warps, up to peak bandwidth", {"grid_blocks": n["grid_blocks"],
                                                     "block_slots": n["block_slots"]},
            "launch more, smaller blocks")


GAINS = {
    "overfetch": _gain_overfetch,
    "uncoalesced_access": _gain_uncoalesced,
    "dependent_load_chain": _gain_chain,
    "narrow_loads": _gain_stall(("lg_throttle",), _narrow_fraction,
                                "LG-throttle stalls fall with the number of load instructions "
                                "(16 B per lane instead of the narrow width)",
                                "vectorize the loads to 16 B per lane"),
    "register_spill": _gain_stall(("long_scoreboard", "lg_throttle"), _spill_fraction,
                                  "memory stalls shrink by the local instructions' share of "
                                  "the memory instructions", "remove the spills"),
    "warp_divergence": _gain_divergence,
    "bank_conflicts": _gain_stall(("short_scoreboard", "mio_throttle"), _bank_fraction,
                                  "shared-memory stalls fall by the excess wavefronts "
                                  "(1 - 1/ways)", "pad or swizzle the shared array"),
    "low_occupancy": _gain_occupancy,
    "too_few_blocks": _gain_waves,
}


def build_roadmap(ev: Evidence, findings: Iterable[Finding]
                  ) -> tuple[tuple[RoadmapItem, ...], tuple[UnrankedFinding, ...]]:
    """Rank the findings by predicted workload speedup (largest first)."""
    kernels = {k.name: k for k in ev.kernels}
    items, unranked = [], []
    for f in findings:
        ke = kernels.get(f.kernel)
        gain = GAINS.get(f.rule)
        if f.rule in UNRANKED or gain is None or ke is None:
            unranked.append(UnrankedFinding(f.rule, f.kernel, UNRANKED.get(
                f.rule, "no gain model for this rule")))
            continue
        got = gain(ev, ke, f)
        if got is None:
            unranked.append(UnrankedFinding(f.rule, f.kernel, "the evidence lacks the numbers "
                                            "its gain model needs (profile counters or time)"))
            continue
        model, ks, formula, assumption, inputs, action = got
        per_launch = ke.time_ms / max(1, ke.launches) if ke.time_ms else None
        if per_launch and ks > per_launch / MIN_KERNEL_TIME_MS:
            ks = max(1.0, per_launch / MIN_KERNEL_TIME_MS)
            formula += (f"; capped at {per_launch * 1e3:.1f} us / "
                        f"{MIN_KERNEL_TIME_MS * 1e3:.0f} us minimum kernel time = {ks:.2f}x")
        ws = cap_at_floor(amdahl(ks, ke.time_share), ev.time_ms, ev.floor_ms)
        if ke.time_share < 1:
            formula += f"; Amdahl over {100 * ke.time_share:.1f} % of the time"
        items.append(RoadmapItem(0, f.rule, f.kernel, action, model, formula, assumption, ks, ws,
                                 ev.time_ms / ws if ev.time_ms else None, GROUPS.get(f.rule, ""),
                                 {k: round(v, 6) if isinstance(v, float) else v
                                  for k, v in inputs.items()}))
    items.sort(key=lambda it: -it.predicted_speedup)
    ranked = tuple(RoadmapItem(i + 1, *(getattr(it, n) for n in (
        "rule", "kernel", "action", "model", "formula", "assumption", "kernel_speedup",
        "predicted_speedup", "predicted_time_ms", "group", "inputs"))) for i, it in
        enumerate(items))
    return ranked, tuple(unranked)


def combine(items: Iterable[RoadmapItem], time_ms: float | None,
            floor_ms: float | None) -> float:
    """Predicted speedup of several steps applied together: the largest item per group (items of
    a group remove the same cost), the product across groups and ungrouped items, capped by
    the floor. 1.0 for no items."""
    best: dict[str, float] = {}
    product = 1.0
    for it in items:
        if it.group:
            best[it.group] = max(best.get(it.group, 1.0), it.predicted_speedup)
        else:
            product *= it.predicted_speedup
    for v in best.values():
        product *= v
    return cap_at_floor(product, time_ms, floor_ms)
