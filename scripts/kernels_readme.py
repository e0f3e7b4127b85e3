"""Write a results folder for a seed6 kernel-selection run (``scripts/device_kernels.sh --set
selection``, possibly split over device calls with ``--suite 'seed6#A,B'``) from the fetched
device folders, with a README whose every number is read from the runs' own files:

    python scripts/kernels_readme.py DEST --part FETCHED1 [--part FETCHED2 ...] \\
        --title "H200" [--note "..."]

Each part's ``results.json`` is stored gzipped (``sparsescope results show`` reads
``results.json.gz``) with its ``env.txt``, ``show.txt`` and ``run.log``. The README scores
``cuda-spmv-auto`` (by prediction, near-ties timed) and ``cuda-spmv-auto-rules`` against the
fastest own kernel variant of the run (their regret), the fastest-predicted candidate alone
(the model's own ranking), and both against the best cuSPARSE configuration.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.backends.spmv_auto import CHOICES  # noqa: E402
from sparsescope.backends.variants import SPMV_OWN  # noqa: E402
from sparsescope.registry import is_own  # noqa: E402

AUTO, RULES = "cuda-spmv-auto", "cuda-spmv-auto-rules"


def median_ms(case: dict) -> float:
    return statistics.median(case["measurement"]["samples_ms"])


def variant_of(backend: str, params: dict) -> str | None:
    """The run's label of the variant that is this candidate (same backend and options, the
    variants' ``hint`` 1 being the kernels' default)."""
    cls = CHOICES.get(backend)
    if cls is None:
        return None
    wanted = {**cls.defaults, **params}
    for label, (name, options) in SPMV_OWN.items():
        if name == backend and {**cls.defaults, **options} == wanted:
            return f"{name}[{label}]"
    return None


def score(cases: list[dict]) -> list[dict]:
    """One row per matrix: best own variant, auto, auto-rules, the fastest prediction alone,
    best library, with times in us."""
    by: dict[str, dict[str, dict]] = {}
    for c in cases:
        if c["outcome"] == "ok":
            by.setdefault(c["matrix"], {})[c["backend"]] = c
    rows = []
    for matrix, found in by.items():
        times = {b: median_ms(c) * 1e3 for b, c in found.items()}
        own = {b: t for b, t in times.items() if is_own(b) and b not in (AUTO, RULES)}
        lib = {b: t for b, t in times.items() if not is_own(b)}
        best_own = min(own, key=own.get)
        best_lib = min(lib, key=lib.get)
        notes = found[AUTO]["notes"]
        table = json.loads(notes.get("selection_table", "[]"))
        done = [r for r in table if r["predicted_ms"] is not None]
        first = min(done, key=lambda r: r["predicted_ms"]) if done else None
        first_label = variant_of(first["backend"], first["params"]) if first else None
        rows.append({
            "matrix": matrix, "best_own": best_own, "best_own_us": own[best_own],
            "auto_us": times[AUTO], "auto_choice": notes["selected"],
            "auto_params": notes.get("selected_params", ""), "auto_rule": notes["selection_rule"],
            "rules_us": times.get(RULES), "rules_choice": found[RULES]["notes"]["selected"]
            if RULES in found else "",
            "predicted_first": first["label"] if first else "",
            "predicted_first_us": times.get(first_label) if first_label else None,
            "candidates": len(table), "best_lib": best_lib, "best_lib_us": lib[best_lib],
            "reason": notes["selection_reason"]})
    return rows


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def pct(a: float | None, b: float) -> str:
    return f"{100 * (a / b - 1):+.1f} %" if a else "n/a"


def readme(title: str, note: str, parts: list[Path], rows: list[dict], commands: list[str],
           matrices: str = "the seed6 analogs") -> str:
    env = (parts[0] / "env.txt").read_text().strip()
    auto_x = [r["best_lib_us"] / r["auto_us"] for r in rows]
    regret = {name: [r[key] / r["best_own_us"] for r in rows if r[key]]
              for name, key in (("auto", "auto_us"), ("auto-rules", "rules_us"),
                                ("the fastest prediction alone", "predicted_first_us"))}
    lines = [
        f"# {title}: kernel selection on {matrices}",
        "",
        "`cuda-spmv-auto` chooses by predicted time on the present device "
        "(`backends/select_predicted.py`): every candidate planned and predicted with the "
        "run's measured ceilings and the kernels' SASS, the candidates the model cannot rank "
        "apart (within its error) timed on the device. `cuda-spmv-auto-rules` applies the "
        "statistics rules fitted to H200 sweeps. Both are scored against the fastest own "
        "kernel variant of the same run (the variant set named in the command: `selection` is "
        "every candidate auto can choose and the rest of the seed6 sweep, `auto-candidates` "
        "exactly auto's candidates) and against the best cuSPARSE configuration "
        "(torch INT64 / INT32, CuPy INT32).",
        "",
        "## How it was made",
        "",
        "On the lent GPU (device tool), from the repository root, with "
        "`carry=[\".device-wheels\"]`, one call per part:",
        "",
        "```",
        *commands,
        f"python scripts/kernels_readme.py DEST {' '.join('--part ' + p.name for p in parts)}",
        "```",
        "",
        "- env.txt (first part):",
        "",
        "```",
        env,
        "```",
        "",
    ]
    if note:
        lines += [note, ""]
    lines += [
        "## Selection against the fastest own kernel, and against cuSPARSE",
        "",
        "| matrix | fastest own variant | us | auto | us | regret | rule | auto-rules regret "
        "| fastest prediction alone: regret | best cuSPARSE | us | auto speedup |",
        "|---|---|---:|---|---:|---:|---|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['matrix']} | {r['best_own']} | {r['best_own_us']:,.1f} | "
            f"{r['auto_choice']} {r['auto_params']} | {r['auto_us']:,.1f} | "
            f"{pct(r['auto_us'], r['best_own_us'])} | {r['auto_rule']} | "
            f"{pct(r['rules_us'], r['best_own_us'])} | "
            f"{pct(r['predicted_first_us'], r['best_own_us'])} ({r['predicted_first']}) | "
            f"{r['best_lib']} | {r['best_lib_us']:,.1f} | "
            f"{r['best_lib_us'] / r['auto_us']:.2f}x |")
    worst = max(rows, key=lambda r: r["auto_us"] / r["best_own_us"])
    lowest = min(rows, key=lambda r: r["best_lib_us"] / r["auto_us"])
    rules_worst = max((r for r in rows if r["rules_us"]),
                      key=lambda r: r["rules_us"] / r["best_own_us"])
    lines += [
        "",
        f"- auto's largest regret: {pct(worst['auto_us'], worst['best_own_us'])} "
        f"({worst['matrix']}); auto-rules': "
        f"{pct(rules_worst['rules_us'], rules_worst['best_own_us'])} "
        f"({rules_worst['matrix']}).",
        "- Geomean regret over the " + f"{len(rows)} matrices: " + "; ".join(
            f"{name} {pct(geomean(v), 1.0)} ({len(v)} matrices)" for name, v in regret.items()
            if v) + ".",
        f"- Matrices where auto is slower than the best cuSPARSE configuration: "
        f"{sum(x < 1 for x in auto_x)} of {len(rows)}"
        + (" (" + ", ".join(f"{r['matrix']} {r['best_lib_us'] / r['auto_us']:.2f}x"
                            for r in rows if r["best_lib_us"] < r["auto_us"]) + ")"
           if any(x < 1 for x in auto_x) else "") + ".",
        f"- auto over the best cuSPARSE configuration: {geomean(auto_x):.2f}x geomean, "
        f"lowest {min(auto_x):.2f}x ({lowest['matrix']}).",
        "- Regret is (auto - fastest own variant) / fastest own variant, both medians of the "
        "same run: a negative regret is run-to-run noise of two timings of one kernel.",
        "",
        "## Why each choice (the case's `selection_reason`, verbatim)",
        "",
    ]
    for r in rows:
        lines += [f"- **{r['matrix']}** ({r['candidates']} candidates): {r['reason']}", ""]
    lines += [
        "## Files",
        "",
        "Per part (`" + "`, `".join(p.name for p in parts) + "`): `results.json.gz` (RunSet: "
        "every case with raw samples, its prediction, auto's `selection_table`), `show.txt` "
        "(`sparsescope results show`), `run.log`, `env.txt`.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--part", type=Path, action="append", required=True,
                    help="a fetched device folder (results.json, env.txt, show.txt, run.log)")
    ap.add_argument("--title", required=True)
    ap.add_argument("--note", default="")
    ap.add_argument("--matrices", default="the seed6 analogs",
                    help="what the run's matrices are, for the README's title")
    args = ap.parse_args(argv)
    cases, commands, stored = [], [], []
    for i, part in enumerate(args.part, 1):
        data = json.loads((part / "results.json").read_text())
        cases += data["cases"]
        command = data["provenance"].get("command", "")
        commit = data["provenance"].get("git_commit", "")
        commands.append(f"# part {i}: commit {commit}, run {data['run_id']}, "
                        f"{data['provenance'].get('created_utc', '')}\n{command}")
        out = args.dest / f"part{i}"
        out.mkdir(parents=True, exist_ok=True)
        with gzip.open(out / "results.json.gz", "wt", encoding="utf-8") as f:
            json.dump(data, f)
        for name in ("env.txt", "show.txt", "run.log"):
            if (part / name).exists():
                shutil.copy(part / name, out / name)
        stored.append(out)
    rows = score(cases)
    (args.dest / "README.md").write_text(readme(args.title, args.note, stored, rows, commands,
                                                   args.matrices))
    (args.dest / "selection.json").write_text(json.dumps(rows, indent=1))
    print((args.dest / "README.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
