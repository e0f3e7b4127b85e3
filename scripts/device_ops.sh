#!/usr/bin/env bash
# SpMM and CSR row slicing on the lent H200 (issue 6): GPU tests, one measured run per op,
# instruction-roofline profiles of the dlmc3 SpMM kernels, and the committed folders.
#
#   bash scripts/device_ops.sh            # all phases, in order (run with carry=[".device-wheels"])
#   bash scripts/device_ops.sh tests      # one phase: tests | spmm | slice | profile | pack
#
# Phases, in the order `all` runs them (`all` is the one call; a phase that no longer fits in
# the 10-minute command is not started, and the log names the call that finishes the job,
# e.g. `bash scripts/device_ops.sh tests`; $WORK keeps what earlier calls measured):
#   spmm     dlmc3, k = 1, 8, 64, 256 row-major and 8, 64 column-major, every SpMM GPU backend
#   slice    slice003 with seed 003's workloads, scalar and per-nnz weights, every slice backend
#   profile  ncu (instruction-roofline metrics) of the own kernel and the cuSPARSE routes at
#            k = 8 and 64 on the three dlmc3 matrices; the SpMM report is re-rendered with them
#   pack     README.md written into each folder from the files alone; spmm.tar.gz, slice.tar.gz
#   tests    pytest of the GPU tests of both ops (tests/gpu/test_gpu_{spmm,slice}.py) and
#            their CPU suites                                           -> pytest.log
# `sparsescope run --op ...` is used when the CLI has it; until then the same loop runs here
# through the public pieces (op_runner.run_op_matrix, results.io, report.ops_sections).
#
# Comes back in $OUT (the device tool's folder; at most 8 files): versions.txt, pytest.log,
# ops.log, spmm.tar.gz, slice.tar.gz. Unpack with
#   tar -C results/h200 -xzf spmm.tar.gz && tar -C results/h200 -xzf slice.tar.gz
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/sparsescope-ops}"
WORK="${WORK:-/tmp/sparsescope-ops-work}"
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=src PYTHONUNBUFFERED=1 SPARSESCOPE_STORE="$WORK/store.sqlite" WORK
PHASE="${1:-all}"
LOG="$OUT/ops.log"

if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi

versions() {
    {
        python3 - <<'PY'
import datetime, importlib.util, platform, re, subprocess

def out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({exc})"

print("date_utc:", datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
query = out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
name, _, driver = (query.splitlines() or ["unknown"])[0].partition(", ")
print("gpu:", name)
print("driver:", driver)
m = re.search(r"CUDA Version:\s*([\d.]+)", out(["nvidia-smi"]))
print("cuda_driver_api:", m.group(1) if m else "unknown")
m = re.search(r"release ([\d.]+)", out(["nvcc", "--version"]))
print("nvcc:", m.group(1) if m else "unknown")
m = re.search(r"Version ([\d.]+)", out(["ncu", "--version"]))
print("ncu:", m.group(1) if m else "unavailable")
print("python:", platform.python_version())
import numpy, scipy
print("numpy:", numpy.__version__)
print("scipy:", scipy.__version__)
for module in ("torch", "cupy", "jax", "brainevent", "pyGinkgo"):
    if importlib.util.find_spec(module) is None:
        print(f"{module}: not installed")
        continue
    try:
        mod = __import__(module)
        print(f"{module}:", getattr(mod, "__version__", "installed"))
    except Exception as exc:
        print(f"{module}: import failed ({type(exc).__name__}: {exc})")
from sparsescope.backends.op_runner import resolve_backend
from sparsescope.ops.registry import get_op
for op in ("spmm", "slice"):
    for name in get_op(op).defaults["gpu"]:
        ok, why = resolve_backend(name).availability()
        print(f"backend {name}:", "available" if ok else f"unavailable: {why}")
PY
        echo "--- nvidia-smi ---"
        nvidia-smi
    } > "$WORK/versions.txt" 2>&1
    cp "$WORK/versions.txt" "$OUT/versions.txt"
}

tests() {
    python3 -m pytest tests/gpu/test_gpu_spmm.py tests/gpu/test_gpu_slice.py tests/ops \
        tests/backends/test_op_runner.py tests/model/test_model_spmm.py \
        tests/model/test_model_slice_rows.py \
        -q -p no:cacheprovider -ra 2>&1 | tee "$OUT/pytest.log" | tail -n 5
}

measure() {  # $1: op, $2: suite
    local dest="$WORK/$1" start
    rm -rf "$dest"
    start=$(date +%s)
    if python3 -m sparsescope run --help 2>/dev/null | grep -q -- "--op"; then
        if [ "$1" = spmm ]; then
            extra=(--k 1 --k 8 --k 64 --k 256 --layout row --layout col)
        else
            extra=(--weights scalar --weights per-nnz)
        fi
        python3 -m sparsescope run --op "$1" --suite "$2" --backend all --out "$dest" \
            --no-store "${extra[@]}" >> "$LOG" 2>&1
        echo "sparsescope run --op $1 --suite $2 --backend all ${extra[*]}" \
            > "$WORK/$1.command"
        # the op sections whatever the CLI's report integration does
        python3 -c 'import sys; from sparsescope.results.io import read_runset; from sparsescope.report.ops_sections import write_ops_report; write_ops_report(read_runset(sys.argv[1] + "/results.json"), sys.argv[1])' \
            "$dest" >> "$LOG" 2>&1
    else
        python3 - "$1" "$2" "$dest" >> "$LOG" 2>&1 <<'PY'
import sys, uuid
from datetime import UTC, datetime
from pathlib import Path

from sparsescope import api
from sparsescope.backends.op_runner import resolve_backend, run_op_matrix
from sparsescope.matrices import compute_stats
from sparsescope.matrices.suite_dlmc import load, workload_params
from sparsescope.ops.registry import expand_params, get_op
from sparsescope.report.ops_sections import write_ops_report
from sparsescope.results.io import write_runset
from sparsescope.results.provenance import collect_provenance
from sparsescope.results.records import MatrixRecord, RunSet
from sparsescope.timing.types import TimingConfig

op, suite, dest = sys.argv[1], sys.argv[2], Path(sys.argv[3])
created = datetime.now(UTC).isoformat(timespec="seconds")
backends = list(get_op(op).defaults["gpu"])
timing = TimingConfig(warmups=5, repeats=20)
# api._device looks backends up in the SpMV registry: a registered GPU backend stands for ours
spec, ceilings, driver = api._device(["cupy-cusparse-i32"])
records, cases, libraries = [], [], {}
for matrix in load(suite):
    records.append(MatrixRecord(matrix.name, matrix.source, matrix.kind, matrix.analog_of,
                                compute_stats(matrix.csr)))
    if op == "spmm":
        params = (expand_params("spmm", {"k": [1, 8, 64, 256], "layout": ["row"]})
                  + expand_params("spmm", {"k": [8, 64], "layout": ["col"]}))
    else:
        params = [dict(p, weights=w) for p in workload_params(suite, matrix.name, "slice")
                  for w in ("per-nnz", "scalar")]
    for case in run_op_matrix(matrix, backends, op, params, config=timing):
        cases.append(case)
        print(f"{case.matrix:<14} {case.backend:<20} {case.notes.get('op.k', '')}"
              f"{case.notes.get('op.rows_selected', '')} {case.outcome:<8} "
              f"{case.time_ms if case.time_ms is not None else case.reason}", flush=True)
for name in backends:
    try:
        libraries.update(resolve_backend(name).library_versions())
    except Exception as exc:  # a missing optional library must not sink the provenance
        libraries[name] = f"unavailable ({exc})"
command = f"bash scripts/device_ops.sh {op} (op_runner.run_op_matrix over suite {suite})"
provenance = api._with_created(collect_provenance(
    command, device=ceilings.device or spec.vendor_name, driver=driver, libraries=libraries),
    created)
runset = RunSet(run_id=uuid.uuid4().hex[:12], suite=suite, scale=1.0, provenance=provenance,
                device=spec, ceilings=ceilings, timing=timing, matrices=tuple(records),
                cases=tuple(cases), latency_ns=spec.dram_latency_ns)
write_runset(dest / "results.json", runset)
write_ops_report(runset, dest)
(Path(dest).parent / f"{op}.command").write_text(command + "\n")
PY
    fi
    echo "$1 run took $(( $(date +%s) - start )) s" | tee -a "$LOG"
}

profile() {
    python3 - >> "$LOG" 2>&1 <<'PY'
import os, sys
from pathlib import Path

from sparsescope.backends.op_runner import resolve_backend
from sparsescope.profile import load
from sparsescope.profile.collect import CollectOptions, run_profile
from sparsescope.profile.errors import ProfileError
from sparsescope.report.ops_sections import write_ops_report
from sparsescope.results.io import read_runset

dest = Path(os.environ["WORK"]) / "spmm"
folder = dest / "profiles"
options = CollectOptions(groups=("instruction-roofline",), import_source=False)
backends = [b for b in ("spmm-cuda-rowwarp", "spmm-torch-i32", "spmm-cupy-i32", "spmm-ginkgo")
            if resolve_backend(b).availability()[0]]
profiles, labels = [], []
for matrix in ("dlmc-512x1024", "dlmc-256x512", "dlmc-128x256"):
    for k in (8, 64):
        for backend in backends:
            target = [sys.executable, "-m", "sparsescope.backends.op_runner", "--op", "spmm",
                      "--suite", "dlmc3", "--matrix", matrix, "--backend", backend,
                      "--param", f"k={k}", "--check-only"]
            stem = f"{backend}_{matrix}_k{k}"
            try:
                run = run_profile(target, folder, stem, options, timeout_s=240)
            except ProfileError as exc:
                print(f"profile {stem} failed: {exc}", flush=True)
                continue
            (folder / f"{stem}.ncu-rep").unlink(missing_ok=True)  # the CSV exports suffice
            kernels = [p for p in load(run.raw_csv) if p.duration_ns]
            if not kernels:
                continue
            longest = max(p.duration_ns for p in kernels)
            for p in kernels:  # the SpMM kernels, not the poison fill or tiny helpers
                if p.duration_ns >= 0.2 * longest and "fill" not in p.name.lower():
                    profiles.append(p)
                    labels.append(f"{backend} k={k} {matrix}: {p.name}")
            print(f"profiled {stem}: {len(kernels)} launches", flush=True)
runset = read_runset(dest / "results.json")
write_ops_report(runset, dest, profiles=profiles, labels=labels)
print(f"spmm report re-rendered with {len(profiles)} instruction-roofline points", flush=True)
PY
}

pack() {
    python3 - >> "$LOG" 2>&1 <<'PY'
import json, os
from pathlib import Path

work, out = Path(os.environ["WORK"]), Path(os.environ["OUT"])
versions = {}
# $OUT is new on every device call; $WORK keeps the versions taken with the measurements
for line in (work / "versions.txt").read_text().splitlines():
    if line.startswith("---"):
        break
    key, sep, value = line.partition(": ")
    if sep:
        versions[key.strip()] = value.strip()
for op in ("spmm", "slice"):
    dest = work / op
    if not (dest / "results.json").is_file():
        continue
    results = json.loads((dest / "results.json").read_text())
    cases = results["cases"]
    counts = {o: sum(c["outcome"] == o for c in cases) for o in ("ok", "skipped", "failed")}
    reasons = sorted({f"`{c['backend']}`: {c['reason']}" for c in cases
                      if c["outcome"] != "ok"})
    command = (work / f"{op}.command").read_text().strip() if (work / f"{op}.command").is_file() \
        else "bash scripts/device_ops.sh"
    lines = [f"# {op} on an H200 (issue 6)", "",
             f"- **Command:** `{command}` (through `bash scripts/device_ops.sh`)",
             f"- **Date (UTC):** {versions.get('date_utc', 'unknown')}",
             f"- **Run:** `{results['run_id']}`, suite `{results['suite']}`, "
             f"{len(results['matrices'])} matrices, {len(cases)} cases: {counts['ok']} ok, "
             f"{counts['skipped']} skipped, {counts['failed']} failed",
             "- **Versions:** " + ", ".join(f"{k} {versions[k]}" for k in (
                 "gpu", "driver", "cuda_driver_api", "nvcc", "ncu", "python", "numpy", "scipy",
                 "torch", "cupy", "jax", "brainevent", "pyGinkgo") if k in versions),
             "", "Files: `results.json` (every case, raw samples), `report.md` / `report.html` "
             "(sections 10 onwards: this op), `figures/`, `tables/`"
             + (", `profiles/` (ncu raw and details CSV exports)" if op == "spmm" else "") + ".",
             ""]
    if reasons:
        lines += ["Cases not timed, and why:", ""] + [f"- {r}" for r in reasons] + [""]
    (dest / "README.md").write_text("\n".join(lines))
    os.system(f"tar -C '{work}' -czf '{out}/{op}.tar.gz' '{op}'")
    print(f"packed {op}: {counts}", flush=True)
PY
}

START=$(date +%s)
BUDGET_S="${BUDGET_S:-560}"  # the device tool stops a command at 600 s
fits() {  # $1: phase, $2: seconds it may need; false (and a note) when the budget is short
    local left=$(( BUDGET_S - ($(date +%s) - START) ))
    if [ "$left" -lt "$2" ]; then
        echo "not started: phase $1 (needs ~$2 s, $left s left); run next:" \
             "bash scripts/device_ops.sh $1 && bash scripts/device_ops.sh pack" | tee -a "$LOG"
        return 1
    fi
}

case "$PHASE" in
    all)  # measurements first (each case passes the correctness gate before it is timed)
        versions
        fits spmm 150 && measure spmm dlmc3
        fits slice 180 && measure slice slice003
        fits profile 200 && profile
        pack
        fits tests 150 && tests ;;
    tests) versions; tests ;;
    spmm) measure spmm dlmc3 ;;
    slice) measure slice slice003 ;;
    profile) profile ;;
    pack) pack; cp "$WORK/versions.txt" "$OUT/versions.txt" 2>/dev/null ;;
    *) echo "unknown phase $PHASE (all | tests | spmm | slice | profile | pack)"; exit 2 ;;
esac
grep -E "^(date_utc|gpu|backend )" "$WORK/versions.txt" 2>/dev/null
tail -n 5 "$LOG" 2>/dev/null
ls -la "$OUT"
