#!/usr/bin/env bash
# Seed 002 worked example on the GPU machine: predict, then measure, every step.
#
#   bash examples/resample/scripts/device_resample.sh
#
# For each version (naive -> smem -> vec -> warp -> ours) `sparsescope analyze` times it (CUDA
# events, the project's protocol), checks it against the float64 result, profiles one call with
# ncu (--set full, source counters), reads its SASS, and writes a roadmap whose gains are
# predicted from the model. A version's analysis.json is written before the next version runs,
# so each step's prediction is fixed before its measurement. Then `--compare` scores every step
# (predicted against measured speedup, MAE, history in the store) and compares the last
# version with the PyTorch reference; the same command analyses one SpMV kernel of ours.
#
# Output: $RESULTS (default $OUT/results/h200/resample under the device tool, else
# results/h200/resample): <version>/ (analysis.json, report.md, report.html, ncu files),
# pytorch/, series/, spmv/, store.sqlite, env.txt, *.log and README.md.
# Wheels the image lacks travel in .device-wheels/ (carry=[".device-wheels"]).
#
# The work can be split over several calls (a device command is limited in time): STEPS names
# the parts to run, default "tests versions reference compare spmv readme"; VERSIONS the
# versions, default "naive smem vec warp ours". RESULTS must then stay the same between calls.
set -uo pipefail
STEPS="${STEPS:-tests versions reference compare spmv readme}"
VERSIONS="${VERSIONS:-naive smem vec warp ours}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
cd "$(dirname "$0")/../../.."
if [ -n "${OUT:-}" ]; then RESULTS="${RESULTS:-$OUT/results/h200/resample}"; fi
RESULTS="${RESULTS:-results/h200/resample}"
mkdir -p "$RESULTS"
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
export SPARSESCOPE_STORE="$PWD/$RESULTS/store.sqlite"
case "$RESULTS" in /*) export SPARSESCOPE_STORE="$RESULTS/store.sqlite";; esac
COMMAND="STEPS=\"$STEPS\" VERSIONS=\"$VERSIONS\" bash examples/resample/scripts/device_resample.sh"

if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi

# The CLI through its module, so this works before "sparsescope.cli.analyze_cmd" is listed in
# COMMAND_MODULES.
analyze() {
    python3 -c 'import sys; from sparsescope.cli import main; sys.exit(main(sys.argv[1:], modules=["sparsescope.cli.analyze_cmd"]))' analyze "$@"
}

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    python3 - <<'PY'
import platform, numpy
print("python", platform.python_version(), "numpy", numpy.__version__)
for mod in ("torch", "cupy"):
    try:
        m = __import__(mod)
        print(mod, m.__version__)
    except Exception as exc:
        print(mod, "unavailable:", exc)
from sparsescope.profile.collect import find_ncu, ncu_version
ncu = find_ncu()
print("ncu", ncu, ncu_version(ncu) if ncu else "")
import sparsescope
from sparsescope.results.provenance import git_commit
print("sparsescope", sparsescope.__version__, git_commit())
PY
} 2>&1 | tee "$RESULTS/env.txt"

if want tests; then
    python3 -m pytest tests/analyze -q -p no:cacheprovider 2>&1 | tee "$RESULTS/pytest.log"
fi

W=examples/resample/resample_workload.py
run_version() {  # name, label: analyze with the profile; without it if ncu cannot profile
    local fn="$1" label="$2"
    local start=$(date +%s)
    if ! analyze "$W:$fn" --out "$RESULTS/$label" --json > "$RESULTS/$label.json" \
            2> "$RESULTS/$label.log"; then
        echo "$label: profiled analysis failed (see $label.log); timing without ncu" \
            | tee -a "$RESULTS/$label.log"
        analyze "$W:$fn" --no-profile --out "$RESULTS/$label" --json > "$RESULTS/$label.json" \
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
    for v in naive smem vec warp ours; do
        [ -f "$RESULTS/$v/analysis.json" ] && steps+=("$RESULTS/$v/analysis.json")
    done
    analyze --compare "${steps[@]}" --reference-result "$RESULTS/pytorch/analysis.json" \
        --out "$RESULTS/series" --json > "$RESULTS/series.json" 2> "$RESULTS/series.log" \
        || echo "compare failed: see series.log"
    cat "$RESULTS/series/report.md" 2>/dev/null
fi

if want spmv; then
# One SpMV kernel of ours through the same command (a CSR matrix with 16 random columns per row,
# like the scalar_device fixture); the reference is SciPy in float64.
cat > "$RESULTS/spmv_ref.py" <<'PY'
import numpy as np
import scipy.sparse as sp


def spmv(h):
    n = int(h["rows"])
    a = sp.csr_matrix((h["v"].astype(np.float64), h["ci"], h["rp"]), shape=(n, n))
    return (a @ h["x"].astype(np.float64),)
PY
analyze --cuda src/sparsescope/backends/kernels/spmv_csr.cu --kernel "csr_vector<float, int, 8>" \
    --grid "(rows*8+255)//256" --block 256 \
    --args "rows:i64=131072; rp:i32[rows+1]=arange(0,16); ci:i32[rows*16]=randint(0,rows); v:f32[rows*16]=rand; x:f32[rows]=rand; y:f32[rows]=zeros!out" \
    --reference "$RESULTS/spmv_ref.py:spmv" --out "$RESULTS/spmv" --json \
    > "$RESULTS/spmv.json" 2> "$RESULTS/spmv.log" || echo "spmv analysis failed: see spmv.log"
fi

if want readme; then
    python3 examples/resample/scripts/write_readme.py "$RESULTS" --command "$COMMAND" \
        --env "$RESULTS/env.txt"
fi
[ -f "$RESULTS/pytest.log" ] && tail -n 3 "$RESULTS/pytest.log"
exit 0
