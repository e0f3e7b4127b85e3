"""Markdown rendering of a kernel's SASS analysis, as a report section (seed 001 layout):
resources, instruction mix, control flow, dependent-load chains, stall mapping."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sparsescope.sass.analysis import KernelAnalysis
from sparsescope.sass.instructions import CLASS_ORDER
from sparsescope.sass.occupancy import Occupancy

MAX_CHAIN_ROWS = 12
MAX_STALL_ROWS = 12


def _addr(a: int | None) -> str:
    return "-" if a is None else f"`{a:04x}`"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def _resources(a: KernelAnalysis, occ: Occupancy | None, occupancy_reason: str = "") -> list[str]:
    r = a.resources
    if r is None:
        lines = ["Resource usage: not available (saved listing without `-res-usage` output)."]
        return lines + (["", occupancy_reason] if occupancy_reason else [])
    rows = [("Registers per thread", r.registers), ("Static shared memory (bytes)", r.shared_bytes),
            ("Local memory (bytes)", r.local_bytes), ("Stack frame (bytes)", r.stack_bytes),
            ("Constant bank 0 (bytes)", r.constant_bytes)]
    if r.spill_store_bytes or r.spill_load_bytes:
        rows.append(("Spill stores / loads (bytes)",
                     f"{r.spill_store_bytes} / {r.spill_load_bytes}"))
    lines = _table(("Resource", "Value"), rows)
    if occ is not None:
        lines += ["", f"Theoretical occupancy at {occ.block_threads} threads/block "
                      f"(compute capability {occ.compute_capability}): "
                      f"**{occ.occupancy_pct:.1f}%** ({occ.active_warps_per_sm} warps/SM, "
                      f"{occ.active_blocks_per_sm} blocks/SM), limited by {occ.limiter} "
                      f"(limits in blocks: registers {occ.limit_registers_blocks}, shared "
                      f"{occ.limit_shared_blocks}, warps {occ.limit_warps_blocks}, blocks "
                      f"{occ.limit_blocks})."]
    return lines


def _mix(a: KernelAnalysis) -> list[str]:
    n = a.instruction_count or 1
    rows = [(f"`{k}`", a.classes[k], f"{100.0 * a.classes[k] / n:.1f}%")
            for k in CLASS_ORDER if a.classes.get(k)]
    rows.append(("**Total**", f"**{a.instruction_count}**", "100%"))
    ratio = a.compute_to_memory_ratio
    note = (f"Compute-to-memory instruction ratio (FP add/mul/FMA : loads, stores, atomics): "
            f"**{ratio:.2f}**" + (f" (1:{1 / ratio:.1f})." if ratio else "."))
    return _table(("Class", "Count", "Share"), rows) + ["", note]


def _control(a: KernelAnalysis) -> list[str]:
    cfg = a.cfg
    lines = [f"{sum(1 for b in cfg.blocks if b.reachable)} basic blocks, {len(cfg.loops)} loops."]
    if cfg.loops:
        rows = [(_addr(lp.header_address), f"{_addr(lp.start_address)}-{_addr(lp.end_address)}",
                 lp.instructions, lp.global_loads, lp.depth, "hot" if i == cfg.hot_loop else "")
                for i, lp in enumerate(cfg.loops)]
        lines += [""] + _table(("Header", "Range", "Instructions", "Global loads", "Depth", ""),
                               rows)
    if cfg.code_paths:
        rows = [(_addr(p.branch_address), f"`{p.condition}`",
                 f"{_addr(p.arms[0].start_address)}-{_addr(p.arms[0].end_address)} "
                 f"({p.arms[0].instructions})",
                 f"{_addr(p.arms[1].start_address)}-{_addr(p.arms[1].end_address)} "
                 f"({p.arms[1].instructions})", _addr(p.join_address)) for p in cfg.code_paths]
        lines += ["", "Code paths selected at run time:", ""]
        lines += _table(("Branch", "Condition", "Taken arm (instr.)", "Fall-through arm (instr.)",
                         "Join"), rows)
    return lines


def _chains(a: KernelAnalysis) -> list[str]:
    if not a.load_chains:
        return ["No dependent global-load chain: no global load's address depends on another "
                "global load's result."]
    counts = Counter((c.label, c.in_loop) for c in a.load_chains)
    summary = ", ".join(f"`{label}` x{n}{' (in a loop)' if loop else ''}"
                        for (label, loop), n in counts.most_common())
    lines = [f"{len(a.load_chains)} dependent load chains ({len(a.loop_chains)} inside loops), "
             f"longest {a.max_chain_depth} loads deep: {summary}.", ""]
    ordered = sorted(a.load_chains, key=lambda c: (not c.in_loop, c.loads[1].address))
    rows = []
    for c in ordered[:MAX_CHAIN_ROWS]:
        via = " -> ".join(v.mnemonic for v in c.via) or "(direct)"
        rows.append((c.label, f"{_addr(c.loads[0].address)} `{c.loads[0].text}`",
                     f"`{via}`", f"{_addr(c.loads[1].address)} `{c.loads[1].text}`",
                     "yes" if c.in_loop else "no"))
    lines += _table(("Chain", "Producer load", "Via", "Consumer load", "In loop"), rows)
    if len(ordered) > MAX_CHAIN_ROWS:
        lines.append(f"\n({len(ordered) - MAX_CHAIN_ROWS} more in the JSON output.)")
    return lines


def _stalls(a: KernelAnalysis) -> list[str]:
    m = a.stall_map
    if m is None:
        return []
    share = 100.0 * m.chain_samples / m.total_samples if m.total_samples else 0.0
    lines = [f"{m.total_samples} warp-stall samples; {share:.1f}% on instructions of a load chain.",
             ""]
    rows = [(_addr(r.address), f"`{r.text}`", r.klass, r.samples, r.dominant_reason,
             r.role or "no") for r in m.top(MAX_STALL_ROWS)]
    lines += _table(("Address", "Instruction", "Class", "Samples", "Dominant stall",
                     "On load chain"), rows)
    return lines


def render_markdown(analysis: KernelAnalysis | Sequence[KernelAnalysis], *,
                    occupancy: Occupancy | None = None, level: int = 2,
                    occupancy_reason: str = "") -> str:
    """A Markdown section per kernel: resources, mix, control flow, load chains, stalls;
    ``occupancy_reason``: why a kernel without resources has no occupancy (said under its
    resources)."""
    kernels = [analysis] if isinstance(analysis, KernelAnalysis) else list(analysis)
    h = "#" * level
    out: list[str] = []
    for a in kernels:
        out += [f"{h} SASS analysis: `{a.demangled}`", ""]
        meta = f"Architecture {a.arch or 'unknown'}, {a.instruction_count} instructions"
        if a.demangled != a.name:
            meta += f", symbol `{a.name}`"
        out += [meta + ".", "", f"{h}# Resources", ""] + _resources(a, occupancy,
                                                                    occupancy_reason)
        out += ["", f"{h}# Instruction mix", ""] + _mix(a)
        out += ["", f"{h}# Control flow", ""] + _control(a)
        out += ["", f"{h}# Dependent load chains", ""] + _chains(a)
        if a.stall_map is not None:
            out += ["", f"{h}# Stall mapping", ""] + _stalls(a)
        out.append("")
    return "\n".join(out)
