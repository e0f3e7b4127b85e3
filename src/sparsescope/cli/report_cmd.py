"""``sparsescope report RESULTS.json --out DIR``: write the report of a results file."""

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
    add_json_flag(parser)
    parser.set_defaults(handler=handle_report)


def handle_report(args: argparse.Namespace) -> tuple[dict, str]:
    # Both imports pull in the model and (later) matplotlib: keep them out of `--help`.
    from sparsescope.report.write import write_report
    from sparsescope.results.io import read_runset

    runset = read_runset(args.results)  # a bad file raises ResultsFormatError (exit code 5)
    paths = write_report(runset, args.out)
    lines = [f"wrote {paths.markdown}", f"wrote {paths.html}",
             f"wrote {len(paths.figures)} figures under {paths.out_dir / 'figures'}",
             f"wrote {len(paths.tables)} tables under {paths.out_dir / 'tables'}"]
    lines += [f"figure {name} not drawn: {reason}" for name, reason in paths.skipped_figures]
    lines += ["", "Readings:"] + [f"  {name}: {text}" for name, text in paths.readings.items()]
    return paths.to_dict(), "\n".join(lines)
