"""The SASS analysis of one kernel, assembled: resources, instruction mix, control flow, load
chains with their kernel parameters, and (optionally) the stall mapping.

Entry points: :func:`analyse_listing` (one parsed listing), :func:`analyse_file` (a binary, a
saved listing or a ``.cu`` file), :func:`analyse_source` (CUDA source compiled here).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sparsescope.sass.cfg import ControlFlow, build_cfg
from sparsescope.sass.dataflow import (
    DefUse,
    LoadSlice,
    RawChain,
    load_slices_and_chains,
    reaching_definitions,
)
from sparsescope.sass.instructions import Instruction, class_histogram, compute_to_memory_ratio
from sparsescope.sass.listing import KernelListing
from sparsescope.sass.params import KernelParam, param_base, param_for_offset, resolve_params
from sparsescope.sass.resources import KernelResources, merge_resources, parse_res_usage
from sparsescope.sass.stall_map import SourceSassKernel, StallMap, join_stalls


@dataclass(frozen=True)
class LoadRef:
    """A global load and the kernel parameter its base pointer comes from."""

    address: int
    text: str
    param_offset: int | None
    """Offset of the base pointer in the parameter space (``c[0x0][base + offset]``)."""
    param_index: int | None
    param_name: str
    """Parameter name (``col``, ``x``); several candidates joined by ``/``; empty when unknown."""

    @property
    def label(self) -> str:
        """``x`` or ``param@0x20`` or ``?``."""
        if self.param_name:
            return self.param_name
        if self.param_index is not None:
            return f"param{self.param_index}"
        return f"param@{self.param_offset:#x}" if self.param_offset is not None else "?"


@dataclass(frozen=True)
class LoadChain:
    """A global load whose result reaches the address of another global load."""

    loads: tuple[LoadRef, LoadRef]
    """Producer (``LDG col[j]``) then consumer (``LDG x[col]``)."""
    via: tuple[Instruction, ...]
    """The address arithmetic between them (``IMAD.WIDE``, ``LEA``/``LEA.HI.X``, ``IADD3`` ...)."""
    in_loop: bool
    """Producer and consumer sit in a common loop: the dependency recurs every iteration."""
    loop_header: int | None
    """Header address of the innermost common loop."""

    @property
    def label(self) -> str:
        return f"{self.loads[0].label} -> {self.loads[1].label}"


@dataclass(frozen=True)
class KernelAnalysis:
    """Everything sparsescope reads from one kernel's SASS (``SassKernel`` in the design)."""

    name: str
    demangled: str
    arch: str
    listing_format: str
    instructions: tuple[Instruction, ...]
    resources: KernelResources | None
    classes: dict[str, int]
    """Class -> static count (seed 001 section 8)."""
    compute_to_memory_ratio: float
    cfg: ControlFlow
    params: tuple[KernelParam, ...]
    param_base: int | None
    """Offset of the first parameter in constant bank 0."""
    global_loads: tuple[LoadRef, ...]
    load_chains: tuple[LoadChain, ...]
    max_chain_depth: int
    """Loads on the longest producer -> consumer path (2 for ``col -> x``; 3 for
    ``rowptr -> col -> x``; 0 without chains)."""
    stall_map: StallMap | None = None
    defuse: DefUse | None = field(default=None, compare=False, repr=False)
    """The def-use the analysis found (``dataflow.reaching_definitions``), kept so that
    :func:`~sparsescope.sass.mlp.kernel_mlp` does not walk the kernel again."""
    raw_chains: tuple[RawChain, ...] | None = field(default=None, compare=False, repr=False)
    """Its producer -> consumer load chains as indices (``dataflow.load_slices_and_chains``)."""

    @property
    def instruction_count(self) -> int:
        return len(self.instructions)

    @property
    def loop_chains(self) -> tuple[LoadChain, ...]:
        """Chains that recur in a loop (the latency-bound ones)."""
        return tuple(c for c in self.load_chains if c.in_loop)

    def to_dict(self) -> dict:
        """JSON-ready summary (addresses as integers, as in the listing)."""
        res = self.resources
        hot = self.cfg.hot_loop
        return {
            "name": self.name, "demangled": self.demangled, "arch": self.arch,
            "instructions": self.instruction_count, "classes": dict(self.classes),
            "compute_to_memory_ratio": round(self.compute_to_memory_ratio, 4),
            "registers": res.registers if res else None,
            "shared_bytes": res.shared_bytes if res else None,
            "resources": None if res is None else {
                "registers": res.registers, "shared_bytes": res.shared_bytes,
                "local_bytes": res.local_bytes, "stack_bytes": res.stack_bytes,
                "constant_bytes": res.constant_bytes, "spill_store_bytes": res.spill_store_bytes,
                "spill_load_bytes": res.spill_load_bytes, "source": res.source},
            "basic_blocks": sum(1 for b in self.cfg.blocks if b.reachable),
            "loops": [{"header": lp.header_address, "start": lp.start_address,
                       "end": lp.end_address, "instructions": lp.instructions,
                       "global_loads": lp.global_loads, "depth": lp.depth,
                       "back_edges": list(lp.back_edge_addresses), "hot": i == hot}
                      for i, lp in enumerate(self.cfg.loops)],
            "code_paths": [{"branch": p.branch_address, "condition": p.condition,
                            "arms": [[a.start_address, a.end_address, a.instructions]
                                     for a in p.arms], "join": p.join_address}
                           for p in self.cfg.code_paths],
            "params": [{"index": p.index, "type": p.type, "name": p.name,
                        "offset_bytes": p.offset_bytes} for p in self.params],
            "load_chains": [{"loads": [c.loads[0].address, c.loads[1].address],
                             "via": [v.address for v in c.via],
                             "label": c.label, "in_loop": c.in_loop,
                             "loop_header": c.loop_header,
                             "load_text": [c.loads[0].text, c.loads[1].text],
                             "via_text": [v.text for v in c.via],
                             "params": [c.loads[0].param_name or None,
                                        c.loads[1].param_name or None]}
                            for c in self.load_chains],
            "max_chain_depth": self.max_chain_depth,
            "stalls": None if self.stall_map is None else {
                "total_samples": self.stall_map.total_samples,
                "chain_samples": self.stall_map.chain_samples,
                "reasons": dict(self.stall_map.reason_totals),
                "hot_loop_header": self.stall_map.hot_loop_header,
                "top": [{"address": r.address, "text": r.text, "class": r.klass,
                         "samples": r.samples, "dominant_reason": r.dominant_reason,
                         "role": r.role or None} for r in self.stall_map.top(15)]},
        }


def _infer_base(instructions: tuple[Instruction, ...]) -> int:
    offsets = [off for ins in instructions for bank, off in ins.const_refs if bank == 0]
    if any(o >= 0x380 for o in offsets):
        return 0x380
    if any(o >= 0x210 for o in offsets) and any("desc[" in o for ins in instructions
                                                  for o in ins.operands):
        return 0x210
    return 0x160


def _attribute(s: LoadSlice, instructions, base: int, params) -> LoadRef:
    ins = instructions[s.load]
    cands = [(off - base, wide) for off, wide in s.const_offsets if off >= base]
    pointer = [(o, w) for o, w in cands if (p := param_for_offset(params, o)) is not None
               and p.is_pointer]
    pick = pointer or [c for c in cands if c[1]] or cands
    if not pick:
        return LoadRef(ins.address, ins.text, None, None, "")
    found = [param_for_offset(params, o) for o, _ in pick]
    named = list(dict.fromkeys(p.name for p in found if p is not None and p.name))
    first = found[0]
    return LoadRef(ins.address, ins.text, pick[0][0], first.index if first else None,
                   "/".join(named))


def _depth(edges: dict[int, set[int]]) -> int:
    memo: dict[int, int] = {}

    def longest(node: int, stack: frozenset) -> int:
        if node in memo:
            return memo[node]
        best = 1
        for nxt in edges.get(node, ()):
            if nxt not in stack:
                best = max(best, 1 + longest(nxt, stack | {node}))
        memo[node] = best
        return best

    return max((longest(n, frozenset()) for n in edges), default=0)


def chain_roles(instructions, chains: Sequence[LoadChain], du: DefUse
                ) -> dict[int, tuple[str, int | None]]:
    """Instruction index -> (role in the load chains, consumer load address) for the stall map."""
    index_of = {ins.address: i for i, ins in enumerate(instructions)}
    roles: dict[int, tuple[str, int | None]] = {}
    consumers: list[int] = []
    # chains that recur in a loop first: their roles win where an instruction has several
    for c in sorted(chains, key=lambda c: not c.in_loop):
        consumers.append(index_of[c.loads[1].address])
        roles.setdefault(index_of[c.loads[0].address], ("chain producer", None))
        for v in c.via:
            roles.setdefault(index_of[v.address], ("chain address", None))
    for i in consumers:
        roles[i] = ("chain consumer", None)
    users = du.users()
    for i in dict.fromkeys(consumers):
        for u in users.get(i, ()):
            roles.setdefault(u, ("uses chain load", instructions[i].address))
    return roles


def analyse_listing(listing: KernelListing, *, demangled: str | None = None,
                    resources: KernelResources | None = None, source: str | None = None,
                    param_names: list[str] | None = None,
                    stalls: SourceSassKernel | None = None) -> KernelAnalysis:
    """Analyse one kernel listing (see the module docstrings of cfg, dataflow, params)."""
    ins = listing.instructions
    cfg = build_cfg(ins)
    du = reaching_definitions(ins, cfg)
    slices, raw = load_slices_and_chains(ins, du)
    demangled = demangled or listing.name
    params = resolve_params(demangled, source, param_names)
    base = param_base(listing.arch) if listing.arch else _infer_base(ins)
    if base is None:
        base = _infer_base(ins)
    refs = {s.load: _attribute(s, ins, base, params) for s in slices}
    chains = []
    edges: dict[int, set[int]] = {}
    for rc in raw:
        common = set(cfg.loops_containing(rc.producer)) & set(cfg.loops_containing(rc.consumer))
        inner = max(common, key=lambda i: cfg.loops[i].depth) if common else None
        producer = refs.get(rc.producer) or _attribute(LoadSlice(rc.producer, (), ()), ins,
                                                       base, params)
        chains.append(LoadChain((producer, refs[rc.consumer]), tuple(ins[v] for v in rc.via),
                                bool(common), cfg.loops[inner].header_address
                                if inner is not None else None))
        edges.setdefault(rc.producer, set()).add(rc.consumer)
    stall_map = None
    if stalls is not None:
        roles = chain_roles(ins, chains, du)
        headers = {i: cfg.loops[li].header_address for i, li in enumerate(cfg.loop_of) if li >= 0}
        stall_map = join_stalls(stalls, ins, roles, headers)
    return KernelAnalysis(listing.name, demangled, listing.arch, listing.listing_format, ins,
                          resources, class_histogram(ins), compute_to_memory_ratio(ins), cfg,
                          params, base, tuple(refs[k] for k in sorted(refs)), tuple(chains),
                          _depth(edges), stall_map, du, tuple(raw))


def iter_analyses(path: str | Path, *, kernel: str | None = None, arch: str | None = None,
                  source: str | Path | None = None, param_names: list[str] | None = None,
                  stalls: str | Path | None = None) -> Iterator[KernelAnalysis]:
    """Analyse the selected kernels of a CUDA binary or saved listing one at a time (a library's
    thousands of kernels stream through without being held together).

    ``source``: CUDA source for parameter names; ``stalls``: an ncu source/SASS CSV whose kernel
    blocks are joined by kernel name (or to the only kernel analysed).
    """
    from sparsescope.sass.extract import iter_kernels, list_kernels
    from sparsescope.sass.stall_map import read_source_sass_csv

    text = Path(source).read_text() if source else None
    profiles = read_source_sass_csv(stalls) if stalls else []
    count = len(list_kernels(path, arch=arch, kernel=kernel)) if profiles else 0
    for entry, listing in iter_kernels(path, arch=arch, kernel=kernel):
        prof = _profile_for(profiles, entry.name, entry.demangled, count)
        yield analyse_listing(listing, demangled=entry.demangled, resources=entry.resources,
                              source=text, param_names=param_names, stalls=prof)


def analyse_file(path: str | Path, *, kernel: str | None = None, arch: str | None = None,
                 source: str | Path | None = None, param_names: list[str] | None = None,
                 stalls: str | Path | None = None) -> list[KernelAnalysis]:
    """Analyse every selected kernel of a CUDA binary, a saved listing, or a ``.cu`` file
    (compiled for ``arch``, default sm_90); see :func:`iter_analyses`."""
    path = Path(path)
    if path.suffix in (".cu", ".cuh"):
        return analyse_source(path, arch=arch or "sm_90", kernel=kernel, param_names=param_names,
                              stalls=stalls)
    return list(iter_analyses(path, kernel=kernel, arch=arch, source=source,
                              param_names=param_names, stalls=stalls))


def _profile_for(profiles: list[SourceSassKernel], name: str, demangled: str,
                 kernels: int) -> SourceSassKernel | None:
    for p in profiles:
        if p.name in (name, demangled) or (demangled and p.name.startswith(demangled)):
            return p
    if kernels == 1 and len(profiles) == 1:
        return profiles[0]
    return None


def analyse_source(source: str | Path, *, arch: str = "sm_90", kernel: str | None = None,
                   param_names: list[str] | None = None, stalls: str | Path | None = None,
                   out_dir: str | Path | None = None) -> list[KernelAnalysis]:
    """Compile CUDA source for ``arch`` (``-lineinfo``) and analyse its kernels."""
    from sparsescope.sass.extract import compile_cuda, iter_kernels
    from sparsescope.sass.resources import parse_ptxas_verbose
    from sparsescope.sass.stall_map import read_source_sass_csv

    with contextlib.ExitStack() as stack:
        # no out_dir: the cubin lives in a temporary folder only while it is read
        folder = out_dir or stack.enter_context(
            tempfile.TemporaryDirectory(prefix="sparsescope-sass-"))
        compiled = compile_cuda(source, arch, out_dir=folder)
        pairs = list(iter_kernels(compiled.cubin, kernel=kernel))
    ptxas = parse_ptxas_verbose(compiled.ptxas_log)
    profiles = read_source_sass_csv(stalls) if stalls else []
    out = []
    for entry, listing in pairs:
        res = merge_resources(entry.resources, ptxas.get(entry.name))
        prof = _profile_for(profiles, entry.name, entry.demangled, len(pairs))
        out.append(analyse_listing(listing, demangled=entry.demangled, resources=res,
                                   source=compiled.source, param_names=param_names, stalls=prof))
    return out


def resources_from_text(text: str) -> dict[str, KernelResources]:
    """Resources by kernel name from saved ``-res-usage`` and/or ``-Xptxas -v`` output."""
    from sparsescope.sass.resources import parse_ptxas_verbose

    res = {n: r for (n, _a), r in parse_res_usage(text).items()}
    ptx = parse_ptxas_verbose(text)
    return {n: merge_resources(res.get(n), ptx.get(n)) for n in {*res, *ptx}}
