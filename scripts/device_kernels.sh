#!/usr/bin/env bash
# Own SpMV kernels on the lent GPU, in one call: correctness tests, the seed6 sweep against
# cuSPARSE (one process, L2 flushed), then ncu on each matrix's best own kernel.
#
#   bash scripts/device_kernels.sh [--skip-tests] [--skip-ncu] [--matrices cant,ldoor]
#                                  [--variants adaptive-i1-h1 ...] [--budget-s 480]
#
# Wheels the image lacks travel in .device-wheels/ (run with carry=[".device-wheels"]).
# Everything lands in $OUT (the device tool's folder that comes back; /tmp/ss-kernels
# elsewhere): env.txt, pytest.log, sweep.log, kernels.json, ncu.log, ncu_raw.csv. The last
# lines printed are the summary table. Exit status: 0 when the sweep ran.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-kernels}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
START=$(date +%s)
SKIP_TESTS=0; SKIP_NCU=0; MATRICES=""; VARIANTS=(); BUDGET=480
while [ $# -gt 0 ]; do
    case "$1" in
        --skip-tests) SKIP_TESTS=1 ;;
        --skip-ncu) SKIP_NCU=1 ;;
        --matrices) MATRICES="$2"; shift ;;
        --budget-s) BUDGET="$2"; shift ;;
        --variants) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do VARIANTS+=("$1"); shift; done; continue ;;
        *) echo "unknown option $1"; exit 2 ;;
    esac
    shift
done
elapsed() { echo $(( $(date +%s) - START )); }

if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
        --format=csv
    nvcc --version | tail -2
    ncu --version | tail -1
    python3 -c 'import sys, torch, cupy, numpy, scipy; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cupy", cupy.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
    uname -r
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [ "$SKIP_TESTS" = 0 ]; then
    python3 -m pytest tests/gpu/test_spmv_own_kernels.py tests/backends/test_spmv_formats.py \
        tests/backends/test_spmv_select.py -q -p no:cacheprovider --timeout 240 --maxfail=6 2>&1 \
        | tee "$OUT/pytest.log" | tail -n 15
    echo "tests done at $(elapsed) s"
fi

SWEEP_ARGS=(sweep --out "$OUT/kernels.json" --save-matrices /tmp/ss_mats)
[ -n "$MATRICES" ] && SWEEP_ARGS+=(--matrices "$MATRICES")
[ ${#VARIANTS[@]} -gt 0 ] && SWEEP_ARGS+=(--variants "${VARIANTS[@]}")
python3 benchmarks/spmv_kernels.py "${SWEEP_ARGS[@]}" > "$OUT/sweep.log" 2>&1
rc=$?
echo "sweep rc=$rc at $(elapsed) s"
grep -E "FAILED|Error|error" "$OUT/sweep.log" | head -n 20

if [ "$SKIP_NCU" = 0 ] && [ "$rc" = 0 ] && [ "$(elapsed)" -lt $(( BUDGET - 90 )) ]; then
    METRICS=$(python3 benchmarks/spmv_kernels.py ncu-metrics)
    timeout $(( BUDGET - $(elapsed) - 20 )) ncu --clock-control none --cache-control all \
        --kernel-name-base function --kernel-name "regex:spmv_(tile|sell|fixup)" \
        --metrics "$METRICS" -o /tmp/ss_prof -f \
        python3 benchmarks/spmv_kernels.py ncu-target --results "$OUT/kernels.json" \
        --matrices-dir /tmp/ss_mats > "$OUT/ncu.log" 2>&1
    echo "ncu rc=$? at $(elapsed) s"
    ncu --import /tmp/ss_prof.ncu-rep --csv --page raw --print-units base > "$OUT/ncu_raw.csv" 2>>"$OUT/ncu.log"
    tail -n 5 "$OUT/ncu.log"
fi
echo "total $(elapsed) s"
# the summary table, last
sed -n '/^matrix /,$p' "$OUT/sweep.log"
exit "$rc"
