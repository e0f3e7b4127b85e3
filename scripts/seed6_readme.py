"""Unpack what scripts/device_seed6.sh returned and write the committed run's README from it.

    python scripts/seed6_readme.py FETCHED_DIR results/h200/seed6

FETCHED_DIR holds the device files (seed6.tar.gz, versions.txt, timings.txt, compare.json,
show.json, run_a.log, run_b.log). The report folder (results.json, report.md, report.html,
figures/, tables/) is unpacked into DEST, the second run's results.json and the raw files into
DEST/raw/, and DEST/README.md is written from those files alone: no number is typed by hand.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

RAW_FILES = ("versions.txt", "timings.txt", "compare.json", "show.json", "run_a.log",
             "run_b.log")


def key_values(path: Path) -> dict[str, str]:
    """``key: value`` lines up to the first ``---`` line."""
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("---"):
            break
        key, sep, value = line.partition(": ")
        if sep:
            out[key.strip()] = value.strip()
    return out


def unpack(fetched: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "raw").mkdir(parents=True)
    with tarfile.open(fetched / "seed6.tar.gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = Path(member.name).parts
            if parts[0] == "seed6":
                target = dest.joinpath(*parts[1:])
            elif parts == ("seed6_b", "results.json"):
                target = dest / "raw" / "results_b.json"
            else:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
    for name in RAW_FILES:
        text = (fetched / name).read_bytes().decode()  # keep \r: progress bars
        if name.endswith(".log"):  # keep what a terminal would show last: no progress bars
            lines = (line.split("\r")[-1].strip() for line in text.split("\n"))
            text = "\n".join(line for line in lines if line) + "\n"
        (dest / "raw" / name).write_text(text)


def md_table(header: list[str], rows: list[list[str]], right: range | None = None) -> str:
    """A Markdown table; columns in ``right`` (default: from the third on) right-aligned."""
    right = range(2, len(header)) if right is None else right
    align = ["---:" if i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def git_head(repo: Path) -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True,
                         text=True, check=False)
    return out.stdout.strip() or "unknown"


def readme(dest: Path, repo: Path) -> str:
    results = json.loads((dest / "results.json").read_text())
    raw = dest / "raw"
    versions = key_values(raw / "versions.txt")
    timings = key_values(raw / "timings.txt")
    compare = json.loads((raw / "compare.json").read_text())
    show = json.loads((raw / "show.json").read_text())
    seed = json.loads((dest / "tables" / "seed_comparison.json").read_text())
    prov, timing, ceil = results["provenance"], results["timing"], results["ceilings"]
    libs = prov["libraries"]
    s = compare["summary"]
    within_pct = 100 * s["within"]
    case = s["max_spread_case"]
    flush = {True: "on", False: "off", None: "auto (when the working set fits in L2)"}
    out = [
        f"# seed6 on an {versions['gpu']}: every GPU backend, run twice back to back",
        "",
        "Written by `scripts/seed6_readme.py` from the files the device run returned "
        "(`raw/`); no number here is typed by hand.",
        "",
        "## What ran",
        "",
        "On the lent device machine, `scripts/device_seed6.sh` ran, from the repository root:",
        "",
        "```",
        "PYTHONPATH=src SPARSESCOPE_STORE=$OUT/store.sqlite \\",
        "  python3 -m sparsescope run --suite seed6 --backend all --out $WORK/seed6",
        "# then the same command with --out $WORK/seed6_b, and",
        "python3 -m sparsescope results compare $WORK/seed6/results.json "
        "$WORK/seed6_b/results.json --json",
        "python3 -m sparsescope results show $WORK/seed6/results.json --json",
        "```",
        "",
        f"The provenance of `results.json` records `{prov['command']}`.",
        "",
        md_table(["Item", "Value"], [
            ["Date (UTC)", f"{versions['date_utc']} (run A started {prov['created_utc']})"],
            ["GPU", versions["gpu"]],
            ["Driver", versions["driver"]],
            ["CUDA", f"driver API {versions['cuda_driver_api']}; PyTorch built for "
                     f"{versions['torch_cuda']}; CuPy runtime {versions['cupy_cuda_runtime']}; "
                     f"nvcc {versions['nvcc']}"],
            ["PyTorch", versions["torch"]],
            ["CuPy", versions["cupy"]],
            ["cuSPARSE", f"{libs.get('cusparse (torch wheel)', '?')} (PyTorch wheel); "
                         f"{libs.get('cusparse (cupy)', '?')} (CuPy)"],
            ["Python, NumPy, SciPy", f"{versions['python']}, {versions['numpy']}, "
                                     f"{versions['scipy']}"],
            ["sparsescope", f"{prov['sparsescope_version']}: the working tree on commit "
                            f"{git_head(repo)} plus its uncommitted changes, issue 3's "
                            f"included (the device copy has no .git, so the provenance says "
                            f"`{prov['git_commit']}`)"],
            ["Timing protocol", f"{timing['warmups']} warm-ups, {timing['repeats']} repeats, "
                                f"{timing['statistic']}, clock `{timing['clock']}`, L2 flush "
                                f"{flush[timing['flush_l2']]}"],
            ["Measured copy bandwidth", f"{ceil['copy_bw_gb_s']:,.0f} GB/s (read + write)"],
            ["Measured DRAM latency", f"{ceil['dram_latency_ns']:,.0f} ns (pointer chase)"],
        ], right=range(0)),
        "",
        f"The six matrices are the `seed6` suite: generated analogs of the seed's SuiteSparse "
        f"matrices with their exact rows and nonzeros ({len(results['matrices'])} matrices, "
        f"{len(results['cases'])} cases, "
        f"{sum(c['outcome'] == 'ok' for c in results['cases'])} ok).",
        "",
        "## Whole-suite wall time",
        "",
        f"Run A took **{timings['run_a_wall_s']} s** and run B {timings['run_b_wall_s']} s "
        f"(exit status {timings['run_a_rc']} and {timings['run_b_rc']}): generating the six "
        "matrices, measuring the GPU ceilings, checking and timing all five backends on each, "
        "writing results, the store entry and the report.",
        "",
        "## Back-to-back repeatability (run A against run B)",
        "",
        f"Spread = |a - b| / min(a, b) of the two medians. Largest: "
        f"**{100 * s['max_spread']:.1f} %** ({case['matrix']}, {case['backend']}); median "
        f"{100 * s['median_spread']:.2f} %; {s['counts']['agree']} of {s['compared']} rows "
        f"within {within_pct:.0f} %. Every row agrees within {within_pct:.0f} %: "
        f"**{'yes' if s['all_within'] else 'no'}**.",
        "",
        md_table(["Matrix", "Backend", "A median (ms)", "B median (ms)", "B / A", "Spread (%)",
                  "Status"],
                 [[r["matrix"], r["backend"], f"{r['median_a_ms']:.4f}",
                   f"{r['median_b_ms']:.4f}", f"{r['ratio_b_over_a']:.3f}",
                   f"{100 * r['spread']:.1f}", r["status"]] for r in compare["rows"]],
                 right=range(2, 6)),
        "",
        "## Against the seed's published H200 numbers (seed 000, section 3.1)",
        "",
        "torch.sparse.mm with INT64 indices (`torch-cusparse-i64`), run A's medians; both "
        "bandwidths count INT64 indices and y written only.",
        "",
        md_table(["Matrix", "Seed (ms)", "Ours (ms)", "Ours / seed", "Seed eff. BW (GB/s)",
                  "Our eff. BW (GB/s)", "Seed % of 4,800", "Our % of 4,800"],
                 [[r["matrix"], f"{r['seed_time_ms']:.4f}", f"{r['time_ms']:.4f}",
                   f"{r['ratio_x']:.2f}x", f"{r['seed_eff_bw_gb_s']:,.0f}",
                   f"{r['eff_bw_gb_s']:,.0f}", f"{r['seed_pct_of_peak_bw']:.1f}",
                   f"{r['pct_of_peak_bw']:.1f}"] for r in seed["rows"]], right=range(1, 8)),
        "",
        f"From the report (`tables/seed_comparison.json`): {seed['reading']}",
        "",
        "## Fastest backend per matrix",
        "",
        f"`sparsescope results show` (run A): one byte model for every backend (INT32 indices, "
        f"y written), as % of the measured copy bandwidth {show['copy_bw_gb_s']:,.0f} GB/s.",
        "",
    ]
    best: dict[str, dict] = {}
    for r in show["rows"]:
        if r["median_ms"] is not None and (r["matrix"] not in best
                                           or r["median_ms"] < best[r["matrix"]]["median_ms"]):
            best[r["matrix"]] = r
    out += [md_table(["Matrix", "Fastest backend", "Median (ms)", "Eff. BW, INT32 (GB/s)",
                      "% of copy"],
                     [[m, r["backend"], f"{r['median_ms']:.4f}", f"{r['eff_bw_gb_s']:,.0f}",
                       f"{r['pct_copy_bw']:.1f}"] for m, r in best.items()]),
            "",
            "## Files",
            "",
            "- `results.json`: run A (versioned; raw samples and kernel breakdowns kept).",
            "- `report.md`, `report.html` (self-contained), `figures/*.png`, `tables/*.json`: "
            "run A's report.",
            "- `raw/results_b.json`: run B; `raw/compare.json`, `raw/show.json`: the two "
            "commands above; `raw/versions.txt`, `raw/timings.txt`, `raw/run_a.log`, "
            "`raw/run_b.log`: what the device script recorded.",
            "",
            "Re-check the spread here: `sparsescope results compare results.json "
            "raw/results_b.json`.",
            ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    fetched, dest = Path(argv[1]), Path(argv[2])
    repo = Path(__file__).resolve().parents[1]
    unpack(fetched, dest)
    (dest / "README.md").write_text(readme(dest, repo))
    print(f"wrote {dest / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
