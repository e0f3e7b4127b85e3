"""``sparsescope results show FILE``: one row per matrix and backend of a results file.

Each row: ``matrix``, ``backend``, ``median_ms``, ``cv`` (std / mean of the samples),
``rel_err`` (against float64), ``eff_bw_gb_s`` and ``pct_copy_bw``. The last two use one byte
model for every backend -- INT32 indices, y written only
(``sparsescope.model.spmv_traffic(index_bytes=4, y_read=False)``), the fewest bytes the matrix
needs -- so they compare backends by time alone::

    eff_bw_gb_s = bytes_int32 / median_time        pct_copy_bw = 100 * eff_bw / copy_bw

``copy_bw`` is the run's measured ``ceilings.copy_bw_gb_s``; ``pct_copy_bw`` is null when the
run measured none. Cases without a time (skipped, failed) have null times and bandwidths.

``sparsescope results compare A B``: the same cases of two runs side by side (back-to-back
repeatability, or two machines). Per (matrix, backend, op)::

    ratio = median_b / median_a        spread = |median_a - median_b| / min(median_a, median_b)

A row *agrees* when spread <= ``--within`` (default 0.05). Only ok cases count as timed; a case
timed in one run and not in the other is a disagreement, a case timed in neither is listed as
``untimed`` and left out of the verdict.
"""

from __future__ import annotations

import argparse
import math
import statistics

from sparsescope.cli import add_json_flag

COLUMNS = ("matrix", "backend", "median_ms", "cv", "rel_err", "eff_bw_gb_s", "pct_copy_bw")
PREDICTION_KEYS = ("predicted_ms", "prediction_error_pct", "limiter", "not_modelled")
DEFAULT_WITHIN = 0.05
"""``results compare``: spreads up to 5 % count as agreement."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("results", help="inspect results files",
                              description="Inspect a results.json written by `sparsescope run`.")
    sub = p.add_subparsers(dest="results_command", metavar="SUBCOMMAND")
    sub.required = True
    show = sub.add_parser(
        "show", help="one row per matrix and backend: time, spread, error, bandwidth",
        description="Print median time, coefficient of variation, relative error, effective "
                    "bandwidth (INT32 byte model, y written only) and its % of the measured "
                    "copy bandwidth for every case of a results file.")
    show.add_argument("file", metavar="FILE", help="results.json")
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


def _json_float(value):
    """Non-finite floats as the strings results files use, so --json stays strict JSON."""
    if not isinstance(value, float) or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def result_rows(runset) -> list[dict]:
    """The rows of :data:`COLUMNS` for every case of ``runset``, in the run's order."""
    from sparsescope.model.spmv import spmv_traffic

    stats = {m.name: m.stats for m in runset.matrices}
    copy_bw = runset.ceilings.copy_bw_gb_s
    rows = []
    for case in runset.cases:
        m = case.measurement
        median = m.median_ms if m is not None else None
        eff = pct = None
        st = stats.get(case.matrix)
        if median is not None and median > 0 and st is not None:
            traffic = spmv_traffic(st.rows, st.cols, st.nnz, value_bytes=case.value_bytes,
                                   index_bytes=4, y_read=False)
            eff = traffic.total_bytes / (median * 1e-3) / 1e9
            pct = 100.0 * eff / copy_bw if copy_bw else None
        rows.append({"matrix": case.matrix, "backend": case.backend, "median_ms": median,
                     "cv": m.cov if m is not None else None,
                     "rel_err": case.correctness.rel_err if case.correctness else None,
                     "eff_bw_gb_s": eff, "pct_copy_bw": pct, "_outcome": case.outcome,
                     "params": case.params.label(),
                     "traffic_bytes": case.traffic.total_bytes if case.traffic else None,
                     "above_peak": case.model.above_peak if case.model else "",
                     **prediction_fields(case)})
    return rows


def prediction_fields(case) -> dict:
    """``predicted_ms``, ``prediction_error_pct`` (signed: (measured - predicted) / measured x
    100), ``limiter`` and, when there is no prediction, ``not_modelled`` (the reason)."""
    from sparsescope.model.prediction import OLDER_THAN_MODEL

    p = case.prediction
    if p is None:
        return {"predicted_ms": None, "prediction_error_pct": None, "limiter": None,
                "not_modelled": OLDER_THAN_MODEL}
    return {"predicted_ms": p.predicted_ms, "prediction_error_pct": p.error_pct,
            "limiter": p.limiter or None, "not_modelled": p.not_modelled or None}


def _cell(value, fmt: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return fmt.format(value)


def _table(rows: list[dict]) -> str:
    formats = ("{}", "{}", "{:.4f}", "{:.1%}", "{:.1e}", "{:,.0f}", "{:.1f}")
    header = ["matrix", "backend", "median ms", "cv", "rel_err", "eff GB/s", "% copy",
              "outcome"]
    body = [[_cell(r[c], f) for c, f in zip(COLUMNS, formats, strict=True)] + [r["_outcome"]]
            for r in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = []
    for line in [header, ["-" * w for w in widths], *body]:
        cells = [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(line[2:-1], widths[2:-1], strict=True)]
        cells.append(line[-1])
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def handle_show(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope.results.case_models import with_case_models
    from sparsescope.results.io import read_runset

    # a committed file may leave out the case models: they are computed as the run would
    runset = with_case_models(read_runset(args.file))
    rows = result_rows(runset)
    copy_bw = runset.ceilings.copy_bw_gb_s
    result = {
        "run_id": runset.run_id, "device": runset.provenance.device,
        "copy_bw_gb_s": copy_bw,
        "byte_model": "spmv_traffic(index_bytes=4, y_read=False): INT32 indices, y written",
        "rows": [{**{c: _json_float(r[c]) for c in COLUMNS}, "outcome": r["_outcome"],
                  "params": r["params"], "traffic_bytes": r["traffic_bytes"],
                  "above_peak": r["above_peak"],
                  **{k: _json_float(r[k]) for k in PREDICTION_KEYS}} for r in rows],
    }
    bw = f"{copy_bw:,.0f} GB/s" if copy_bw else "not measured"
    text = (f"run {runset.run_id} on {runset.provenance.device} (copy bandwidth {bw}; "
            f"bandwidths use the INT32, y-written byte model)\n" + _table(rows))
    return result, text


# ----------------------------------------------------------------------------- compare

def _timed_median(case) -> float | None:
    """The median of an ok case with samples; None for skipped and failed cases."""
    m = case.measurement
    if case.outcome != "ok" or m is None or not m.samples_ms:
        return None
    return m.median_ms


def _keyed(runset) -> dict[tuple[str, str, str, int], object]:
    """Cases by (matrix, backend, op, occurrence): a run that holds a case twice pairs them
    in order."""
    seen: dict[tuple[str, str, str], int] = {}
    out = {}
    for case in runset.cases:
        key = (case.matrix, case.backend, case.op)
        seen[key] = seen.get(key, 0) + 1
        out[(*key, seen[key])] = case
    return out


def compare_rows(runset_a, runset_b, within: float = DEFAULT_WITHIN) -> list[dict]:
    """One row per case of A (in A's order), then the cases only B holds.

    ``status``: ``agree`` / ``differ`` (both timed), ``only_a`` / ``only_b`` (timed in one run
    only), ``untimed`` (in neither).
    """
    a, b = _keyed(runset_a), _keyed(runset_b)
    rows = []
    for key in [*a, *(k for k in b if k not in a)]:
        ta = _timed_median(a[key]) if key in a else None
        tb = _timed_median(b[key]) if key in b else None
        ratio = spread = None
        if ta is not None and tb is not None and min(ta, tb) > 0:
            ratio = tb / ta
            spread = abs(ta - tb) / min(ta, tb)
            status = "agree" if spread <= within else "differ"
        elif ta is not None:
            status = "only_a"
        elif tb is not None:
            status = "only_b"
        else:
            status = "untimed"
        rows.append({"matrix": key[0], "backend": key[1], "op": key[2], "median_a_ms": ta,
                     "median_b_ms": tb, "ratio_b_over_a": ratio, "spread": spread,
                     "status": status})
    return rows


def compare_summary(rows: list[dict], within: float) -> dict:
    """Largest spread, counts per status, and whether every timed row agrees within."""
    compared = [r for r in rows if r["spread"] is not None]
    worst = max(compared, key=lambda r: r["spread"], default=None)
    counts = {s: sum(r["status"] == s for r in rows)
              for s in ("agree", "differ", "only_a", "only_b", "untimed")}
    return {
        "within": within, "rows": len(rows), "compared": len(compared), "counts": counts,
        "max_spread": worst["spread"] if worst else None,
        "max_spread_case": ({"matrix": worst["matrix"], "backend": worst["backend"]}
                            if worst else None),
        "median_spread": statistics.median(r["spread"] for r in compared) if compared else None,
        "all_within": bool(compared) and counts["agree"] + counts["untimed"] == len(rows),
    }


def _run_info(runset, path: str) -> dict:
    return {"file": path, "run_id": runset.run_id, "created_utc": runset.provenance.created_utc,
            "device": runset.provenance.device, "suite": runset.suite, "scale": runset.scale}


def _compare_text(info_a: dict, info_b: dict, rows: list[dict], summary: dict) -> str:
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


def handle_compare(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope.errors import UsageError
    from sparsescope.results.io import read_runset

    if not (args.within >= 0 and math.isfinite(args.within)):
        raise UsageError(f"--within must be a finite number >= 0, got {args.within}")
    runset_a, runset_b = read_runset(args.file_a), read_runset(args.file_b)
    rows = compare_rows(runset_a, runset_b, args.within)
    summary = compare_summary(rows, args.within)
    info_a, info_b = _run_info(runset_a, args.file_a), _run_info(runset_b, args.file_b)
    result = {"a": info_a, "b": info_b,
              "same_device": info_a["device"] == info_b["device"],
              "spread_formula": "|a - b| / min(a, b) of the two medians",
              "summary": summary, "rows": rows}
    return result, _compare_text(info_a, info_b, rows, summary)


def handle_readme(args: argparse.Namespace) -> tuple[dict, str]:
    """``results readme``: parse, call :mod:`sparsescope.results.readme`, print."""
    import dataclasses
    from pathlib import Path

    from sparsescope.errors import ResultsFormatError, UsageError
    from sparsescope.results.readme import readme_for, write_readme

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    if args.check:
        result = readme_for(folder)
        committed = folder / "README.md"
        if not committed.is_file() or committed.read_text(encoding="utf-8") != result.text:
            raise ResultsFormatError(f"{committed}: its generated block is not what the "
                                     "folder's files give; run `sparsescope results readme "
                                     f"{folder}`")
        written = None
    else:
        result = write_readme(folder, title=args.title, note=args.note, out=args.out)
        written = str(Path(args.out) if args.out else folder / "README.md")
    doc = {"folder": str(folder), "readme": written, "kind": result.kind,
           "runs": [dataclasses.asdict(r) for r in result.runs],
           "selection": (None if result.selection is None else
                         {k: v for k, v in dataclasses.asdict(result.selection).items()
                          if k != "rows"}),
           "speedups": [{"file": f, **dataclasses.asdict(s)} for f, s in result.speedups],
           "block": result.block}
    return doc, result.block if written is None else f"{written}\n{result.block}"
