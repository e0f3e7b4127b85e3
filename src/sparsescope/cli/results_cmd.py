"""``sparsescope results show FILE``: one row per matrix and backend of a results file.

Each row: ``matrix``, ``backend``, ``median_ms``, ``cv`` (std / mean of the samples),
``rel_err`` (against float64), ``eff_bw_gb_s`` and ``pct_copy_bw`` (the op's byte model at
INT32 indices, y written only: one byte model per op for every backend, so they compare
backends by time alone; printed to 3 significant digits), and the stored prediction. With
``--stages``: where the run's time went (stage, seconds, share), and with ``--per-case`` each
case's stages. ``sparsescope results compare A B``: the same cases of two runs side by
side, per (matrix, backend, op) both medians, B / A and the spread |a - b| / min(a, b); a row
agrees when its spread is at most ``--within`` (default 0.05). ``sparsescope results readme
FOLDER``: a results folder's README from its own files. ``sparsescope results compact
PATH...``: results files as ``NAME.json.xz``, floats rounded to 7 significant digits (CUDA
event times are float32 milliseconds), checked against the originals before these are
removed; a table of each file's bytes before and after, and the total.

Parsing and printing only: the rows come from :func:`sparsescope.api.show_results`,
:func:`~sparsescope.api.compare_results`, :func:`~sparsescope.api.results_readme` and
:func:`~sparsescope.api.compact_results` (computed by :mod:`sparsescope.results.tables` and
:mod:`sparsescope.results.compact`).
"""

from __future__ import annotations

import argparse
import dataclasses
import math

from sparsescope.cli import add_json_flag

COLUMNS = ("matrix", "backend", "median_ms", "cv", "rel_err", "eff_bw_gb_s", "pct_copy_bw")
DEFAULT_WITHIN = 0.05
"""``results compare``: spreads up to 5 % count as agreement (``api.results.DEFAULT_WITHIN``;
kept here so ``--help`` loads no stage)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("results", help="inspect results files",
                              description="Inspect a results.json written by `sparsescope run`.")
    sub = p.add_subparsers(dest="results_command", metavar="SUBCOMMAND")
    sub.required = True
    show = sub.add_parser(
        "show", help="one row per matrix and backend: time, spread, error, bandwidth",
        description="Print median time, coefficient of variation, relative error, effective "
                    "bandwidth (each op's byte model at INT32 indices, y written only, named "
                    "in the header) and its % of the measured copy bandwidth for every case "
                    "of a results file. --stages: where the run's time went instead.")
    show.add_argument("file", metavar="FILE", help="results.json")
    show.add_argument("--stages", action="store_true",
                      help="where the run's time went: seconds and share of each stage (load, "
                           "float64 reference, prepare, SASS and plan, prediction, check, "
                           "timing, profile, report, other)")
    show.add_argument("--per-case", action="store_true",
                      help="with --stages (implied): each case's stages too")
    add_json_flag(show)
    show.set_defaults(handler=handle_show)
    compare = sub.add_parser(
        "compare", help="two runs side by side: medians, ratio, spread, agreement",
        description="For every (matrix, backend) of two results files: both medians, their "
                    "ratio B/A and the spread |a-b|/min(a,b); a summary with the largest "
                    "spread and whether every row agrees within --within.")
    compare.add_argument("file_a", metavar="A", help="first results.json")
    compare.add_argument("file_b", metavar="B", help="second results.json")
    compare.add_argument("--within", type=float, default=DEFAULT_WITHIN, metavar="F",
                         help="largest spread that counts as agreement (default 0.05 = 5%%)")
    add_json_flag(compare)
    compare.set_defaults(handler=handle_compare)
    readme = sub.add_parser(
        "readme", help="write a results folder's README from the folder's own files",
        description="Write FOLDER/README.md's generated block (each run's command, date, "
                    "device, driver, versions and case counts; kernel selection, speedups "
                    "over the run's baseline, analyses; the other files) from the folder's "
                    "committed files. The README's text outside the block is kept; a folder "
                    "without a README gets --title and --note before the block.")
    readme.add_argument("folder", metavar="FOLDER", help="a results folder")
    readme.add_argument("--title", default="", help="title of a new README (default: the "
                        "folder's name)")
    readme.add_argument("--note", default="", help="paragraph after a new README's title")
    readme.add_argument("--out", default=None, metavar="FILE",
                        help="write the README here instead of FOLDER/README.md")
    readme.add_argument("--check", action="store_true",
                        help="write nothing; exit 5 when the committed README's block is not "
                             "what the folder's files give")
    add_json_flag(readme)
    readme.set_defaults(handler=handle_readme)
    compact = sub.add_parser(
        "compact", help="results files as NAME.json.xz: floats to 7 digits, checked, smaller",
        description="Write each results file (NAME.json or NAME.json.gz; a folder: every one "
                    "below it, hidden ones left out) as NAME.json.xz: every float rounded to 7 "
                    "significant digits (CUDA event times are float32 milliseconds, about 7.2 "
                    "digits; integral floats, which are counts, kept exact), compact JSON "
                    "compressed with xz. Each file is read back and checked (every float within "
                    "a relative 1e-6, keys, ints and strings equal) before its original is "
                    "removed; a file that would not be smaller is kept as it is.")
    compact.add_argument("paths", nargs="+", metavar="PATH",
                         help="results files (.json, .json.gz) or folders")
    add_json_flag(compact)
    compact.set_defaults(handler=handle_compact)


def _json_float(value):
    """Non-finite floats as the strings results files use, so --json stays strict JSON."""
    if not isinstance(value, float) or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _cell(value, fmt) -> str:
    """``value`` by ``fmt`` (a format string or a function); ``-`` for None."""
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return fmt(value) if callable(fmt) else fmt.format(value)


def _significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits without an exponent (``1,950``, ``4.21``,
    ``0.0421``): a CPU's 0.04 GB/s must not print as 0."""
    import math

    if value == 0:
        return "0"
    if not math.isfinite(value):
        return str(value)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}"


def _table(rows) -> str:
    """The cases, a ``params`` column after the backend when some case has parameters (the
    k and layout of SpMM: two rows of one backend differ by them alone)."""
    formats = ("{}", "{}", "{:.4f}", "{:.1%}", "{:.1e}", _significant, _significant)
    header = ["matrix", "backend", "median ms", "cv", "rel_err", "eff GB/s", "% copy",
              "outcome"]
    body = [[_cell(getattr(r, c), f) for c, f in zip(COLUMNS, formats, strict=True)]
            + [r.outcome] for r in rows]
    left = 2
    if any(r.params for r in rows):
        header.insert(2, "params")
        for line, r in zip(body, rows, strict=True):
            line.insert(2, r.params or "-")
        left = 3
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = []
    for line in [header, ["-" * w for w in widths], *body]:
        cells = [c.ljust(w) for c, w in zip(line[:left], widths[:left], strict=True)]
        cells += [c.rjust(w) for c, w in zip(line[left:-1], widths[left:-1], strict=True)]
        cells.append(line[-1])
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def handle_show(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    table = api.show_results(args.file)
    copy_bw = table.copy_bw_gb_s
    result = {
        "run_id": table.run_id, "device": table.device, "copy_bw_gb_s": copy_bw,
        "byte_model": table.byte_model, "byte_models": table.byte_models,
        "rows": [{k: _json_float(v) for k, v in dataclasses.asdict(r).items()}
                 for r in table.rows],
    }
    stages = args.stages or args.per_case
    if stages:
        result["stages"] = dataclasses.asdict(table.stages)
        return result, _stages_text(table, per_case=args.per_case)
    bw = f"{_significant(copy_bw)} GB/s" if copy_bw else "not measured"
    models = "; ".join(f"{op}: {label}" for op, label in (table.byte_models or {}).items())
    text = (f"run {table.run_id} on {table.device} (copy bandwidth {bw}; bandwidths use each "
            f"op's byte model: {models or table.byte_model})\n" + _table(table.rows))
    return result, text


# ----------------------------------------------------------------------------- stages

def _aligned(header: list[str], body: list[list[str]], left: int) -> list[str]:
    """A plain-text table: the first ``left`` columns left-aligned, the rest right-aligned."""
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) if i < left else c.rjust(w)
                      for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip()
            for line in [header, ["-" * w for w in widths], *body]]


def _stages_text(table, *, per_case: bool) -> str:
    """The run's stage table (stage, seconds, share), queue and transfer times of a sweep,
    and with ``per_case`` one row per case (its wall time and each stage's seconds)."""
    st = table.stages
    head = f"run {table.run_id} on {table.device}: where the time went"
    if st.basis == "none":
        return (f"{head}: not recorded (the results predate stage times, schema 3; run it "
                f"again to record them)")
    basis = ("the run's own clock, from its start until its report was written"
             if st.basis == "run" else "the sum over its cases (the workers' time)")
    lines = [f"{head} ({st.wall_s:,.3f} s: {basis})"]
    lines += _aligned(["stage", "seconds", "share"],
                      [[r.label, _significant(r.seconds), f"{r.share:.1%}"] for r in st.rows],
                      1)
    for name, value in (("queue (submitted -> started on a worker)", st.queue_s),
                        ("transfer (result back to the client)", st.transfer_s)):
        if value is not None:
            lines.append(f"{name}, summed over the cases: {value:,.3f} s")
    if per_case and st.cases:
        names = [r.stage for r in st.cases[0].rows]
        shown = [i for i, n in enumerate(names)
                 if n == "other" or any(c.rows[i].seconds > 0 for c in st.cases)]
        sweep = any(c.queue_s is not None for c in st.cases)
        header = ["matrix", "backend", "params", "wall s",
                  *(st.cases[0].rows[i].label for i in shown),
                  *(("queue s", "transfer s") if sweep else ())]
        body = [[c.matrix, c.backend, c.params or "-", f"{c.wall_s:.4f}",
                 *(f"{c.rows[i].seconds:.4f}" for i in shown),
                 *((_cell(c.queue_s, "{:.4f}"), _cell(c.transfer_s, "{:.4f}"))
                   if sweep else ())] for c in st.cases]
        lines += ["", "per case (a matrix's load and its shared float64 reference are charged "
                      "to its first case):", *_aligned(header, body, 3)]
    elif per_case:
        lines += ["", "no case carries stage times"]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- compare

def _compare_text(info_a: dict, info_b: dict, rows: list[dict], summary: dict) -> str:
    """The compare table and its verdict, from the ``--json`` document's parts."""
    header = ["matrix", "backend", "A ms", "B ms", "B/A", "spread", "status"]
    formats = ("{}", "{}", "{:.4f}", "{:.4f}", "{:.3f}", "{:.1%}", "{}")
    keys = ("matrix", "backend", "median_a_ms", "median_b_ms", "ratio_b_over_a", "spread",
            "status")
    body = [[_cell(r[k], f) for k, f in zip(keys, formats, strict=True)] for r in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [f"A: run {info_a['run_id']} ({info_a['created_utc']}, {info_a['device']})",
             f"B: run {info_b['run_id']} ({info_b['created_utc']}, {info_b['device']})"]
    for line in [header, ["-" * w for w in widths], *body]:
        cells = [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(line[2:-1], widths[2:-1], strict=True)]
        cells.append(line[-1])
        lines.append("  ".join(cells).rstrip())
    within = summary["within"]
    if summary["compared"]:
        case = summary["max_spread_case"]
        lines.append(f"max spread {summary['max_spread']:.1%} ({case['matrix']} "
                     f"{case['backend']}); {summary['counts']['agree']} of "
                     f"{summary['compared']} timed rows within {within:.1%}; all rows agree: "
                     f"{'yes' if summary['all_within'] else 'no'}")
    else:
        lines.append("no case was timed in both runs")
    return "\n".join(lines)


def _summary_doc(summary) -> dict:
    doc = dataclasses.asdict(summary)
    case = summary.max_spread_case
    doc["max_spread_case"] = None if case is None else {"matrix": case[0], "backend": case[1]}
    return doc


def handle_compare(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    comparison = api.compare_results(args.file_a, args.file_b, within=args.within)
    info_a, info_b = dataclasses.asdict(comparison.a), dataclasses.asdict(comparison.b)
    rows = [dataclasses.asdict(r) for r in comparison.rows]
    summary = _summary_doc(comparison.summary)
    result = {"a": info_a, "b": info_b, "same_device": comparison.same_device,
              "spread_formula": comparison.spread_formula, "summary": summary, "rows": rows}
    return result, _compare_text(info_a, info_b, rows, summary)


def handle_readme(args: argparse.Namespace) -> tuple[dict, str]:
    """``results readme``: parse, call :func:`sparsescope.api.results_readme`, print."""
    from sparsescope import api

    out = api.results_readme(args.folder, title=args.title, note=args.note, out=args.out,
                             check=args.check)
    result = out.result
    written = None if out.readme is None else str(out.readme)
    doc = {"folder": str(out.folder), "readme": written, "kind": result.kind,
           "runs": [dataclasses.asdict(r) for r in result.runs],
           "selection": (None if result.selection is None else
                         {k: v for k, v in dataclasses.asdict(result.selection).items()
                          if k != "rows"}),
           "speedups": [{"file": f, **dataclasses.asdict(s)} for f, s in result.speedups],
           "block": result.block}
    return doc, result.block if written is None else f"{written}\n{result.block}"


# ----------------------------------------------------------------------------- compact

def _compact_text(summary) -> str:
    """One row per file (file, bytes before and after, what was done) and the total."""
    body = [[str(f.target if f.status == "compacted" else f.source), f.status,
             f"{f.before_bytes:,}", f"{f.after_bytes:,}"] for f in summary.files]
    saved = summary.before_bytes - summary.after_bytes
    share = f" ({saved / summary.before_bytes:.1%} saved)" if summary.before_bytes else ""
    lines = _aligned(["file", "done", "bytes before", "after"], body, 2)
    lines.append(f"total: {len(summary.files)} files, {summary.before_bytes:,} -> "
                 f"{summary.after_bytes:,} bytes{share}")
    return "\n".join(lines)


def handle_compact(args: argparse.Namespace) -> tuple[dict, str]:
    """``results compact``: parse, call :func:`sparsescope.api.compact_results`, print; each
    file's line on stderr as it is done (not under --json)."""
    import sys

    from sparsescope import api

    def progress(f) -> None:
        print(f"{f.source}: {f.status} ({f.before_bytes:,} -> {f.after_bytes:,} bytes)",
              file=sys.stderr, flush=True)

    summary = api.compact_results(args.paths, progress=None if args.json else progress)
    doc = {"files": [{"source": str(f.source), "target": str(f.target), "status": f.status,
                      "before_bytes": f.before_bytes, "after_bytes": f.after_bytes,
                      "floats": f.floats, "max_rel_change": f.max_rel_change}
                     for f in summary.files],
           "before_bytes": summary.before_bytes, "after_bytes": summary.after_bytes}
    return doc, _compact_text(summary)
