"""``sparsescope analyze``: bottleneck diagnosis, a roadmap with predicted gains, and the
predictions scored.

Modes::

    sparsescope analyze WORKLOAD [--reference R] [--bytes B --flops F] [--out DIR]   # GPU
    sparsescope analyze --cuda K.cu --kernel NAME --grid G --block B --args SPEC      # GPU
    sparsescope analyze --from-profile REPORT [--source-csv CSV] [--sass FILE] [--bytes B]
    sparsescope analyze --sass FILE [--block N --grid N]                  # static only, no GPU
    sparsescope analyze --from-measurement DIR      # re-analyse a live run's folder, no GPU
    sparsescope analyze --compare BEFORE.json AFTER.json [MORE.json ...]
"""

from __future__ import annotations

import argparse
import shlex
import sys

from sparsescope.cli import add_json_flag


def _rules(text: str | None) -> tuple[str, ...]:
    return tuple(r.strip() for r in text.split(",") if r.strip()) if text else ()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``analyze`` subcommand; its options come in the groups of ``--help``."""
    p = subparsers.add_parser(
        "analyze", help="diagnose a GPU kernel's bottleneck, rank fixes by predicted gain, "
                        "score the predictions",
        description="Time, check, profile (ncu) and read the SASS of a workload, diagnose what "
                    "bounds each kernel, and rank the fixes by the speedup the model predicts. "
                    "--from-profile and --sass analyse recorded evidence without a GPU; "
                    "--compare scores a roadmap's prediction against the next version.")
    p.add_argument("workload", nargs="?", metavar="WORKLOAD",
                   help="module:function (or file.py:function) launching the GPU work and "
                        "returning its output")
    _add_workload_args(p)
    _add_measurement_args(p)
    _add_evidence_args(p)
    _add_scoring_args(p)
    p.add_argument("--out", metavar="DIR", help="write analysis.json, report.md and report.html "
                   "(scores.json for --compare) here")
    add_json_flag(p)
    p.set_defaults(handler=_handle)


def _add_workload_args(p: argparse.ArgumentParser) -> None:
    """The workload to run: callables, a --cuda kernel and its launch, ideal work."""
    g = p.add_argument_group("workload")
    g.add_argument("--reference", metavar="MODULE:FUNCTION",
                   help="reference implementation returning the expected output")
    g.add_argument("--bytes", type=int, metavar="B", help="ideal bytes moved (else declared by "
                   "the workload or inferred)")
    g.add_argument("--flops", type=int, metavar="F", help="ideal floating-point operations")
    g.add_argument("--label", metavar="VERSION", help="version label (default: the function or "
                   "kernel name)")
    g.add_argument("--addresses", metavar="RULE,...", help="rules this version addresses (what "
                   "--compare scores against the previous roadmap)")
    g.add_argument("--cuda", metavar="FILE.cu", help="CUDA source of the kernel to launch")
    g.add_argument("--kernel", metavar="NAME",
                   help="kernel name (with --cuda), else a regex of the kernels to profile "
                        "or to pick from a report")
    g.add_argument("--grid", metavar="DIMS", help="grid (with --cuda): expression(s) over the "
                   "integer scalars of --args, e.g. '(n+255)//256'")
    g.add_argument("--block", metavar="DIMS", help="block (with --cuda or --sass)")
    g.add_argument("--args", metavar="SPEC", help="kernel arguments (with --cuda), e.g. "
                   "'n:i32=4096; x:f32[n]=rand; y:f32[n]=zeros!out'")
    g.add_argument("--shared", type=int, default=0, metavar="BYTES",
                   help="dynamic shared memory per block (with --cuda)")


def _add_measurement_args(p: argparse.ArgumentParser) -> None:
    """How a live run is timed and profiled."""
    m = p.add_argument_group("measurement")
    m.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True,
                   help="profile one call with Nsight Compute (default: yes)")
    m.add_argument("--warmups", type=int, default=5)
    m.add_argument("--repeats", type=int, default=50)
    m.add_argument("--ncu", metavar="PATH", help="ncu binary (default: found on PATH or in "
                   "the CUDA install)")


def _add_evidence_args(p: argparse.ArgumentParser) -> None:
    """Recorded evidence analysed without a GPU, and figures measured elsewhere."""
    o = p.add_argument_group("recorded evidence")
    o.add_argument("--from-profile", metavar="REPORT", help=".ncu-rep report or --page raw CSV")
    o.add_argument("--from-measurement", metavar="DIR",
                   help="re-analyse a live analysis's folder (its measurement.json and profile "
                        "exports) with this sparsescope, without a GPU")
    o.add_argument("--source-csv", metavar="CSV", help="--page source --print-source sass CSV "
                   "of the same report (per-instruction counters)")
    o.add_argument("--sass", metavar="FILE", help="SASS listing, CUDA binary or .cu file of the "
                   "kernels (alone: static analysis only)")
    o.add_argument("--launch", type=int, metavar="N", help="analyse only launch N of the report")
    o.add_argument("--grid-blocks", type=int, metavar="N",
                   help="grid size for a static analysis (too-few-blocks rule)")
    o.add_argument("--time-ms", type=float, metavar="T", help="a time measured elsewhere")
    o.add_argument("--gpu", metavar="NAME", help="GPU of the spec table (default: the profiled "
                   "device, else H200)")
    o.add_argument("--latency-ns", type=float, metavar="NS", help="measured DRAM latency for "
                   "Little's law (default: the spec table's estimate)")
    o.add_argument("--bw-gb-s", type=float, metavar="GBS", help="measured bandwidth ceiling "
                   "(default: the datasheet peak)")


def _add_scoring_args(p: argparse.ArgumentParser) -> None:
    """--compare: a roadmap's predictions scored against the next version."""
    c = p.add_argument_group("scoring")
    c.add_argument("--compare", nargs="+", metavar="ANALYSIS.json",
                   help="score BEFORE -> AFTER (-> ...): predicted against measured speedup")
    c.add_argument("--applied", metavar="RULE,...", help="rules the change applied (default: "
                   "AFTER's --addresses, else BEFORE's top roadmap item)")
    c.add_argument("--reference-result", metavar="ANALYSIS.json",
                   help="analysis of the reference implementation, to compare the last "
                        "version with")
    c.add_argument("--store", action=argparse.BooleanOptionalAction, default=True,
                   help="keep the scores in the results store (default: yes)")


def _command() -> str:
    return "sparsescope " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _finish(done, args) -> tuple[dict, str]:
    from sparsescope.analyze.records import to_jsonable
    from sparsescope.report.analyze_render import render_analysis

    data = to_jsonable(done.result)
    text = render_analysis(done.result)
    if done.written is not None:
        data = {"analysis": data, "written": done.written.to_dict()}
        text += f"\nwritten: {', '.join(str(f) for f in done.written.files)}"
    return data, text


def _compare(args) -> tuple[dict, str]:
    from sparsescope import api
    from sparsescope.analyze.records import to_jsonable
    from sparsescope.report.analyze_render import render_series

    done = api.compare_analyses(args.compare, applied=_rules(args.applied),
                                reference=args.reference_result, store=args.store,
                                out_dir=args.out)
    data = {"scores": to_jsonable(list(done.scores)), "mae": done.mae,
            "history_mae": done.history_mae}
    if done.reference_speedup is not None:
        data["reference_speedup"] = done.reference_speedup
    text = render_series(done.scores, list(done.results), reference=done.reference,
                         history_mae=done.history_mae)
    if done.written is not None:
        data["written"] = done.written.to_dict()
    return data, text


def _offline(args) -> tuple[dict, str]:
    from sparsescope import api
    from sparsescope.analyze.workload import eval_dims

    block = eval_dims(args.block, {})[0] if args.block and not args.from_profile else None
    return _finish(api.analyze_offline(
        from_profile=args.from_profile, sass=args.sass, source_csv=args.source_csv,
        kernel=args.kernel, launch=args.launch, gpu=args.gpu, block_threads=block,
        grid_blocks=args.grid_blocks, ideal_bytes=args.bytes, ideal_flops=args.flops,
        time_ms=args.time_ms, latency_ns=args.latency_ns, bw_gb_s=args.bw_gb_s,
        label=args.label or "", workload=args.workload, addresses=_rules(args.addresses),
        command=_command(), out_dir=args.out), args)


def _live(args) -> tuple[dict, str]:
    from sparsescope import api
    from sparsescope.analyze.workload import callable_workload, cuda_workload
    from sparsescope.errors import UsageError

    if args.cuda:
        missing = [f"--{n}" for n in ("kernel", "grid", "block", "args") if not getattr(args, n)]
        if missing:
            raise UsageError(f"--cuda needs {', '.join(missing)}")
        workload = cuda_workload(args.cuda, args.kernel, args.grid, args.block, args.args,
                                 reference=args.reference, ideal_bytes=args.bytes,
                                 ideal_flops=args.flops, dynamic_shared_bytes=args.shared,
                                 name=args.workload, version=args.label,
                                 addresses=_rules(args.addresses))
    elif args.workload:
        workload = callable_workload(args.workload, reference=args.reference,
                                     ideal_bytes=args.bytes, ideal_flops=args.flops,
                                     kernel=args.kernel, version=args.label,
                                     addresses=_rules(args.addresses))
    else:
        raise UsageError("give a WORKLOAD (module:function), --cuda FILE.cu, --from-profile "
                         "REPORT, --sass FILE or --compare BEFORE.json AFTER.json")
    return _finish(api.analyze_workload(workload, warmups=args.warmups, repeats=args.repeats,
                                        profile=args.profile, ncu=args.ncu, command=_command(),
                                        out_dir=args.out, progress=not args.json), args)


def _remeasured(args) -> tuple[dict, str]:
    from sparsescope import api

    return _finish(api.analyze_measurement(args.from_measurement,
                                           addresses=_rules(args.addresses),
                                           command=_command(), out_dir=args.out), args)


def _handle(args: argparse.Namespace) -> tuple[dict, str]:
    if args.out:  # before anything is measured or profiled (or a workload imported)
        from sparsescope._outputs import check_out_dir

        check_out_dir(args.out)
    if args.compare:
        return _compare(args)
    if args.from_measurement:
        return _remeasured(args)
    if args.from_profile or (args.sass and not args.cuda and not args.workload):
        return _offline(args)
    return _live(args)
