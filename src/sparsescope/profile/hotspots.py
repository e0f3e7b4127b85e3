"""The hottest SASS instructions of a profiled kernel by warp-stall samples, with their stall
reasons and their part in the dependent-load chains (seed 000 section 4.4, seed 001 section 5.2).

The per-instruction data comes from a report's per-PC metrics (``.ncu-rep``, through
:func:`sparsescope.profile.read_report.load_instruction_samples`) or from the source page
(``--page source --print-source sass`` CSV, read by
:func:`sparsescope.sass.stall_map.read_source_sass_csv`). Either becomes a
:class:`~sparsescope.sass.stall_map.SourceSassKernel`; the SASS text of those rows is the
kernel's listing (addresses rebased to the kernel start, branch targets with them), which
:func:`sparsescope.sass.analysis.analyse_listing` analyses and joins with the samples
(:func:`sparsescope.sass.stall_map.join_stalls`): no second stall reader, no second join.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsescope.profile import metrics as M
from sparsescope.profile.records import InstructionSample, KernelProfile, short_kernel_name
from sparsescope.sass.source_page import SHORT_NAMES
from sparsescope.sass.stall_map import STALL_NAMES, SourceSassKernel, SourceSassRow

#: Instructions listed per kernel.
TOP_INSTRUCTIONS = 10
#: Stall reason (``long_scoreboard``) -> the source page's column suffix (``long_sb``), the key
#: :mod:`sparsescope.sass.stall_map` uses.
_SHORT = SHORT_NAMES
_ABS_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def stall_kernel_from_samples(samples: Sequence[InstructionSample]) -> SourceSassKernel:
    """A report's per-PC rows in the source page's form (stall keys as its column suffixes)."""
    if not samples:
        raise ValueError("no instruction samples")
    rows = tuple(SourceSassRow(
        address=s.address, text=s.sass, samples=s.warp_stall_samples,
        samples_not_issued=s.warp_stall_samples_not_issued, executed=s.instructions_executed,
        stalls={_SHORT.get(r, r): n for r, n in s.stall_samples.items()}) for s in samples)
    return SourceSassKernel(samples[0].kernel, rows)


def listing_from_rows(kernel: SourceSassKernel, arch: str = ""):
    """The rows' SASS as a :class:`~sparsescope.sass.listing.KernelListing`: offsets from the
    first instruction, absolute branch targets inside the kernel rebased the same way."""
    from sparsescope.sass.instructions import parse_instruction
    from sparsescope.sass.listing import KernelListing

    base = min(r.address for r in kernel.rows)
    end = max(r.address for r in kernel.rows)

    def rebase(match: re.Match) -> str:
        value = int(match.group(0), 16)
        return f"{value - base:#x}" if base <= value <= end + 16 else match.group(0)

    instructions = tuple(parse_instruction(r.address - base, _ABS_ADDRESS.sub(rebase, r.text))
                         for r in sorted(kernel.rows, key=lambda r: r.address))
    return KernelListing(kernel.name, arch, instructions, "ncu-source")


@dataclass(frozen=True)
class HotInstruction:
    """One instruction of a kernel's hottest by warp-stall samples."""

    offset: int
    """Byte offset from the kernel's first instruction (as in ``cuobjdump -sass``)."""
    sass: str
    samples: int
    """Warp-stall PC samples on this instruction (all samples)."""
    pct_of_samples: float
    """100 x samples / the kernel's samples."""
    dominant_reason: str
    """Reason with the most samples, as ncu labels it (``Long Scoreboard``)."""
    reasons: dict[str, int]
    """Reason label -> samples, largest first."""
    role: str
    """Part in a dependent-load chain: ``chain producer`` (``LDG col[j]``), ``chain address``,
    ``chain consumer`` (``LDG x[col]``), ``uses chain load``; empty when none."""
    executed: int
    """Warp-level executions."""


@dataclass(frozen=True)
class KernelHotspots:
    """Stall samples of one kernel launch: totals and the hottest instructions."""

    kernel: str
    total_samples: int
    reason_totals: dict[str, int]
    """Reason label -> samples over the kernel, largest first."""
    chain_samples: int
    """Samples on instructions with a load-chain role."""
    load_chains: int
    """Dependent global-load pairs the SASS analysis found (0 when it could not run)."""
    rows: tuple[HotInstruction, ...]
    note: str = ""
    """Why roles are missing, when the SASS analysis could not run on these rows."""

    @property
    def chain_pct(self) -> float:
        return 100.0 * self.chain_samples / self.total_samples if self.total_samples else 0.0


def _arch(profile: KernelProfile | None) -> str:
    if profile is None:
        return ""
    major, minor = (profile.value(n) for n in M.DEVICE_CC)
    return "" if major is None or minor is None else f"sm_{int(major)}{int(minor)}"


def kernel_hotspots(kernel: SourceSassKernel, *, label: str | None = None,
                    profile: KernelProfile | None = None,
                    top: int = TOP_INSTRUCTIONS) -> KernelHotspots:
    """Analyse the rows' SASS, join the samples, keep the ``top`` instructions by samples."""
    from sparsescope.errors import SparsescopeError
    from sparsescope.sass.analysis import analyse_listing

    listing = listing_from_rows(kernel, _arch(profile))
    demangled = profile.demangled_name if profile is not None else None
    try:
        analysis = analyse_listing(listing, demangled=demangled, stalls=kernel)
    except (SparsescopeError, ValueError, KeyError, IndexError) as exc:
        # rows the SASS parser cannot follow: the samples still rank, without load-chain roles
        return _hotspots_without_roles(kernel, label, top, f"no load-chain roles: {exc}")
    stall_map = analysis.stall_map
    total = stall_map.total_samples
    base = min(x.address for x in kernel.rows)
    executed_at = {x.address - base: x.executed for x in kernel.rows}
    rows = []
    for r in stall_map.top(top):
        if r.samples == 0:
            break
        reasons = {STALL_NAMES.get(k, k): v for k, v in
                   sorted(r.reasons.items(), key=lambda kv: -kv[1]) if v}
        rows.append(HotInstruction(r.address, r.text, r.samples,
                                   100.0 * r.samples / total if total else 0.0,
                                   r.dominant_reason, reasons, r.role,
                                   executed_at.get(r.address, 0)))
    return KernelHotspots(label or kernel.name, total, dict(stall_map.reason_totals),
                          stall_map.chain_samples, len(analysis.load_chains), tuple(rows))


def _hotspots_without_roles(kernel: SourceSassKernel, label: str | None, top: int,
                            note: str) -> KernelHotspots:
    base = min(r.address for r in kernel.rows)
    total = sum(r.samples for r in kernel.rows)
    totals: dict[str, int] = {}
    for r in kernel.rows:
        for k, v in r.stalls.items():
            totals[STALL_NAMES.get(k, k)] = totals.get(STALL_NAMES.get(k, k), 0) + v
    rows = []
    for r in sorted(kernel.rows, key=lambda r: -r.samples)[:top]:
        if r.samples == 0:
            break
        reasons = {STALL_NAMES.get(k, k): v for k, v in
                   sorted(r.stalls.items(), key=lambda kv: -kv[1]) if v}
        dominant = next((k for k in reasons if k != "Selected"), next(iter(reasons), ""))
        rows.append(HotInstruction(r.address - base, r.text, r.samples,
                                   100.0 * r.samples / total if total else 0.0, dominant,
                                   reasons, "", r.executed))
    return KernelHotspots(label or kernel.name, total,
                          dict(sorted(totals.items(), key=lambda kv: -kv[1])), 0, 0,
                          tuple(rows), note)


# --- loading the per-instruction data beside the profiles -----------------------------------------

def sibling_exports(raw_csv: str | Path) -> tuple[Path | None, Path | None]:
    """(details, source) exports written beside ``<stem>_raw.csv`` by ``sparsescope profile
    run`` (``<stem>_details.csv``, ``<stem>_source.csv``); None for each that is not there."""
    path = Path(raw_csv)
    if not path.name.endswith("_raw.csv"):
        return None, None
    stem = path.name[: -len("_raw.csv")]
    found = [path.with_name(f"{stem}_{page}.csv") for page in ("details", "source")]
    return tuple(p if p.is_file() else None for p in found)  # type: ignore[return-value]


def instruction_data(path: str | Path, profiles: Sequence[KernelProfile],
                     source_csv: str | Path | None = None
                     ) -> dict[tuple[str, int], SourceSassKernel]:
    """Per-instruction rows of the launches in ``profiles`` read from ``path``, keyed by
    (profile.source, profile.index): a report's per-PC data, or the source-page export
    ``source_csv`` of a raw CSV. ncu 2025.3 writes some launches' blocks twice in a row (seen
    for cuSPARSE kernels on H200): exact repeats of the block before are dropped. The blocks
    are then matched to launches in order when there is one per launch, else each launch takes
    the first block of its kernel's name."""
    from sparsescope.errors import UsageError
    from sparsescope.profile.read_csv import not_a_report
    from sparsescope.profile.read_report import load_instruction_samples
    from sparsescope.sass.stall_map import read_source_sass_csv

    out: dict[tuple[str, int], SourceSassKernel] = {}
    if str(path).lower().endswith(".ncu-rep"):
        for index, samples in load_instruction_samples(path).items():
            if samples:
                out[(str(path), index)] = stall_kernel_from_samples(samples)
        return out
    if source_csv is None:
        return out
    try:
        read = read_source_sass_csv(source_csv)
    except UsageError as exc:  # a bad profile file: the profile stage's error, as analyze's
        raise not_a_report(exc, source_csv) from exc
    blocks: list[SourceSassKernel] = []
    for block in read:
        if block.rows and not (blocks and blocks[-1] == block):
            blocks.append(block)
    ordered = sorted(profiles, key=lambda p: p.index)
    if len(blocks) == len(ordered):
        return {(p.source, p.index): b for p, b in zip(ordered, blocks, strict=True)}
    for p in ordered:
        block = next((b for b in blocks if short_kernel_name(b.name) == p.name), None)
        if block is not None:
            out[(p.source, p.index)] = block
    return out


def hotspots_for(profiles: Sequence[KernelProfile], labels: Sequence[str],
                 data: Mapping[tuple[str, int], SourceSassKernel],
                 top: int = TOP_INSTRUCTIONS) -> tuple[KernelHotspots, ...]:
    """:func:`kernel_hotspots` of every profile whose rows ``data`` holds, in profile order."""
    out = []
    for p, label in zip(profiles, labels, strict=True):
        kernel = data.get((p.source, p.index))
        if kernel is not None and kernel.rows:
            out.append(kernel_hotspots(kernel, label=label, profile=p, top=top))
    return tuple(out)
