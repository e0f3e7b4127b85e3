"""Wall time of ``sparsescope profile run`` of one case (issue 35: 26 s -> <= 15 s, H200).

    python benchmarks/profile_speed.py                     # suite:seed6#webbase-1M, cuda-spmv-auto
    python benchmarks/profile_speed.py --before-src /tmp/before/src --out /tmp/profile_speed.json
    python benchmarks/profile_speed.py --each-group        # each metric group alone: passes
    python benchmarks/profile_speed.py --case suite:seed6#cant cupy-cusparse-i32 --repeats 5
    python benchmarks/profile_speed.py --table /tmp/profile_speed.json   # the tables again

Needs a GPU and Nsight Compute. Each run is ``python -m sparsescope profile run --matrix M
--backend B --scale S --out DIR --json`` in a fresh process, with ``PYTHONPATH`` the tree's
source (``--before-src DIR`` for an older tree, e.g. ``git worktree add /tmp/before HEAD~3``
then ``/tmp/before/src``; this checkout's ``src`` for the after rows), one after the other in
one sitting, timed by the clock. From the run's JSON: ncu's wall (the program under ncu), the
exports' wall, the launches profiled, ncu's replay passes per launch (its ``==PROF==`` lines,
else the report's ``profiler__replayer_passes``), the kernels, and which launches were chosen
(``kernel_selection``; an older tree does not record it). Prints a Markdown table (``--json``:
the JSON), and writes the JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE_SRC = Path(__file__).resolve().parents[1] / "src"
DEFAULT_CASE = ("suite:seed6#webbase-1M", "cuda-spmv-auto")
TARGET_S = 15.0
"""Issue 35's target for one case, H200."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", nargs=2, action="append", metavar=("MATRIX", "BACKEND"),
                        help="a case to profile, repeatable (default: "
                        f"{' '.join(DEFAULT_CASE)})")
    parser.add_argument("--scale", type=float, default=1.0, help="suite scale (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per case and tree")
    parser.add_argument("--before-src", type=Path,
                        help="source folder of an older tree, timed first (its PYTHONPATH)")
    parser.add_argument("--after-src", type=Path, default=HERE_SRC,
                        help="source folder of the tree to time (default: this checkout's)")
    parser.add_argument("--each-group", action="store_true",
                        help="also profile each case once per metric group alone (after "
                        "tree, every group, memory-tables included): each group's passes")
    parser.add_argument("--profile-args", default="",
                        help="more options for profile run, one string (e.g. '--set full')")
    parser.add_argument("--ncu", help="the ncu binary (profile run's --ncu)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--out", type=Path, help="write the JSON here")
    parser.add_argument("--json", action="store_true", help="print the JSON, not the tables")
    parser.add_argument("--table", type=Path, help="print the tables of a saved JSON and stop")
    args = parser.parse_args(argv)
    args.case = [tuple(c) for c in (args.case or [DEFAULT_CASE])]
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def profile_argv(matrix: str, backend: str, scale: float, out_dir: str | Path,
                 extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The ``python -m sparsescope ...`` command of one run."""
    return [sys.executable, "-m", "sparsescope", "profile", "run", "--matrix", matrix,
            "--backend", backend, "--scale", repr(scale), "--out", str(out_dir), "--json",
            *extra]


def tree_env(src: Path) -> dict[str, str]:
    """This environment with ``src`` first on ``PYTHONPATH`` (the tree whose code runs)."""
    rest = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(src) + (os.pathsep + rest if rest else "")}


def passes_text(passes: list[int]) -> str:
    """``34`` when every launch took the same passes, else each launch's: ``34, 12``."""
    if not passes:
        return "n/a"
    return str(passes[0]) if len(set(passes)) == 1 else ", ".join(map(str, passes))


def summarise(result: dict, wall_s: float) -> dict:
    """One run's row from ``profile run --json`` output and its wall time."""
    kernels = result.get("kernels") or []
    passes = [int(p["passes"]) for p in result.get("passes") or []]
    if not passes:  # ncu printed no ==PROF== pass counts: the report's own
        passes = [int(k["replay_passes"]) for k in kernels if k.get("replay_passes")]
    selection = result.get("kernel_selection") or {}
    collected = result.get("collected") or {}
    return {"wall_s": round(wall_s, 2), "ncu_wall_s": _rounded(result.get("profile_wall_s")),
            "export_wall_s": _rounded(result.get("export_wall_s")),
            "launches": len(kernels), "passes": passes,
            "kernels": sorted({k["name"] for k in kernels}),
            "selection": selection.get("text", "not recorded (older tree)"),
            "groups": collected.get("groups") or ([f"set {collected['set']}"]
                                                  if collected.get("set") else []),
            "ncu_version": result.get("ncu_version", "")}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 2)


def run_once(tree: str, src: Path, matrix: str, backend: str, scale: float,
             extra: list[str], timeout_s: float) -> dict:
    """Profile one case in a fresh process of ``src``'s code: the run's row."""
    with tempfile.TemporaryDirectory(prefix="profile-speed-") as out:
        argv = profile_argv(matrix, backend, scale, out, extra)
        started = time.perf_counter()
        try:
            done = subprocess.run(argv, env=tree_env(src), capture_output=True, text=True,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"tree": tree, "matrix": matrix, "backend": backend, "extra": extra,
                    "exit": None, "wall_s": round(time.perf_counter() - started, 2),
                    "error": f"still running after {timeout_s:.0f} s"}
        wall = time.perf_counter() - started
    row = {"tree": tree, "matrix": matrix, "backend": backend, "extra": extra,
           "exit": done.returncode}
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        result = None
    if done.returncode != 0 or not isinstance(result, dict) or "kernels" not in result:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return {**row, "wall_s": round(wall, 2), "error": tail[:300]}
    return {**row, **summarise(result, wall)}


def gpu_name() -> str:
    """``nvidia-smi``'s name and driver of GPU 0, or empty."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader", "-i", "0"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out


def metric_groups() -> tuple[str, ...]:
    """Every metric group profile run knows (this checkout's)."""
    from sparsescope.profile.metrics import METRIC_GROUPS

    return tuple(METRIC_GROUPS)


def collect(args: argparse.Namespace) -> dict:
    """Every run of every case and tree (the before tree first), then the group census."""
    extra = shlex.split(args.profile_args) + (["--ncu", args.ncu] if args.ncu else [])
    trees = ([("before", args.before_src)] if args.before_src else []) + [
        ("after", args.after_src)]
    runs = []
    for matrix, backend in args.case:
        for tree, src in trees:
            for i in range(args.repeats):
                print(f"{tree}: {matrix} {backend} run {i + 1}/{args.repeats}", file=sys.stderr,
                      flush=True)
                runs.append(run_once(tree, src, matrix, backend, args.scale, extra,
                                     args.timeout))
        if args.each_group:
            for group in metric_groups():
                print(f"after: {matrix} {backend} --groups {group}", file=sys.stderr, flush=True)
                runs.append(run_once("after", args.after_src, matrix, backend, args.scale,
                                     [*extra, "--groups", group], args.timeout))
    return {"date_utc": datetime.now(UTC).isoformat(timespec="seconds"), "gpu": gpu_name(),
            "scale": args.scale, "repeats": args.repeats, "target_s": TARGET_S,
            "trees": {tree: str(src) for tree, src in trees}, "runs": runs}


def _median(rows: list[dict], key: str) -> str:
    values = [r[key] for r in rows if r.get(key) is not None]
    return "n/a" if not values else f"{statistics.median(values):.1f}"


def markdown(payload: dict) -> str:
    """The summary table (median of each tree's runs per case and options) and every run."""
    ncu = next((r["ncu_version"] for r in payload["runs"] if r.get("ncu_version")), "")
    lines = [f"# `sparsescope profile run`: wall time per case (target <= {payload['target_s']:g}"
             " s)", "",
             f"{payload['date_utc']}; GPU: {payload['gpu'] or 'unknown'}; ncu: "
             f"{ncu or 'unknown'}; scale {payload['scale']:g}; trees: "
             + ", ".join(f"{t} `{s}`" for t, s in payload["trees"].items()) + ".", "",
             "| tree | case | options | runs | wall s | ncu s | exports s | launches "
             "| passes/launch | kernels profiled |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    groups: dict[tuple, list[dict]] = {}
    for r in payload["runs"]:
        key = (r["tree"], r["matrix"], r["backend"], " ".join(r.get("extra") or []))
        groups.setdefault(key, []).append(r)
    for (tree, matrix, backend, extra), rows in groups.items():
        ok = [r for r in rows if not r.get("error")]
        last = ok[-1] if ok else {}
        failed = len(rows) - len(ok)
        lines.append(
            f"| {tree} | {matrix} {backend} | {extra or 'default'} | {len(ok)}"
            + (f" ({failed} failed)" if failed else "") + f" | {_median(ok, 'wall_s')} | "
            f"{_median(ok, 'ncu_wall_s')} | {_median(ok, 'export_wall_s')} | "
            f"{last.get('launches', 'n/a')} | {passes_text(last.get('passes', []))} | "
            f"{', '.join(last.get('kernels', [])) or 'n/a'} |")
    lines += ["", "Every run (wall s; the kernels chosen, as the run recorded them):", ""]
    for r in payload["runs"]:
        what = r.get("error") or r.get("selection", "")
        label = " ".join([r["tree"], r["matrix"], r["backend"], *(r.get("extra") or [])])
        lines.append(f"- {label}: {r['wall_s']} s; {what}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.table:
        from sparsescope._compressed import read_json  # a committed table is .json.xz

        payload = read_json(args.table)
    else:
        payload = collect(args)
        if args.out:
            args.out.write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps(payload, indent=1) if args.json else markdown(payload))
    return 1 if any(r.get("error") for r in payload["runs"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
