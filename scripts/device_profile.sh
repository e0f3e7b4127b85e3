#!/usr/bin/env bash
# Issue 4, live: Nsight Compute profiles of the seed6 kernels on the lent H200, in one call.
#
#   bash scripts/device_profile.sh [--budget-s 200] [--matrices cant,cage15] [--backends a,b]
#
# 1. `sparsescope profile run` (all metric groups, source counters and rule sections) of each
#    backend below on each matrix, clocks left as found (--clock-control none);
# 2. after the first matrix, the targeted profile the issue times: groups stalls and
#    instruction-roofline, one csrmv_v3_kernel launch of torch-cusparse-i64 on cant, its wall
#    time measured around the whole `sparsescope profile run` command;
# 3. the outputs tarred into $OUT (the device tool's folder that comes back; /tmp/ss-profile
#    elsewhere): env.txt, timings.tsv, profile.log, profiles_csv.tar.gz (CSV exports, ncu logs,
#    the --json output of each run), profiles_rep.tar.gz (the .ncu-rep reports).
#
# Cases that would start after the budget are skipped and listed as such in timings.tsv.
# Wheels the image lacks travel in .device-wheels/ (run with carry=[".device-wheels"]).
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-profile}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
START=$(date +%s.%N)
BUDGET=200
MATRICES="cant,cage15"
while [ $# -gt 0 ]; do
    case "$1" in
        --budget-s) BUDGET="$2"; shift ;;
        --matrices) MATRICES="$2"; shift ;;
        --backends) IFS=, read -r -a BACKENDS_GIVEN <<< "$2"; shift ;;
        *) echo "unknown option $1"; exit 2 ;;
    esac
    shift
done
BACKENDS=(torch-cusparse-i64 torch-cusparse-i32 cupy-cusparse-i32 cuda-spmv-auto)
if [ -n "${BACKENDS_GIVEN+x}" ]; then BACKENDS=("${BACKENDS_GIVEN[@]}"); fi
# cuSPARSE's csrmv_v3_kernel and csr_partition_kernel; our spmv_tile / spmv_sell / spmv_fixup.
FILTER='regex:^(csrmv|csr_partition|spmv_)'
WORK=/tmp/ss-prof-work
rm -rf "$WORK"; mkdir -p "$WORK"
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$START" "$(date +%s.%N)"; }

if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "git_commit ${SPARSESCOPE_GIT_COMMIT:-unknown}"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
        --format=csv
    echo "ncu $NCU: $("$NCU" --version | tail -1)"
    python3 -c 'import sys, torch, cupy, numpy, scipy; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cupy", cupy.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
    uname -r
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
printf 'step\tmatrix\tbackend\trc\twall_s\n' > "$OUT/timings.tsv"

profile() {  # step matrix backend out-subdir kernel-filter [extra options...]
    local step="$1" matrix="$2" backend="$3" sub="$4" filter="$5"; shift 5
    local t0 t1 rc
    t0=$(date +%s.%N)
    python3 -m sparsescope profile run --suite seed6 --matrix "$matrix" --backend "$backend" \
        --kernel "$filter" --clock-control none --ncu "$NCU" --timeout 150 \
        --out "$WORK/$sub" --json "$@" > "$WORK/$sub.$matrix.$backend.json" 2>> "$OUT/profile.log"
    rc=$?
    t1=$(date +%s.%N)
    local wall
    wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" "$t1")
    printf '%s\t%s\t%s\t%s\t%s\n' "$step" "$matrix" "$backend" "$rc" "$wall" >> "$OUT/timings.tsv"
    echo "$step $matrix $backend rc=$rc wall=${wall}s (at $(elapsed) s)"
}

first=1
for matrix in ${MATRICES//,/ }; do
    for backend in "${BACKENDS[@]}"; do
        if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) - 40 else 1)" "$(elapsed)" "$BUDGET"; then
            profile groups "$matrix" "$backend" "$matrix" "$FILTER" --launch-count 6 \
                --warmups 1 --repeats 2
        else
            printf 'groups\t%s\t%s\tskipped\t\n' "$matrix" "$backend" >> "$OUT/timings.tsv"
        fi
    done
    if [ "$first" = 1 ]; then
        first=0
        # the targeted profile of one kernel; files and caches warm from the runs above. (The
        # 2026-11-21 run passed $FILTER here, which matched csr_partition_kernel first.)
        profile targeted cant torch-cusparse-i64 targeted 'regex:^csrmv_v3' \
            --groups stalls,instruction-roofline --launch-count 1 --warmups 0 --repeats 1
    fi
done

tar -czf "$OUT/profiles_csv.tar.gz" -C "$WORK" --exclude='*.ncu-rep' .
tar -czf "$OUT/profiles_rep.tar.gz" -C "$WORK" $(cd "$WORK" && find . -name '*.ncu-rep')
ls -la "$OUT"
echo "total $(elapsed) s"
# the summary last: per case rc and wall time, then each run's passes
cat "$OUT/timings.tsv"
python3 - "$WORK" <<'EOF'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    try:
        d = json.loads(f.read_text())
    except ValueError:
        print(f.name, "no JSON (see profile.log)")
        continue
    passes = ",".join(str(p["passes"]) for p in d.get("passes", []))
    ks = "; ".join(f"{k['name']} cpi={k['cpi']} occ={k['achieved_occupancy_pct']}" for k in d["kernels"][:2])
    print(f.name, f"prof={d.get('profile_wall_s', 0):.1f}s exp={d.get('export_wall_s', 0):.1f}s passes={passes} | {ks}")
EOF
