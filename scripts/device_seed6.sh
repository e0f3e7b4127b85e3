#!/usr/bin/env bash
# The committed seed6 run (results/h200/seed6/): the whole suite, every GPU backend, twice back
# to back, on the lent device machine.
#
#   bash scripts/device_seed6.sh          # run with carry=[".device-wheels"]
#
# Writes into $OUT (the device tool's folder that comes back: at most 8 files, 2 folders deep):
#   versions.txt   key: value lines (date, GPU, driver, CUDA, PyTorch, CuPy, ...), then nvidia-smi
#   timings.txt    wall time of each whole-suite run (generation, all backends, report) and its rc
#   run_a.log, run_b.log   output of the two runs
#   compare.json   `sparsescope results compare A B --json` (back-to-back spread per row)
#   show.json      `sparsescope results show A --json`
#   seed6.tar.gz   seed6/ (results.json, report.md, report.html, figures/, tables/) and
#                  seed6_b/results.json
#   store.sqlite   the results store both runs appended to
# The runs write under $WORK (not $OUT): a report folder holds more files than come back.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/sparsescope-seed6}"
WORK="${WORK:-/tmp/sparsescope-seed6-work}"
rm -rf "$WORK"
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=src PYTHONUNBUFFERED=1 SPARSESCOPE_STORE="$OUT/store.sqlite"

if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi

{
    python3 - <<'PY'
import datetime, platform, re, subprocess

def out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({exc})"

print("date_utc:", datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
query = out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
name, _, driver = (query.splitlines() or ["unknown"])[0].partition(", ")
print("gpu:", name)
print("driver:", driver)
m = re.search(r"CUDA Version:\s*([\d.]+)", out(["nvidia-smi"]))
print("cuda_driver_api:", m.group(1) if m else "unknown")
m = re.search(r"release ([\d.]+)", out(["nvcc", "--version"]))
print("nvcc:", m.group(1) if m else "unknown")
print("python:", platform.python_version())
import numpy, scipy
print("numpy:", numpy.__version__)
print("scipy:", scipy.__version__)
try:
    import torch
    print("torch:", torch.__version__)
    print("torch_cuda:", torch.version.cuda)
except Exception as exc:
    print("torch: unavailable", exc)
try:
    import cupy
    rt = cupy.cuda.runtime.runtimeGetVersion()
    print("cupy:", cupy.__version__)
    print("cupy_cuda_runtime:", f"{rt // 1000}.{rt % 1000 // 10}")
except Exception as exc:
    print("cupy: unavailable", exc)
PY
    echo "--- nvidia-smi ---"
    nvidia-smi
} > "$OUT/versions.txt" 2>&1

run_suite() {  # $1: tag (a / b), $2: output folder
    local start end rc
    start=$(date +%s.%N)
    python3 -m sparsescope run --suite seed6 --backend all --out "$2" > "$OUT/run_$1.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "run_$1_wall_s: $(python3 -c "print(f'{$end - $start:.1f}')")" >> "$OUT/timings.txt"
    echo "run_$1_rc: $rc" >> "$OUT/timings.txt"
    echo "run_$1_out: $2" >> "$OUT/timings.txt"
}

: > "$OUT/timings.txt"
run_suite a "$WORK/seed6"
run_suite b "$WORK/seed6_b"

python3 -m sparsescope results compare "$WORK/seed6/results.json" "$WORK/seed6_b/results.json" \
    --json > "$OUT/compare.json" 2>> "$OUT/run_b.log"
python3 -m sparsescope results show "$WORK/seed6/results.json" --json > "$OUT/show.json" \
    2>> "$OUT/run_a.log"
tar -C "$WORK" -czf "$OUT/seed6.tar.gz" seed6 seed6_b/results.json

grep -E "^(date_utc|gpu|driver|cuda_driver_api|torch|torch_cuda|cupy):" "$OUT/versions.txt"
cat "$OUT/timings.txt"
tail -n 3 "$OUT/run_a.log"
python3 -m sparsescope results compare "$WORK/seed6/results.json" "$WORK/seed6_b/results.json"
