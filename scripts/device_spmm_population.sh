#!/usr/bin/env bash
# Issue 18's measurement on the lent GPU, in parts of at most 10 minutes:
#
#   bash scripts/device_spmm_population.sh [SUITE] [LIMIT] [--gpu-tests]
#   SOURCES="suite:spmm-population-held-out#weights-02 ..." bash scripts/device_spmm_population.sh
#   (KS="8 128", LAYOUTS="row" and BACKENDS="spmm-torch-i32 ..." override the k values, X
#   layouts and backends)
#
# sweeps suite:SUITE (default spmm-population-held-out; SOURCES, when set, names the sweep's
# sources instead, e.g. single entries) with --op spmm at k = 8, 32, 64, 128,
# 256, 512, X row- and column-major, over cuSPARSE at INT32 (torch, CuPy) and our kernels
# (auto; rowgroup and rowwarp, which auto chooses between on row-major X; on column-major X
# auto is spmm-cuda-transposed), in process (one GPU, no Dask), stopped by
# --time-limit LIMIT (default 380 s) and resumed by the next part from the carried store.
# State between parts lives in out/spmm-pop/ (carry=[".device-wheels", "out/spmm-pop"]):
# store.sqlite.gz. Comes back in $OUT: env.txt, summary.txt, summary.json, results.json.gz,
# store.sqlite.gz, bundle.tgz (logs, report), pytest_gpu.log with --gpu-tests.
set -uo pipefail
cd "$(dirname "$0")/.."
SUITE="${1:-spmm-population-held-out}"
LIMIT="${2:-380}"
TESTS="${3:-}"
export OUT="${OUT:-/tmp/ss-spmm}"
STATE=out/spmm-pop
WORK=/tmp/ss-spmm-work
mkdir -p "$OUT" "$STATE" "$WORK"
[ -f "$STATE/store.sqlite.gz" ] && gunzip -f "$STATE/store.sqlite.gz"
export PYTHONPATH=src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -1
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "commit ${SPARSESCOPE_GIT_COMMIT:-unknown} sources ${SOURCES:-suite:$SUITE} limit $LIMIT"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    python3 -c 'import sys, torch, cupy, numpy, scipy; print("python", sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
if [ "$TESTS" = "--gpu-tests" ]; then
    python3 -m pytest -q -m gpu tests/gpu/test_spmm_rowgroup.py tests/gpu/test_gpu_spmm.py \
        -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
    tail -3 "$OUT/pytest_gpu.log"
fi
read -r -a SRC <<< "${SOURCES:-suite:$SUITE}"
KARGS=(); for k in ${KS:-8 32 64 128 256 512}; do KARGS+=(--k "$k"); done
for layout in ${LAYOUTS:-row col}; do KARGS+=(--layout "$layout"); done
BARGS=(); for b in ${BACKENDS:-spmm-torch-i32 spmm-cupy-i32 spmm-cuda-auto spmm-cuda-rowgroup \
                               spmm-cuda-rowwarp}; do BARGS+=(--backend "$b"); done
CMD=(python3 -m sparsescope sweep "${SRC[@]}" --op spmm "${KARGS[@]}" "${BARGS[@]}"
     --warmups 3 --repeats 15 --time-limit "$LIMIT" --store "$STATE/store.sqlite"
     --out "$WORK/sweep" --json)
echo "${CMD[*]}" > "$OUT/command.txt"
"${CMD[@]}" > "$WORK/sweep.json" 2> "$WORK/sweep.log"
echo "sweep exit $?" | tee -a "$OUT/env.txt"
tail -3 "$WORK/sweep.log"
RESULTS=$(ls "$WORK"/sweep/results.json* 2>/dev/null | head -1)
if [ -n "$RESULTS" ]; then
    python3 scripts/spmm_population_summary.py "$RESULTS" --json "$OUT/summary.json" \
        > "$OUT/summary.txt" 2>&1
    cp "$RESULTS" "$OUT/"
    [ "${RESULTS##*.}" = json ] && gzip -f "$OUT/results.json"
fi
gzip -c "$STATE/store.sqlite" > "$OUT/store.sqlite.gz"
tar -czf "$OUT/bundle.tgz" -C "$WORK" sweep.json sweep.log sweep 2>/dev/null
cat "$OUT/summary.txt" 2>/dev/null
