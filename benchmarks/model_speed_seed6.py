"""The model's CPU time on the full-scale seed6 analogs (issue 35, "the tool at its users' speed").

    git worktree add /tmp/model_before HEAD       # the older commit
    python benchmarks/model_speed_seed6.py --before-src /tmp/model_before/src \\
        --out /tmp/seed6_speed.json
    python benchmarks/model_speed_seed6.py --table /tmp/seed6_speed.json \\
        --write benchmarks/results/model_speed.md

``sparsescope run --suite seed6 --backend all`` on an H200 spent about 41 s of its 133 s in the
time model on the host (2026-11-28, ``results/h200/gpu-tests/2026-11-28-seed6``): 23.7 s in
its ``prediction`` stage (each case's ``context.predict_call``) and 17.7 s in
``cuda-spmv-auto``'s choice (every candidate planned and predicted). Neither needs the GPU, so
both are measured here, on the CPU, each in a fresh process (``PYTHONPATH`` picks the tree):

- **the run's model work** (``--one NAME``, one seed6 entry at scale 1): every backend of
  ``--backend all`` in the run's order, on that run's measured H200 ceilings and L2 (read from
  its ``seed6_results.json.xz``), in the latency mode, SASS read from the (warm) cache: each
  case's ``predict_call`` on the host plan of its kernel (what the run predicts from the
  prepared call), and auto's choice (``select_by_prediction``: its candidates planned on the
  chooser's row sample and predicted; no trial, which times on the GPU). Recorded: the
  prediction stage's seconds (the sum over the cases), the choice's wall seconds and its
  model's (``predict_call`` inside it, summed over its threads), the process's CPU seconds, and
  every prediction and the choice's table, which the two trees must give alike;
- **the what-if** ``model suite:seed6#NAME --backend all --gpu H200 --json``, ``--no-sass`` and
  with the SASS cache warm (this machine's store holds no H200 ceilings: the datasheet's rates,
  without the L2 term and the format's floor the run's ceilings bring).

Every path runs ``--repeats`` times for each tree, the two trees' runs interleaved (before,
after, before, after, ...: a shared machine's load falls on both alike), and keeps the
fastest; an untimed run of each path and tree first fills the SASS cache and generates the
analog (cached after). The page section it writes replaces its own earlier one (between
:data:`BEGIN` and :data:`END`) and leaves the rest of the page as it was.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_speed import best, machine, timed, versions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "results/h200/gpu-tests/2026-11-28-seed6/seed6_results.json.xz"
NAMES = ("webbase-1M", "cant", "pwtk", "ldoor", "circuit5M", "cage15")
WHAT_IF = ("circuit5M", "cage15")
BEGIN = "<!-- model_speed_seed6: begin -->"
END = "<!-- model_speed_seed6: end -->"


def one(name: str, run_file: Path) -> dict:
    """The run's model work on seed6 entry ``name`` (module docstring), in this process."""
    import resource
    from dataclasses import replace

    import sparsescope.context.predict as context_predict
    from sparsescope.api.what_if_summary import default_memory_budget
    from sparsescope.backends.registry import get_backend
    from sparsescope.context.device import rates_context, sass_refiner
    from sparsescope.hardware.specs import get_spec
    from sparsescope.hardware.types import MeasuredCeilings
    from sparsescope.matrices.suites import build_entry, find_entry
    from sparsescope.model.predict import device_rates
    from sparsescope.ops.registry import get_op
    from sparsescope.timing.types import TimingConfig
    from sparsescope.whatif import expand_backends

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    recorded = json.loads(lzma.decompress(run_file.read_bytes()))  # read by any tree's code
    spec = replace(get_spec("H200"), l2_bytes=int(recorded["device"]["l2_bytes"]))
    ceilings = MeasuredCeilings(**recorded["ceilings"])
    device = rates_context(device_rates(spec, ceilings), refine=sass_refiner(spec), spec=spec,
                           origin="rates: the run's measured ceilings over the datasheet")
    csr = build_entry(find_entry("seed6", name, 1.0), 0).csr
    start_cpu = cpu()
    model_s = [0.0]
    real_predict_call = context_predict.predict_call

    def counted_predict_call(*args, **kwargs):   # auto's predictions, summed over threads
        began = time.perf_counter()
        try:
            return real_predict_call(*args, **kwargs)
        finally:
            model_s[0] += time.perf_counter() - began

    context_predict.predict_call = counted_predict_call
    config = TimingConfig()
    op = get_op("spmv")
    cases: dict[int, object] = {}
    out: dict = {"name": name, "nnz": int(csr.nnz), "cases": {}, "predicted_ms": {},
                 "choice": {}}
    with context_predict.plan_memory_budget(default_memory_budget()):
        for backend_name in expand_backends(["all"]):
            backend = get_backend(backend_name)
            width = int(backend.capability.index_bytes[0])
            if width not in cases:
                cases[width] = op.plan_case(csr, None, value_dtype="float32",
                                            index_bytes=width)
            case = cases[width]
            backend.use_model(device)
            if hasattr(backend, "select") and getattr(backend, "by", "") != "rules":
                model_s[0] = 0.0
                began = time.perf_counter()
                selection, table = backend.select(csr, "float32", device.rates.sm_count)
                out["choice"] = {
                    "wall_s": time.perf_counter() - began, "model_s": model_s[0],
                    "chosen": [selection.backend, selection.params],
                    "table": {p.candidate.label: p.predicted_ms for p in table}}
            plan = context_predict.planned_call(case, backend, device, "float32", width)
            if plan.traffic is None or plan.shape is None:
                continue
            began = time.perf_counter()
            p = real_predict_call(case, plan.traffic, plan.shape, device, timing=config,
                                  who=backend_name)
            out["cases"][backend_name] = time.perf_counter() - began
            out["predicted_ms"][backend_name] = p.predicted_ms
    out["prediction_s"] = sum(out["cases"].values())
    out["cpu_s"] = cpu() - start_cpu
    return out


def run_one(name: str, env: dict) -> dict:
    """:func:`one` in a fresh process of the tree ``env`` picks, with its wall time and peak
    RSS."""
    began = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+") as errors:
        proc = subprocess.Popen([sys.executable, __file__, "--one", name], env=env,
                                stdout=subprocess.PIPE, stderr=errors, text=True)
        stdout = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.stdout.close()
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            return {"error": (errors.read().strip().splitlines() or ["failed"])[-1][:300]}
    got = json.loads(stdout.strip().splitlines()[-1])
    got["wall_s"] = time.perf_counter() - began
    got["peak_rss_mib"] = round(usage.ru_maxrss / 1024)
    return got


def _fastest(tries: list[dict]) -> dict:
    """The try of the least prediction + choice seconds, every try's kept beside it."""
    done = [t for t in tries if "error" not in t]
    if not done:
        return tries[0]
    fastest = min(done, key=lambda t: t["prediction_s"] + t["choice"].get("wall_s", 0.0))
    return {**fastest, "tries_s": [round(t["prediction_s"] + t["choice"].get("wall_s", 0.0), 2)
                                   for t in done]}


def run(before_src: str, repeats: int, names: list[str], what_if: list[str]) -> dict:
    """Both trees, their runs interleaved (before, after, before, after, ...) so that the load
    of a shared machine falls on both alike: ``before_src`` (a worktree's ``src``) and the tree
    this script's ``PYTHONPATH`` (or install) picks."""
    after_env = dict(os.environ)
    before_env = {**after_env, "PYTHONPATH": before_src}
    envs = {"before": before_env, "after": after_env}
    out: dict = {}
    for label, env in envs.items():
        out[label] = {"label": label, "date_utc": datetime.now(UTC).isoformat(
            timespec="seconds"), "machine": machine(), "versions": versions(env), "work": {},
            "what_if": {}}
    for name in names:
        print(f"run's model work: {name}", file=sys.stderr, flush=True)
        tries: dict[str, list] = {label: [] for label in envs}
        for env in envs.values():
            run_one(name, env)   # untimed: generates the analog, fills the SASS cache
        for _ in range(repeats):
            for label, env in envs.items():
                tries[label].append(run_one(name, env))
        for label in envs:
            out[label]["work"][name] = _fastest(tries[label])
    for name in what_if:
        print(f"what-if: {name}", file=sys.stderr, flush=True)
        argv = ["model", f"suite:seed6#{name}", "--backend", "all", "--gpu", "H200", "--json"]
        for key, extra in (("model --no-sass", ["--no-sass"]), ("model (SASS warm)", [])):
            runs: dict[str, list] = {label: [] for label in envs}
            for env in envs.values():
                timed([*argv, *extra], env)   # untimed
            for _ in range(repeats):
                for label, env in envs.items():
                    runs[label].append(timed([*argv, *extra], env))
            for label in envs:
                out[label]["what_if"][f"{name} {key}"] = best(runs[label])
    end = [round(x, 2) for x in os.getloadavg()]
    for label in envs:
        out[label]["machine"]["load_avg_end"] = end
    return out


def _same(before: dict, after: dict) -> str:
    """Whether two trees gave every prediction and the choice alike."""
    if "error" in before or "error" in after:
        return "-"
    same = (before["predicted_ms"] == after["predicted_ms"]
            and before["choice"].get("table") == after["choice"].get("table")
            and before["choice"].get("chosen") == after["choice"].get("chosen"))
    count = len(after["predicted_ms"]) + len(after["choice"].get("table", {}))
    return f"yes ({count})" if same else "**no**"


def _work(r: dict) -> str:
    if "error" in r:
        return f"failed ({r['error']})"
    c = r["choice"]
    return (f"{r['prediction_s']:.2f} + {c['wall_s']:.2f} s (model {c['model_s']:.2f}); "
            f"CPU {r['cpu_s']:.2f} s")


def table(before: dict, after: dict) -> str:
    """The page section: machine, the run's model work per entry, the what-if rows."""
    lines = [BEGIN, "## The full-scale seed6 analogs on the H200's rates: the run's model "
             "work and the what-if (issue 35)", "",
             "Written by `benchmarks/model_speed_seed6.py` (`--table RESULTS.json "
             "--write benchmarks/results/model_speed.md`, which replaces this section alone); "
             "its docstring says what each path runs. Each cell is the fastest of the "
             "repeats, each a fresh process; before: a worktree of the commit named "
             "(`PYTHONPATH` to its `src`), after: the working tree, in one sitting, the two "
             "trees' runs interleaved.", "",
             "| | before | after |", "| --- | --- | --- |"]
    for key in ("label", "date_utc"):
        lines.append(f"| {key.replace('_', ' ')} | {before[key]} | {after[key]} |")
    for key in ("commit", "python", "numpy"):
        lines.append(f"| {key} | {before['versions'][key]} | {after['versions'][key]} |")
    for key in ("nproc", "cpu", "load_avg_start", "load_avg_end"):
        lines.append(f"| {key.replace('_', ' ')} | {before['machine'].get(key)} | "
                     f"{after['machine'].get(key)} |")
    lines += ["", "The run's model work (`sparsescope run --suite seed6 --backend all` on the "
              "H200, its CPU side: the prediction stage + auto's choice (the model's part of "
              "it, summed over its threads); the process's CPU time, the analog's load "
              "included):", "",
              "| entry | nonzeros | before | after | prediction stage | auto's choice | "
              "same predictions and choice |", "| --- | --- | --- | --- | --- | --- | --- |"]
    totals = {"before": [0.0, 0.0], "after": [0.0, 0.0]}
    for name in after["work"]:
        b, a = before["work"].get(name, {"error": "not run"}), after["work"][name]
        for side, r in (("before", b), ("after", a)):
            if "error" not in r:
                totals[side][0] += r["prediction_s"]
                totals[side][1] += r["choice"]["wall_s"]
        both = "error" not in b and "error" not in a
        stage = f"{b['prediction_s']:.2f} -> {a['prediction_s']:.2f} s" if both else "-"
        choice = f"{b['choice']['wall_s']:.2f} -> {a['choice']['wall_s']:.2f} s" if both else "-"
        nnz = a.get("nnz", b.get("nnz", 0))
        lines.append(f"| {name} | {nnz:,} | {_work(b)} | {_work(a)} | {stage} | {choice} | "
                     f"{_same(b, a)} |")
    (bp, bc), (ap, ac) = totals["before"], totals["after"]
    lines.append(f"| **all six** | | {bp:.2f} + {bc:.2f} = {bp + bc:.2f} s | {ap:.2f} + "
                 f"{ac:.2f} = {ap + ac:.2f} s | {bp:.2f} -> {ap:.2f} s | {bc:.2f} -> "
                 f"{ac:.2f} s | |")
    lines += ["", "The what-if (`model suite:seed6#NAME --backend all --gpu H200 --json`, this "
              "machine's store: the H200's datasheet):", "",
              "| path | before | after |", "| --- | --- | --- |"]
    for key in after["what_if"]:
        cells = []
        for side in (before, after):
            r = side["what_if"].get(key)
            cells.append("not run" if r is None else
                         f"failed ({r.get('error', '')})" if r.get("exit") else
                         f"{r['wall_s']:.2f} s (CPU {r['cpu_s']:.2f} s, "
                         f"{r['peak_rss_mib']:,} MiB)")
        lines.append(f"| {key} | {cells[0]} | {cells[1]} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_section(page: Path, section: str) -> None:
    """``section`` in ``page``: in place of its earlier one, else right below the title."""
    text = page.read_text() if page.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + section + "\n" + tail
    else:
        title, _, body = text.partition("\n")
        text = f"{title}\n\n{section}\n{body.lstrip(chr(10))}" if title else section
    page.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", help="the older tree's src folder (a worktree's)")
    parser.add_argument("--out", help="write the results JSON (both trees) here")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--names", nargs="+", choices=NAMES, default=list(NAMES),
                        help="seed6 entries of the run's model work")
    parser.add_argument("--what-if", nargs="*", choices=NAMES, default=list(WHAT_IF),
                        help="seed6 entries of the what-if rows")
    parser.add_argument("--one", choices=NAMES, help=argparse.SUPPRESS)
    parser.add_argument("--table", metavar="RESULTS", help="the section of a results JSON")
    parser.add_argument("--write", help="with --table: the Markdown page to put the section in")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, RUN)))
        return 0
    if args.table:
        both = json.loads(Path(args.table).read_text())
        section = table(both["before"], both["after"])
        if args.write:
            write_section(Path(args.write), section)
        print(section)
        return 0
    if not args.before_src:
        parser.error("give --before-src (or --table)")
    results = run(args.before_src, args.repeats, args.names, args.what_if)
    text = json.dumps(results, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
