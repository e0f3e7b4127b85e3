#!/usr/bin/env bash
# GPU checks of sparsescope on a machine with an NVIDIA GPU (the lent device machine).
#
#   bash scripts/device_gpu_tests.sh            # install carried wheels, env, pytest
#   bash scripts/device_gpu_tests.sh --seed6    # ... then `run --suite seed6 --backend all`
#   bash scripts/device_gpu_tests.sh --seed6 --sweep   # ... and every backend plus every
#        vector width on the seed6 analogs, flush off (as the H200 anchor ran) and auto
#
# Wheels the image lacks (fast_matrix_market, platformdirs) travel in .device-wheels/
# (run with carry=[".device-wheels"]). Logs go to $OUT (the device tool's folder that comes
# back; /tmp/sparsescope-device elsewhere). Exit status: pytest's.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/sparsescope-device}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1

if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
        --format=csv
    python3 - <<'PY'
import platform, numpy, scipy
print("python", platform.python_version(), "numpy", numpy.__version__, "scipy", scipy.__version__)
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
except Exception as exc:
    print("torch unavailable:", exc)
try:
    import cupy
    print("cupy", cupy.__version__, "runtime", cupy.cuda.runtime.runtimeGetVersion())
except Exception as exc:
    print("cupy unavailable:", exc)
PY
} 2>&1 | tee "$OUT/env.txt"

# Every GPU-marked test of the project, plus the CPU tests of the GPU-facing stages.
python3 -m pytest tests -m "gpu" -q -p no:cacheprovider --timeout 300 -rs 2>&1 \
    | tee "$OUT/pytest_gpu.log"
python3 -m pytest tests/backends tests/timing -q -p no:cacheprovider --timeout 300 2>&1 \
    | tee "$OUT/pytest.log"
rc=$(( ${PIPESTATUS[0]} ))
grep -qE "^FAILED|[0-9]+ failed" "$OUT/pytest_gpu.log" && rc=1

# Ceilings through the CLI module (in-process: works before the lead lists the module).
python3 -m sparsescope ceilings --json --no-store > "$OUT/ceilings.json" 2>&1 || echo "ceilings failed: see ceilings.json"

if [ "${1:-}" = "--seed6" ]; then
    start=$(date +%s)
    python3 -m sparsescope run --suite seed6 --backend all --out /tmp/seed6 --no-store \
        > "$OUT/seed6.log" 2>&1 || echo "seed6 run failed: see seed6.log"
    echo "seed6 run took $(( $(date +%s) - start )) s" | tee -a "$OUT/seed6.log"
    cp /tmp/seed6/results.json "$OUT/seed6_results.json" 2>/dev/null
    python3 -m sparsescope results show /tmp/seed6/results.json 2>&1 | tee "$OUT/seed6_show.txt"
fi
if [ "${2:-}" = "--sweep" ]; then
    python3 - <<'PY' 2>&1 | tee "$OUT/sweep.txt"
import json, os, time
from sparsescope.backends import get_backend
from sparsescope.backends.cuda_kernels import CudaCsrVector
from sparsescope.matrices import load_suite
from sparsescope.ops.spmv import check_output, make_x, reference_spmv
from sparsescope.timing import TimingConfig

configs = {"off": TimingConfig(warmups=5, repeats=20, flush_l2=False),
           "auto": TimingConfig(warmups=5, repeats=20)}
names = ["torch-cusparse-i64", "torch-cusparse-i32", "cupy-cusparse-i32", "cuda-csr-scalar"]
rows = []
for matrix in load_suite("seed6"):
    x = make_x(matrix.cols)
    ref = reference_spmv(matrix.csr, x)
    variants = [(n, get_backend(n)) for n in names]
    for tpr in (2, 4, 8, 16, 32):
        class Fixed(CudaCsrVector):
            def _threads_per_row(self, csr, tpr=tpr):
                return tpr, {"threads_per_row": str(tpr)}
        variants.append((f"vector-tpr{tpr}", Fixed()))
    row = {"matrix": matrix.name, "nnz": matrix.nnz,
           "mean_nnz_per_row": matrix.nnz / matrix.rows}
    for name, backend in variants:
        prepared = backend.prepare(matrix.csr, "float32", backend.capability.index_bytes[0])
        err = check_output(backend.run(prepared, x), ref, 1e-5).rel_err
        row[name] = {"rel_err": err}
        for flush, config in configs.items():
            m = backend.time(prepared, x, config)
            row[name][flush] = {"median_ms": m.median_ms, "cv": m.cov, "flushed": m.flushed}
        del prepared
    rows.append(row)
    for flush in configs:
        print(matrix.name, flush, " ".join(f"{k}={v[flush]['median_ms']:.4f}"
                                           for k, v in row.items() if isinstance(v, dict)),
              flush=True)
json.dump(rows, open(os.environ["OUT"] + "/sweep.json", "w"), indent=1)
PY
fi
tail -n 3 "$OUT/pytest_gpu.log" "$OUT/pytest.log"
exit "$rc"
