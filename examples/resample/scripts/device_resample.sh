#!/usr/bin/env bash
# Seed 002 worked example on the GPU machine: predict, then measure, every step.
#
#   bash examples/resample/scripts/device_resample.sh
#
# For each version (naive -> smem -> vec -> warp -> ours -> ours2) `sparsescope analyze` times
# it (CUDA events, the project's protocol), checks it against the float64 result, profiles one
# call with ncu (--set full, source counters), reads its SASS, and writes a roadmap whose gains
# are predicted from the model. A version's analysis.json is written before the next version
# runs, so each step's prediction is fixed before its measurement. Then `--compare` scores every
# step (predicted against measured speedup, MAE, history in the store) and compares the last
# version with the PyTorch reference; the same command analyses one SpMV kernel of ours; the
# GPU-marked tests of tests/analyze run last.
#
# Output: $RESULTS (default $OUT/results/h200/resample under the device tool, else
# results/h200/resample): <version>/ (analysis.json, report.md, report.html, ncu files),
# pytorch/, series/, spmv/, store.sqlite, env.txt, env.json, *.log and README.md.
# Wheels the image lacks travel in .device-wheels/ (carry=[".device-wheels"]).
#
# The work can be split over several calls (a device command is limited in time): STEPS names
# the parts to run, default "versions reference compare spmv readme tests"; VERSIONS the
# versions, default "naive smem vec warp ours ours2". RESULTS must then stay the same between
# calls. REPEATS sets the timed repeats of each analysis (default 200).
set -uo pipefail
STEPS="${STEPS:-versions reference compare spmv readme tests}"
VERSIONS="${VERSIONS:-naive smem vec warp ours ours2}"
REPEATS="${REPEATS:-200}"
ALL_VERSIONS="naive smem vec warp ours ours2"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
cd "$(dirname "$0")/../../.."
if [ -n "${OUT:-}" ]; then RESULTS="${RESULTS:-$OUT/results/h200/resample}"; fi
RESULTS="${RESULTS:-results/h200/resample}"
mkdir -p "$RESULTS"
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
export SPARSESCOPE_STORE="$PWD/$RESULTS/store.sqlite"
case "$RESULTS" in /*) export SPARSESCOPE_STORE="$RESULTS/store.sqlite";; esac
# RUN_COMMAND: the command line that started this (recorded in README.md as given)
COMMAND="${RUN_COMMAND:-STEPS=\"$STEPS\" VERSIONS=\"$VERSIONS\" REPEATS=$REPEATS bash examples/resample/scripts/device_resample.sh}"

if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi

# The CLI through its module, so this works before "sparsescope.cli.analyze_cmd" is listed in
# COMMAND_MODULES.
analyze() {
    python3 -c 'import sys; from sparsescope.cli import main; sys.exit(main(sys.argv[1:], modules=["sparsescope.cli.analyze_cmd"]))' analyze "$@"
}

STARTED=$(date +%s)
# The run's environment: env.txt (as read) and env.json (what README.md is written from).
{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv
    nvcc --version 2>/dev/null | tail -2
    uname -r
} 2>&1 | tee "$RESULTS/env.txt"
python3 - "$RESULTS/env.json" <<'PY' 2>&1 | tee -a "$RESULTS/env.txt"
import json, platform, subprocess, sys
from datetime import UTC, datetime

env = {"date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
       "python": platform.python_version(), "kernel": platform.release()}
q = "name,driver_version,memory.total,clocks.max.sm,clocks.sm,clocks.mem"
try:
    row = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60).stdout.strip()
    env.update(zip(("gpu", "driver", "memory_total", "sm_clock_max", "sm_clock_now",
                    "mem_clock_now"), [x.strip() for x in row.splitlines()[0].split(",")]))
except Exception as exc:
    env["nvidia_smi_error"] = str(exc)
import numpy
env["numpy"] = numpy.__version__
try:
    import torch
    env.update(torch=torch.__version__, torch_cuda=torch.version.cuda,
               torch_device=torch.cuda.get_device_name(0))
except Exception as exc:
    env["torch"] = f"unavailable: {exc}"
try:
    import cupy
    rt = cupy.cuda.runtime
    v, d = rt.runtimeGetVersion(), rt.driverGetVersion()
    env.update(cupy=cupy.__version__, cuda_runtime=f"{v // 1000}.{v % 1000 // 10}",
               cuda_driver_api=f"{d // 1000}.{d % 1000 // 10}")
except Exception as exc:
    env["cupy"] = f"unavailable: {exc}"
try:
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    env["nvcc"] = next((ln.strip() for ln in out.splitlines() if "release" in ln), "")
except Exception:
    env["nvcc"] = "not found"
from sparsescope.profile.collect import find_ncu, ncu_version
ncu = find_ncu()
env["ncu"] = f"{ncu_version(ncu)} ({ncu})" if ncu else "not found"
import sparsescope
from sparsescope.results.provenance import git_commit
env.update(sparsescope=sparsescope.__version__, git_commit=git_commit())
with open(sys.argv[1], "w") as fh:
    json.dump(env, fh, indent=1)
for k, v in env.items():
    print(f"{k}: {v}")
PY

W=examples/resample/resample_workload.py
run_version() {  # name, label: analyze with the profile; without it if ncu cannot profile
    local fn="$1" label="$2"
    local start=$(date +%s)
    if ! analyze "$W:$fn" --repeats "$REPEATS" --out "$RESULTS/$label" --json \
            > "$RESULTS/$label.json" \
            2> "$RESULTS/$label.log"; then
        echo "$label: profiled analysis failed (see $label.log); timing without ncu" \
            | tee -a "$RESULTS/$label.log"
        analyze "$W:$fn" --no-profile --repeats "$REPEATS" --out "$RESULTS/$label" --json \
            > "$RESULTS/$label.json" \
            2>> "$RESULTS/$label.log" || echo "$label: FAILED" | tee -a "$RESULTS/$label.log"
    fi
    echo "$label: $(( $(date +%s) - start )) s" | tee -a "$RESULTS/timing.log"
}
if want versions; then
    for v in $VERSIONS; do run_version "$v" "$v"; done
fi
if want reference; then run_version reference pytorch; fi

if want compare; then
    steps=()
    for v in $ALL_VERSIONS; do
        [ -f "$RESULTS/$v/analysis.json" ] && steps+=("$RESULTS/$v/analysis.json")
    done
    analyze --compare "${steps[@]}" --reference-result "$RESULTS/pytorch/analysis.json" \
        --out "$RESULTS/series" --json > "$RESULTS/series.json" 2> "$RESULTS/series.log" \
        || echo "compare failed: see series.log"
    cat "$RESULTS/series/report.md" 2>/dev/null
fi

if want spmv; then
# One SpMV kernel of ours through the same command: csr_vector (8 lanes a row) on a CSR matrix
# of 2^20 rows with 16 random columns each (like the scalar_device fixture, 16.8 M nonzeros,
# about 210 MB); the reference is SciPy in float64.
cat > "$RESULTS/spmv_ref.py" <<'PY'
import numpy as np
import scipy.sparse as sp


def spmv(h):
    n = int(h["rows"])
    a = sp.csr_matrix((h["v"].astype(np.float64), h["ci"], h["rp"]), shape=(n, n))
    return (a @ h["x"].astype(np.float64),)
PY
start=$(date +%s)
analyze --cuda src/sparsescope/backends/kernels/spmv_csr.cu --kernel "csr_vector<float, int, 8>" \
    --grid "(rows*8+255)//256" --block 256 \
    --args "rows:i64=1048576; rp:i32[rows+1]=arange(0,16); ci:i32[rows*16]=randint(0,rows); v:f32[rows*16]=rand; x:f32[rows]=rand; y:f32[rows]=zeros!out" \
    --reference "$RESULTS/spmv_ref.py:spmv" --out "$RESULTS/spmv" --json \
    --repeats "$REPEATS" > "$RESULTS/spmv.json" 2> "$RESULTS/spmv.log" \
    || echo "spmv analysis failed: see spmv.log"
echo "spmv: $(( $(date +%s) - start )) s" | tee -a "$RESULTS/timing.log"
fi

if want readme; then
    echo "$COMMAND" > "$RESULTS/device_command.txt"
    sparsescope results readme "$RESULTS" --title "The resample worked example"
fi

# The GPU-marked tests of tests/analyze (the CPU ones run in CI)
if want tests; then
    python3 -m pytest tests/analyze/test_gpu_analyze.py -q -p no:cacheprovider 2>&1 \
        | tee "$RESULTS/pytest.log"
fi
echo "total: $(( $(date +%s) - STARTED )) s" | tee -a "$RESULTS/timing.log"
exit 0
