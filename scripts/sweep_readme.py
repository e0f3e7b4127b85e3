"""Write results/<gpu>/sweep/README.md from the sweep's own files (no number typed by hand).

    python scripts/sweep_readme.py results/h200/sweep --note "TEXT" [--note ...]

Reads DEST/parts/gpu_part*.json (each part's `sweep --json`), DEST/cpu/cpu_w1.json,
cpu_w2.json, cpu_2040.json, DEST/env.txt, env_cpu.txt, DEST/tables/collection_summary.json
and DEST/pytest_gpu.log.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _part_rows(parts: list[tuple[str, dict]]) -> list[str]:
    rows = ["| part | exit | run now | found stored | wall s | workers' busy s | cases/min | "
            "engine + store overhead % | client peak MiB | left |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, d in parts:
        t = d["throughput"]
        rows.append(f"| {name} | {d['exit_code']} | {d['ran']} | {d['stored']} | "
                    f"{t['wall_s']:.1f} | {t['busy_s']:.1f} | {t['cases_per_min']:.1f} | "
                    f"{t['overhead_pct']:.2f} | {t['client_max_rss_mb']:.0f} | {t['left']} |")
    return rows


def _totals(parts: list[tuple[str, dict]]) -> dict:
    ran = sum(d["ran"] for _, d in parts)
    wall = sum(d["throughput"]["wall_s"] for _, d in parts)
    capacity = sum(d["throughput"]["wall_s"] * d["throughput"]["workers"] for _, d in parts)
    busy = sum(d["throughput"]["busy_s"] for _, d in parts)
    report = sum(d["throughput"]["report_s"] for _, d in parts)
    outcomes: dict[str, int] = {}
    for c in parts[-1][1]["cases"]:
        outcomes[c["outcome"]] = outcomes.get(c["outcome"], 0) + 1
    return {"ran": ran, "wall": wall, "busy": busy, "report": report,
            "cases_per_min": 60 * ran / wall, "overhead_pct": 100 * (1 - busy / capacity),
            "outcomes": outcomes, "cases": len(parts[-1][1]["cases"])}


def _cpu_lines(cpu: Path) -> list[str]:
    w1, w2 = _load(cpu / "cpu_w1.json"), _load(cpu / "cpu_w2.json")
    big = _load(cpu / "cpu_2040.json")
    t1, t2, tb = w1["throughput"], w2["throughput"], big["throughput"]
    return [
        f"- `--cluster local --workers 1`: {w1['ran']} cases in {t1['wall_s']:.1f} s "
        f"({t1['cases_per_min']:.1f} cases/min, overhead {t1['overhead_pct']:.2f} %)",
        f"- `--cluster local --workers 2`: {w2['ran']} cases in {t2['wall_s']:.1f} s "
        f"({t2['cases_per_min']:.1f} cases/min, overhead {t2['overhead_pct']:.2f} %)",
        f"- **2 workers against 1: {t1['wall_s'] / t2['wall_s']:.2f}x** (target >= 1.7x); "
        f"{len(w1['cases'])} distinct cases each: at this scale some small entries become "
        "the same dense matrix, and a case is keyed by the matrix's content hash, so it is "
        "run and stored once",
        f"- client memory: a {big['ran']}-case sweep (`--op spmm`, k = 1..10, 8 workers) "
        f"peaked at **{tb['client_max_rss_mb']:.0f} MiB** in the client process (target "
        f"< 2 GB); {tb['cases_per_min']:.0f} cases/min, overhead {tb['overhead_pct']:.2f} % "
        f"on {tb['workers']} workers",
    ]


def _model_lines(results: Path) -> list[str]:
    """The time model's score on this population (no case of it was used to build the model)."""
    import math
    import statistics

    from sparsescope.results.io import read_runset

    rs = read_runset(results)
    nnz = {m.name: m.stats.nnz for m in rs.matrices}
    scored = [(c, c.prediction.error_pct) for c in rs.cases
              if c.prediction is not None and c.prediction.error_pct is not None]
    errs = sorted(abs(e) for _, e in scored)
    lines = [f"- the time model (issue 14) predicted {len(scored)} of {len(rs.cases)} cases before "
             f"timing them: median |error| {statistics.median(errs):.1f} %, 90th percentile "
             f"{errs[int(0.9 * (len(errs) - 1))]:.1f} %, signed median "
             f"{statistics.median(e for _, e in scored):+.1f} % (positive: slower than "
             "predicted); by size:"]
    buckets: dict[int, list[float]] = {}
    for c, e in scored:
        buckets.setdefault(int(math.log10(max(1, nnz[c.matrix]))), []).append(e)
    for k in sorted(buckets):
        v = buckets[k]
        lines.append(f"  - 1e{k} <= nnz < 1e{k + 1}: {len(v)} cases, signed median "
                     f"{statistics.median(v):+.1f} %, median |error| "
                     f"{statistics.median(abs(x) for x in v):.1f} %")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dest", type=Path)
    ap.add_argument("--note", action="append", default=[])
    args = ap.parse_args()
    dest = args.dest
    parts = [(p.stem, _load(p)) for p in sorted((dest / "parts").glob("gpu_part*.json"))]
    tot = _totals(parts)
    summary = _load(dest / "tables" / "collection_summary.json")["rows"][0]
    pytest_tail = (dest / "pytest_gpu.log").read_text().strip().splitlines()[-1]
    lines = [
        "# results/h200/sweep", "",
        "Issue 15's scale run: `sparsescope sweep` over the generated `population` suite "
        f"({summary['matrices']} matrices, every generator kind, 10^4 to 2 x 10^7 nonzeros) "
        "x the default GPU backends on one H200 with `--cluster cuda` (dask-cuda's "
        "`LocalCUDACluster`, one worker pinned to the GPU), in parts stopped by "
        "`--time-limit` and resumed from the store; and the CPU scaling of "
        "`--cluster local`.", "",
        "## How it was made", "",
        "On the lent machine (device tool, kind `nvidia-h200`), from the repository root, "
        "with `carry=[\".device-wheels\", \"out/sweep-scale\"]` (the store travels between "
        "parts gzipped in `out/sweep-scale/`):", "",
        "```",
        "bash scripts/device_sweep_scale.sh gpu 380   # part 1, then again: part 2",
        "bash scripts/device_sweep_scale.sh cpu",
        "python scripts/sweep_readme.py results/h200/sweep --note ...",
        "```", "",
        "GPU parts run `sparsescope sweep suite:population --cluster cuda --store "
        "out/sweep-scale/store.sqlite --time-limit 380 --warmups 5 --repeats 20 --json`.",
        "", "env.txt (GPU parts):", "", "```", (dest / "env.txt").read_text().strip(), "```",
        "", "## GPU: 204 matrices x 6 backends, one H200, --cluster cuda", "",
        *_part_rows(parts), "",
        f"- every case of the sweep once: {tot['cases']} cases, outcomes {tot['outcomes']}; "
        f"part 2 found the {parts[-1][1]['stored']} cases of part 1 in the store and ran only "
        "the rest (resume)",
        f"- over both parts: {tot['ran']} cases in {tot['wall']:.1f} s of sweeping, "
        f"**{tot['cases_per_min']:.1f} cases/min**; the engine's and the store's overhead "
        f"(the share of the worker's time not spent loading matrices or running cases: "
        f"scheduling, transfers, the client's store appends, the tail) "
        f"**{tot['overhead_pct']:.2f} %** (target <= 5 %)",
        f"- not counted in that wall time: starting the cluster and measuring the ceilings, "
        f"and reading every case back to write results and reports "
        f"({tot['report']:.1f} s over the two parts)",
        f"- collection report: best own kernel over the best library "
        f"{summary['best_own_geomean_speedup_x']:.3f}x geomean; own at least as fast on "
        f"{summary['own_at_least_library_matrices']} of {summary['compared_matrices']} "
        "matrices. The default backends hold only two own kernels besides auto "
        "(csr-scalar, csr-vector), so auto's \"regret\" against them is negative "
        f"({summary['auto_geomean_regret_pct']:.1f} %): auto is faster than both",
        *_model_lines(dest / "results.json.gz"),
        f"- GPU tests on the same device before this run: `{pytest_tail}`", "",
        "## CPU: --cluster local, 1 worker against 2 (same machine, 16 cores)", "",
        "`sparsescope sweep suite:population@0.05 --backend scipy-cpu --cluster local "
        "--workers W` (env_cpu.txt):", "", *_cpu_lines(dest / "cpu"), "",
    ]
    if args.note:
        lines += ["## Notes", "", *[f"- {n}" for n in args.note], ""]
    lines += ["## Files", "",
              "`parts/gpu_part*.json` (each part's `--json`), `results.json.gz` (one RunSet of "
              "every case; `sparsescope results show results.json.gz` reads it), "
              "`collection.md`/`.html` with `matrices/` (per-matrix pages), `tables/` and "
              "`figures/` (the collection report's), `cpu/` (the CPU sweeps' `--json`), "
              "`env.txt`, `env_cpu.txt`, `pytest_gpu.log`.", ""]
    (dest / "README.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
