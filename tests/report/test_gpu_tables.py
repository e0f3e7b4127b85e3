"""Kernel breakdown, the two byte models and timing stability, against hand-computed values."""

from __future__ import annotations

import dataclasses
import math

import pytest
from report_builders import make_cpu_runset, make_gpu_runset

from sparsescope.report import build_tables
from sparsescope.report.context import build_context
from sparsescope.report.document import build_document
from sparsescope.report.gpu_tables import (
    bandwidth_models_table,
    kernel_breakdown_tables,
    kernel_role,
    stability_table,
)
from sparsescope.report.markdown import render_markdown
from sparsescope.report.sections import SectionInputs
from sparsescope.report.spmv_section import spmv_section
from sparsescope.results.records import CaseResult, Correctness
from sparsescope.timing.types import Measurement

CSRMV = "cusparse::csrmv_v3_kernel"
PARTITION = "cusparse::(anonymous namespace)::csr_partition_kernel"
FILL = "at::native::vectorized_elementwise_kernel"


def k(name, time_ms, pct, launches=1.0):
    return {"name": name, "full_name": f"void {name}<float>(...)", "time_ms": time_ms,
            "pct": pct, "launches": launches}


#: (matrix, backend) -> breakdown of one call.
BREAKDOWNS = {
    ("ldoor", "torch-cusparse-i64"): (k(CSRMV, 0.2100, 96.1), k(PARTITION, 0.0050, 2.3),
                                      k(FILL, 0.0035, 1.6)),
    ("cage15", "torch-cusparse-i64"): (k(CSRMV, 0.5424, 95.8), k(PARTITION, 0.01296, 2.29),
                                       k("Memset (Device)", 0.0108, 1.91, launches=2.0)),
    ("cage15", "cuda-csr-vector"): (k("csr_vector", 0.3482, 100.0),),
}


def multi_backend_runset(*, breakdowns=BREAKDOWNS, copy_bw=4256.8):
    """make_gpu_runset plus a cuda-csr-vector case (INT32, y written) on ldoor and cage15."""
    rs = make_gpu_runset(copy_bw=copy_bw)
    config = rs.cases[0].measurement.config
    extra = []
    for matrix, time_ms in (("ldoor", 0.1211), ("cage15", 0.3504)):
        extra.append(CaseResult(
            matrix=matrix, backend="cuda-csr-vector", op="spmv", outcome="ok", value_bytes=4,
            index_bytes=4, y_read=False,
            measurement=Measurement(samples_ms=(time_ms * 0.99, time_ms, time_ms * 1.01),
                                    config=config, flushed=False, clock="cuda-events"),
            correctness=Correctness(rel_err=7e-8, tolerance=1e-5)))
    cases = []
    for c in (*rs.cases, *extra):
        kb = breakdowns.get((c.matrix, c.backend), ())
        cases.append(dataclasses.replace(
            c, measurement=dataclasses.replace(c.measurement, kernel_breakdown=kb)))
    return dataclasses.replace(rs, cases=tuple(cases))


def ctx_of(rs):
    return build_context(rs)


def test_kernel_roles():
    assert kernel_role("cusparse::csrmv_v3_kernel") == "main SpMV kernel (merge-based)"
    assert kernel_role("Memset (Device)") == "memset (output or workspace)"
    assert kernel_role("my_kernel") == ""


def test_breakdown_shows_the_largest_matrix_and_keeps_all_in_json():
    shown, every = kernel_breakdown_tables(ctx_of(multi_backend_runset()))
    assert shown.name == "kernel_breakdown" and shown.title == "Kernel breakdown: cage15"
    assert [(r.backend, r.kernel) for r in shown.rows] == [
        ("torch-cusparse-i64", CSRMV), ("torch-cusparse-i64", PARTITION),
        ("torch-cusparse-i64", "Memset (Device)"), ("cuda-csr-vector", "csr_vector")]
    csrmv, _, memset, vector = shown.rows
    assert csrmv.avg_ns == pytest.approx(542_400) and csrmv.pct_gpu_time == 95.8
    assert csrmv.role == "main SpMV kernel (merge-based)"
    assert memset.avg_ns == pytest.approx(5_400)  # 0.0108 ms over 2 launches
    assert memset.time_per_call_ns == pytest.approx(10_800) and memset.launches_per_call == 2
    assert vector.label == "cage15 [cuda-csr-vector]"
    # kernel names as code: the names nsys and ncu print, not labels of ours
    assert ("longest kernel's share of GPU time per backend is torch-cusparse-i64: "
            "`cusparse::csrmv_v3_kernel` 95.8 %; cuda-csr-vector: `csr_vector` 100.0 %") \
        in shown.reading
    assert shown.cells()[0][1] == "`cusparse::csrmv_v3_kernel`"
    assert "Auxiliary kernels, memsets and copies take 4.2 %" in shown.reading
    assert ("Seed 000 section 3.2 (nsys, cage15): `csrmv_v3_kernel` 91.0 % at 438,561 ns per "
            "launch; here 95.8 % at 542,400 ns.") in shown.reading
    assert "all 3 cases with a breakdown" in shown.reading
    assert every.name == "kernel_breakdown_all" and len(every.rows) == 7
    assert {r.matrix for r in every.rows} == {"ldoor", "cage15"}
    assert "the longest kernel takes 95.8–100.0 %" in every.reading
    assert every.to_dict()["units"]["avg_ns"] == "ns"


def test_breakdown_on_a_non_seed_largest_matrix_and_bad_entries():
    bd = {("ldoor", "torch-cusparse-i64"): (k(CSRMV, 0.21, 96.0), {"name": "broken"},
                                           {"name": "x", "time_ms": "n/a", "pct": 1.0})}
    shown, every = kernel_breakdown_tables(ctx_of(multi_backend_runset(breakdowns=bd)))
    assert shown.title == "Kernel breakdown: ldoor" and len(shown.rows) == 1
    assert "Seed 000" not in shown.reading and "Auxiliary" not in shown.reading
    assert kernel_breakdown_tables(ctx_of(make_gpu_runset())) is None
    assert "kernel_breakdown" not in {t.name for t in build_tables(make_gpu_runset())}


def test_bandwidth_models_hand_computed():
    t = bandwidth_models_table(ctx_of(multi_backend_runset()))
    rows = {r.label: r for r in t.rows}
    i64 = rows["ldoor [torch-cusparse-i64]"]
    # ldoor, y written (x and y: 952,203 x 8): INT64 46,522,475 x 12 + 952,204 x 8 + 7,617,624
    # = 573,504,956 B; INT32 46,522,475 x 8 + 952,204 x 4 + 7,617,624 = 383,606,240 B.
    assert i64.int64_mb == pytest.approx(573.504956) and i64.int32_mb == pytest.approx(383.60624)
    assert i64.index_bytes == 8 and i64.time_ms == pytest.approx(0.1964)
    assert i64.eff_bw_int64_gb_s == pytest.approx(2920.0863, abs=1e-3)  # the seed's 2,920
    assert i64.eff_bw_int32_gb_s == pytest.approx(1953.1886, abs=1e-3)
    assert i64.pct_of_measured_copy_bw == pytest.approx(45.8840, abs=1e-3)  # of 4,256.8
    assert i64.measured_floor_ms == pytest.approx(0.0901161, abs=1e-6)
    assert i64.gap_vs_measured_floor_x == pytest.approx(2.17941, abs=1e-4)
    assert not i64.fastest_on_matrix
    vec = rows["ldoor [cuda-csr-vector]"]
    assert vec.index_bytes == 4 and vec.fastest_on_matrix
    assert vec.eff_bw_int32_gb_s == pytest.approx(383_606_240 / 0.1211e-3 / 1e9)
    assert vec.gap_vs_measured_floor_x == pytest.approx(0.1211 / 0.0901161, abs=1e-4)
    assert rows["webbase-1M [torch-cusparse-i64]"].fastest_on_matrix  # alone on its matrix
    assert "2 of 8 cases ran with narrower indices" in t.reading
    assert "closest to the measured floor: ldoor [cuda-csr-vector] at 74.4 % (gap 1.34x)" in \
        t.reading
    assert "Fastest per matrix: webbase-1M torch-cusparse-i64 (" in t.reading
    assert "ldoor cuda-csr-vector (74.4 %)" in t.reading
    assert [c.key for c in t.columns][-4:] == ["pct_of_measured_copy_bw", "measured_floor_ms",
                                               "gap_vs_measured_floor_x", "fastest_on_matrix"]


def test_bandwidth_models_without_a_measured_copy_bandwidth():
    t = bandwidth_models_table(ctx_of(multi_backend_runset(copy_bw=None)))
    assert all(r.pct_of_measured_copy_bw is None and r.measured_floor_ms is None
               for r in t.rows)
    assert "pct_of_measured_copy_bw" not in [c.key for c in t.columns]
    assert "no copy bandwidth was measured" in t.basis
    # INT64 counts 1.45-1.49x the INT32 bytes on these six matrices (cant most, webbase least).
    assert "The INT64 model counts 1.45–1.50x the bytes" in t.reading


def test_stability_hand_computed():
    rs = make_cpu_runset()
    ok = rs.cases[0]
    samples = (1.0, 1.1, 0.9, 1.0)
    case = dataclasses.replace(ok, measurement=dataclasses.replace(ok.measurement,
                                                                   samples_ms=samples))
    rs = dataclasses.replace(rs, cases=(case, *rs.cases[1:]))
    t = stability_table(ctx_of(rs))
    r = t.rows[0]
    assert r.samples == 4 and r.median_ms == 1.0 and r.min_ms == 0.9 and r.max_ms == 1.1
    assert r.std_ms == pytest.approx(math.sqrt(0.02 / 3))
    assert r.cov_pct == pytest.approx(8.1650, abs=1e-4)  # 0.081650 / mean 1.0
    assert r.max_over_min_x == pytest.approx(1.1 / 0.9) and r.flushed and not r.stable
    assert len(t.rows) == 2  # the failed case is never listed
    # pl-small keeps samples_around(0.31, 10): std sqrt(2 x 220e-6 / 9) = 0.699 % of the mean.
    assert t.reading == ("CoV 0.7–8.2 % over 2 cases; 1 below 3 %. Noisiest: band-small (CoV "
                         "8.2 %, max/min 1.22x); steadiest: pl-small (0.7 %).")
    assert "seed 000 section 3.3" not in t.reading  # no torch case on cant or cage15


def test_stability_against_the_seed_for_torch_on_cant_and_cage15():
    t = stability_table(ctx_of(make_gpu_runset()))
    # samples_around: median x (1 +- 0.001 i), i = 1..10 -> std = sqrt(2 x 385e-6 / 19)
    # = 0.6366 % of the mean, for every case.
    assert {round(r.cov_pct, 4) for r in t.rows} == {0.6366}
    assert all(r.stable for r in t.rows)
    assert ("torch-cusparse-i64 against seed 000 section 3.3: cant 0.6 % (seed 4.8 %), "
            "cage15 0.6 % (seed 0.4 %).") in t.reading


def _spmv_document(rs, figures_dir):
    """The report of ``rs``'s SpMV cases as ``write_report`` lays it out (figures in memory)."""
    ctx = build_context(rs)
    run_tables = {t.name: t for t in build_tables(rs, ctx=ctx, spmv=False)}
    section = spmv_section(rs, SectionInputs(figures_dir=figures_dir))
    return render_markdown(build_document(ctx, run_tables, [section])), section


@pytest.mark.usefixtures("figures_not_drawn")
def test_timing_subsections_in_the_document(tmp_path):
    for rs, expected in (
        # cuda-csr-vector is one of our kernels: the own-against-peers table follows timing
        (multi_backend_runset(), ["5.1 Timing and throughput",
                                  "5.2 Our kernels against the best other backend",
                                  "5.3 Kernel breakdown", "5.4 Timing stability",
                                  "5.5 Effective bandwidth under two byte models",
                                  "5.6 Against the seed's published H200 numbers"]),
        (make_cpu_runset(), ["5.1 Timing and throughput", "5.2 Timing stability",
                             "5.3 Effective bandwidth under two byte models"]),
    ):
        md, spmv = _spmv_document(rs, tmp_path)
        tables = spmv.tables
        section = md[md.index("## 5. Timing"):md.index("## 6. ")]
        assert [line[4:] for line in section.splitlines() if line.startswith("### ")] == \
            expected
        assert "Kernel breakdown: every case" not in section  # JSON only, listed in the appendix
        if "kernel_breakdown" in tables:
            assert "`tables/kernel_breakdown_all.json`: Kernel breakdown: every case" in md


def test_the_table_families_name_every_table_build_tables_makes():
    from sparsescope.report.tables import RUN_TABLES, SPMV_TABLES

    # with kernel breakdowns, a seed comparison and an own kernel against peers: all 24 tables
    # but auto's choice (no auto case kept a prediction table) and the memory floor (no
    # prediction carries one)
    rs = multi_backend_runset()
    names = [t.name for t in build_tables(rs)]
    assert len(names) == 24 and "own_vs_peers" in names
    assert set(names) == set(RUN_TABLES) | set(SPMV_TABLES) - {"auto_choice", "memory_floor"}
    assert [t.name for t in build_tables(rs, spmv=False)] == list(RUN_TABLES)
