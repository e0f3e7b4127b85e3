#!/usr/bin/env bash
# A/B of the tile kernels' split-row completion on the lent GPU, in one call: spmv_fixup as a
# second launch (finish=0) against the last tile finishing the row (finish=1), for whole-row
# tiles (iters 1, 2) and merge tiles, beside cuSPARSE, through the product path:
#
#   bash scripts/device_finish_ab.sh ['SUITE#M1,M2' ...]
#
# First the own-kernel GPU tests (every variant against float64, the finishing ones included).
# Lands in $OUT: env.txt, pytest_gpu.log, and per suite spec N: run_N.log, results_N.json,
# show_N.txt. Wheels: carry the wheel folder as scripts/fetch_device_wheels.sh says.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-finish-ab}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
source scripts/device_common.sh
device_wheels
device_env "$OUT/env.txt"
python3 -m pytest tests/gpu/test_spmv_own_kernels.py -q -p no:cacheprovider -rs 2>&1 \
    | tee "$OUT/pytest_gpu.log" | tail -n 4
n=0
for suite in "$@"; do
    n=$((n + 1))
    python3 -m sparsescope run --suite "$suite" --scale 1 --backend torch-cusparse-i32 \
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
    python3 -m sparsescope results show "$OUT/results_$n.json" > "$OUT/show_$n.txt" 2>&1
done
python3 scripts/finish_ab_table.py "$OUT"/results_*.json 2>&1 | tee "$OUT/ab.md" | tail -n 40
