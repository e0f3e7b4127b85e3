"""Assemble :class:`Evidence` from recorded files: an ncu report or raw CSV (with its source
page), SASS listings, binaries or ``.cu`` files -- the offline path of ``sparsescope analyze
--from-profile``, and the second half of a live measurement (:mod:`.measure` profiles, then
calls :func:`evidence_from_profiles`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from sparsescope.analyze.evidence import (
    DeviceEvidence,
    Evidence,
    KernelEvidence,
    occupancy_evidence,
    profile_evidence,
    static_evidence,
)
from sparsescope.errors import UsageError

DEFAULT_GPU = "H200"
_HEX = re.compile(r"0x[0-9a-fA-F]+")


def device_evidence(gpu: str | None = None, profile=None, *, latency_ns: float | None = None,
                    bw_gb_s: float | None = None) -> tuple[DeviceEvidence, str | None]:
    """Device figures from the spec table: ``gpu`` by name, else the profiled device's name,
    else :data:`DEFAULT_GPU` (returned note says so). Measured figures override the table."""
    from sparsescope.hardware.specs import get_spec, match_device_name

    note = None
    spec = None
    if gpu:
        spec = get_spec(gpu)
    elif profile is not None and profile.text("device__attribute_display_name"):
        spec = match_device_name(profile.text("device__attribute_display_name"))
        if spec is None:
            note = (f"profiled device {profile.text('device__attribute_display_name')!r} is not "
                    f"in the spec table; {DEFAULT_GPU} figures used")
    if spec is None:
        spec = get_spec(DEFAULT_GPU)
        note = note or f"no device given: {DEFAULT_GPU} figures from the spec table used"
    source = "spec table" + (" + measured" if latency_ns or bw_gb_s else "")
    return DeviceEvidence(spec.name, spec.compute_capability, spec.sm_count,
                          spec.max_warps_per_sm, bw_gb_s or spec.peak_bw_gb_s,
                          spec.fp32_peak_gflops, latency_ns or spec.dram_latency_ns,
                          spec.sm_clock_mhz, source), note


def listing_from_samples(samples, name: str, arch: str = ""):
    """A :class:`~sparsescope.sass.KernelListing` from the SASS text of ncu's source page.

    ncu prints absolute addresses; instructions are rebased to offsets from the first one, and
    branch targets inside the kernel are rebased the same way."""
    from sparsescope.sass.instructions import parse_instruction
    from sparsescope.sass.listing import KernelListing

    if not samples:
        raise UsageError(f"no per-instruction rows for kernel {name}")
    base = min(s.address for s in samples)
    end = max(s.address for s in samples)

    def rebase(text: str) -> str:
        def sub(m: re.Match) -> str:
            value = int(m.group(0), 16)
            return hex(value - base) if base <= value <= end + 16 else m.group(0)
        return _HEX.sub(sub, text) if re.search(r"\b(BRA|BSSY|CALL|JMP|BRX|JMX)\b", text) \
            else text

    ins = tuple(parse_instruction(s.address - base, rebase(s.sass),
                                  source_file=s.source_file or "",
                                  source_line=s.source_line or 0)
                for s in sorted(samples, key=lambda s: s.address))
    return KernelListing(name, arch, ins, "ncu-source")


def _arch_of(profile) -> str:
    major = profile.value("device__attribute_compute_capability_major")
    minor = profile.value("device__attribute_compute_capability_minor")
    return f"sm_{int(major)}{int(minor)}" if major is not None and minor is not None else ""


def _names(profile) -> set[str]:
    return {profile.name, profile.demangled_name}


def match_analysis(profile, analyses: Sequence):
    """The SASS analysis of ``profile``'s kernel: by mangled, demangled or short name; the only
    one when exactly one was given."""
    for a in analyses:
        if a.name in _names(profile) or a.demangled in _names(profile) or \
                a.demangled.split("(")[0].split("<")[0].split()[-1] == profile.name:
            return a
    return analyses[0] if len(analyses) == 1 else None


def launch_key(profile) -> tuple:
    """What makes launches repeats of one kernel launch (as
    :func:`~sparsescope.profile.analysis.representative_launches` groups them): the demangled
    name (template instances of one function differ), block and grid size."""
    return (profile.demangled_name or profile.name, profile.block_size, profile.grid_size)


def _named(block: Sequence, profile) -> bool:
    """The source-page block names ``profile``'s kernel (the page prints the full signature,
    the raw page a shortened one: compare the function name as a whole identifier)."""
    if not block:
        return False
    text = block[0].kernel
    return text in _names(profile) or re.search(
        rf"(?<![\w]){re.escape(profile.name)}(?![\w])", text) is not None


def _same_block(a: Sequence, b: Sequence) -> bool:
    return len(a) == len(b) and bool(a) and a[0].kernel == b[0].kernel and all(
        x.address == y.address and x.instructions_executed == y.instructions_executed
        and x.stall_samples == y.stall_samples for x, y in zip(a, b, strict=True))


def assign_samples(launches: Sequence, blocks: dict) -> dict[int, tuple]:
    """Launch index -> its per-instruction rows.

    The source page prints one block per launch, in launch order, but ncu 2025.3 printed some
    launches' blocks twice (seen on PyTorch kernels: identical consecutive blocks, counters and
    samples equal). Blocks keyed by launch index are used when there is one per launch and each
    names its launch's kernel; otherwise identical consecutive blocks are merged and, when as
    many blocks as launches remain and each names its launch's kernel, they are matched in
    order; otherwise each launch takes the next unused block naming its kernel."""
    launches = list(launches)
    if len(blocks) == len(launches) and all(p.index in blocks and _named(blocks[p.index], p)
                                            for p in launches):
        return {p.index: tuple(blocks[p.index]) for p in launches}
    ordered = [tuple(blocks[k]) for k in sorted(blocks)]
    if len(ordered) > len(launches):
        merged: list[tuple] = []
        for b in ordered:
            if not (merged and _same_block(merged[-1], b)):
                merged.append(b)
        ordered = merged
    if len(ordered) == len(launches) and all(_named(b, p) for b, p in
                                             zip(ordered, launches, strict=True)):
        return {p.index: b for p, b in zip(launches, ordered, strict=True)}
    out, used = {}, set()
    for p in launches:
        k = next((i for i, b in enumerate(ordered) if i not in used and _named(b, p)), None)
        if k is not None:
            used.add(k)
            out[p.index] = ordered[k]
    return out


def kernel_evidence(profile, *, analysis=None, samples=(), time_share: float = 1.0,
                    launches: int = 1, time_ms: float | None = None,
                    arch: str = "", name: str | None = None) -> KernelEvidence:
    """One kernel's evidence from its profile, per-instruction rows and SASS analysis; ``name``
    labels it (default: the profiled function name).

    With per-instruction rows the SASS is the rows' own text (exactly the profiled code, so the
    counters line up by address); a separately compiled ``analysis`` then only contributes its
    resources (spills) and parameter names."""
    from sparsescope.sass.analysis import analyse_listing

    pe = profile_evidence(profile, samples) if profile is not None else None
    if samples:
        analysis = analyse_listing(
            listing_from_samples(samples, profile.name, analysis.arch if analysis else arch),
            demangled=analysis.demangled if analysis else None,
            resources=analysis.resources if analysis else None,
            param_names=[p.name for p in analysis.params] if analysis and analysis.params
            and all(p.name for p in analysis.params) else None)
    st = static_evidence(analysis) if analysis is not None else None
    occ = occupancy_evidence(profile=pe, static=st, block_threads=profile.block_size
                             if profile is not None else None, arch=arch)
    if time_ms is None and profile is not None and profile.duration_ns:
        time_ms = profile.duration_ns * 1e-6 * launches
    label = name or (profile.name if profile is not None else analysis.name)
    return KernelEvidence(label, time_ms,
                          time_share, launches, pe.grid_blocks if pe else None,
                          pe.block_threads if pe else None, st, pe, occ)


def load_profiles(path: str | Path, kernel: str | None = None, launch: int | None = None):
    """Launches of a report or raw CSV: one representative launch per distinct kernel launch
    (:func:`~sparsescope.profile.analysis.representative_launches`), or the given index."""
    from sparsescope.profile import load
    from sparsescope.profile.analysis import representative_launches

    profiles = load(path)
    if launch is not None:
        chosen = [p for p in profiles if p.index == launch]
        if not chosen:
            raise UsageError(f"{path}: no launch {launch}; launches are "
                             f"{profiles[0].index}..{profiles[-1].index}")
        return tuple(chosen), profiles
    if kernel:
        rx = re.compile(kernel)
        profiles_k = tuple(p for p in profiles if rx.search(p.name) or
                           rx.search(p.demangled_name))
        if not profiles_k:
            raise UsageError(f"{path}: no launch of a kernel matching {kernel!r}; kernels: "
                             + ", ".join(sorted({p.name for p in profiles})))
        return representative_launches(profiles_k), profiles
    return representative_launches(profiles), profiles


def load_samples(path: str | Path | None, report: str | Path) -> dict:
    """Per-instruction rows: from a source-page CSV when given, else from the ``.ncu-rep`` when
    it holds them; ``{}`` otherwise."""
    if path is not None:
        from sparsescope.profile.read_csv import load_instruction_samples_csv

        return load_instruction_samples_csv(path)
    if str(report).endswith(".ncu-rep"):
        from sparsescope.profile.read_report import load_instruction_samples

        return load_instruction_samples(report)
    return {}


def analyses_from(sass: str | Path | None, arch: str | None = None) -> list:
    """SASS analyses of a listing, binary or ``.cu`` file (empty list for None)."""
    if sass is None:
        return []
    from sparsescope.sass.analysis import analyse_file

    return analyse_file(sass, arch=arch)


def evidence_from_profiles(profiles: Sequence, *, all_launches: Sequence = (),
                           samples: dict | None = None, analyses: Sequence = (),
                           workload: str, version: str = "", gpu: str | None = None,
                           ideal_bytes: int | None = None, ideal_flops: int | None = None,
                           bytes_source: str = "declared", time_ms: float | None = None,
                           time_source: str = "profile", launches: dict | None = None,
                           timing: dict | None = None, correctness: dict | None = None,
                           notes: Sequence[str] = (), latency_ns: float | None = None,
                           bw_gb_s: float | None = None) -> Evidence:
    """Evidence of the given launches (one :class:`KernelEvidence` each, labelled by
    :func:`~sparsescope.profile.analysis.kernel_labels`: ``name#index`` where function names
    repeat, e.g. two template instances).

    ``launches``: :func:`launch_key` (or kernel name) -> launches per workload call (default 1).
    Time shares come from duration x launches; the workload time is ``time_ms`` when measured,
    else the sum of the kernels' profiled times."""
    from sparsescope.profile.analysis import kernel_labels

    if not profiles:
        raise UsageError("no profiled launch to analyse")
    launches = launches or {}
    device, note = device_evidence(gpu, profiles[0], latency_ns=latency_ns, bw_gb_s=bw_gb_s)
    arch = _arch_of(profiles[0]) or f"sm_{device.compute_capability.replace('.', '')}"
    counts = [int(launches.get(launch_key(p), launches.get(p.name, 1))) for p in profiles]
    times = [(p.duration_ns or 0.0) * 1e-6 * n for p, n in zip(profiles, counts, strict=True)]
    total = sum(times) or 1.0
    rows = assign_samples(list(all_launches) or list(profiles), samples or {})
    kernels = []
    for p, t, n, label in zip(profiles, times, counts, kernel_labels(profiles), strict=True):
        kernels.append(kernel_evidence(p, analysis=match_analysis(p, analyses) if analyses
                                       else None, samples=rows.get(p.index, ()),
                                       time_share=t / total, launches=n, time_ms=t or None,
                                       arch=arch, name=label))
    workload_ms = time_ms if time_ms is not None else (sum(times) or None)
    floor = ideal_bytes / (device.peak_bw_gb_s * 1e9) * 1e3 if ideal_bytes else None
    return Evidence(workload, version, device, workload_ms, time_source, ideal_bytes, ideal_flops,
                    bytes_source if ideal_bytes else "none", floor, tuple(kernels),
                    dict(timing or {}), dict(correctness or {}),
                    tuple(notes) + ((note,) if note else ()))


def evidence_from_profile_file(report: str | Path, *, source_csv: str | Path | None = None,
                               sass: str | Path | None = None, kernel: str | None = None,
                               launch: int | None = None, **kw) -> Evidence:
    """``--from-profile``: a ``.ncu-rep`` or ``--page raw`` CSV, optionally its source page
    (``--page source --print-source sass``) and the kernels' SASS (listing, binary, ``.cu``)."""
    chosen, every = load_profiles(report, kernel, launch)
    samples = load_samples(source_csv, report)
    analyses = analyses_from(sass)
    kw.setdefault("workload", Path(report).stem)
    return evidence_from_profiles(chosen, all_launches=every, samples=samples, analyses=analyses,
                                  **kw)


def evidence_from_sass(analyses: Sequence, *, workload: str, version: str = "",
                       gpu: str | None = None, block_threads: int | None = None,
                       grid_blocks: int | None = None, dynamic_shared_bytes: int = 0,
                       ideal_bytes: int | None = None, ideal_flops: int | None = None,
                       time_ms: float | None = None, notes: Sequence[str] = (),
                       latency_ns: float | None = None, bw_gb_s: float | None = None
                       ) -> Evidence:
    """Static evidence only (no GPU): every analysed kernel with its occupancy for
    ``block_threads``; ``time_ms`` when a time was measured elsewhere."""
    device, note = device_evidence(gpu, latency_ns=latency_ns, bw_gb_s=bw_gb_s)
    kernels = []
    share = 1.0 / len(analyses) if analyses else 1.0
    for a in analyses:
        st = static_evidence(a)
        arch = a.arch or f"sm_{device.compute_capability.replace('.', '')}"
        occ = occupancy_evidence(static=st, block_threads=block_threads, arch=arch,
                                 dynamic_shared_bytes=dynamic_shared_bytes)
        kernels.append(KernelEvidence(a.name, time_ms * share if time_ms else None, share, 1,
                                      grid_blocks, block_threads, st, None, occ))
    floor = ideal_bytes / (device.peak_bw_gb_s * 1e9) * 1e3 if ideal_bytes else None
    return Evidence(workload, version, device, time_ms, "given" if time_ms else "none",
                    ideal_bytes, ideal_flops, "declared" if ideal_bytes else "none", floor,
                    tuple(kernels), {}, {}, tuple(notes) + ((note,) if note else ()))
