"""Write results/<gpu>/resample/README.md from what device_resample.sh produced.

    python examples/resample/scripts/write_readme.py RESULTS_DIR --command "..."

Every number comes from the run's files: ``env.json`` (date, GPU, driver, CUDA, torch, ...),
``series/scores.json`` (predicted and measured speedup of every step, the MAE),
``<version>/analysis.json`` of every version and of the PyTorch reference, ``spmv/analysis.json``,
``timing.log`` and ``pytest.log``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

VERSIONS = ("naive", "smem", "vec", "warp", "ours", "ours2")


def _load(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def _ms(x) -> str:
    return "-" if x is None else f"{x:.4f}"


def _us(x) -> str:
    return "-" if x is None else f"{x * 1e3:.1f}"


def _correct(a: dict) -> bool:
    return bool((a["evidence"].get("correctness") or {}).get("passed"))


def final_version(analyses: dict) -> str | None:
    """The last version of the series that was measured and passed its correctness check."""
    done = [v for v in VERSIONS if analyses.get(v) and analyses[v]["evidence"]["time_ms"]
            and _correct(analyses[v])]
    return done[-1] if done else None


def _env_lines(env: dict) -> list[str]:
    def g(key: str) -> str:
        return str(env.get(key, "?"))

    return [f"- date (UTC): {g('date_utc')}",
            f"- GPU: {g('gpu')} ({g('memory_total')}; SM clock {g('sm_clock_now')} at the start, "
            f"max {g('sm_clock_max')}; clocks left as found)",
            f"- driver: {g('driver')}; CUDA: runtime {g('cuda_runtime')} (CuPy's), driver API "
            f"{g('cuda_driver_api')}, torch built for {g('torch_cuda')}; nvcc: {g('nvcc')}",
            f"- torch {g('torch')}, CuPy {g('cupy')}, NumPy {g('numpy')}, Python {g('python')}",
            f"- Nsight Compute: {g('ncu')}",
            f"- sparsescope {g('sparsescope')}, commit {g('git_commit')}; kernel {g('kernel')}"]


def _moved_table(results: Path) -> str | None:
    """The series report's "What moved" table (report.analyze_render), from the analyses."""
    from sparsescope.analyze.api import read_analysis
    from sparsescope.report.analyze_render import _changes_table

    done = [read_analysis(results / v / "analysis.json") for v in VERSIONS
            if (results / v / "analysis.json").is_file()]
    return _changes_table(done) if len(done) > 1 else None


REDERIVED = """## Re-derived here from the run's files

Two outputs were re-derived on the CPU from the run's files after it, with the same sparsescope
as the committed tree (no number typed in; the as-run versions are kept):

```
R=results/h200/resample
sparsescope analyze --from-measurement $R/pytorch --out $R/pytorch
sparsescope analyze --compare $R/{naive,smem,vec,warp,ours,ours2}/analysis.json \\
    --reference-result $R/pytorch/analysis.json --no-store --out $R/series
```

- `pytorch/analysis.json`: the run's analysis of the reference counted launches by function name,
  so the template instances sharing a name (`vectorized_elementwise_kernel`,
  `_scatter_gather_elementwise_kernel`) got each other's launch counts and no per-instruction
  rows; fixed in `sparsescope.analyze.sources` (launches keyed by demangled name, unique
  labels, source-page blocks matched in launch order) and re-analysed from the run's
  `measurement.json` and ncu exports. Its measured time and correctness are the run's.
  As run: `pytorch/analysis.as_run.json`, `pytorch/report.as_run.md`.
- `series/`: re-scored from the same analysis files (identical predictions, measurements and
  MAE; adds the "What moved" table). The run's own scoring is at the end of `run.log`, and
  its history rows are in `store.sqlite`.
"""


def _verify_lines(results: Path, analyses: dict) -> list[str]:
    """The second device call (``verify/``): the committed code's GPU tests, and ours2 and the
    reference timed and analysed again."""
    v = results / "verify"
    env = _load(v / "env.json")
    if env is None:
        return []
    first_env = _load(results / "env.json") or {}
    keys = ("gpu", "driver", "torch", "cupy", "ncu")
    same = all(env.get(k) == first_env.get(k) for k in keys)
    setup = "same GPU, driver, torch, CuPy and ncu" if same else "; ".join(
        f"{k} {env.get(k)}" for k in keys)
    out = ["", "## Second call: the committed code on the GPU, and a repeat", "",
           f"After the fixes above, a second device call ({env.get('date_utc', '?')}, {setup}) "
           "ran the GPU-marked tests and analysed `ours2` and the reference again with the "
           "committed code (`verify/`: `device_resample.sh` with "
           "`STEPS=\"versions reference tests\" VERSIONS=ours2`; kept: logs, "
           "`measurement.json`, reports, ours2's analysis).", ""]
    for name in ("ours2", "pytorch"):
        again = _load(v / name / "measurement.json")
        first = analyses.get(name)
        if again and first:
            t0, t1 = first["evidence"]["time_ms"], again["time_ms"]
            out.append(f"- `{name}`: {_us(t0)} us in the run, {_us(t1)} us in the repeat "
                       f"({100 * (t1 - t0) / t0:+.1f} %).")
    tests = [ln for ln in (v / "pytest.log").read_text().splitlines() if ln.strip()] \
        if (v / "pytest.log").is_file() else []
    if tests:
        out.append(f"- GPU-marked tests with the committed code: {tests[-1]}")
    return out


def build(results: Path, command: str, rederived: bool = False) -> str:
    env = _load(results / "env.json") or {}
    series = _load(results / "series" / "scores.json") or {}
    analyses = {v: _load(results / v / "analysis.json") for v in (*VERSIONS, "pytorch")}
    lines = ["# Seed 002 worked example: resample_trajectories_bf16, predicted then measured", "",
             "Every version of `examples/resample/` analysed by `sparsescope analyze` on the GPU "
             "below: timed (CUDA events, median of the repeats, L2 flushed between repeats), "
             "checked against the float64 result, profiled with Nsight Compute, its roadmap "
             "written before the next version ran; then every step scored by "
             "`sparsescope analyze --compare`. Generated by "
             "`examples/resample/scripts/write_readme.py` from the run's files.", "",
             "## Command", "", "On the GPU machine, from the repository root (the files came "
             "back as `resample.tgz` and were unpacked here, the `.ncu-rep` reports left out; "
             "the pytorch source page compressed):", "", "```", command, "```", "",
             "## Run", ""]
    lines += _env_lines(env) if env else ["- env.json missing: see env.txt"]
    lines += ["", "## Versions", "",
              "| version | time (us) | floor (us) | gap | correct (rel. err.) | DRAM bytes | "
              "top roadmap item (predicted) |", "|---|---:|---:|---:|---|---:|---|"]
    for v in (*VERSIONS, "pytorch"):
        a = analyses[v]
        if a is None:
            lines.append(f"| {v} | not measured (see {v}.log) | | | | | |")
            continue
        ev = a["evidence"]
        c = ev.get("correctness") or {}
        top = a["roadmap"][0] if a["roadmap"] else None
        best = f"{top['rule']} {top['predicted_speedup']:.2f}x" if top else "-"
        ok = "yes" if c.get("passed") else "NO"
        rel = c.get("rel_err")
        gap = (f"{ev['time_ms'] / ev['floor_ms']:.1f}x" if ev.get("time_ms")
               and ev.get("floor_ms") else "-")
        dram = sum((k.get("profile") or {}).get("dram_read_bytes") or 0.0 for k in ev["kernels"])
        dram += sum((k.get("profile") or {}).get("dram_write_bytes") or 0.0
                    for k in ev["kernels"])
        lines.append(f"| {v} | {_us(ev['time_ms'])} | {_us(ev['floor_ms'])} | {gap} | {ok} "
                     f"({'-' if rel is None else f'{rel:.2g}'}) | "
                     f"{f'{dram / 1e6:.1f} MB' if dram else '-'} | {best} |")
    lines += ["", "The floor is the ideal bytes (two bracketing 64-byte rows read and one "
              "written per target, plus the times, as `resample_workload.IDEAL_BYTES` declares "
              "them) over the spec table's peak bandwidth. The time is the CUDA-event time of "
              "one call (launch included); the kernel times ncu measured are in the What moved "
              "table. DRAM bytes are what ncu counted during the kernel: the output's writes "
              "stay in the 60 MB L2 until after it.", "",
              "## Every step: predicted before, measured after", "",
              "The prediction of step A -> B is A's roadmap (written before B was run), "
              "combined over the rules B declares it addresses; no matching item means the "
              "model predicted no gain (1.00x), and that is scored too.", "",
              "| step | addresses | predicted | measured | abs. error | time (us) |",
              "|---|---|---:|---:|---:|---|"]
    for s in series.get("scores", []):
        lines.append(f"| {s['before']} -> {s['after']} | {', '.join(s['applied'])} | "
                     f"{s['predicted_speedup']:.2f}x | {s['measured_speedup']:.2f}x | "
                     f"{s['abs_error']:.2f} | {_us(s['before_time_ms'])} -> "
                     f"{_us(s['after_time_ms'])} |")
    if series.get("mae") is not None:
        lines += ["", f"Mean absolute error of the predictions over the "
                  f"{len(series.get('scores', []))} steps: **{series['mae']:.3f}** "
                  "(speedup units). Which roadmap items made each prediction, with their "
                  "formulas: `series/report.md`."]
    else:
        lines += ["", "No step was scored (see series.log)."]
    moved = _moved_table(results)
    if moved:
        lines += ["", "## What moved", "",
                  "The profiles' figures of each step, before -> after (per call; counts summed "
                  "over the kernels, rates of the kernel with the largest time share): what to "
                  "read each prediction's miss against.", "", moved]
    ref, last_v = analyses["pytorch"], final_version(analyses)
    last = analyses.get(last_v) if last_v else None
    if ref and last and ref["evidence"]["time_ms"]:
        r_ms, l_ms = ref["evidence"]["time_ms"], last["evidence"]["time_ms"]
        ratio = r_ms / l_ms
        first = analyses["naive"]
        lines += ["", "## Final version against PyTorch", "",
                  f"`{last_v}` against the PyTorch reference (searchsorted + gather + lerp, "
                  f"{'correct' if _correct(ref) else 'INCORRECT'}): {_us(r_ms)} us / "
                  f"{_us(l_ms)} us = **{ratio:.2f}x** ({'faster' if ratio > 1 else 'SLOWER'}); "
                  f"{last['evidence']['time_ms'] / last['evidence']['floor_ms']:.1f}x the floor."
                  + (f" Against the naive kernel: {first['evidence']['time_ms'] / l_ms:.2f}x."
                     if first and first["evidence"]["time_ms"] else "")]
    spmv = _load(results / "spmv" / "analysis.json")
    if spmv:
        ev = spmv["evidence"]
        top = spmv["roadmap"][0] if spmv["roadmap"] else None
        c = ev.get("correctness") or {}
        lines += ["", "## The same command on an SpMV kernel of ours", "",
                  "`csr_vector<float, int, 8>` (`src/sparsescope/backends/kernels/spmv_csr.cu`) "
                  "through `sparsescope analyze --cuda` (launch spec in the command above's "
                  "script): "
                  f"{_us(ev['time_ms'])} us, floor {_us(ev['floor_ms'])} us "
                  f"({ev['bytes_source']}), correct: {'yes' if c.get('passed') else 'NO'} "
                  f"(rel. err. {c.get('rel_err', float('nan')):.2g}); bound: "
                  f"{', '.join(b['bound'] for b in spmv['bottlenecks'])}; top roadmap item: "
                  + (f"{top['rule']} ({top['predicted_speedup']:.2f}x, {top['model']})" if top
                     else "none") + ". Report: `spmv/report.md`."]
    if rederived:
        lines += ["", REDERIVED.rstrip()]
    lines += _verify_lines(results, analyses)
    timing = results / "timing.log"
    pytest_log = results / "pytest.log"
    lines += ["", "## Device time", ""]
    if timing.is_file():
        lines += ["Wall time of each step (`timing.log`): " +
                  "; ".join(ln.strip() for ln in timing.read_text().splitlines() if ln.strip())
                  + "."]
    if pytest_log.is_file():
        tail = [ln for ln in pytest_log.read_text().splitlines() if ln.strip()]
        if tail:
            lines += ["", f"GPU-marked tests (`tests/analyze/test_gpu_analyze.py`): {tail[-1]}"]
    lines += ["", "## Files", "",
              "- `<version>/report.md|html`, `<version>/analysis.json`: each version's analysis "
              "(timing samples, correctness, ncu counters and per-instruction rows, SASS "
              "evidence, findings, roadmap); `<version>/measurement.json`: the timed and checked "
              "numbers, written before profiling; `<version>/profile_*_{raw,details,source}.csv`: "
              "the ncu exports (the `.ncu-rep` reports are not kept in the repository);",
              "- `pytorch/`: the reference, analysed the same way;",
              "- `series/report.md|html`, `series/scores.json`: the scored steps;",
              "- `spmv/`: the SpMV kernel's analysis;",
              "- `store.sqlite`: the results store with the `analyze_scores` history;",
              "- `env.txt`, `env.json`: the environment as read; `*.log`: each command's output; "
              "`run.log`: the whole run's output; `device_command.txt`: the device call;",
              "- `verify/`: the second device call.", "",
              "This README: `python examples/resample/scripts/write_readme.py "
              "results/h200/resample --command-file results/h200/resample/device_command.txt "
              "--rederived` (with `src` on `PYTHONPATH`).", ""]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--command", default="bash examples/resample/scripts/device_resample.sh")
    p.add_argument("--command-file", help="read the command from this file (as run, verbatim)")
    p.add_argument("--rederived", action="store_true", help="add the section on the outputs "
                   "re-derived on the CPU after the run (pytorch/analysis.json, series/)")
    a = p.parse_args()
    results = Path(a.results)
    command = Path(a.command_file).read_text().strip() if a.command_file else a.command
    (results / "README.md").write_text(build(results, command, a.rederived))
    print(f"wrote {results / 'README.md'}")


if __name__ == "__main__":
    main()
