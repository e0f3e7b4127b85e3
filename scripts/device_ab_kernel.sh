#!/usr/bin/env bash
# A/B of one own kernel source on the lent GPU, in one call: the same `sparsescope run` with
# the kernel file as given (A, e.g. the last commit's) and as in the working tree (B), run
# A, B, A, B so that drift of the shared machine shows as A-to-A spread:
#
#   bash scripts/device_ab_kernel.sh A_FILE KERNEL_FILE -- RUN_ARGS...
#   e.g. git show HEAD:src/sparsescope/backends/kernels/spmv_own.cu > ab/spmv_own_a.cu
#        bash scripts/device_ab_kernel.sh ab/spmv_own_a.cu spmv_own.cu -- \
#            --suite 'population-held-out#rmat-29' --backend cuda-spmv-merge
#
# A_FILE must travel with the working tree (an untracked, not ignored file). Lands in $OUT
# (/tmp/ss-ab elsewhere): env.txt, A1/B1/A2/B2 results.json and logs, ab.txt (per case: the
# medians of each run and B/A). Wheels: carry=[".device-wheels"].
set -uo pipefail
cd "$(dirname "$0")/.."
A_FILE="$1"; KERNEL="$2"; shift 2
[ "${1:-}" = "--" ] && shift
export OUT="${OUT:-/tmp/ss-ab}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "git_commit ${SPARSESCOPE_GIT_COMMIT:-unknown} (B: working tree; A: $A_FILE as $KERNEL)"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
    python3 -c 'import sys, torch, cupy; print("python", sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__)'
    echo "run args: $*"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
A_SRC=/tmp/ss-ab-src-a
rm -rf "$A_SRC"; cp -r src "$A_SRC"
cp "$A_FILE" "$A_SRC/sparsescope/backends/kernels/$KERNEL"
for run in A1 B1 A2 B2; do
    src=src; [ "${run:0:1}" = A ] && src="$A_SRC"
    PYTHONPATH="$src" python3 -m sparsescope run "$@" --no-store --out "/tmp/ss-ab-$run" \
        > "$OUT/$run.log" 2>&1
    echo "$run rc=$?"
    cp "/tmp/ss-ab-$run/results.json" "$OUT/$run.json" 2>/dev/null
done
python3 scripts/ab_table.py "$OUT" | tee "$OUT/ab.txt"
