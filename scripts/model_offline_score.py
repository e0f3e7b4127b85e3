"""Score the time model offline against a committed run: every own SpMV kernel variant the run
timed is planned on this machine (its format built, its shape refined from its SASS where a CUDA
compiler is at hand) and predicted with the rates the run measured on its device, then compared
with the run's measured median. No GPU is needed, so a model change can be judged on many
(matrix, kernel) pairs of two GPUs before device time is spent:

    python scripts/model_offline_score.py RESULTS [RESULTS ...] [--json FILE] [--matrix NAME]
        [--baseline OLD.json] [--call-probe PROBE.json]

RESULTS: ``results.json`` or ``.json.gz`` of ``sparsescope run --suite SUITE --variants ...``
(e.g. ``results/h200/kernels/2026-11-25-selection/part1/results.json.gz``); the matrices are
generated again from the run's suite entries (seed 0, the run's scale). Printed: per GPU the
median and 90th percentile of |error| (error = (measured - predicted) / measured), each
variant's median signed error, and per matrix the measured cost of choosing by prediction alone
(the variant predicted fastest against the fastest measured). The SASS comes from this machine's
compiler, which may differ from the device's (NVRTC versions): say so when quoting numbers.
``--call-probe``: ``scripts/call_overhead_probe.py --json`` of the same GPU model, whose
measured call costs (``call_us``, ``next_launch_us``) stand in for a run measured before
``sparsescope ceilings`` had them (say so when quoting numbers).
``--by-kind``: the median measured / predicted of each variant on each matrix kind (which
structures a kernel family is mispredicted on).
``--baseline``: the ``--json`` of an earlier score of the same runs (another commit's model);
printed after the summary: per GPU and per kernel family (the variant's first word) the median
|error| and median signed error of both, on the cases both predicted. ``--from-json``: RESULTS
are earlier ``--json`` files: their summary (and comparison) printed again, nothing planned.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.api import sass_refiner  # noqa: E402
from sparsescope.backends.runner import BackendChoice  # noqa: E402
from sparsescope.backends.variants import SPMV_OWN  # noqa: E402
from sparsescope.matrices.suites import build_entry, find_entry, split_suite_name  # noqa: E402
from sparsescope.model.predict import device_rates  # noqa: E402
from sparsescope.ops.base import canonical_csr  # noqa: E402
from sparsescope.report.collection_data import geomean  # noqa: E402
from sparsescope.results.io import read_runset  # noqa: E402
from sparsescope.whatif import GpuRates, predict_case  # noqa: E402


def timed_variants(rs) -> dict[str, list[tuple[str, float]]]:
    """matrix -> [(variant label, measured median ms)] of the run's own kernel variants."""
    out: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for c in rs.cases:
        name, _, variant = c.backend.partition("[")
        if (c.outcome == "ok" and c.op == "spmv" and variant.rstrip("]") in SPMV_OWN
                and c.measurement is not None):
            out[c.matrix].append((c.backend, statistics.median(c.measurement.samples_ms)))
    return out


def probe_call_costs(path: Path) -> dict[str, float]:
    """``call_us`` and ``next_launch_us`` from ``scripts/call_overhead_probe.py``'s ``--json``:
    the flushed medians of one empty launch, and of two less one (the quantities
    ``sparsescope ceilings`` measures the same way)."""
    rows = {r["probe"]: r["median_us"] for r in json.loads(path.read_text()) if r["flushed"]}
    return {"call_us": rows["empty"], "next_launch_us": rows["empty x2"] - rows["empty"]}


def score_run(path: Path, only: set[str], call_costs: dict | None = None) -> list[dict]:
    rs = read_runset(path)
    ceilings = rs.ceilings
    if call_costs and ceilings is not None and getattr(ceilings, "call_us", None) is None:
        import dataclasses

        ceilings = dataclasses.replace(ceilings, **call_costs)  # a run older than the figure
    gpu = GpuRates(spec=rs.device, rates=device_rates(rs.device, ceilings),
                   origin=f"measured by run {rs.run_id}")
    refine = sass_refiner(rs.device)
    suite, _ = split_suite_name(rs.suite)
    rows = []
    for matrix, variants in timed_variants(rs).items():
        if only and matrix not in only:
            continue
        csr = canonical_csr(build_entry(find_entry(suite, matrix, rs.scale), 0).csr)
        for label, measured in variants:
            name, _, variant = label.partition("[")
            options = SPMV_OWN[variant.rstrip("]")][1]
            backend = BackendChoice(name, tuple(options.items()), label).create()
            p = predict_case(matrix, csr, backend, gpu, refine=refine, label=label).prediction
            rows.append({"gpu": rs.device.name, "matrix": matrix, "backend": label,
                         "measured_ms": measured,
                         "predicted_ms": p.predicted_ms if p is not None else None,
                         "limiter": p.limiter if p is not None else ""})
        print(f"{rs.device.name} {matrix}: {len(variants)} variants predicted", flush=True)
    return rows


def _variant(backend: str) -> str:
    """The variant label of ``cuda-spmv-sell[sell-u4-m6-h1]`` (``sell-u4-m6-h1``), or the
    backend's own name when it has none."""
    return backend.partition("[")[2].rstrip("]") or backend


def summary(rows: list[dict]) -> str:
    lines = []
    for gpu in dict.fromkeys(r["gpu"] for r in rows):
        mine = [r for r in rows if r["gpu"] == gpu and r["predicted_ms"]]
        errors = sorted(abs(r["measured_ms"] - r["predicted_ms"]) / r["measured_ms"]
                        for r in mine)
        lines.append(f"{gpu}: {len(mine)} cases, median |error| "
                     f"{100 * statistics.median(errors):.1f} %, 90th percentile "
                     f"{100 * errors[math.ceil(0.9 * len(errors)) - 1]:.1f} % (nearest rank)")
        by_variant: dict[str, list[float]] = defaultdict(list)
        for r in mine:
            signed = (r["measured_ms"] - r["predicted_ms"]) / r["measured_ms"]
            by_variant[_variant(r["backend"])].append(signed)
        for variant, values in sorted(by_variant.items(),
                                      key=lambda kv: statistics.median(kv[1])):
            lines.append(f"  {variant:26s} median signed error "
                         f"{100 * statistics.median(values):+6.1f} %")
        ratios = []
        for matrix in dict.fromkeys(r["matrix"] for r in mine):
            cases = [r for r in mine if r["matrix"] == matrix]
            best = min(r["measured_ms"] for r in cases)
            pick = min(cases, key=lambda r: r["predicted_ms"])
            ratios.append(pick["measured_ms"] / best)
            lines.append(f"  {matrix}: the fastest prediction ({pick['backend']}) measured "
                         f"{100 * (ratios[-1] - 1):+.1f} % over the fastest")
        lines.append(f"  choosing by prediction alone: {regret_line(ratios)}")
    return "\n".join(lines)


def regret_line(ratios: list[float]) -> str:
    """Geomean and largest of (measured time of the fastest prediction / fastest measured)
    over matrices, and how many exceed 5 %."""
    return (f"{100 * (geomean(ratios) - 1):+.1f} % geomean over the fastest, largest "
            f"{100 * (max(ratios) - 1):+.1f} %, {sum(r > 1.05 for r in ratios)} of "
            f"{len(ratios)} matrices above 5 %")


def _read_rows(path: Path) -> list[dict]:
    """Rows of a ``--json`` file (``.gz`` read as gzip)."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def _errors(rows: list[dict]) -> dict[tuple, float]:
    """(gpu, matrix, backend) -> signed error (measured - predicted) / measured."""
    return {(r["gpu"], r["matrix"], r["backend"]):
            (r["measured_ms"] - r["predicted_ms"]) / r["measured_ms"]
            for r in rows if r.get("predicted_ms")}


def _pct(errors: list[float], f) -> float:
    """Median of ``f(error)`` in percent (``abs``: of the sizes, ``float``: signed)."""
    return 100 * statistics.median(f(e) for e in errors)


def comparison(rows: list[dict], baseline: list[dict]) -> str:
    """Markdown table: per GPU and kernel family (``sell`` of ``...[sell-u4-m6-h1]``, ``all``)
    the cases, and the median |error| and median signed error before and now."""
    old, new = _errors(baseline), _errors(rows)
    keys = [k for k in new if k in old]
    groups: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for k in keys:
        family = k[2].partition("[")[2].split("-")[0] or k[2]
        groups[(k[0], "all")].append(k)
        groups[(k[0], family)].append(k)
    lines = ["| GPU | kernels | cases | median abs error before | now | median signed before "
             "| now |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for (gpu, family), ks in sorted(groups.items(), key=lambda kv: (kv[0][0],
                                                                     kv[0][1] != "all",
                                                                     kv[0][1])):
        before, now = [old[k] for k in ks], [new[k] for k in ks]
        lines.append(f"| {gpu} | {family} | {len(ks)} | {_pct(before, abs):.1f} % | "
                     f"{_pct(now, abs):.1f} % | {_pct(before, float):+.1f} % | "
                     f"{_pct(now, float):+.1f} % |")
    return "\n".join(lines)


def by_kind(rows: list[dict]) -> str:
    """Markdown table: per GPU and variant, the median of measured / predicted over the cases of
    each matrix kind (the generator: ``rmat`` of ``rmat-20``); above 1 the model is fast."""
    ratios: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["predicted_ms"]:
            ratios[(r["gpu"], _variant(r["backend"]), r["matrix"].split("-")[0])].append(
                r["measured_ms"] / r["predicted_ms"])
    kinds = sorted({k[2] for k in ratios})
    lines = ["| GPU | variant | " + " | ".join(kinds) + " |",
             "| --- | --- |" + " ---: |" * len(kinds)]
    for gpu, variant in sorted({k[:2] for k in ratios}):
        cells = [f"{statistics.median(ratios[(gpu, variant, k)]):.2f}"
                 if (gpu, variant, k) in ratios else "" for k in kinds]
        lines.append(f"| {gpu} | {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--matrix", action="append", default=[])
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--from-json", action="store_true")
    parser.add_argument("--by-kind", action="store_true",
                        help="also the median measured / predicted per variant and matrix kind")
    parser.add_argument("--call-probe", type=Path,
                        help="call_overhead_probe.py --json of the same GPU model: its call "
                             "costs stand in for runs whose ceilings predate them")
    args = parser.parse_args()
    if args.from_json:
        rows = [r for path in args.results for r in _read_rows(path)]
    else:
        costs = probe_call_costs(args.call_probe) if args.call_probe else None
        if costs:
            print(f"call costs from {args.call_probe}: " + ", ".join(
                f"{k} {v:.2f}" for k, v in costs.items()), flush=True)
        rows = [r for path in args.results
                for r in score_run(path, set(args.matrix), costs)]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    print(summary(rows))
    if args.baseline:
        print(comparison(rows, _read_rows(args.baseline)))
    if args.by_kind:
        print(by_kind(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
