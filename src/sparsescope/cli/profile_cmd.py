"""``sparsescope profile``: run a case under Nsight Compute, read profiles, render the section.

    sparsescope profile [run] --matrix suite:S#M[@SCALE] --backend B [--op spmv|spmm|slice]
                        [--k K] [--layout row|col]                                (spmm)
                        [--rows-selected N] [--weights scalar|per-nnz]
                        [--out-of-range error|zero]                               (slice)
                        [--groups stalls,memory | --set full]
                        [--kernel NAME|regex:EXPR] [--whole-program]
                        [--launch-skip N] [--launch-count N]
                        [--clock-control base|none] [--cache-control all|none] [--out DIR]

By default ncu profiles the backend's own kernels of the one checked call (ours by name, a
library's by its documented name pattern; no fill, copy or preparation launch) and the metric
groups something reads (``profile.metrics.DEFAULT_GROUPS``); the output says which.
    sparsescope profile read FILE [--details DETAILS.csv] [--json]
    sparsescope profile report FILE... [--details D.csv ...] [--kernel NAME] [--all-launches]
                              [--labels a,b] [--results RESULTS.json | --store] [--out DIR]
"""

from __future__ import annotations

import argparse

from sparsescope.cli import add_json_flag
from sparsescope.errors import UsageError

DEFAULT_OUT = "sparsescope-results"


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """The case (op parameters as the options ``sparsescope run`` names them, one value each:
    a profile is one case; the op's own parameter table checks the values) and ncu's options."""
    from sparsescope.cli.op_options import add_op_options
    from sparsescope.profile.collect import CACHE_CONTROLS, CLOCK_CONTROLS, NAME_BASES
    from sparsescope.profile.metrics import DEFAULT_GROUPS, METRIC_GROUPS

    parser.add_argument("--matrix", help="the suite entry to profile, suite:NAME#ENTRY[@SCALE] "
                                          "(e.g. suite:seed6#cant@0.05), or its name within "
                                          "--suite")
    parser.add_argument("--suite", help="suite holding the --matrix ENTRY")
    parser.add_argument("--backend", help="backend registry name, or an own kernel variant "
                                           "'NAME[opt=value,...]', e.g. "
                                           "'cuda-spmv-adaptive[hub=8192]'")
    add_op_options(parser, "operation (default spmv); every op's case runs once under "
                   "ncu, checked against float64 and untimed, through sparsescope.target",
                   repeatable=False)
    parser.add_argument("--scale", type=float, default=1.0, help="suite scale factor")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--groups", default=",".join(DEFAULT_GROUPS),
                      help="comma-separated metric groups (default: "
                      + ",".join(DEFAULT_GROUPS) + "); known: " + ", ".join(METRIC_GROUPS))
    what.add_argument("--set", dest="section_set", help="an ncu section set instead, e.g. full")
    parser.add_argument("--kernel", help="ncu --kernel-name: a name or regex:EXPR, instead of "
                        "the backend's own kernels ('regex:.' for every kernel of the call)")
    parser.add_argument("--kernel-name-base", choices=NAME_BASES,
                        help="what --kernel matches (default function: no namespace, no "
                        "template arguments)")
    parser.add_argument("--whole-program", action="store_true",
                        help="profile the launches of the whole target program (preparation, "
                        "poisoning fill, helper kernels), not only the checked call's")
    parser.add_argument("--launch-skip", type=int, default=0,
                        help="launches to skip of those the filters keep")
    parser.add_argument("--launch-count", type=int,
                        help="launches to profile of those the filters keep (default all)")
    parser.add_argument("--clock-control", choices=CLOCK_CONTROLS, default="base")
    parser.add_argument("--cache-control", choices=CACHE_CONTROLS, default="all")
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder for the report and exports")
    parser.add_argument("--ncu", help="path of the ncu binary (default: $SPARSESCOPE_NCU, "
                        "else search)")
    parser.add_argument("--timeout", type=float, help="seconds before ncu is stopped")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile", help="profile a case with Nsight Compute; read and report profiles",
        description="Without a subcommand, the same as 'profile run'.")
    _add_run_options(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=_run)
    sub = parser.add_subparsers(dest="profile_command", metavar="SUBCOMMAND")

    run = sub.add_parser("run", help="run one case under ncu; write .ncu-rep and CSV exports")
    _add_run_options(run)
    add_json_flag(run)
    run.set_defaults(handler=_run)

    read = sub.add_parser("read", help="summarise the kernels of a .ncu-rep or raw CSV export")
    read.add_argument("file", help=".ncu-rep report or --page raw CSV export")
    read.add_argument("--details", help="--page details CSV export (rule messages)")
    add_json_flag(read)
    read.set_defaults(handler=_read)

    report = sub.add_parser("report", help="Markdown section and figures from profiles")
    report.add_argument("files", nargs="+", help=".ncu-rep reports or raw CSV exports")
    report.add_argument("--details", action="append", default=[],
                        help="details export of each CSV file, in the same order")
    report.add_argument("--kernel", help="keep only kernels with this function name")
    report.add_argument("--all-launches", action="store_true",
                        help="one column per launch (default: the median-duration launch of "
                        "each repeated kernel launch)")
    report.add_argument("--labels", help="comma-separated column labels, one per kernel kept")
    ceilings = report.add_mutually_exclusive_group()
    ceilings.add_argument("--results", metavar="RESULTS.json",
                          help="take measured ceilings (bandwidths, DRAM latency, FP32 rate) "
                          "from this results file")
    ceilings.add_argument("--store", action="store_true",
                          help="take measured ceilings from the newest run on the profiled "
                          "device in the results store")
    report.add_argument("--out", help="write profile.md and the figures into this folder")
    add_json_flag(report)
    report.set_defaults(handler=_report)


def _run(args):
    from sparsescope import api

    picked = api.suite_matrix(args.suite, args.matrix, scale=args.scale)
    missing = [flag for flag, given in (("--matrix suite:NAME#ENTRY", args.suite or args.matrix),
                                        ("--backend", args.backend)) if not given]
    if missing:
        raise UsageError(f"profile run needs {' and '.join(missing)} (or a subcommand: run, "
                         "read, report)")
    if picked is None:
        raise UsageError(f"--matrix {args.matrix}: profile run takes a suite entry "
                         f"(suite:NAME#ENTRY[@SCALE], generated by the target program), not a "
                         f"file")
    done = api.profile_case(
        picked.suite, picked.entry, args.backend, args.out, op=args.op,
        params=_op_params(args), scale=picked.scale,
        groups=[g.strip() for g in args.groups.split(",") if g.strip()],
        section_set=args.section_set, kernel=args.kernel,
        kernel_name_base=args.kernel_name_base, launch_skip=args.launch_skip,
        launch_count=args.launch_count, clock_control=args.clock_control,
        cache_control=args.cache_control, whole_program=args.whole_program, ncu=args.ncu,
        timeout_s=args.timeout, progress=not args.json)
    run, profiles, options = done.run, done.profiles, done.options
    collected = options.collected()
    result = {
        "report": str(run.report_path), "raw_csv": str(run.raw_csv),
        "details_csv": str(run.details_csv),
        "source_csv": None if run.source_csv is None else str(run.source_csv),
        "log": str(run.log_path), "command": list(run.command), "ncu_version": run.ncu_version,
        "kernel_selection": run.selection.as_dict(), "collected": collected,
        "passes": [{"kernel": k, "passes": n} for k, n in run.passes],
        "profile_wall_s": run.profile_wall_s, "export_wall_s": run.export_wall_s,
        "kernels": [p.summary() for p in profiles],
    }
    passes = ", ".join(f"{k} {n}" for k, n in run.passes) or "n/a"
    what = (f"set {collected['set']}" if collected["set"] else
            f"groups {', '.join(collected['groups'])} (sections: "
            f"{', '.join(collected['sections']) or 'none'})")
    text = "\n".join([f"report:  {run.report_path}", f"exports: {run.raw_csv}, {run.details_csv}"
                      + (f", {run.source_csv}" if run.source_csv else ""),
                      f"kernels profiled: {run.selection.describe()}",
                      f"collected: {what}",
                      f"ncu: {run.ncu_version or 'version unknown'}; profiling "
                      f"{run.profile_wall_s:.1f} s, exports {run.export_wall_s:.1f} s; "
                      f"passes per launch: {passes}",
                      _kernel_lines(profiles)])
    return result, text



def _op_params(args) -> dict:
    """The op parameters given as options; one the op does not take is a UsageError naming
    the ops that do (as in ``run``)."""
    from sparsescope.cli.op_options import op_params_given

    return {name: values[0] for name, values in op_params_given(args).items()}


def _kernel_lines(profiles) -> str:
    def f(v, fmt):
        return "n/a" if v is None else format(v, fmt)

    lines = [f"{'#':>3} {'kernel':<28} {'block':>6} {'grid':>8} {'regs':>5} {'CPI':>7} "
             f"{'top stall':<24} {'occ %':>6} {'time us':>9}"]
    for p in profiles:
        top = max(p.stalls.items(), key=lambda kv: kv[1], default=None)
        top_text = "n/a" if top is None else f"{top[0]} {top[1]:.2f}"
        time_us = None if p.duration_ns is None else p.duration_ns / 1e3
        lines.append(f"{p.index:>3} {p.name[:28]:<28} {f(p.block_size, 'd'):>6} "
                     f"{f(p.grid_size, 'd'):>8} {f(p.registers_per_thread, 'd'):>5} "
                     f"{f(p.cpi, '.2f'):>7} {top_text:<24} "
                     f"{f(p.achieved_occupancy_pct, '.1f'):>6} {f(time_us, '.2f'):>9}")
    return "\n".join(lines)


def _read(args):
    from sparsescope import api

    profiles = api.read_profile(args.file, args.details)
    fmt = "ncu-rep" if not str(args.file).lower().endswith(".csv") else "csv"
    result = {"file": str(args.file), "format": fmt, "kernels": [p.summary() for p in profiles]}
    return result, f"{args.file}: {len(profiles)} kernel launch(es)\n" + _kernel_lines(profiles)


def _report(args):
    from sparsescope import api

    labels = [s.strip() for s in args.labels.split(",")] if args.labels else None
    done = api.profile_report(args.files, details=args.details, out_dir=args.out,
                              results=args.results, use_store=args.store, kernel=args.kernel,
                              all_launches=args.all_launches, labels=labels)
    section = done.section
    result = {"kernels": len(section.profiles), "labels": list(section.labels),
              "files": list(section.files),
              "ceiling_kinds": sorted(section.ceilings.kinds())}
    if args.out:
        result["figures"] = {k: str(p) for k, p in section.figures.items()}
        result["markdown"] = str(done.markdown_path)
    return result, section.markdown
