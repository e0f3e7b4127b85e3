#!/usr/bin/env bash
# The issue-15 scale measurements on the lent GPU machine, in parts of at most 10 minutes:
#
#   bash scripts/device_sweep_scale.sh cpu          # CPU: --cluster local, 1 worker against
#        2 on the same sweep (suite:population@0.05 x scipy-cpu), and a 2,040-case sweep's
#        client memory (suite:population@0.01 x spmm-scipy-cpu at k = 1..10, 8 workers)
#   bash scripts/device_sweep_scale.sh gpu [S]      # one part of suite:population (204
#        matrices, 1e4..2e7 nnz) x the default GPU backends on --cluster cuda, stopped by
#        --time-limit S (default 400) and resumed by the next part from the carried store
#
# State that must survive between parts (the machine is returned between calls) lives in
# out/sweep-scale/ (carry=[".device-wheels", "out/sweep-scale"]): store.sqlite and the
# --json output of every part. Wheels: .device-wheels/*.whl (no deps), and
# .device-wheels/sweep-extra.tar.xz (scripts/fetch_device_wheels.sh: dask-cuda, nvidia-ml-py,
# cuda-core, cuda-bindings, cuda-pathfinder unpacked).
# Comes back in $OUT: env.txt, summary.txt, store.sqlite.gz, bundle.tgz (every log and output).
set -uo pipefail
cd "$(dirname "$0")/.."
MODE="${1:?cpu or gpu}"
LIMIT="${2:-400}"
export OUT="${OUT:-/tmp/ss-scale}"
STATE=out/sweep-scale
WORK=/tmp/ss-scale-work
mkdir -p "$OUT" "$STATE/parts" "$WORK"
# the store travels gzipped (the carried tree is limited to 64 MiB)
[ -f "$STATE/store.sqlite.gz" ] && gunzip -f "$STATE/store.sqlite.gz"
export PYTHONPATH=src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -1
python3 -m pip install -q --no-index --find-links .device-wheels distributed 2>&1 | tail -1
# dask-cuda and what it needs, unpacked wheels in one tar.xz (half the size of the wheels: the
# carried tree is limited to 64 MiB), each put on PYTHONPATH only where the image lacks it
EXTRA=/tmp/ss-sweep-extra
mkdir -p "$EXTRA" && tar xJf .device-wheels/sweep-extra.tar.xz -C "$EXTRA"
for pair in "pynvml:nvidia_ml_py" "cuda.pathfinder:cuda_pathfinder" \
            "cuda.bindings:cuda_bindings" "cuda.core:cuda_core" "dask_cuda:dask_cuda"; do
    module="${pair%%:*}"; wheel="${pair##*:}"
    if ! python3 -c "import $module" 2>/dev/null; then
        export PYTHONPATH="$PYTHONPATH:$(ls -d "$EXTRA"/${wheel}-*.whl)"
        echo "using the carried $wheel"
    fi
done
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "commit ${SPARSESCOPE_GIT_COMMIT:-unknown} mode $MODE limit $LIMIT"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    nproc; free -g | head -2
    python3 -c 'import sys, torch, cupy, distributed, dask_cuda; print("python", sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__, "distributed", distributed.__version__, "dask_cuda", dask_cuda.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
COMMON=(--warmups 5 --repeats 20 --json)

if [ "$MODE" = cpu ]; then
    for w in 1 2; do
        SPARSESCOPE_STORE="$WORK/cpu$w.sqlite" python3 -m sparsescope sweep \
            suite:population@0.05 --backend scipy-cpu --cluster local --workers "$w" \
            --out "$WORK/cpu$w" "${COMMON[@]}" > "$WORK/cpu_w$w.json" 2> "$WORK/cpu_w$w.log"
        echo "cpu workers=$w rc=$?"
    done
    ks=(); for k in 1 2 3 4 5 6 7 8 9 10; do ks+=(--k "$k"); done
    SPARSESCOPE_STORE="$WORK/mem.sqlite" python3 -m sparsescope sweep suite:population@0.01 \
        --op spmm --backend spmm-scipy-cpu "${ks[@]}" --cluster local --workers 8 \
        --out "$WORK/mem" --warmups 1 --repeats 3 --json > "$WORK/cpu_2040.json" \
        2> "$WORK/cpu_2040.log"
    echo "cpu 2040 cases rc=$?"
    FILES=("$WORK"/cpu_*.json "$WORK"/cpu_*.log)
else
    n=$(ls "$STATE/parts" | grep -c '^gpu_part.*\.json$')
    part="gpu_part$((n + 1))"
    t0=$(date +%s)
    timeout -s INT 560 python3 -m sparsescope sweep suite:population --cluster cuda \
        --store "$STATE/store.sqlite" --out "$WORK/gpu" --time-limit "$LIMIT" "${COMMON[@]}" \
        > "$STATE/parts/$part.json" 2> "$STATE/parts/$part.log"
    echo "$part rc=$? $(( $(date +%s) - t0 )) s"
    cp "$WORK"/gpu/collection.md "$WORK"/gpu/results.json "$STATE/parts/" 2>/dev/null
    FILES=("$STATE/parts" "$WORK/gpu")
fi
[ -f "$STATE/store.sqlite" ] && gzip -c "$STATE/store.sqlite" > "$OUT/store.sqlite.gz"
tar czf "$OUT/bundle.tgz" "${FILES[@]}" 2>/dev/null
python3 - "$MODE" "$STATE" "$WORK" > "$OUT/summary.txt" <<'PY'
import glob, json, sys
mode, state, work = sys.argv[1:]
paths = sorted(glob.glob(f"{work}/cpu_*.json")) if mode == "cpu" else \
    sorted(glob.glob(f"{state}/parts/gpu_part*.json"))
for path in paths:
    try:
        d = json.load(open(path))
    except Exception as exc:
        print(path, "unreadable:", exc); continue
    outcomes = {}
    for c in d.get("cases", []):
        outcomes[c["outcome"]] = outcomes.get(c["outcome"], 0) + 1
    print(path.rsplit("/", 1)[-1], "exit", d.get("exit_code"), "ran", d.get("ran"),
          "stored", d.get("stored"), "outcomes", outcomes, "throughput", d.get("throughput"),
          d.get("error", ""))
PY
cat "$OUT/summary.txt"
