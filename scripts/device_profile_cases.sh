#!/usr/bin/env bash
# Nsight Compute profiles of named cases on the lent GPU, in one call (a miss's reason from the
# profile: issue 17 / 18):
#
#   bash scripts/device_profile_cases.sh SUITE#MATRIX:OP:K:BACKEND [...]
#   e.g. 'population-held-out#rmat-29:spmv:0:cupy-cusparse-i32'
#        'spmm-population-held-out#graph-08:spmm:128:spmm-torch-i32'
#
# Each case: `sparsescope profile run` (metric groups launch, occupancy, stalls, memory; clocks
# left as found; every kernel launch of the case after one warm-up), its --json kept. Lands in
# $OUT (/tmp/ss-profile-cases elsewhere): env.txt, profile.log and profiles.tar.gz (per case
# NAME.json, the CSV exports and the .ncu-rep): three files, whatever the number of cases (the
# device tool returns at most 8). Wheels: carry=[".device-wheels"].
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/ss-profile-cases}"
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
WORK=/tmp/ss-profile-cases-work
rm -rf "$WORK"; mkdir -p "$WORK"
if compgen -G ".device-wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
{
    date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
    echo "git_commit ${SPARSESCOPE_GIT_COMMIT:-unknown}"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
    echo "ncu: $("$NCU" --version | tail -1)"
} > "$OUT/env.txt" 2>&1
for spec in "$@"; do
    IFS=: read -r source op k backend <<< "$spec"
    suite="${source%%#*}"; matrix="${source#*#}"
    name="${matrix}.${op}${k}.${backend}"
    extra=()
    [ "$op" = spmm ] && extra=(--k "$k" --layout row)
    t0=$(date +%s)
    python3 -m sparsescope profile run --suite "$suite" --matrix "$matrix" --op "$op" \
        --backend "$backend" "${extra[@]}" --groups launch,occupancy,stalls,memory \
        --clock-control none --ncu "$NCU" --timeout 240 --out "$WORK/$name" --json \
        > "$WORK/$name.json" 2>> "$OUT/profile.log"
    echo "$name rc=$? $(( $(date +%s) - t0 )) s"
done
tar -czf "$OUT/profiles.tar.gz" -C "$WORK" .
