#!/usr/bin/env bash
# Own SpMV kernels against cuSPARSE on the full-scale seed6 analogs, through the product path
# (`sparsescope run --variants`), on the lent GPU, in one call:
#
#   bash scripts/device_kernels.sh [--tests] [--set seed6-sweep] [--repeats 30] [--scale 1]
#        [--suite seed6]   (seed6#cant,pwtk: those entries only, to split a run over calls)
#
# --tests first runs every GPU-marked test. Wheels the image lacks travel in .device-wheels/
# (run with carry=[".device-wheels"]; scripts/fetch_device_wheels.sh fills it). Everything
# lands in $OUT (the device tool's folder that comes back; /tmp/ss-kernels elsewhere):
# env.txt, pytest_gpu.log, run.log, results.json, report.md, show.txt. The last lines printed
# are `sparsescope results show`'s table. Exit status: the run's.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-kernels}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
TESTS=0; SET=seed6-sweep; REPEATS=30; SCALE=1; SUITE=seed6
while [ $# -gt 0 ]; do
    case "$1" in
        --tests) TESTS=1 ;;
        --set) SET="$2"; shift ;;
        --repeats) REPEATS="$2"; shift ;;
        --scale) SCALE="$2"; shift ;;
        --suite) SUITE="$2"; shift ;;
        *) echo "unknown option $1"; exit 2 ;;
    esac
    shift
done
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }

if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "commit ${SPARSESCOPE_GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
        --format=csv
    python3 -c 'import sys, torch, cupy, numpy, scipy; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cupy", cupy.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
    uname -r
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [ "$TESTS" = 1 ]; then
    python3 -m pytest tests -m gpu -q -p no:cacheprovider -rs 2>&1 | tee "$OUT/pytest_gpu.log" \
        | tail -n 8
    echo "tests done at $(elapsed) s"
fi

python3 -m sparsescope run --suite "$SUITE" --scale "$SCALE" --backend torch-cusparse-i64 \
    --backend torch-cusparse-i32 --backend cupy-cusparse-i32 --backend cuda-spmv-auto \
    --backend cuda-spmv-auto-rules --variants "$SET" --repeats "$REPEATS" --out /tmp/ss-kernels-run --no-store \
    > "$OUT/run.log" 2>&1
rc=$?
echo "run rc=$rc at $(elapsed) s"
cp /tmp/ss-kernels-run/results.json /tmp/ss-kernels-run/report.md "$OUT/" 2>/dev/null
python3 -m sparsescope results show "$OUT/results.json" > "$OUT/show.txt" 2>&1
tail -n 60 "$OUT/show.txt"
exit "$rc"
