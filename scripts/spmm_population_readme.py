"""Unpack what scripts/device_spmm_population.sh returned and write the results folder's README
from those files alone (no number typed by hand).

    python scripts/spmm_population_readme.py FETCHED DEST --title T [--note N] [--targets]

FETCHED holds env.txt, command.txt, summary.json / summary.txt (spmm_population_summary.py),
results.json.gz, bundle.tgz (sweep.json, sweep.log, the sweep's report) and optionally
pytest_gpu.log and model_score.txt / .json (spmm_model_score.py: the SpMM model's error and
auto's regret, quoted as written). ``--targets``: report issue 18's targets (geomean >= 1.3x
a k, no case below 0.95x) as met or missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tarfile
from pathlib import Path

COPIED = ("env.txt", "command.txt", "summary.json", "summary.txt", "results.json.gz",
          "pytest_gpu.log", "model_score.txt", "model_score.json")


def unpack(fetched: Path, dest: Path, lean: bool = False) -> None:
    """Copy FETCHED's files into DEST and extract the sweep's log, report, figures and tables
    (``lean``: the log and report only -- the device tool carries at most 64 MiB of tree)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in COPIED:
        if (fetched / name).exists():
            shutil.copy(fetched / name, dest / name)
    extra = () if lean else ("sweep/figures/", "sweep/tables/")
    with tarfile.open(fetched / "bundle.tgz") as tar:
        keep = [m for m in tar.getmembers()
                if m.name in ("sweep.log", "sweep/report.md") or (
                    extra and m.name.startswith(extra))]
        tar.extractall(dest, members=keep, filter="data")


def readme(dest: Path, title: str, note: str, targets: bool,
           wheels: str = ".device-wheels") -> str:
    s = json.loads((dest / "summary.json").read_text())
    env = (dest / "env.txt").read_text().strip()
    command = (dest / "command.txt").read_text().strip()
    lines = [f"# {title}", "", note, "", "## How it was made", "",
             "On the lent GPU (device tool), from the repository root, carry "
             f"`[\"{wheels}\", \"out/spmm-pop\"]` (the sweep's store between parts):", "",
             "```", "bash scripts/device_spmm_population.sh ...", command, "```", "",
             "```", env, "```", "",
             f"- {s['cases']} cases in `results.json.gz`; {len(s['rows'])} (matrix, k, layout) "
             "triples where our `spmm-cuda-auto` and at least one cuSPARSE configuration "
             "(`spmm-torch-i32`, `spmm-cupy-i32`) both ran: speedup = the fastest library "
             "median / auto's median (CUDA events, L2 flushed when the working set fits, every "
             "output checked against float64 first).", "",
             "## Our auto kernel against the best cuSPARSE configuration", "",
             "| k | layout | triples | geomean | min | below 0.95x |",
             "|---|---|---:|---:|---:|---:|"]
    for t in s["table"]:
        lines.append(f"| {t['k']} | {t['layout']} | {t['cases']} | {t['geomean']:.3f} | "
                     f"{t['min']:.3f} | {t['below_0_95']} |")
    if targets:
        per_k = [t for t in s["table"] if t["k"] != "all"]
        met = [t for t in per_k if t["geomean"] >= 1.3]
        low = sum(t["below_0_95"] for t in per_k)
        lines += ["", f"Issue 18's targets: geomean >= 1.3x in {len(met)} of {len(per_k)} "
                      f"(k, layout) groups; {low} triples below 0.95x (target: none)."]
    chosen: dict[str, int] = {}
    for r in s["rows"]:
        chosen[r["auto_chose"]] = chosen.get(r["auto_chose"], 0) + 1
    lines += ["", "Kernels auto ran: " + ", ".join(f"{k} {v}" for k, v in sorted(chosen.items()))
              + ".", "", "## Below 0.95x", "",
              "| matrix | k | layout | speedup | auto ran | auto (ms) | library | library (ms) |"
              " fastest own fixed kernel | its ms |",
              "|---|---:|---|---:|---|---:|---|---:|---|---:|"]
    for r in sorted(s["rows"], key=lambda r: r["speedup"]):
        if r["speedup"] >= 0.95:
            break
        own = r["fastest_own_ms"]
        lines.append(f"| {r['matrix']} | {r['k']} | {r['layout']} | {r['speedup']:.3f} | "
                     f"{r['auto_chose']} | {r['auto_ms']:.4f} | {r['library']} | "
                     f"{r['library_ms']:.4f} | {r['fastest_own'] or '-'} | "
                     f"{'-' if own is None else f'{own:.4f}'} |")
    if (dest / "model_score.txt").exists():
        lines += ["", "## The SpMM time model and auto's choice", "",
                  "`scripts/spmm_model_score.py results.json.gz` (each own case's prediction, "
                  "stored before it was timed):", "", "```",
                  (dest / "model_score.txt").read_text().strip(), "```"]
    if (dest / "pytest_gpu.log").exists():
        last = (dest / "pytest_gpu.log").read_text().strip().splitlines()[-1]
        lines += ["", f"GPU tests of the SpMM kernels on this machine before the sweep: `{last}`."]
    tables = " and `sweep/tables/`" if (dest / "sweep" / "tables").exists() else ""
    lines += ["", "## Files", "", "`results.json.gz` (every case), `summary.json` / "
              "`summary.txt` (`scripts/spmm_population_summary.py`), `sweep/report.md`"
              f"{tables} (the sweep's collection report), `sweep.log`, `env.txt`, "
              "`command.txt`.", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fetched", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--title", required=True)
    parser.add_argument("--note", default="")
    parser.add_argument("--targets", action="store_true")
    parser.add_argument("--lean", action="store_true",
                        help="keep the sweep's log and report, not its figures and tables")
    parser.add_argument("--wheels", default=".device-wheels",
                        help="the wheel folder the parts carried (.device-wheels-min: the five "
                             "wheels an in-process sweep needs)")
    args = parser.parse_args()
    unpack(args.fetched, args.dest, args.lean)
    (args.dest / "README.md").write_text(readme(args.dest, args.title, args.note, args.targets,
                                                    args.wheels))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
