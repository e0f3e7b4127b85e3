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


def run(label: str, work: Path, repeats: int, limit_gib: float, skip_large: bool,
        large_timeout_s: float) -> dict:
    env = dict(os.environ)
    results: dict = {"label": label, "date_utc": datetime.now(UTC).isoformat(
        timespec="seconds"), "machine": machine(), "versions": versions(env), "paths": {}}
    paths = results["paths"]
    names = [n for n in FILES if not (skip_large and n.endswith("100m"))]
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
    if after.get("accuracy"):
        lines += ["", *accuracy_table(after["accuracy"])]
    return "\n".join(lines) + "\n"


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
    args = parser.parse_args(argv)
    if args.table:
        before, after = (json.loads(Path(p).read_text()) for p in args.table)
        text = table(before, after)
        if args.write:
            Path(args.write).parent.mkdir(parents=True, exist_ok=True)
            Path(args.write).write_text(text)
        print(text)
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = run(args.label, work, args.repeats, args.limit_gib, args.skip_large,
                  args.large_timeout_s)
    if args.accuracy:
        results["accuracy"] = accuracy(work)
    text = json.dumps(results, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
