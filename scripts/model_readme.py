"""Unpack what scripts/device_model.sh returned and write the committed run's README from it.

    python scripts/model_readme.py FETCHED_DIR results/h200/model --target-median 15

FETCHED_DIR holds the device files (env.txt, run.log, results.json, report.md, show.json,
show.txt, report_bundle.tar.gz, optionally pytest_gpu.log). The bundle (report.html, figures/,
tables/, ceilings.json) is unpacked into DEST, the other files copied, and DEST/README.md is
written from those files alone: no number is typed by hand. ``--target-median`` /
``--target-p90``: the issue's targets for |prediction error|, each reported as met or missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tarfile
from collections import defaultdict
from pathlib import Path

FILES = ("env.txt", "run.log", "results.json", "report.md", "show.json", "show.txt",
         "pytest_gpu.log")


def unpack(fetched: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in FILES:
        if (fetched / name).exists():
            shutil.copy(fetched / name, dest / name)
    with tarfile.open(fetched / "report_bundle.tar.gz") as tar:
        tar.extractall(dest, filter="data")


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summary(data: dict) -> dict:
    cases = [c for c in data["cases"] if c["outcome"] == "ok" and c.get("measurement")]
    scored = [c for c in cases if (c.get("prediction") or {}).get("error_pct") is not None]
    errors = sorted(abs(c["prediction"]["error_pct"]) for c in scored)
    by_backend: dict[str, list[float]] = defaultdict(list)
    limiters: dict[str, int] = defaultdict(int)
    for c in scored:
        by_backend[c["backend"]].append(c["prediction"]["error_pct"])
        limiters[c["prediction"]["limiter"]] += 1
    above = [c for c in cases if (c.get("model") or {}).get("above_peak")]
    return {"timed": len(cases), "scored": scored, "errors": errors, "by_backend": by_backend,
            "limiters": dict(limiters), "above": above}


def verdict(value: float, target: float | None) -> str:
    if target is None:
        return ""
    return f" (target <= {target:g} %: {'met' if value <= target else 'missed'})"


def readme(dest: Path, name: str, target_median: float | None, target_p90: float | None) -> str:
    data = json.loads((dest / "results.json").read_text())
    s = summary(data)
    env = (dest / "env.txt").read_text().strip()
    ceilings = data["ceilings"]
    errs = s["errors"]
    median, p90 = statistics.median(errs), percentile(errs, 0.9)
    signed = statistics.median(c["prediction"]["error_pct"] for c in s["scored"])
    worst = sorted(s["scored"], key=lambda c: -abs(c["prediction"]["error_pct"]))[:10]
    lines = [
        f"# {name}",
        "",
        "The time model scored against the measurement (issue 14): every case of a full-scale "
        "`sparsescope run --suite seed6 --backend all` predicted before it was timed (terms, "
        "limiter, kernel shape from SASS where the compiler was at hand) and its signed error "
        "stored, `(measured - predicted) / measured x 100`.",
        "",
        "## How it was made",
        "",
        "On the lent GPU (device tool), from the repository root, with "
        "`carry=[\".device-wheels\"]`:",
        "",
        "```",
        "bash scripts/device_model.sh --repeats 30 [--gpu-tests]",
        "python scripts/model_readme.py FETCHED " + str(dest) + " ...",
        "```",
        "",
        f"- run id `{data['run_id']}`, created {data['provenance']['created_utc']}, command "
        f"`{data['provenance']['command']}`, commit {data['provenance'].get('git_commit')}",
        f"- device {data['provenance']['device']}, driver {data['provenance']['driver']}",
        "- env.txt:",
        "",
        "```",
        env,
        "```",
        "",
        "## The rates the model read (measured on this device by the run)",
        "",
        "| figure | value |",
        "|---|---:|",
    ]
    for key in ("read_bw_gb_s", "copy_bw_gb_s", "l2_bw_gb_s", "l2_write_bw_gb_s",
                "dram_latency_ns",
                "l2_latency_ns", "dram_gather_gsectors_s", "l2_gather_gsectors_s",
                "launch_us", "fp32_gflops"):
        if ceilings.get(key) is not None:
            lines.append(f"| {key} | {ceilings[key]:,.2f} |")
    lines += [
        "",
        f"L2 size used by the model: {data['device']['l2_bytes']:,} B "
        f"({data['device']['sources'].get('l2_bytes', '')}).",
        "",
        "## Prediction against measurement",
        "",
        f"- timed cases {s['timed']}, predicted and scored {len(s['scored'])}",
        f"- median |error| {median:.1f} %{verdict(median, target_median)}; "
        f"90th percentile {p90:.1f} %{verdict(p90, target_p90)}; signed median {signed:+.1f} % "
        "(positive: the cases ran slower than predicted)",
        "- limiters: " + ", ".join(f"{k} {v}" for k, v in sorted(s["limiters"].items())),
        f"- cases above 100 % of a bandwidth by their own traffic: {len(s['above'])}"
        + "".join(f"; {c['matrix']} [{c['backend']}]: {c['model']['above_peak']}"
                  for c in s["above"]),
        "",
        "Median signed error by backend:",
        "",
        "| backend | cases | median signed error (%) | median abs error (%) |",
        "|---|---:|---:|---:|",
    ]
    for backend, values in sorted(s["by_backend"].items(),
                                  key=lambda kv: statistics.median(map(abs, kv[1]))):
        lines.append(f"| {backend} | {len(values)} | {statistics.median(values):+.1f} | "
                     f"{statistics.median(map(abs, values)):.1f} |")
    lines += ["", "The ten largest errors:", "",
              "| matrix | backend | measured (ms) | predicted (ms) | error (%) | limiter |",
              "|---|---|---:|---:|---:|---|"]
    for c in worst:
        p = c["prediction"]
        measured = statistics.median(c["measurement"]["samples_ms"])
        lines.append(f"| {c['matrix']} | {c['backend']} | {measured:.4f} | "
                     f"{p['predicted_ms']:.4f} | {p['error_pct']:+.1f} | {p['limiter']} |")
    if (dest / "pytest_gpu.log").exists():
        tail = (dest / "pytest_gpu.log").read_text().strip().splitlines()[-1]
        lines += ["", f"GPU tests on this machine before the run: `{tail}`."]
    lines += ["", "## Files", "",
              "`results.json` (RunSet; every case's `prediction`), `report.md` / `report.html` "
              "(section 3 leads with predicted against measured; section 4 checks seed 000's "
              "claims), `figures/predicted_vs_measured.png`, `tables/`, `ceilings.json`, "
              "`show.json` / `show.txt` (`sparsescope results show`), `run.log`, `env.txt`.", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fetched", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--name", default=None)
    parser.add_argument("--target-median", type=float)
    parser.add_argument("--target-p90", type=float)
    parser.add_argument("--note", default="", help="a paragraph added under 'How it was made'")
    args = parser.parse_args(argv)
    unpack(args.fetched, args.dest)
    text = readme(args.dest, args.name or str(args.dest), args.target_median, args.target_p90)
    if args.note:
        text = text.replace("\n## The rates", f"\n{args.note}\n\n## The rates", 1)
    (args.dest / "README.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
