"""``sparsescope model``: Little's law, latency sensitivity and DAE for a GPU, and one case; with
a matrix (or a suite) and backends, each kernel's predicted time on a GPU from the spec table
(the cross-GPU what-if, :mod:`sparsescope.whatif`), on a machine without one.

``sparsescope model score RESULTS...``: stored runs scored against the model as it is now
(:mod:`sparsescope.analyze.score_runs`), and the readings of stored runs and profiles that go
with it (``--memory-floor``, ``--spmm-bounds``, ``--l1-check``, ``--profile-check``:
:mod:`sparsescope.cli.score_readings`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from sparsescope.cli import _Parser, add_json_flag
from sparsescope.cli.op_options import (
    DEFAULT_OP,
    add_op_options,
    add_plugin_option,
    add_timing_mode_option,
    op_params_given,
)
from sparsescope.cli.score_readings import (
    add_reading_options,
    check_reading_arguments,
    chosen_reading,
    read_reading,
)
from sparsescope.errors import UsageError

#: The ops the what-if offers: those with a time model (slice has none; its --rows would also
#: be the one-case --rows).
WHAT_IF_OPS = ("spmv", "spmm")


class _ModelParser(_Parser):
    """``model``'s parser: ``model score ...`` goes to the score parser (``model`` itself takes
    MATRIX positionals, so ``score`` cannot be an argparse sub-command beside them). A
    ``_Parser``, as every sub-command's is, so an argument error under ``--json`` is the error
    document too."""

    score_parser: argparse.ArgumentParser

    def parse_known_args(self, args=None, namespace=None):
        if args and args[0] == "score":
            return self.score_parser.parse_known_args(args[1:], namespace)
        return super().parse_known_args(args, namespace)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "model", help="first-principles SpMV model for a GPU (a case, or a matrix's kernels)",
        description="Little's-law, latency-sensitivity and DAE figures for a GPU from the spec "
                    "table; with --rows/--cols/--nnz/--time-ms also one case's bytes, floor, "
                    "effective bandwidth, % of peak and gap. With MATRIX files or --suite and "
                    "--backend: each backend's kernel planned on this host and its time "
                    "predicted on --gpu, no GPU needed: a summary first (per matrix, each "
                    "backend's predicted time, what limits it and how far to trust it, fastest "
                    "first; cuda-spmv-auto's choice from its candidates and why it leaves out "
                    "a backend predicted faster), every term (DRAM, L2, latency, memory system, "
                    "imbalance, compute, overhead) and assumption with --details. "
                    "--timing-mode throughput predicts as `run --timing-mode throughput` "
                    "times (back to back, the L2 warm); --op spmm with --k/--layout the SpMM "
                    "backends, a table per (matrix, k, layout). Above "
                    "--memory-budget the formats are planned on a row sample of the matrix, "
                    "and the output says so. `sparsescope model score RESULTS...`: "
                    "stored runs scored against the model as it is now (see `sparsescope "
                    "model score --help`).")
    p.__class__ = _ModelParser
    p.score_parser = _score_parser()
    p.add_argument("matrices", nargs="*", metavar="MATRIX",
                   help="matrix files (.mtx, .mtx.gz, .smtx, .npz, suitesparse:Group/Name) or "
                        "suite entries (suite:seed6#cant[@SCALE]) to predict the backends' "
                        "time on")
    p.add_argument("--gpu", default="H200", help="GPU name from `sparsescope specs` (default H200)")
    p.add_argument("--latency-ns", type=float, help="DRAM latency (default: the spec's estimate)")
    p.add_argument("--bw-gb-s", type=float,
                   help="judge against this bandwidth instead of the datasheet peak "
                        "(e.g. a measured copy bandwidth)")
    whatif = p.add_argument_group("what-if: a matrix's kernels on --gpu")
    whatif.add_argument("--suite", help="a named suite instead of MATRIX files (or "
                                        "suite:NAME#ENTRY[@SCALE])")
    whatif.add_argument("--scale", type=float, default=1.0,
                        help="shrink the suite (0 < S <= 1)")
    whatif.add_argument("--matrix", dest="entries", action="append", default=[],
                        metavar="NAME", help="only this entry of the suite (repeatable)")
    whatif.add_argument("--seed", type=int, default=0, help="generator seed for suites")
    whatif.add_argument("--backend", dest="backends", action="append", metavar="B",
                        help="backend to predict (repeatable; 'all': every GPU backend of "
                             "--op; default: the GPU defaults of `sparsescope run --op`)")
    whatif.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="value type (default float32)")
    whatif.add_argument("--no-store", action="store_true",
                        help="use the datasheet, not the ceilings stored for --gpu")
    whatif.add_argument("--no-sass", action="store_true",
                        help="keep the backends' declared kernel shapes (compile nothing)")
    whatif.add_argument("--details", action="store_true",
                        help="after the summary, every case's terms, inputs and assumptions")
    whatif.add_argument("--memory-budget", metavar="SIZE",
                        help="memory the host plans may hold (e.g. 2GiB, 500MB; default: a "
                             "quarter of the available memory, at most 2 GiB); above it a "
                             "format is planned on a row sample of the matrix, and said so")
    whatif.add_argument("--work-budget", metavar="NNZ",
                        help="nonzeros above which the model's row terms (iterations, "
                             "instructions, refetches, the statistics' padding, the L1's SMs) "
                             "run on a stratified sample of about that many nonzeros of whole "
                             "rows, scaled to the whole matrix, and said so (e.g. 2000000, "
                             "2e6, 2M; default 2M, chosen by the sampling error; 0: every "
                             "term on the whole matrix)")
    add_timing_mode_option(whatif, stored="Every backend predicted in this mode, and "
                                          "cuda-spmv-auto choosing in it, as a run with the "
                                          "same --timing-mode times them")
    add_op_options(whatif, "operation whose backends are predicted (default spmv; spmm: "
                           "Y = A X, every combination of --k and --layout a case)",
                   ops=WHAT_IF_OPS, plugin=False)
    add_plugin_option(whatif)
    case = p.add_argument_group("one case")
    case.add_argument("--rows", type=int)
    case.add_argument("--cols", type=int, help="default: --rows")
    case.add_argument("--nnz", type=int)
    case.add_argument("--time-ms", type=float, help="measured time of one SpMV")
    case.add_argument("--index-bytes", type=int, choices=(4, 8), default=4)
    case.add_argument("--value-bytes", type=int, choices=(4, 8), default=4)
    case.add_argument("--no-y-read", action="store_true",
                      help="the kernel writes y without reading it (default: y read + written)")
    prof = p.add_argument_group("CPI-based DAE (from an ncu profile)")
    prof.add_argument("--cpi", type=float, help="cycles per issued instruction")
    prof.add_argument("--long-scoreboard", type=float,
                      help="Long Scoreboard stall cycles per issued instruction")
    add_json_flag(p)
    p.set_defaults(handler=handle)


def _score_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sparsescope model score",
        description="Score stored runs against the time model as it is now, on this host (no "
                    "GPU): each case's matrix built again as the run built it, each own "
                    "kernel's call planned here (its SASS read where a CUDA compiler is "
                    "present) and predicted with the rates the run measured on its device, "
                    "then set against the run's measured median (error = (measured - "
                    "predicted) / measured). Every op's own kernels and the SpMM block "
                    "tensor-core kernel are predicted now; SpMM rowgroup, rowwarp and auto, "
                    "and a backend that plans only on its device, keep the prediction the run "
                    "stored. Printed: per GPU and op the median and 90th "
                    "percentile |error|, each variant's median signed error, and per matrix "
                    "the cost of choosing by prediction alone.")
    p.add_argument("results", nargs="*", metavar="RESULTS",
                   help="results.json / .json.xz / .json.gz files, or folders (every results file "
                        "under them)")
    p.add_argument("--matrix", dest="entries", action="append", default=[], metavar="NAME",
                   help="only this matrix (repeatable)")
    p.add_argument("--by-kind", action="store_true",
                   help="also the median measured / predicted of each variant on each matrix "
                        "kind (rmat of rmat-20)")
    p.add_argument("--by-family", action="store_true",
                   help="also the error per GPU, timing mode and backend family (our kernels; "
                        "the libraries) and per backend, against issue 36's targets (median "
                        "|error| <= 10 %%, p90 <= 25 %%); with --baseline, before and now")
    p.add_argument("--baseline", metavar="SCORE.json",
                   help="an earlier `model score --json` of the same runs (another commit's "
                        "model): per GPU and kernel family, both errors on the cases both "
                        "predicted")
    p.add_argument("--from-json", action="store_true",
                   help="RESULTS are earlier `model score --json` files: summarised again, "
                        "nothing planned")
    p.add_argument("--call-probe", metavar="PROBE.json",
                   help="scripts/call_overhead_probe.py --json of the same GPU model: its call "
                        "costs stand in for runs whose ceilings predate them")
    p.add_argument("--regs", metavar="REGS.txt",
                   help="the block tensor-core kernel's registers by instance (default: the "
                        "run folder's regs.txt; else 128)")
    p.add_argument("--no-sass", action="store_true",
                   help="keep the backends' declared kernel shapes (compile nothing)")
    p.add_argument("--shortlist", action="store_true",
                   help="also what an auto backend's shortlist would have timed under these "
                        "predictions, per matrix and parameters (with --baseline: under both); "
                        "meaningful on runs of auto's candidates (--variants auto-candidates)")
    add_reading_options(p)
    add_json_flag(p)
    p.set_defaults(handler=handle_score, command="model")
    return p


def handle(args: argparse.Namespace) -> tuple[object, str]:
    if args.matrices or args.suite:
        return _what_if(args)
    given = [flag for flag, value in (("--backend", args.backends), ("--matrix", args.entries),
                                      ("--no-sass", args.no_sass), ("--no-store", args.no_store),
                                      ("--details", args.details),
                                      ("--memory-budget", args.memory_budget),
                                      ("--work-budget", args.work_budget),
                                      ("--timing-mode", args.timing_mode != "latency"),
                                      ("--op", args.op != DEFAULT_OP), ("--k", args.k),
                                      ("--layout", args.layout))
             if value]
    if given:
        raise UsageError(f"{', '.join(given)} need{'s' if len(given) == 1 else ''} a MATRIX "
                         f"file or --suite")
    return _gpu_figures(args)


def _gpu_figures(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    fig = api.model_figures(
        args.gpu, latency_ns=args.latency_ns, bw_gb_s=args.bw_gb_s, rows=args.rows,
        cols=args.cols, nnz=args.nnz, time_ms=args.time_ms, index_bytes=args.index_bytes,
        value_bytes=args.value_bytes, y_read=not args.no_y_read, cpi=args.cpi,
        long_scoreboard=args.long_scoreboard)
    result = _figures_doc(fig)
    return result, _text(result)


def _figures_doc(fig) -> dict:
    """The ``--json`` document of an ``api.ModelFigures``."""
    ll = fig.littles_law
    result: dict = {
        "gpu": fig.gpu, "bw_gb_s": fig.bw_gb_s, "latency_ns": fig.latency_ns,
        "littles_law": {**asdict(ll), "bw_ceiling_gb_s": ll.bw_ceiling_gb_s,
                        "dep_chain_ceiling_gb_s": ll.dep_chain_ceiling_gb_s},
        "roofline": {"ridge_flop_per_byte": fig.ridge_flop_per_byte,
                     "fp32_peak_gflops": fig.fp32_peak_gflops},
    }
    if fig.case is not None:
        c = fig.case
        result["case"] = {**asdict(c.metrics), "index_bytes": c.index_bytes,
                          "y_read": c.y_read, "gap_decomposition": asdict(c.gap),
                          "index_width": asdict(c.index_width)}
    result["sensitivity"] = [asdict(r) for r in fig.sensitivity]
    dae: dict = {"min_fifo_depth": fig.min_fifo_depth,
                 "fifo_depth": [asdict(r) for r in fig.fifo_depth],
                 "sram_cost": [asdict(r) for r in fig.sram_cost]}
    if fig.dae_bw_prediction is not None:
        dae["bw_prediction"] = asdict(fig.dae_bw_prediction)
    if fig.dae_cpi_prediction is not None:
        dae["cpi_prediction"] = asdict(fig.dae_cpi_prediction)
    result["dae"] = dae
    return result


def _text(r: dict) -> str:
    ll = r["littles_law"]
    lines = [
        f"{r['gpu']}: {r['bw_gb_s']:,.0f} GB/s, {r['latency_ns']:.0f} ns DRAM latency",
        f"  Little's law: {ll['outstanding_bytes'] / 1e6:.2f} MB in flight, "
        f"{ll['warps_per_sm_required']:.1f} warps/SM required, {ll['max_warps_per_sm']} available",
        f"  bandwidth ceiling {ll['bw_ceiling_pct']:.1f}% ({ll['bw_ceiling_gb_s']:,.0f} GB/s); "
        f"with the dependent-load chain {ll['dep_chain_ceiling_pct']:.1f}% "
        f"({ll['dep_chain_ceiling_gb_s']:,.0f} GB/s)",
        f"  ridge point {r['roofline']['ridge_flop_per_byte']:.1f} FLOP/byte",
        "  latency   req warps/SM   LL ceiling   dep-chain   DAE(depth 2)",
    ]
    for s in r["sensitivity"]:
        lines.append(f"  {s['latency_ns']:5.0f} ns   {s['warps_per_sm_required']:12.1f}"
                     f"   {s['bw_ceiling_pct']:9.1f}%   {s['dep_chain_ceiling_pct']:8.1f}%"
                     f"   {s['dae_ceiling_pct']:11.1f}%")
    lines.append(f"  DAE: minimum FIFO depth {r['dae']['min_fifo_depth']}")
    if "case" in r:
        c = r["case"]
        lines += [
            f"case: {c['bytes'] / 1e6:,.1f} MB, floor {c['floor_ms']:.4f} ms, "
            f"measured {c['time_ms']:.4f} ms",
            f"  {c['eff_bw_gb_s']:,.0f} GB/s = {c['pct_peak']:.1f}% of {c['bw_gb_s']:,.0f} GB/s, "
            f"gap {c['gap']:.2f}x, {c['gflops']:,.0f} GFLOP/s, AI {c['arithmetic_intensity']:.3f}",
        ]
        if "bw_prediction" in r["dae"]:
            d = r["dae"]["bw_prediction"]
            lines.append(f"  DAE (BW-based): {d['current_pct']:.1f}% -> {d['predicted_pct']:.1f}%, "
                         f"{d['speedup']:.2f}x")
    if "cpi_prediction" in r["dae"]:
        d = r["dae"]["cpi_prediction"]
        lines.append(f"  DAE (CPI-based): CPI {d['cpi']:.2f} -> {d['projected_cpi']:.2f}, "
                     f"{d['speedup']:.2f}x")
    return "\n".join(lines)


# -- the cross-GPU what-if ---------------------------------------------------------------------
def _what_if(args: argparse.Namespace) -> tuple[list, str]:
    """Each backend's kernel on each matrix, planned here and predicted on ``--gpu``."""
    from sparsescope import api

    one_case = [flag for flag, value in (
        ("--rows", args.rows), ("--cols", args.cols), ("--nnz", args.nnz),
        ("--time-ms", args.time_ms), ("--cpi", args.cpi),
        ("--long-scoreboard", args.long_scoreboard)) if value is not None]
    if one_case:
        raise UsageError(f"{', '.join(one_case)} describe one case without a matrix; leave "
                         f"them out with MATRIX or --suite")
    op_params = op_params_given(args)  # checked by the op's own table, before any work
    chosen = api.matrix_selection(args.suite, args.matrices, scale=args.scale,
                                  entries=args.entries)
    result = api.what_if_matrices(
        chosen.files, chosen.suite, gpu=args.gpu, backends=args.backends, scale=chosen.scale,
        names=chosen.entries, seed=args.seed, value_dtype=args.dtype, sass=not args.no_sass,
        use_store=not args.no_store, latency_ns=args.latency_ns, bw_gb_s=args.bw_gb_s,
        progress=not args.json, memory_budget=args.memory_budget,
        work_budget=args.work_budget, timing_mode=args.timing_mode, op=args.op,
        op_params=op_params)
    text = _summary_text(result, args.dtype)
    if args.details:
        text += "\n\n" + _details_text(result)
    return result.case_docs(), text


def _ms(value: float) -> str:
    return f"{value:,.4f} ms" if value >= 0.1 else f"{value:.6f} ms"


def _time(ms: float | None) -> str:
    """A predicted time for the summary: microseconds below 1 ms, else milliseconds."""
    if ms is None:
        return "-"
    return f"{ms * 1e3:,.2f} us" if ms < 1.0 else f"{ms:,.3f} ms"


#: The what-if's header words for each timing mode (``timing.types.TIMING_MODES``).
_MODE_WORDS = {
    "latency": "latency mode (each call on its own, the L2 flushed where the working set "
               "fits; --timing-mode)",
    "throughput": "throughput mode (calls back to back, the L2 warm; --timing-mode)",
}


def _summary_text(result, dtype: str) -> str:
    """The summary: per matrix a table (backend, predicted time, limiter, confidence), fastest
    first, then auto's choice from its candidate list and why it leaves out a backend
    predicted faster."""
    spec = result.gpu.spec
    budget = result.memory_budget_bytes
    mode_words = _MODE_WORDS.get(result.timing_mode, f"{result.timing_mode} mode")
    lines = [f"what-if on {spec.name} ({spec.vendor_name}), {dtype} values, {mode_words}; planned "
             f"on this host, nothing run",
             result.gpu.origin,
             f"memory budget of the host plans: {budget / 2**30:,.2f} GiB (--memory-budget; "
             f"a plan of every backend holds about {result.plan_bytes_per_nnz} B a nonzero)"]
    autos = {a.matrix: a for a in result.auto}
    mode = result.timing_mode
    said: set[str] = set()  # the matrices whose samples are said (once, at their first table)
    for group in dict.fromkeys(r.group for r in result.summary):
        rows = [r for r in result.summary if r.group == group]
        matrix = rows[0].matrix
        lines += ["", group]
        first, said = matrix not in said, said | {matrix}
        sample = result.plan_samples.get(matrix) if first else None
        if sample:
            lines.append(f"  formats planned on a row sample: {sample['sample_nnz']:,} of "
                         f"{sample['total_nnz']:,} nonzeros ({sample['windows']:,} windows of "
                         f"{sample['window_rows']:,} rows), scaled to the whole matrix; the "
                         f"time modelled on the whole matrix")
        work = result.work_samples.get(matrix) if first else None
        if work:
            lines.append(f"  above the work budget of {work['budget_nnz']:,} nonzeros "
                         f"(--work-budget), the model's row terms on a stratified sample: "
                         f"{work['sample_nnz']:,} of {work['total_nnz']:,} nonzeros "
                         f"({work['windows']:,} of {work['total_windows']:,} windows of "
                         f"{work['window_rows']:,} rows), scaled to the whole matrix: "
                         f"{'; '.join(work['terms'])}")
        width = max(len("backend"), *(len(r.backend) for r in rows))
        limit = max(len("limiter"), *(len(r.limiter_label or "not modelled") for r in rows))
        lines.append(f"  {'backend':<{width}}  {'predicted':>12}  {'limiter':<{limit}}  "
                     f"confidence")
        for r in rows:
            lines.append(f"  {r.backend:<{width}}  {_time(r.predicted_ms):>12}  "
                         f"{(r.limiter_label or 'not modelled'):<{limit}}  "
                         f"{r.confidence or '-'}")
        levels = dict.fromkeys(f"{r.confidence}: {r.confidence_reason}" for r in rows
                               if r.confidence)
        lines += [f"  confidence {text}" for text in levels]
        auto = autos.get(matrix)
        if auto is not None:
            lines += _auto_lines(auto, mode)
        # an SpMM auto's choice, from its host plan (SpMV auto's: its table, above)
        lines += [f"  {r.backend} {r.note}"
                  + (f" in the {mode} mode" if r.note.endswith("candidates") else "")
                  for r in rows if r.predicted_ms is not None and r.note.startswith("chose ")
                  and r.backend != "cuda-spmv-auto"]
        for r in rows:
            if r.predicted_ms is None:
                lines.append(f"  {r.backend}: not modelled: {r.note}")
    lines += ["", "every term, input and assumption of each case: --details"]
    return "\n".join(lines)


def _auto_lines(auto, mode: str = "latency") -> list[str]:
    """auto's choice with its candidate list (the one its plan used, predicted in the
    what-if's timing ``mode``), and the backends predicted faster that it leaves out, grouped
    by why."""
    if auto.rule != "predicted-fastest":
        lines = [f"  cuda-spmv-auto chose {auto.chosen}: {auto.reason}"]
    else:
        done = [c for c in auto.candidates if c["predicted_ms"] is not None]
        lines = [f"  cuda-spmv-auto chose {auto.chosen}, the fastest predicted of its "
                 f"{len(auto.candidates)} candidates in the {mode} mode:"]
        width = max(len(c["label"]) for c in auto.candidates)
        best = min((c["predicted_ms"] for c in done), default=None)
        for c in sorted(done, key=lambda c: c["predicted_ms"]):
            over = (f"  +{100 * (c['predicted_ms'] / best - 1):.1f} %"
                    if best and c["predicted_ms"] > best else "")
            lines.append(f"    {c['label']:<{width}}  {_time(c['predicted_ms']):>10}  "
                         f"{c.get('limiter_label') or c['limiter']}{over}")
        lines += [f"    {c['label']:<{width}}  not modelled: {c['not_modelled']}"
                  for c in auto.candidates if c["predicted_ms"] is None]
    why: dict[str, list[str]] = {}
    for left in auto.left_out:
        faster = 100 * (1 - left["predicted_ms"] / auto.predicted_ms)
        why.setdefault(left["why"], []).append(
            f"{left['backend']} ({_time(left['predicted_ms'])}, {faster:.1f} % faster)")
    if why:
        lines.append("  predicted faster than auto's choice, and why auto leaves them out:")
        lines += [f"    {', '.join(names)}: {reason}" for reason, names in why.items()]
    return lines


def _details_text(result) -> str:
    """Every case's kernel, prediction, terms (each named in words) and assumptions."""
    term_label, queue_shares = result.term_label, result.queue_shares
    lines = ["details"]
    for case in result.cases:
        lines += ["", f"{case.matrix} / {case.backend}"]
        p = case.prediction
        if p is None:
            lines.append(f"  not modelled: {case.not_modelled}")
            continue
        lines += [f"  kernel      {case.kernel} ({case.kernel_source}), "
                  f"{case.index_bytes}-byte indices",
                  f"  predicted   {_ms(p.predicted_ms)}",
                  f"  model took  {case.predict_s:.3f} s (host plan {case.plan_s:.3f} s)",
                  "  terms"]
        names = {t.name: f"{t.name} ({term_label(t.name)})" for t in p.terms}
        width = max(len(n) for n in names.values())
        lines += [f"    {names[t.name]:<{width}}  {_ms(t.time_ms):>14}  {t.formula}"
                  for t in p.terms]
        shares = queue_shares(p)
        if shares:
            parts = ", ".join(
                f"{'round trips' if k == 'round_trips' else term_label(k)} {100 * v:.0f} %"
                for k, v in shares.items())
            lines.append(f"  memory system, one loaded iteration: {parts}")
        lines.append("  assumptions")
        lines += [f"    - {a}" for a in case.assumptions if a != result.gpu.origin]
    return "\n".join(lines)


# -- model score ----------------------------------------------------------------------------
def handle_score(args: argparse.Namespace) -> tuple[object, str]:
    studies = chosen_reading(args)
    addons = [flag for flag, on in (("--by-kind", args.by_kind), ("--by-family", args.by_family),
                                    ("--baseline", args.baseline),
                                    ("--shortlist", args.shortlist),
                                    ("--from-json", args.from_json)) if on]
    if studies and addons:
        raise UsageError(f"{', '.join(addons)} go with the score, not with {studies[0]}")
    check_reading_arguments(args, studies)
    from sparsescope import api

    progress = None if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    reading = read_reading(args, progress) or api.model_score(
        args.results, matrices=args.entries, from_json=args.from_json, baseline=args.baseline,
        by_kind=args.by_kind, by_family=args.by_family, shortlist=args.shortlist,
        call_probe=args.call_probe, regs=args.regs, sass=not args.no_sass, progress=progress)
    return reading.doc, reading.text
