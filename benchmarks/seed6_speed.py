"""The seed6 main job before and after (issue 35: ``run --suite seed6 --backend all`` at full
scale, 313 s on an H200 -> <= 90 s), from one device sitting.

    bash scripts/device.sh seed6-speed            # on the GPU machine (both trees, one call)
    python benchmarks/seed6_speed.py --table DIR --write benchmarks/results/seed6_speed.md

``DIR`` holds what the recipe wrote: ``env.txt``, ``timings.txt`` (each command's wall and
exit status) and ``{before,after}_results.json.gz`` (``.json.xz`` once compacted, as the
committed folders keep them). The table puts side by side, per stage
(``sparsescope.stages``), the seconds of each run's own stage clock; then the prepare seconds
per backend, where the time was; then that the two runs measured the same thing: the same
cases, their outcomes, and the after/before ratio of each case's median time (the machine's
noise, not a change of what is timed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from sparsescope.api import read_json

LABELS = ("before", "after")


def load(folder: Path) -> dict:
    """{label: results dict} of the runs in ``folder``, and the recipe's text files."""
    runs = {}
    for label in LABELS:
        names = (folder / f"{label}_results{suffix}" for suffix in (".json.xz", ".json.gz"))
        path = next((p for p in names if p.exists()), None)
        if path is not None:
            runs[label] = read_json(path)
    text = {name: (folder / name).read_text() if (folder / name).exists() else ""
            for name in ("env.txt", "timings.txt")}
    return {"runs": runs, **text}


def command_walls(timings: str) -> dict[str, tuple[str, str]]:
    """{label: (exit status, wall s)} from the recipe's ``timings.txt`` lines
    ``LABEL_rc N LABEL_wall_s S``."""
    out = {}
    for line in timings.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0].endswith("_rc"):
            out[parts[0][:-3]] = (parts[1], parts[3])
    return out


def stage_rows(runs: dict) -> list[str]:
    from sparsescope.stages import LABELS as STAGE_LABELS
    from sparsescope.stages import OTHER, STAGES

    rows = ["| stage | " + " | ".join(f"{label} (s)" for label in runs) + " |",
            "| --- |" + " ---: |" * len(runs)]
    walls = [f"**{r['stages']['wall_s']:.1f}**" for r in runs.values()]
    rows.append("| **the run's own clock** | " + " | ".join(walls) + " |")
    for name in (*STAGES, OTHER):
        cells = [f"{r['stages']['seconds'].get(name, 0.0):.1f}" for r in runs.values()]
        rows.append(f"| {STAGE_LABELS[name]} | " + " | ".join(cells) + " |")
    return rows


def prepare_by_backend(runs: dict) -> list[str]:
    sums: dict[str, dict[str, float]] = {}
    for label, r in runs.items():
        for case in r["cases"]:
            seconds = (case.get("stages") or {}).get("seconds", {})
            cell = sums.setdefault(case["backend"], {})
            cell[label] = cell.get(label, 0.0) + seconds.get("prepare", 0.0)
    order = sorted(sums, key=lambda b: -max(sums[b].values()))
    rows = ["| backend | " + " | ".join(f"prepare {label} (s)" for label in runs) + " |",
            "| --- |" + " ---: |" * len(runs)]
    for backend in order:
        rows.append(f"| `{backend}` | " + " | ".join(f"{sums[backend].get(label, 0.0):.1f}"
                                                   for label in runs) + " |")
    return rows


def _median_ms(case: dict) -> float | None:
    samples = (case.get("measurement") or {}).get("samples_ms") or []
    return statistics.median(samples) if samples else None


def same_measurement(runs: dict) -> list[str]:
    if len(runs) < 2:
        return ["(one run only)"]
    before, after = (runs[label] for label in LABELS)

    def key(c):
        return (c["matrix"], c["backend"], json.dumps(c.get("params"), sort_keys=True))

    b = {key(c): c for c in before["cases"]}
    a = {key(c): c for c in after["cases"]}
    outcomes = {label: {} for label in LABELS}
    for label, cases in (("before", b), ("after", a)):
        for c in cases.values():
            outcomes[label][c["outcome"]] = outcomes[label].get(c["outcome"], 0) + 1
    ratios = []
    for k in sorted(set(a) & set(b)):
        mb, ma = _median_ms(b[k]), _median_ms(a[k])
        if mb and ma:
            ratios.append(ma / mb)
    lines = [f"- cases: before {len(b)}, after {len(a)}, in both {len(set(a) & set(b))}; "
             f"outcomes before {outcomes['before']}, after {outcomes['after']}"]
    if ratios:
        ratios.sort()
        lines.append(f"- each case's median time, after / before ({len(ratios)} cases): "
                     f"median {statistics.median(ratios):.3f}, range "
                     f"{ratios[0]:.3f}-{ratios[-1]:.3f}, p10-p90 "
                     f"{ratios[len(ratios) // 10]:.3f}-{ratios[9 * len(ratios) // 10]:.3f}")
    return lines


def table(folder: Path) -> str:
    data = load(folder)
    runs = data["runs"]
    walls = command_walls(data["timings.txt"])
    out = ["# seed6 at full scale, `--backend all`: before and after (issue 35)", "",
           f"Written by `python benchmarks/seed6_speed.py --table {folder}` from the files "
           "`bash scripts/device.sh seed6-speed` returned; both runs in one device call, one "
           "after the other, each with cold caches of its own.", "", "```",
           data["env.txt"].strip(), "```", "",
           "| run | exit | command wall (s) |", "| --- | ---: | ---: |"]
    out += [f"| {label} | {rc} | {wall} |" for label, (rc, wall) in walls.items()]
    out += ["", "## Where the time went (each run's stage clock)", ""] + stage_rows(runs)
    out += ["", "## Prepare / pack by backend", ""] + prepare_by_backend(runs)
    out += ["", "## The same measurement", ""] + same_measurement(runs)
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, required=True,
                        help="the folder the seed6-speed recipe wrote")
    parser.add_argument("--write", type=Path, help="write the Markdown here")
    args = parser.parse_args(argv)
    text = table(args.table)
    if args.write:
        args.write.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
