"""Write results/h200/kernels/ from a device run of ``scripts/device_kernels.sh`` (no GPU needed).

    PYTHONPATH=src python3 benchmarks/spmv_kernels_report.py --run /work/.device/N \
        --out results/h200/kernels

Reads ``kernels.json`` (the sweep), ``ncu_raw.csv`` (ncu on each matrix's best own kernel),
``env.txt`` and ``pytest.log``; compiles the winning kernels' source here for sm_90 and reads
their SASS (registers, spills, load widths, load chains). Writes ``report.md`` (tables per
matrix, auto selection, gaps from the profile, targets met or missed), ``README.md`` (command,
date, versions), and copies the raw files. Every number comes from those files.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spmv_kernels as sweep  # noqa: E402

ANCHOR_COPY_GB_S = 4256.826097467673
"""Copy bandwidth of the earlier H200 anchor run (shared/fixtures/h200/anchor_spmv_analogs.json)."""
TARGET_PCT = {"ldoor": 85.0, "pwtk": 85.0, "cage15": 75.0, "circuit5M": 75.0}
TARGET_GEO_CUSPARSE = 1.2
TARGET_GEO_I64 = 1.8
PARAM_NAMES = {
    "spmv_tile": ["ntiles", "tiles", "row_ptr", "cols", "esc", "val", "x", "y", "partials",
                  "ncols"],
    "spmv_sell": ["nslices", "slice_ptr", "cols", "val", "out", "base", "esc_ptr", "esc", "x",
                  "y", "partials"],
}


def gb_s(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def case(entry: dict, label: str) -> dict | None:
    return next((c for c in entry.get("cases", []) if c["label"] == label and c.get("ok")), None)


def best(entry: dict, family: str) -> dict | None:
    return sweep.best_case(entry, family)


# ------------------------------------------------------------------------------- profile

def load_profiles(path: Path) -> list:
    if not path.is_file() or path.stat().st_size == 0:
        return []
    from sparsescope.profile import load

    return load(path)


def profile_rows(profiles: list, result: dict) -> dict[str, list]:
    """Matrix name -> kernel profiles, in the order ncu-target ran them (one matrix after
    another, main kernel then fixup)."""
    out: dict[str, list] = {}
    names = [e["name"] for e in result["matrices"] if best(e, "own")]
    i = 0
    for name in names:
        group = []
        while i < len(profiles):
            p = profiles[i]
            if group and not p.name.startswith("spmv_fixup"):
                break
            group.append(p)
            i += 1
        out[name] = group
    return out


def metric(p, name: str) -> float | None:
    v = p.value(name)
    return None if v is None else float(v)


# ------------------------------------------------------------------------------- SASS

def instantiation(kernel: str) -> str:
    """Explicit instantiation line for a kernel name of the sweep's launches."""
    m = re.match(r"(spmv_\w+)<(.*)>", kernel)
    func, args = m.group(1), [a.strip() for a in m.group(2).split(",")]
    t = args[0]
    if func == "spmv_tile":
        sig = (f"const int, const int4*, const int*, const void*, const int*, const {t}*, "
               f"const {t}*, {t}*, {t}*, const int")
    elif func in ("spmv_sell", "spmv_sell_dae"):
        idx = "int" if args[1] == "0" else "unsigned short"
        sig = (f"const int, const int*, const {idx}*, const {t}*, const int*, const int*, "
               f"const int*, const int*, const {t}*, {t}*, {t}*")
    else:
        sig = f"const int, const int*, const int*, const {t}*, {t}*"
    return f"template __global__ void {kernel}({sig});"


def sass_summaries(kernels: set[str]) -> dict[str, dict]:
    """Per kernel name: registers, spills, shared memory, global-load widths, load chains."""
    from sparsescope.backends import _gpu
    from sparsescope.sass import analyse_source

    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, name in enumerate(sorted(kernels)):
            src = Path(tmp) / f"spmv_own_inst{n}.cu"
            src.write_text(_gpu.kernel_source("spmv_own.cu") + "\n" + instantiation(name) + "\n")
            try:
                analysed = analyse_source(src, arch="sm_90")
            except Exception as exc:  # a kernel of an older source: say so, keep the rest
                out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
                continue
            k = next((k for k in analysed if _same_args(name, k.demangled)), None)
            if k is None:
                continue
            res = k.resources
            widths = Counter()
            for ins in k.instructions:
                if ins.opcode in ("LDG", "LDGSTS"):  # LDGSTS: cp.async, global -> shared
                    w = next((m for m in ins.modifiers if m in ("128", "64", "U16", "U8")), "32")
                    widths[f"{ins.opcode}.{w}"] += 1
            chains = Counter((c.label, c.in_loop) for c in _named_chains(k, name))
            out[name] = {"registers": res.registers if res else None,
                         "spill_bytes": (res.spill_store_bytes or 0) + (res.spill_load_bytes or 0)
                         if res else None,
                         "shared_bytes": res.shared_bytes if res else None,
                         "ldg_widths": dict(widths), "max_chain_depth": k.max_chain_depth,
                         "chains": [{"label": lab, "in_loop": loop, "count": n}
                                    for (lab, loop), n in chains.most_common()]}
    return out


def _same_args(name: str, demangled: str) -> bool:
    want = [a.strip() for a in name.split("<", 1)[1].rstrip(">").split(",")]
    got = demangled.split("<", 1)[1].split(">", 1)[0]
    return [a.strip() for a in got.split(",")] == want


def _named_chains(k, name: str):
    names = PARAM_NAMES.get(name.split("<")[0], [])
    for c in k.load_chains:
        labels = []
        for ref in c.loads:
            idx = ref.param_index
            labels.append(names[idx] if idx is not None and idx < len(names) else ref.label)
        yield type("Chain", (), {"label": " -> ".join(labels), "in_loop": c.in_loop})()


# ------------------------------------------------------------------------------- report

def fmt(v, spec: str = ".1f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


#: Generators whose rows draw their columns independently from one law: for them, and only
#: for them, no SM can do better than keeping the globally most-gathered x entries on chip
#: (banded rows reuse a moving window instead, which each SM caches for itself).
IID_COLUMN_KINDS = ("powerlaw", "uniform")


def gather_bound_line(e: dict, l2_gb_s: float, copy: float) -> tuple[str, float]:
    """The L2-sector lower bound (sparsescope.model.gathers) with the most-gathered x entries
    on chip, in words, and the % of copy BW (INT32 model) it allows at most; "" for matrices
    whose columns are not drawn independently per row (the bound needs that)."""
    from sparsescope.model.gathers import gather_bound, l2_sector_rate

    hot = e.get("hot_share", {})
    if "sm" not in hot or not l2_gb_s or e.get("kind") not in IID_COLUMN_KINDS:
        return "", float("nan")
    sm, cluster = hot["sm"], hot.get("cluster16")
    # streams: the values and y only (index_bytes=0): any index compression at its best
    b = gather_bound(e["rows"], e["nnz"], sm["share"], sm["capacity_entries"],
                     l2_sector_rate(l2_gb_s), index_bytes=0)
    pct = 100 * gb_s(e["bytes_int32"], b.time_floor_us * 1e-3) / copy
    text = (f"**Gather bound**: this analog draws every row's columns independently from one "
            f"popularity law ({e['kind']} generator), so whichever rows an SM works on, the best "
            "x entries to keep on chip are the most-gathered ones overall (the A0 policy, "
            "optimal under independent references): its "
            f"{sm['capacity_entries']:,} most-gathered x entries (256 KB, an SM's whole L1 / "
            f"shared-memory array) serve at most {100 * sm['share']:.1f}% of the gathers; the "
            f"other {b.x_sectors / 1e6:.1f} M, plus "
            f"{b.stream_sectors / 1e6:.1f} M sectors of values and y (indices compressed away "
            f"entirely, the best any format could do), at the measured L2 rate "
            f"({l2_gb_s:.0f} GB/s = {b.sector_rate_per_s / 1e9:.1f} G sectors/s) take at least "
            f"{b.time_floor_us:.1f} us: at most {pct:.1f}% of copy BW (INT32 model) for any "
            "kernel in which a gather served off chip costs its own sector (lanes of a warp "
            "sharing a sector would merge requests; with independently drawn columns they "
            "rarely do)")
    if cluster:
        text += (f"; a 16-SM cluster sharing {16 * 256 // 1024} MB of x would serve "
                 f"{100 * cluster['share']:.1f}%")
    return text + ".", pct


def matrix_section(e: dict, copy: float, prof: list, sass: dict,
                   l2_gb_s: float = 0.0) -> tuple[list[str], dict]:
    lines = [f"### {e['name']}", ""]
    i64 = case(e, "torch-cusparse-i64")
    cus = best(e, "cusparse")
    own = best(e, "own")
    floor_us = e["bytes_int32"] / (copy * 1e9) * 1e6
    lines.append(f"{e['rows']:,} rows, {e['nnz']:,} nonzeros ({e['kind']}); INT32 CSR model "
                 f"{e['bytes_int32'] / 1e6:.1f} MB, floor {floor_us:.1f} us at the measured copy "
                 "bandwidth. Generated in the run: " + f"`{e['source']}`.")
    lines += ["", "| backend | median us | CoV | INT32-model GB/s | % of copy BW | vs torch-i64 "
              "| vs best cuSPARSE | own bytes MB | rel. error |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    rows = sorted((c for c in e["cases"] if c.get("ok")), key=lambda c: c["median_ms"])
    for c in rows:
        bw = gb_s(e["bytes_int32"], c["median_ms"])
        own_bytes = c.get("notes", {}).get("bytes_moved")
        mark = " **best own**" if own and c is own else ""
        lines.append(
            f"| {c['label']}{mark} | {c['median_ms'] * 1e3:.1f} | {c['cov']:.3f} | {bw:.0f} | "
            f"{100 * bw / copy:.1f} | {i64['median_ms'] / c['median_ms']:.2f} | "
            f"{cus['median_ms'] / c['median_ms']:.2f} | "
            f"{int(own_bytes) / 1e6 if own_bytes else e['bytes_int32'] / 1e6:.1f} | "
            f"{c['rel_err']:.1e} |")
    for c in e["cases"]:
        if not c.get("ok"):
            lines.append(f"| {c['label']} | failed | | | | | | | {c.get('error', '')[:80]} |")
    sel = e.get("selection", {})
    auto = case(e, "auto")
    lines += ["", f"**Auto selection**: `{sel.get('backend')}` {sel.get('params') or ''} "
              f"(rule `{sel.get('rule')}`, as sweep variant `{sel.get('label')}`), chosen in "
              f"{e.get('select_s', 0):.2f} s. Reason: {sel.get('reason')}."]
    if auto and own:
        lines.append(f"Timed as `cuda-spmv-auto`: {auto['median_ms'] * 1e3:.1f} us, "
                     f"{own['median_ms'] / auto['median_ms']:.3f} of the best own kernel's "
                     f"speed ({own['label']}).")
    win = next((c for c in e["cases"] if c["family"] == "l2window" and c.get("ok")), None)
    if win and own:
        how = win.get("notes", {}).get("l2_window", "")
        lines.append(f"**L2 access-policy window on x** ({how}"
                     f"): {win['median_ms'] * 1e3:.1f} us against {own['median_ms'] * 1e3:.1f} us "
                     f"without ({100 * (own['median_ms'] / win['median_ms'] - 1):+.1f}% speed).")
    gap = gap_lines(e, own, prof, sass, copy)
    bound, gap["bound_pct"] = gather_bound_line(e, l2_gb_s, copy)
    gap["bound"] = bound
    lines += ["", *gap["lines"], ""] + ([bound, ""] if bound else [])
    return lines, gap


def gap_lines(e: dict, own: dict | None, prof: list, sass: dict, copy: float) -> dict:
    """The best own kernel's remaining gap, from its ncu profile and its SASS."""
    out = {"lines": [], "verdict": ""}
    if own is None:
        out["lines"].append("No own kernel passed; nothing to explain.")
        return out
    own_bytes = int(own.get("notes", {}).get("bytes_moved", e["bytes_int32"]))
    lines = [f"**Gap of {own['label']}** (event-timed {own['median_ms'] * 1e3:.1f} us; its own "
             f"format moves {own_bytes / 1e6:.1f} MB, floor at copy bandwidth "
             f"{own_bytes / (copy * 1e9) * 1e6:.1f} us):", ""]
    if not prof:
        lines.append("- no ncu profile of this kernel in the run.")
        out["lines"] = lines
        return out
    main = prof[0]
    dur_us = sum(metric(p, "gpu__time_duration.sum") or 0 for p in prof) / 1e3
    dram = sum((metric(p, "dram__bytes_read.sum") or 0) + (metric(p, "dram__bytes_write.sum") or 0)
               for p in prof)
    l2_read = metric(main, "lts__t_sectors_op_read.sum") or 0
    dram_pct = metric(main, "dram__throughput.avg.pct_of_peak_sustained_elapsed")
    l2_pct = metric(main, "lts__throughput.avg.pct_of_peak_sustained_elapsed")
    occ = metric(main, "sm__warps_active.avg.pct_of_peak_sustained_active")
    theo = metric(main, "sm__maximum_warps_per_active_cycle_pct")
    l1_hit = metric(main, "l1tex__t_sector_hit_rate.pct")
    cpi = metric(main, "smsp__average_warp_latency_per_inst_issued.ratio")
    eligible = metric(main, "smsp__warps_eligible.avg.per_cycle_active")
    stalls = sorted(((k, v) for k, v in (main.stalls or {}).items() if v), key=lambda kv: -kv[1])
    rest = own["median_ms"] * 1e3 - dur_us
    where = (f"the event median is {rest:.1f} us longer (launch latency, and presumably the "
             "write-back of the dirty lines the protocol's flush leaves in L2, which ncu's own "
             "cache flush does not)" if rest >= 0 else
             f"the ncu durations add up to {-rest:.1f} us more than the event median")
    lines.append(f"- ncu (`--clock-control none`, caches flushed): kernel"
                 f"{'s' if len(prof) > 1 else ''} {dur_us:.1f} us "
                 f"({' + '.join(p.name for p in prof)}); {where}.")
    lines.append(f"- DRAM: {dram / 1e6:.1f} MB moved against {own_bytes / 1e6:.1f} MB in the "
                 f"format's model ({dram / own_bytes:.3f}x); DRAM throughput {fmt(dram_pct)}% of "
                 f"peak, L2 throughput {fmt(l2_pct)}% of peak.")
    lines.append(f"- L2 read sectors: {l2_read / 1e6:.1f} M = {l2_read / e['nnz']:.2f} per "
                 f"nonzero (the streams alone need {own_bytes / 32 / e['nnz']:.2f}); L1 hit rate "
                 f"{fmt(l1_hit)}% (x gathers hitting lines other lanes brought in).")
    lines.append(f"- occupancy: achieved {fmt(occ)}% of the SM's warps (theoretical {fmt(theo)}%)"
                 f", {fmt(metric(main, 'launch__registers_per_thread'), '.0f')} registers; "
                 f"{fmt(eligible, '.2f')} eligible warps per scheduler and cycle; "
                 f"{fmt(cpi)} cycles per issued instruction, of which "
                 + ", ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in stalls[:4]) + ".")
    s = sass.get(main.demangled_name.split("(")[0].replace("void ", "").strip()) if \
        main.demangled_name else None
    if s is None:
        s = next((v for k, v in sass.items() if k.split("<")[0] == main.name), None)
    if s and "error" in s:
        lines.append(f"- SASS: not read ({s['error']}).")
    elif s:
        chains = "; ".join(f"{c['label']} x{c['count']}{' (in loop)' if c['in_loop'] else ''}"
                           for c in s["chains"][:5])
        lines.append(f"- SASS (sm_90, compiled here): {s['registers']} registers, "
                     f"{s['spill_bytes']} spill bytes, {s['shared_bytes']} B shared; global "
                     f"loads {s['ldg_widths']}; longest dependent load chain "
                     f"{s['max_chain_depth']} loads: {chains}.")
    grid = metric(main, "launch__grid_size")
    block = metric(main, "launch__block_size")
    if grid and block and theo:
        slots = 132 * 64 * theo / 100
        warps = grid * block / 32
        lines.append(f"- grid: {grid:.0f} blocks of {block:.0f} threads = {warps:.0f} warps "
                     f"against {slots:.0f} resident warp slots at the theoretical occupancy "
                     f"({warps / slots:.2f} waves).")
    verdict = classify(dram_pct, l2_pct, stalls, e, l2_read, own_bytes, occ, theo)
    lines.append(f"- verdict: {verdict}")
    out.update(lines=lines, verdict=verdict, dram_pct=dram_pct, l2_pct=l2_pct,
               l2_sectors_per_nnz=l2_read / e["nnz"], kernel_us=dur_us)
    return out


def classify(dram_pct, l2_pct, stalls, e, l2_read, own_bytes, occ, theo) -> str:
    """One sentence from the numbers: which unit limits the kernel."""
    top = stalls[0][0].replace("_", " ") if stalls else "n/a"
    per_nnz = l2_read / e["nnz"]
    stream = own_bytes / 32 / e["nnz"]
    if l2_pct is not None and l2_pct >= 80 and per_nnz >= 2 * stream:
        return (f"L2-bound by x gathers: the L2 runs at {l2_pct:.0f}% of its peak while DRAM is "
                f"at {fmt(dram_pct, '.0f')}%; of its {per_nnz:.2f} sector requests per nonzero "
                f"only {stream:.2f} are the format's streams, the rest are gathers of random "
                "columns that miss L1; the random-gather ceiling caps it, fewer bytes would not "
                "help, only fewer gather requests would.")
    if l2_pct is not None and l2_pct >= 80:
        return (f"memory-bound: L2 at {l2_pct:.0f}% and DRAM at {fmt(dram_pct, '.0f')}% of "
                f"peak, {per_nnz:.2f} L2 sectors per nonzero against {stream:.2f} for the "
                "streams (x mostly hits L1); the rest of the gap is the kernel's ramp-up and "
                "tail and the event-timing overhead above.")
    if dram_pct is not None and dram_pct >= 70:
        return (f"bandwidth-bound: DRAM at {dram_pct:.0f}% and L2 at {fmt(l2_pct, '.0f')}% of "
                "peak; what is left is the ramp-up and tail of a short kernel.")
    return (f"latency-bound: DRAM at {fmt(dram_pct, '.0f')}% and L2 at {fmt(l2_pct, '.0f')}% "
            f"of peak, achieved occupancy {fmt(occ, '.0f')}% of {fmt(theo, '.0f')}% "
            f"theoretical, '{top}' the largest stall: too few loads in flight per SM for "
            "this small a problem (see the grid line above).")


def targets(result: dict, copy: float) -> tuple[list[str], dict]:
    lines = ["## Targets", "", "| target | measured | met? |", "| --- | --- | --- |"]
    status = {}
    by_name = {e["name"]: e for e in result["matrices"] if "cases" in e}
    for name, pct in TARGET_PCT.items():
        e = by_name.get(name)
        own = best(e, "own") if e else None
        got = 100 * gb_s(e["bytes_int32"], own["median_ms"]) / copy if own else float("nan")
        ok = got >= pct
        status[name] = ok
        lines.append(f"| {name}: best own kernel >= {pct:.0f}% of copy BW (INT32 model) | "
                     f"{got:.1f}% ({own['label'] if own else 'none'}) | "
                     f"{'met' if ok else 'missed'} |")
    sp_cus, sp_i64, slower = [], [], []
    for e in by_name.values():
        own, cus, i64 = best(e, "own"), best(e, "cusparse"), case(e, "torch-cusparse-i64")
        if own and cus and i64:
            sp_cus.append(cus["median_ms"] / own["median_ms"])
            sp_i64.append(i64["median_ms"] / own["median_ms"])
            if own["median_ms"] > cus["median_ms"]:
                slower.append(e["name"])
    g_cus, g_i64 = geomean(sp_cus), geomean(sp_i64)
    met_cus = "met" if g_cus >= TARGET_GEO_CUSPARSE else "missed"
    lines.append(f"| geometric-mean speedup >= {TARGET_GEO_CUSPARSE}x over the best cuSPARSE "
                 f"configuration | {g_cus:.2f}x | {met_cus} |")
    lines.append(f"| no matrix slower than the best cuSPARSE configuration | "
                 f"{'none slower' if not slower else 'slower: ' + ', '.join(slower)}; lowest "
                 f"speedup {min(sp_cus):.2f}x | {'met' if not slower else 'missed'} |")
    lines.append(f"| geometric-mean speedup >= {TARGET_GEO_I64}x over torch-cusparse-i64 | "
                 f"{g_i64:.2f}x | {'met' if g_i64 >= TARGET_GEO_I64 else 'missed'} |")
    status.update(geo_cusparse=g_cus, geo_i64=g_i64, slower=slower)
    return lines, status


def summary_table(result: dict, copy: float) -> list[str]:
    lines = ["| matrix | best own kernel | us | INT32-model GB/s | % copy | torch-i64 us | "
             "best cuSPARSE | us | vs i64 | vs best cuSPARSE | auto picks | auto us |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: |"]
    for e in result["matrices"]:
        own, cus, i64 = best(e, "own"), best(e, "cusparse"), case(e, "torch-cusparse-i64")
        auto = case(e, "auto")
        if not (own and cus and i64):
            lines.append(f"| {e['name']} | (incomplete) | | | | | | | | | | |")
            continue
        bw = gb_s(e["bytes_int32"], own["median_ms"])
        lines.append(
            f"| {e['name']} | {own['label']} | {own['median_ms'] * 1e3:.1f} | {bw:.0f} | "
            f"{100 * bw / copy:.1f} | {i64['median_ms'] * 1e3:.1f} | {cus['label']} | "
            f"{cus['median_ms'] * 1e3:.1f} | {i64['median_ms'] / own['median_ms']:.2f} | "
            f"{cus['median_ms'] / own['median_ms']:.2f} | {e['selection'].get('label')} | "
            f"{auto['median_ms'] * 1e3 if auto else float('nan'):.1f} |")
    return lines


def effect_lines(result: dict) -> list[str]:
    """Measured effects of the read-only cache hints and of the L2 window, per matrix."""
    lines = ["| matrix | sell-u4-m6 h1 / h0 | adaptive-i1 h1 / h0 | best own + L2 window / "
             "without |", "| --- | ---: | ---: | ---: |"]

    def ratio(a, b):
        return f"{a['median_ms'] / b['median_ms']:.3f}" if a and b else "n/a"

    for e in result["matrices"]:
        own = best(e, "own")
        win = next((c for c in e.get("cases", []) if c["family"] == "l2window" and c.get("ok")),
                   None)
        lines.append(f"| {e['name']} | {ratio(case(e, 'sell-u4-m6-h1'), case(e, 'sell-u4-m6-h0'))}"
                     f" | {ratio(case(e, 'adaptive-i1-h1'), case(e, 'adaptive-i1-h0'))} | "
                     f"{ratio(win, own)} |")
    return lines


def pytest_summary(path: Path) -> str:
    if not path.is_file():
        return "not run in this call"
    tail = [ln for ln in path.read_text().splitlines() if ln.strip()]
    return tail[-1] if tail else "empty log"


def env_lines(env_txt: Path) -> dict[str, str]:
    """Fields of the run's env.txt (written by scripts/device_kernels.sh)."""
    out = {}
    if env_txt.is_file():
        lines = env_txt.read_text().splitlines()
        for i, ln in enumerate(lines):
            if ln.startswith("date_utc"):
                out["date_utc"] = ln.split(None, 1)[1]
            elif ln.startswith("name, driver_version") and i + 1 < len(lines):
                keys = [k.strip() for k in ln.split(",")]
                vals = [v.strip() for v in lines[i + 1].split(",")]
                out["nvidia_smi"] = "; ".join(f"{k} {v}" for k, v in zip(keys, vals,
                                                                           strict=False))
            elif ln.startswith("Version"):
                out["ncu"] = ln.strip()
            elif ln.startswith("Cuda compilation tools"):
                out["nvcc"] = ln.strip()
            elif ln.startswith("python"):
                out["python_stack"] = ln.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="folder with kernels.json, ncu_raw.csv ...")
    parser.add_argument("--out", required=True)
    parser.add_argument("--command", default="bash scripts/device_kernels.sh")
    args = parser.parse_args(argv)
    run, out = Path(args.run), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = json.loads((run / "kernels.json").read_text())
    env = env_lines(run / "env.txt")
    copy = result["ceilings"]["copy_bw_gb_s"]
    profiles = profile_rows(load_profiles(run / "ncu_raw.csv"), result)
    kernels = {p.demangled_name.split("(")[0].replace("void ", "").strip()
               for group in profiles.values() for p in group if p.demangled_name}
    kernels = {k for k in kernels if k.startswith("spmv_")}
    sass = sass_summaries(kernels) if kernels else {}
    ceil = result["ceilings"]
    probe = result["gather_probe"]
    doc = [
        "# sparsescope's own SpMV kernels against cuSPARSE on an H200 (seed6 analogs)", "",
        f"One run of `{args.command}` on {result['environment']['device']} "
        f"({env.get('date_utc', result['created_utc'])}); every number below is read from the "
        "run's files by `benchmarks/spmv_kernels_report.py` (README.md says which).", "",
        "## Setup", "",
        f"- Timing: {result['timing']['clock']}, {result['timing']['warmups']} warm-ups, median "
        f"of {result['timing']['repeats']}, L2 flushed before every repeat (a 2 x L2 buffer "
        "incremented in place), float32 values, INT32 indices; every backend checked against "
        f"float64 first (relative L2 error <= {sweep.TOLERANCE}, outputs poisoned with NaN).",
        f"- Byte model for GB/s and % of copy: {result['byte_model']}.",
        f"- Ceilings measured in the same run: copy {ceil['copy_bw_gb_s']:.0f} GB/s (read + "
        f"write), read {ceil['read_bw_gb_s']:.0f} GB/s, L2 {ceil['l2_bw_gb_s']:.0f} GB/s, DRAM "
        f"latency {ceil['dram_latency_ns']:.0f} ns, L2 latency {ceil['l2_latency_ns']:.0f} ns. "
        f"The anchor run's copy bandwidth was {ANCHOR_COPY_GB_S:.0f} GB/s; % of copy below uses "
        "this run's.",
        f"- Random-gather ceiling: {probe['gsectors_per_s']:.0f} G sectors/s ({probe['method']}). "
        "A kernel whose x gathers miss L1 cannot issue more L2 sector requests than this.",
        "- Correctness suite (pytest on the GPU, same call): "
        f"{pytest_summary(run / 'pytest.log')}.",
        "", "## Summary", "", *summary_table(result, copy), "",
        "Speedups are ratios of medians measured in the same process. `auto picks` is the "
        "sweep variant equal to `cuda-spmv-auto`'s choice.", "",
        "Labels: `adaptive` / `merge` = whole-row / merge-path tiles (`spmv_tile`, `i1`/`i2` = "
        "1,024 / 2,048 nonzeros per tile, `hub8k` = persistent blocks with x[0, 8192) in shared "
        "memory); `tiles16` = tiles with 16-bit column offsets; `sell` = SELL-32-256 "
        "(`spmv_sell`), `delta16` = SELL with 16-bit offsets per slice, `blocked3` = SELL of 1 x 3 "
        "blocks of consecutive columns with one 16-bit offset per block; `dae4` = the SELL kernel "
        "with its streams staged in shared memory by cp.async, 4 steps per double-buffered "
        "chunk (decoupled access / execute); `t2` = two threads per "
        "row, `u` = columns per pipelined step, `m` = blocks per SM the registers allow; `h1` / "
        "`h0` = streams read with `L1::no_allocate` + L2 `evict_first` / plain `ld.global.nc`.",
        "",
        "## Per matrix", ""]
    gaps = {}
    for e in result["matrices"]:
        if "cases" not in e:
            doc += [f"### {e['name']}", "", "The sweep failed on this matrix:", "",
                    "```", e.get("error", "")[-1500:], "```", ""]
            continue
        lines, gap = matrix_section(e, copy, profiles.get(e["name"], []), sass,
                                    result["ceilings"].get("l2_bw_gb_s", 0.0))
        doc += lines
        gaps[e["name"]] = gap
    doc += ["## Measured effects of the cache hints and of the L2 window", "",
            *effect_lines(result), "",
            "Ratios of medians (below 1: faster with hints / with the window). The L2 window "
            "(`spmv_l2.L2Window`) keeps x in a persisting part of L2; persisting lines survive "
            "the protocol's flush, so its ratio is an upper bound of the window's gain.", ""]
    tlines, status = targets(result, copy)
    doc += tlines + [""]
    for name, ok in ((n, status.get(n)) for n in TARGET_PCT):
        if ok is False and name in gaps:
            doc.append(f"- {name} missed: {gaps[name].get('verdict', '')}")
            if gaps[name].get("bound_pct", 0) < TARGET_PCT[name]:
                doc.append(f"  The target is out of reach on this matrix: "
                           f"{gaps[name]['bound'].replace('**Gather bound**: ', '')}")
    doc += ["", "## Files", "",
            "- `kernels.json`: the sweep (every case: samples, CoV, relative error, notes, "
            "format bytes, selection and reason).",
            "- `ncu_raw.csv`: `ncu --csv --page raw` of each matrix's best own kernel "
            "(metrics listed by `benchmarks/spmv_kernels.py ncu-metrics`).",
            "- `pytest.log`, `env.txt`, `sweep.log`, `ncu.log`: logs of the call.", ""]
    (out / "report.md").write_text("\n".join(doc))
    for name in ("kernels.json", "ncu_raw.csv", "pytest.log", "env.txt", "sweep.log", "ncu.log"):
        if (run / name).is_file():
            shutil.copyfile(run / name, out / name)
    v = result["environment"]
    readme = [
        "# results/h200/kernels", "",
        "Own SpMV kernels (`cuda-spmv-adaptive`, `-merge`, `-sell`, `-delta16`, `-blocked16`, "
        "`-delta16-tiles`, `-auto`) against cuSPARSE (torch INT64 / INT32, CuPy INT32) on the "
        "full-scale seed6 analogs. Report: `report.md`.", "",
        "## How it was made", "",
        "On the lent H200 (device tool, kind `nvidia-h200`), from the repository root, with "
        "`carry=[\".device-wheels\"]`:", "",
        "```", "python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl",
        args.command, "```", "",
        "then here, on the returned files:", "",
        "```", "PYTHONPATH=src python3 benchmarks/spmv_kernels_report.py --run <returned folder> "
        "--out results/h200/kernels", "```", "",
        "## Run", "",
        f"- date (UTC): {env.get('date_utc', result['created_utc'])}",
        f"- device: {v['device']}, {v['sm_count']} SMs, {v['l2_bytes'] / 2**20:.0f} MiB L2; "
        f"nvidia-smi: {env.get('nvidia_smi', 'n/a')}",
        f"- CUDA: runtime {v['cuda_runtime']} (CuPy's), driver API {v['cuda_driver_api']}, "
        f"NVRTC {v['nvrtc']}; nvcc: {env.get('nvcc', 'n/a')}; Nsight Compute: "
        f"{env.get('ncu', 'n/a')}",
        f"- torch {v['torch']} (CUDA {v['torch_cuda']}), CuPy {v['cupy']}, NumPy {v['numpy']}, "
        f"Python {v['python']} (env.txt: {env.get('python_stack', 'n/a')})",
        f"- sweep wall time {result.get('seconds', float('nan')):.0f} s; correctness suite: "
        f"{pytest_summary(run / 'pytest.log')}",
        "- L2 persisting limits reported by the driver: "
        f"{v.get('l2_persisting_max_bytes', 'n/a')} B set-aside, "
        f"{v.get('l2_window_max_bytes', 'n/a')} B window", "",
        "## Files", "",
        "`report.md` (tables, selection, gaps, targets), `kernels.json` (every case with raw "
        "samples), `ncu_raw.csv` (best own kernel per matrix), `sweep.log`, `ncu.log`, "
        "`pytest.log`, `env.txt`.", ""]
    followups = sorted((out / "followups").glob("*/README.md"))
    if followups:
        readme += ["## Follow-ups", "", "Device calls around this run, each folder with its own "
                   "README (commands, environment, numbers read from its files):", ""]
        readme += [f"- `followups/{f.parent.name}/`: "
                   f"{f.read_text().splitlines()[0].lstrip('# ')}" for f in followups]
        readme.append("")
    (out / "README.md").write_text("\n".join(readme))
    print("\n".join(tlines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
