"""Speed and memory of ``sparsescope model MATRIX --backend all --gpu H100`` (issue 35's targets).

    python benchmarks/model_speed.py --label after --out /tmp/model_after.json
    PYTHONPATH=/tmp/model_before/src python benchmarks/model_speed.py --label before \\
        --out /tmp/model_before.json            # a worktree of the older commit
    python benchmarks/model_speed.py --table /tmp/model_before.json /tmp/model_after.json \\
        --write benchmarks/results/model_speed.md

Each path is one command in a fresh process (``python -m sparsescope``, so PYTHONPATH picks the
tree), timed by the clock, with its CPU seconds (user + system) and peak RSS from
``os.wait4``:

- reading the matrix: ``matrices stats FILE --json`` (the read and its structure statistics),
  and ``load``: the reader alone (``read_matrix`` in a fresh interpreter);
- ``model FILE --backend all --gpu H100 --json`` on a 150 K-nonzero banded file and on a
  20,000-row power-law file of 150 K nonzeros, with the SASS cache empty (``cold``: a fresh
  ``$SPARSESCOPE_CACHE``), filled by the run before (``warm``), and with ``--no-sass``;
- the same on generated 10^7-nonzero power-law and banded matrices (10^6 rows) and a
  10^8-nonzero power-law matrix (10^7 rows), stored ``.npz`` (uncompressed, as
  ``write_matrix`` writes them), SASS warm, under an address-space limit (``--limit-gib``): the
  older code was killed for memory at 10^8 (24.3 GB, issue 33), and a run that hits the limit
  is recorded as such, not left to take the machine's memory from others;
- the reader on a deflated copy of the 10^7 power-law file (``save_npz(compressed=True)``):
  zlib's inflation, one stream on one core, bounds it.

``--breakdown`` (on by default) adds, for each 150 K-nonzero file, one more cold ``model`` run
in a fresh process that records where the SASS step's time goes: every CUDA tool it starts
(compiler, disassembler, ``cuobjdump``, ``c++filt``) with its wall time and thread, the step's
wall and CPU time (``context.predict.prefetch_sass``, the first call: every kernel of the
what-if) and the cache's work counts. ``--files`` runs a subset of the files; ``--keep-earlier``
with ``--write`` keeps the page it replaces below the new one, as written then (the rows of
files not run again stay readable).

``--accuracy`` (the tree of the work budget only) adds, on the two 10^7 files, every
prediction of ``--backend all`` with the model's row terms on a stratified sample
(``--work-budget``, ``model.work_sample``) against the whole computation (``--work-budget 0``),
for a few budgets and sample seeds: the sampling error the default budget is chosen by.

Targets (issue 35): 150 K nonzeros <= 2 s and <= 4 x reading the matrix; 10^8 <= 10 s. The
matrices are generated once into ``--work`` (seed 0). Prints the JSON it writes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

SMALL_NNZ = 150_000
FILES = {
    "banded-150k": ("banded", 50_000, SMALL_NNZ, "mtx"),
    "powerlaw-20k": ("powerlaw", 20_000, SMALL_NNZ, "mtx"),
    "powerlaw-10m": ("powerlaw", 1_000_000, 10_000_000, "npz"),
    "banded-10m": ("banded", 1_000_000, 10_000_000, "npz"),
    "powerlaw-10m-deflated": ("powerlaw", 1_000_000, 10_000_000, "npz"),
    "powerlaw-100m": ("powerlaw", 10_000_000, 100_000_000, "npz"),
}
#: Files read only (no model row): the deflated copy, for zlib's share of a read.
READ_ONLY = {"powerlaw-10m-deflated"}
#: Files of the accuracy table, and the budgets and seeds it samples with.
ACCURACY_FILES = ("powerlaw-10m", "banded-10m")
ACCURACY_BUDGETS = (500_000, 2_000_000)
ACCURACY_SEEDS = (0, 1, 2, 3)
LOAD = "import sys; from sparsescope.matrices import read_matrix; read_matrix(sys.argv[1])"
#: One what-if in a fresh process, its row-term sample drawn with the seed given, every
#: prediction (and auto's candidates) printed as JSON.
PREDICT = """
import json, sys
from sparsescope import api
from sparsescope.model import work_sample
work_sample.SEED = int(sys.argv[3])
res = api.what_if_matrices([sys.argv[1]], gpu="H100", backends=["all"], work_budget=sys.argv[2])
out = {c.backend: c.prediction.predicted_ms for c in res.cases if c.prediction is not None}
for a in res.auto:
    out.update({"auto: " + c["label"]: c.get("predicted_ms") for c in a.candidates})
print(json.dumps({"ms": out, "work": res.work_samples}))
"""
#: One cold what-if in a fresh process (``SPARSESCOPE_CACHE`` empty), every subprocess it
#: starts recorded (tool, start, wall, thread) and the SASS step timed: the first call of
#: ``context.predict.prefetch_sass`` (wall, and CPU of this process and its children).
BREAKDOWN = """
import contextlib, io, json, os, resource, subprocess, sys, threading, time
T0 = time.perf_counter()
runs, step = [], {}
real_init, real_wait = subprocess.Popen.__init__, subprocess.Popen.wait
def init(self, args, *a, **k):
    self._bench_t = time.perf_counter()
    real_init(self, args, *a, **k)
    self._bench_args = [str(x) for x in args]
def wait(self, *a, **k):
    code = real_wait(self, *a, **k)
    if not getattr(self, "_bench_done", False):
        self._bench_done = True
        args = self._bench_args
        runs.append({"tool": os.path.basename(args[0]), "version": "--version" in args,
                     "start_s": round(self._bench_t - T0, 3),
                     "wall_s": round(time.perf_counter() - self._bench_t, 3),
                     "thread": threading.current_thread().name})
    return code
subprocess.Popen.__init__, subprocess.Popen.wait = init, wait
def cpu():
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
from sparsescope.context import predict
real_prefetch = predict.prefetch_sass
def prefetch_sass(shapes, device):
    first = not step
    if first:
        step.update(start_s=time.perf_counter() - T0, cpu=cpu())
    try:
        return real_prefetch(shapes, device)
    finally:
        if first:
            step.update(end_s=time.perf_counter() - T0, cpu_s=cpu() - step.pop("cpu"),
                        kernels=sum(1 for s in shapes if getattr(s, "cuda_source", "")))
predict.prefetch_sass = prefetch_sass
from sparsescope.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["model", sys.argv[1], "--backend", "all", "--gpu", "H100", "--json"])
try:
    from sparsescope.sass.sass_cache import COUNTS
    counts = dict(COUNTS)
except ImportError:
    counts = {}
print(json.dumps({"exit": code, "total_s": round(time.perf_counter() - T0, 3),
                  "cpu_s": round(cpu(), 3),
                  "step": {k: round(v, 3) for k, v in step.items()}, "runs": runs,
                  "counts": counts}))
"""
MODEL = ["--backend", "all", "--gpu", "H100", "--json"]
TARGET_SMALL_S = 2.0
TARGET_SMALL_READS = 4.0
TARGET_LARGE_S = 10.0


def generate(work: Path, name: str) -> Path:
    """The matrix file ``name`` of :data:`FILES`, generated once into ``work``."""
    from sparsescope.matrices import generate as make
    from sparsescope.matrices import write_matrix

    kind, rows, nnz, ext = FILES[name]
    path = work / f"{name}.{ext}"
    if not path.exists():
        print(f"  generating {path} ...", file=sys.stderr, flush=True)
        if name in READ_ONLY:
            import scipy.sparse as sp

            sp.save_npz(path, make(kind, rows, nnz, seed=0), compressed=True)
        else:
            write_matrix(make(kind, rows, nnz, seed=0), path)
    return path


def stored_as(path: Path) -> str:
    """How the file holds its arrays: the text format, or the .npz members' compression."""
    if path.suffix != ".npz":
        return f"{path.suffix[1:]} text"
    import zipfile

    with zipfile.ZipFile(path) as archive:
        kinds = {i.compress_type for i in archive.infolist()}
    words = "stored (uncompressed)" if kinds == {zipfile.ZIP_STORED} else "deflated (zlib)"
    return f"npz, {words}, {path.stat().st_size / 2**20:,.0f} MiB"


def timed(argv: list[str], env: dict, limit_bytes: int | None = None,
          timeout_s: float = 1800, command: list[str] | None = None) -> dict:
    """Run ``python -m sparsescope argv`` (or ``python`` + ``command``) once: wall seconds,
    CPU seconds, peak RSS, exit."""
    def limit():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *(command or ["-m", "sparsescope", *argv])],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=limit)
    deadline = start + timeout_s
    err = ""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            err = f"stopped: still running after {timeout_s:.0f} s"
            break
        time.sleep(0.02)
    wall = time.perf_counter() - start
    err = err or (proc.stderr.read().decode(errors="replace") if proc.stderr else "")
    code = os.waitstatus_to_exitcode(status)
    out = {"argv": argv, "wall_s": round(wall, 2),
           "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
           "peak_rss_mib": round(usage.ru_maxrss / 1024), "exit": code}
    if code != 0:
        tail = err.strip().splitlines()[-1:] if err.strip() else []
        out["error"] = tail[0][:300] if tail else f"exit {code}"
    return out


def best(runs: list[dict]) -> dict:
    """The run with the least wall time, the others' walls kept beside it."""
    done = min(runs, key=lambda r: r["wall_s"])
    return {**done, "walls_s": [r["wall_s"] for r in runs]}


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {"nproc": os.cpu_count(), "cpu": cpu, "memory_gib": round(mem / 2**30, 1),
            "load_avg_start": [round(x, 2) for x in os.getloadavg()]}


def versions(env: dict) -> dict:
    import numpy
    import scipy

    found = subprocess.run([sys.executable, "-c", "import sparsescope, os; "
                            "print(os.path.dirname(sparsescope.__file__))"],
                           env=env, capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", found, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", found, "status", "--porcelain", "--", "."],
                           capture_output=True, text=True).stdout.strip()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "scipy": scipy.__version__, "sparsescope_src": found,
            "commit": commit + (" + uncommitted changes" if dirty else ""),
            "nvcc": (nvcc.strip().splitlines() or ["none"])[-2] if nvcc else "none"}


def sass_breakdown(path: Path, env: dict) -> dict:
    """Where a cold what-if's SASS step goes (:data:`BREAKDOWN`), in a fresh process with an
    empty SASS cache."""
    with tempfile.TemporaryDirectory(prefix="model-speed-cache-") as cache:
        cold = {**env, "SPARSESCOPE_CACHE": cache,
                "SPARSESCOPE_STORE": str(Path(cache) / "store.sqlite")}
        done = subprocess.run([sys.executable, "-c", BREAKDOWN, str(path)], env=cold,
                              capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return {"error": tail[:300]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(label: str, work: Path, repeats: int, limit_gib: float, skip_large: bool,
        large_timeout_s: float, only: list[str] | None = None,
        breakdown: bool = True) -> dict:
    env = dict(os.environ)
    results: dict = {"label": label, "date_utc": datetime.now(UTC).isoformat(
        timespec="seconds"), "machine": machine(), "versions": versions(env), "paths": {}}
    paths = results["paths"]
    names = [n for n in (only or FILES) if not (skip_large and n.endswith("100m"))]
    files = {n: generate(work, n) for n in names}
    results["files"] = {n: stored_as(files[n]) for n in names}
    # a tree without the SASS disk cache compiles in every run: "warm" is the same as "cold"
    disk_cache = (Path(results["versions"]["sparsescope_src"]) / "sass" / "sass_cache.py").exists()
    results["sass_disk_cache"] = disk_cache
    for name in names:
        path = str(files[name])
        large = files[name].suffix == ".npz"   # the 10^7 and 10^8 files
        once = 1 if large else repeats
        print(f"{label}: {name}", file=sys.stderr, flush=True)
        paths[f"{name} read"] = best([timed(["matrices", "stats", path, "--json"], env)
                                      for _ in range(once)])
        paths[f"{name} load"] = best([timed([], env, command=["-c", LOAD, path])
                                      for _ in range(once)])
        if name in READ_ONLY:
            continue
        with tempfile.TemporaryDirectory(prefix="model-speed-cache-") as cache:
            cached = {**env, "SPARSESCOPE_CACHE": cache,
                      "SPARSESCOPE_STORE": str(Path(cache) / "store.sqlite")}
            limit = int(limit_gib * 2**30) if large else None
            if large:
                if disk_cache:  # a run before fills the SASS cache with this matrix's kernels
                    timed(["model", path, *MODEL], cached, limit, timeout_s=large_timeout_s)
                paths[f"{name} model (SASS warm)"] = timed(["model", path, *MODEL], cached,
                                                          limit, timeout_s=large_timeout_s)
                continue
            paths[f"{name} model (SASS cold)"] = timed(["model", path, *MODEL], cached)
            if breakdown:
                results.setdefault("breakdown", {})[name] = sass_breakdown(files[name], env)
            paths[f"{name} model (SASS warm)"] = best(
                [timed(["model", path, *MODEL], cached) for _ in range(repeats)])
            paths[f"{name} model --no-sass"] = best(
                [timed(["model", path, *MODEL, "--no-sass"], cached) for _ in range(repeats)])
    results["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    return results


def predictions(path: Path, budget: int, seed: int, env: dict) -> tuple[dict, float]:
    """(every prediction of ``--backend all`` on H100 with the row-term sample of ``budget``
    (0: none) drawn with ``seed``, and the run's wall seconds)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PREDICT, str(path), str(budget), str(seed)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1]), time.perf_counter() - start


def accuracy(work: Path) -> dict:
    """The sampled predictions against the whole computation (module docstring): per file and
    budget, the largest and the mean |difference| over every prediction and seed."""
    env = dict(os.environ)
    out: dict = {"budgets": list(ACCURACY_BUDGETS), "seeds": list(ACCURACY_SEEDS), "files": {}}
    with tempfile.TemporaryDirectory(prefix="model-speed-cache-") as cache:
        env.update(SPARSESCOPE_CACHE=cache, SPARSESCOPE_STORE=str(Path(cache) / "s.sqlite"))
        for name in ACCURACY_FILES:
            path = generate(work, name)
            predictions(path, 0, 0, env)           # fills the SASS cache
            whole, whole_s = predictions(path, 0, 0, env)
            rows = {"whole_s": round(whole_s, 2), "predictions": len(whole["ms"]),
                    "budgets": {}}
            for budget in ACCURACY_BUDGETS:
                errors, walls, sample = [], [], {}
                for seed in ACCURACY_SEEDS:
                    got, wall = predictions(path, budget, seed, env)
                    walls.append(wall)
                    sample = next(iter(got["work"].values()))
                    errors += [got["ms"][k] / v - 1 for k, v in whole["ms"].items()
                               if v and got["ms"].get(k)]
                worst = max(errors, key=abs)
                rows["budgets"][str(budget)] = {
                    "worst_pct": round(100 * worst, 3),
                    "mean_abs_pct": round(100 * sum(map(abs, errors)) / len(errors), 3),
                    "sample_nnz": sample["sample_nnz"], "sample_rows": sample["sample_rows"],
                    "windows": f"{sample['windows']} of {sample['total_windows']}",
                    "wall_s": round(min(walls), 2)}
            out["files"][name] = rows
            print(f"accuracy: {name} {rows}", file=sys.stderr, flush=True)
    return out


def _cell(r: dict | None) -> str:
    if r is None:
        return "not run"
    if r.get("exit"):
        return f"failed after {r['wall_s']:.1f} s ({r.get('error', '')})"
    return f"{r['wall_s']:.2f} s (CPU {r['cpu_s']:.2f} s, {r['peak_rss_mib']:,} MiB)"


def table(before: dict, after: dict) -> str:
    """The Markdown page: machine, versions, and each path before and after."""
    keys = list(dict.fromkeys([*after["paths"], *before["paths"]]))
    lines = [
        "# `sparsescope model MATRIX --backend all --gpu H100`: speed and memory",
        "",
        "Written by `benchmarks/model_speed.py` (`--table BEFORE.json AFTER.json --write "
        "benchmarks/results/model_speed.md`); each cell is one command in a fresh process: "
        "wall time (the best of the repeats for the small files), its CPU time (user + "
        "system) and peak RSS. The before column ran from a worktree of the older commit "
        "(`git worktree add /tmp/model_before HEAD`, `PYTHONPATH=/tmp/model_before/src`), "
        "the after column from the working tree, one after the other in one sitting. "
        "PYTHONDONTWRITEBYTECODE=1 on this machine: every command compiles sparsescope's "
        "Python source (about 0.4 s of each small-file row, and of the read rows too)."
        + ("" if before.get("sass_disk_cache", True) else " The older tree has no SASS disk "
           "cache: its warm rows compile as its cold ones do."),
        "",
        "| | before | after |",
        "| --- | --- | --- |",
    ]
    for side in ("label", "date_utc"):
        lines.append(f"| {side.replace('_', ' ')} | {before[side]} | {after[side]} |")
    for key in ("commit", "python", "numpy", "scipy", "nvcc"):
        lines.append(f"| {key} | {before['versions'][key]} | {after['versions'][key]} |")
    for key in ("nproc", "cpu", "memory_gib", "load_avg_start", "load_avg_end"):
        lines.append(f"| {key.replace('_', ' ')} | {before['machine'].get(key)} | "
                     f"{after['machine'].get(key)} |")
    stored = after.get("files", {})
    if stored:
        lines += ["", "| file | rows x cols, nonzeros | stored as |", "| --- | --- | --- |"]
        for name, how in stored.items():
            _, rows, nnz, _ = FILES[name]
            lines.append(f"| {name} | {rows:,} x {rows:,}, {nnz:,} | {how} |")
    lines += ["", "| path | before | after | target |", "| --- | --- | --- | --- |"]
    reads = {k.split(" ")[0]: after["paths"][k]["wall_s"] for k in after["paths"]
             if k.endswith(" read")}
    for key in keys:
        name = key.split(" ")[0]
        if key.endswith(" read"):
            target = "(the reference)"
        elif key.endswith(" load"):
            target = "(the reader alone)"
        elif name.endswith("100m"):
            target = f"<= {TARGET_LARGE_S:.0f} s"
        elif name.endswith("10m"):
            target = "(between the two)"
        else:
            read = reads.get(name)
            cap = min(TARGET_SMALL_S, TARGET_SMALL_READS * read) if read else TARGET_SMALL_S
            target = (f"<= {TARGET_SMALL_S:.0f} s and <= {TARGET_SMALL_READS:.0f} x read "
                      f"(<= {cap:.2f} s)")
        lines.append(f"| {key} | {_cell(before['paths'].get(key))} | "
                     f"{_cell(after['paths'].get(key))} | {target} |")
    if before.get("breakdown") or after.get("breakdown"):
        lines += ["", *breakdown_table(before, after)]
    if after.get("accuracy"):
        lines += ["", *accuracy_table(after["accuracy"])]
    return "\n".join(lines) + "\n"


def _tool_runs(runs: list[dict], tools: tuple[str, ...]) -> str:
    """``1 x 0.96 s`` / ``2 side by side: 1.87 + 0.55 s`` for the runs of ``tools`` (their
    ``--version`` calls left out)."""
    picked = [r for r in runs if r["tool"] in tools and not r["version"]]
    if not picked:
        return "none"
    walls = " + ".join(f"{r['wall_s']:.2f}" for r in picked)
    threads = len({r["thread"] for r in picked})
    how = f", {threads} threads" if threads > 1 else ""
    return f"{len(picked)} ({walls} s{how})"


def breakdown_table(before: dict, after: dict) -> list[str]:
    """Where the cold what-if's SASS step goes, per small file, before and after."""
    lines = ["Where a cold what-if's SASS step goes (`--breakdown`: one more `model FILE "
             "--backend all --gpu H100` per tree with an empty SASS cache, every CUDA tool "
             "it starts recorded): the step is the first `context.predict.prefetch_sass` call "
             "(every own kernel the what-if and auto's candidates predict), its wall and CPU "
             "time (the process and its children); tool runs with their wall times (threads "
             "that ran them side by side).",
             "", "| file | tree | SASS step wall | its CPU | own kernels planned | instances "
             "compiled | compiler runs | disassembler runs | other tool runs | whole command |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    names = list(dict.fromkeys([*before.get("breakdown", {}), *after.get("breakdown", {})]))
    for name in names:
        for side in (before, after):
            b = side.get("breakdown", {}).get(name)
            if b is None:
                continue
            if "error" in b:
                lines.append(f"| {name} | {side['label']} | failed: {b['error']} |||||||| ")
                continue
            step, runs = b["step"], b["runs"]
            other = _tool_runs(runs, ("cuobjdump", "c++filt"))
            lines.append(
                f"| {name} | {side['label']} | {step['end_s'] - step['start_s']:.2f} s "
                f"({step['start_s']:.2f} -> {step['end_s']:.2f} s) | {step['cpu_s']:.2f} s | "
                f"{step['kernels']} | {b['counts'].get('instances', '-')} | "
                f"{_tool_runs(runs, ('nvcc',))} | {_tool_runs(runs, ('nvdisasm',))} | "
                f"{other} | {b['total_s']:.2f} s (CPU {b['cpu_s']:.2f} s) |")
    return lines


def accuracy_table(acc: dict) -> list[str]:
    """The sampled predictions against the whole computation, per file and work budget."""
    seeds = ", ".join(str(s) for s in acc["seeds"])
    lines = [f"Predictions with the model's row terms on a stratified row sample "
             f"(`--work-budget B`, `model.work_sample`) against the whole computation "
             f"(`--work-budget 0`): every prediction of `model FILE --backend all --gpu H100` "
             f"(each backend and each of auto's candidates), sample seeds {seeds}; the "
             f"difference of each prediction from the whole one, the largest and the mean of "
             f"their sizes. Wall: one what-if in a fresh process (the read included), the fastest "
             f"seed.",
             "", "| file | work budget | rows sampled (windows) | nonzeros sampled | largest "
             "difference | mean abs. difference | wall |", "| --- | --- | --- | --- | --- | "
             "--- | --- |"]
    for name, rows in acc["files"].items():
        lines.append(f"| {name} | none (whole) | {FILES[name][1]:,} | {FILES[name][2]:,} | - "
                     f"| - | {rows['whole_s']:.1f} s |")
        for budget, r in rows["budgets"].items():
            lines.append(f"| {name} | {int(budget):,} | {r['sample_rows']:,} ({r['windows']}) "
                         f"| {r['sample_nnz']:,} | {r['worst_pct']:+.2f} % | "
                         f"{r['mean_abs_pct']:.3f} % ({rows['predictions']} x "
                         f"{len(acc['seeds'])}) | {r['wall_s']:.1f} s |")
    return lines


EARLIER = "## Earlier sitting (the page this one replaced, kept as written then)"


def earlier_section(page: str) -> str:
    """The page being replaced, below :data:`EARLIER`, its own title dropped and any earlier
    sitting it kept left out (one sitting back is kept, not a chain)."""
    body = page.split(f"\n{EARLIER}\n", 1)[0].rstrip()
    lines = body.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    text = "\n".join(lines).strip()
    # its headings one level down, under this one
    text = "\n".join("#" + ln if ln.startswith("## ") else ln for ln in text.splitlines())
    return f"\n{EARLIER}\n\n{text}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--out", help="write the results JSON here")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "model-speed"),
                        help="folder of the generated matrices (kept between runs)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--limit-gib", type=float, default=12.0,
                        help="address-space limit of the 10^8-nonzero run")
    parser.add_argument("--skip-large", action="store_true", help="leave out the 10^8 file")
    parser.add_argument("--large-timeout-s", type=float, default=900.0,
                        help="stop the 10^8-nonzero model run after this long")
    parser.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="write the Markdown table of two results files instead")
    parser.add_argument("--write", help="with --table: the Markdown file")
    parser.add_argument("--accuracy", action="store_true",
                        help="also the sampled predictions against the whole computation "
                             "(a tree with the work budget)")
    parser.add_argument("--files", nargs="+", choices=list(FILES), metavar="NAME",
                        help=f"run only these files ({', '.join(FILES)})")
    parser.add_argument("--no-breakdown", action="store_true",
                        help="leave out the cold SASS step's breakdown of the small files")
    parser.add_argument("--keep-earlier", action="store_true",
                        help="with --table --write: keep the page replaced below the new one")
    args = parser.parse_args(argv)
    if args.table:
        before, after = (json.loads(Path(p).read_text()) for p in args.table)
        text = table(before, after)
        if args.write:
            page = Path(args.write)
            if args.keep_earlier and page.exists():
                text += earlier_section(page.read_text())
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(text)
        print(text)
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = run(args.label, work, args.repeats, args.limit_gib, args.skip_large,
                  args.large_timeout_s, args.files, not args.no_breakdown)
    if args.accuracy:
        results["accuracy"] = accuracy(work)
    text = json.dumps(results, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
