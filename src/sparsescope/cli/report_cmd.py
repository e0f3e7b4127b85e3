"""``sparsescope report RESULTS.json --out DIR``: write the report of a results file, optionally
with Nsight Compute profile sections (``--profile``) and SASS analysis sections (``--sass``)."""

from __future__ import annotations

import argparse

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
    parser.add_argument("--reference-gpu", metavar="GPU", default=None,
                        help="for a CPU run, compute the GPU models (Little's law, DAE FIFO, "
                             "cross-GPU) for this GPU from its spec, over the one the run named")
    add_json_flag(parser)
    parser.set_defaults(handler=handle_report)


def handle_report(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    written = api.report(args.results, args.out, profile=args.profile, sass=args.sass,
                         kernel=args.kernel, progress=not args.json,
                         reference_gpu=args.reference_gpu)
    paths = written.paths
    lines = [f"wrote {paths.markdown}", f"wrote {paths.html}",
             f"wrote {len(paths.figures)} figures under {paths.out_dir / 'figures'}",
             f"wrote {len(paths.tables)} tables under {paths.out_dir / 'tables'}"]
    lines += [f"added section: {title}" for title in written.sections]
    lines += [f"figure {name} not drawn: {reason}" for name, reason in paths.skipped_figures]
    lines += ["", "Readings:"] + [f"  {name}: {text}" for name, text in paths.readings.items()]
    result = paths.to_dict()
    result["sections"] = list(written.sections)
    return result, "\n".join(lines)
