"""Write results/<gpu>/resample/README.md from what device_resample.sh produced.

    python examples/resample/scripts/write_readme.py RESULTS_DIR --command "..." [--env env.txt]

Reads ``series/scores.json`` (predicted and measured speedup of every step, the MAE),
``<version>/analysis.json`` of every version and of the PyTorch reference, and ``spmv/``; writes
the command, the date, the software versions, the step table and the final comparison.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

VERSIONS = ("naive", "smem", "vec", "warp", "ours")


def _load(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def _ms(x) -> str:
    return "-" if x is None else f"{x:.4f}"


def build(results: Path, command: str, env_text: str) -> str:
    series = _load(results / "series" / "scores.json") or {}
    analyses = {v: _load(results / v / "analysis.json") for v in (*VERSIONS, "pytorch")}
    first = next((a for a in analyses.values() if a), None)
    lines = ["# Seed 002 worked example: resample_trajectories_bf16, predicted then measured", "",
             f"Written {datetime.now(UTC).isoformat(timespec='seconds')} by "
             "`examples/resample/scripts/device_resample.sh`.", "",
             "## Command", "", "```", command, "```", ""]
    if first:
        ev = first["evidence"]
        lines += [f"Device: {ev['device']['name']} ({ev['device']['source']}); sparsescope "
                  f"{first['sparsescope_version']}, commit {first['git_commit']}.", ""]
    if env_text.strip():
        lines += ["## Environment", "", "```", env_text.strip(), "```", ""]
    lines += ["## Versions", "",
              "| version | time (ms) | floor (ms) | correct (rel. err.) | top roadmap item "
              "(predicted) |", "|---|---:|---:|---|---|"]
    for v in (*VERSIONS, "pytorch"):
        a = analyses[v]
        if a is None:
            lines.append(f"| {v} | not measured (see {v}.log) | | | |")
            continue
        ev = a["evidence"]
        c = ev.get("correctness") or {}
        top = a["roadmap"][0] if a["roadmap"] else None
        best = f"{top['rule']} {top['predicted_speedup']:.2f}x" if top else "-"
        ok = "yes" if c.get("passed") else "NO"
        lines.append(f"| {v} | {_ms(ev['time_ms'])} | {_ms(ev['floor_ms'])} | "
                     f"{ok} ({c.get('rel_err', float('nan')):.2g}) | {best} |")
    lines += ["", "## Every step: predicted before, measured after", "",
              "The prediction of step A -> B is the roadmap of A's analysis (written before B "
              "was run) for the rules B declares it addresses.", "",
              "| step | addresses | predicted | measured | abs. error |",
              "|---|---|---:|---:|---:|"]
    for s in series.get("scores", []):
        lines.append(f"| {s['before']} -> {s['after']} | {', '.join(s['applied'])} | "
                     f"{s['predicted_speedup']:.2f}x | {s['measured_speedup']:.2f}x | "
                     f"{s['abs_error']:.2f} |")
    if series.get("mae") is not None:
        lines += ["", f"Mean absolute error of the predictions: **{series['mae']:.3f}** "
                  "(speedup units)."]
    ref, last = analyses["pytorch"], analyses["ours"]
    if ref and last and ref["evidence"]["time_ms"] and last["evidence"]["time_ms"]:
        ratio = ref["evidence"]["time_ms"] / last["evidence"]["time_ms"]
        lines += ["", f"Final version against PyTorch (searchsorted + gather + lerp): "
                  f"{ref['evidence']['time_ms']:.4f} ms / {last['evidence']['time_ms']:.4f} ms "
                  f"= **{ratio:.2f}x** ({'faster' if ratio > 1 else 'SLOWER'})."]
    spmv = _load(results / "spmv" / "analysis.json")
    if spmv:
        top = spmv["roadmap"][0]["rule"] if spmv["roadmap"] else "-"
        lines += ["", "## The same command on an SpMV kernel of ours", "",
                  f"`csr_vector<float, int, 8>` (src/sparsescope/backends/kernels/spmv_csr.cu): "
                  f"{_ms(spmv['evidence']['time_ms'])} ms, bound: "
                  f"{', '.join(b['bound'] for b in spmv['bottlenecks'])}; top roadmap item: "
                  f"{top}. Report: `spmv/report.md`."]
    lines += ["", "## Files", "",
              "- `<version>/report.md|html`, `<version>/analysis.json`: each version's analysis "
              "(timing samples, ncu report and CSV exports, SASS evidence, findings, roadmap);",
              "- `series/report.md|html`, `series/scores.json`: the scored steps;",
              "- `store.sqlite`: the results store with the `analyze_scores` history;",
              "- `*.log`: each command's output.", ""]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--command", default="bash examples/resample/scripts/device_resample.sh")
    p.add_argument("--env", default=None)
    a = p.parse_args()
    results = Path(a.results)
    env = Path(a.env).read_text() if a.env and Path(a.env).is_file() else ""
    (results / "README.md").write_text(build(results, a.command, env))
    print(f"wrote {results / 'README.md'}")


if __name__ == "__main__":
    main()
