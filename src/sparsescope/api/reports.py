"""``sparsescope report``: re-render the report of a saved run, with optional Nsight Compute
and SASS sections."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReportOutput:
    """What :func:`report` wrote."""

    paths: object
    """``sparsescope.report.write.ReportPaths``: the report, its figures and tables."""
    sections: tuple[str, ...] = ()
    """Titles of the sections added (profile, SASS)."""


def report(results_json: str | Path, out_dir: str | Path, *, profile: Sequence[str] = (),
           sass: Sequence[str] = (), kernel: str | None = None, progress: bool = False,
           reference_gpu: str | None = None):
    """Re-render the report of a saved run (each op's sections for its cases) into
    ``out_dir``: ``report.md``, ``report.html``, ``figures/`` and ``tables/``.

    ``profile``: Nsight Compute files (``.ncu-rep`` or ``--page raw`` CSV, with their
    ``_details.csv`` / ``_source.csv`` beside them) for an added profile section, its ceilings
    from the run's measurements; ``sass``: files (cubin, listing, ``.cu``, library) for an
    added SASS section, keeping the kernels ``kernel`` (a regex) matches. ``reference_gpu``:
    the GPU whose warp model a CPU run's report computes from its spec (over the one the run
    named; an unknown name is an ``UnknownNameError`` before anything is written). A bad
    results file raises ``ResultsFormatError``; an unwritable ``out_dir`` an ``OutputError``."""
    from sparsescope._outputs import check_out_dir
    from sparsescope.report.write import write_report
    from sparsescope.results.io import read_runset

    if reference_gpu:
        from sparsescope.hardware.specs import get_spec

        get_spec(reference_gpu)  # an unknown name, before reading or writing anything
    runset = read_runset(results_json)
    out = check_out_dir(out_dir)
    sections = []
    if profile:
        sections.append(_profile_section(list(profile), out, runset))
    if sass:
        sections.append(_sass_section(list(sass), kernel))
    paths = write_report(runset, Path(out), extra_sections=sections, progress=progress,
                         reference_gpu=reference_gpu)
    return ReportOutput(paths, tuple(title for title, _ in sections))


def _profile_section(files: list[str], out: Path, runset) -> tuple[str, str]:
    """(title, markdown) of the ncu section; its figures go to ``out/figures/profile_*``.
    Ceilings: the RunSet's measured ones, then the spec table, then ncu's peaks."""
    from sparsescope.profile.section import load_inputs
    from sparsescope.report.profile_render import build_section

    section = build_section(load_inputs(files), figure_dir=out / "figures",
                            figure_link_root="figures/", runset=runset, level=3)
    return "Nsight Compute profile", f"Source: {', '.join(section.files)}\n\n{section.markdown}"


def _sass_section(files: list[str], kernel: str | None) -> tuple[str, str]:
    from sparsescope.report.sass_render import render_markdown
    from sparsescope.sass import analyse_file

    analyses = [a for f in files for a in analyse_file(f, kernel=kernel)]
    return "SASS analysis", render_markdown(analyses, level=3)
