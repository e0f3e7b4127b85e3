"""Write results/h200/profile/README.md from the run's files in exports/ (no number typed by hand).

    PYTHONPATH=src python3 results/h200/profile/make_readme.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from sparsescope.profile import load
from sparsescope.profile.analysis import representative_launches
from sparsescope.profile.latency import achieved_dram_gb_s

HERE = Path(__file__).resolve().parent
EXPORTS = HERE / "exports"
CASES = [("cant", "torch-cusparse-i64"), ("cant", "torch-cusparse-i32"),
         ("cant", "cupy-cusparse-i32"), ("cant", "cuda-spmv-auto"),
         ("cage15", "torch-cusparse-i64"), ("cage15", "torch-cusparse-i32"),
         ("cage15", "cupy-cusparse-i32"), ("cage15", "cuda-spmv-auto")]
REPORT_COMMAND = ("PYTHONPATH=src python3 -m sparsescope report results/h200/seed6/results.json "
                  + " ".join(f"--profile results/h200/profile/exports/{m}/profile_seed6_{m}_{b}"
                             ".ncu-rep" for m, b in CASES)
                  + " --out results/h200/profile")


def _env() -> dict[str, str]:
    lines = (EXPORTS / "env.txt").read_text().splitlines()
    out = {"date": lines[0].split()[1], "commit": lines[1].split()[1]}
    gpu = next(csv.reader([lines[3]]))
    out["gpu"], out["driver"] = gpu[0].strip(), gpu[1].strip()
    out["clocks"] = f"SM {gpu[3].strip()} (max {gpu[4].strip()}), memory {gpu[5].strip()}"
    out["ncu"] = lines[4].split(": ", 1)[1]
    out["python"] = lines[5]
    return out


def _timings() -> list[dict[str, str]]:
    with (EXPORTS / "timings.tsv").open() as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _kernel_rows() -> list[str]:
    rows = []
    for matrix, backend in CASES:
        raw = EXPORTS / matrix / f"profile_seed6_{matrix}_{backend}_raw.csv"
        for p in representative_launches(load(raw)):
            lsb = p.stalls.get("long_scoreboard")
            share = 100 * lsb / p.cpi if lsb is not None and p.cpi else None
            dram = p.value("dram__throughput.avg.pct_of_peak_sustained_elapsed",
                           "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
            gbs = achieved_dram_gb_s(p)
            rows.append(f"| {matrix} | {backend} | {p.name} | {p.block_size} x {p.grid_size} | "
                        f"{p.duration_ns / 1e3:.2f} | {p.cpi:.2f} | {lsb:.2f} ({share:.0f}%) | "
                        f"{p.achieved_occupancy_pct:.1f}% of {p.theoretical_occupancy_pct:.0f}% "
                        f"| {dram:.1f}% ({gbs:,.0f} GB/s) |")
    return rows


def main() -> None:
    env = _env()
    timings = _timings()
    targeted = json.loads((EXPORTS / "targeted.cant.torch-cusparse-i64.json").read_text())
    t_row = next(t for t in timings if t["step"] == "targeted")
    # the name as this checkout's reader gives it (the device's JSON predates a name fix)
    t_kernel = load(EXPORTS / "targeted" / "profile_seed6_cant_torch-cusparse-i64_raw.csv")[0].name
    t_passes = ", ".join(f"{p['kernel']} {p['passes']}" for p in targeted["passes"])
    groups = [json.loads((EXPORTS / f"{m}.{m}.{b}.json").read_text()) for m, b in CASES]
    group_passes = sorted({p["passes"] for g in groups for p in g["passes"]})
    skipped = [f"{t['matrix']} {t['backend']}" for t in timings if t["rc"] == "skipped"]
    ran = [t for t in timings if t["step"] == "groups" and t["rc"] == "0"]
    lines = [
        "# Nsight Compute profiles of the seed6 kernels on an NVIDIA H200",
        "",
        "Written by `make_readme.py` from the files the device run returned (`exports/`); the "
        "report (`report.md`, `report.html`, `figures/`, `tables/`) is the seed6 run's report "
        "(`results/h200/seed6/results.json`) with the Nsight Compute section (section 10) added.",
        "",
        "## What ran",
        "",
        "On the lent H200 (device tool, kind `nvidia-h200`, `carry=[\".device-wheels\"]`):",
        "",
        "```",
        f"export SPARSESCOPE_GIT_COMMIT={env['commit']}; "
        "bash scripts/device_profile.sh --budget-s 200 --matrices cant,cage15",
        "```",
        "",
        "which runs, for each case, `sparsescope profile run --suite seed6 --matrix M --backend B "
        "--kernel 'regex:^(csrmv|csr_partition|spmv_)' --clock-control none --launch-count 6 "
        "--warmups 1 --repeats 2` (all five metric groups: launch, occupancy, stalls, memory, "
        "instruction-roofline, with their sections, so rule messages and per-instruction "
        "samples are in the report), and once the targeted profile below. Then here:",
        "",
        "```",
        "tar xzf results/h200/profile/exports/reports.tar.gz -C results/h200/profile/exports",
        REPORT_COMMAND,
        "PYTHONPATH=src python3 results/h200/profile/make_readme.py",
        "```",
        "",
        "| Item | Value |",
        "|---|---|",
        f"| Date (UTC) | {env['date']} |",
        f"| GPU, driver | {env['gpu']}, {env['driver']}; clocks left as found "
        f"(`--clock-control none`; at start {env['clocks']}) |",
        f"| Nsight Compute | {env['ncu']} |",
        f"| Software | {env['python']} |",
        f"| sparsescope | commit {env['commit']} plus this issue's working-tree changes |",
        f"| Cases profiled | {len(ran)} of {len(ran) + len(skipped)}; not reached within the "
        f"device budget: {', '.join(skipped) or 'none'} |",
        f"| Replay passes per launch | {', '.join(map(str, group_passes))} (all groups) |",
        "",
        "Ceilings in the report: DRAM read bandwidth, L2 bandwidth, FP32 rate and DRAM latency "
        "measured by the seed6 run (its results file); peak warp instructions, L1 and shared "
        "memory from the H200 spec table; FP64 from ncu's peak metrics. Each figure and the "
        "`Ceilings Used` table say which.",
        "",
        "## Targeted profile: stalls + instruction-roofline groups, one kernel",
        "",
        f"`sparsescope profile run --suite seed6 --matrix cant --backend torch-cusparse-i64 "
        f"--groups stalls,instruction-roofline --launch-count 1 --warmups 0 --repeats 1` "
        f"(same filter and clock setting): **{float(t_row['wall_s']):.1f} s** wall for the whole "
        "command (Python start, matrix generation, CUDA start-up, ncu, the raw and details CSV "
        f"exports), of "
        f"which {targeted['profile_wall_s']:.1f} s under ncu and {targeted['export_wall_s']:.1f} s "
        f"exporting; **{t_passes.split()[-1]} ncu passes** ({t_passes}). The launch profiled was "
        f"`{t_kernel}` ({targeted['kernels'][0]['duration_ns'] / 1e3:.1f} us), selected with "
        "`regex:^csrmv_v3` (this step ran in the second call, below). The pass count is set by "
        "the metric set, not the kernel (every launch of the full-group runs, "
        "csr_partition_kernel and csrmv_v3_kernel alike, took the same number of passes, "
        "`exports/*/*.ncu.log`).",
        "",
        "## Per kernel (the median-duration launch of each)",
        "",
        "Duration under the profiler (caches flushed before each pass). Long Scoreboard: cycles "
        "per issued instruction and share of the CPI. DRAM: ncu's DRAM throughput, % of peak, "
        "and bytes read + written over the duration.",
        "",
        "| Matrix | Backend | Kernel | Block x grid | Time (us) | CPI | Long Scoreboard | "
        "Achieved occupancy | DRAM |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
        *_kernel_rows(),
        "",
        "## Files",
        "",
        "- `report.md`, `report.html` (self-contained), `figures/`, `tables/`: the report.",
        f"- `exports/reports.tar.gz`: the {len(CASES) + 1} `.ncu-rep` reports (2-4 MB each unpacked; rule "
        "messages and per-PC stall samples inside), which the report was built from; unpack "
        "them with the `tar` line above before re-running the report command.",
        "- `exports/<matrix>/profile_seed6_<matrix>_<backend>_raw.csv`: the raw page of each "
        "profile as the device exported it (ratios rounded to two decimals: that run exported "
        "without `--print-fp`, which `profile run` now passes); `.ncu.log`: ncu's output. "
        "`sparsescope profile read` reads either.",
        "- `exports/targeted/`: the targeted profile's exports.",
        "- Two device calls: the first profiled cant (all four backends) and cage15 (torch INT64 "
        "and INT32) before its budget ran out; the second (`bash scripts/device_profile.sh "
        "--budget-s 240 --matrices cage15 --backends cupy-cusparse-i32,cuda-spmv-auto`) "
        "profiled the other two cage15 cases and re-ran the targeted step with the "
        "`regex:^csrmv_v3` filter. `exports/env.txt` holds both calls' environments, "
        "`exports/timings.tsv` the rows of both (the second call's replace the rows it re-ran).",
        "- `exports/*.json`: each `profile run --json` output (command, passes, wall times, "
        "kernel summaries); `exports/timings.tsv`, `exports/env.txt`, `exports/profile.log`: "
        "what the device script recorded.",
    ]
    (HERE / "README.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
