"""``sparsescope run``: the main job — matrices, backends, checks, timing, results, report."""

from __future__ import annotations

import argparse
import shlex
import sys

from sparsescope.cli import add_json_flag


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run", help="run backends on a suite or files; write results and a report",
        description="Run every backend on every matrix, check each output against float64, "
                    "time it, and write DIR/results.json, DIR/report.md, DIR/report.html, "
                    "DIR/figures/ and DIR/tables/. Without a GPU it runs the CPU backend.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--suite", default=None, help="named suite (default seed6; see "
                                                   "`sparsescope matrices list`)")
    src.add_argument("--matrix", dest="files", action="append", default=[], metavar="FILE",
                     help="a matrix file (.mtx, .smtx, .npz, suitesparse:Group/Name); repeatable")
    p.add_argument("--scale", type=float, default=1.0, help="shrink the suite (0 < S <= 1)")
    p.add_argument("--backend", dest="backends", action="append", metavar="B",
                   help="backend name (repeatable; default: all that suit this machine)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--warmups", type=int, default=5)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--flush", choices=("auto", "on", "off"), default="auto",
                   help="flush caches between repeats (auto: when the working set fits)")
    p.add_argument("--latency-ns", type=float, help="DRAM latency for the model")
    p.add_argument("--reference-gpu", default="H200",
                   help="GPU whose spec drives the warp-level model on a CPU run")
    p.add_argument("--seed", type=int, default=0, help="generator seed for suites")
    p.add_argument("--strict", action="store_true",
                   help="refuse matrices with duplicate or unsorted entries")
    p.add_argument("--no-store", action="store_true", help="do not append to the results store")
    p.add_argument("--op", choices=("spmv", "spmm", "slice"), default="spmv",
                   help="operation (default spmv; spmm: Y = A X; slice: dense A[rows, :])")
    p.add_argument("--k", type=int, action="append", metavar="K",
                   help="spmm: columns of X, 1 to 4096 (ops.spmm.MAX_K; repeatable; default 8)")
    p.add_argument("--layout", choices=("row", "col"), action="append",
                   help="spmm: X row- or column-major (repeatable; default row)")
    p.add_argument("--rows-selected", type=int, action="append", metavar="N",
                   help="slice: rows drawn with repeats (repeatable; default: the suite's "
                        "workloads, else 64)")
    p.add_argument("--weights", choices=("scalar", "per-nnz"), action="append",
                   help="slice: one value for every nonzero, or A's values (repeatable)")
    p.add_argument("--out-of-range", choices=("error", "zero"),
                   help="slice: an index outside the matrix is an error (default) or a zero row")
    add_json_flag(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api
    from sparsescope.errors import UsageError
    from sparsescope.timing.types import TimingConfig

    if args.warmups < 0 or args.repeats < 1:
        raise UsageError("--warmups must be >= 0 and --repeats >= 1")
    flush = {"auto": None, "on": True, "off": False}[args.flush]
    default_suite = {"spmv": "seed6", "spmm": "dlmc3", "slice": "slice003"}[args.op]
    suite = args.suite if args.suite or args.files else default_suite
    op_flags = {"spmm": {"k": args.k, "layout": args.layout},
                "slice": {"rows_selected": args.rows_selected, "weights": args.weights,
                          "out_of_range": [args.out_of_range] if args.out_of_range else None}}
    for op, flags in op_flags.items():
        given = [f"--{n.replace('_', '-')}" for n, v in flags.items() if v]
        if given and op != args.op:
            raise UsageError(f"{', '.join(given)} apply to --op {op}, not --op {args.op}")
    out = api.run(
        suite=suite, files=args.files, scale=args.scale, backends=args.backends,
        out_dir=args.out, timing=TimingConfig(warmups=args.warmups, repeats=args.repeats,
                                              flush_l2=flush),
        latency_ns=args.latency_ns, reference_gpu=args.reference_gpu, seed=args.seed,
        strict=args.strict, store=not args.no_store,
        command=shlex.join(["sparsescope", *sys.argv[1:]]),
        op=args.op, op_params=op_flags.get(args.op),
    )
    rs = out.runset
    cases = [
        {"matrix": c.matrix, "backend": c.backend, "op": c.op, "outcome": c.outcome,
         "reason": c.reason, "time_ms": c.time_ms,
         "params": {k[3:]: v for k, v in c.notes.items() if k.startswith("op.")},
         "rel_err": c.correctness.rel_err if c.correctness else None}
        for c in rs.cases
    ]
    result = {
        "run_id": rs.run_id, "device": rs.provenance.device, "suite": rs.suite,
        "scale": rs.scale, "results": str(out.results_path),
        "report": {k: str(v) for k, v in vars(out.report_paths).items()}
        if hasattr(out.report_paths, "__dict__") else str(out.report_paths),
        "store": str(out.store_path) if out.store_path else None, "cases": cases,
    }
    lines = [f"run {rs.run_id} on {rs.provenance.device}: {len(rs.matrices)} matrices, "
             f"{len(rs.cases)} cases"]
    for c in cases:
        t = f"{c['time_ms']:.4f} ms" if c["time_ms"] is not None else c["reason"]
        err = f"  rel_err {c['rel_err']:.1e}" if c["rel_err"] is not None else ""
        params = " ".join(f"{k}={c['params'][k]}" for k in ("k", "layout", "rows_selected",
                                                              "weights") if k in c["params"])
        lines.append(f"  {c['matrix']:<14} {c['backend']:<20} {params:<18} {c['outcome']:<8} "
                     f"{t}{err}")
    lines.append(f"results: {out.results_path}")
    lines.append(f"report:  {out.results_path.parent / 'report.html'}")
    return result, "\n".join(lines)
