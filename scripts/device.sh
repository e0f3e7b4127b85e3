#!/usr/bin/env bash
# The one device driver: named recipes that run sparsescope on a lent GPU machine, in one call,
# through the product's own commands (`sparsescope run / sweep / profile / ceilings / results /
# model score`, `pytest -m gpu`). Run from anywhere; it works in the repository root.
#
#   bash scripts/device.sh RECIPE [ARGS...]      # one recipe
#   bash scripts/device.sh list                  # the recipes, what each runs and writes
#
# Everything a recipe keeps lands in $OUT (the device tool's folder that comes back; a
# /tmp/ss-RECIPE folder elsewhere), at most eight files (the tool's limit): larger outputs are
# tarred. Work folders live under /tmp. The machine has no network: the wheels its image lacks
# travel with the tree (`scripts/fetch_device_wheels.sh` fills .device-wheels/ and
# .device-wheels-min/; pass carry=[".device-wheels"] or [".device-wheels-min"]). Every recipe
# writes env.txt first (date, commit, GPU, driver, library versions).
#
# Recipes (ARGS in brackets; environment overrides in braces):
#   real-dev [latency|throughput ...] {BUDGET_S=560, PYTEST_WORKERS=4, VARIANTS=,
#                         SUITE=, VARIANT_SET=cusparse-spmv, GPU_TESTS=1}
#                         issue 36: every GPU-marked test first (pytest -m gpu -n W), then
#                         `run` on the real development set (.real-dev/, built here by
#                         scripts/real_matrices.py --format npz; carry it with
#                         .device-wheels-min and .device-wheels-nvmath), every default GPU
#                         backend plus the planned cuSPARSE variants (--variants
#                         cusparse-spmv) and each of VARIANTS (space-separated --variant
#                         specs), in each timing mode named (default latency), each
#                         stopped by SIGINT at the budget with its measured cases kept. Writes
#                         env.txt, pytest_gpu.log, MODE.log, MODE_results.json.gz,
#                         MODE_show.txt, family_errors.md. SUITE=NAME: that generated suite
#                         at scale 1 instead (e.g. population-held-out); VARIANT_SET="": no
#                         variant set; GPU_TESTS=0: no tests.
#   gpu-tests [--seed6] [--cpu-tests] {PYTEST_WORKERS=4}
#                         every GPU-marked test (pytest -m gpu -n W), [the CPU tests of the
#                         GPU-facing stages,] and `sparsescope ceilings`; with --seed6 also
#                         `run --suite seed6 --backend all` and its stage breakdown. Writes
#                         env.txt, pytest_gpu.log, [pytest.log,] ceilings.json [, seed6.log,
#                         seed6_results.json, seed6_show.txt, seed6_stages.txt]. Exit status:
#                         pytest's.
#   kernels [--tests] [--set seed6-sweep] [--repeats 30] [--scale 1] [--suite seed6]
#                         own SpMV kernels (a variant set) against cuSPARSE and auto through
#                         `run --variants`. Writes env.txt [, pytest_gpu.log], run.log,
#                         results.json, report.md, show.txt. Exit status: the run's.
#   seed6-speed [--profile] {BEFORE_SRC=.before/src, AFTER_SRC=src, RUN_LIMIT_S=330}
#                         issue 35: `run --suite seed6 --backend all` at full scale from an
#                         older source tree (BEFORE_SRC: `git archive REV src | tar -x -C
#                         .before`, carried) and from this tree, one after the other on this
#                         machine, each with cold caches of its own (store, generated
#                         matrices, SASS, CuPy and CUDA caches), then each one's stage
#                         breakdown; with --profile also benchmarks/profile_speed.py (both
#                         trees). AFTER_SRC: the tree timed after (a snapshot beside a
#                         working tree others are editing; its REVISION file names it). A run at scale 0.02 of this tree goes first (smoke.log):
#                         when it fails, nothing else runs. Writes env.txt, timings.txt,
#                         {before,after}_results.json.gz, {before,after}_stages.txt,
#                         logs.tgz (smoke, before, after logs [, profile_speed.md]) [,
#                         profile_speed.json].
#   model [--repeats 30] [--scale 1] [--gpu-tests]
#                         the time model on this GPU: `ceilings`, `run --suite seed6 --backend
#                         all` (each case predicted, then timed), `results show`. Writes
#                         env.txt, run.log, results.json, report.md, show.json, show.txt,
#                         report_bundle.tar.gz [, pytest_gpu.log].
#   seed6                 the committed seed6 run: the suite, every GPU backend, twice back to
#                         back. Writes versions.txt, timings.txt, run_a.log, run_b.log,
#                         compare.json, show.json, seed6.tar.gz, store.sqlite.
#   profile [--budget-s 200] [--matrices cant,cage15] [--backends a,b]
#                         `profile run` (all groups) of each backend on each seed6 matrix, and
#                         one targeted csrmv_v3 profile. Writes env.txt, timings.tsv,
#                         profile.log, profiles_csv.tar.gz, profiles_rep.tar.gz.
#   profile-cases SUITE#MATRIX:OP:K:BACKEND ...
#                         `profile run` of named cases (groups PROFILE_GROUPS, default
#                         launch, occupancy, stalls, memory). Writes env.txt, profile.log,
#                         profiles.tar.gz (per case NAME.json, the CSV exports, the .ncu-rep).
#   ab-kernel A_FILE KERNEL_FILE -- RUN_ARGS...
#                         A/B of one kernel source: `run RUN_ARGS` with KERNEL_FILE as A_FILE
#                         (A) and as in the tree (B), A, B, A, B. Writes env.txt, A1/B1/A2/B2
#                         .json and .log, ab.txt (scripts/ab_table.py).
#   finish-ab ['SUITE#M1,M2' ...]
#                         the tile kernels' split-row completion, fixup launch against finish
#                         in the last tile, beside cuSPARSE. Writes env.txt, pytest_gpu.log,
#                         run_N.log, results_N.json, show_N.txt, ab.md.
#   ops [all|versions|sweep|spmm|slice|profile|report|pack|tests] {BUDGET_S=400}
#                         SpMM and row slicing (issue 6): the rowwarp launch variants, one run
#                         per op, ncu profiles (a case a call of `profile run`), reports and
#                         READMEs (`results readme`), GPU tests. Writes ops.log,
#                         versions.txt, spmm.tar.gz, slice.tar.gz, pytest.log.
#   spmm-blocktc {ENTRIES, KS, PART, LIMIT, BACKENDS, VARIANTS}
#                         the block tensor-core SpMM kernel: its instances' registers, its GPU
#                         tests, a sweep of pruned weights. Writes env.txt, regs.txt,
#                         pytest_blocktc.log, command.txt, sweep.log, results.json.gz, table.md.
#   break-even {ENTRIES, KS="32 256", LAYOUTS="row col", BUDGET_S=480, EXTRA, GPU_TESTS}
#                         issue 37 item 4: the dense break-even of SpMM on the pruned-weights
#                         entries of suite spmm-population (default all 24, 50-98 % sparse):
#                         `run --op spmm` of auto, the CuPy, PyTorch and planned cuSPARSE
#                         SpMM (default plan, CSR_ALG2, CSR_ALG3) and the dense cuBLAS peer in
#                         FP32 and TF32, stopped by SIGINT at the budget with its measured
#                         cases kept. EXTRA: more run arguments (e.g. "--backend
#                         spmm-cuda-rowtile"); GPU_TESTS: test files run first (pytest -m gpu).
#                         Carry .device-wheels-min and .device-wheels-nvmath. Writes env.txt,
#                         [pytest_gpu.log,] run.log, results.json.gz, show.txt, report.md.
#   spmm-population [SUITE] [LIMIT] [--gpu-tests] {SOURCES, KS, LAYOUTS, BACKENDS}
#                         issue 18's SpMM sweep in parts of at most 10 minutes, resumed from
#                         the carried store (carry out/spmm-pop too). Writes env.txt,
#                         command.txt, summary.txt, summary.json (`model score --spmm-bounds`),
#                         results.json.gz, store.sqlite.gz, bundle.tgz [, pytest_gpu.log].
#   latency-probe PROBE_ARGS... {NCU_CASES="MATRIX:K:LAYOUT:BACKEND[:SKIP] ...", GPU_TESTS=FILES}
#                         benchmarks/spmm_latency_probe.py (each case flushed and warm, its
#                         kernels' warm durations), then ncu of each NCU_CASES case (warp
#                         states, scheduler, memory, instruction stats). Writes env.txt,
#                         probe.md, probe.json, ncu.tar.gz (ncu_N.ncu-rep / .txt / .log;
#                         side by side: `sparsescope profile report ncu_*.ncu-rep`)
#                         [, pytest_gpu.log].
#   spmm-interleaved ARGS [-- ARGS ...] {GPU_TESTS=FILES}
#                         benchmarks/spmm_interleaved.py once per argument set (sets split by
#                         --): two backends checked, prepared once, and timed in alternating
#                         rounds. Writes env.txt, interleaved.md (every set's table),
#                         interleaved.json (every set's rows) [, pytest_gpu.log].
#   bench NAME ARGS {GPU_TESTS=FILES}
#                         benchmarks/NAME.py ARGS --json $OUT/NAME.json, the wheels installed
#                         first. Writes env.txt, NAME.md (its table), NAME.json, NAME.log
#                         [, pytest_gpu.log].
#   timing-after-profiler ARGS {GPU_TESTS=FILES}
#                         benchmarks/timing_after_profiler.py: each backend timed again and
#                         again with the protocol's profiler session after each timing, settled,
#                         unsettled and without it. Writes env.txt, after_profiler.md,
#                         after_profiler.json [, pytest_gpu.log].
#   spmm-real-dev {KS="8 64", LAYOUTS="col row", BUDGET_S=300, GPU_TESTS=1, MODE=latency,
#                         VARIANTS=, EXTRA_BACKENDS=, MATRICES_DIR=.real-dev}
#                         issue 37 item 3: every GPU-marked test first (GPU_TESTS=0: none),
#                         then `run --op spmm` on the real development set (.real-dev/, carry
#                         it with .device-wheels-min and .device-wheels-nvmath): the CuPy,
#                         PyTorch and planned cuSPARSE SpMM (every algorithm, --variants
#                         cusparse-spmm), colmajor, rowgroup and auto, each of VARIANTS
#                         (space-separated --variant specs), stopped by SIGINT at the budget
#                         with its measured cases kept. Writes env.txt, [pytest_gpu.log,]
#                         run.log, spmm_results.json.xz (compacted, as committed), spmm_groups.md.
#   sweep [SOURCE]        a sweep in process and on a one-worker Dask LocalCluster, then a
#                         re-run that must resume. Writes env.txt, inprocess.json, local.json,
#                         resume.json, collection.md, results.json.
#   sweep-gpus [COUNT ...] {SOURCE=.real-dev, LIMIT_S=240, GPU_TESTS=1, BACKENDS=, BEFORE=, AFTER=src}
#                         issue 35: every GPU-marked test first (pytest -m gpu -n 4; GPU_TESTS=0
#                         skips them), then one `sweep SOURCE --cluster cuda` per GPU count
#                         (default 1 2 4; CUDA_VISIBLE_DEVICES 0..COUNT-1), each into a fresh
#                         store with cold caches of its own; cases/min from the engine's wall,
#                         the speedup over one GPU, the workers' busy time and their first use
#                         (warm-up seconds, where the ceilings came from, warm cases, batched
#                         tasks). BACKENDS="a b": those backends (default: the op's defaults;
#                         "all" for a larger collection of cases). BEFORE=.before/src: that
#                         tree's sweep too, before this one's, per count (carry .before).
#                         AFTER=.after/src: the tree timed as after (default src).
#                         Carry .device-wheels (dask, the dask-cuda tar), .real-dev, and
#                         .device-wheels-nvmath for the planned cuSPARSE. Writes
#                         env.txt, pytest_gpu.log, sweep_N.json (sweep_before_N.json,
#                         sweep_after_N.json with BEFORE), scaling.md, sweep_logs.tgz (each
#                         sweep's log and results.json.gz: its stage breakdown).
#   sweep-scale cpu|gpu [LIMIT]
#                         issue 15's scale measurements (carry out/sweep-scale too). Writes
#                         env.txt, summary.txt, store.sqlite.gz, bundle.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
RECIPE="${1:-list}"
[ $# -gt 0 ] && shift

# -- shared set-up ------------------------------------------------------------------------------
wheels() {  # install the carried wheels the image lacks (no network, no dependencies)
    if compgen -G ".device-wheels-min/*.whl" >/dev/null; then
        mkdir -p .device-wheels && cp .device-wheels-min/*.whl .device-wheels/
    fi
    if compgen -G ".device-wheels/*.whl" >/dev/null; then
        $PY -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
    fi
}

nvmath_wheels() {  # nvmath-python and its cuSPARSE wheels (the planned cuSPARSE baseline),
    # carried in .device-wheels-nvmath
    $PY -m pip install -q --no-index --no-deps .device-wheels-nvmath/*.whl 2>&1 | tail -1
}

gpu_test_files() {  # the GPU-marked tests of the files in GPU_TESTS, if any: pytest_gpu.log
    if [ -n "${GPU_TESTS:-}" ]; then
        # shellcheck disable=SC2086
        $PY -m pytest -m gpu -q -p no:cacheprovider $GPU_TESTS > "$OUT/pytest_gpu.log" 2>&1
        tail -n 2 "$OUT/pytest_gpu.log"
    fi
}

dask_wheels() {  # Dask for --cluster local (its dependencies from the image where it has them)
    $PY -m pip install -q --no-index --find-links .device-wheels distributed 2>&1 | tail -1
}

dask_cuda_path() {  # dask-cuda and what it needs: unpacked wheels in one tar.xz, each put on
    # PYTHONPATH only where the image lacks it
    local extra=/tmp/ss-sweep-extra pair module wheel
    mkdir -p "$extra" && tar xJf .device-wheels/sweep-extra.tar.xz -C "$extra"
    for pair in "pynvml:nvidia_ml_py" "cuda.pathfinder:cuda_pathfinder" \
                "cuda.bindings:cuda_bindings" "cuda.core:cuda_core" "dask_cuda:dask_cuda"; do
        module="${pair%%:*}"; wheel="${pair##*:}"
        if ! $PY -c "import $module" 2>/dev/null; then
            export PYTHONPATH="${PYTHONPATH:-}:$(ls -d "$extra"/"${wheel}"-*.whl)"
            echo "using the carried $wheel"
        fi
    done
}

env_file() {  # $1: file; $2...: extra lines
    local file="$1"
    shift
    {
        date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
        echo "commit ${SPARSESCOPE_GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
        # the device's copy can carry a git HEAD older than its files (2026-11-28: HEAD stayed
        # at the session's first commit): name the commit from here, and say how far it is off
        echo "tracked files that differ from the copy's git HEAD: $(git status --porcelain \
            --untracked-files=no 2>/dev/null | wc -l)"
        for line in "$@"; do echo "$line"; done
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
            --format=csv
        $PY - <<'PY'
import importlib, platform
parts = ["python", platform.python_version()]
for name in ("numpy", "scipy", "torch", "cupy", "distributed", "dask_cuda"):
    try:
        parts += [name, importlib.import_module(name).__version__]
    except Exception:
        pass
try:
    import torch
    parts += ["torch_cuda", str(torch.version.cuda)]
except Exception:
    pass
print(*parts)
PY
        command -v nvcc nvdisasm cuobjdump ncu
        uname -r
    } > "$file" 2>&1
    cat "$file"
}

versions_file() {  # key: value lines (the ops and seed6 READMEs read them), then nvidia-smi
    {
        $PY - <<'PY'
import datetime, importlib.util, os, platform, re, subprocess

def out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({exc})"

print("date_utc:", datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
print("git_commit:", os.environ.get("SPARSESCOPE_GIT_COMMIT", "unknown"))
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
for module in ("numpy", "scipy", "torch", "cupy", "jax", "brainevent", "pyGinkgo"):
    if importlib.util.find_spec(module) is None:
        print(f"{module}: not installed")
        continue
    try:
        print(f"{module}:", getattr(__import__(module), "__version__", "installed"))
    except Exception as exc:
        print(f"{module}: import failed ({type(exc).__name__}: {exc})")
try:
    import torch
    print("torch_cuda:", torch.version.cuda)
    import cupy
    v = cupy.cuda.runtime.runtimeGetVersion()
    print("cuda_runtime (cupy):", f"{v // 1000}.{v % 1000 // 10}")
    print("cupy_cuda_runtime:", f"{v // 1000}.{v % 1000 // 10}")
except Exception as exc:
    print("cuda_runtime: unavailable", exc)
PY
        echo "--- nvidia-smi ---"
        nvidia-smi
    } > "$1" 2>&1
}

timeout_flag() {  # pytest's --timeout where pytest-timeout is installed
    $PY -c "import pytest_timeout" 2>/dev/null && echo "--timeout ${1:-300}"
}

out_dir() {  # $1: default folder
    export OUT="${OUT:-$1}"
    mkdir -p "$OUT"
}

# -- recipes ------------------------------------------------------------------------------------
recipe_list() {
    sed -n '/^# Recipes/,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

recipe_gpu_tests() {
    out_dir /tmp/sparsescope-device
    local seed6=0 cpu_tests=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --seed6) seed6=1 ;;
            --cpu-tests) cpu_tests=1 ;;
            *) echo "gpu-tests: unknown option $1"; return 2 ;;
        esac
        shift
    done
    wheels
    env_file "$OUT/env.txt"
    # shellcheck disable=SC2046
    $PY -m pytest tests -m gpu -q -p no:cacheprovider -n "${PYTEST_WORKERS:-4}" \
        $(timeout_flag 300) -rs 2>&1 | tee "$OUT/pytest_gpu.log" | tail -n 5
    local rc=${PIPESTATUS[0]}
    if [ "$cpu_tests" = 1 ]; then
        # shellcheck disable=SC2046
        $PY -m pytest tests/backends tests/timing -q -p no:cacheprovider -n "${PYTEST_WORKERS:-4}" \
            $(timeout_flag 300) 2>&1 | tee "$OUT/pytest.log" | tail -n 3
        [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
    fi
    grep -qE "^FAILED|[0-9]+ failed" "$OUT/pytest_gpu.log" && rc=1
    $PY -m sparsescope ceilings --json --no-store > "$OUT/ceilings.json" 2>&1 \
        || echo "ceilings failed: see ceilings.json"
    if [ "$seed6" = 1 ]; then
        local start
        start=$(date +%s)
        $PY -m sparsescope run --suite seed6 --backend all --out /tmp/seed6 --no-store \
            > "$OUT/seed6.log" 2>&1 || echo "seed6 run failed: see seed6.log"
        echo "seed6 run took $(( $(date +%s) - start )) s" | tee -a "$OUT/seed6.log"
        cp /tmp/seed6/results.json "$OUT/seed6_results.json" 2>/dev/null
        $PY -m sparsescope results show /tmp/seed6/results.json > "$OUT/seed6_show.txt" 2>&1
        $PY -m sparsescope results show /tmp/seed6/results.json --stages --per-case \
            > "$OUT/seed6_stages.txt" 2>&1
        $PY -m sparsescope results show /tmp/seed6/results.json --stages 2>&1 | tail -n 30
    fi
    tail -n 3 "$OUT/pytest_gpu.log"
    return "$rc"
}

recipe_real_dev() {
    out_dir /tmp/ss-real-dev
    local budget="${BUDGET_S:-560}" start rc=0 mode left
    start=$(date +%s)
    wheels
    nvmath_wheels
    local matrices=() variant_set="${VARIANT_SET-cusparse-spmv}"
    if [ -n "${SUITE:-}" ]; then
        env_file "$OUT/env.txt" "suite $SUITE at scale 1"
        matrices=(--suite "$SUITE" --scale 1)
    else
        env_file "$OUT/env.txt" "matrices $(ls .real-dev/*.npz | wc -l) from .real-dev"
        local files=(.real-dev/*.npz)
        for f in "${files[@]}"; do matrices+=(--matrix "$f"); done
    fi
    if [ "${GPU_TESTS:-1}" != 0 ]; then
        # shellcheck disable=SC2046
        $PY -m pytest tests -m gpu -q -p no:cacheprovider -n "${PYTEST_WORKERS:-4}" \
            $(timeout_flag 300) -rs 2>&1 | tee "$OUT/pytest_gpu.log" | tail -n 3
        grep -qE "^FAILED|[0-9]+ failed|[0-9]+ error" "$OUT/pytest_gpu.log" && rc=1
    fi
    for mode in "${@:-latency}"; do
        left=$(( budget - ($(date +%s) - start) - 15 ))
        [ "$left" -lt 30 ] && { echo "no time left for $mode"; break; }
        # shellcheck disable=SC2046
        timeout -s INT "$left" $PY -m sparsescope run "${matrices[@]}" \
            ${variant_set:+--variants "$variant_set"} \
            $(for v in ${VARIANTS:-}; do printf -- '--variant %s ' "$v"; done) \
            --backend all --timing-mode "$mode" --out "/tmp/real-dev-$mode" --no-store \
            > "$OUT/$mode.log" 2>&1
        echo "$mode: rc=$? after $(( $(date +%s) - start )) s"
        gzip -c "/tmp/real-dev-$mode/results.json" > "$OUT/${mode}_results.json.gz"
        $PY -m sparsescope results show "/tmp/real-dev-$mode/results.json" --stages \
            > "$OUT/${mode}_show.txt" 2>&1
    done
    $PY scripts/family_errors.py "$OUT"/*_results.json.gz | tee "$OUT/family_errors.md"
    return "$rc"
}

recipe_kernels() {
    out_dir /tmp/ss-kernels
    local tests=0 set=seed6-sweep repeats=30 scale=1 suite=seed6 start
    while [ $# -gt 0 ]; do
        case "$1" in
            --tests) tests=1 ;;
            --set) set="$2"; shift ;;
            --repeats) repeats="$2"; shift ;;
            --scale) scale="$2"; shift ;;
            --suite) suite="$2"; shift ;;
            *) echo "kernels: unknown option $1"; return 2 ;;
        esac
        shift
    done
    start=$(date +%s)
    wheels
    env_file "$OUT/env.txt"
    if [ "$tests" = 1 ]; then
        $PY -m pytest tests -m gpu -q -p no:cacheprovider -rs 2>&1 | tee "$OUT/pytest_gpu.log" \
            | tail -n 8
        echo "tests done at $(( $(date +%s) - start )) s"
    fi
    $PY -m sparsescope run --suite "$suite" --scale "$scale" --backend torch-cusparse-i64 \
        --backend torch-cusparse-i32 --backend cupy-cusparse-i32 --backend cuda-spmv-auto \
        --backend cuda-spmv-auto-rules --variants "$set" --repeats "$repeats" \
        --out /tmp/ss-kernels-run --no-store > "$OUT/run.log" 2>&1
    local rc=$?
    echo "run rc=$rc at $(( $(date +%s) - start )) s"
    cp /tmp/ss-kernels-run/results.json /tmp/ss-kernels-run/report.md "$OUT/" 2>/dev/null
    $PY -m sparsescope results show "$OUT/results.json" > "$OUT/show.txt" 2>&1
    tail -n 60 "$OUT/show.txt"
    return "$rc"
}

recipe_model() {
    out_dir /tmp/ss-model
    local repeats=30 scale=1 tests=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --repeats) repeats="$2"; shift ;;
            --scale) scale="$2"; shift ;;
            --gpu-tests) tests=1 ;;
            *) echo "model: unknown option $1"; return 2 ;;
        esac
        shift
    done
    wheels
    env_file "$OUT/env.txt"
    if [ "$tests" = 1 ]; then
        $PY -m pytest -q -m gpu tests -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
        tail -3 "$OUT/pytest_gpu.log"
    fi
    local work=/tmp/ss-model-run
    rm -rf "$work"
    $PY -m sparsescope ceilings --json --no-store > /tmp/ss-model-ceilings.json 2>&1
    $PY -m sparsescope run --suite seed6 --scale "$scale" --backend all --repeats "$repeats" \
        --out "$work" --no-store > "$OUT/run.log" 2>&1
    local status=$?
    tail -5 "$OUT/run.log"
    cp "$work/results.json" "$work/report.md" "$OUT/" 2>/dev/null
    cp /tmp/ss-model-ceilings.json "$work/ceilings.json"
    tar -czf "$OUT/report_bundle.tar.gz" -C "$work" report.html figures tables ceilings.json
    $PY -m sparsescope results show "$OUT/results.json" > "$OUT/show.txt"
    $PY -m sparsescope results show "$OUT/results.json" --json > "$OUT/show.json"
    $PY - "$OUT/show.json" <<'PY'
import json, statistics, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in rows:
    e = r["prediction_error_pct"]
    print(f"{r['matrix']:11s} {r['backend']:24s} meas {r['median_ms'] or 0:9.4f} pred "
          f"{r['predicted_ms'] or 0:9.4f} err {e if e is not None else float('nan'):+7.1f}% "
          f"{r['limiter'] or r['not_modelled']}")
errs = sorted(abs(r["prediction_error_pct"]) for r in rows
              if r["prediction_error_pct"] is not None)
if errs:
    print(f"modelled {len(errs)} of {len(rows)}: median |err| {statistics.median(errs):.1f} %, "
          f"p90 {errs[int(0.9 * (len(errs) - 1))]:.1f} %")
PY
    return "$status"
}

recipe_seed6_speed() {
    out_dir /tmp/ss-seed6-speed
    local before="${BEFORE_SRC:-.before/src}" after="${AFTER_SRC:-src}"
    local limit="${RUN_LIMIT_S:-330}" profile=0 label src
    [ "${1:-}" = "--profile" ] && profile=1
    if [ ! -d "$before/sparsescope" ]; then
        echo "seed6-speed: no older tree at $before (git archive REV src | tar -x -C .before)"
        return 2
    fi
    wheels
    env_file "$OUT/env.txt" "before_src $before ($(cat "$before/../REVISION" 2>/dev/null))" \
        "after_src $after ($(cat "$after/../REVISION" 2>/dev/null || git rev-parse --short HEAD))"
    : > "$OUT/timings.txt"
    # a small run of this tree first: a broken tree stops here, not after the long runs
    if ! PYTHONPATH="$after" $PY -m sparsescope run --suite seed6 --scale 0.02 --backend all \
            --no-store --out /tmp/ss-speed-smoke > "$OUT/smoke.log" 2>&1; then
        echo "seed6-speed: the smoke run failed:"; tail -n 20 "$OUT/smoke.log"
        return 1
    fi
    for label in before after; do
        src="$before"; [ "$label" = after ] && src="$after"
        local home="/tmp/ss-speed-$label"
        rm -rf "$home"; mkdir -p "$home"
        local start=$(date +%s.%N)
        SPARSESCOPE_STORE="$home/store.sqlite" SPARSESCOPE_CACHE="$home/cache" \
            CUPY_CACHE_DIR="$home/cupy" CUDA_CACHE_PATH="$home/cuda" PYTHONPATH="$src" \
            timeout -s INT "$limit" $PY -m sparsescope run --suite seed6 --backend all \
            --out "$home/out" > "$OUT/$label.log" 2>&1
        echo "${label}_rc $? ${label}_wall_s $($PY -c "print(f'{$(date +%s.%N) - $start:.1f}')")" \
            | tee -a "$OUT/timings.txt"
        PYTHONPATH=src $PY -m sparsescope results show "$home/out/results.json" --stages \
            --per-case > "$OUT/${label}_stages.txt" 2>&1
        gzip -c "$home/out/results.json" > "$OUT/${label}_results.json.gz" 2>/dev/null
    done
    if [ "$profile" = 1 ]; then
        PYTHONPATH=src $PY benchmarks/profile_speed.py --before-src "$before" --repeats 1 \
            --out "$OUT/profile_speed.json" > "$OUT/profile_speed.md" 2>&1
        tail -n 12 "$OUT/profile_speed.md"
    fi
    for label in before after; do
        echo "== $label"; head -n 15 "$OUT/${label}_stages.txt"
    done
    # at most eight files come back: the logs travel in one tar
    tar -czf "$OUT/logs.tgz" -C "$OUT" smoke.log before.log after.log timings.txt \
        $([ "$profile" = 1 ] && echo profile_speed.md) && \
        rm -f "$OUT"/smoke.log "$OUT"/before.log "$OUT"/after.log "$OUT"/profile_speed.md
    cat "$OUT/timings.txt"
}

recipe_seed6() {
    out_dir /tmp/sparsescope-seed6
    local work="${WORK:-/tmp/sparsescope-seed6-work}"
    rm -rf "$work"
    mkdir -p "$work"
    export SPARSESCOPE_STORE="$OUT/store.sqlite"
    wheels
    versions_file "$OUT/versions.txt"
    : > "$OUT/timings.txt"
    local tag dest start rc
    for tag in a b; do
        dest="$work/seed6"; [ "$tag" = b ] && dest="$work/seed6_b"
        start=$(date +%s.%N)
        $PY -m sparsescope run --suite seed6 --backend all --out "$dest" > "$OUT/run_$tag.log" 2>&1
        rc=$?
        echo "run_${tag}_wall_s: $($PY -c "print(f'{$(date +%s.%N) - $start:.1f}')")" \
            >> "$OUT/timings.txt"
        echo "run_${tag}_rc: $rc" >> "$OUT/timings.txt"
        echo "run_${tag}_out: $dest" >> "$OUT/timings.txt"
    done
    $PY -m sparsescope results compare "$work/seed6/results.json" \
        "$work/seed6_b/results.json" --json > "$OUT/compare.json" 2>> "$OUT/run_b.log"
    $PY -m sparsescope results show "$work/seed6/results.json" --json > "$OUT/show.json" \
        2>> "$OUT/run_a.log"
    tar -C "$work" -czf "$OUT/seed6.tar.gz" seed6 seed6_b/results.json
    grep -E "^(date_utc|gpu|driver|cuda_driver_api|torch|torch_cuda|cupy):" "$OUT/versions.txt"
    cat "$OUT/timings.txt"
    tail -n 3 "$OUT/run_a.log"
    $PY -m sparsescope results compare "$work/seed6/results.json" "$work/seed6_b/results.json"
}

recipe_profile() {
    out_dir /tmp/ss-profile
    local budget=200 matrices="cant,cage15" work=/tmp/ss-prof-work
    local backends=(torch-cusparse-i64 torch-cusparse-i32 cupy-cusparse-i32 cuda-spmv-auto)
    while [ $# -gt 0 ]; do
        case "$1" in
            --budget-s) budget="$2"; shift ;;
            --matrices) matrices="$2"; shift ;;
            --backends) IFS=, read -r -a backends <<< "$2"; shift ;;
            *) echo "profile: unknown option $1"; return 2 ;;
        esac
        shift
    done
    local start ncu
    start=$(date +%s)
    # cuSPARSE's csrmv_v3_kernel and csr_partition_kernel; our spmv_tile / spmv_sell / fixup
    local filter='regex:^(csrmv|csr_partition|spmv_)'
    rm -rf "$work"; mkdir -p "$work"
    wheels
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    env_file "$OUT/env.txt" "ncu $ncu: $("$ncu" --version | tail -1)"
    printf 'step\tmatrix\tbackend\trc\twall_s\n' > "$OUT/timings.tsv"
    one() {  # step matrix backend out-subdir kernel-filter [extra options...]
        local step="$1" matrix="$2" backend="$3" sub="$4" kernel="$5" t0 rc
        shift 5
        t0=$(date +%s.%N)
        $PY -m sparsescope profile run --suite seed6 --matrix "$matrix" --backend "$backend" \
            --kernel "$kernel" --clock-control none --ncu "$ncu" --timeout 150 \
            --out "$work/$sub" --json "$@" > "$work/$sub.$matrix.$backend.json" \
            2>> "$OUT/profile.log"
        rc=$?
        local wall
        wall=$($PY -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" \
            "$t0" "$(date +%s.%N)")
        printf '%s\t%s\t%s\t%s\t%s\n' "$step" "$matrix" "$backend" "$rc" "$wall" \
            >> "$OUT/timings.tsv"
        echo "$step $matrix $backend rc=$rc wall=${wall}s (at $(( $(date +%s) - start )) s)"
    }
    local first=1 matrix backend
    for matrix in ${matrices//,/ }; do
        for backend in "${backends[@]}"; do
            if [ $(( $(date +%s) - start )) -lt $(( budget - 40 )) ]; then
                one groups "$matrix" "$backend" "$matrix" "$filter" --launch-count 6 \
                    --warmups 1 --repeats 2
            else
                printf 'groups\t%s\t%s\tskipped\t\n' "$matrix" "$backend" >> "$OUT/timings.tsv"
            fi
        done
        if [ "$first" = 1 ]; then
            first=0
            one targeted cant torch-cusparse-i64 targeted 'regex:^csrmv_v3' \
                --groups stalls,instruction-roofline --launch-count 1 --warmups 0 --repeats 1
        fi
    done
    tar -czf "$OUT/profiles_csv.tar.gz" -C "$work" --exclude='*.ncu-rep' .
    # shellcheck disable=SC2046
    tar -czf "$OUT/profiles_rep.tar.gz" -C "$work" $(cd "$work" && find . -name '*.ncu-rep')
    echo "total $(( $(date +%s) - start )) s"
    cat "$OUT/timings.tsv"
}

profile_cases() {  # $1: work folder, $2: ncu timeout s, $3...: SUITE#MATRIX:OP:K:BACKEND specs
    local work="$1" limit="$2" spec source op k backend suite matrix name t0 ncu
    shift 2
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    for spec in "$@"; do
        IFS=: read -r source op k backend <<< "$spec"
        suite="${source%%#*}"; matrix="${source#*#}"
        name="${matrix}.${op}${k}.${backend}"
        if [ -n "${PROFILE_DEADLINE:-}" ] && [ "$(date +%s)" -ge "$PROFILE_DEADLINE" ]; then
            echo "$name not profiled: past the budget"
            continue
        fi
        local extra=()
        [ "$op" = spmm ] && extra=(--k "$k" --layout row)
        [ "$op" = slice ] && extra=(--rows-selected "$k" --weights per-nnz)
        t0=$(date +%s)
        $PY -m sparsescope profile run --suite "$suite" --matrix "$matrix" --op "$op" \
            --backend "$backend" "${extra[@]}" \
            --groups "${PROFILE_GROUPS:-launch,occupancy,stalls,memory}" \
            --clock-control none --ncu "$ncu" --timeout "$limit" --out "$work/$name" --json \
            > "$work/$name.json" 2>> "$OUT/profile.log"
        echo "$name rc=$? $(( $(date +%s) - t0 )) s"
    done
}

recipe_profile_cases() {
    out_dir /tmp/ss-profile-cases
    local work=/tmp/ss-profile-cases-work ncu
    rm -rf "$work"; mkdir -p "$work"
    wheels
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    env_file "$OUT/env.txt" "ncu: $("$ncu" --version | tail -1)"
    profile_cases "$work" 240 "$@"
    tar -czf "$OUT/profiles.tar.gz" -C "$work" .
}

recipe_ab_kernel() {
    out_dir /tmp/ss-ab
    local a_file="$1" kernel="$2"
    shift 2
    [ "${1:-}" = "--" ] && shift
    wheels
    env_file "$OUT/env.txt" "B: the working tree; A: $a_file as $kernel" "run args: $*"
    local a_src=/tmp/ss-ab-src-a run src
    rm -rf "$a_src"; cp -r src "$a_src"
    cp "$a_file" "$a_src/sparsescope/backends/kernels/$kernel"
    for run in A1 B1 A2 B2; do
        src=src; [ "${run:0:1}" = A ] && src="$a_src"
        PYTHONPATH="$src" $PY -m sparsescope run "$@" --no-store --out "/tmp/ss-ab-$run" \
            > "$OUT/$run.log" 2>&1
        echo "$run rc=$?"
        cp "/tmp/ss-ab-$run/results.json" "$OUT/$run.json" 2>/dev/null
    done
    $PY scripts/ab_table.py "$OUT" | tee "$OUT/ab.txt"
}

recipe_finish_ab() {
    out_dir /tmp/ss-finish-ab
    wheels
    env_file "$OUT/env.txt"
    $PY -m pytest tests/gpu/test_spmv_own_kernels.py -q -p no:cacheprovider -rs 2>&1 \
        | tee "$OUT/pytest_gpu.log" | tail -n 4
    local n=0 suite
    for suite in "$@"; do
        n=$((n + 1))
        $PY -m sparsescope run --suite "$suite" --scale 1 --backend torch-cusparse-i32 \
            --backend cupy-cusparse-i32 --backend cuda-spmv-auto \
            --variant 'cuda-spmv-adaptive[iters=1,finish=0]' \
            --variant 'cuda-spmv-adaptive[iters=1,finish=1]' \
            --variant 'cuda-spmv-adaptive[iters=2,finish=0]' \
            --variant 'cuda-spmv-adaptive[iters=2,finish=1]' \
            --variant 'cuda-spmv-merge[iters=1,finish=0]' \
            --variant 'cuda-spmv-merge[iters=1,finish=1]' \
            --repeats 30 --out "/tmp/ss-finish-$n" --no-store > "$OUT/run_$n.log" 2>&1
        echo "run $n ($suite) rc=$?"
        cp "/tmp/ss-finish-$n/results.json" "$OUT/results_$n.json" 2>/dev/null
        $PY -m sparsescope results show "$OUT/results_$n.json" > "$OUT/show_$n.txt" 2>&1
    done
    $PY scripts/finish_ab_table.py "$OUT"/results_*.json 2>&1 | tee "$OUT/ab.md" | tail -n 40
}

recipe_ops() {
    out_dir /tmp/sparsescope-ops
    local phase="${1:-all}" work="${WORK:-/tmp/sparsescope-ops-work}" log start budget
    mkdir -p "$work"
    export SPARSESCOPE_STORE="$work/store.sqlite"
    log="$OUT/ops.log"
    start=$(date +%s)
    budget="${BUDGET_S:-400}"  # the device tool stops a command at its timeout_s
    command -v nvidia-smi >/dev/null && wheels
    left() { echo $(( budget - ($(date +%s) - start) )); }
    fits() {  # $1: phase, $2: seconds it may need
        if [ "$(left)" -lt "$2" ]; then
            echo "not started: phase $1 (needs ~$2 s, $(left) s left)" | tee -a "$log"
            return 1
        fi
    }
    measure() {  # $1: op, $2: suite, $3...: the op's flags; into $work/$1
        local op="$1" suite="$2" dest="$work/$1" t0
        shift 2
        mkdir -p "$dest"
        rm -rf "$dest/results.json" "$dest/report.md" "$dest/report.html" "$dest/figures" \
            "$dest/tables"
        t0=$(date +%s)
        local cmd=("$PY" -m sparsescope run --op "$op" --suite "$suite" --backend all "$@"
                   --flush on --warmups 5 --repeats 50 --no-store --out "$dest")
        { printf 'PYTHONPATH=src '; printf '%q ' "${cmd[@]}" | sed 's/ $//'; echo; } \
            > "$dest/command.txt"
        "${cmd[@]}" 2>&1 | tee "$dest/run.log" >> "$log"
        cp "$work/versions.txt" "$dest/versions.txt" 2>/dev/null
        echo "$op run took $(( $(date +%s) - t0 )) s" | tee -a "$log"
    }
    sweep() {  # the own SpMM kernel's launch variants (constructor options), L2 flushed
        local dest="$work/spmm/tuning" variants=() v
        for v in 'depth=1' 'warps=8' 'depth=1,warps=8' 'min_slice=32' 'min_slice=128' \
                 'min_slice=32,depth=1'; do
            variants+=(--variant "spmm-cuda-rowwarp[$v]")
        done
        mkdir -p "$dest"
        $PY -m sparsescope run --op spmm --suite dlmc3 --k 8 --k 64 --layout row \
            --backend spmm-cuda-rowwarp "${variants[@]}" --flush on --warmups 5 --repeats 50 \
            --no-store --out "$dest" 2>&1 | tee "$dest/run.log" >> "$log"
    }
    profile() {  # $1: op, $2: ncu timeout s: every backend's kernels of the op's cases
        local op="$1" specs=() m k n b
        mkdir -p "$work/$op/profiles"
        if [ "$op" = spmm ]; then
            for m in dlmc-512x1024 dlmc-256x512 dlmc-128x256; do for k in 8 64; do
                for b in spmm-cuda-rowwarp spmm-torch-i32 spmm-torch-i64 spmm-cupy-i32 \
                         spmm-ginkgo; do specs+=("dlmc3#$m:spmm:$k:$b"); done; done; done
        else
            for m in slice-10000:5000 slice-10000:256 slice-1000:64; do
                for b in slice-cuda-scatter slice-cuda-gather slice-torch slice-cupy-i32 \
                         slice-brainevent; do specs+=("slice003#${m%%:*}:slice:${m#*:}:$b"); done
            done
        fi
        # one ncu process a case; under `all`, none started past the budget
        PROFILE_DEADLINE="${deadline:-}" profile_cases "$work/$op/profiles" "$2" "${specs[@]}" \
            | tee -a "$log"
    }
    report() {  # each op folder's report, then its README from the folder's own files
        local op
        for op in spmm slice; do
            [ -f "$work/$op/results.json" ] || continue
            $PY -m sparsescope report "$work/$op/results.json" --out "$work/$op" 2>&1 \
                | tail -n 2 | tee -a "$log"
            $PY -m sparsescope results readme "$work/$op" --title "$op on $(nvidia-smi \
                --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" 2>&1 \
                | tail -n 2 | tee -a "$log"
        done
    }
    pack() {
        local op
        for op in spmm slice; do
            [ -d "$work/$op" ] && tar -C "$work" -czf "$OUT/$op.tar.gz" "$op" && \
                echo "packed $op: $(du -h "$OUT/$op.tar.gz" | cut -f1)" | tee -a "$log"
        done
    }
    tests() {
        timeout "${1:-240}" $PY -m pytest tests/gpu/test_gpu_spmm.py tests/gpu/test_gpu_slice.py \
            -q -p no:cacheprovider -ra 2>&1 | tee "$OUT/pytest.log" | tail -n 5
    }
    local spmm_flags=(--k 1 --k 8 --k 64 --k 256 --layout row --layout col)
    local slice_flags=(--weights scalar --weights per-nnz)
    case "$phase" in
        all)
            local deadline=$(( start + budget - 60 ))
            versions_file "$work/versions.txt"; cp "$work/versions.txt" "$OUT/"
            fits sweep 330 && sweep
            fits spmm 280 && measure spmm dlmc3 "${spmm_flags[@]}"
            fits slice 200 && measure slice slice003 "${slice_flags[@]}"
            pack
            fits profile 100 && profile spmm 120
            fits profile 60 && profile slice 120
            report
            pack
            fits tests 60 && tests $(( $(left) - 5 ))
            ;;
        versions) versions_file "$work/versions.txt"; cp "$work/versions.txt" "$OUT/" ;;
        sweep) sweep ;;
        spmm) measure spmm dlmc3 "${spmm_flags[@]}" ;;
        slice) measure slice slice003 "${slice_flags[@]}" ;;
        profile) profile spmm 200; profile slice 200 ;;
        report) report ;;
        pack) pack ;;
        tests) tests ;;
        *) echo "ops: unknown phase $phase (all | versions | sweep | spmm | slice | profile |" \
                "report | pack | tests)"; return 2 ;;
    esac
    ls -la "$OUT"
}

recipe_spmm_blocktc() {
    out_dir /tmp/ss-blocktc
    wheels
    env_file "$OUT/env.txt"
    $PY -c 'from sparsescope.api import blocktc_registers; print(blocktc_registers(), end="")' \
        > "$OUT/regs.txt" 2>&1
    cat "$OUT/regs.txt"
    timeout 240 $PY -m pytest -q -m gpu tests/gpu/test_spmm_blocktc.py -p no:cacheprovider \
        > "$OUT/pytest_blocktc.log" 2>&1
    tail -1 "$OUT/pytest_blocktc.log"
    local src=() kargs=() bargs=() e k b v work=/tmp/ss-blocktc-work
    for e in ${ENTRIES:-weights-00 weights-01 weights-03 weights-06 weights-07 weights-09 \
                       weights-12 weights-13 weights-15 weights-18 weights-19 weights-21}; do
        src+=("suite:${PART:-spmm-population-tuning}#$e"); done
    for k in ${KS:-32 128 512}; do kargs+=(--k "$k"); done
    for b in ${BACKENDS:-spmm-torch-i32 spmm-cupy-i32 spmm-cuda-auto spmm-cuda-blocktc}; do
        bargs+=(--backend "$b"); done
    for v in ${VARIANTS-spmm-cuda-blocktc[max_fill=64]}; do bargs+=(--variant "$v"); done
    rm -rf "$work"; mkdir -p "$work"
    local cmd=("$PY" -m sparsescope sweep "${src[@]}" --op spmm "${kargs[@]}" --layout row
               "${bargs[@]}" --warmups 3 --repeats 15 --time-limit "${LIMIT:-250}"
               --store "$work/store.sqlite" --out "$work/sweep" --json)
    echo "${cmd[*]}" > "$OUT/command.txt"
    "${cmd[@]}" > "$work/sweep.json" 2> "$OUT/sweep.log"
    echo "sweep exit $?" | tee -a "$OUT/env.txt"
    local results
    results=$(ls "$work"/sweep/results.json* 2>/dev/null | head -1)
    if [ -n "$results" ]; then
        cp "$results" "$OUT/"
        [ "${results##*.}" = json ] && gzip -f "$OUT/results.json"
        $PY scripts/spmm_backend_table.py "$results" --note fill --note selected \
            > "$OUT/table.md" 2>&1
        cat "$OUT/table.md"
    fi
}

recipe_break_even() {
    out_dir /tmp/ss-break-even
    local start entries=() matrices k layout args=()
    start=$(date +%s)
    wheels
    nvmath_wheels
    for k in $(seq 0 23); do entries+=("$(printf 'weights-%02d' "$k")"); done
    matrices="suite:spmm-population#$(IFS=,; echo "${ENTRIES:-${entries[*]}}")"
    for k in ${KS:-32 256}; do args+=(--k "$k"); done
    for layout in ${LAYOUTS:-row col}; do args+=(--layout "$layout"); done
    env_file "$OUT/env.txt" "matrices $matrices"
    if [ -n "${GPU_TESTS:-}" ]; then
        # shellcheck disable=SC2086
        $PY -m pytest -q -m gpu $GPU_TESTS -p no:cacheprovider -n "${PYTEST_WORKERS:-4}" -rs \
            > "$OUT/pytest_gpu.log" 2>&1
        tail -n 3 "$OUT/pytest_gpu.log"
    fi
    local extra=()
    read -r -a extra <<< "${EXTRA:-}"
    local cmd=("$PY" -m sparsescope run --matrix "$matrices" --op spmm "${args[@]}" "${extra[@]}"
               --backend spmm-cuda-auto --backend spmm-cupy-i32 --backend spmm-torch-i32
               --backend spmm-nvmath-i32 --variant "spmm-nvmath-i32[alg=2]"
               --variant "spmm-nvmath-i32[alg=3]" --variants dense-spmm
               --out /tmp/break-even --no-store)
    echo "${cmd[*]}" | tee -a "$OUT/env.txt"
    timeout -s INT "$(( ${BUDGET_S:-480} - ($(date +%s) - start) ))" "${cmd[@]}" \
        > "$OUT/run.log" 2>&1
    echo "run: rc=$? after $(( $(date +%s) - start )) s" | tee -a "$OUT/env.txt"
    gzip -c /tmp/break-even/results.json > "$OUT/results.json.gz"
    $PY -m sparsescope results show /tmp/break-even/results.json > "$OUT/show.txt" 2>&1
    cp /tmp/break-even/report.md "$OUT/report.md" 2>/dev/null
    tail -n 5 "$OUT/run.log"
}

recipe_spmm_real_dev() {
    out_dir /tmp/ss-spmm-real-dev
    local start rc=0 args=() f k layout v
    start=$(date +%s)
    wheels
    nvmath_wheels
    env_file "$OUT/env.txt" "matrices $(ls "${MATRICES_DIR:-.real-dev}"/*.npz | wc -l) from ${MATRICES_DIR:-.real-dev}"
    if [ "${GPU_TESTS:-1}" != 0 ]; then
        # shellcheck disable=SC2046
        $PY -m pytest tests -m gpu -q -p no:cacheprovider -n "${PYTEST_WORKERS:-4}" \
            $(timeout_flag 300) -rs > "$OUT/pytest_gpu.log" 2>&1
        tail -n 3 "$OUT/pytest_gpu.log"
        grep -qE "^FAILED|[0-9]+ failed|[0-9]+ error" "$OUT/pytest_gpu.log" && rc=1
    fi
    for f in "${MATRICES_DIR:-.real-dev}"/*.npz; do args+=(--matrix "$f"); done
    for k in ${KS:-8 64}; do args+=(--k "$k"); done
    for layout in ${LAYOUTS:-col row}; do args+=(--layout "$layout"); done
    for v in ${VARIANTS:-}; do args+=(--variant "$v"); done
    for v in ${EXTRA_BACKENDS:-}; do args+=(--backend "$v"); done
    local cmd=("$PY" -m sparsescope run "${args[@]}" --op spmm
               --backend spmm-torch-i32 --backend spmm-cupy-i32 --backend spmm-nvmath-i32
               --backend spmm-cuda-colmajor --backend spmm-cuda-rowgroup
               --backend spmm-cuda-auto --variants cusparse-spmm
               --timing-mode "${MODE:-latency}" --out /tmp/spmm-real-dev --no-store)
    echo "${cmd[*]}" >> "$OUT/env.txt"
    timeout -s INT "$(( ${BUDGET_S:-300} - ($(date +%s) - start) ))" "${cmd[@]}" \
        > "$OUT/run.log" 2>&1
    echo "run: rc=$? after $(( $(date +%s) - start )) s" | tee -a "$OUT/env.txt"
    cp /tmp/spmm-real-dev/results.json "$OUT/spmm_results.json"
    $PY -m sparsescope results compact "$OUT/spmm_results.json" > /dev/null
    $PY scripts/spmm_backend_table.py "$OUT/spmm_results.json.xz" --groups \
        > "$OUT/spmm_groups.md" 2>&1
    tail -n 12 "$OUT/spmm_groups.md"
    return "$rc"
}

recipe_spmm_interleaved() {  # $@: benchmarks/spmm_interleaved.py argument sets, split by --
    out_dir /tmp/ss-interleaved
    wheels
    nvmath_wheels
    env_file "$OUT/env.txt" "interleaved args: $*"
    gpu_test_files
    local n=0 set=() arg
    : > "$OUT/interleaved.md"
    for arg in "$@" --; do
        if [ "$arg" != "--" ]; then set+=("$arg"); continue; fi
        [ "${#set[@]}" -gt 0 ] || continue
        n=$((n + 1))
        $PY benchmarks/spmm_interleaved.py "${set[@]}" --json "$OUT/interleaved_$n.json" \
            >> "$OUT/interleaved.md" 2>> "$OUT/interleaved.log"
        echo "set $n rc=$?" | tee -a "$OUT/env.txt"
        echo >> "$OUT/interleaved.md"
        set=()
    done
    $PY -c 'import json, sys; print(json.dumps([r for p in sys.argv[1:] for r in json.load(open(p))], indent=1))' \
        "$OUT"/interleaved_*.json > "$OUT/interleaved.json" && rm -f "$OUT"/interleaved_*.json
    cat "$OUT/interleaved.md"
}

bench_script() {  # $1: a script of benchmarks/ (no .py), $2: its files' stem, $3...: arguments
    local name="$1" stem="$2"
    shift 2
    [ -f "benchmarks/$name.py" ] || { echo "no benchmarks/$name.py" >&2; exit 2; }
    out_dir "/tmp/ss-$stem"
    wheels
    nvmath_wheels
    env_file "$OUT/env.txt" "bench $name args: $*"
    gpu_test_files
    $PY "benchmarks/$name.py" "$@" --json "$OUT/$stem.json" > "$OUT/$stem.md" 2> "$OUT/$stem.log"
    echo "$name rc=$?" | tee -a "$OUT/env.txt"
    cat "$OUT/$stem.md"
}

recipe_bench() {  # $1: a script of benchmarks/ (no .py), $2...: its arguments
    local name="$1"
    shift
    bench_script "$name" "$name" "$@"
}

recipe_timing_after_profiler() {  # $@: benchmarks/timing_after_profiler.py arguments
    bench_script timing_after_profiler after_profiler "$@"
}

recipe_latency_probe() {  # $@: benchmarks/spmm_latency_probe.py arguments
    out_dir /tmp/ss-latency-probe
    wheels
    nvmath_wheels
    env_file "$OUT/env.txt" "probe args: $*"
    gpu_test_files
    $PY benchmarks/spmm_latency_probe.py "$@" --json "$OUT/probe.json" > "$OUT/probe.md" \
        2> "$OUT/probe.log"
    echo "probe rc=$?"
    local ncu spec i=0
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    # NCU_CASES: "MATRIX:K:LAYOUT:BACKEND[:SKIP] ..." each profiled on its first launch of a
    # kernel named spmm_* or csrmm* (the gate's call) after SKIP such launches (default 0: a
    # library's plan may run a one-block call of its kernel first), caches flushed, with warp
    # states and stalls
    for spec in ${NCU_CASES:-}; do
        local m k layout backend skip
        IFS=: read -r m k layout backend skip <<< "$spec"
        i=$((i + 1))
        timeout 120 "$ncu" --kernel-name regex:"spmm_|csrmm" --launch-skip "${skip:-0}" \
            --launch-count 1 --cache-control all \
            --clock-control none --section SpeedOfLight --section LaunchStats \
            --section Occupancy --section WarpStateStats --section SchedulerStats \
            --section MemoryWorkloadAnalysis --section InstructionStats \
            --export "$OUT/ncu_$i" --force-overwrite \
            $PY benchmarks/spmm_latency_probe.py --matrix "$m" --k "$k" --layout "$layout" \
            --backend "$backend" --once > "$OUT/ncu_$i.log" 2>&1
        "$ncu" --import "$OUT/ncu_$i.ncu-rep" --page details --print-units base \
            > "$OUT/ncu_$i.txt" 2>&1
        echo "ncu $i $spec rc=$?" | tee -a "$OUT/env.txt"
    done
    if [ "$i" -gt 0 ]; then   # one file back, not three a case (the tool returns a few files)
        tar -czf "$OUT/ncu.tar.gz" -C "$OUT" $(cd "$OUT" && ls ncu_*) && rm -f "$OUT"/ncu_*
    fi
    cat "$OUT/probe.md"
}

recipe_spmm_population() {
    out_dir /tmp/ss-spmm
    local suite="${1:-spmm-population-held-out}" limit="${2:-380}" tests="${3:-}"
    local state=out/spmm-pop work=/tmp/ss-spmm-work
    mkdir -p "$state" "$work"
    [ -f "$state/store.sqlite.gz" ] && gunzip -f "$state/store.sqlite.gz"
    wheels
    env_file "$OUT/env.txt" "sources ${SOURCES:-suite:$suite} limit $limit"
    if [ "$tests" = "--gpu-tests" ]; then
        $PY -m pytest -q -m gpu tests/gpu/test_spmm_rowgroup.py tests/gpu/test_gpu_spmm.py \
            -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
        tail -3 "$OUT/pytest_gpu.log"
    fi
    local src kargs=() bargs=() k layout b
    read -r -a src <<< "${SOURCES:-suite:$suite}"
    for k in ${KS:-8 32 64 128 256 512}; do kargs+=(--k "$k"); done
    for layout in ${LAYOUTS:-row col}; do kargs+=(--layout "$layout"); done
    for b in ${BACKENDS:-spmm-torch-i32 spmm-cupy-i32 spmm-cuda-auto spmm-cuda-rowgroup \
                        spmm-cuda-rowwarp}; do bargs+=(--backend "$b"); done
    local cmd=("$PY" -m sparsescope sweep "${src[@]}" --op spmm "${kargs[@]}" "${bargs[@]}"
               --warmups 3 --repeats 15 --time-limit "$limit" --store "$state/store.sqlite"
               --out "$work/sweep" --json)
    echo "${cmd[*]}" > "$OUT/command.txt"
    "${cmd[@]}" > "$work/sweep.json" 2> "$work/sweep.log"
    echo "sweep exit $?" | tee -a "$OUT/env.txt"
    tail -3 "$work/sweep.log"
    local results
    results=$(ls "$work"/sweep/results.json* 2>/dev/null | head -1)
    if [ -n "$results" ]; then
        $PY -m sparsescope model score "$results" --spmm-bounds --json > "$OUT/summary.json"
        $PY -m sparsescope model score "$results" --spmm-bounds > "$OUT/summary.txt" 2>&1
        cp "$results" "$OUT/"
        [ "${results##*.}" = json ] && gzip -f "$OUT/results.json"
    fi
    gzip -c "$state/store.sqlite" > "$OUT/store.sqlite.gz"
    tar -czf "$OUT/bundle.tgz" -C "$work" sweep.json sweep.log sweep 2>/dev/null
    cat "$OUT/summary.txt" 2>/dev/null
}

recipe_sweep() {
    out_dir /tmp/ss-sweep
    local source="${1:-suite:seed6@0.25}" t0 rc
    # the in-process wheels alone (the image's Dask stack stays), then Dask itself
    $PY -m pip install -q --no-index --no-deps .device-wheels/fast_matrix_market*.whl \
        .device-wheels/platformdirs*.whl .device-wheels/markdown_it_py*.whl \
        .device-wheels/mdurl*.whl 2>&1 | tail -1
    dask_wheels
    env_file "$OUT/env.txt" "source $source"
    local args=(--backend cupy-cusparse-i32 --backend torch-cusparse-i32
                --backend cuda-spmv-auto --backend cuda-spmv-sell --backend cuda-spmv-adaptive
                --repeats 20)
    t0=$(date +%s)
    SPARSESCOPE_STORE=/tmp/ss-sweep-a.sqlite $PY -m sparsescope sweep "$source" "${args[@]}" \
        --out /tmp/ss-sweep-a --json > "$OUT/inprocess.json" 2> /tmp/ss-sweep-a.log
    echo "in-process rc=$? $(( $(date +%s) - t0 )) s"
    t0=$(date +%s)
    SPARSESCOPE_STORE=/tmp/ss-sweep-b.sqlite $PY -m sparsescope sweep "$source" "${args[@]}" \
        --cluster local --workers 1 --out /tmp/ss-sweep-b --json > "$OUT/local.json" \
        2> /tmp/ss-sweep-b.log
    echo "local cluster rc=$? $(( $(date +%s) - t0 )) s"
    t0=$(date +%s)
    SPARSESCOPE_STORE=/tmp/ss-sweep-b.sqlite $PY -m sparsescope sweep "$source" "${args[@]}" \
        --cluster local --workers 1 --out /tmp/ss-sweep-b --json > "$OUT/resume.json" \
        2>> /tmp/ss-sweep-b.log
    rc=$?
    echo "resume rc=$rc $(( $(date +%s) - t0 )) s"
    cp /tmp/ss-sweep-b/collection.md /tmp/ss-sweep-b/results.json "$OUT/" 2>/dev/null
    tail -n 5 /tmp/ss-sweep-a.log /tmp/ss-sweep-b.log
    $PY - <<'PY'
import json, os
out = os.environ["OUT"]
for name in ("inprocess", "local", "resume"):
    try:
        d = json.load(open(f"{out}/{name}.json"))
    except Exception as exc:
        print(name, "unreadable:", exc)
        continue
    print(name, {k: v for k, v in d.items() if not isinstance(v, (list, dict))})
PY
    return "$rc"
}

recipe_sweep_gpus() {
    out_dir /tmp/ss-sweep-gpus
    local counts=("$@") source="${SOURCE:-.real-dev}" limit="${LIMIT_S:-240}" g home rc=0
    [ ${#counts[@]} -eq 0 ] && counts=(1 2 4)
    rm -rf /tmp/ss-gpus-logs; mkdir -p /tmp/ss-gpus-logs
    wheels
    dask_wheels
    dask_cuda_path
    if [ -d .device-wheels-nvmath ]; then  # the planned cuSPARSE, where its wheels are carried
        nvmath_wheels
    fi
    local count="not a folder"
    [ -d "$source" ] && count="$(ls "$source" | wc -l) files"
    env_file "$OUT/env.txt" "source $source ($count)" \
        "$(nproc) cores" "gpus $(nvidia-smi -L | wc -l)"
    if [ "${GPU_TESTS:-1}" = 1 ]; then
        # shellcheck disable=SC2046
        $PY -m pytest tests -m gpu -q -p no:cacheprovider -n 4 $(timeout_flag 300) -rs \
            > "$OUT/pytest_gpu.log" 2>&1
        rc=$?
        tail -n 3 "$OUT/pytest_gpu.log"
    fi
    local bargs=() trees=("after:${AFTER:-src}") spec tag tree name b
    for b in ${BACKENDS:-}; do bargs+=(--backend "$b"); done
    [ -n "${BEFORE:-}" ] && trees=("before:$BEFORE" "after:${AFTER:-src}")
    for g in "${counts[@]}"; do
        for spec in "${trees[@]}"; do  # before and after one after the other, per count
            tag="${spec%%:*}" tree="${spec#*:}"
            name="sweep_$g"
            [ -n "${BEFORE:-}" ] && name="sweep_${tag}_$g"
            home="/tmp/ss-gpus-$name"
            rm -rf "$home"; mkdir -p "$home"
            CUDA_VISIBLE_DEVICES="$(seq -s, 0 $((g - 1)))" \
                PYTHONPATH="$tree${PYTHONPATH#src}" SPARSESCOPE_STORE="$home/store.sqlite" \
                SPARSESCOPE_CACHE="$home/cache" CUPY_CACHE_DIR="$home/cupy" \
                CUDA_CACHE_PATH="$home/cuda" timeout -s INT "$limit" $PY -m sparsescope sweep \
                "$source" "${bargs[@]}" --cluster cuda --out "$home/out" --json \
                > "$OUT/$name.json" 2> "/tmp/ss-gpus-logs/$name.log"
            echo "$name ($tree): rc $?"
            # the sweep's results (its stage breakdown: where each worker's busy time went)
            [ -f "$home/out/results.json" ] && gzip -c "$home/out/results.json" \
                > "/tmp/ss-gpus-logs/${name}_results.json.gz"
        done
    done
    tar -czf "$OUT/sweep_logs.tgz" -C /tmp/ss-gpus-logs .
    $PY - "$OUT" "${BEFORE:+before after}" "${counts[@]}" > "$OUT/scaling.md" <<'PY'
import json, sys
out, tags, counts = sys.argv[1], sys.argv[2].split() or [""], sys.argv[3:]
for tag in tags:
    rows, base = [], None
    for g in counts:
        path = f"{out}/sweep_{tag + '_' if tag else ''}{g}.json"
        try:
            d = json.load(open(path))
        except Exception as exc:
            rows.append(f"| {g} | unreadable: {exc} |" + " |" * 10)
            continue
        t = d.get("throughput") or {}
        rate = t.get("cases_per_min")
        base = base if base is not None else rate
        speed = f"{rate / base:.2f}x" if rate and base else ""
        first = t.get("first_use") or []
        ceilings = ", ".join(sorted({r.get("ceilings", "") for r in first})) or "-"
        warm = sum(len(r.get("warm_cases") or ()) for r in first)
        rows.append(f"| {g} | {d.get('ran')} | {t.get('wall_s')} | {rate} | {speed} | "
                    f"{t.get('busy_s')} | {t.get('first_use_s', '-')} | "
                    f"{t.get('first_use_max_s', '-')} | {ceilings} | {warm} | "
                    f"{t.get('batched_tasks', '-')} | {t.get('overhead_pct')} |")
    if tag:
        print(f"\n{tag}:\n")
    print("| GPUs | cases run | engine wall s | cases/min | vs 1 GPU | busy s | first use s "
          "| first use max s | ceilings | warm cases | batched tasks | overhead % |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    print("\n".join(rows))
PY
    cat "$OUT/scaling.md"
    return "$rc"
}

recipe_sweep_scale() {
    out_dir /tmp/ss-scale
    local mode="${1:?sweep-scale: cpu or gpu}" limit="${2:-400}"
    local state=out/sweep-scale work=/tmp/ss-scale-work files=()
    mkdir -p "$state/parts" "$work"
    # the store travels gzipped (the carried tree is limited to 64 MiB)
    [ -f "$state/store.sqlite.gz" ] && gunzip -f "$state/store.sqlite.gz"
    wheels
    dask_wheels
    dask_cuda_path
    env_file "$OUT/env.txt" "mode $mode limit $limit" "$(nproc) cores" "$(free -g | head -2)"
    local common=(--warmups 5 --repeats 20 --json)
    if [ "$mode" = cpu ]; then
        local w ks=()
        for w in 1 2; do
            SPARSESCOPE_STORE="$work/cpu$w.sqlite" $PY -m sparsescope sweep \
                suite:population@0.05 --backend scipy-cpu --cluster local --workers "$w" \
                --out "$work/cpu$w" "${common[@]}" > "$work/cpu_w$w.json" 2> "$work/cpu_w$w.log"
            echo "cpu workers=$w rc=$?"
        done
        for k in 1 2 3 4 5 6 7 8 9 10; do ks+=(--k "$k"); done
        SPARSESCOPE_STORE="$work/mem.sqlite" $PY -m sparsescope sweep suite:population@0.01 \
            --op spmm --backend spmm-scipy-cpu "${ks[@]}" --cluster local --workers 8 \
            --out "$work/mem" --warmups 1 --repeats 3 --json > "$work/cpu_2040.json" \
            2> "$work/cpu_2040.log"
        echo "cpu 2040 cases rc=$?"
        files=("$work"/cpu_*.json "$work"/cpu_*.log)
    else
        local n part t0
        n=$(ls "$state/parts" | grep -c '^gpu_part.*\.json$')
        part="gpu_part$((n + 1))"
        t0=$(date +%s)
        timeout -s INT 560 $PY -m sparsescope sweep suite:population --cluster cuda \
            --store "$state/store.sqlite" --out "$work/gpu" --time-limit "$limit" \
            "${common[@]}" > "$state/parts/$part.json" 2> "$state/parts/$part.log"
        echo "$part rc=$? $(( $(date +%s) - t0 )) s"
        cp "$work"/gpu/collection.md "$work"/gpu/results.json "$state/parts/" 2>/dev/null
        files=("$state/parts" "$work/gpu")
    fi
    [ -f "$state/store.sqlite" ] && gzip -c "$state/store.sqlite" > "$OUT/store.sqlite.gz"
    tar czf "$OUT/bundle.tgz" "${files[@]}" 2>/dev/null
    $PY - "$mode" "$state" "$work" > "$OUT/summary.txt" <<'PY'
import glob, json, sys
mode, state, work = sys.argv[1:]
paths = sorted(glob.glob(f"{work}/cpu_*.json")) if mode == "cpu" else \
    sorted(glob.glob(f"{state}/parts/gpu_part*.json"))
for path in paths:
    try:
        d = json.load(open(path))
    except Exception as exc:
        print(path, "unreadable:", exc)
        continue
    outcomes = {}
    for c in d.get("cases", []):
        outcomes[c["outcome"]] = outcomes.get(c["outcome"], 0) + 1
    print(path.rsplit("/", 1)[-1], "exit", d.get("exit_code"), "ran", d.get("ran"),
          "stored", d.get("stored"), "outcomes", outcomes, "throughput", d.get("throughput"),
          d.get("error", ""))
PY
    cat "$OUT/summary.txt"
}

# -- dispatch -----------------------------------------------------------------------------------
RECIPES=(list gpu-tests real-dev kernels model seed6 seed6-speed profile profile-cases ab-kernel
         finish-ab ops break-even spmm-blocktc spmm-population spmm-real-dev sweep sweep-gpus
         sweep-scale latency-probe spmm-interleaved timing-after-profiler bench)
if [[ " ${RECIPES[*]} " != *" $RECIPE "* ]]; then
    echo "unknown recipe '$RECIPE'; recipes: ${RECIPES[*]}" >&2
    exit 2
fi
"recipe_${RECIPE//-/_}" "$@"
