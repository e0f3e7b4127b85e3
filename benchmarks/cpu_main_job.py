"""The CPU main job, timed: ``sparsescope run --suite seed6 --scale 0.05`` and where its time goes.

    python benchmarks/cpu_main_job.py                         # this checkout, 3 runs a mode
    PYTHONPATH=/tmp/cpu_before/src python benchmarks/cpu_main_job.py --label before
    python benchmarks/cpu_main_job.py --vm-llc-mib 480        # as on a VM reporting 480 MiB

Each run is a fresh ``python`` process running the command line a user types (the code under
test is whatever ``sparsescope`` that process imports: set ``PYTHONPATH`` to time another
checkout, e.g. a ``git worktree`` of an older commit). Two modes:

* ``first use``: an empty results store and an empty cache folder (``SPARSESCOPE_STORE``,
  ``SPARSESCOPE_CACHE`` in a temporary folder): the CPU ceilings are measured and the analogs
  generated, as on a machine's first run;
* ``again``: the same store and cache, as every later run on that machine.

Reported per mode: the wall time of each run (the median is the figure), the process's peak
RSS, and, from one more run of the mode under cProfile (its wall-clock timer; cProfile slows
Python-heavy stages such as matplotlib's layout by up to ~2x), the stages it can see:
start-up (imports and the parser), ceilings, generating the analogs, their statistics, the
float64 references, timing (and the cache flush inside it), the report (and its figures),
and the top functions by own time. A run's own stage record (``results.json``'s ``stages``,
where the code under test writes one) is printed too.

``--hide-gpu-libraries`` runs the job on a GPU host as on a CPU machine (no GPU library
imported). ``--vm-llc-mib M`` makes the code under test see the caches of a 2-vCPU VM that
reports an M MiB L3 shared by both CPUs under a hypervisor (issue 35's VM reported 480 MiB):
it patches what ``hardware.cpuinfo`` reads from the OS, nothing else. Prints one JSON object
(and a Markdown table with ``--markdown``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

COMMAND = ["run", "--suite", "seed6", "--scale", "0.05"]

#: (label, file name suffix, function name): stages found in the cProfile of a run; each is
#: the cumulative wall time of every call of that function (nested stages are "of which").
STAGES = (
    ("start-up: imports and the parser", "cli/__init__.py", "build_parser"),
    ("CPU ceilings (measured on first use)", "results/ceilings_cache.py", "lookup_cpu_ceilings"),
    ("  of which measuring", "hardware/cpu_ceilings.py", "measure_cpu_ceilings"),
    ("generate the analogs", "matrices/suites.py", "build_entry"),
    ("matrix statistics", "matrices/stats.py", "compute_stats"),
    ("float64 reference (make_case)", "ops/spmv.py", "make_case"),
    ("timing (time_host)", "timing/host.py", "time_host"),
    ("  of which the cache flush", "timing/host.py", "flush_cache"),
    ("report (write_report)", "report/write.py", "write_report"),
    ("  of which figures", "report/figures.py", "render_figures"),
)


def child(args: argparse.Namespace) -> int:
    """In the child process: patch the caches the OS reports (``--vm-llc-mib``), run the
    command line under cProfile when asked, print the peak RSS."""
    import resource

    if args.vm_llc_mib:
        fake_vm_caches(args.vm_llc_mib)
    if args.hide_gpu_libraries:
        sys.meta_path.insert(0, HideGpuLibraries())
    from sparsescope.cli import main

    argv = [*COMMAND, "--out", args.out]
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        rc = profiler.runcall(main, argv)
        profiler.dump_stats(args.profile)
    else:
        rc = main(argv)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"rc": rc, "peak_rss_bytes": peak}), file=sys.stderr)
    return rc


class HideGpuLibraries:
    """An import hook that finds no GPU library: a GPU host then runs the job as the CPU
    machine it would otherwise be (no backend of them, and no seconds importing them)."""

    HIDDEN = ("torch", "cupy", "jax", "cuda", "nvmath", "pynvml")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.HIDDEN:
            raise ImportError(f"{name} hidden by benchmarks/cpu_main_job.py")
        return None


def fake_vm_caches(llc_mib: int) -> None:
    """Make ``hardware.cpuinfo`` report a 2-vCPU VM's caches: a 2 MiB L2 and an ``llc_mib``
    L3 shared by both CPUs, under a hypervisor (in whichever of its functions the code under
    test has)."""
    from sparsescope.hardware import cpuinfo

    llc = llc_mib * 1024 * 1024
    source = "os: /sys/devices/system/cpu/cpu0/cache"
    cpuinfo._llc_from_sysfs = lambda: llc
    cpuinfo.last_level_cache.cache_clear()
    if hasattr(cpuinfo, "cache_levels"):
        levels = (cpuinfo.CacheLevel(1, "Data", 48 * 1024, 1),
                  cpuinfo.CacheLevel(2, "Unified", 2 * 1024 * 1024, 1),
                  cpuinfo.CacheLevel(3, "Unified", llc, 2))
        cpuinfo.cache_levels = lambda *a, **k: levels
        cpuinfo.under_hypervisor = lambda *a, **k: True
        cpuinfo.evictable_cache.cache_clear()
    assert cpuinfo.last_level_cache() == (llc, source)


#: Extra arguments of every child (``--hide-gpu-libraries``), set by :func:`main`.
CHILD_FLAGS: list[str] = []


def run_once(out: Path, env: dict, vm_llc_mib: int, profile: Path | None = None) -> dict:
    """One run in a fresh process: wall seconds, exit code, peak RSS."""
    argv = [sys.executable, __file__, "_child", "--out", str(out), *CHILD_FLAGS]
    if vm_llc_mib:
        argv += ["--vm-llc-mib", str(vm_llc_mib)]
    if profile is not None:
        argv += ["--profile", str(profile)]
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    tail = [line for line in done.stderr.splitlines() if line.startswith('{"rc"')]
    if done.returncode != 0 or not tail:
        raise SystemExit(f"the run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    record = json.loads(tail[-1])
    results = json.loads((out / "results.json").read_text())
    return {"wall_s": wall, "peak_rss_mib": record["peak_rss_bytes"] / 2**20,
            "stages_recorded": results.get("stages"), "cases": case_times(results)}


def case_times(results: dict) -> dict:
    """Per timed case: (median ms, CoV %) of its samples, as ``results compare`` and the report
    read them (CoV = sample std / mean)."""
    cases = {}
    for case in results.get("cases", []):
        samples = (case.get("measurement") or {}).get("samples_ms") or []
        if len(samples) > 1:
            mean = statistics.fmean(samples)
            cases[f"{case['matrix']} {case['backend']}"] = (
                statistics.median(samples), 100 * statistics.stdev(samples) / mean)
    return cases


def repeatability(runs: list[dict]) -> dict:
    """Per case: the CoV of each run's samples, and how far the runs' medians lie apart
    (``100 (max / min - 1)``: what ``results compare`` of two of them would show at most)."""
    names = sorted(set.intersection(*(set(r["cases"]) for r in runs))) if runs else []
    out = {}
    for name in names:
        medians = [r["cases"][name][0] for r in runs]
        out[name] = {"median_ms": [round(m, 4) for m in medians],
                     "cov_pct": [round(r["cases"][name][1], 1) for r in runs],
                     "medians_apart_pct": round(100 * (max(medians) / min(medians) - 1), 1)}
    return out


def profile_stages(path: Path, top: int) -> dict:
    """The :data:`STAGES` and the ``top`` functions by own time in the cProfile dump."""
    import pstats

    stats = pstats.Stats(str(path)).stats
    stages = {}
    for label, suffix, name in STAGES:
        seconds = [ct for (file, _, func), (_, _, _, ct, _) in stats.items()
                   if func == name and file.replace(os.sep, "/").endswith(suffix)]
        stages[label] = round(sum(seconds), 3) if seconds else None
    total = max(ct for (_, _, _, ct, _) in stats.values())
    ranked = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    return {"profiled_total_s": round(total, 3), "stages_s": stages,
            "top_own_time": [{"function": f"{Path(file).name}:{line}({func})",
                              "own_s": round(tt, 3), "cumulative_s": round(ct, 3),
                              "calls": nc}
                             for (file, line, func), (_, nc, tt, ct, _) in ranked]}


def measure(repeats: int, vm_llc_mib: int, top: int) -> dict:
    """Both modes: ``repeats`` runs each (first use: each in fresh folders) and one profiled."""
    modes = {}
    with tempfile.TemporaryDirectory(prefix="cpu-main-job-") as tmp:
        root = Path(tmp)
        base = {**os.environ, "PYTHONHASHSEED": "0"}

        def fresh(tag: str) -> dict:
            folder = root / tag
            folder.mkdir()
            return {**base, "SPARSESCOPE_STORE": str(folder / "store.sqlite"),
                    "SPARSESCOPE_CACHE": str(folder / "cache")}

        first = [run_once(root / f"first{i}-out", fresh(f"first{i}"), vm_llc_mib)
                 for i in range(repeats)]
        warm_env = fresh("warm")
        run_once(root / "warm-fill", warm_env, vm_llc_mib)  # fills the store and the cache
        again = [run_once(root / f"again{i}", warm_env, vm_llc_mib) for i in range(repeats)]
        profiles = {"first use": profile_stages(*_profiled(root, fresh("pfirst"), vm_llc_mib,
                                                          "pfirst"), top),
                    "again": profile_stages(*_profiled(root, warm_env, vm_llc_mib, "pagain"),
                                            top)}
        for name, runs in (("first use", first), ("again", again)):
            walls = [r["wall_s"] for r in runs]
            modes[name] = {"wall_s": [round(w, 2) for w in walls],
                           "median_wall_s": round(statistics.median(walls), 2),
                           "peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs)),
                           "stages_recorded": runs[-1]["stages_recorded"],
                           "repeatability": repeatability(runs),
                           **profiles[name]}
    return modes


def _profiled(root: Path, env: dict, vm_llc_mib: int, tag: str) -> tuple[Path]:
    path = root / f"{tag}.prof"
    run_once(root / f"{tag}-out", env, vm_llc_mib, profile=path)
    return (path,)


def machine() -> dict:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    caches = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            caches.append("L{} {} {} shared by {}".format(*(
                (index / f).read_text().strip() for f in ("level", "type", "size",
                                                          "shared_cpu_list"))))
        except OSError:
            continue
    try:
        virtual = " hypervisor " in f" {Path('/proc/cpuinfo').read_text()} ".replace("\n", " ")
    except OSError:
        virtual = None
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(),
            "caches_reported": caches, "under_hypervisor": virtual,
            "load_average_before": [round(x, 2) for x in load] if load else None}


def walls(seconds: list[float]) -> str:
    return ", ".join(f"{w:.1f}" for w in seconds)


def markdown(result: dict) -> str:
    """The per-mode table: median wall, RSS, then each stage (cProfile)."""
    modes = result["modes"]
    names = list(modes)
    lines = [f"| {result['label']} | " + " | ".join(names) + " |",
             "| --- |" + " --- |" * len(names),
             "| wall, median of runs (s) | " + " | ".join(
                 f"{modes[n]['median_wall_s']:.1f} ({walls(modes[n]['wall_s'])})"
                 for n in names) + " |",
             "| peak RSS (MiB) | " + " | ".join(str(modes[n]["peak_rss_mib"]) for n in names)
             + " |",
             "| cProfile total (s) | " + " | ".join(
                 f"{modes[n]['profiled_total_s']:.1f}" for n in names) + " |"]
    for label, _, _ in STAGES:
        cells = [modes[n]["stages_s"][label] for n in names]
        lines.append(f"| {label} | " + " | ".join("-" if c is None else f"{c:.2f}"
                                                  for c in cells) + " |")
    again = modes["again"]["repeatability"]
    lines += ["", f"| {result['label']}: case (again) | medians (ms) | CoV of each run (%) | "
              "medians apart (%) |", "| --- | --- | --- | --- |"]
    for name, rep in again.items():
        lines.append(f"| {name} | {', '.join(f'{m:.4f}' for m in rep['median_ms'])} | "
                     f"{', '.join(f'{c:.1f}' for c in rep['cov_pct'])} | "
                     f"{rep['medians_apart_pct']:.1f} |")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        parser = argparse.ArgumentParser()
        parser.add_argument("_child")
        parser.add_argument("--out", required=True)
        parser.add_argument("--vm-llc-mib", type=int, default=0)
        parser.add_argument("--profile", default="")
        parser.add_argument("--hide-gpu-libraries", action="store_true")
        return child(parser.parse_args())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per mode")
    parser.add_argument("--vm-llc-mib", type=int, default=0,
                        help="see the caches of a 2-vCPU VM reporting this L3 (MiB)")
    parser.add_argument("--top", type=int, default=12, help="functions in the top list")
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    parser.add_argument("--hide-gpu-libraries", action="store_true",
                        help="on a GPU host: import no GPU library (the job of a CPU machine)")
    args = parser.parse_args()
    if args.hide_gpu_libraries:
        CHILD_FLAGS.append("--hide-gpu-libraries")
    import sparsescope

    result = {"label": args.label, "command": "sparsescope " + " ".join(COMMAND) + " --out DIR",
              "code": str(Path(sparsescope.__file__).parent),
              "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": machine(), "vm_llc_mib": args.vm_llc_mib or None,
              "gpu_libraries_hidden": args.hide_gpu_libraries,
              "modes": measure(args.repeats, args.vm_llc_mib, args.top)}
    print(json.dumps(result, indent=1))
    if args.markdown:
        print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
