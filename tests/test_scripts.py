"""The results scripts' own arithmetic (they write the numbers committed READMEs quote), on
hand-made records: the offline model score, the kernel-selection README's regret, and the SpMM
population summary's memory bound, against the committed H200 run."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_offline_score_summary():
    score = load("model_offline_score")
    rows = [{"gpu": "H200", "matrix": "m", "backend": "cuda-spmv-sell[sell-u4-m6-h1]",
             "measured_ms": 0.010, "predicted_ms": 0.008, "limiter": "dram"},
            {"gpu": "H200", "matrix": "m", "backend": "cuda-spmv-sell[sell-u2-m8-h1]",
             "measured_ms": 0.012, "predicted_ms": 0.006, "limiter": "latency"}]
    text = score.summary(rows)
    # |errors| 20 % and 50 %: median 35 %; the 90th percentile (nearest rank: the
    # ceil(0.9 x 2) = 2nd) 50 %
    assert ("H200: 2 cases, median |error| 35.0 %, 90th percentile 50.0 % (nearest rank)"
            in text)
    assert "sell-u2-m8-h1              median signed error  +50.0 %" in text
    # u2-m8 is predicted fastest but measured 20 % slower than u4-m6
    assert ("m: the fastest prediction (cuda-spmv-sell[sell-u2-m8-h1]) measured +20.0 % over "
            "the fastest") in text
    # one matrix, its pick 1.2x the fastest
    assert ("choosing by prediction alone: +20.0 % geomean over the fastest, largest +20.0 %, "
            "1 of 1 matrices above 5 %") in text
    # geomean of 1.0 and 1.21: 1.1
    assert score.regret_line([1.0, 1.21]).startswith("+10.0 % geomean")


def test_offline_score_comparison_with_a_baseline():
    score = load("model_offline_score")

    def row(backend, predicted):
        return {"gpu": "H200", "matrix": "m", "backend": backend, "measured_ms": 0.010,
                "predicted_ms": predicted, "limiter": "latency"}

    before = [row("cuda-spmv-sell[sell-u2-m8-h1]", 0.005),
              row("cuda-spmv-delta16[delta16-u4-m6-h1]", 0.008),
              row("cuda-spmv-merge[merge-i1-h1]", 0.009)]   # not scored now: left out
    now = [row("cuda-spmv-sell[sell-u2-m8-h1]", 0.011),
           row("cuda-spmv-delta16[delta16-u4-m6-h1]", 0.009)]
    table = score.comparison(now, before).splitlines()
    # signed errors before +50 %, +20 % (median +35 %); now -10 %, +10 % (median 0 %)
    assert table[2] == "| H200 | all | 2 | 35.0 % | 10.0 % | +35.0 % | +0.0 % |"
    assert table[3] == "| H200 | delta16 | 1 | 20.0 % | 10.0 % | +20.0 % | +10.0 % |"
    assert table[4] == "| H200 | sell | 1 | 50.0 % | 10.0 % | +50.0 % | -10.0 % |"


def test_offline_score_reads_the_committed_call_probe():
    score = load("model_offline_score")
    probe = ROOT / "results/h200/kernels/followups/2026-11-25-call-overhead-probe/probe.json"
    rows = {r["probe"]: r for r in json.loads(probe.read_text()) if r["flushed"]}
    costs = score.probe_call_costs(probe)
    # the flushed medians: one empty launch, and what the second of two adds
    assert costs["call_us"] == rows["empty"]["median_us"] == pytest.approx(3.68, abs=0.01)
    assert costs["next_launch_us"] == pytest.approx(
        rows["empty x2"]["median_us"] - rows["empty"]["median_us"])
    assert 1.0 < costs["next_launch_us"] < costs["call_us"]


def test_kernels_readme_regret_and_variant_names():
    readme = load("kernels_readme")
    assert readme.variant_of("cuda-spmv-delta16", {"tpr": 1, "unroll": 4, "minb": 6}) == \
        "cuda-spmv-delta16[delta16-u4-m6-h1]"
    assert readme.variant_of("cuda-spmv-blocked16", {"block": 3, "minb": 6, "stage": 4,
                                                     "tpr": 2}) == \
        "cuda-spmv-blocked16[blocked3-t2-dae4-m6-h1]"
    assert readme.variant_of("cuda-spmv-merge", {"iters": 7}) is None

    def case(backend, ms, notes=None):
        return {"matrix": "m", "backend": backend, "outcome": "ok", "notes": notes or {},
                "measurement": {"samples_ms": [ms, ms, ms]}}

    table = [{"backend": "cuda-spmv-delta16", "params": {"tpr": 1, "unroll": 4, "minb": 6},
              "label": "d", "predicted_ms": 0.01}]
    rows = readme.score([
        case("cuda-spmv-delta16[delta16-u4-m6-h1]", 0.020),
        case("cuda-spmv-sell[sell-u4-m6-h1]", 0.016),
        case("torch-cusparse-i32", 0.040),
        case("cuda-spmv-auto", 0.0168, {"selected": "cuda-spmv-sell", "selected_params": "{}",
                                        "selection_rule": "predicted-then-timed",
                                        "selection_reason": "r",
                                        "selection_table": json.dumps(table)}),
        case("cuda-spmv-auto-rules", 0.020, {"selected": "cuda-spmv-delta16"})])
    (r,) = rows
    assert (r["best_own"], r["best_own_us"]) == ("cuda-spmv-sell[sell-u4-m6-h1]", 16.0)
    assert r["auto_us"] / r["best_own_us"] - 1 == pytest.approx(0.05)
    assert r["predicted_first_us"] == 20.0  # the delta16 variant, predicted fastest
    assert r["best_lib_us"] / r["auto_us"] == pytest.approx(40 / 16.8)
    assert readme.pct(r["rules_us"], r["best_own_us"]) == "+25.0 %"


def test_kernels_readme_summary_lines(tmp_path):
    readme = load("kernels_readme")
    (tmp_path / "env.txt").write_text("NVIDIA H200")
    row = {"best_own": "o", "best_own_us": 10.0, "auto_choice": "a", "auto_params": "",
           "auto_rule": "r", "predicted_first": "p", "candidates": 2, "best_lib": "lib",
           "reason": "why", "rules_choice": "q"}
    rows = [{**row, "matrix": "m1", "auto_us": 11.0, "rules_us": 10.0,
             "predicted_first_us": 20.0, "best_lib_us": 22.0},
            {**row, "matrix": "m2", "auto_us": 10.0, "rules_us": 12.1,
             "predicted_first_us": None, "best_lib_us": 9.0}]
    text = readme.readme("T", "", [tmp_path], rows, ["cmd"], "the held-out population")
    assert text.startswith("# T: kernel selection on the held-out population")
    # auto's regrets 1.1 and 1.0: geomean sqrt(1.1) = 1.0488; rules sqrt(1.21) = 1.1
    assert ("- Geomean regret over the 2 matrices: auto +4.9 % (2 matrices); auto-rules "
            "+10.0 % (2 matrices); the fastest prediction alone +100.0 % (1 matrices).") in text
    assert ("- Matrices where auto is slower than the best cuSPARSE configuration: 1 of 2 "
            "(m2 0.90x).") in text


def test_population_memory_bound_on_the_committed_h200_run():
    summary = load("spmm_population_summary")
    s = summary.summarise(ROOT / "results/h200/spmm-population/results.json.gz")
    g = s["memory_group"]
    assert g["cases"] == 17 and all(r["kind"] in ("powerlaw", "rmat") and r["rows"] > 100_000
                                    and r["k"] >= 64 for r in g["rows"])
    row = next(r for r in g["rows"] if (r["matrix"], r["k"], r["layout"]) == (
        "graph-11", 64, "row"))
    # 300,000 rows: bound = gather bytes / the run's L2 bandwidth (8,239 GB/s); auto's share
    assert row["memory_bound_by"] == "l2, direct"
    assert row["auto_pct_of_memory_bound"] == pytest.approx(
        100 * row["memory_bound_ms"] / row["auto_ms"])
    page = summary.bounds_markdown(s)
    assert "| graph-11 | 300,000 | 64 | row | l2, direct |" in page
    # cases faster than their bound are listed, not hidden: the bound is not a floor there
    broken = [r for r in s["rows"] if max(r["auto_pct_of_memory_bound"],
                                          r["library_pct_of_memory_bound"]) > 100]
    assert broken and f"{len(broken)} of {len(s['rows'])} cases ran faster than" in page


def test_variants_readme_ratios_stay_within_a_run():
    table = load("variants_readme")

    def case(backend, ms, k=128):
        return {"matrix": "g", "backend": backend, "outcome": "ok",
                "params": {"k": k, "layout": "row"}, "measurement": {"samples_ms": [ms]}}

    order, rows = table.speedups([case("lib", 0.4), case("own", 0.5), case("own[w=2]", 0.32),
                                  case("own", 0.1, k=8)], "lib", "run1")
    assert order == ["lib", "own", "own[w=2]"]
    # k = 8 has no baseline in this run: no row (never a ratio across runs)
    assert rows == {("run1", "g", 128, "row"): {"lib": 1.0, "own": 0.8, "own[w=2]": 1.25}}
    text = table.markdown(order, rows, "lib")
    assert "| run1 | g | 128 | row | 0.80 | 1.25 |" in text
    assert "| geomean (of the rows that have it) | | | | 0.80 | 1.25 |" in text


def test_ab_table_on_the_committed_tile_ab():
    ab = load("ab_table")
    runs = ab.medians(ROOT / "results/h200/kernels/followups/2026-11-25-tile-phase2-ab")
    key = next(k for k in runs if k[:2] == ("rmat-29", "cuda-spmv-merge"))
    assert set(runs[key]) == {"A1", "A2", "B1", "B2"}
    line = next(ln for ln in ab.table(runs).splitlines()
                if ln.startswith("rmat-29") and "cuda-spmv-merge" in ln)
    a = sorted([runs[key]["A1"], runs[key]["A2"]])
    b = sorted([runs[key]["B1"], runs[key]["B2"]])
    assert line.endswith(f"{(b[0] + b[1]) / (a[0] + a[1]):6.3f}")  # medians of two: means


def test_profile_cases_main_kernel_from_a_committed_raw_export():
    import gzip

    prof = load("profile_cases_readme")
    folder = ROOT / "results/h200/profile/2026-11-25-cases"
    with gzip.open(folder / "rmat-29.spmv0.cupy-cusparse-i32_raw.csv.gz", "rt") as f:
        row = prof.main_kernel(f.read(), "csrmv_v3")
    assert row["Kernel Name"].startswith("void cusparse::csrmv_v3_kernel")
    assert prof.number(row["dram__bytes_read.sum"]) == pytest.approx(64_522_240)
    assert prof.number("1,234.5") == 1234.5



def test_population_x_reuse_floor_takes_the_larger_bound():
    import types

    summary = load("spmm_population_summary")
    rates = types.SimpleNamespace(l2_bytes=1 << 16, dram_bw_gb_s=1000.0)  # a 64 KB L2
    row = dict(matrix="graph-02", k=64, layout="row", memory_bound_ms=1e-6,
               memory_bound_by="l2, direct", auto_ms=1.0, library_ms=2.0)
    col = {**row, "layout": "col"}
    summary.x_reuse_floor([row, col], rates)
    # graph-02: 10,000 rows; X at k = 64 is 2.56 MB, far above 64 KB: X re-read
    assert row["x_reuse_misses_per_row"] > 1.0
    assert row["x_reuse_bound_ms"] == row["x_reuse_floor_ms"] > 1e-6
    assert row["x_reuse_bound_by"] == "dram, X re-read"
    assert row["auto_pct_of_x_reuse_bound"] == pytest.approx(100 * row["x_reuse_floor_ms"])
    # column-major X: the two transposes, (X + Y) x 2 = 2 x 4 x 64 x 20,000 B at 1,000 GB/s
    assert col["x_reuse_floor_ms"] - row["x_reuse_floor_ms"] == pytest.approx(
        2 * 4 * 64 * 20_000 / 1e12 * 1e3)


def test_spmm_population_readme_from_the_committed_run():
    pop = load("spmm_population_readme")
    folder = ROOT / "results/h200/spmm-population/2026-11-25-rowgroup-rules"
    text = pop.readme(folder, "T", "N", True, wheels=".device-wheels-min")
    assert text.startswith("# T\n\nN\n")
    assert 'carry `[".device-wheels-min", "out/spmm-pop"]`' in text
    # the committed summary: 12 of 12 (k, layout) groups at >= 1.3x, no triple below 0.95x
    assert ("geomean >= 1.3x in 12 of 12 (k, layout) groups; 0 triples below 0.95x"
            in text)


def test_profile_cases_readme_reads_the_cases_json_from_the_tar(tmp_path):
    import gzip
    import tarfile

    prof = load("profile_cases_readme")
    committed = ROOT / "results/h200/profile/2026-11-25-cases"
    name = "rmat-29.spmv0.cupy-cusparse-i32"
    # the device script's layout: NAME.json at the tar's top, NAME/..._raw.csv below it
    work = tmp_path / "work"
    (work / name).mkdir(parents=True)
    (work / f"{name}.json").write_bytes((committed / f"{name}.json").read_bytes())
    with gzip.open(committed / f"{name}_raw.csv.gz", "rb") as f:
        (work / name / f"profile_{name}_raw.csv").write_bytes(f.read())
    fetched = tmp_path / "fetched"
    fetched.mkdir()
    (fetched / "env.txt").write_text("NVIDIA H200")
    with tarfile.open(fetched / "profiles.tar.gz", "w:gz") as tar:
        tar.add(work, arcname=".")
    dest = tmp_path / "dest"
    assert prof.main([str(fetched), str(dest), "--kernel", "csrmv_v3", "--title", "T"]) == 0
    text = (dest / "README.md").read_text()
    assert (dest / f"{name}.json").exists()
    assert "| time us | 25.9 |" in text and "| DRAM read MB | 64.5 |" in text
    assert "long_scoreboard 14.7" in text


def test_spmm_model_score_errors_and_regret():
    score = load("spmm_model_score")

    def row(backend, measured, predicted, selected="", table=""):
        return {"matrix": "m", "k": 8, "layout": "row", "backend": backend,
                "selected": selected, "table": table, "measured_ms": measured,
                "predicted_ms": predicted, "limiter": "l2",
                "error_pct": 100 * (measured - predicted) / measured}

    table = json.dumps([{"backend": "spmm-cuda-rowgroup", "predicted_ms": 0.5},
                        {"backend": "spmm-cuda-rowwarp", "predicted_ms": 0.6}])
    rows = [row("spmm-cuda-rowgroup", 1.0, 0.8), row("spmm-cuda-rowwarp", 0.5, 0.6),
            row("spmm-cuda-auto", 0.55, 0.6, "spmm-cuda-rowwarp", table)]
    summary = score.error_summary(rows)
    # errors +20 %, -20 %, -9.09 %: |median| 20 %; nearest-rank p90 of 3 = the 3rd: 20 %
    assert summary["all"]["cases"] == 3
    assert summary["all"]["median_abs_pct"] == pytest.approx(20.0)
    assert summary["all"]["median_signed_pct"] == pytest.approx(-100 * 0.05 / 0.55)
    (r,) = score.regrets(rows)
    assert r["faster"] == "spmm-cuda-rowwarp" and r["regret_pct"] == pytest.approx(10.0)
    assert r["prediction_right"] is False   # rowgroup was predicted faster
    text = score.report(rows, [r])
    assert "geomean regret +10.0 %" in text and "named the faster kernel in 0 of 1" in text
    # auto's case also counted under the kernel it ran
    assert summary["auto: rowwarp"]["cases"] == 1
    assert summary["auto: rowwarp"]["median_signed_pct"] == pytest.approx(-100 * 0.05 / 0.55)


def test_spmm_model_score_trials():
    score = load("spmm_model_score")
    table = json.dumps([
        {"label": "spmm-cuda-rowgroup", "predicted_ms": 0.4, "trial_ms": 0.30},
        {"label": "spmm-cuda-rowgroup[min_slice=32]", "predicted_ms": 0.3, "trial_ms": 0.15},
        {"label": "spmm-cuda-rowwarp", "predicted_ms": 0.2, "trial_ms": 0.20}])
    rows = [{"matrix": "g", "k": 32, "layout": "row", "backend": "spmm-cuda-auto",
             "table": table, "measured_ms": 0.15, "predicted_ms": 0.3, "error_pct": 50.0},
            {"matrix": "h", "k": 8, "layout": "row", "backend": "spmm-cuda-auto",
             "table": json.dumps([{"label": "spmm-cuda-rowgroup", "predicted_ms": 0.1,
                                   "trial_ms": None}]),
             "measured_ms": 0.1, "predicted_ms": 0.1, "error_pct": 0.0}]
    (t,) = score.trials(rows)   # h timed nothing: left out
    assert t["predicted_first"] == "spmm-cuda-rowwarp"
    assert t["kept"] == "spmm-cuda-rowgroup[min_slice=32]" and t["over_default"] == 2.0
    text = score.report(rows, [])
    assert "the fastest prediction was the fastest timed in 0" in text
    assert "geomean 2.000x, largest 2.00x" in text


def test_spmm_backend_table_on_the_committed_blocktc_run(tmp_path):
    import json

    folder = ROOT / "results/h200/spmm-tuning/2026-11-25-blocktc-batched"
    out = tmp_path / "t.json"
    assert load("spmm_backend_table").main([str(folder / "results.json.gz"), "--note",
                                               "fill", "--json", str(out)]) == 0
    t = json.loads(out.read_text())
    assert t["backends"][:4] == ["spmm-torch-i32", "spmm-cupy-i32", "spmm-cuda-auto",
                                 "spmm-cuda-blocktc"]
    row = next(r for r in t["rows"] if r["matrix"] == "weights-03" and r["k"] == 32)
    assert row["ms"]["spmm-cuda-blocktc"] == "skipped"          # fill 10 > 8
    assert row["notes"]["spmm-cuda-blocktc[max_fill=64]"]["fill"] == "10.00"
    best = min(row["ms"]["spmm-torch-i32"], row["ms"]["spmm-cupy-i32"])
    assert row["speedup"]["spmm-cuda-auto"] == best / row["ms"]["spmm-cuda-auto"]
    assert len(t["rows"]) == 36 and 0 < t["geomean"]["spmm-cuda-auto"]


def test_spmm_blocktc_readme_quotes_the_returned_files(tmp_path):
    folder = ROOT / "results/h200/spmm-tuning/2026-11-25-blocktc-batched"
    dest = tmp_path / "r"
    assert load("spmm_blocktc_readme").main([str(folder), str(dest), "--title", "T"]) == 0
    text = (dest / "README.md").read_text()
    assert text.startswith("# T") and (folder / "table.md").read_text().strip() in text
    assert "NVIDIA H200" in text and (dest / "results.json.gz").exists()


def test_gather_rate_lines_read_the_group_against_the_random_sector_rate():
    summary = load("spmm_population_summary")
    rows = [{"auto_l2_gsectors_s": 100.0}, {"auto_l2_gsectors_s": 160.0}]
    (line,) = summary.gather_rate_lines(rows, 200.0)
    assert "50-80 % (1 of 2 at >= 70 %)" in line
    assert summary.gather_rate_lines(rows, None) == [] and summary.gather_rate_lines([], 1.0) == []


def test_blocktc_model_offline_score_on_the_committed_final_run():
    offline = load("blocktc_model_offline_score")
    folder = ROOT / "results/h200/spmm-tuning/2026-11-25-blocktc-final"
    regs = offline.read_regs(folder / "regs.txt")
    assert regs["spmm_blocktc<3, 1, true, 1, 4>"] > 0
    rows = offline.score(folder / "results.json.gz", regs, only="weights-00")
    # weights-00 at k = 32, 128, 512: the block kernel's own cases and auto's picks of it
    assert {r["k"] for r in rows} == {32, 128, 512}
    assert {r["backend"] for r in rows} == {"spmm-cuda-blocktc", "spmm-cuda-auto"}
    for r in rows:
        assert r["predicted_ms"] > 0
        assert r["error_pct"] == pytest.approx(
            100 * (r["measured_ms"] - r["predicted_ms"]) / r["measured_ms"])


def test_memory_floor_markdown():
    floors = load("memory_floor_offline")

    def part(backend, ms, floor_ms, requests=None, hot=None):
        return {"backend": backend, "ms": ms, "floor_ms": floor_ms,
                "pct": 100 * floor_ms / ms, "binding": "l2", "strategy": "s",
                "x_requests": requests, "hot_share": hot, "formula": "f"}

    rows = [{"gpu": "H200", "matrix": "a", "nnz": 1000,
             "own": part("cuda-spmv-sell", 0.010, 0.009, 250.0, 0.2),
             "auto": part("cuda-spmv-auto", 0.0125, 0.009),
             "library": part("torch-cusparse-i32", 0.020, 0.010)},
            {"gpu": "H200", "matrix": "b", "nnz": 10,
             "own": part("cuda-spmv-merge", 0.010, 0.005), "auto": None, "library": None}]
    text = floors.markdown(rows)
    # a: 0.009 / 0.010 = 90 %, 250 / 1000 requests a nonzero, auto 72 %, library 50 %
    assert ("| H200 | a | cuda-spmv-sell | 0.0100 | 0.0090 | 90.0 | l2 | 0.250 | 20.0 | 0.0125 "
            "| 72.0 | torch-cusparse-i32 | 0.0200 | 50.0 |") in text
    assert ("| H200 | b | cuda-spmv-merge | 0.0100 | 0.0050 | 50.0 | l2 | - | - | - | - | - |"
            in text)
    # a: library 0.020 ms over the own 0.010 (2.00x) and over its floor 0.009 (2.22x); b has no
    # library case
    assert ("Speedup over the best library: 2.00x geomean now (fastest own kernel); at most "
            "2.22x for a kernel at its format's floor (library time / floor, over 1 matrices): "
            "a 2.22x.") in text
    # median of 90 and 50; b below 80 %
    assert "median 70.0 % of its format's floor over 2 matrices; below 80 %: b (50 %)." in text


def test_memory_floor_offline_counts_the_flush_write_back_as_the_prediction_did():
    """cant (flushed, DRAM-bound, nothing pinned) from the committed seed6 run: the offline
    floor of its blocked kernel equals the floor its prediction carried on the device."""
    floors = load("memory_floor_offline")
    from sparsescope.matrices.suites import build_entry, find_entry
    from sparsescope.model.predict import device_rates
    from sparsescope.ops.base import canonical_csr
    from sparsescope.results.io import read_runset

    rs = read_runset(ROOT / "results" / "h200" / "kernels" /
                     "2026-11-25-short-pieces-seed6-part1" / "part1" / "results.json.gz")
    case = next(c for c in rs.cases if c.matrix == "cant"
                and c.backend == "cuda-spmv-blocked16[blocked3-dae4-m6-h1]")
    assert case.measurement.flushed and case.prediction.inputs["flush_writeback_bytes"] > 0
    csr = canonical_csr(build_entry(find_entry("seed6", "cant", rs.scale), 0).csr)
    floor = floors._floor(case, csr, device_rates(rs.device, rs.ceilings))
    assert floor.binding == "dram"
    assert floor.floor_ms == pytest.approx(case.prediction.inputs["gather_floor_ms"], rel=1e-9)


def test_selection_compare_on_the_committed_held_out_runs():
    """The short-piece run against the run before it, on the 66 held-out matrices: rmat-29's
    speedup is read from each run's own times (best library / auto)."""
    compare = load("selection_compare")
    base = ROOT / "results" / "h200" / "kernels"
    before = compare.load(base / "2026-11-25-population-held-out" / "selection.json")
    now = compare.load(base / "2026-11-25-short-pieces-held-out" / "selection.json")
    assert compare.speedup(before["rmat-29"]) == pytest.approx(
        before["rmat-29"]["best_lib_us"] / before["rmat-29"]["auto_us"])
    assert compare.speedup(before["rmat-29"]) < 1.0 < compare.speedup(now["rmat-29"])
    assert compare.choice(now["rmat-29"]) == (
        "cuda-spmv-sell[long_row=64,minb=8,tpr=4,unroll=2]")
    text = compare.compare(before, now, changed_only=True)
    assert "| rmat-29 | cuda-spmv-merge | 0.89x |" in text
    assert "| cant |" not in text and "| banded-05 |" not in text  # unchanged choices left out
    assert "slower than cuSPARSE on 2 (powerlaw-29, rmat-29)" in text
    assert "slower than cuSPARSE on 0;" in text


def test_hot_set_reach_rows_by_hand():
    """Column 0 gathered 50 times, column 9 30 times, 30 others once (110 gathers), 4 SMs."""
    reach = load("hot_set_reach")
    counts = np.ones(32, dtype=np.int64)
    counts[[0, 9]] = [50, 30]
    rows = reach.reach_rows("m", counts, entries_per_sm=1, sms=4, clusters=[1, 2])
    # one SM each: column 0 (50 of 110), 4 copies of its sector; two SMs a copy: 0 and 9
    assert rows == ["| m | 1 | 1 | 45.5 % | 0.00 | 4 | 0.00 | 0.00 |",
                    "| m | 2 | 2 | 72.7 % | 0.00 | 2 | 0.00 | 0.00 |"]


def test_dsmem_probe_grid_and_rate_arithmetic():
    probe = load("dsmem_gather_probe")
    # 132 SMs x 2 blocks = 264: a whole number of clusters of 1, 2, 4 and 8
    assert [probe.grid_for(132, c) for c in (1, 2, 4, 8)] == [264, 264, 264, 264]
    assert probe.grid_for(132, 16) == 256 and probe.grid_for(3, 8) == 8
    # 264 blocks x 1,024 threads x 256 loads in 1 ms: 69.2 G loads/s
    assert probe.rate_gloads_s(264, 256, 1.0) == pytest.approx(69.206016)


def test_dsmem_probe_source_compiles_for_hopper():
    """The probe's source builds for sm_90 at every cluster size it launches, eight
    distributed-shared-memory loads in flight (skipped without a CUDA compiler)."""
    from sparsescope.sass.extract import compile_cuda, iter_kernels
    from sparsescope.sass.kernel_shape import sass_tools_available

    if not sass_tools_available():
        pytest.skip("no CUDA compiler and cuobjdump")
    probe = load("dsmem_gather_probe")
    for cluster, owners in probe.CONFIGS:
        compiled = compile_cuda(probe.SOURCE.read_text(), "sm_90", options=(
            "-std=c++17", f"-DCLUSTER={cluster}", f"-DRANKS={owners}"))
        (entry, listing), = list(iter_kernels(compiled.cubin))
        texts = [i.text for i in listing.instructions]
        assert entry.name == "dsmem_gather"
        assert sum(t.startswith("LD.E ") for t in texts) == 8
        assert sum("UCGABAR_WAIT" in t for t in texts) == 2  # fill, then before exit


def test_shortlist_offline_times_what_auto_would_time(tmp_path):
    short = load("shortlist_offline")

    def row(matrix, backend, measured, predicted):
        return {"gpu": "H200", "matrix": matrix, "backend": backend, "measured_ms": measured,
                "predicted_ms": predicted, "limiter": "l2"}

    rows = [  # m: the fastest (merge) predicted 1.5x the fastest prediction: not shortlisted
        row("m", "cuda-spmv-sell[a]", 0.012, 0.010), row("m", "cuda-spmv-sell[b]", 0.011, 0.012),
        row("m", "cuda-spmv-merge", 0.010, 0.015),
        # n: every variant within 35 %: the fastest measured is kept, regret 0
        row("n", "cuda-spmv-sell[a]", 0.020, 0.010), row("n", "cuda-spmv-merge", 0.010, 0.013)]
    res = short.regrets(rows)
    assert res[("H200", "m")][:2] == (pytest.approx(0.1), "cuda-spmv-sell[b]")
    assert res[("H200", "n")][:2] == (0.0, "cuda-spmv-merge")
    # geomean of 1.1 and 1.0: 1.0488
    assert short.summary("now", res) == (
        "now H200: shortlist regret +4.9 % geomean, largest +10.0 %, fastest not shortlisted "
        "on 1 of 2 matrices")
    path = tmp_path / "score.json"
    path.write_text(json.dumps(rows))
    assert short.main([str(path), "--baseline", str(path)]) == 0


def test_l1_model_check_on_the_committed_rmat20_profiles(tmp_path):
    """uniform-05 and rmat-20's tile launches (ncu, H200): the x requests ncu counted and the
    model's; the L1 model stays within 15 % where the old per-block count was off by 48 %."""
    check = load("l1_model_check")
    out = tmp_path / "check.json"
    assert check.main([str(ROOT / "results/h200/profile/2026-11-25-cases-rmat20"),
                       "--json", str(out)]) == 0
    rows = {r["case"]: r for r in json.loads(out.read_text())}
    r = rows["rmat-20.spmv0.cuda-spmv-adaptive"]
    # 605,788 L2 read sectors - (8 x 1,001,438 + 4 x 83,455) / 32 of streams
    assert r["ncu_x_sectors"] == pytest.approx(605_788 - (8 * 1_001_438 + 4 * 83_455) / 32)
    assert (r["grid"], r["resident"], r["l1_ncu_kb"], r["l1_rule_kb"]) == (1167, 6, 124, 192)
    assert r["l1_model_at_ncu"] == pytest.approx(r["ncu_x_sectors"], rel=0.15)
    assert r["block_unlimited"] > 1.4 * r["ncu_x_sectors"]
    assert "rmat-20.spmv0.cuda-spmv-adaptive[iters=2]" in rows
    assert "uniform-05.spmv0.cuda-spmv-adaptive" in rows
    assert "| rmat-20.spmv0.cuda-spmv-adaptive |" in check.table(list(rows.values()))


def test_offline_score_by_matrix_kind():
    score = load("model_offline_score")

    def row(matrix, backend, measured, predicted):
        return {"gpu": "H200", "matrix": matrix, "backend": backend, "measured_ms": measured,
                "predicted_ms": predicted, "limiter": "imbalance"}

    rows = [row("rmat-20", "cuda-spmv-sell[sell-u4-m6-h1]", 0.026, 0.020),
            row("rmat-26", "cuda-spmv-sell[sell-u4-m6-h1]", 0.030, 0.020),
            row("banded-05", "cuda-spmv-sell[sell-u4-m6-h1]", 0.010, 0.010),
            row("rmat-20", "cuda-spmv-merge[merge-i1-h1]", 0.018, 0.012)]
    lines = score.by_kind(rows).splitlines()
    assert lines[0] == "| GPU | variant | banded | rmat |"
    # merge: one rmat case, 1.5; sell: banded 1.0, rmat median of 1.3 and 1.5 = 1.4
    assert lines[2] == "| H200 | merge-i1-h1 |  | 1.50 |"
    assert lines[3] == "| H200 | sell-u4-m6-h1 | 1.00 | 1.40 |"
