"""Report tables against hand-computed numbers for the seed's inputs (seed 000)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from report_builders import make_cpu_runset, make_gpu_runset

from sparsescope.errors import ResultsFormatError, UnknownNameError
from sparsescope.report import build_tables
from sparsescope.report.context import build_context
from sparsescope.report.table_types import Column, format_value, unit_of
from sparsescope.results.records import CaseCounters


def tables_of(runset, **kw):
    return {t.name: t for t in build_tables(runset, **kw)}


def row(table, **match):
    hits = [r for r in table.rows if all(getattr(r, k) == v for k, v in match.items())]
    assert len(hits) == 1, (table.name, match, hits)
    return hits[0]


@pytest.fixture(scope="module")
def gpu():
    return tables_of(make_gpu_runset())


@pytest.fixture(scope="module")
def gpu_y_read():
    """The seed's 5.5 and 9.3 count y read + write."""
    return tables_of(make_gpu_runset(y_read=True))


@pytest.fixture(scope="module")
def cpu():
    return tables_of(make_cpu_runset())


def test_timing_matches_seed_3_1(gpu):
    t = gpu["timing"]
    # Seed 3.1 columns: eff. BW, GFLOP/s, AI, % peak, gap (INT64, y written only).
    expected = {"webbase-1M": (1296, 151, 0.117, 27.0, 3.7), "cant": (1203, 196, 0.163, 25.1, 4.0),
                "pwtk": (2158, 351, 0.163, 45.0, 2.2), "ldoor": (2920, 474, 0.162, 60.8, 1.6),
                "circuit5M": (2501, 371, 0.148, 52.1, 1.9),
                "cage15": (2746, 428, 0.156, 57.2, 1.7)}
    assert [r.label for r in t.rows] == list(expected)
    for name, (bw, gf, ai, pct, gap) in expected.items():
        r = row(t, matrix=name)
        assert round(r.eff_bw_gb_s) == bw
        assert round(r.gflops) == gf
        assert round(r.ai_flop_per_byte, 3) == ai
        assert round(r.pct_of_peak_bw, 1) == pct
        assert round(r.gap_vs_floor_x, 1) == gap
        assert r.index_bytes == 8 and r.samples == 20 and r.rel_err == 7e-8
    ldoor = row(t, matrix="ldoor")
    # 573,504,956 bytes / 4,256.8 GB/s measured copy -> 68.6 % of it.
    assert ldoor.bytes == 46_522_475 * 12 + 952_204 * 8 + 952_203 * 8
    assert ldoor.pct_of_measured_copy_bw == pytest.approx(100 * 2920.1 / 4256.8, abs=0.05)
    assert ldoor.median_ms == pytest.approx(0.1964) and ldoor.cov_pct < 1.0


def test_timing_reading_names_best_and_worst(gpu):
    reading = gpu["timing"].reading
    assert reading.startswith("ldoor comes closest to the floor at 60.8 % of peak (gap 1.6x); "
                              "cant is furthest (gap 4.0x).")
    assert "measured copy bandwidth the best case reaches 68.6 %" in reading


def test_measured_columns_only_with_a_measured_ceiling():
    t = tables_of(make_gpu_runset(copy_bw=None))
    keys = [c.key for c in t["timing"].columns]
    assert "pct_of_measured_copy_bw" not in keys
    assert all(r.pct_of_measured_copy_bw is None for r in t["timing"].rows)
    assert "No copy bandwidth was measured" in t["device"].reading


def test_floor_matches_seed_5_1(gpu):
    t = gpu["floor"]
    assert round(row(t, label="webbase-1M").bytes_mb, 1) == 53.3
    assert round(row(t, label="cage15").bytes_mb, 1) == 1272.9
    assert round(row(t, label="ldoor").floor_ms, 4) == 0.1195
    assert round(row(t, label="cant").floor_ms, 4) == 0.0102
    assert t.reading == ("Floors range 0.0102–0.2652 ms at 4,800 GB/s; measured times sit "
                         "1.6–4.0x above them.")


def test_roofline_ridge_and_distance(gpu):
    t = gpu["roofline"]
    assert all(r.memory_bound for r in t.rows)
    # ridge 66,900 / 4,800 = 13.94; cant AI 0.1633 -> 85x, webbase-1M 0.1166 -> 120x.
    assert round(row(t, label="cant").below_ridge_x) == 85
    assert round(row(t, label="webbase-1M").below_ridge_x) == 120
    assert "ridge at 13.9 FLOP/byte" in t.reading


def test_littles_law_matches_seed_5_3(gpu):
    ll = gpu["littles_law"].rows[0]
    assert ll.gpu == "H200" and ll.latency_ns == 300
    assert ll.outstanding_mb == pytest.approx(1.44)
    assert round(ll.outstanding_bytes_per_sm) == 10_909
    assert round(ll.required_warps_per_sm, 1) == 85.2
    assert round(ll.warp_deficit_per_sm, 1) == 21.2
    assert round(ll.headroom_x, 2) == 0.75
    assert round(ll.bw_ceiling_pct, 1) == 75.1 and round(ll.bw_ceiling_gb_s) == 3604
    assert round(ll.dep_chain_ceiling_pct, 1) == 37.5
    # 50 % occupancy -> 32 warps / 2 = 16 / 85.2 = 18.8 %.
    assert ll.example_active_warps_per_sm == 32
    assert round(ll.occupancy_adjusted_ceiling_pct, 1) == 18.8
    assert gpu["littles_law"].reading.startswith(
        "H200 needs 85.2 warps/SM at 300 ns to keep 4,800 GB/s in flight but holds 64: a "
        "deficit of 21.2 warps/SM caps bandwidth at 75.1 % of peak")


def test_latency_sensitivity_matches_seed_12_3(gpu):
    t = gpu["latency_sensitivity"]
    assert [r.latency_ns for r in t.rows] == [200, 300, 400]
    assert [r.primary for r in t.rows] == [False, True, False]
    assert [round(r.required_warps_per_sm, 1) for r in t.rows] == [56.8, 85.2, 113.6]
    assert [round(r.bw_ceiling_pct, 1) for r in t.rows] == [100.0, 75.1, 56.3]
    assert [round(r.dep_chain_ceiling_pct, 1) for r in t.rows] == [56.3, 37.5, 28.2]
    assert [r.dae_ceiling_pct for r in t.rows] == [100.0, 100.0, 100.0]
    # Best case ldoor at 60.83 %: min(100, 121.7)/60.83, 75.1/60.83, 56.3/60.83.
    assert [round(r.dae_bw_speedup_x, 2) for r in t.rows] == [1.64, 1.23, 0.93]
    # 64 x 132 x 128 B x 100 / (60.83 % x 4,800 GB/s) = 370 ns.
    assert "at most ~370 ns" in t.reading


def test_run_latency_joins_the_sweep():
    rs = dataclasses.replace(make_gpu_runset(), latency_ns=350.0)
    t = tables_of(rs)
    assert [r.latency_ns for r in t["latency_sensitivity"].rows] == [200, 300, 350, 400]
    assert [r.primary for r in t["latency_sensitivity"].rows] == [False, False, True, False]
    assert t["littles_law"].rows[0].latency_ns == 350.0


def test_gap_decomposition_matches_seed_5_5(gpu_y_read):
    t = gpu_y_read["gap"]
    cant = row(t, label="cant")
    assert (round(cant.floor_ms, 4), round(cant.littles_law_deficit_ms, 4),
            round(cant.dep_chain_and_other_ms, 4)) == (0.0103, 0.0034, 0.0271)
    cage = row(t, label="cage15")
    # The seed rounded the ceiling to 75.1 % first (0.0893 / 0.1048); the exact 75.09 % gives
    # 0.26948 / 0.7509 - 0.26948 = 0.08939 ms.
    assert round(cage.floor_ms, 4) == 0.2695
    assert cage.littles_law_deficit_ms == pytest.approx(0.0893, abs=1.5e-4)
    assert cage.dep_chain_and_other_ms == pytest.approx(0.1048, abs=1.5e-4)
    for r in t.rows:
        assert r.floor_ms + r.littles_law_deficit_ms + r.dep_chain_and_other_ms == \
            pytest.approx(r.time_ms)


def test_dae_matches_seed_7_7(gpu):
    t = gpu["dae"]
    assert round(row(t, label="cage15").bw_speedup_x, 2) == 1.31
    assert round(row(t, label="circuit5M").bw_speedup_x, 2) == 1.44
    cant = row(t, label="cant")
    assert cant.bw_speedup_x == pytest.approx(2.0) and cant.limited_by == "mlp_gain"
    assert row(t, label="ldoor").limited_by == "littles_law"
    assert all(r.cpi is None for r in t.rows)
    assert "cpi_speedup_x" not in [c.key for c in t.columns]


def test_dae_cpi_from_profile_counters():
    rs = make_gpu_runset()
    counters = CaseCounters(cpi=11.3, long_scoreboard_cycles=4.25)
    cases = tuple(dataclasses.replace(c, counters=counters)
                  if c.matrix == "cant" else c for c in rs.cases)
    t = tables_of(dataclasses.replace(rs, cases=cases))["dae"]
    cant = row(t, label="cant")
    assert round(cant.projected_cpi, 2) == 7.05 and round(cant.cpi_speedup_x, 2) == 1.6
    assert row(t, label="ldoor").cpi_speedup_x is None
    assert "cpi_speedup_x" in [c.key for c in t.columns]
    assert "1.60x" in t.reading


def test_fifo_and_sram_match_seed_7_8_and_7_9(gpu):
    fifo = gpu["dae_fifo"]
    assert [(r.depth_entries, round(r.ceiling_pct, 1)) for r in fifo.rows[:3]] == \
        [(0, 37.5), (1, 75.1), (2, 100.0)]
    sram = gpu["dae_sram"]
    d32 = row(sram, depth_entries=32)
    assert (d32.bytes_per_warp, d32.kib_per_sm, round(d32.total_mib, 2)) == (256, 16.0, 2.06)
    assert d32.pct_of_register_file == pytest.approx(6.25)
    assert round(row(sram, depth_entries=2).total_mib, 2) == 0.13
    assert sram.reading.startswith("The minimum depth of 2 entries per warp costs 0.13 MiB")


def test_cross_gpu_covers_the_spec_table(gpu, fake_specs):
    t = gpu["cross_gpu"]
    assert [r.gpu for r in t.rows] == [s.name for s in fake_specs]
    h200 = row(t, gpu="H200")
    assert h200.this_run and round(h200.current_pct, 1) == 60.8
    assert round(h200.dae_bw_speedup_x, 2) == 1.23
    b200 = row(t, gpu="B200")
    assert round(b200.required_warps_per_sm, 1) == 84.5 and b200.current_pct is None
    assert round(b200.headroom_x, 2) == 0.76
    assert "H200 (this run) reaches 60.8 % at best" in t.reading


def test_index_width_matches_seed_9_3(gpu):
    t = gpu["index_width"]
    cant = row(t, matrix="cant")
    assert (round(cant.int64_mb, 1), round(cant.int32_mb, 1), round(cant.waste_pct, 1)) == \
        (49.3, 33.1, 33.0)
    assert round(row(t, matrix="webbase-1M").waste_pct, 1) == 28.7
    assert round(row(t, matrix="cage15").waste_mb, 1) == 417.4
    assert all(r.int32_fits for r in t.rows)
    assert t.reading.startswith("INT64 indices waste 28.7–33.0 % of the bytes (webbase-1M "
                                "least, cant most)")


def test_cpu_run_uses_cpu_bandwidth_and_reference_gpu(cpu):
    t = cpu["timing"]
    assert [r.matrix for r in t.rows] == ["band-small", "pl-small"]
    band = row(t, matrix="band-small")
    # 200,000 x 8 + 20,001 x 4 + 20,000 x 4 x 2 = 1,840,004 B in 0.25 ms -> 7.36 GB/s of 12.5.
    assert band.bytes == 1_840_004
    assert band.eff_bw_gb_s == pytest.approx(7.360016)
    assert band.pct_of_peak_bw == pytest.approx(100 * 7.360016 / 12.5)
    assert band.pct_of_measured_copy_bw is None  # the CPU's peak already is its measured copy
    assert band.flushed
    # The run named H200: its warp model from its spec alone, no CPU % compared with it.
    for name in ("littles_law", "latency_sensitivity", "dae_sram", "dae_fifo"):
        assert "reference GPU H200 from its spec" in cpu[name].reading, name
        assert "no CPU measurement enters it" in cpu[name].basis, name
    ll = cpu["littles_law"].rows[0]
    assert (ll.gpu, ll.latency_ns, round(ll.required_warps_per_sm, 1)) == ("H200", 300, 85.2)
    assert "best case" not in cpu["littles_law"].reading
    sens = cpu["latency_sensitivity"]
    assert all(r.dae_bw_speedup_x is None for r in sens.rows)
    assert "dae_speedup_text" not in [c.key for c in sens.columns]
    assert all(r.current_pct is None and not r.this_run for r in cpu["cross_gpu"].rows)
    assert "ran on a CPU" in cpu["cross_gpu"].reading
    # A CPU time judged by a GPU's warps: never (the gap, the per-case DAE gain).
    assert not {"gap", "dae", "dae_validated"} & set(cpu)


def test_cpu_run_naming_no_gpu_has_no_warp_model_and_says_why():
    rs = make_cpu_runset(reference_gpu="")
    t = tables_of(rs)
    warp = {"littles_law", "latency_sensitivity", "gap", "dae", "dae_validated", "dae_sram",
            "dae_fifo", "cross_gpu"}
    assert not warp & set(t) and {"timing", "floor", "roofline", "index_width"} <= set(t)
    ctx = build_context(rs)
    assert ctx.gpu is None
    assert "warps do not describe the CPU (AMD EPYC 7B13" in ctx.warp_absent
    assert "--reference-gpu NAME" in ctx.warp_absent
    assert "measured on a CPU" in ctx.gpu_run_absent
    # the report names the GPU instead: its spec, at its datasheet latency
    named = tables_of(rs, reference_gpu="B200")
    ll = named["littles_law"].rows[0]
    assert (ll.gpu, ll.latency_ns) == ("B200", 200.0)
    assert not {"gap", "dae"} & set(named)


def test_cpu_run_honours_the_latency_it_recorded():
    """The run stage stores the reference GPU's latency, or the user's override (here 400)."""
    t = tables_of(dataclasses.replace(make_cpu_runset(), latency_ns=400.0))
    ll = t["littles_law"].rows[0]
    assert (ll.gpu, ll.latency_ns, round(ll.bw_ceiling_pct, 1)) == ("H200", 400.0, 56.3)
    assert [r.primary for r in t["latency_sensitivity"].rows] == [False, False, True]


def test_unstable_timings_are_flagged():
    rs = make_cpu_runset()
    noisy = dataclasses.replace(rs.cases[0], measurement=dataclasses.replace(
        rs.cases[0].measurement, samples_ms=(0.25,) * 7 + (0.5, 0.6, 0.7)))
    reading = tables_of(dataclasses.replace(rs, cases=(noisy,) + rs.cases[1:]))["timing"].reading
    assert "CoV above 10 % (treat these times with care): band-small." in reading
    assert "care" not in tables_of(rs)["timing"].reading


def test_skipped_and_failed_are_listed_and_never_timed(cpu):
    out = cpu["outcomes"]
    assert [(r.backend, r.outcome, r.reason) for r in out.rows] == [
        ("torch-cusparse-i64", "skipped", "torch is not installed"),
        ("scipy-cpu", "failed", "relative error 3.2e-02 above tolerance 1e-05")]
    assert out.rows[1].rel_err == 3.2e-2
    assert "1 case(s) skipped and 1 failed" in out.reading
    for name in ("timing", "floor", "roofline"):
        assert all("tiny" not in r.label for r in cpu[name].rows), name


def test_several_backends_get_distinct_labels():
    rs = make_gpu_runset()
    other = tuple(dataclasses.replace(c, backend="cupy-csr-i32", index_bytes=4)
                  for c in rs.cases[:2])
    t = tables_of(dataclasses.replace(rs, cases=rs.cases + other))["timing"]
    labels = [r.label for r in t.rows]
    assert len(set(labels)) == len(labels) == 8
    assert "cant [cupy-csr-i32]" in labels and "cant [torch-cusparse-i64]" in labels


def test_json_form_carries_units_and_no_nan(gpu):
    for name, table in gpu.items():
        d = json.loads(json.dumps(table.to_dict(), allow_nan=False))
        assert d["title"] == table.title and d["reading"] == table.reading
        assert len(d["rows"]) == len(table.rows)
        if d["rows"]:
            assert set(d["units"]) == set(d["rows"][0]), name
    units = gpu["timing"].to_dict()["units"]
    assert (units["time_ms"], units["eff_bw_gb_s"], units["pct_of_peak_bw"],
            units["ai_flop_per_byte"], units["gap_vs_floor_x"]) == \
        ("ms", "GB/s", "%", "FLOP/byte", "x")
    assert gpu["dae_sram"].to_dict()["units"]["kib_per_sm"] == "KiB/SM"


def test_units_and_cell_formatting():
    assert unit_of("required_warps_per_sm") == "warps/SM"
    assert unit_of("outstanding_bytes_per_sm") == "B/SM"
    assert unit_of("total_mib") == "MiB" and unit_of("bytes_mb") == "MB"
    assert Column("time_ms", "Time", ".4f").title == "Time (ms)"
    assert Column("gflops", "GFLOP/s").title == "GFLOP/s"
    assert format_value(None) == "—" and format_value(True) == "yes"
    assert format_value(math.inf, ".1f") == "∞"
    assert format_value(1.6449, ".1f", "x") == "1.6x"


def test_bad_inputs_raise_specific_errors():
    rs = make_cpu_runset()
    with pytest.raises(UnknownNameError, match="XYZ"):
        build_context(dataclasses.replace(rs, reference_gpu="XYZ"))
    stray = dataclasses.replace(rs.cases[0], matrix="nowhere")
    with pytest.raises(ResultsFormatError, match="nowhere"):
        build_context(dataclasses.replace(rs, cases=(stray,)))


def test_real_spec_table_drives_the_cross_gpu_table(monkeypatch):
    """With the spec table the project ships (skipped until hardware/specs.py exists)."""
    import sys

    monkeypatch.delitem(sys.modules, "sparsescope.hardware.specs")
    specs = pytest.importorskip("sparsescope.hardware.specs")
    t = tables_of(make_cpu_runset())
    gpus = [s.name for s in specs.list_specs() if s.kind == "gpu"]
    assert [r.gpu for r in t["cross_gpu"].rows] == gpus
    assert t["littles_law"].rows[0].gpu == specs.get_spec("H200").name


def test_numpy_numbers_from_a_live_run_format_and_serialise():
    import numpy as np

    rs = make_cpu_runset()
    m = rs.matrices[0]
    st = dataclasses.replace(m.stats, nnz=np.int64(m.stats.nnz), bandwidth=np.int64(300),
                             nnz_per_row_mean=np.float64(10.0), x_reuse=np.float32(10.0))
    rs = dataclasses.replace(rs, matrices=(dataclasses.replace(m, stats=st),) + rs.matrices[1:])
    t = tables_of(rs)["matrices"]
    assert t.cells()[0][5] == "200,000"
    assert json.loads(json.dumps(t.to_dict()))["rows"][0]["nnz"] == 200_000
    assert format_value(np.bool_(True)) == "yes"
