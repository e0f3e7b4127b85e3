"""Write a results folder for ``scripts/device_profile_cases.sh`` (Nsight Compute profiles of
named cases) with a README whose numbers are read from the profiles' own raw CSV exports: per
case, the main kernel's time, DRAM bytes, L2 sectors and hit rate, L1 hit rate, warp
instructions, achieved occupancy and its top warp stalls, side by side.

    python scripts/profile_cases_readme.py FETCHED DEST --kernel REGEX --title T [--note N]

FETCHED holds the script's env.txt and profiles.tar.gz, with NAME.json (``sparsescope profile
run --json``) per case in the tar or beside it (the script's first version); DEST gets env.txt,
the JSON files, each case's raw CSV export gzipped and the README. ``--kernel``: which kernel
of a case's launches is its main one (the first match).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import re
import shutil
import tarfile
from pathlib import Path

METRICS = (
    ("time us", "gpu__time_duration.sum", 1e-3),
    ("DRAM read MB", "dram__bytes_read.sum", 1e-6),
    ("L2 sectors M", "lts__t_sectors.sum", 1e-6),
    ("L2 hit %", "lts__t_sector_hit_rate.pct", 1.0),
    ("L1 hit %", "l1tex__t_sector_hit_rate.pct", 1.0),
    ("warp instructions M", "smsp__inst_executed.sum", 1e-6),
    ("achieved occupancy %", "sm__warps_active.avg.pct_of_peak_sustained_active", 1.0),
    ("DRAM throughput %", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1.0),
)


def number(text: str) -> float:
    return float(text.replace(",", "")) if text.strip() else float("nan")


def main_kernel(raw_csv: str, pattern: str) -> dict[str, str] | None:
    """The first row of an ncu raw CSV export (header, units, rows) whose kernel name matches."""
    rows = list(csv.reader(io.StringIO(raw_csv)))
    header = rows[0]
    for row in rows[2:]:
        d = dict(zip(header, row, strict=False))  # ncu pads short rows
        if re.search(pattern, d.get("Kernel Name", "")):
            return d
    return None


def table(cases: dict[str, dict], stalls: dict[str, dict]) -> str:
    names = list(cases)
    lines = ["| metric | " + " | ".join(f"`{n}`" for n in names) + " |",
             "|---|" + "---:|" * len(names),
             "| kernel | " + " | ".join(cases[n].get("Kernel Name", "")[:40] for n in names)
             + " |"]
    for label, key, scale in METRICS:
        lines.append(f"| {label} | " + " | ".join(
            f"{number(cases[n].get(key, '')) * scale:,.1f}" for n in names) + " |")
    lines.append("| top stalls (cycles a warp instruction) | " + " | ".join(
        ", ".join(f"{k} {v:.1f}" for k, v in sorted(stalls[n].items(), key=lambda kv: -kv[1])[:3])
        for n in names) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fetched", type=Path)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--title", required=True)
    ap.add_argument("--note", default="")
    args = ap.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(args.fetched / "env.txt", args.dest / "env.txt")
    cases, stalls = {}, {}
    with tarfile.open(args.fetched / "profiles.tar.gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".json") and "/" not in \
                    member.name.removeprefix("./"):
                (args.dest / Path(member.name).name).write_bytes(
                    tar.extractfile(member).read())
            if not member.name.endswith("_raw.csv"):
                continue
            case = Path(member.name).parts[0]  # NAME/profile_..._raw.csv ("./" dropped)
            text = tar.extractfile(member).read().decode()
            row = main_kernel(text, args.kernel)
            if row is None:
                continue
            cases[case] = row
            with gzip.open(args.dest / f"{case}_raw.csv.gz", "wt") as f:
                f.write(text)
    for case in cases:
        if (args.fetched / f"{case}.json").exists():  # the first version kept it beside
            shutil.copy(args.fetched / f"{case}.json", args.dest / f"{case}.json")
        data = json.loads((args.dest / f"{case}.json").read_text())
        kernel = next((k for k in data["kernels"] if re.search(args.kernel, k["name"])), None)
        stalls[case] = {k: v for k, v in (kernel or {}).get("stalls", {}).items()
                        if k != "selected"}
    env = (args.fetched / "env.txt").read_text().strip()
    text = "\n".join([
        f"# {args.title}", "", *([args.note, ""] if args.note else []),
        "Per case, the main kernel (first launch matching "
        f"`{args.kernel}`) as ncu measured it (metric groups launch, occupancy, stalls, memory; "
        "caches flushed before each kernel, clocks left as found):", "",
        table(cases, stalls), "",
        "## How it was made", "",
        "On the lent GPU, from the repository root, carry `[\".device-wheels\"]`:", "",
        "```", "bash scripts/device_profile_cases.sh 'SUITE#MATRIX:OP:K:BACKEND' ...", "```",
        "",
        "one spec per case; a case is named MATRIX.OPK.BACKEND: " + ", ".join(
            f"`{c}`" for c in cases) + ".", "",
        "```", env, "```", "",
        "Files: `NAME.json` (`sparsescope profile run --json`: every launch, stalls, "
        "occupancy), `NAME_raw.csv.gz` (ncu's raw export, every metric of every launch).", ""])
    (args.dest / "README.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
