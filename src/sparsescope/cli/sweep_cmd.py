"""``sparsescope sweep``: every backend on every matrix of a collection, resumable, on Dask."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from sparsescope.cli import add_json_flag
from sparsescope.cli.op_options import (
    add_op_options,
    add_timing_mode_option,
    add_variant_options,
    case_printer,
    op_params_given,
    variants_given,
)

EPILOG = ("A SOURCE is a folder (every .mtx, .mtx.gz, .smtx, .npz inside, recursively), a glob, "
          "a matrix file, a SuiteSparse Group/Name.tar.gz archive, suite:NAME[#ENTRY][@SCALE] "
          "(a generated suite, or some of its entries: suite:seed6#cant,pwtk@0.05), "
          "dlmc:FOLDER (every .smtx at any depth, named by its path with / as __; a folder "
          "holding only .smtx files, some in subfolders, is read the same way), or "
          "suitesparse:FILTERS, a selection from the SuiteSparse index (ssstats.csv, cached; "
          "index=PATH or SPARSESCOPE_SUITESPARSE_INDEX for a local copy), e.g. "
          "suitesparse:group=Williams,kind=graph,rows=1e5..1e7,nnz=..5e7,name=web*,real=1,"
          "limit=50 (ranges LO..HI, globs, kind substring; sorted by nnz), or "
          "suitesparse:Group/Name. SPARSESCOPE_OFFLINE=1: download nothing. "
          "Each finished case is stored at once (SPARSESCOPE_STORE), keyed by the matrix's "
          "content hash, backend, op, parameters, device and version: run the same command "
          "again to resume. A file that cannot be read becomes a skipped case. "
          "Exit codes: 0 every case ok or skipped; 11 a case failed (its check, its worker "
          "died, or --case-timeout); 12 --time-limit reached with cases left (enforced by the "
          "clock); 13 the cluster had no live worker left (cases in flight failed); 130 "
          "Ctrl-C and 143 SIGTERM (what finished is stored and in results.json); 7 the "
          "Dask cluster could not start, or the --scheduler could not be reached within "
          "10 s; 10 cases "
          "measured but the store stayed locked (they are in results.json); 9 --out or the "
          "store cannot be written (checked first); "
          "6 Dask missing (pip install 'sparsescope[sweep]'); 4 the SuiteSparse index is "
          "neither cached nor downloadable; 2 usage (a suitesparse: filter matching nothing).")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep", help="run backends over a matrix collection (resumable; Dask optional)",
        description="Run every backend on every matrix of the SOURCEs, in process or on a Dask "
                    "cluster, and write DIR/results.json (every case of the sweep) and the "
                    "report.", epilog=EPILOG)
    p.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="folder, glob, matrix file, Group/Name.tar.gz, "
                        "suite:NAME[#ENTRY][@SCALE], "
                        "dlmc:FOLDER, or suitesparse:FILTERS")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--backend", dest="backends", action="append", metavar="B",
                   help="backend name (repeatable; default: all that suit this machine)")
    add_variant_options(p)
    add_op_options(p, "operation (default spmv; spmm: Y = A X, slice: dense A[rows, :]); "
                      "its parameters below, each repeatable: every combination is a case")
    p.add_argument("--cluster", choices=("local", "cuda"),
                   help="local: a Dask LocalCluster of --workers processes; cuda: one worker "
                        "per GPU (dask-cuda). Default: in process, no Dask")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="join a running Dask scheduler (e.g. tcp://host:8786) instead")
    p.add_argument("--workers", type=int, metavar="N",
                   help="workers of --cluster (default 2 for local, one per GPU for cuda)")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again the cases stored as failed (ok and skipped ones are kept)")
    p.add_argument("--case-timeout", type=float, metavar="S",
                   help="a case running longer than S seconds is failed (its thread is left "
                        "running until it ends)")
    p.add_argument("--time-limit", type=float, metavar="S",
                   help="submit no case after S seconds of sweeping (a batch job's limit; "
                        "at least one case runs): queued cases are cancelled, results and "
                        "reports hold what is done, exit code 12; the same command resumes")
    p.add_argument("--store", metavar="FILE",
                   help="the SQLite store that keeps the sweep's cases and makes it resumable "
                        "(default: SPARSESCOPE_STORE or the user's results store)")
    p.add_argument("--no-store", action="store_true",
                   help="leave the user's results store alone: keep the cases in "
                        "DIR/sweep-store.sqlite (a re-run with the same --out still resumes)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of every case's random inputs (x, X, rows)")
    p.add_argument("--warmups", type=int, default=5, help="untimed calls before timing")
    p.add_argument("--repeats", type=int, default=20, help="timed calls per case")
    p.add_argument("--flush", choices=("auto", "on", "off"), default="auto",
                   help="flush caches between repeats (auto: when the working set fits)")
    add_timing_mode_option(p)
    add_json_flag(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> tuple[dict, str, int]:
    from sparsescope import api
    from sparsescope.cli.run_cmd import run_exit_code
    from sparsescope.errors import EXIT_SWEEP_ABORTED, EXIT_SWEEP_INCOMPLETE, UsageError

    if args.warmups < 0 or args.repeats < 1:
        raise UsageError("--warmups must be >= 0 and --repeats >= 1")
    if args.cluster and args.scheduler:
        raise UsageError("give --cluster or --scheduler, not both")
    if args.store and args.no_store:
        raise UsageError("give --store FILE or --no-store, not both")
    flush = {"auto": None, "on": True, "off": False}[args.flush]
    store = str(Path(args.out) / "sweep-store.sqlite") if args.no_store else args.store
    out = api.sweep(
        args.sources, out_dir=args.out, backends=args.backends, op=args.op,
        op_params=op_params_given(args), variants=variants_given(args), store_path=store,
        seed=args.seed, time_limit_s=args.time_limit,
        cluster=args.cluster, scheduler=args.scheduler, workers=args.workers,
        timing=api.TimingConfig(warmups=args.warmups, repeats=args.repeats, flush_l2=flush,
                                mode=args.timing_mode).checked(),
        retry_failed=args.retry_failed, progress=not args.json,
        case_timeout_s=args.case_timeout, on_case=case_printer(args),
        command=shlex.join(["sparsescope", *sys.argv[1:]]), quiet=args.json)
    rs = out.runset
    code, why = run_exit_code(rs.cases)
    left = out.throughput().get("left", 0)
    aborted = getattr(out.engine, "aborted", "")
    if aborted:
        code, why = EXIT_SWEEP_ABORTED, (
            f"{aborted}: the cases in flight are stored as failed, {left} case(s) left; run "
            "the same command again with --retry-failed once the cluster has workers")
    elif left:
        code, why = EXIT_SWEEP_INCOMPLETE, (f"--time-limit reached: {left} case(s) left; run "
                                            "the same command again to resume")
    result = {
        "run_id": rs.run_id, "device": rs.provenance.device, "results": str(out.results_path),
        "report": out.report_paths.to_dict(), "store": str(out.store_path),
        "ran": out.ran, "stored": out.stored, "exit_code": code, "exit_reason": why,
        "throughput": out.throughput(),
        "cases": [{"matrix": c.matrix, "backend": c.backend, "op": c.op, "outcome": c.outcome,
                   "reason": c.reason, "time_ms": c.time_ms, "params": c.params.as_dict(),
                   "rel_err": c.correctness.rel_err if c.correctness else None}
                  for c in rs.cases],
    }
    lines = [f"sweep {rs.run_id} on {rs.provenance.device}: {len(rs.matrices)} matrices, "
             f"{len(rs.cases)} cases ({out.ran} run now, {out.stored} already stored)",
             _throughput_line(out.throughput()),
             *(["every case was stored: results and report kept as they were"]
               if getattr(out, "outputs_kept", False) else []),
             f"results: {out.results_path}",
             f"report:  {out.results_path.parent / 'report.html'}"]
    if code:
        print(f"sparsescope: warning: {why}", file=sys.stderr)
    return result, "\n".join(lines), code


def _throughput_line(t: dict) -> str:
    """Cases per minute, and the share of the workers' time the engine and store took."""
    if not t or t["cases_per_min"] is None:
        return "no case run now"
    return (f"{t['cases_per_min']:g} cases/min on {t['workers']} worker(s); engine and store "
            f"overhead {t['overhead_pct']:.1f} % of {t['wall_s']:.1f} s")
