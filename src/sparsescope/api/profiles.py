"""``sparsescope profile``: one case under Nsight Compute, a profile read back, a profile
section rendered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProfileOutput:
    """What :func:`profile_case` ran and read back."""

    run: object
    """``profile.collect.ProfileRun``: the report, its exports, the command, ncu's version, and
    which launches were profiled (``run.selection``)."""
    profiles: tuple = ()
    """``profile.records.KernelProfile`` of each profiled launch."""
    options: object = None
    """``profile.collect.CollectOptions`` ncu ran with (groups or set, filters)."""


def profile_case(suite: str, matrix: str, backend: str, out_dir: str | Path, *,
                 op: str = "spmv", params: Mapping | None = None, scale: float = 1.0,
                 groups: Sequence[str] | None = None, section_set: str | None = None,
                 kernel: str | None = None, kernel_name_base: str | None = None,
                 launch_skip: int | None = None, launch_count: int | None = None,
                 clock_control: str | None = None, cache_control: str | None = None,
                 whole_program: bool = False, ncu: str | None = None,
                 timeout_s: float | None = None, progress: bool = False) -> ProfileOutput:
    """Run one ``op`` case (``matrix`` of ``suite`` at ``scale``, ``backend`` or a variant
    ``BACKEND[opt=value]``, the op's ``params``) once under ncu through the one target
    program, write the report and its CSV exports into ``out_dir`` (checked before ncu runs),
    and read them back. ncu profiles the backend's own kernels of the checked call
    (``profile.kernel_selection.select_kernels``): ``kernel`` (matched on
    ``kernel_name_base``) replaces the name filter, ``whole_program`` profiles every launch of
    the program. The other collect options are ``profile.collect.CollectOptions``' (None: its
    default)."""
    from sparsescope._outputs import check_out_dir
    from sparsescope.profile.collect import (
        profile_stem,
        resolve_op_params,
        run_selected,
        selected_options,
        target_command,
    )
    from sparsescope.profile.kernel_selection import select_kernels
    from sparsescope.profile.read_csv import load_profiles_csv
    from sparsescope.progress import Status

    resolved = resolve_op_params(op, dict(params or {}))
    check_out_dir(out_dir)  # before ncu runs for minutes
    selection = select_kernels(backend, kernel=kernel, kernel_name_base=kernel_name_base,
                               whole_program=whole_program)
    options = selected_options(
        selection, groups=None if groups is None else tuple(groups), section_set=section_set,
        launch_skip=launch_skip, launch_count=launch_count, clock_control=clock_control,
        cache_control=cache_control)
    target = target_command(suite, matrix, backend, op=op, scale=scale, params=resolved,
                            one_call=selection.one_call)
    stem = profile_stem(suite, matrix, backend, resolved)
    with Status(f"profiling {backend} on {matrix} under ncu", progress):
        run = run_selected(target, out_dir, stem, options, selection, ncu=ncu,
                           timeout_s=timeout_s)
    return ProfileOutput(run, tuple(load_profiles_csv(run.raw_csv, run.details_csv)), options)


def read_profile(file: str | Path, details: str | Path | None = None) -> list:
    """The kernel launches of a ``.ncu-rep`` or a ``--page raw`` CSV export (with its
    ``--page details`` export when given)."""
    from sparsescope.profile import load

    return list(load(file, details))


@dataclass(frozen=True)
class ProfileSectionOutput:
    """What :func:`profile_report` rendered and wrote."""

    section: object
    """``report.profile_render.ProfileSection``: Markdown, figures, labels, ceilings."""
    markdown_path: Path | None = None


def profile_report(files: Sequence[str], *, details: Sequence[str] = (),
                   out_dir: str | Path | None = None, results: str | Path | None = None,
                   use_store: bool = False, kernel: str | None = None,
                   all_launches: bool = False,
                   labels: Sequence[str] | None = None) -> ProfileSectionOutput:
    """The profile section of ``files`` (``.ncu-rep`` or CSV; ``details``: one ``--page
    details`` export per CSV file): stalls, occupancy, memory, rooflines, its ceilings from
    ``results`` (a results file), the store (``use_store``) or the spec table. With
    ``out_dir``: ``profile.md`` and the figures written there (checked first)."""
    from sparsescope._atomic import write_text_atomic
    from sparsescope.errors import UsageError
    from sparsescope.profile.section import load_inputs
    from sparsescope.report.profile_render import build_section

    csv_files = [f for f in files if str(f).lower().endswith(".csv")]
    if details and len(details) != len(csv_files):
        raise UsageError(f"{len(details)} --details for {len(csv_files)} CSV files")
    given = iter(details)
    paired = [next(given, None) if str(f).lower().endswith(".csv") else None for f in files]
    if out_dir:
        from sparsescope._outputs import check_out_dir

        check_out_dir(out_dir)
    inputs = load_inputs(list(files), paired)
    runset = None
    if results:
        from sparsescope.results.io import read_runset

        runset = read_runset(results)
    section = build_section(inputs, figure_dir=Path(out_dir) if out_dir else None,
                            runset=runset, use_store=use_store, kernel=kernel,
                            all_launches=all_launches,
                            labels=list(labels) if labels else None)
    path = None
    if out_dir:
        path = Path(write_text_atomic(Path(out_dir) / "profile.md", section.markdown))
    return ProfileSectionOutput(section, path)
