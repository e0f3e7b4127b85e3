"""Evidence: the measured and read numbers a diagnosis rests on, as typed records (defined in
:mod:`sparsescope.analyze.evidence_types`, built here).

Three sources feed one :class:`KernelEvidence` each:

* **static** (:func:`static_evidence`): the kernel's SASS and resources through
  :mod:`sparsescope.sass` plus :mod:`sparsescope.analyze.threadflow` -- every global, shared and
  local access with its per-lane address pattern, the branches on per-thread predicates, the
  dependent-load chains, spills, atomics;
* **profile** (:func:`profile_evidence`): one launch's ncu counters (:class:`KernelProfile`) and,
  when collected, the per-instruction source counters;
* **launch**: grid and block, and the theoretical occupancy with its limiter
  (:func:`occupancy_evidence`, from :func:`sparsescope.sass.occupancy` or ncu's
  ``launch__occupancy_limit_*``).

:class:`Evidence` adds the workload-level numbers: the measured time (the project's timing
protocol), the ideal bytes and flops, the physical floor, correctness, and the device.
"""

from __future__ import annotations

from sparsescope.analyze.evidence_types import (  # noqa: F401 (re-exported)
    BranchSite,
    ChainSite,
    DeviceEvidence,
    Evidence,
    InstructionCounters,
    KernelEvidence,
    MemoryAccess,
    OccupancyEvidence,
    ProfileEvidence,
    StaticEvidence,
)
from sparsescope.analyze.threadflow import (
    DATA,
    ThreadFlow,
    bank_conflict_ways,
    ideal_sectors_per_request,
    sectors_per_request,
)


def _pattern(value, width: int) -> tuple[str, int | None]:
    kind, coef = value
    if kind == "lin":
        if coef == 0:
            return "uniform", 0
        if abs(coef) == width:
            return "coalesced", coef
        if abs(coef) < width:
            return "coalesced", coef  # overlapping lanes: no more sectors than coalesced
        return "strided", coef
    return {"sym": ("runtime-stride", None), "data": ("gather", None)}.get(kind,
                                                                            ("irregular", None))


def _access(ins, value, in_loop: bool) -> MemoryAccess:
    width = ins.access_bytes or 4
    pattern, stride = _pattern(value, width)
    sectors = None
    if stride is not None:
        sectors = sectors_per_request(abs(stride), width)
    ways = None
    if ins.mem_space == "shared" and stride is not None:
        ways = bank_conflict_ways(stride, width)
    return MemoryAccess(ins.address, ins.text, ins.mem_space, ins.mem_op, width, pattern, stride,
                        "CONSTANT" in ins.cache_hints, in_loop, sectors,
                        ideal_sectors_per_request(width), ways, ins.source_line,
                        ins.source_file)


def static_evidence(analysis) -> StaticEvidence:
    """Static evidence of one :class:`sparsescope.sass.KernelAnalysis`."""
    from sparsescope.sass.dataflow import reaching_definitions

    ins = analysis.instructions
    cfg = analysis.cfg
    du = reaching_definitions(ins, cfg)
    flow = ThreadFlow(ins, du)
    users = du.users()
    accesses, atomics, branches, searches = [], [], [], []
    for i, x in enumerate(ins):
        in_loop = cfg.loop_of[i] >= 0 if cfg.loop_of else False
        if x.mem_op and x.mem_space in ("global", "generic", "shared", "local"):
            acc = _access(x, flow.address_value(i), in_loop)
            if x.mem_op in ("atomic", "reduction"):
                atomics.append(acc)
            elif x.mem_space != "local":
                accesses.append(acc)
            if x.is_global_load and acc.pattern == "gather" and in_loop and \
                    _compared_in_loop(i, users, cfg, ins):
                searches.append((i, acc))
        if x.is_branch and x.is_conditional:
            g = flow.guard_value(i)
            if g is not None and g[0] in ("var", "data"):
                back = x.branch_target is not None and x.branch_target <= x.address
                branches.append(BranchSite(x.address, x.text,
                                           "data" if g == DATA else "thread-index", in_loop,
                                           back, x.source_line, x.source_file))
    at = {x.address: x for x in ins}
    chains = [ChainSite(c.label, c.loads[0].address, c.loads[1].address, c.loads[1].text,
                        c.in_loop, *_line_of(at.get(c.loads[1].address)))
              for c in analysis.load_chains]
    consumers = {c.consumer_address for c in chains}
    # a gather inside a loop whose value is compared in the loop and that no register chain
    # explains: a search, whose next address is picked by that comparison (through a predicate)
    for _i, acc in searches:
        if acc.address not in consumers:
            chains.append(ChainSite("search", None, acc.address, acc.sass, True,
                                    acc.source_line, acc.source_file))
    res = analysis.resources
    const_ptr = _const_pointer_loads(analysis)
    return StaticEvidence(
        kernel=analysis.name, arch=analysis.arch, instructions=len(ins),
        registers=res.registers if res else None, shared_bytes=res.shared_bytes if res else None,
        local_bytes=max(res.local_bytes, res.stack_bytes) if res else 0,
        spill_store_bytes=res.spill_store_bytes if res else 0,
        spill_load_bytes=res.spill_load_bytes if res else 0,
        local_loads=sum(1 for x in ins if x.opcode == "LDL"),
        local_stores=sum(1 for x in ins if x.opcode == "STL"),
        accesses=tuple(accesses), branches=tuple(branches), chains=tuple(chains),
        max_chain_depth=max(analysis.max_chain_depth, 2 if chains else 0),
        atomics=tuple(atomics), loops=len(cfg.loops), const_pointer_loads=const_ptr)


def _line_of(ins) -> tuple[int, str]:
    """(source line, source file) of an instruction; (0, "") for None."""
    return (ins.source_line, ins.source_file) if ins is not None else (0, "")


def _compared_in_loop(i: int, users, cfg, ins) -> bool:
    """The value loaded by instruction ``i`` reaches a comparison (``*SETP``) in the same loop
    (directly or through arithmetic)."""
    loop = cfg.loop_of[i]
    seen, stack = {i}, list(users.get(i, ()))
    while stack:
        u = stack.pop()
        if u in seen or cfg.loop_of[u] != loop:
            continue
        seen.add(u)
        if ins[u].opcode.endswith("SETP"):
            return True
        if not ins[u].mem_op and not ins[u].is_branch:
            stack.extend(users.get(u, ()))
    return False


def _const_pointer_loads(analysis) -> tuple[int, ...]:
    by_index = {p.index: p for p in analysis.params}
    out = []
    for ref in analysis.global_loads:
        p = by_index.get(ref.param_index) if ref.param_index is not None else None
        if p is None or not p.is_pointer or "const" not in p.type:
            continue
        if ".CONSTANT" not in ref.text and ref.text.lstrip("@!P0123456789 ").startswith("LDG"):
            out.append(ref.address)
    return tuple(out)


def _num(profile, *names) -> float | None:
    return profile.value(*names)


def profile_evidence(profile, samples=None) -> ProfileEvidence:
    """Counters of one launch (:class:`sparsescope.profile.KernelProfile`) and, optionally, its
    per-instruction rows (``InstructionSample`` list from the source page)."""
    from sparsescope.profile import metrics as M

    p = profile
    limits = {}
    for key, metric in (("registers", "launch__occupancy_limit_registers"),
                        ("shared", "launch__occupancy_limit_shared_mem"),
                        ("warps", "launch__occupancy_limit_warps"),
                        ("blocks", "launch__occupancy_limit_blocks"),
                        ("barriers", "launch__occupancy_limit_barriers")):
        v = p.value(metric)
        if v is not None:
            limits[key] = v
    max_warps = _num(p, *M.MAX_WARPS_PER_SM)
    active = _num(p, *M.ACTIVE_WARPS_PER_SM)
    if active is None and p.achieved_occupancy_pct is not None and max_warps:
        active = p.achieved_occupancy_pct * max_warps / 100.0
    atom = [p.value(n) for n in ("smsp__inst_executed_op_global_red.sum",
                                 "smsp__inst_executed_op_global_atom.sum",
                                 "smsp__sass_inst_executed_op_global_atom.sum")]
    atoms = sum(a for a in atom if a is not None) if any(a is not None for a in atom) else None
    rows, totals = _instruction_rows(samples or ())
    return ProfileEvidence(
        duration_ns=p.duration_ns, grid_blocks=p.grid_size, block_threads=p.block_size,
        registers=p.registers_per_thread, sm_count=_int(_num(p, *M.SM_COUNT)),
        waves_per_sm=p.value("launch__waves_per_multiprocessor"),
        theoretical_occupancy_pct=p.theoretical_occupancy_pct,
        achieved_occupancy_pct=p.achieved_occupancy_pct, active_warps_per_sm=active,
        max_warps_per_sm=max_warps, occupancy_limits_blocks=limits,
        dram_read_bytes=p.value("dram__bytes_read.sum"),
        dram_write_bytes=p.value("dram__bytes_write.sum"),
        dram_throughput_pct=_num(p, *M.DRAM_THROUGHPUT_PCT),
        l2_throughput_pct=p.value("lts__throughput.avg.pct_of_peak_sustained_elapsed"),
        l1_throughput_pct=p.value("l1tex__throughput.avg.pct_of_peak_sustained_active",
                                  "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"),
        sm_throughput_pct=_num(p, *M.SM_THROUGHPUT_PCT),
        issue_active_pct=_num(p, *M.ISSUE_ACTIVE_PCT),
        ld_sectors=_num(p, *M.GLOBAL_LD_SECTORS), ld_requests=_num(p, *M.GLOBAL_LD_REQUESTS),
        st_sectors=_num(p, *M.GLOBAL_ST_SECTORS), st_requests=_num(p, *M.GLOBAL_ST_REQUESTS),
        l2_theoretical_sectors=_num(p, *M.L2_SECTORS_GLOBAL),
        l2_ideal_sectors=p.value("memory_l2_theoretical_sectors_global_ideal"),
        branch_uniform_pct=p.value("smsp__sass_average_branch_targets_threads_uniform.pct"),
        divergent_branches=p.value("smsp__sass_branch_targets_threads_divergent.sum",
                                   "smsp__branch_targets_threads_divergent"),
        local_loads_executed=p.value("smsp__sass_inst_executed_op_local_ld.sum"),
        local_stores_executed=p.value("smsp__sass_inst_executed_op_local_st.sum"),
        spill_instructions=p.value("sass__inst_executed_register_spilling"),
        shared_ld_wavefronts=_num(p, *M.SHARED_LD_WAVEFRONTS),
        shared_ld_instructions=_num(p, *M.SHARED_LD_INST),
        shared_st_wavefronts=_num(p, *M.SHARED_ST_WAVEFRONTS),
        shared_st_instructions=_num(p, *M.SHARED_ST_INST),
        shared_bank_conflicts=_sum(p.value(*M.SHARED_LD_CONFLICTS),
                                   p.value(*M.SHARED_ST_CONFLICTS)),
        global_atomics=atoms, cpi=p.cpi, stalls=dict(p.stalls), stall_samples=totals,
        instructions=rows, sm_clock_hz=_num(p, *M.SM_CLOCK_HZ))


def _int(v: float | None) -> int | None:
    return None if v is None else int(round(v))


def _sum(*vals: float | None) -> float | None:
    got = [v for v in vals if v is not None]
    return sum(got) if got else None


def _instruction_rows(samples) -> tuple[tuple[InstructionCounters, ...], dict[str, int]]:
    if not samples:
        return (), {}
    base = min(s.address for s in samples)
    rows, totals = [], {}
    for s in samples:
        for k, v in s.stall_samples.items():
            totals[k] = totals.get(k, 0) + v
        rows.append(InstructionCounters(
            s.address - base, s.sass, s.instructions_executed, s.thread_instructions_executed,
            s.l2_sectors_global, s.l2_sectors_global - s.l2_sectors_global_excessive,
            dict(s.stall_samples), s.source_line or 0, s.source_file or ""))
    return tuple(rows), dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def occupancy_evidence(*, profile: ProfileEvidence | None = None, static=None,
                       block_threads: int | None = None, arch: str | None = None,
                       dynamic_shared_bytes: int = 0,
                       max_warps_per_sm: int = 64) -> OccupancyEvidence | None:
    """Theoretical occupancy: ncu's limits when profiled, else the occupancy calculator
    (:func:`sparsescope.sass.occupancy`) from registers, shared memory and the block size."""
    if profile is not None and profile.occupancy_limits_blocks and profile.block_threads:
        limits = {k: int(v) for k, v in profile.occupancy_limits_blocks.items()}
        warps = -(-profile.block_threads // 32)
        maxw = int(profile.max_warps_per_sm or max_warps_per_sm)
        active = min(limits.values())
        limiter = ", ".join(k for k in limits if limits[k] == active)  # ties: every one binds
        return OccupancyEvidence("profile", 100.0 * active * warps / maxw, active,
                                 active * warps, warps, limiter, limits, maxw)
    if static is None or static.registers is None or not block_threads or not arch:
        return None
    from sparsescope.sass.occupancy import occupancy

    occ = occupancy(static.registers, block_threads, arch=arch,
                    static_shared_bytes=static.shared_bytes or 0,
                    dynamic_shared_bytes=dynamic_shared_bytes)
    limits = {"registers": occ.limit_registers_blocks, "shared": occ.limit_shared_blocks,
              "warps": occ.limit_warps_blocks, "blocks": occ.limit_blocks}
    maxw = round(occ.active_warps_per_sm * 100 / occ.occupancy_pct) if occ.occupancy_pct else \
        max_warps_per_sm
    return OccupancyEvidence("sass", occ.occupancy_pct, occ.active_blocks_per_sm,
                             occ.active_warps_per_sm, occ.warps_per_block, occ.limiter, limits,
                             maxw)
