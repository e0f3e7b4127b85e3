#!/usr/bin/env bash
# Targets follow-up of the own SpMV kernels (pwtk and circuit5M analogs), in one device call:
# correctness of the new variants first (GPU tests), then one sweep of the two matrices with the
# new variants beside the existing best kernels and the three cuSPARSE configurations (one
# process, L2 flushed, medians of 30).
#
#   bash scripts/device_kernels_targets.sh [--reorder | --blocked]   # carry=[".device-wheels"]
#
# --reorder: only the circuit5M reordering probe (benchmarks/spmv_reorder_probe.py, reorder.json).
# --blocked: the 1 x 3 blocked kernels (cuda-spmv-blocked16): their GPU tests, their registers
#            and spills, a sweep of pwtk, ldoor and cant beside the best delta16 variants
#            (blocked.json), register-pipelined and shared-memory-staged (cp.async) kernels.
#
# Everything lands in $OUT (/tmp/ss-targets elsewhere): env.txt, pytest.log, sweep.log,
# targets.json. Exit status: the sweep's.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-targets}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
        --format=csv
    nvcc --version | tail -2
    python3 -c 'import sys, torch, cupy, numpy, scipy; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cupy", cupy.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
reorder_probe() {
    timeout 150 python3 benchmarks/spmv_reorder_probe.py --out "$OUT/reorder.json" 2>&1 \
        | tee "$OUT/reorder.log" | tail -n 20
    echo "reorder probe done at $(elapsed) s"
}
if [ "${1:-}" = "--blocked" ]; then
    python3 -m pytest tests/gpu/test_spmv_own_kernels.py -q -p no:cacheprovider --timeout 120 \
        -k "blocked or dae" 2>&1 | tee "$OUT/pytest.log" | tail -n 6
    echo "tests done at $(elapsed) s"
    python3 - <<'PY' 2>&1 | tee "$OUT/registers.log"
from sparsescope.backends.spmv_device import kernel_function, sell_kernel
for tpr, unroll, minb, stage in ((1, 2, 8, 0), (1, 3, 6, 0), (2, 2, 8, 0), (1, 0, 6, 4),
                                 (2, 0, 6, 2)):
    for width in (1, 3):
        name = sell_kernel("float32", 1, 1, unroll, minb, tpr, width, stage)
        a = kernel_function(name).attributes
        print(f"{name}: {a['num_regs']} registers, {a['local_size_bytes']} B local (spills)")
PY
    python3 benchmarks/spmv_kernels.py sweep --out "$OUT/blocked.json" --matrices pwtk,ldoor,cant \
        --no-l2-window --variants blocked3-u2-m8-h1 blocked3-u3-m6-h1 blocked3-t2-u2-m8-h1 \
        blocked3-t4-u2-m8-h1 blocked3-dae4-m6-h1 blocked3-t2-dae4-m6-h1 blocked3-t2-dae2-m6-h1 \
        blocked3-t4-dae4-m6-h1 delta16-t2-dae4-m6-h1 delta16-t2-u2-m8-h1 delta16-u4-m6-h1 \
        delta16-t2-u4-m6-h1 > "$OUT/sweep.log" 2>&1
    rc=$?
    echo "sweep rc=$rc at $(elapsed) s"
    grep -E "FAILED|Error|error" "$OUT/sweep.log" | head -n 20
    grep -E "^[a-zA-Z0-9-]+:|^  [a-z0-9+-]+ " "$OUT/sweep.log" | head -n 60
    exit "$rc"
fi
if [ "${1:-}" = "--reorder" ]; then
    reorder_probe
    exit 0
fi
python3 -m pytest tests/gpu/test_spmv_own_kernels.py -q -p no:cacheprovider --timeout 120 \
    -k "t4 or t8 or l1h or 2_pow_24" 2>&1 | tee "$OUT/pytest.log" | tail -n 6
echo "tests done at $(elapsed) s"
python3 benchmarks/spmv_kernels.py sweep --out "$OUT/targets.json" --matrices pwtk,circuit5M \
    --no-l2-window --variants delta16-t2-u2-m8-h1 delta16-t4-u2-m8-h1 delta16-t4-u4-m6-h1 \
    delta16-t8-u2-m8-h1 sell-t4-u2-m8-h1 adaptive-i1-h1 adaptive-i1-l1h16k adaptive-i1-l1h32k \
    adaptive-i2-l1h32k > "$OUT/sweep.log" 2>&1
rc=$?
echo "sweep rc=$rc at $(elapsed) s"
grep -E "FAILED|Error|error" "$OUT/sweep.log" | head -n 20
sed -n '/^matrix /,$p' "$OUT/sweep.log"
grep -E "^  [a-z0-9+-]+ " "$OUT/sweep.log" | head -n 40
exit "$rc"
