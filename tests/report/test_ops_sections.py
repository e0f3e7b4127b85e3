"""SpMM and slice report sections: numbers from hand-built H200 runs, the bound verdict, the
own-kernel-against-peers table, the instruction roofline from a real H200 profile, and a
whole report written from a real CPU run. Each op's section comes from its registered builder
(``report.sections.op_sections``); the report is ``report.write.write_report`` for every op."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.runner import run_case
from sparsescope.hardware.types import DeviceSpec, MeasuredCeilings
from sparsescope.matrices import compute_stats
from sparsescope.matrices.types import Matrix, MatrixStats
from sparsescope.ops.params import SliceDerived, SliceParams, SpmmParams
from sparsescope.report.ops_common import op_views
from sparsescope.report.ops_slice import bound_verdict, slice_rows_table
from sparsescope.report.ops_spmm import spmm_rows
from sparsescope.report.sections import OpSection, SectionInputs, op_sections
from sparsescope.report.write import write_report
from sparsescope.results.records import (
    CaseResult,
    Correctness,
    MatrixRecord,
    Provenance,
    RunSet,
)
from sparsescope.timing.types import Measurement, TimingConfig

H200 = DeviceSpec(
    name="H200", vendor_name="NVIDIA H200", kind="gpu", compute_capability="9.0", sm_count=132,
    max_warps_per_sm=64, max_threads_per_sm=2048, max_blocks_per_sm=32, registers_per_sm=65_536,
    shared_mem_per_sm_bytes=233_472, warp_schedulers_per_sm=4, l2_bytes=50 * 2**20,
    peak_bw_gb_s=4800.0, fp32_peak_gflops=66_900.0, sm_clock_mhz=1980.0, dram_latency_ns=300.0)
PROVENANCE = Provenance(created_utc="2026-01-01T00:00:00+00:00", command="test",
                        sparsescope_version="0.1.0", git_commit="unknown", hostname="h",
                        platform="linux", python="3.11", device="NVIDIA H200")
OK = Correctness(rel_err=1e-7, tolerance=1e-5)


def stats(rows, cols, nnz) -> MatrixStats:
    return MatrixStats(rows=rows, cols=cols, nnz=nnz, nnz_per_row_mean=nnz / rows,
                       nnz_per_row_std=0.0, nnz_per_row_min=0, nnz_per_row_max=0, empty_rows=0,
                       bandwidth=cols, distinct_columns=cols, x_reuse=nnz / cols,
                       x_reuse_in_window=0.0)


def case(matrix, backend, op, time_ms, params, derived=None, kernels=(), notes=None
         ) -> CaseResult:
    m = Measurement(samples_ms=(time_ms,), config=TimingConfig(clock="cuda-events"),
                    clock="cuda-events", kernel_breakdown=tuple(kernels))
    extra = {"derived": derived} if derived is not None else {}
    return CaseResult(matrix=matrix, backend=backend, op=op, outcome="ok", measurement=m,
                      correctness=OK, params=params, notes=dict(notes or {}), **extra)


def only_section(run: RunSet, **inputs) -> OpSection:
    """The one op section of ``run`` (its registered builder's)."""
    sections = op_sections(run, SectionInputs(**inputs))
    assert len(sections) == 1
    return sections[0]


def titles(section: OpSection) -> list[str]:
    return [heading for heading, _ in section.body]


def texts(section: OpSection) -> dict[str, str]:
    """Heading -> Markdown of each body part (the op builders write one Markdown block)."""
    return {heading: "".join(b.text for b in blocks) for heading, blocks in section.body}


def runset(matrices, cases, l2=10_000.0) -> RunSet:
    return RunSet(run_id="r1", suite="test", scale=1.0, provenance=PROVENANCE, device=H200,
                  ceilings=MeasuredCeilings(device="H200", l2_bw_gb_s=l2),
                  timing=TimingConfig(), matrices=tuple(matrices), cases=tuple(cases),
                  latency_ns=300.0)


SLICE_PARAMS = SliceParams(rows_selected=5000, weights="per-nnz")
SLICE_DERIVED = SliceDerived(nnz_selected=5_000_000, sectors_32b=3_560_417)


@pytest.fixture()
def slice_run() -> RunSet:
    """Seed 003's large workload on an H200: the scatter kernel 0.060 ms + a 0.045 ms memset."""
    record = MatrixRecord("slice-10000", "generated", "pruned", None,
                          stats(10_000, 10_000, 10_000_000))
    kernels = ({"name": "slice_scatter", "time_ms": 0.060, "pct": 57.0, "launches": 1.0},
               {"name": "Memset (Device)", "time_ms": 0.045, "pct": 43.0, "launches": 1.0})
    cases = [case("slice-10000", "slice-cuda-scatter", "slice", 0.105, SLICE_PARAMS,
                  SLICE_DERIVED, kernels),
             case("slice-10000", "slice-cuda-gather", "slice", 0.070, SLICE_PARAMS,
                  SLICE_DERIVED),
             case("slice-10000", "slice-torch", "slice", 0.300, SLICE_PARAMS, SLICE_DERIVED),
             CaseResult("slice-10000", "slice-brainevent", "slice", "skipped",
                        reason="backend unavailable: jax is not installed",
                        params=SLICE_PARAMS, derived=SLICE_DERIVED)]
    return runset([record], cases)


def test_slice_table_has_the_four_bounds(slice_run):
    rows = {r["backend"]: r for r in slice_rows_table(slice_run, op_views(slice_run, "slice"))}
    scatter = rows["slice-cuda-scatter"]
    assert scatter["kernel_ms"] == pytest.approx(0.060)
    reads = 40_060_000
    assert scatter["streaming_bound_ms"] == pytest.approx((reads + 20e6) / 4.8e12 * 1e3)
    assert scatter["dense_bound_ms"] == pytest.approx((reads + 200e6) / 4.8e12 * 1e3)  # 0.0500
    assert scatter["sector_bound_ms"] == pytest.approx(
        reads / 4.8e12 * 1e3 + 3_560_417 * 32 / 1e13 * 1e3)
    assert scatter["seed_line_bound_ms"] == pytest.approx(reads / 4.8e12 * 1e3 + 0.128)
    assert rows["slice-cuda-gather"]["pct_of_dense_bound"] == pytest.approx(
        100 * 0.050013 / 0.070, rel=1e-4)
    assert scatter["sectors_per_write"] == pytest.approx(0.712, abs=1e-3)


def test_the_measurements_refute_the_seed_line_model(slice_run):
    text = bound_verdict(slice_run, op_views(slice_run, "slice"))
    # 0.060 ms beats the seed's 0.136 ms bound; the 32-byte sector bound (0.0197 ms) and the
    # sector read-modify-write bound ((40.06 MB + 2 x 3,560,417 x 32 B) / 4.8 TB/s =
    # 0.0558 ms) stand, and the RMW bound is the tightest (93.0 % of it)
    assert "support the **32-byte sector read + write-back in DRAM** bound" in text
    assert "| 32-byte sector read + write-back in DRAM | 93.03 |" in text
    assert "Seed 003's line model is **refuted**" in text
    assert "kernel time from the breakdown" in text
    assert "Sectors of the scatter kernel under ncu" not in text  # no profile given


def _profile(index, name, duration_ns, metrics=(), grid=1, block=256, stalls=()):
    from sparsescope.profile.records import build_profile

    values = {"gpu__time_duration.sum": (duration_ns, "ns"), "launch__grid_size": (grid, ""),
              "launch__block_size": (block, ""), **{k: (v, "") for k, v in metrics},
              **{f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio": (c, "")
                 for r, c in stalls}}
    return build_profile(index, f"void {name}<float>(int)", values, name=name)


def test_scatter_counters_and_profiled_kernels(slice_run, tmp_path):
    views = op_views(slice_run, "slice")
    label = "slice-cuda-scatter slice-10000 rows_selected=5000 weights=per-nnz"
    profiles = [_profile(0, "slice_scatter", 104_000, metrics=(
        ("dram__sectors_read.sum", 4_610_000), ("dram__sectors_write.sum", 3_540_000),
        ("lts__t_sectors_op_read.sum", 1_850_000), ("lts__t_sectors_op_write.sum", 8_620_000),
        ("lts__t_sectors_op_atom.sum", 0), ("lts__t_sectors_op_red.sum", 0)),
        grid=625, stalls=(("long_scoreboard", 162.4), ("lg_throttle", 134.0))),
        _profile(1, "slice_gather", 68_700, grid=5000),
        _profile(2, "other_case", 1_000)]
    labels = [f"{label}: slice_scatter",
              "slice-cuda-gather slice-10000 rows_selected=5000 weights=per-nnz: slice_gather",
              "slice-torch slice-10000 rows_selected=64 weights=per-nnz: other_case"]
    text = bound_verdict(slice_run, views, profiles, labels)
    # reads 40.06 MB = 1.252 M sectors; + 3.560 M touched = 4.812 M; seed: 8 x 5 M = 40 M
    assert ("| slice-10000 rows=5000 per-nnz | 104 | 1.252 | 4.812 | 4.61 | 3.56 | 3.54 | 40 "
            "| 10.47 |") in text
    # the labels name the parameters the profiled spec gave (no out_of_range): the op's
    # defaults fill in the rest, so they still name the recorded cases
    section = only_section(slice_run, figures_dir=tmp_path, profiles=profiles, labels=labels)
    rows = section.tables["ops_slice_profiled"]["rows"]
    assert [(r["backend"], r["kernels"], r["main_kernel"]) for r in rows] == [
        ("slice-cuda-scatter", 1, "slice_scatter"), ("slice-cuda-gather", 1, "slice_gather")]
    assert rows[0]["main_top_stall"] == "long_scoreboard" and rows[0]["main_grid_blocks"] == 625
    assert rows[0]["ncu_sum_us"] == pytest.approx(104.0)
    assert "Slice: profiled kernels per case" in titles(section)
    assert "CSR row slicing: instruction roofline" in titles(section)
    # a label with every parameter spelled out names the same case
    full = [f"{label} out_of_range=error: slice_scatter", *labels[1:]]
    again = only_section(slice_run, figures_dir=tmp_path, profiles=profiles, labels=full)
    assert again.tables["ops_slice_profiled"]["rows"] == rows
    # one naming other parameter values does not
    other = [f"{label.replace('5000', '256')}: slice_scatter", *labels[1:]]
    fewer = only_section(slice_run, figures_dir=tmp_path, profiles=profiles, labels=other)
    assert [r["backend"] for r in fewer.tables["ops_slice_profiled"]["rows"]] == [
        "slice-cuda-gather"]


def test_slice_sections_peer_table_and_outcomes(slice_run, tmp_path):
    section = only_section(slice_run, figures_dir=tmp_path)
    names = titles(section)
    assert names == ["CSR row slicing: predicted against measured",
                     "Slice: time, bandwidth and % of bound",
                     "Slice: which bound the measurements support",
                     "CSR row slicing: skipped and failed cases"]
    assert section.title == "CSR row slicing"
    text = texts(section)
    assert "slice-cuda-gather | 0.07 | slice-torch | 0.3 | 4.286 | yes" in text[names[1]]
    assert "at least as fast as the best peer on every case" in text[names[1]]
    assert "jax is not installed" in text[names[3]]
    # recorded before the model: each timed case says so instead of a predicted time
    assert text[names[0]].count("| not modelled: results older than the model |") == 3
    assert (tmp_path / "ops_slice_bounds.png").stat().st_size > 5000
    assert section.written == (tmp_path / "ops_slice_bounds.png",)
    assert section.tables["ops_slice_peers"]["rows"][0]["speedup_x"] == pytest.approx(0.3 / 0.07)
    # the timing protocol counts the op's timed cases (3 of its 4)
    assert len(section.timed) == 3


@pytest.fixture()
def spmm_run() -> RunSet:
    record = MatrixRecord("dlmc-512x1024", "generated", "pruned", "DLMC 1",
                          stats(512, 1024, 157_286))
    k8, k64 = SpmmParams(k=8, layout="row"), SpmmParams(k=64, layout="row")
    cases = [case("dlmc-512x1024", "spmm-cuda-rowwarp", "spmm", 0.010, k8),
             case("dlmc-512x1024", "spmm-torch-i64", "spmm", 0.012, k8),
             case("dlmc-512x1024", "spmm-cuda-rowwarp", "spmm", 0.030, k64),
             case("dlmc-512x1024", "spmm-cupy-i32", "spmm", 0.020, k64)]
    return runset([record], cases)


def test_spmm_rows_hand_numbers(spmm_run):
    rows = spmm_rows(spmm_run, op_views(spmm_run, "spmm"))
    first = rows[0]
    assert first["gflops"] == pytest.approx(2 * 157_286 * 8 / 1e-5 / 1e9)  # 251.66
    compulsory = 157_286 * 8 + 513 * 4 + 1024 * 8 * 4 + 512 * 8 * 4  # 1,309,492 B
    assert first["eff_bw_gb_s"] == pytest.approx(compulsory / 1e-5 / 1e9)
    assert first["bound_ms"] == pytest.approx(compulsory / 4.8e12 * 1e3)
    assert first["pct_of_bound"] == pytest.approx(100 * compulsory / 4.8e12 * 1e3 / 0.010)
    # memory bound at the run's rates (no DRAM bandwidth measured: the datasheet's 4,800 GB/s;
    # L2 10,000 GB/s measured): gather bytes = A + 157,286 nonzeros x 1 sector x 32 B + Y
    # = 1,260,340 + 5,033,152 + 16,384 = 6,309,876 B -> 0.63099 us against DRAM's 0.27281 us
    assert first["memory_bound_by"] == "l2, direct"
    assert first["memory_bound_ms"] == pytest.approx(6_309_876 / 1e13 * 1e3)
    assert first["pct_of_memory_bound"] == pytest.approx(6.309876)


def test_spmm_report_names_cases_faster_than_their_memory_bound(spmm_run):
    from sparsescope.report.ops_spmm import faster_than_bound

    rows = spmm_rows(spmm_run, op_views(spmm_run, "spmm"))
    assert faster_than_bound(rows) == ""  # 6.3 % of the bound at most: nothing to say
    # the k=8 case at 0.5 ns would reach 0.63099 us / 0.5 us = 126 % of its bound
    fast = [{**rows[0], "time_ms": 0.0005,
             "pct_of_memory_bound": 100 * rows[0]["memory_bound_ms"] / 0.0005}, *rows[1:]]
    text = faster_than_bound(fast)
    assert text.startswith("**Faster than the memory bound** in 1 of 4 cases: "
                           "dlmc-512x1024 k=8 row spmm-cuda-rowwarp (126 %).")
    assert "no L1 term" in text
    many = [{**fast[0], "matrix": f"m{i}"} for i in range(10)]
    assert "; and 2 more." in faster_than_bound(many)


def test_spmm_sections_show_how_auto_chose(spmm_run, tmp_path):
    import dataclasses
    import json

    table = [{"backend": "spmm-cuda-rowgroup", "params": {}, "label": "spmm-cuda-rowgroup",
              "predicted_ms": 0.020, "limiter": "l2", "trial_ms": 0.031},
             {"backend": "spmm-cuda-rowwarp", "params": {}, "label": "spmm-cuda-rowwarp",
              "predicted_ms": 0.025, "limiter": "latency", "trial_ms": 0.028}]
    auto = case("dlmc-512x1024", "spmm-cuda-auto", "spmm", 0.028, SpmmParams(k=64,
                layout="col"), notes={"selected": "spmm-cuda-transposed",
                                      "row_major_kernel": "spmm-cuda-rowwarp",
                                      "selection_table": json.dumps(table)})
    run = dataclasses.replace(spmm_run, cases=(*spmm_run.cases, auto))
    section = only_section(run, figures_dir=tmp_path)
    text = texts(section)["SpMM: how spmm-cuda-auto chose"]
    # the trial overruled rowgroup's faster prediction (+25 % for rowwarp): rowwarp ran
    assert text.startswith("spmm-cuda-auto predicted 2 candidates on 1 cases and timed 2 of "
                           "them on the device")
    assert "on 1 (dlmc-512x1024 k=64 col)" in text
    assert ("| dlmc-512x1024 k=64 col | spmm-cuda-rowwarp | 25.0 | +25.0 | latency | 28.0 | "
            "chosen |") in text
    rows = section.tables["ops_spmm_auto_choice"]["rows"]
    assert [r["chosen"] for r in rows] == ["", "chosen"]


def test_spmm_sections_say_where_our_kernel_is_slower(spmm_run, tmp_path):
    section = only_section(spmm_run, figures_dir=tmp_path)
    assert section.title == "SpMM"
    text = texts(section)
    main = text["SpMM: time, bandwidth and % of bound"]
    assert "dlmc-512x1024 k=8 row | spmm-cuda-rowwarp | 0.01 | spmm-torch-i64" in main
    assert ("memory bound = max(compulsory bytes / 4,800 GB/s, gather bytes / 10,000 GB/s)"
            in main)
    assert "slower than the best peer on 1 of 2 cases (dlmc-512x1024 k=64 row)" in main
    ai = text["SpMM: arithmetic intensity against k"]
    assert "| 64 | 1.654 | 20.13 | 12.18 | 8 | 0.4833 |" in ai  # the model test's numbers
    assert "Ridge of H200: 13.9 FLOP/byte" in ai
    assert "SpMM: instruction roofline" not in text  # no profile given


def test_instruction_roofline_section_from_a_real_h200_profile(spmm_run, h200_fixtures,
                                                               tmp_path):
    from sparsescope.profile import load

    profiles = load(h200_fixtures / "ncu_metrics_cant_analog.csv")[:4]
    labels = ["torch-i64 cant: csr_partition_kernel", "torch-i64 cant: csrmv_v3_kernel",
              "torch-i32 cant: csr_partition_kernel", "torch-i32 cant: csrmv_v3_kernel"]
    section = only_section(spmm_run, profiles=profiles, labels=labels, figures_dir=tmp_path)
    roof = texts(section)["SpMM: instruction roofline"]
    # the kernel as code: the name ncu prints
    assert roof.count("`csrmv_v3_kernel`") == 2 and "torch-i32 cant: `csr_partition_kernel`" in roof
    assert "stride-" in roof and "predicated off %" in roof
    assert "132 SMs x 4 inst/cycle" in roof  # ceiling from the profile's own peaks
    assert "H200 datasheet: 4800 GB/s" in roof and "measured 10000 GB/s" in roof
    # one figure per backend, as seed 004 draws one per library
    assert sorted(p.name for p in section.written if "iroofline" in p.name) == [
        "ops_iroofline_torch-i32.png", "ops_iroofline_torch-i64.png"]
    assert "![Instruction roofline: torch-i64](figures/ops_iroofline_torch-i64.png)" in roof
    # csrmv_v3_kernel: 390.6 warp GIPS, thread predication ~11 % of lanes off
    row = next(line for line in roof.splitlines() if "torch-i64 cant: `csrmv_v3" in line)
    assert "| 390.6 |" in row


def test_write_report_from_a_real_cpu_run(tmp_path):
    rng = np.random.default_rng(2)
    csr = sp.random(400, 300, density=0.05, format="csr", random_state=rng)
    csr.sort_indices()
    matrix = Matrix(name="r400", csr=csr, source="test")
    config = TimingConfig(warmups=0, repeats=3, flush_l2=False)
    cases = [run_case(matrix, "spmm-scipy-cpu", "spmm", {"k": k}, config=config)
             for k in (1, 8)]
    cases += [run_case(matrix, "slice-scipy-cpu", "slice", {"rows_selected": 32},
                       config=config),
              run_case(matrix, "spmm-cuda-rowwarp", "spmm", {"k": 8}, config=config)]
    assert [c.outcome for c in cases] == ["ok", "ok", "ok", "skipped"]
    cpu = DeviceSpec(name="cpu", vendor_name="test CPU", kind="cpu", compute_capability="",
                     sm_count=2, max_warps_per_sm=1, max_threads_per_sm=2, max_blocks_per_sm=1,
                     registers_per_sm=0, shared_mem_per_sm_bytes=0, warp_schedulers_per_sm=1,
                     l2_bytes=32 * 2**20, peak_bw_gb_s=12.5, fp32_peak_gflops=150.0,
                     sm_clock_mhz=2450.0, dram_latency_ns=90.0)
    record = MatrixRecord("r400", "test", "uniform", None, compute_stats(csr))
    run = RunSet(run_id="cpu1", suite="files", scale=1.0, provenance=PROVENANCE, device=cpu,
                 ceilings=MeasuredCeilings(device="cpu", copy_bw_gb_s=12.5),
                 timing=config, matrices=(record,), cases=tuple(cases), latency_ns=300.0)
    paths = write_report(run, tmp_path, progress=False)
    markdown = paths.markdown.read_text()
    for title in ("SpMM: time, bandwidth and % of bound", "Slice: which bound the measurements",
                  "SpMM: arithmetic intensity against k", "SpMM: skipped and failed cases",
                  "CSR row slicing: skipped and failed cases"):
        assert title in markdown
    assert "cupy is not installed" in markdown
    # the scatter kernel is found by the kernel it launches, not by a backend's name
    assert "No case launching ``slice_scatter`` was timed in this run" in markdown
    assert "measured no L2" not in markdown
    assert (tmp_path / "figures" / "ops_spmm_roofline.png").is_file()
    assert (tmp_path / "tables" / "ops_spmm.json").is_file()
    assert 'src="data:image/png;base64' in paths.html.read_text()
    # the header names the op and every backend of the run, not the SpMV tables' (none)
    assert markdown.startswith("# SpMM, CSR row slicing performance report")
    assert ("**Backends:** spmm-scipy-cpu, slice-scipy-cpu, spmm-cuda-rowwarp" in markdown)


def _headings(markdown: str) -> list[str]:
    return [line.lstrip("#").strip() for line in markdown.splitlines() if line.startswith("#")]


def test_an_spmm_run_gets_no_spmv_table_and_stale_ones_go(spmm_run, tmp_path):
    import dataclasses
    import json

    first = spmm_run.cases[0]
    cases = (dataclasses.replace(first, measurement=dataclasses.replace(first.measurement,
                                                                        flushed=True)),
             *spmm_run.cases[1:],
             CaseResult("dlmc-512x1024", "spmm-ginkgo", "spmm", "skipped",
                        reason="backend unavailable: pyGinkgo is not installed",
                        params=SpmmParams(k=8, layout="row")))
    run = dataclasses.replace(spmm_run, cases=cases)
    # what an earlier SpMV report of this folder left, and files that are not the report's
    for rel in ("tables/timing.json", "tables/littles_law.json", "tables/outcomes.json",
                "figures/latency_sensitivity.png", "figures/int32_vs_int64.png",
                "figures/ops_iroofline_spmm-cuda-rowwarp.png",  # drawn from profiles then
                "tables/mine.json", "figures/mine.png"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("old")
    paths = write_report(run, tmp_path, progress=False)
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == [
        "device.json", "matrices.json", "mine.json", "ops_spmm.json", "ops_spmm_intensity.json",
        "ops_spmm_peers.json", "ops_spmm_predicted.json", "ops_spmm_profiled.json",
        "provenance.json"]
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == [
        "mine.png", "ops_spmm_roofline.png"]
    # every table and figure of the report is written by write_report itself now
    assert [p.name for p in paths.tables] == [
        "device.json", "matrices.json", "provenance.json", "ops_spmm_predicted.json",
        "ops_spmm.json", "ops_spmm_peers.json", "ops_spmm_intensity.json",
        "ops_spmm_profiled.json"]
    assert [p.name for p in paths.figures] == ["ops_spmm_roofline.png"]
    assert paths.skipped_figures == ()
    md = paths.markdown.read_text()
    assert _headings(md) == [
        "SpMM performance report: NVIDIA H200", "1. Executive summary", "2. Methodology",
        "2.1 Device", "2.2 Timing protocol", "2.3 Matrices",
        "3. SpMM: predicted against measured", "4. SpMM: time, bandwidth and % of bound",
        "5. SpMM: arithmetic intensity against k", "6. SpMM: skipped and failed cases",
        "Appendix: provenance and files"]
    for gone in ("SpMV", "(no rows)", "Little's law", "This run measured", "Byte model",
                 "not drawn", "`tables/timing.json`"):
        assert gone not in md
    # 4 timed (1 flushed) and 1 skipped SpMM case: counted from the whole run, not the
    # (empty) SpMV part
    assert ("- **SpMM:** 5 case(s) on 1 matrices with 4 backend(s): 4 timed, 1 skipped, "
            "0 failed.") in md
    assert "cache flush auto (1 of 4 timed cases flushed)." in md
    assert "- Cache flush between repeats: auto (when the working set fits in the cache); " \
           "flushed in 1 of 4 timed cases" in md
    assert ("> **Measured on** NVIDIA H200, compute capability 9.0; DRAM bounds against "
            "4,800 GB/s (H200 datasheet peak).") in md
    reading = ("No copy bandwidth was measured: the DRAM bounds of this report use 4,800 GB/s "
               "(H200 datasheet peak).")
    assert f"**Reading:** {reading}" in md
    assert json.loads((tmp_path / "tables" / "device.json").read_text())["reading"] == reading
    assert paths.readings["device"] == reading
    page = paths.html.read_text()
    assert "Table 3: Provenance" in page and "Table 4" not in page
    assert "pyGinkgo is not installed" in page


def test_a_run_with_spmv_cases_keeps_the_spmv_sections(spmm_run, tmp_path):
    import dataclasses
    import json

    from sparsescope.ops.params import SpmvParams

    spmv = case("dlmc-512x1024", "torch-cusparse-i32", "spmv", 0.008, SpmvParams())
    run = dataclasses.replace(spmm_run, cases=(*spmm_run.cases, spmv))  # SpMV last in the run
    paths = write_report(run, tmp_path, progress=False)
    md = paths.markdown.read_text()
    headings = _headings(md)
    # one report names every op of the run, in the registry's order
    assert headings[0] == "SpMV, SpMM performance report: NVIDIA H200"
    assert "10. INT32 against INT64 indices" in headings
    assert headings[headings.index("11. Skipped and failed cases") + 1:][:2] == [
        "12. SpMM: predicted against measured", "13. SpMM: time, bandwidth and % of bound"]
    # the SpMV tables hold the SpMV case alone
    timing = json.loads((tmp_path / "tables" / "timing.json").read_text())
    assert [r["backend"] for r in timing["rows"]] == ["torch-cusparse-i32"]
    assert "the 1 timed SpMV case(s) reach" in md
    assert "This run measured" not in md


def test_unprofiled_losses_point_at_the_nearest_profiled_case():
    from sparsescope.report.ops_spmm import unprofiled_losses

    record = MatrixRecord("dlmc-512x1024", "generated", "pruned", "DLMC 1",
                          stats(512, 1024, 157_286))
    k256 = SpmmParams(k=256, layout="row")
    notes = {"grid_blocks": "128", "block_threads": "128", "slices": "512"}
    run = runset([record], [case("dlmc-512x1024", "spmm-cuda-rowwarp", "spmm", 0.0585, k256,
                                 notes=notes),
                            case("dlmc-512x1024", "spmm-torch-i32", "spmm", 0.0315, k256,
                                 notes=notes)])
    views = op_views(run, "spmm")
    peers = [{"case": "dlmc-512x1024 k=256 row", "own_backend": "spmm-cuda-rowwarp",
              "best_peer": "spmm-torch-i32", "speedup_x": 0.54, "at_least_as_fast": False}]
    profiled = [{"case": f"dlmc-512x1024 k={k} row", "backend": b, "kernels": n,
                 "ncu_sum_us": us * n, "main_kernel": name, "main_us": us,
                 "main_grid_blocks": grid, "main_block_threads": 128,
                 "main_achieved_occupancy_pct": occ}
                for k in (8, 64)
                for b, n, name, us, grid, occ in (
                    ("spmm-cuda-rowwarp", 1, "spmm_rowwarp", 15.46, 128, 6.1),
                    ("spmm-torch-i32", 4, "csrmm_alg2_kernel", 13.38, 1639, 43.8))]
    text = unprofiled_losses(peers, views, profiled)
    assert "**dlmc-512x1024 k=256 row** (0.54x): at k=64 (profiled)" in text
    assert "`spmm_rowwarp` alone takes 15.46 µs at 6.1 % achieved occupancy" in text
    assert "`csrmm_alg2_kernel` 13.38 µs at 43.8 % (1639 blocks of 128)" in text
    assert "1 kernel against 4 (53.5 µs in all)" in text
    assert "(128 blocks of 128 threads, 512 warps, one per row slice) with 4x" in text
    # a profiled loss needs no pointer elsewhere
    profiled.append(dict(profiled[0], case="dlmc-512x1024 k=256 row"))
    assert unprofiled_losses(peers, views, profiled) == ""


def test_md_table_formats_numbers_and_gaps():
    # (the device recipes are scripts/device.sh's now: they import sparsescope.api only,
    # tests/test_scripts_public.py)
    from sparsescope.report.ops_common import md_table

    assert md_table(["a", "b"], [[1.23456, None]]) == "| a | b |\n|---|---|\n| 1.235 | – |"


def test_precision_label_names_the_tensor_core_precision_else_the_value_type():
    from sparsescope.report.ops_spmm import precision_label

    assert precision_label({"precision": "3xTF32 (float32 split ...)"}, 4) == "3xTF32"
    assert precision_label({"precision": "TF32 (10-bit mantissa inputs)"}, 4) == "TF32"
    assert precision_label({}, 4) == "float32" and precision_label({}, 8) == "float64"
