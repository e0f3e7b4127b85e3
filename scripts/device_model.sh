#!/usr/bin/env bash
# The time model scored on the lent GPU, in one call: `sparsescope ceilings` (the rates the
# model reads), then `sparsescope run --suite seed6 --backend all` (every case predicted before
# it is timed, scored after), then `sparsescope results show --json`:
#
#   bash scripts/device_model.sh [--repeats 30] [--scale 1] [--gpu-tests]
#
# Wheels the image lacks travel in .device-wheels/ (run with carry=[".device-wheels"]).
# Everything lands in $OUT (/tmp/ss-model elsewhere), eight files at most (the device tool's
# limit): env.txt, run.log, results.json, report.md, show.json, show.txt, report_bundle.tar.gz
# (report.html, figures/, tables/, ceilings.json) and, with --gpu-tests, pytest_gpu.log. The
# last lines printed are the prediction summary. Exit status: the run's.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-model}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
REPEATS=30; SCALE=1; TESTS=0
while [ $# -gt 0 ]; do
    case "$1" in
        --repeats) REPEATS="$2"; shift ;;
        --scale) SCALE="$2"; shift ;;
        --gpu-tests) TESTS=1 ;;
        *) echo "unknown option $1"; exit 2 ;;
    esac
    shift
done
if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "commit ${SPARSESCOPE_GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    python3 -c 'import sys, torch, cupy, numpy, scipy; print("python", sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
    command -v nvdisasm cuobjdump nvcc
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
if [ "$TESTS" = 1 ]; then
    python3 -m pytest -q -m gpu tests -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
    tail -3 "$OUT/pytest_gpu.log"
fi
python3 -m sparsescope ceilings --json --no-store > "$OUT/ceilings.json" 2>&1
python3 -m sparsescope run --suite seed6 --scale "$SCALE" --backend all --repeats "$REPEATS" \
    --out "$OUT/run" --no-store > "$OUT/run.log" 2>&1
status=$?
tail -5 "$OUT/run.log"
for f in results.json report.md; do cp "$OUT/run/$f" "$OUT/" 2>/dev/null; done
mv "$OUT/ceilings.json" "$OUT/run/"
tar -czf "$OUT/report_bundle.tar.gz" -C "$OUT/run" report.html figures tables ceilings.json
rm -rf "$OUT/run"
python3 -m sparsescope results show "$OUT/results.json" > "$OUT/show.txt"
python3 -m sparsescope results show "$OUT/results.json" --json > "$OUT/show.json"
python3 - "$OUT/show.json" <<'PY'
import json, statistics, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in rows:
    e = r["prediction_error_pct"]
    print(f"{r['matrix']:11s} {r['backend']:24s} meas {r['median_ms'] or 0:9.4f} pred "
          f"{r['predicted_ms'] or 0:9.4f} err {e if e is not None else float('nan'):+7.1f}% "
          f"{r['limiter'] or r['not_modelled']}")
errs = [abs(r["prediction_error_pct"]) for r in rows if r["prediction_error_pct"] is not None]
if errs:
    errs.sort()
    print(f"modelled {len(errs)} of {len(rows)}: median |err| {statistics.median(errs):.1f} %, "
          f"p90 {errs[int(0.9 * (len(errs) - 1))]:.1f} %")
PY
exit $status
