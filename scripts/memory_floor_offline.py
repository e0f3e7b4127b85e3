"""Read committed SpMV runs against each format's memory floor, offline (no GPU): the floor the
predictions now carry (``model.predict.format_floor``, formulas in ``model.gathers``), computed
for runs made before it existed, from the run's own measured rates and each case's declared
traffic; the matrices are generated again from the run's suite entries (seed 0, its scale).

    python scripts/memory_floor_offline.py RESULTS [RESULTS ...] [--out FILE.md]

RESULTS: ``results.json`` or ``.json.gz`` of ``sparsescope run``. Per matrix: the fastest own
kernel, ``cuda-spmv-auto`` and the fastest library case, each against its own format's floor
(% of floor = floor / measured median x 100), and the floor's numbers. Printed (and written to
--out) as Markdown.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.matrices.suites import build_entry, find_entry, split_suite_name  # noqa: E402
from sparsescope.model.predict import device_rates, format_floor  # noqa: E402
from sparsescope.ops.base import canonical_csr  # noqa: E402
from sparsescope.registry import is_own  # noqa: E402
from sparsescope.report.collection_data import geomean  # noqa: E402
from sparsescope.results.io import read_runset  # noqa: E402

AUTO = "cuda-spmv-auto"


def _median_ms(case) -> float:
    return statistics.median(case.measurement.samples_ms)


def _floor(case, csr, rates):
    """The case's memory floor (``GatherFloor``), or None when it declared no traffic. The
    flush write-back is the case's own prediction's (``inputs['flush_writeback_bytes']``),
    counted only where the run measured the device's ``flush_writeback_share``, as the
    prediction's floor counts it; a case without a stored prediction gets none."""
    if case.traffic is None:
        return None
    inputs = case.prediction.inputs if case.prediction is not None else {}
    writeback = (float(inputs.get("flush_writeback_bytes", 0.0))
                 if rates.flush_writeback_share is not None else 0.0)
    return format_floor(csr.indptr, csr.indices, csr.shape[1], case.traffic, rates,
                        case.value_bytes, writeback)


def floor_rows(path: Path) -> list[dict]:
    rs = read_runset(path)
    rates = device_rates(rs.device, rs.ceilings)
    suite, _ = split_suite_name(rs.suite)
    by_matrix: dict[str, list] = {}
    for c in rs.cases:
        if c.outcome == "ok" and c.op == "spmv" and c.measurement is not None:
            by_matrix.setdefault(c.matrix, []).append(c)
    rows = []
    for matrix, cases in by_matrix.items():
        csr = canonical_csr(build_entry(find_entry(suite, matrix, rs.scale), 0).csr)
        # the fastest own kernel proper: the choosers (auto, auto-rules) ran one of them
        own = [c for c in cases if is_own(c.backend) and not c.backend.startswith(AUTO)]
        picks = {"own": min(own, key=_median_ms) if own else None,
                 "auto": next((c for c in cases if c.backend == AUTO), None),
                 "library": min((c for c in cases if not is_own(c.backend)), key=_median_ms,
                                default=None)}
        row = {"gpu": rs.device.name, "matrix": matrix, "nnz": csr.nnz}
        for role, case in picks.items():
            floor = _floor(case, csr, rates) if case is not None else None
            row[role] = None if case is None else {
                "backend": case.backend, "ms": _median_ms(case),
                "floor_ms": floor.floor_ms if floor else None,
                "pct": 100 * floor.floor_ms / _median_ms(case) if floor else None,
                "binding": floor.binding if floor else "",
                "strategy": floor.strategy if floor else "",
                "x_requests": floor.x_requests if floor else None,
                "hot_share": floor.hot_share if floor else None,
                "formula": floor.formula if floor else ""}
        rows.append(row)
        print(f"{rs.device.name} {matrix}: floors read", file=sys.stderr, flush=True)
    return rows


def _cell(part: dict | None, key: str, fmt: str) -> str:
    if part is None or part.get(key) is None:
        return "-"
    return format(part[key], fmt)


def markdown(rows: list[dict]) -> str:
    lines = ["| GPU | matrix | fastest own | us | floor us | % of floor | bound by | x requests "
             "/ nnz | on chip % | auto us | auto % of floor | best library | us | library % "
             "of its floor |", "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        own, auto, lib = r["own"], r["auto"], r["library"]
        per_nnz = (own["x_requests"] / r["nnz"] if own and own["x_requests"] is not None
                   and r["nnz"] else None)
        hot = None if not own or own["hot_share"] is None else 100 * own["hot_share"]
        lines.append(
            f"| {r['gpu']} | {r['matrix']} | {own['backend'] if own else '-'} | "
            f"{_cell(own, 'ms', '.4f')} | {_cell(own, 'floor_ms', '.4f')} | "
            f"{_cell(own, 'pct', '.1f')} | {own['binding'] if own else '-'} | "
            f"{'-' if per_nnz is None else format(per_nnz, '.3f')} | "
            f"{'-' if hot is None else format(hot, '.1f')} | {_cell(auto, 'ms', '.4f')} | "
            f"{_cell(auto, 'pct', '.1f')} | "
            f"{lib['backend'] if lib else '-'} | {_cell(lib, 'ms', '.4f')} | "
            f"{_cell(lib, 'pct', '.1f')} |")
    pcts = [r["own"]["pct"] for r in rows if r["own"] and r["own"]["pct"] is not None]
    reach = [(r["matrix"], r["library"]["ms"] / r["own"]["floor_ms"],
              r["library"]["ms"] / r["own"]["ms"]) for r in rows
             if r["own"] and r["own"]["floor_ms"] and r["library"]]
    if reach:
        geo = geomean(x for _, x, _ in reach)
        now = geomean(x for _, _, x in reach)
        lines += ["", f"- Speedup over the best library: {now:.2f}x geomean now (fastest own "
                      f"kernel); at most {geo:.2f}x for a kernel at its format's floor "
                      f"(library time / floor, over {len(reach)} matrices): "
                      + ", ".join(f"{m} {x:.2f}x" for m, x, _ in reach) + "."]
    if pcts:
        below = [f"{r['matrix']} ({r['own']['pct']:.0f} %)" for r in rows
                 if r["own"] and r["own"]["pct"] is not None and r["own"]["pct"] < 80]
        lines += ["", f"- Fastest own kernel: median {statistics.median(pcts):.1f} % of its "
                      f"format's floor over {len(pcts)} matrices; below 80 %: "
                      f"{', '.join(below) or 'none'}."]
    lines += ["", "Floors (fastest own kernel's format):", ""]
    lines += [f"- {r['matrix']}: {r['own']['strategy']}; {r['own']['formula']}" for r in rows
              if r["own"] and r["own"]["formula"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [r for path in args.results for r in floor_rows(path)]
    text = markdown(rows)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
