#!/usr/bin/env bash
# SpMM and CSR row slicing on the lent H200 (issue 6): a tuning sweep of the own SpMM kernel,
# one measured run per op, Nsight Compute profiles of every backend's kernels, the reports and
# READMEs, and the GPU tests -- in one device call.
#
#   bash scripts/device_ops.sh            # all phases, in order (device tool: carry=[".device-wheels"])
#   bash scripts/device_ops.sh PHASE      # one phase: versions | sweep | spmm | slice | profile |
#                                         #            report | pack | tests
#   WORK=results/h200 bash scripts/device_ops.sh report   # here, on the unpacked folders
#
# Phases, in the order `all` runs them (a phase that no longer fits in BUDGET_S is not started;
# the log names it):
#   versions  date, GPU, driver, CUDA, library versions, backend availability -> versions.txt
#   sweep     the own SpMM kernel's launch variants (prefetch depth, warps a block, the
#             row-split floor) on dlmc3 at k = 8 and 64, L2 flushed   -> spmm/tuning.json
#   spmm      sparsescope run --op spmm, dlmc3, k = 1, 8, 64, 256, row- and column-major X
#   slice     sparsescope run --op slice, slice003 (seed 003's workloads), both weight modes
#   profile   one ncu process per op (instruction-roofline, launch, occupancy and stall metrics,
#             --clock-control none): every backend's kernels of the dlmc3 SpMM cases at k = 8
#             and 64, and of three slice workloads -> <op>/profiles/
#   report    report.md/.html with the profiles, and README.md, in each op folder, from its files
#   pack      <op>.tar.gz of each op folder into $OUT
#   tests     pytest of tests/gpu/test_gpu_{spmm,slice}.py            -> $OUT/pytest.log
# Every case passes the float64 correctness gate before it is timed; timing flushes the L2
# before every sample (--flush on). Unpack what comes back with
#   tar -C results/h200 -xzf spmm.tar.gz && tar -C results/h200 -xzf slice.tar.gz
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/sparsescope-ops}"
WORK="${WORK:-/tmp/sparsescope-ops-work}"
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=src PYTHONUNBUFFERED=1 SPARSESCOPE_STORE="$WORK/store.sqlite" WORK
PHASE="${1:-all}"
LOG="$OUT/ops.log"
PY="${PYTHON:-python3}"

if command -v nvidia-smi >/dev/null && compgen -G ".device-wheels/*.whl" >/dev/null; then
    $PY -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
fi

versions() {
    {
        $PY - <<'PY'
import datetime, importlib.util, os, platform, re, subprocess

def out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({exc})"

print("date_utc:", datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
print("git_commit:", os.environ.get("SPARSESCOPE_GIT_COMMIT", "unknown"))
query = out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
name, _, driver = (query.splitlines() or ["unknown"])[0].partition(", ")
print("gpu:", name)
print("driver:", driver)
m = re.search(r"CUDA Version:\s*([\d.]+)", out(["nvidia-smi"]))
print("cuda_driver_api:", m.group(1) if m else "unknown")
m = re.search(r"release ([\d.]+)", out(["nvcc", "--version"]))
print("nvcc:", m.group(1) if m else "unknown")
m = re.search(r"Version ([\d.]+)", out(["ncu", "--version"]))
print("ncu:", m.group(1) if m else "unavailable")
print("python:", platform.python_version())
import numpy, scipy
print("numpy:", numpy.__version__)
print("scipy:", scipy.__version__)
for module in ("torch", "cupy", "jax", "brainevent", "pyGinkgo"):
    if importlib.util.find_spec(module) is None:
        print(f"{module}: not installed")
        continue
    try:
        mod = __import__(module)
        print(f"{module}:", getattr(mod, "__version__", "installed"))
    except Exception as exc:
        print(f"{module}: import failed ({type(exc).__name__}: {exc})")
try:
    import torch
    print("torch_cuda:", torch.version.cuda)
    import cupy
    v = cupy.cuda.runtime.runtimeGetVersion()
    print("cuda_runtime (cupy):", f"{v // 1000}.{v % 1000 // 10}")
except Exception as exc:
    print("cuda_runtime: unavailable", exc)
from sparsescope.backends.registry import default_backends, get_backend
for op in ("spmm", "slice"):
    for name in default_backends("gpu", op):
        ok, why = get_backend(name).availability()
        print(f"backend {name}:", "available" if ok else f"unavailable: {why}")
PY
        echo "--- nvidia-smi ---"
        nvidia-smi
    } > "$WORK/versions.txt" 2>&1
    cp "$WORK/versions.txt" "$OUT/versions.txt"
}

sweep() {  # the own SpMM kernel's launch variants, L2 flushed, each checked first
    mkdir -p "$WORK/spmm"
    $PY - "$WORK/spmm/tuning.json" 2>&1 <<'PY' | tee -a "$LOG"
import sys, time
from sparsescope._atomic import write_json_atomic
from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
from sparsescope.matrices.suite_dlmc import load
from sparsescope.ops.registry import get_op
from sparsescope.timing.cuda import time_cuda
from sparsescope.timing.types import TimingConfig

config = TimingConfig(warmups=5, repeats=50, flush_l2=True)
variants = {  # name -> constructor overrides (none: the registered backend's rules)
    "default": {}, "depth=1": {"depth": 1}, "warps=8": {"warps": 8},
    "depth=1 warps=8": {"depth": 1, "warps": 8}, "min_slice=32": {"min_slice": 32},
    "min_slice=128": {"min_slice": 128}, "min_slice=32 depth=1": {"min_slice": 32, "depth": 1},
}
op, rows, start = get_op("spmm"), [], time.time()
for matrix in load("dlmc3"):
    for k in (8, 64):
        case = op.make_case(matrix.csr, {"k": k, "layout": "row"}, index_bytes=4)
        for name, overrides in variants.items():
            backend = SpmmCudaRowWarp(**overrides)
            p = backend.prepare(case, "float32", 4)
            backend.poison_output(p)
            check = op.check(backend.run(p), case)
            row = {"matrix": matrix.name, "k": k, "variant": name, **overrides,
                   "kernel": p.kernel, "block_threads": p.block, "grid_blocks": p.grid,
                   "slices": p.plan.n_slices, "split_rows": p.plan.split_rows,
                   "rel_err": float(check.rel_err), "passed": bool(check.passed)}
            if check.passed:
                m = time_cuda(lambda: backend._launch(p), config, library="cupy",
                              working_set_bytes=p.working_set_bytes, breakdown=False)
                row.update(time_ms=m.time_ms, min_ms=m.min_ms, cov=m.cov,
                           samples_ms=list(m.samples_ms))
            rows.append(row)
            print(f"sweep {matrix.name:<14} k={k:<3} {name:<22} {p.kernel:<44} "
                  f"{row.get('time_ms', float('nan')) * 1e3:8.2f} us  err {check.rel_err:.1e}",
                  flush=True)
write_json_atomic(sys.argv[1], {"config": {"warmups": config.warmups, "repeats": config.repeats,
                                           "flush_l2": True, "statistic": config.statistic},
                                "variants": variants, "rows": rows})
print(f"sweep took {time.time() - start:.0f} s")
PY
}

measure() {  # $1: op, $2: suite, $3...: the op's flags
    local op="$1" suite="$2" dest="$WORK/$1" start
    shift 2
    mkdir -p "$dest"
    rm -rf "$dest/results.json" "$dest/report.md" "$dest/report.html" "$dest/figures" "$dest/tables"
    start=$(date +%s)
    local cmd=("$PY" -m sparsescope run --op "$op" --suite "$suite" --backend all "$@"
               --flush on --warmups 5 --repeats 50 --no-store --out "$dest")
    { printf 'PYTHONPATH=src '; printf '%q ' "${cmd[@]}" | sed 's/ $//'; echo; } > "$dest/command.txt"
    "${cmd[@]}" 2>&1 | tee "$dest/run.log" >> "$LOG"
    cp "$WORK/versions.txt" "$dest/versions.txt" 2>/dev/null
    echo "$op run took $(( $(date +%s) - start )) s" | tee -a "$LOG"
}

profile() {  # $1: op, $2: ncu timeout in s
    local op="$1"
    mkdir -p "$WORK/$op/profiles"
    $PY - "$op" "$WORK/$op/profiles" "$2" 2>&1 <<'PY' | tee -a "$LOG"
import json, sys
from pathlib import Path

from sparsescope.profile.collect import CollectOptions, run_profile
from sparsescope.profile.errors import ProfileError
from sparsescope.target import target_argv

op, folder, timeout = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
SPECS = {  # op -> the profiled cases (one ncu process runs them all, each marked)
    "spmm": [{"op": "spmm", "suite": "dlmc3", "matrix": m, "backend": b,
              "params": {"k": k, "layout": "row"}}
             for m in ("dlmc-512x1024", "dlmc-256x512", "dlmc-128x256") for k in (8, 64)
             for b in ("spmm-cuda-rowwarp", "spmm-torch-i32", "spmm-torch-i64",
                       "spmm-cupy-i32", "spmm-ginkgo")],
    "slice": [{"op": "slice", "suite": "slice003", "matrix": m, "backend": b,
               "params": {"rows_selected": n, "weights": "per-nnz"}}
              for m, n in (("slice-10000", 5000), ("slice-10000", 256), ("slice-1000", 64))
              for b in ("slice-cuda-scatter", "slice-cuda-gather", "slice-torch",
                        "slice-cupy-i32", "slice-brainevent")],
}
specs = SPECS[op]
cases, record = folder / "cases.json", folder / "ran.json"
cases.write_text(json.dumps(specs, indent=2) + "\n")
options = CollectOptions(groups=("launch", "occupancy", "stalls", "instruction-roofline"),
                         clock_control="none", cache_control="all", import_source=False,
                         extra_args=("--profile-from-start", "off"))
target = target_argv("cases", str(cases), "--record", str(record))
try:
    run = run_profile(target, folder, "ncu", options, timeout_s=timeout)
except ProfileError as exc:
    print(f"profile {op} failed: {exc}", flush=True)
    raise SystemExit(0)
run.report_path.unlink(missing_ok=True)  # the raw and details CSV exports are kept
print(f"profiled {op}: {run.raw_csv}", flush=True)
PY
    [ -f "$WORK/$op/profiles/ncu_details.csv" ] && gzip -9 -f "$WORK/$op/profiles/ncu_details.csv"
}

report() {  # report.md/.html with the profiles and README.md of each op folder in $WORK
    $PY - 2>&1 <<'PY' | tee -a "$LOG"
import json, os, re
from pathlib import Path

from sparsescope import registry
from sparsescope.profile import load
from sparsescope.report.ops_common import md_table, op_views
from sparsescope.report.ops_slice import bound_verdict
from sparsescope.report.write import write_report
from sparsescope.results.io import read_runset
from sparsescope.target import split_marked_profiles

work = Path(os.environ["WORK"])
SWEEP = re.compile(r"^sweep (\S+)\s+k=(\d+)\s+(.+?)\s+(spmm_rowwarp<[^>]*>)\s+([\d.]+) us"
                   r"\s+err (\S+)$")


def sweep_rows(dest: Path) -> tuple[list, str]:
    """The launch sweep: tuning.json, else the lines the sweep printed into ops.log."""
    if (dest / "tuning.json").is_file():
        rows = json.loads((dest / "tuning.json").read_text())["rows"]
        return [[r["matrix"], r["k"], r["variant"], r["kernel"],
                 r["time_ms"] * 1e3 if "time_ms" in r else "failed", r["rel_err"]]
                for r in rows], "tuning.json"
    log = dest / "ops.log"
    if not log.is_file():
        return [], ""
    rows = [[m[1], int(m[2]), m[3], m[4], float(m[5]), float(m[6])]
            for m in map(SWEEP.match, log.read_text().splitlines()) if m]
    return rows, "ops.log"


def versions_of(folder: Path) -> dict:
    found = {}
    for line in (folder / "versions.txt").read_text().splitlines():
        if line.startswith("---"):
            break
        key, sep, value = line.partition(": ")
        if sep:
            found[key.strip()] = value.strip()
    return found


def readme(dest: Path, op: str, runset, profiles, labels) -> str:
    """README.md from the folder's files alone (no number typed by hand)."""
    v = versions_of(dest)
    cases = runset.cases
    counts = {o: sum(c.outcome == o for c in cases) for o in ("ok", "skipped", "failed")}
    command = (dest / "command.txt").read_text().strip()
    t = runset.timing
    lines = [
        f"# {registry.op_entry(op).title} on an H200 (issue 6)", "",
        "## How it was made", "",
        "On the lent H200 (device tool, kind `nvidia-h200`, `carry=[\".device-wheels\"]`), from "
        "the repository root at commit "
        f"`{v.get('git_commit', runset.provenance.git_commit or 'unknown')}`: "
        "`bash scripts/device_ops.sh`, whose measurement step ran", "",
        "```", command, "```", "",
        "then, here, on the returned folder: `WORK=results/h200 bash scripts/device_ops.sh "
        "report` (report with the ncu profiles, this README).", "",
        "## Run", "",
        f"- **Date (UTC):** {runset.provenance.created_utc}",
        f"- **GPU:** {v.get('gpu', runset.provenance.device)}; driver {v.get('driver', '?')}; "
        f"CUDA driver API {v.get('cuda_driver_api', '?')}; CUDA runtime (CuPy) "
        f"{v.get('cuda_runtime (cupy)', '?')}; nvcc {v.get('nvcc', '?')}; Nsight Compute "
        f"{v.get('ncu', '?')}",
        f"- **Libraries:** torch {v.get('torch', '?')} (CUDA {v.get('torch_cuda', '?')}), "
        f"CuPy {v.get('cupy', '?')}, JAX {v.get('jax', '?')}, NumPy {v.get('numpy', '?')}, "
        f"SciPy {v.get('scipy', '?')}, Python {v.get('python', '?')}; brainevent "
        f"{v.get('brainevent', '?')}; pyGinkgo {v.get('pyGinkgo', '?')}",
        f"- **Run:** `{runset.run_id}`, suite `{runset.suite}`, {len(runset.matrices)} "
        f"matrices, {len(cases)} cases: {counts['ok']} ok, {counts['skipped']} skipped, "
        f"{counts['failed']} failed",
        f"- **Timing:** {t.warmups} warm-ups, {t.repeats} repeats, {t.statistic}, "
        f"{t.clock}, L2 flushed before every sample: {'yes' if t.flush_l2 else 'no'}; "
        "every case checked against float64 before it was timed",
        f"- **Profiles:** {len(profiles)} kernels under ncu (`profiles/`), instruction-"
        "roofline, launch, occupancy and stall metrics, `--clock-control none`, caches "
        "flushed before each kernel",
    ]
    tests = dest / "pytest.log"
    if tests.is_file():
        summary = [ln.strip("= ") for ln in tests.read_text().splitlines()
                   if re.search(r"\d+ passed", ln)]
        lines.append("- **GPU tests in the same call** (`tests/gpu/test_gpu_spmm.py`, "
                     f"`tests/gpu/test_gpu_slice.py`): {summary[-1] if summary else 'no summary'}"
                     " (`pytest.log`)")
    lines.append("")
    peers = dest / "tables" / f"ops_{op}_peers.json"
    if peers.is_file() and json.loads(peers.read_text())["rows"]:
        rows = json.loads(peers.read_text())["rows"]
        groups = {}
        for r in rows:
            key = r["case"].split(" ")[1] if op == "spmm" else r["case"].split(" ")[2]
            groups.setdefault(key, []).append(r["speedup_x"])
        lines += ["## Summary (from `tables/" + peers.name + "`)", "",
                  "Best own kernel against the best peer, speedup = peer time / own time "
                  "(above 1: ours faster):", ""]
        lines += [f"- {'k' if op == 'spmm' else 'weights'} {key.removeprefix('k=')}: "
                  f"{min(v):.2f}x to {max(v):.2f}x over {len(v)} cases"
                  + ("" if min(v) >= 1 else f" (slower on {sum(x < 1 for x in v)})")
                  for key, v in groups.items()]
        lines.append("")
    if peers.is_file() and json.loads(peers.read_text())["rows"]:
        rows = json.loads(peers.read_text())["rows"]
        lines += ["## Ours against the best peer (from `tables/" + peers.name + "`)", "",
                  md_table(["case", "own", "own ms", "best peer", "peer ms", "speedup x"],
                           [[r["case"], r["own_backend"], r["own_ms"], r["best_peer"],
                             r["peer_ms"], r["speedup_x"]] for r in rows]), ""]
    if op == "slice":
        lines += ["## Which bound the measurements support (report section, generated)", "",
                  bound_verdict(runset, op_views(runset, "slice"), profiles, labels), ""]
    sweep, source = sweep_rows(dest) if op == "spmm" else ([], "")
    if sweep:
        best = {}
        for row in sweep:
            if isinstance(row[4], float):
                key = (row[0], row[1])
                if key not in best or row[4] < best[key][4]:
                    best[key] = row
        default = {(r[0], r[1]): r[4] for r in sweep if r[2] == "default"}
        lines += [f"## Launch sweep of the own kernel (from `{source}`)", "",
                  "Variants of `spmm-cuda-rowwarp` (constructor overrides; `default` is the "
                  "registered backend, which the measurement above ran), each checked against "
                  "float64, then timed with the L2 flushed (5 warm-ups, 50 repeats, median; "
                  "`ops.log` holds the medians as printed, in µs).", "",
                  md_table(["matrix", "k", "default µs", "fastest variant", "µs",
                            "faster than default %"],
                           [[m, k, default.get((m, k)), r[2], r[4],
                             100 * (default[(m, k)] / r[4] - 1) if (m, k) in default else None]
                            for (m, k), r in best.items()]), "",
                  md_table(["matrix", "k", "variant", "kernel", "µs", "rel err"], sweep), ""]
    reasons = sorted({f"`{c.backend}`: {c.reason}" for c in cases if c.outcome != "ok"})
    if reasons:
        lines += ["## Cases not timed, and why", ""] + [f"- {r}" for r in reasons] + [""]
    lines += ["## Files", "",
              "`results.json` (every case, raw samples, kernel breakdowns), `report.md` / "
              "`report.html` (device, protocol and matrices, then this op's sections), `figures/`, "
              "`tables/`, "
              "`profiles/` (`cases.json` asked, `ran.json` ran, `ncu_raw.csv` export, "
              "`ncu_details.csv.gz` (rule messages, compressed), `ncu.ncu.log`), `command.txt`, `run.log`, `versions.txt`"
              + (", `ops.log` (the whole device call's log, the sweep included), "
                 "`pytest.log`") + ".", ""]
    return "\n".join(lines)


for op in ("spmm", "slice"):
    dest = work / op
    if not (dest / "results.json").is_file():
        continue
    runset = read_runset(dest / "results.json")
    profiles, labels = [], []
    raw, ran = dest / "profiles" / "ncu_raw.csv", dest / "profiles" / "ran.json"
    if raw.is_file() and ran.is_file():
        profiles, labels = split_marked_profiles(load(raw), json.loads(ran.read_text()))
    write_report(runset, dest, profiles=profiles, labels=labels, progress=False)
    (dest / "README.md").write_text(readme(dest, op, runset, profiles, labels))
    print(f"report {op}: {len(runset.cases)} cases, {len(profiles)} profiled kernels", flush=True)
PY
}

pack() {
    for op in spmm slice; do
        [ -d "$WORK/$op" ] && tar -C "$WORK" -czf "$OUT/$op.tar.gz" "$op" && \
            echo "packed $op: $(du -h "$OUT/$op.tar.gz" | cut -f1)" | tee -a "$LOG"
    done
}

tests() {
    timeout "${1:-240}" $PY -m pytest tests/gpu/test_gpu_spmm.py tests/gpu/test_gpu_slice.py \
        -q -p no:cacheprovider -ra 2>&1 | tee "$OUT/pytest.log" | tail -n 5
}

START=$(date +%s)
BUDGET_S="${BUDGET_S:-400}"  # the device tool stops a command at its timeout_s
fits() {  # $1: phase, $2: seconds it may need; false (and a note) when the budget is short
    local left=$(( BUDGET_S - ($(date +%s) - START) ))
    if [ "$left" -lt "$2" ]; then
        echo "not started: phase $1 (needs ~$2 s, $left s left)" | tee -a "$LOG"
        return 1
    fi
}
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }

SPMM_FLAGS=(--k 1 --k 8 --k 64 --k 256 --layout row --layout col)
SLICE_FLAGS=(--weights scalar --weights per-nnz)
case "$PHASE" in
    all)  # data first: the reports are rendered here again from what comes back
        versions
        fits sweep 330 && sweep
        fits spmm 280 && measure spmm dlmc3 "${SPMM_FLAGS[@]}"
        fits slice 200 && measure slice slice003 "${SLICE_FLAGS[@]}"
        pack
        fits profile 100 && profile spmm $(( $(left) / 2 > 120 ? 120 : $(left) / 2 ))
        fits profile 60 && profile slice $(( $(left) - 30 ))
        pack
        fits tests 60 && tests $(( $(left) - 5 ))
        ;;
    versions) versions ;;
    sweep) sweep ;;
    spmm) measure spmm dlmc3 "${SPMM_FLAGS[@]}" ;;
    slice) measure slice slice003 "${SLICE_FLAGS[@]}" ;;
    profile) profile spmm 200; profile slice 200 ;;
    report) report ;;
    pack) pack ;;
    tests) tests ;;
    *) echo "unknown phase $PHASE (all | versions | sweep | spmm | slice | profile | report | pack | tests)"
       exit 2 ;;
esac
grep -E "^(date_utc|gpu|backend )" "$WORK/versions.txt" 2>/dev/null
ls -la "$OUT"
