"""Ceilings, Little's law, DAE, the extended instruction roofline, the FLOP/byte roofline and the
hottest instructions, on the H200 fixtures, against values computed by hand from the exports."""

from __future__ import annotations

import shutil

import pytest

from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.profile import ceilings as C
from sparsescope.profile import classic_roofline as K
from sparsescope.profile import instruction_roofline as R
from sparsescope.profile import latency as L
from sparsescope.profile.hotspots import (
    instruction_data,
    kernel_hotspots,
    listing_from_rows,
    sibling_exports,
)
from sparsescope.profile.section import load_inputs
from sparsescope.report.profile_render import build_section

MEASURED = MeasuredCeilings(device="NVIDIA H200", read_bw_gb_s=4414.5, copy_bw_gb_s=4221.2,
                            l2_bw_gb_s=8166.1, dram_latency_ns=342.7, fp32_gflops=60379.3,
                            method={"read_bw_gb_s": "float4 read over 1 GiB"})
SPEC_CEILINGS = C.RooflineCeilings(
    device="NVIDIA H200", sm_count=132, max_warps_per_sm=64,
    dram_gb_s=C.Ceiling(4800.0, "spec", "datasheet"),
    dram_latency_ns=C.Ceiling(300.0, "spec", "seed estimate"))


def test_spec_ceilings_follow_seed_004_formulas():
    rc = C.from_spec(get_spec("H200"))
    assert rc.warp_gips.value == pytest.approx(132 * 4 * 1.98)        # 1,045.44 GIPS
    assert rc.l1_gb_s.value == pytest.approx(132 * 128 * 1.98)        # 33,454 GB/s
    assert rc.shared_gb_s.value == rc.l1_gb_s.value
    assert (rc.dram_gb_s.value, rc.fp32_gflops.value, rc.dram_latency_ns.value) == (
        4800.0, 66900.0, 300.0)
    assert rc.l2_gb_s is None and rc.kinds() == {"spec"}
    inst = R.instruction_ceilings(rc)
    assert inst.dram_gtxn_s == pytest.approx(4800 / 32)                 # 150 G sectors/s
    assert inst.shared_gtxn_s == pytest.approx(132 * 1.98)              # 1 wavefront/SM/cycle
    assert inst.kinds["peak_warp_gips"] == "spec"


def test_measured_first_then_spec_then_ncu_peak(full_report):
    rc = C.resolve_ceilings(full_report, measured=MEASURED)
    assert (rc.dram_gb_s.value, rc.dram_gb_s.kind) == (4414.5, "measured")  # read, not copy
    assert rc.dram_gb_s.source == "DRAM read bandwidth: float4 read over 1 GiB"
    assert (rc.l2_gb_s.kind, rc.fp32_gflops.kind, rc.dram_latency_ns.kind) == ("measured",) * 3
    assert (rc.warp_gips.kind, rc.l1_gb_s.kind) == ("spec", "spec")
    # nothing in the spec table for FP64: ncu's DFMA peak x 2 x the SM clock of launch 0
    assert rc.fp64_gflops.kind == "ncu peak"
    assert rc.fp64_gflops.value == pytest.approx(8448 * 2 * 1.462575104493208, rel=1e-9)
    assert (rc.sm_count, rc.max_warps_per_sm) == (132, 64)
    # measured ceilings of another GPU say nothing about this one
    other = MeasuredCeilings(device="NVIDIA A100-SXM4-80GB", read_bw_gb_s=1800.0)
    assert C.resolve_ceilings(full_report, measured=other).dram_gb_s.value == 4800.0
    copy_only = MeasuredCeilings(device="NVIDIA H200", copy_bw_gb_s=4221.2)
    assert C.from_measured(copy_only).dram_gb_s.source == (
        "DRAM copy bandwidth (read + write counted)")


def test_ceilings_from_the_results_store(full_report, tmp_path, monkeypatch):
    from pathlib import Path

    from sparsescope.results.io import read_runset
    from sparsescope.results.store import ResultsStore

    runset = read_runset(Path(__file__).resolve().parents[2] / "results" / "h200" / "seed6"
                         / "results.json")          # a real H200 run with measured ceilings
    store = ResultsStore(tmp_path / "store.sqlite")
    assert C.measured_from_store("NVIDIA H200", store) is None
    store.append(runset)
    assert C.measured_from_store("NVIDIA H200", store) == runset.ceilings
    assert C.measured_from_store("NVIDIA B200", store) is None
    monkeypatch.setenv("SPARSESCOPE_STORE", str(store.path))
    rc = C.resolve_ceilings(full_report, use_store=True)
    assert rc.dram_latency_ns.value == runset.ceilings.dram_latency_ns
    assert rc.dram_latency_ns.kind == "measured"
    assert C.resolve_ceilings(full_report).dram_latency_ns.kind == "spec"   # store not asked


def test_instruction_roofline_thread_level_and_shared(full_report):
    p = R.roofline_point(full_report[0])          # csrmv_v3_kernel, spmv_full_raw.csv ID 0
    warp, threads, pred_on = 9686028, 304759257, 276473253
    assert p.thread_gips == pytest.approx(threads / 32 / 27840)
    assert p.active_lanes_pct == pytest.approx(100 * threads / (32 * warp))    # 98.3 %
    assert p.predicated_on_pct == pytest.approx(100 * pred_on / (32 * warp))   # 89.2 %
    assert p.shared_instructions == 207458 + 180064
    assert p.shared_wavefronts == 408645 + 190186
    assert p.shared_intensity == pytest.approx(387522 / 598831)     # 1.55 wavefronts per inst
    assert p.shared_gips == pytest.approx(387522 / 27840)
    scalar = R.roofline_point(full_report[3])
    assert scalar.shared_intensity is None and scalar.shared_gips is None   # no shared memory


def test_classic_roofline_counts_fma_twice(full_report):
    point = K.classic_point(full_report[3], "scalar")    # spmv_csr_scalar: one FFMA per nonzero
    assert point.precision == "fp32"
    assert point.flops == pytest.approx(2 * 4007383, rel=1e-6)   # the cant analog's nnz
    assert point.gflops == pytest.approx(point.flops / 23616)
    assert point.l1_bytes == 32 * (9091037 + 7807)
    assert point.l2_bytes == 32 * 1695980                    # lts__t_sectors.sum (full set)
    assert point.dram_bytes == 32 * (1019472 + 24824)
    assert point.dram_ai == pytest.approx(point.flops / point.dram_bytes)
    # cuSPARSE multiplies and adds separately: FMUL + FADD, no FFMA
    v3 = K.classic_point(full_report[0])
    assert v3.flops == pytest.approx(5890433 + 8014766, rel=1e-6)
    assert K.flop_count(full_report[0], "fp64") == 0.0
    assert K.classic_roofline([full_report[0], full_report[3]], ["a", "b"])[1].kernel == "b"


def test_littles_law_at_measured_occupancy(full_report):
    check = L.littles_law_check(full_report[3], SPEC_CEILINGS, "scalar")
    required = 4800e9 * 300e-9 / 132 / 128                       # 85.2 warps/SM (seed 5.3)
    active = 14.504446223148705                                  # sm__warps_active per cycle
    achieved = (32623104 + 794368) / 23616                       # 1,415 GB/s
    assert check.required_warps_per_sm == pytest.approx(required)
    assert check.ceiling_pct == pytest.approx(100 * active / required)          # 17.0 %
    assert check.chain_ceiling_pct == pytest.approx(100 * active / 2 / required)
    assert check.achieved_gb_s == pytest.approx(achieved)
    assert check.achieved_pct == pytest.approx(100 * achieved / 4800)           # 29.5 %
    assert check.lines_in_flight_per_warp == pytest.approx(achieved * 300 / 132 / 128 / active)
    assert check.verdict.startswith("at the ceiling")
    no_latency = C.RooflineCeilings(device="x", sm_count=132, dram_gb_s=SPEC_CEILINGS.dram_gb_s)
    assert L.littles_law_check(full_report[3], no_latency) is None


def test_dae_estimates_cpi_and_bandwidth(full_report):
    est = L.dae_estimate(full_report[3], SPEC_CEILINGS, "scalar")
    cpi, lsb = 50.98899533884561, 38.344883158742945
    assert est.cpi_speedup == pytest.approx(cpi / (cpi - lsb))                  # 4.03x
    achieved_pct = 100 * (32623104 + 794368) / 23616 / 4800
    ceiling = 100 * 64 / (4800e9 * 300e-9 / 132 / 128)                          # 75.1 %
    assert est.bw_ceiling_pct == pytest.approx(ceiling)
    assert est.bw_speedup == pytest.approx(2.0) and est.limited_by == "mlp_gain"
    assert est.achieved_pct == pytest.approx(achieved_pct)


def test_hotspots_from_report_per_pc_data(full_report, h200_fixtures):
    data = instruction_data(h200_fixtures / "spmv_full.ncu-rep", full_report)
    assert set(data) == {(str(h200_fixtures / "spmv_full.ncu-rep"), i) for i in range(4)}
    hot = kernel_hotspots(data[(full_report[3].source, 3)], label="scalar",
                          profile=full_report[3], top=3)
    assert hot.total_samples == 1873 and hot.reason_totals["Long Scoreboard"] == 1444
    first = hot.rows[0]
    assert (first.offset, first.sass, first.samples) == (0x990, "FFMA R21, R22, R6, R21", 192)
    assert first.dominant_reason == "Long Scoreboard" and first.role == "uses chain load"
    assert first.pct_of_samples == pytest.approx(100 * 192 / 1873)
    assert hot.load_chains > 0 and 0 < hot.chain_samples <= hot.total_samples


def test_hotspots_from_source_page_beside_raw_csv(h200_fixtures, tmp_path):
    for page, name in (("raw", "scalar_raw.csv"), ("details", "scalar_details.csv"),
                       ("source", "scalar_source_sass.csv")):
        shutil.copy(h200_fixtures / name, tmp_path / f"scalar_{page}.csv")
    raw = tmp_path / "scalar_raw.csv"
    assert sibling_exports(raw) == (tmp_path / "scalar_details.csv",
                                    tmp_path / "scalar_source.csv")
    inputs = load_inputs([raw])
    assert len(inputs.files) == 3 and inputs.profiles[0].rules      # details picked up
    kernel = inputs.instructions[(str(raw), inputs.profiles[0].index)]
    column = [r.samples for r in kernel.rows]
    assert sum(column) == 2298            # the export's Warp Stall Sampling (All Samples)
    listing = listing_from_rows(kernel)
    branch = next(i for i in listing.instructions if i.address == 0x110)
    assert branch.text == "@!P0 BRA 0xf00" and branch.branch_target == 0xF00
    section = build_section(inputs, labels=["scalar"])
    assert "**scalar**: 2,298 warp-stall samples (Long Scoreboard 66%" in section.markdown
    assert "| `0x0970` | `FFMA R21, R8, R24, R21` | 255 | 11.1% | Long Scoreboard |" in (
        section.markdown)


def test_repeated_source_blocks_are_one_launch(h200_fixtures, tmp_path):
    """ncu 2025.3 wrote each cuSPARSE launch's block twice in a row on the H200 run: blocks
    A, A, B, B of two launches must map to A and B, not both to the first block named so."""
    import csv

    text = (h200_fixtures / "scalar_source_sass.csv").read_text().rstrip("\n") + "\n"
    rows = list(csv.reader(text.splitlines()))
    first = next(i for i, r in enumerate(rows) if r and r[0].startswith("0x"))
    col = rows[1].index("Warp Stall Sampling (All Samples)")
    rows[first][col] = str(int(rows[first][col]) + 1000)      # launch B: 1000 more samples
    lines = []
    csv.writer(_Lines(lines), quoting=csv.QUOTE_ALL).writerows(rows)
    second = "".join(lines)
    source = tmp_path / "two_source.csv"
    source.write_text(text + text + second + second)
    raw_lines = (h200_fixtures / "scalar_raw.csv").read_text().rstrip("\n").splitlines()
    launch = next(ln for ln in raw_lines if ln.startswith('"0"'))
    raw = tmp_path / "two_raw.csv"
    raw.write_text("\n".join(raw_lines + ['"1"' + launch[3:]]) + "\n")
    profiles = load_inputs([raw]).profiles
    assert [p.index for p in profiles] == [0, 1]
    data = instruction_data(raw, profiles, source)
    totals = [sum(r.samples for r in data[(str(raw), i)].rows) for i in (0, 1)]
    assert totals == [2298, 3298]


class _Lines:
    def __init__(self, out):
        self.out = out

    def write(self, text):
        self.out.append(text)
