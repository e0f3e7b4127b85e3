"""What the profile section shows, from files: read the profiles and their per-instruction data,
pick one launch per kernel launch, resolve the ceilings, find the hottest instructions. The report
stage (``report.profile_render.build_section``) draws the figures and renders the Markdown of it,
for the commands ``profile report`` and ``report --profile``.

Files: ``.ncu-rep`` reports (rule messages and per-PC samples inside), ``--page raw`` CSV exports
(with ``<stem>_details.csv`` and ``<stem>_source.csv`` beside them picked up, as ``sparsescope
profile run`` writes them, unless a details export is given), or long-layout CSVs (details page,
``ncu --csv`` default output).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sparsescope.profile.records import KernelProfile


@dataclass(frozen=True)
class SectionInputs:
    """Profiles of several files and the per-instruction rows of their launches."""

    profiles: tuple[KernelProfile, ...]
    instructions: dict = field(default_factory=dict)
    """(profile.source, profile.index) -> SourceSassKernel."""
    files: tuple[str, ...] = ()
    """Every file read, siblings included."""


def load_inputs(files: Sequence[str | Path],
                details: Sequence[str | Path | None] | None = None) -> SectionInputs:
    """Read ``files``; ``details``: a details export per file (None to look beside it)."""
    from sparsescope.profile import load
    from sparsescope.profile.hotspots import instruction_data, sibling_exports

    details = list(details) if details is not None else [None] * len(files)
    if len(details) != len(files):
        raise ValueError(f"{len(details)} details exports for {len(files)} files")
    profiles: list[KernelProfile] = []
    data: dict = {}
    read: list[str] = []
    for path, detail in zip(files, details, strict=True):
        path = Path(path)
        source = None
        if path.suffix.lower() == ".csv":
            beside_details, source = sibling_exports(path)
            detail = detail if detail is not None else beside_details
        found = load(path, detail)
        profiles.extend(found)
        data.update(instruction_data(path, found, source))
        read += [str(p) for p in (path, detail, source) if p is not None]
    return SectionInputs(tuple(profiles), data, tuple(read))


@dataclass(frozen=True)
class SectionData:
    """The chosen launches and what the section shows of them (no text: the report stage
    renders it)."""

    profiles: tuple[KernelProfile, ...]
    labels: tuple[str, ...]
    ceilings: object
    """The :class:`~sparsescope.profile.ceilings.RooflineCeilings` used."""
    hotspots: tuple = ()
    """:class:`~sparsescope.profile.hotspots.KernelHotspots` of the launches with per-instruction
    rows, in profile order."""
    files: tuple[str, ...] = ()


def select_section(inputs: SectionInputs, *, runset=None, use_store: bool = False,
                   kernel: str | None = None, all_launches: bool = False,
                   labels: Sequence[str] | None = None) -> SectionData:
    """Choose the launches, label them, resolve the ceilings (measured from ``runset`` or the
    store, else the spec table, else ncu's peaks) and find the hottest instructions. Raises
    UsageError for a kernel filter that
    keeps nothing or labels that do not match."""
    from sparsescope.errors import UsageError
    from sparsescope.profile.analysis import kernel_labels, representative_launches
    from sparsescope.profile.ceilings import resolve_ceilings
    from sparsescope.profile.hotspots import hotspots_for

    profiles = list(inputs.profiles)
    if kernel:
        profiles = [p for p in profiles if p.name == kernel]
        if not profiles:
            raise UsageError(f"no kernel named {kernel!r} in {', '.join(inputs.files)}")
    if not all_launches:
        profiles = list(representative_launches(profiles))
    if labels is not None and len(labels) != len(profiles):
        raise UsageError(f"{len(labels)} labels for {len(profiles)} kernels")
    names = tuple(labels) if labels is not None else kernel_labels(profiles)
    ceilings = resolve_ceilings(profiles, runset=runset, use_store=use_store)
    return SectionData(tuple(profiles), names, ceilings,
                       hotspots_for(profiles, names, inputs.instructions), inputs.files)
