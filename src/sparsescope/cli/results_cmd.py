"""``sparsescope results show FILE``: one row per matrix and backend of a results file.

Each row: ``matrix``, ``backend``, ``median_ms``, ``cv`` (std / mean of the samples),
``rel_err`` (against float64), ``eff_bw_gb_s`` and ``pct_copy_bw``. The last two use one byte
model for every backend -- INT32 indices, y written only
(``sparsescope.model.spmv_traffic(index_bytes=4, y_read=False)``), the fewest bytes the matrix
needs -- so they compare backends by time alone::

    eff_bw_gb_s = bytes_int32 / median_time        pct_copy_bw = 100 * eff_bw / copy_bw

``copy_bw`` is the run's measured ``ceilings.copy_bw_gb_s``; ``pct_copy_bw`` is null when the
run measured none. Cases without a time (skipped, failed) have null times and bandwidths.
"""

from __future__ import annotations

import argparse
import math

from sparsescope.cli import add_json_flag

COLUMNS = ("matrix", "backend", "median_ms", "cv", "rel_err", "eff_bw_gb_s", "pct_copy_bw")


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
                     "eff_bw_gb_s": eff, "pct_copy_bw": pct, "_outcome": case.outcome})
    return rows


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
    from sparsescope.results.io import read_runset

    runset = read_runset(args.file)
    rows = result_rows(runset)
    copy_bw = runset.ceilings.copy_bw_gb_s
    result = {
        "run_id": runset.run_id, "device": runset.provenance.device,
        "copy_bw_gb_s": copy_bw,
        "byte_model": "spmv_traffic(index_bytes=4, y_read=False): INT32 indices, y written",
        "rows": [{c: _json_float(r[c]) for c in COLUMNS} for r in rows],
    }
    bw = f"{copy_bw:,.0f} GB/s" if copy_bw else "not measured"
    text = (f"run {runset.run_id} on {runset.provenance.device} (copy bandwidth {bw}; "
            f"bandwidths use the INT32, y-written byte model)\n" + _table(rows))
    return result, text
