#!/usr/bin/env bash
# The block tensor-core SpMM kernel (spmm-cuda-blocktc) on the lent GPU, one call:
#
#   bash scripts/device_spmm_blocktc.sh
#   ENTRIES="weights-00 weights-06" KS="32 512" PART=spmm-population-tuning LIMIT=250 \
#       bash scripts/device_spmm_blocktc.sh
#
# 1. registers and local memory (spills) of every instance the host can pick (CuPy's
#    function attributes), into $OUT/regs.txt;
# 2. its GPU tests (tests/gpu/test_spmm_blocktc.py: awkward matrices against float64), into
#    $OUT/pytest_blocktc.log;
# 3. a sweep of the ENTRIES of suite PART (default: the tuning part's pruned weights at 50, 70
#    and 90 % sparsity) at k = KS, row-major X, over cuSPARSE (torch, CuPy at INT32),
#    spmm-cuda-auto and spmm-cuda-blocktc (BACKENDS overrides), and the variants VARIANTS
#    (default: blocktc with its fill limit lifted to 64, to measure past the limit), stopped
#    at LIMIT seconds;
#    results.json.gz, sweep.log and table.md (scripts/spmm_backend_table.py: every backend
#    side by side, the block fill and auto's pick) into $OUT.
# Carry [".device-wheels-min"]; the wheels are copied into .device-wheels/ first.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-blocktc}"
mkdir -p "$OUT" .device-wheels
cp .device-wheels-min/*.whl .device-wheels/ 2>/dev/null
python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -1
export PYTHONPATH=src PYTHONUNBUFFERED=1
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "commit ${SPARSESCOPE_GIT_COMMIT:-unknown}"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    python3 -c 'import sys, torch, cupy, numpy, scipy; print("python", sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
} > "$OUT/env.txt" 2>&1
python3 - <<'PY' > "$OUT/regs.txt" 2>&1
from sparsescope.backends import _gpu
from sparsescope.backends.spmm_blocktc import SOURCE, choose_batch, kernel_name
for passes in (3, 1):
    for groups in (1, 2, 4):
        splits = (2, 4, 8, 16) if groups == 1 else (2, 4)   # SPLIT > 4 only with one group
        for vec4, split in ((True, 1), (False, 1), *((True, s) for s in splits)):
            name = kernel_name(passes, groups, vec4, split, choose_batch(groups))
            f = _gpu.raw_module(SOURCE, (name,)).get_function(name)
            print(f"{name}: {f.num_regs} registers, {f.local_size_bytes} B local")
PY
cat "$OUT/regs.txt"
timeout 240 python3 -m pytest -q -m gpu tests/gpu/test_spmm_blocktc.py -p no:cacheprovider \
    > "$OUT/pytest_blocktc.log" 2>&1
tail -1 "$OUT/pytest_blocktc.log"
SRC=(); for e in ${ENTRIES:-weights-00 weights-01 weights-03 weights-06 weights-07 weights-09 \
                          weights-12 weights-13 weights-15 weights-18 weights-19 weights-21}; do
    SRC+=("suite:${PART:-spmm-population-tuning}#$e"); done
KARGS=(); for k in ${KS:-32 128 512}; do KARGS+=(--k "$k"); done
BARGS=(); for b in ${BACKENDS:-spmm-torch-i32 spmm-cupy-i32 spmm-cuda-auto spmm-cuda-blocktc}; do
    BARGS+=(--backend "$b"); done
for v in ${VARIANTS-spmm-cuda-blocktc[max_fill=64]}; do BARGS+=(--variant "$v"); done
WORK=/tmp/ss-blocktc-work
rm -rf "$WORK"; mkdir -p "$WORK"
CMD=(python3 -m sparsescope sweep "${SRC[@]}" --op spmm "${KARGS[@]}" --layout row "${BARGS[@]}"
     --warmups 3 --repeats 15 --time-limit "${LIMIT:-250}" --store "$WORK/store.sqlite"
     --out "$WORK/sweep" --json)
echo "${CMD[*]}" > "$OUT/command.txt"
"${CMD[@]}" > "$WORK/sweep.json" 2> "$OUT/sweep.log"
echo "sweep exit $?" | tee -a "$OUT/env.txt"
RESULTS=$(ls "$WORK"/sweep/results.json* 2>/dev/null | head -1)
if [ -n "$RESULTS" ]; then
    cp "$RESULTS" "$OUT/"
    [ "${RESULTS##*.}" = json ] && gzip -f "$OUT/results.json"
    python3 scripts/spmm_backend_table.py "$RESULTS" --note fill --note selected \
        > "$OUT/table.md" 2>&1
    cat "$OUT/table.md"
fi
