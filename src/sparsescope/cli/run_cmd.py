"""``sparsescope run``: the main job — matrices, backends, checks, timing, results, report."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import textwrap

from sparsescope.cli import add_json_flag
from sparsescope.cli.op_options import (
    add_op_options,
    add_timing_mode_option,
    add_variant_options,
    case_line,
    case_printer,
    op_params_given,
    variants_given,
)

RUN_COST = """\
What a run costs: the device's ceilings, once (seconds; a CPU's are kept in the
results store per machine, so with --no-store they are measured every run);
per matrix, loading or generating it and its float64 reference; per case,
packing the backend's format, one run checked against float64, the model's
prediction (on a GPU, from each own kernel's SASS, read once per kernel), then
--warmups + --repeats timed calls, each after a cache flush when --flush is on
(or auto, and the working set fits); last, the report and its figures. On a
GPU run the next matrix loads, and each own kernel's format is packed, on
background threads while earlier cases are timed (stage times then count the
wait); cuda-spmv-auto plans its candidates on a row sample of a matrix whose
plans would exceed the memory budget, as `sparsescope model` does, and times
its shortlist on the whole matrix.

Cheaper: --scale 0.05 (smaller matrices, same structure), --backend B (one
backend, not all), --warmups 1 --repeats 5 (fewer calls, a wider spread),
--flush off (no flush: warm-cache times); `sparsescope model FILE --backend all
--no-sass` predicts without a GPU, running and compiling nothing.

Where a run's time went: the report's "Where the time went" line, and
`sparsescope results show DIR/results.json --stages [--per-case]` (stage,
seconds, share: load, float64 reference, prepare, SASS and plan, prediction,
check, timing, profile, report).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run", help="run backends on a suite or files; write results and a report",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Run every backend on every matrix, check each output against float64, "
            "time it, and write DIR/results.json, DIR/report.md, DIR/report.html, "
            "DIR/figures/ and DIR/tables/. Without a GPU it runs the CPU backend.", 79),
        epilog=RUN_COST + "\n" + textwrap.fill(
            "Exit codes: 0 every case ok or skipped; 9 --out or the store cannot be written "
            "(checked before measuring), another run is writing into --out, or results.json "
            "could not be written after measuring (the message says where they were kept); "
            "10 the report or the store failed after the results were written (they are "
            "safe); 11 a case failed its correctness check (with --strict, a "
            "skipped case too); 2 usage, 3 matrix format, 4 matrix not available.", 79))
    src = p.add_mutually_exclusive_group()
    src.add_argument("--suite", default=None,
                     help="named suite (default seed6; see `sparsescope matrices list`), or "
                          "some of its entries: suite:NAME#ENTRY[,ENTRY][@SCALE]")
    src.add_argument("--matrix", dest="files", action="append", default=[], metavar="FILE",
                     help="a matrix file (.mtx, .smtx, .npz, suitesparse:Group/Name) or a suite "
                          "entry (suite:seed6#cant[@SCALE]); repeatable")
    p.add_argument("--scale", type=float, default=1.0,
                   help="shrink the suite (0 < S <= 1; a name's @SCALE sets it too)")
    p.add_argument("--backend", dest="backends", action="append", metavar="B",
                   help="backend name (repeatable; default: all that suit this machine)")
    add_variant_options(p)
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--warmups", type=int, default=5)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--flush", choices=("auto", "on", "off"), default="auto",
                   help="flush caches between repeats (auto: when the working set fits)")
    add_timing_mode_option(p)
    p.add_argument("--latency-ns", type=float, help="DRAM latency for the model")
    p.add_argument("--reference-gpu", default=None, metavar="GPU",
                   help="on a CPU run, compute the GPU models (Little's law, DAE FIFO, "
                        "cross-GPU) for this GPU from its spec (default: none; the report "
                        "says why they are absent)")
    p.add_argument("--seed", type=int, default=0, help="generator seed for suites")
    p.add_argument("--strict", action="store_true",
                   help="refuse matrices with duplicate or unsorted entries, and count a "
                        "skipped case as a failure in the exit code")
    p.add_argument("--no-store", action="store_true", help="do not append to the results store")
    add_op_options(p, "operation (default spmv; spmm: Y = A X; slice: dense A[rows, :])")
    add_json_flag(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api
    from sparsescope.errors import UsageError

    if args.warmups < 0 or args.repeats < 1:  # the upper bounds: api.TimingConfig.checked
        raise UsageError("--warmups must be >= 0 and --repeats >= 1")
    flush = {"auto": None, "on": True, "off": False}[args.flush]
    chosen = api.matrix_selection(args.suite, args.files, scale=args.scale)
    suite = chosen.suite_arg
    if suite is None and not chosen.files:
        suite = api.op_entry(args.op).default_suite
    op_params = op_params_given(args)
    variants = variants_given(args)
    out = api.run(
        suite=suite, files=list(chosen.files), scale=chosen.scale, backends=args.backends,
        out_dir=args.out, timing=api.TimingConfig(warmups=args.warmups, repeats=args.repeats,
                                                  flush_l2=flush, mode=args.timing_mode),
        latency_ns=args.latency_ns, reference_gpu=args.reference_gpu, seed=args.seed,
        strict=args.strict, store=not args.no_store,
        command=shlex.join(["sparsescope", *sys.argv[1:]]),
        op=args.op, op_params=op_params, variants=variants, on_case=case_printer(args),
        progress=not args.json,
    )
    rs = out.runset
    cases = [
        {"matrix": c.matrix, "backend": c.backend, "op": c.op, "outcome": c.outcome,
         "reason": c.reason, "time_ms": c.time_ms,
         "params": c.params.as_dict(),
         "rel_err": c.correctness.rel_err if c.correctness else None,
         "stages": dataclasses.asdict(c.stages) if c.stages else None}
        for c in rs.cases
    ]
    result = {
        "run_id": rs.run_id, "device": rs.provenance.device, "suite": rs.suite,
        "scale": rs.scale, "results": str(out.results_path),
        "report": out.report_paths.to_dict() if out.report_paths else None,
        "store": str(out.store_path) if out.store_path else None, "cases": cases,
        "stages": dataclasses.asdict(rs.stages) if rs.stages else None,
    }
    lines = [f"run {rs.run_id} on {rs.provenance.device}: {len(rs.matrices)} matrices, "
             f"{len(rs.cases)} cases"]
    if getattr(args, "json", False):  # case lines were not printed while running
        lines += [case_line(case) for case in rs.cases]
    lines.append(f"results: {out.results_path}")
    if out.report_paths is not None:
        lines.append(f"report:  {out.results_path.parent / 'report.html'}")
    if out.stages_line:
        lines.append(out.stages_line)
    code, why = run_exit_code(rs.cases, strict=args.strict,
                              store_error="; ".join(e for e in (out.report_error,
                                                                out.store_error) if e))
    result.update(exit_code=code, exit_reason=why, store_error=out.store_error or None,
                  report_error=out.report_error or None)
    if code:
        print(f"sparsescope: warning: {why}", file=sys.stderr)
    return result, "\n".join(lines), code


def run_exit_code(cases, *, strict: bool = False, store_error: str = "") -> tuple[int, str]:
    """(exit code, why): 11 when a case failed its check (or, ``strict``, was skipped), else 10
    when the report or the store failed after the results were written (``store_error``
    says which), else 0."""
    from sparsescope.errors import EXIT_CASES_FAILED, StoreWriteError

    bad = [c for c in cases if c.outcome == "failed" or (strict and c.outcome == "skipped")]
    if bad:
        what = "failed or were skipped (--strict)" if strict else "failed"
        return EXIT_CASES_FAILED, (f"{len(bad)} of {len(cases)} case(s) {what}; first: "
                                   f"{bad[0].matrix} {bad[0].backend}: {bad[0].reason}")
    if store_error:
        return StoreWriteError.exit_code, store_error
    return 0, ""
