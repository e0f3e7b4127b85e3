#!/usr/bin/env bash
# A GPU sweep, in process and on a one-worker Dask LocalCluster, then a re-run that must resume
# (every case already stored), on the lent GPU, in one call:
#
#   bash scripts/device_sweep.sh [SOURCE] [--scale-note TEXT]
#
# Wheels travel in .device-wheels/ (carry=[".device-wheels"]; scripts/fetch_device_wheels.sh).
# Everything lands in $OUT (/tmp/ss-sweep elsewhere): env.txt, inprocess.json, local.json,
# resume.json (the --json outputs), collection.md, results.json. Exit status: the last sweep's.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-sweep}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
SOURCE="${1:-suite:seed6@0.25}"
python3 -m pip install -q --no-index --no-deps .device-wheels/fast_matrix_market*.whl \
    .device-wheels/platformdirs*.whl .device-wheels/markdown_it_py*.whl \
    .device-wheels/mdurl*.whl 2>&1 | tail -1
python3 -m pip install -q --no-index --find-links .device-wheels distributed 2>&1 | tail -1
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "commit ${SPARSESCOPE_GIT_COMMIT:-unknown} source $SOURCE"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    python3 -c 'import sys, torch, cupy, distributed; print("python", sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__, "distributed", distributed.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
ARGS=(--backend cupy-cusparse-i32 --backend torch-cusparse-i32 --backend cuda-spmv-auto
      --backend cuda-spmv-sell --backend cuda-spmv-adaptive --repeats 20)
t0=$(date +%s)
SPARSESCOPE_STORE=/tmp/ss-sweep-a.sqlite python3 -m sparsescope sweep "$SOURCE" "${ARGS[@]}" \
    --out /tmp/ss-sweep-a --json > "$OUT/inprocess.json" 2> /tmp/ss-sweep-a.log
echo "in-process rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
SPARSESCOPE_STORE=/tmp/ss-sweep-b.sqlite python3 -m sparsescope sweep "$SOURCE" "${ARGS[@]}" \
    --cluster local --workers 1 --out /tmp/ss-sweep-b --json > "$OUT/local.json" \
    2> /tmp/ss-sweep-b.log
echo "local cluster rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
SPARSESCOPE_STORE=/tmp/ss-sweep-b.sqlite python3 -m sparsescope sweep "$SOURCE" "${ARGS[@]}" \
    --cluster local --workers 1 --out /tmp/ss-sweep-b --json > "$OUT/resume.json" \
    2>> /tmp/ss-sweep-b.log
rc=$?
echo "resume rc=$rc $(( $(date +%s) - t0 )) s"
cp /tmp/ss-sweep-b/collection.md /tmp/ss-sweep-b/results.json "$OUT/" 2>/dev/null
tail -n 5 /tmp/ss-sweep-a.log /tmp/ss-sweep-b.log
python3 - <<'PY'
import json, os
out = os.environ["OUT"]
for name in ("inprocess", "local", "resume"):
    try:
        d = json.load(open(f"{out}/{name}.json"))
    except Exception as exc:
        print(name, "unreadable:", exc); continue
    keys = [k for k in d if not isinstance(d[k], (list, dict))]
    print(name, {k: d[k] for k in keys})
PY
exit "$rc"
