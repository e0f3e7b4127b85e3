"""Diagnosis rules: evidence in, :class:`Finding` records out, each with the numbers that made it
fire. The rules are data (:data:`RULES`, name -> function), run over every kernel.

Thresholds are constants below, each with the reason for its value. A rule uses the profile's
counters when there are any and the static (SASS) evidence otherwise or in addition; ``basis``
says which.
"""

from __future__ import annotations

from collections.abc import Callable

from sparsescope.analyze.bound import bottleneck
from sparsescope.analyze.evidence import Evidence, KernelEvidence
from sparsescope.analyze.records import Bottleneck, Finding, Location

#: Sectors per request this many times the coalesced count make an access uncoalesced.
UNCOALESCED_RATIO = 1.5
#: An instruction must carry this share of the kernel's sectors to be listed as a location.
MIN_SECTOR_SHARE = 0.01
#: Requested (or DRAM) bytes this many times the ideal bytes are overfetch.
OVERFETCH_RATIO = 1.25
#: A stall reason above this share of the CPI (or of the PC samples) dominates.
DOMINANT_STALL_PCT = 25.0
#: Branch efficiency (uniform branch targets) below this is divergence worth fixing.
BRANCH_EFFICIENCY_PCT = 90.0
#: Theoretical occupancy at or below this is low (half the warps a latency-bound kernel hides
#: latency with; seed 000 section 5.4).
LOW_OCCUPANCY_PCT = 50.0
#: A grid whose last wave keeps less than this share of the SM slots busy wastes a tail.
TAIL_EFFICIENCY = 0.8
#: LG-throttle stalls above this share of the CPI mean the LSU queue is full of narrow loads.
LG_THROTTLE_PCT = 10.0


def _r(x: float | None, digits: int = 4):
    return None if x is None else round(float(x), digits)


def _loc(ke: KernelEvidence, address: int, sass: str, site, detail: str = "") -> Location:
    """``site``: the evidence record the location comes from (its source line and file)."""
    return Location(ke.name, address, sass, site.source_line, detail,
                    source_file=site.source_file)


#: Words ncu writes in capitals in its stall names (``mio_throttle`` -> ``MIO Throttle``).
_STALL_CAPITALS = {"mio": "MIO", "lg": "LG", "tex": "TEX", "imc": "IMC", "gmma": "GMMA"}


def stall_name(reason: str) -> str:
    """A stall reason as ncu's report names it (``long_scoreboard`` -> ``Long Scoreboard``)."""
    return " ".join(_STALL_CAPITALS.get(w, w.capitalize()) for w in reason.split("_"))


def _stall_pct(ke: KernelEvidence, reason: str) -> float | None:
    p = ke.profile
    if p is None or not p.cpi or reason not in p.stalls:
        return None
    return 100.0 * p.stalls[reason] / p.cpi


def _samples_pct(ke: KernelEvidence, reason: str) -> float | None:
    p = ke.profile
    if p is None or not p.stall_samples:
        return None
    total = sum(v for k, v in p.stall_samples.items() if k != "selected")
    return 100.0 * p.stall_samples.get(reason, 0) / total if total else None


def _cold(ke: KernelEvidence, address: int) -> bool:
    """The profile shows the instruction never ran (a fallback path): static sites there are
    left out."""
    p = ke.profile
    if p is None or not p.instructions:
        return False
    row = next((r for r in p.instructions if r.address == address), None)
    return row is not None and row.executed == 0


def _static_basis(ke: KernelEvidence, used_profile: bool, used_static: bool) -> str:
    return "+".join(b for b, u in (("static", used_static), ("profile", used_profile)) if u)


# --------------------------------------------------------------------------- rules


def rule_dominant_stall(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    p = ke.profile
    if p is None or not p.cpi or not p.stalls:
        return None
    by_ratio = {r: 100.0 * c / p.cpi for r, c in p.stalls.items() if r != "selected"}
    total = sum(v for k, v in p.stall_samples.items() if k != "selected")
    by_samples = {r: 100.0 * v / total for r, v in p.stall_samples.items()
                  if r != "selected"} if total else {}
    ranking = by_samples or by_ratio
    reason = max(ranking, key=ranking.get)
    share = ranking[reason]
    if share < DOMINANT_STALL_PCT:
        return None
    second = sorted(((v, r) for r, v in ranking.items() if r != reason), reverse=True)[:1]
    nums = {"reason": reason, "pct_of_samples": _r(by_samples.get(reason), 2),
            "cycles_per_inst": _r(p.stalls.get(reason), 3), "cpi": _r(p.cpi, 3),
            "pct_of_cpi": _r(by_ratio.get(reason), 2)}
    if second:
        nums["second_reason"] = second[0][1]
        nums["second_pct"] = _r(second[0][0], 2)
    locs = []
    for row in sorted(p.instructions, key=lambda r: -r.stall_samples.get(reason, 0))[:5]:
        n = row.stall_samples.get(reason, 0)
        if n:
            locs.append(_loc(ke, row.address, row.sass, row,
                             f"{n} {stall_name(reason)} samples"))
    basis = "samples" if by_samples else "stall ratios"
    return Finding("dominant_stall", ke.name, f"{stall_name(reason)} dominates the stalls",
                   "high" if share >= 50 else "medium", "profile",
                   f"{stall_name(reason)} takes {share:.1f} % of the warp stalls ({basis}; "
                   f"{by_ratio.get(reason, 0):.1f} % of the CPI of {p.cpi:.1f} cycles)",
                   nums, tuple(locs), _STALL_REMEDY.get(reason, "see the stall reason"))


_STALL_REMEDY = {
    "long_scoreboard": "keep more independent global loads in flight per warp (break dependent "
                       "loads, prefetch, more warps) or move reused data to shared memory",
    "lg_throttle": "issue fewer, wider global/local memory instructions (vector loads)",
    "mio_throttle": "fewer shared-memory or special-function instructions per warp",
    "short_scoreboard": "avoid shared-memory bank conflicts and long MIO dependencies",
    "barrier": "balance work between the warps of a block; fewer __syncthreads",
    "math_pipe_throttle": "the arithmetic pipe is saturated: fewer or cheaper operations",
    "wait": "more independent instructions between dependent ones (ILP)",
    "no_instruction": "smaller hot loop (instruction cache) or fewer branches",
}


def rule_dependent_load_chain(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    s = ke.static
    chains = [c for c in (s.chains if s else ()) if not _cold(ke, c.consumer_address)]
    if not chains:
        return None
    in_loop = [c for c in chains if c.in_loop]
    consumers = {c.consumer_address for c in chains}
    loop_consumers = {c.consumer_address for c in in_loop}
    ls = _stall_pct(ke, "long_scoreboard")
    ls_samples = _samples_pct(ke, "long_scoreboard")
    nums = {"chained_loads": len(consumers), "chained_loads_in_loop": len(loop_consumers),
            "max_chain_depth": s.max_chain_depth,
            "searches": sum(1 for c in chains if c.label == "search"),
            "long_scoreboard_pct_of_cpi": _r(ls, 2),
            "long_scoreboard_pct_of_samples": _r(ls_samples, 2)}
    hot = max(x for x in (ls or 0.0, ls_samples or 0.0))
    severity = "high" if in_loop or hot >= 30 else "medium"
    locs = tuple(_loc(ke, c.consumer_address, c.consumer_sass, c,
                      f"{c.label}{' (in a loop)' if c.in_loop else ''}")
                 for c in sorted(chains, key=lambda c: not c.in_loop)[:8])
    labels = sorted({c.label for c in chains})
    return Finding("dependent_load_chain", ke.name, "dependent global loads",
                   severity, _static_basis(ke, ls is not None, True),
                   f"{len(consumers)} global load(s) need an earlier load's value for their "
                   f"address ({', '.join(labels)}), {len(loop_consumers)} inside a loop; "
                   "chain depth "
                   f"{s.max_chain_depth}" + (f"; long scoreboard {hot:.1f} % of stalls"
                                              if hot else ""),
                   nums, locs, "prefetch the index one iteration ahead (software pipelining), "
                   "cache the searched array in shared memory, or let a warp cooperate on "
                   "one search so each load is issued once")


def rule_uncoalesced_access(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    s, p = ke.static, ke.profile
    locs, worst = [], 0.0
    static_by_addr = {a.address: a for a in s.accesses} if s else {}
    used_static = used_profile = False
    if p is not None and p.instructions:
        total = sum(r.sectors for r in p.instructions) or 1
        for r in sorted(p.instructions, key=lambda r: r.ideal_sectors - r.sectors):
            if r.sectors < MIN_SECTOR_SHARE * total or not r.ideal_sectors or not r.executed:
                continue
            ratio = r.sectors / r.ideal_sectors
            if ratio < UNCOALESCED_RATIO:
                continue
            used_profile = True
            worst = max(worst, ratio)
            acc = static_by_addr.get(r.address)
            what = f", {acc.pattern}" if acc else ""
            locs.append(_loc(ke, r.address, r.sass, r,
                             f"{r.sectors / r.executed:.1f} sectors/request, ideal "
                             f"{r.ideal_sectors / r.executed:.1f} ({ratio:.1f}x){what}"))
    flagged_excess = sum(r.sectors - r.ideal_sectors for r in (p.instructions if p else ())
                         if any(loc.address == r.address for loc in locs))
    if s is not None and not used_profile:
        for a in s.accesses:
            if a.space in ("global", "generic") and a.pattern in ("strided", "runtime-stride"):
                used_static = True
                ratio = (a.sectors_per_request or 32) / a.ideal_sectors_per_request
                worst = max(worst, ratio)
                stride = f"{a.stride_bytes} B lane stride" if a.stride_bytes else \
                    "run-time lane stride"
                sectors = a.sectors_per_request
                locs.append(_loc(ke, a.address, a.sass, a,
                                 f"{stride}, {a.width_bytes} B per lane: "
                                 f"{sectors if sectors else '<= 32'} sectors/request, ideal "
                                 f"{a.ideal_sectors_per_request}"))
    kernel_ratio = None
    if p is not None and p.l2_theoretical_sectors and p.l2_ideal_sectors:
        kernel_ratio = p.l2_theoretical_sectors / p.l2_ideal_sectors
    if not locs and (kernel_ratio is None or kernel_ratio < UNCOALESCED_RATIO):
        return None
    nums = {"worst_sectors_ratio": _r(worst, 3), "kernel_sectors_ratio": _r(kernel_ratio, 3),
            "locations": len(locs), "flagged_excess_sectors": int(flagged_excess)}
    if p is not None and p.ld_sectors and p.ld_requests:
        nums["load_sectors_per_request"] = _r(p.ld_sectors / p.ld_requests, 3)
    if p is not None and p.l2_theoretical_sectors and p.l2_ideal_sectors:
        nums["excess_sectors"] = int(p.l2_theoretical_sectors - p.l2_ideal_sectors)
    return Finding("uncoalesced_access", ke.name, "uncoalesced global accesses",
                   "high" if max(worst, kernel_ratio or 0) >= 4 else "medium",
                   _static_basis(ke, used_profile or kernel_ratio is not None, used_static),
                   (f"{len(locs)} access(es) touch up to {worst:.1f}x the sectors of a "
                    "coalesced access" if locs else "") +
                   (("; " if locs else "") + f"the kernel's global accesses touch "
                    f"{kernel_ratio:.2f}x the ideal sectors" if kernel_ratio else ""),
                   nums, tuple(locs[:10]), "make consecutive lanes read consecutive addresses "
                   "(transpose the thread mapping, stage through shared memory)")


def rule_overfetch(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    p = ke.profile
    if p is None or not ev.ideal_bytes or p.global_sectors is None:
        return None
    if len(ev.kernels) > 1 and ke is not max(
            ev.kernels, key=lambda k: (k.profile.global_sectors or 0) if k.profile else 0):
        return None  # the workload's ideal bytes are judged once, on the busiest kernel
    sectors = sum(k.profile.global_sectors or 0 for k in ev.kernels if k.profile)
    requested = 32.0 * sectors
    ratio = requested / ev.ideal_bytes
    dram = sum(k.profile.dram_bytes or 0 for k in ev.kernels if k.profile)
    dram_ratio = dram / ev.ideal_bytes if dram else None
    if ratio < OVERFETCH_RATIO and (dram_ratio or 0) < OVERFETCH_RATIO:
        return None
    locs = []
    for r in sorted(p.instructions, key=lambda r: r.ideal_sectors - r.sectors)[:8]:
        excess = r.sectors - r.ideal_sectors
        if excess > 0:
            locs.append(_loc(ke, r.address, r.sass, r,
                             f"{excess} excess sectors ({32 * excess / 1e6:.2f} MB)"))
    nums = {"requested_bytes": int(requested), "ideal_bytes": ev.ideal_bytes,
            "overfetch": _r(ratio, 3), "dram_bytes": int(dram) if dram else None,
            "dram_overfetch": _r(dram_ratio, 3)}
    return Finding("overfetch", ke.name, "more bytes moved than the work needs",
                   "high" if max(ratio, dram_ratio or 0) >= 2 else "medium", "profile",
                   f"sectors loaded x 32 = {requested / 1e6:.2f} MB against "
                   f"{ev.ideal_bytes / 1e6:.2f} MB ideal ({ratio:.2f}x)" +
                   (f"; DRAM {dram / 1e6:.2f} MB ({dram_ratio:.2f}x)" if dram_ratio else ""),
                   nums, tuple(locs), "read each byte once: coalesce, cache reused data in "
                   "shared memory, avoid loading whole sectors for a few bytes")


def rule_narrow_loads(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    s = ke.static
    if s is None:
        return None
    lg = _stall_pct(ke, "lg_throttle")
    loads = [a for a in s.accesses if a.space in ("global", "generic") and a.op == "load"]
    # sub-word loads are narrow whatever the pattern (a warp moves 32 or 64 bytes per
    # instruction); 4-8 byte coalesced ones only when the LSU queue shows it
    loads = [a for a in loads if not _cold(ke, a.address)]
    narrow = [a for a in loads if a.width_bytes < 4 or
              (a.width_bytes < 16 and a.pattern == "coalesced" and a.in_loop
               and (lg or 0) >= LG_THROTTLE_PCT)]
    if not narrow:
        return None
    widths = sorted({a.width_bytes for a in narrow})
    nums = {"narrow_loads": len(narrow), "widths_bytes": ",".join(map(str, widths)),
            "bytes_per_warp_request": 32 * widths[0], "lg_throttle_pct_of_cpi": _r(lg, 2)}
    locs = tuple(_loc(ke, a.address, a.sass, a,
                      f"{a.width_bytes} B per lane = {32 * a.width_bytes} B per warp request")
                 for a in narrow[:8])
    return Finding("narrow_loads", ke.name, "narrow global loads",
                   "medium" if widths[0] < 4 or (lg or 0) >= 25 else "low",
                   _static_basis(ke, lg is not None, True),
                   f"{len(narrow)} global load(s) of {'/'.join(map(str, widths))} B per lane: "
                   f"{16 // widths[0]}x more load instructions than 16 B vector loads",
                   nums, locs, "load 16 B per lane (uint4 / float4 / 8 x bf16) and unpack")


def rule_missing_read_only(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    s = ke.static
    hot = {a for a in (s.const_pointer_loads if s else ()) if not _cold(ke, a)}
    if not hot:
        return None
    locs = tuple(_loc(ke, a.address, a.sass, a, "const pointer, plain LDG")
                 for a in s.accesses if a.address in hot)
    return Finding("missing_read_only", ke.name, "read-only data not loaded as read-only", "low",
                   "static", f"{len(hot)} load(s) from const pointers use "
                   "the coherent path (LDG without .CONSTANT): the pointer is not "
                   "__restrict__, or the compiler could not prove the data read-only",
                   {"loads": len(hot)}, locs,
                   "declare the pointers const __restrict__ or load with __ldg")


def rule_register_spill(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    s, p = ke.static, ke.profile
    static_hit = s is not None and (s.spill_store_bytes or s.spill_load_bytes or s.local_loads
                                    or s.local_stores)
    executed = None
    if p is not None:
        got = [v for v in (p.local_loads_executed, p.local_stores_executed) if v is not None]
        executed = sum(got) if got else None
        if executed is None and p.spill_instructions is not None:
            executed = p.spill_instructions
    if not static_hit and not executed:
        return None
    nums = {"local_executed": _r(executed, 0)}
    if s is not None:
        nums.update({"spill_store_bytes": s.spill_store_bytes,
                     "spill_load_bytes": s.spill_load_bytes, "local_bytes": s.local_bytes,
                     "stl": s.local_stores, "ldl": s.local_loads, "registers": s.registers})
    what = "register spills" if s is not None and (s.spill_store_bytes or s.spill_load_bytes) \
        else "local memory"
    return Finding("register_spill", ke.name, what,
                   "high" if executed or (s and s.local_loads + s.local_stores > 16) else "medium",
                   _static_basis(ke, executed is not None, bool(static_hit)),
                   f"{what}: {nums.get('stl', 0)} STL / {nums.get('ldl', 0)} LDL, "
                   f"{nums.get('spill_store_bytes', 0)} B spill stores, "
                   f"{nums.get('local_bytes', 0)} B local per thread" +
                   (f"; {executed:.0f} local instructions executed" if executed else ""),
                   nums, (), "reduce live values (smaller per-thread arrays, no dynamic "
                   "indexing of local arrays) or allow more registers (__launch_bounds__)")


def rule_warp_divergence(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    s, p = ke.static, ke.profile
    eff = p.branch_uniform_pct if p is not None else None
    sites = [b for b in (s.branches if s is not None else ()) if not _cold(ke, b.address)]
    thread = [b for b in sites if b.cause == "thread-index"]
    if eff is not None:
        if eff >= BRANCH_EFFICIENCY_PCT:
            return None
        severity = "high" if eff < 70 else "medium"
    elif thread:
        severity = "medium"
    elif sites:
        severity = "low"
    else:
        return None
    nums = {"branch_efficiency_pct": _r(eff, 2),
            "divergent_branches": _r(p.divergent_branches, 0) if p else None,
            "thread_index_branches": len(thread),
            "data_branches": len(sites) - len(thread)}
    locs = tuple(_loc(ke, b.address, b.sass, b,
                      f"predicate from {b.cause}{', closes a loop' if b.back_edge else ''}")
                 for b in sorted(sites, key=lambda b: b.cause != "thread-index")[:8])
    summary = (f"branch efficiency {eff:.1f} %" if eff is not None else
               f"{len(thread)} branch(es) on a thread-index predicate, "
               f"{len(sites) - len(thread)} on per-thread data")
    return Finding("warp_divergence", ke.name, "divergent branches", severity,
                   _static_basis(ke, eff is not None, bool(sites)), summary, nums, locs,
                   "give the lanes of a warp the same path: map work so the condition is "
                   "warp-uniform, or let the warp cooperate on one item")


def rule_bank_conflicts(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    s, p = ke.static, ke.profile
    static_sites = [a for a in (s.accesses if s else ()) if a.bank_ways and a.bank_ways > 1]
    ways = None
    if p is not None and p.shared_ld_instructions and p.shared_ld_wavefronts:
        ways = p.shared_ld_wavefronts / p.shared_ld_instructions
    conflict_pct = None
    if p is not None and p.shared_bank_conflicts is not None:
        waves = (p.shared_ld_wavefronts or 0) + (p.shared_st_wavefronts or 0)
        conflict_pct = 100.0 * p.shared_bank_conflicts / waves if waves else None
    measured = (ways or 0) >= 1.2 or (conflict_pct or 0) >= 5
    if not static_sites and not measured:
        return None
    nums = {"shared_load_ways": _r(ways, 3), "conflict_pct_of_wavefronts": _r(conflict_pct, 2),
            "static_max_ways": max((a.bank_ways for a in static_sites), default=None)}
    locs = tuple(_loc(ke, a.address, a.sass, a,
                      f"{a.stride_bytes} B lane stride: {a.bank_ways}-way")
                 for a in static_sites[:8])
    return Finding("bank_conflicts", ke.name, "shared-memory bank conflicts",
                   "medium" if measured else "low", _static_basis(ke, measured,
                                                                   bool(static_sites)),
                   f"shared loads take {ways or 0:.2f} wavefronts per instruction"
                   if ways else f"{len(static_sites)} shared access(es) with a conflicting "
                   "stride", nums, locs, "pad the shared array (stride + 1 word) or swizzle")


def rule_atomics(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    s, p = ke.static, ke.profile
    sites = list(s.atomics) if s else []
    executed = p.global_atomics if p else None
    if not sites and not executed:
        return None
    in_loop = [a for a in sites if a.in_loop]
    return Finding("atomics", ke.name, "atomic operations",
                   "medium" if in_loop or (executed or 0) > 0 else "low",
                   _static_basis(ke, executed is not None, bool(sites)),
                   (f"{len(sites)} atomic/reduction instruction(s) in the SASS, "
                    f"{len(in_loop)} in loops" if s is not None else "atomics") +
                   (f"; {executed:.0f} executed (warp level)" if executed else ""),
                   {"static_atomics": len(sites), "in_loop": len(in_loop),
                    "executed": _r(executed, 0)},
                   tuple(_loc(ke, a.address, a.sass, a, a.space) for a in sites[:8]),
                   "reduce in registers or shared memory first, one atomic per warp or block")


def rule_low_occupancy(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    occ = ke.occupancy
    if occ is None or occ.occupancy_pct > LOW_OCCUPANCY_PCT:
        return None
    p = ke.profile
    nums = {"theoretical_occupancy_pct": _r(occ.occupancy_pct, 2),
            "achieved_occupancy_pct": _r(p.achieved_occupancy_pct, 2) if p else None,
            "active_warps_per_sm": occ.active_warps_per_sm, "limiter": occ.limiter,
            "registers": p.registers if p and p.registers else
            (ke.static.registers if ke.static else None),
            "block_threads": ke.block_threads}
    nums.update({f"blocks_by_{k}": v for k, v in occ.limits_blocks.items()})
    return Finding("low_occupancy", ke.name, "low occupancy", "medium", occ.source
                   if occ.source == "profile" else "static",
                   f"theoretical occupancy {occ.occupancy_pct:.0f} % "
                   f"({occ.active_warps_per_sm} of {occ.max_warps_per_sm} warps/SM), limited by "
                   f"{occ.limiter} ({occ.active_blocks_per_sm} blocks/SM)", nums, (),
                   _OCC_REMEDY.get(occ.limiter.split(",")[0], "raise the binding limit"))


_OCC_REMEDY = {"registers": "fewer registers per thread (__launch_bounds__, less unrolling)",
               "shared": "less shared memory per block", "warps": "smaller blocks",
               "blocks": "larger blocks", "barriers": "fewer named barriers"}


def rule_too_few_blocks(ev: Evidence, ke: KernelEvidence) -> Finding | None:
    grid = ke.grid_blocks
    occ = ke.occupancy
    sms = (ke.profile.sm_count if ke.profile and ke.profile.sm_count else ev.device.sm_count)
    if not grid or occ is None or not occ.active_blocks_per_sm:
        return None
    slots = sms * occ.active_blocks_per_sm
    waves = grid / slots
    whole = -(-grid // slots)
    tail = waves / whole
    if (waves < 1 and waves >= TAIL_EFFICIENCY) or (waves >= 1 and (tail >= TAIL_EFFICIENCY
                                                                     or waves >= 4)):
        return None  # a nearly full single wave, or a tail that costs little
    nums = {"grid_blocks": grid, "sm_count": sms, "blocks_per_sm": occ.active_blocks_per_sm,
            "block_slots": slots, "waves": _r(waves, 3), "slot_efficiency": _r(tail, 3)}
    if waves < 1:
        text = (f"{grid} blocks fill {100 * waves:.0f} % of the {slots} block slots "
                f"({sms} SMs x {occ.active_blocks_per_sm}): a partial single wave")
    else:
        text = (f"{waves:.2f} waves of {slots} blocks: the last wave keeps "
                f"{100 * (waves - whole + 1):.0f} % of the slots busy")
    return Finding("too_few_blocks", ke.name, "too few blocks for the GPU",
                   "high" if waves < 0.5 else "medium",
                   "profile" if ke.profile and ke.profile.grid_blocks else "static", text, nums,
                   (), "split the work into more (or smaller) blocks so every SM holds its "
                   "full complement, or a whole number of waves")


#: Rule name -> function; run in this order.
RULES: dict[str, Callable[[Evidence, KernelEvidence], Finding | None]] = {
    "dominant_stall": rule_dominant_stall,
    "dependent_load_chain": rule_dependent_load_chain,
    "uncoalesced_access": rule_uncoalesced_access,
    "overfetch": rule_overfetch,
    "narrow_loads": rule_narrow_loads,
    "missing_read_only": rule_missing_read_only,
    "register_spill": rule_register_spill,
    "warp_divergence": rule_warp_divergence,
    "bank_conflicts": rule_bank_conflicts,
    "atomics": rule_atomics,
    "low_occupancy": rule_low_occupancy,
    "too_few_blocks": rule_too_few_blocks,
}

_SEVERITY = {"high": 0, "medium": 1, "low": 2, "info": 3}


def diagnose(ev: Evidence, rules: dict | None = None
             ) -> tuple[tuple[Bottleneck, ...], tuple[Finding, ...]]:
    """Bottleneck of every kernel, and every finding, most severe first (kernels by time)."""
    rules = RULES if rules is None else rules
    kernels = sorted(ev.kernels, key=lambda k: -k.time_share)
    bottlenecks = tuple(bottleneck(ev, k) for k in kernels)
    findings = []
    for rank, k in enumerate(kernels):
        for fn in rules.values():
            f = fn(ev, k)
            if f is not None:
                findings.append((rank, _SEVERITY.get(f.severity, 9), f))
    findings.sort(key=lambda t: (t[0], t[1]))
    return bottlenecks, tuple(f for _r, _s, f in findings)
