"""Speed and memory of ``sparsescope model MATRIX --backend all --gpu H100`` (issue 35's targets).

    python benchmarks/model_speed.py --label after --out /tmp/model_after.json
    PYTHONPATH=/tmp/model_before/src python benchmarks/model_speed.py --label before \\
        --out /tmp/model_before.json            # a worktree of the older commit
    python benchmarks/model_speed.py --table /tmp/model_before.json /tmp/model_after.json \\
        --write benchmarks/results/model_speed.md

Each path is one command in a fresh process (``python -m sparsescope``, so PYTHONPATH picks the
tree), timed by the clock, with its CPU seconds (user + system) and peak RSS from
``os.wait4``:

- reading the matrix alone: ``matrices stats FILE --json``;
- ``model FILE --backend all --gpu H100 --json`` on a 150 K-nonzero banded file and on a
  20,000-row power-law file of 150 K nonzeros, with the SASS cache empty (``cold``: a fresh
  ``$SPARSESCOPE_CACHE``), filled by the run before (``warm``), and with ``--no-sass``;
- the same on a generated 10^8-nonzero power-law matrix (10^7 rows, ``.npz``), SASS warm,
  under an address-space limit (``--limit-gib``): the older code was killed for memory there
  (24.3 GB, issue 33), and a run that hits the limit is recorded as such, not left to take the
  machine's memory from others.

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
    "powerlaw-100m": ("powerlaw", 10_000_000, 100_000_000, "npz"),
}
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
        write_matrix(make(kind, rows, nnz, seed=0), path)
    return path


def timed(argv: list[str], env: dict, limit_bytes: int | None = None,
          timeout_s: float = 1800) -> dict:
    """Run ``python -m sparsescope argv`` once: wall seconds, CPU seconds, peak RSS, exit."""
    def limit():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "sparsescope", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
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
    # a tree without the SASS disk cache compiles in every run: "warm" is the same as "cold"
    disk_cache = (Path(results["versions"]["sparsescope_src"]) / "sass" / "sass_cache.py").exists()
    results["sass_disk_cache"] = disk_cache
    for name in names:
        path = str(files[name])
        large = name.endswith("100m")
        print(f"{label}: {name}", file=sys.stderr, flush=True)
        paths[f"{name} read"] = best([timed(["matrices", "stats", path, "--json"], env)
                                      for _ in range(1 if large else repeats)])
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
        "Python source (about 0.4 s of each small-file row, and of the read rows too). The "
        "older tree has no SASS disk cache: its warm rows compile as its cold ones do.",
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
    lines += ["", "| path | before | after | target |", "| --- | --- | --- | --- |"]
    reads = {k.split(" ")[0]: after["paths"][k]["wall_s"] for k in after["paths"]
             if k.endswith(" read")}
    for key in keys:
        name = key.split(" ")[0]
        if key.endswith(" read"):
            target = "(the reference)"
        elif name.endswith("100m"):
            target = f"<= {TARGET_LARGE_S:.0f} s"
        else:
            read = reads.get(name)
            cap = min(TARGET_SMALL_S, TARGET_SMALL_READS * read) if read else TARGET_SMALL_S
            target = (f"<= {TARGET_SMALL_S:.0f} s and <= {TARGET_SMALL_READS:.0f} x read "
                      f"(<= {cap:.2f} s)")
        lines.append(f"| {key} | {_cell(before['paths'].get(key))} | "
                     f"{_cell(after['paths'].get(key))} | {target} |")
    return "\n".join(lines) + "\n"


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
    text = json.dumps(results, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
