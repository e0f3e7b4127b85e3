"""``sparsescope report RESULTS.json --out DIR``: write the report of a results file, optionally
with Nsight Compute profile sections (``--profile``) and SASS analysis sections (``--sass``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sparsescope.cli import add_json_flag


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="write report.md, report.html, figures and JSON tables from a results file",
        description="Read a RunSet (results JSON) and write report.md, a self-contained "
                    "report.html, figures/*.png and tables/*.json into DIR.")
    parser.add_argument("results", metavar="RESULTS.json", help="results file written by `run`")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the report")
    parser.add_argument("--profile", action="append", default=[], metavar="FILE",
                        help="add an Nsight Compute section from a .ncu-rep or a --page raw CSV "
                             "(its _details.csv and _source.csv beside it are read too; "
                             "repeatable); ceilings from the results file's measurements")
    parser.add_argument("--sass", action="append", default=[], metavar="FILE",
                        help="add a SASS analysis section (cubin, listing, .cu, library; "
                             "repeatable)")
    parser.add_argument("--kernel", metavar="REGEX", help="kernels to keep in the SASS section")
    add_json_flag(parser)
    parser.set_defaults(handler=handle_report)


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


def handle_report(args: argparse.Namespace) -> tuple[dict, str]:
    # Both imports pull in the model and (later) matplotlib: keep them out of `--help`.
    from sparsescope._outputs import check_out_dir
    from sparsescope.report.write import write_report
    from sparsescope.results.io import read_runset

    runset = read_runset(args.results)  # a bad file raises ResultsFormatError (exit code 5)
    out = check_out_dir(args.out)
    sections = []
    if args.profile:
        sections.append(_profile_section(args.profile, out, runset))
    if args.sass:
        sections.append(_sass_section(args.sass, args.kernel))
    paths = write_report(runset, out, extra_sections=sections, progress=not args.json)
    lines = [f"wrote {paths.markdown}", f"wrote {paths.html}",
             f"wrote {len(paths.figures)} figures under {paths.out_dir / 'figures'}",
             f"wrote {len(paths.tables)} tables under {paths.out_dir / 'tables'}"]
    lines += [f"added section: {title}" for title, _ in sections]
    lines += [f"figure {name} not drawn: {reason}" for name, reason in paths.skipped_figures]
    lines += ["", "Readings:"] + [f"  {name}: {text}" for name, text in paths.readings.items()]
    result = paths.to_dict()
    result["sections"] = [title for title, _ in sections]
    return result, "\n".join(lines)
