"""The readings of stored runs and profiles that ``sparsescope model score`` offers besides the
score: each format's memory floor (``--memory-floor``), SpMM against the library and the
memory bound (``--spmm-bounds``), and the L1 model against ncu (``--l1-check``)."""

from __future__ import annotations

import json
import types

import pytest

from sparsescope.analyze import floor_runs, l1_check, spmm_bounds
from sparsescope.cli import main


# -- --memory-floor -----------------------------------------------------------------------------
def test_memory_floor_markdown():
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
    text = floor_runs.floor_markdown(rows)
    # a: 0.009 / 0.010 = 90 %, 250 / 1000 requests a nonzero, auto 72 %, library 50 %
    assert ("| H200 | a | cuda-spmv-sell | 0.0100 | 0.0090 | 90.0 | l2 | 0.250 | 20.0 | 0.0125 "
            "| 72.0 | torch-cusparse-i32 | 0.0200 | 50.0 |") in text
    assert ("| H200 | b | cuda-spmv-merge | 0.0100 | 0.0050 | 50.0 | l2 | - | - | - | - | - |"
            in text)
    # a: library 0.020 ms over the own 0.010 (2.00x) and over its floor 0.009 (2.22x)
    assert ("Speedup over the best library: 2.00x geomean now (fastest own kernel); at most "
            "2.22x for a kernel at its format's floor (library time / floor, over 1 matrices): "
            "a 2.22x.") in text
    assert "median 70.0 % of its format's floor over 2 matrices; below 80 %: b (50 %)." in text

def test_memory_floor_counts_the_flush_write_back_as_the_prediction_did(committed):
    """cant (flushed, DRAM-bound, nothing pinned) from the committed seed6 run: the offline
    floor of its blocked kernel equals the floor its prediction carried on the device."""
    from sparsescope.analyze.score_runs import run_csr, run_rates
    from sparsescope.results.io import read_runset

    rs = read_runset(committed("results/h200/kernels/2026-11-25-short-pieces-seed6-part1/"
                               "part1/results.json"))
    case = next(c for c in rs.cases if c.matrix == "cant"
                and c.backend == "cuda-spmv-blocked16[blocked3-dae4-m6-h1]")
    assert case.measurement.flushed and case.prediction.inputs["flush_writeback_bytes"] > 0
    floor = floor_runs.case_floor(case, run_csr(rs, "cant"), run_rates(rs))
    assert floor.binding == "dram"
    # the run is kept compacted (its floats to 7 significant digits): the stored floor and the
    # one computed from the stored rates agree to that
    assert floor.floor_ms == pytest.approx(case.prediction.inputs["gather_floor_ms"], rel=1e-6)

def test_model_score_memory_floor_on_a_committed_run(committed, capsys):
    path = committed("results/h200/kernels/2026-11-25-held-out-warp-rows/part1/results.json")
    assert main(["model", "score", str(path), "--memory-floor", "--matrix", "pruned-05",
                 "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert row["matrix"] == "pruned-05" and row["own"]["floor_ms"] > 0
    assert row["own"]["pct"] == pytest.approx(100 * row["own"]["floor_ms"] / row["own"]["ms"])
    assert row["library"]["backend"] in ("torch-cusparse-i32", "torch-cusparse-i64",
                                         "cupy-cusparse-i32")

# -- --spmm-bounds ------------------------------------------------------------------------------
def test_population_memory_bound_on_the_committed_h200_run(committed):
    s = spmm_bounds.summarise(committed("results/h200/spmm-population/results.json"))
    g = s["memory_group"]
    assert g["cases"] == 17 and all(r["kind"] in ("powerlaw", "rmat") and r["rows"] > 100_000
                                    and r["k"] >= 64 for r in g["rows"])
    row = next(r for r in g["rows"] if (r["matrix"], r["k"], r["layout"]) == (
        "graph-11", 64, "row"))
    # 300,000 rows: bound = gather bytes / the run's L2 bandwidth (8,239 GB/s); auto's share
    assert row["memory_bound_by"] == "l2, direct"
    assert row["auto_pct_of_memory_bound"] == pytest.approx(
        100 * row["memory_bound_ms"] / row["auto_ms"])
    page = spmm_bounds.bounds_markdown(s)
    assert "| graph-11 | 300,000 | 64 | row | l2, direct |" in page
    # cases faster than their bound are listed, not hidden: the bound is not a floor there
    broken = [r for r in s["rows"] if max(r["auto_pct_of_memory_bound"],
                                          r["library_pct_of_memory_bound"]) > 100]
    assert broken and f"{len(broken)} of {len(s['rows'])} cases ran faster than" in page

def test_population_x_reuse_floor_takes_the_larger_bound():
    rates = types.SimpleNamespace(l2_bytes=1 << 16, dram_bw_gb_s=1000.0)  # a 64 KB L2
    row = dict(matrix="graph-02", k=64, layout="row", memory_bound_ms=1e-6,
               memory_bound_by="l2, direct", auto_ms=1.0, library_ms=2.0)
    col = {**row, "layout": "col"}
    spmm_bounds.x_reuse_floor([row, col], rates)
    # graph-02: 10,000 rows; X at k = 64 is 2.56 MB, far above 64 KB: X re-read
    assert row["x_reuse_misses_per_row"] > 1.0
    assert row["x_reuse_bound_ms"] == row["x_reuse_floor_ms"] > 1e-6
    assert row["x_reuse_bound_by"] == "dram, X re-read"
    assert row["auto_pct_of_x_reuse_bound"] == pytest.approx(100 * row["x_reuse_floor_ms"])
    # column-major X: the two transposes, (X + Y) x 2 = 2 x 4 x 64 x 20,000 B at 1,000 GB/s
    assert col["x_reuse_floor_ms"] - row["x_reuse_floor_ms"] == pytest.approx(
        2 * 4 * 64 * 20_000 / 1e12 * 1e3)

def test_gather_rate_lines_read_the_group_against_the_random_sector_rate():
    rows = [{"auto_l2_gsectors_s": 100.0}, {"auto_l2_gsectors_s": 160.0}]
    (line,) = spmm_bounds.gather_rate_lines(rows, 200.0)
    assert "50-80 % (1 of 2 at >= 70 %)" in line
    assert spmm_bounds.gather_rate_lines(rows, None) == []
    assert spmm_bounds.gather_rate_lines([], 1.0) == []

def test_model_score_spmm_bounds_json_is_the_summary(committed, capsys):
    path = committed("results/h200/spmm-population/results.json")
    assert main(["model", "score", str(path), "--spmm-bounds", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["device"] == "H200" and s["memory_group"]["cases"] == 17
    assert {"k", "layout", "geomean", "min", "below_0_95"} <= set(s["table"][0])
    assert main(["model", "score", str(path), "--spmm-bounds"]) == 0
    assert "lowest ratios:" in capsys.readouterr().out

# -- --l1-check ---------------------------------------------------------------------------------
def test_l1_check_on_the_committed_rmat20_profiles(committed, capsys):
    """uniform-05 and rmat-20's tile launches (ncu, H200): the x requests ncu counted and the
    model's; the L1 model stays within 15 % where the old per-block count was off by 48 %."""
    folder = committed("results/h200/profile/2026-11-25-cases-rmat20")
    assert main(["model", "score", "--l1-check", str(folder), "--json"]) == 0
    rows = {r["case"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    r = rows["rmat-20.spmv0.cuda-spmv-adaptive"]
    # 605,788 L2 read sectors - (8 x 1,001,438 + 4 x 83,455) / 32 of streams
    assert r["ncu_x_sectors"] == pytest.approx(605_788 - (8 * 1_001_438 + 4 * 83_455) / 32)
    assert (r["grid"], r["resident"], r["l1_ncu_kb"], r["l1_rule_kb"]) == (1167, 6, 124, 192)
    assert r["l1_model_at_ncu"] == pytest.approx(r["ncu_x_sectors"], rel=0.15)
    assert r["block_unlimited"] > 1.4 * r["ncu_x_sectors"]
    assert "rmat-20.spmv0.cuda-spmv-adaptive[iters=2]" in rows
    assert "uniform-05.spmv0.cuda-spmv-adaptive" in rows
    assert "| rmat-20.spmv0.cuda-spmv-adaptive |" in l1_check.l1_table(list(rows.values()))


def test_l1_check_reads_xz_exports_as_gzipped_ones(committed, tmp_path):
    """The profile folders keep the raw exports as xz (``*_raw.csv.xz``, before ``.gz``): the
    committed rmat20 exports laid out both ways give the same rows; a damaged xz export is an
    error naming it."""
    from sparsescope._compressed import compress, read_bytes, without_compression
    from sparsescope.profile.errors import ProfileError

    folders = {kind: tmp_path / kind for kind in ("gz", "xz")}
    for kind, folder in folders.items():
        folder.mkdir()
        for path in committed("results/h200/profile/2026-11-25-cases-rmat20").iterdir():
            name = without_compression(path.name)
            if name.endswith("_raw.csv"):
                (folder / f"{name}.{kind}").write_bytes(compress(read_bytes(path), f"x.{kind}"))
    rows = l1_check.l1_check([folders["gz"]])
    assert [r["case"] for r in rows] == ["rmat-20.spmv0.cuda-spmv-adaptive[iters=2]",
                                         "rmat-20.spmv0.cuda-spmv-adaptive",
                                         "uniform-05.spmv0.cuda-spmv-adaptive"]
    assert l1_check.l1_check([folders["xz"]]) == rows
    raw = folders["xz"] / "uniform-05.spmv0.cuda-spmv-adaptive_raw.csv.xz"
    raw.write_bytes(raw.read_bytes()[:-40])
    with pytest.raises(ProfileError, match="damaged xz data") as err:
        l1_check.l1_check([folders["xz"]])
    assert str(raw) in str(err.value)

