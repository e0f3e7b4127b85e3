"""Diagnosis rules on real H200 profiles (tests/fixtures/h200), numbers checked against the
recorded counters."""

from __future__ import annotations

import pytest
from _analyze_helpers import SCALAR_IDEAL_BYTES

from sparsescope.analyze.api import analyze_evidence
from sparsescope.analyze.bound import bottleneck
from sparsescope.analyze.sources import evidence_from_profile_file, listing_from_samples


@pytest.fixture(scope="module")
def scalar(scalar_evidence):
    return analyze_evidence(scalar_evidence)


def rule(result, name, kernel=None):
    found = [f for f in result.findings if f.rule == name and (kernel is None or
                                                                f.kernel == kernel)]
    assert found, f"{name} not found; found {[f.rule for f in result.findings]}"
    return found[0]


def test_scalar_device_chain_and_long_scoreboard(scalar):
    chain = rule(scalar, "dependent_load_chain")
    assert chain.basis == "static+profile" and chain.severity == "high"
    assert chain.numbers["max_chain_depth"] == 3          # rowptr -> col -> x
    assert chain.numbers["chained_loads_in_loop"] > 0
    stall = rule(scalar, "dominant_stall")
    # source page: 1524 long-scoreboard samples of 2281 non-"selected" samples
    assert stall.numbers["reason"] == "long_scoreboard"
    assert stall.numbers["pct_of_samples"] == pytest.approx(100 * 1524 / 2281, abs=0.01)
    assert stall.numbers["second_reason"] == "lg_throttle"
    assert stall.locations[0].detail == "255 Long Scoreboard samples"  # as ncu names it


def test_scalar_device_uncoalesced_from_source_counters(scalar):
    f = rule(scalar, "uncoalesced_access")
    assert f.basis == "profile"
    # val[j] and col[j] with 16 nonzeros per row and one row per thread: every lane its own
    # sector, 131072 sectors per 16384 ideal
    assert f.numbers["worst_sectors_ratio"] == 8.0
    assert "32.0 sectors/request, ideal 4.0 (8.0x)" in f.locations[0].detail
    assert f.numbers["excess_sectors"] == 6342770 - 835584


def test_scalar_device_overfetch_numbers(scalar):
    f = rule(scalar, "overfetch")
    # (ld 6,326,386 + st sectors) x 32 against the ideal bytes
    assert f.numbers["ideal_bytes"] == SCALAR_IDEAL_BYTES
    assert f.numbers["requested_bytes"] == 32 * (6326386 + 16384)
    assert f.numbers["overfetch"] == round(32 * (6326386 + 16384) / SCALAR_IDEAL_BYTES, 3)
    assert f.numbers["dram_bytes"] == 17832192
    assert f.locations and "excess sectors" in f.locations[0].detail


def test_scalar_device_too_few_blocks(scalar):
    f = rule(scalar, "too_few_blocks")
    # 512 blocks of 256 threads; 8 blocks/SM x 132 SMs = 1056 slots
    assert (f.numbers["grid_blocks"], f.numbers["block_slots"]) == (512, 1056)
    assert f.numbers["waves"] == round(512 / 1056, 3)


def test_scalar_device_bound_by_l2(scalar_evidence):
    b = bottleneck(scalar_evidence, scalar_evidence.kernels[0])
    assert b.bound == "bandwidth" and b.reason.startswith("L2 at 71.4 %")
    assert b.numbers["achieved_bw_gb_s"] == round(17832192 / 21.28e-6 / 1e9, 1)
    assert b.numbers["required_warps_per_sm"] == 85.2  # 4800 GB/s x 300 ns / 132 / 128 B


def test_cant_csrmv_occupancy_limited_by_registers(cant_csv):
    ev = evidence_from_profile_file(cant_csv, launch=1)
    f = rule(analyze_evidence(ev), "low_occupancy")
    assert f.numbers["limiter"] == "registers"
    assert f.numbers["theoretical_occupancy_pct"] == 50.0
    assert (f.numbers["blocks_by_registers"], f.numbers["blocks_by_warps"]) == (2, 4)
    assert f.numbers["registers"] == 47 and f.numbers["block_threads"] == 512
    b = bottleneck(ev, ev.kernels[0])
    assert b.bound == "latency"


def test_cant_partition_kernel_too_few_blocks(cant_csv):
    result = analyze_evidence(evidence_from_profile_file(cant_csv, launch=0))
    f = rule(result, "too_few_blocks")
    assert f.numbers["grid_blocks"] == 6 and f.severity == "high"
    item = next(it for it in result.roadmap if it.rule == "too_few_blocks")
    # 6 of 1056 slots would predict 176x; the 2 us minimum kernel time caps it at 8.352 / 2
    assert item.kernel_speedup == pytest.approx(8.352 / 2.0, rel=1e-6)


def test_divergence_from_branch_efficiency(h200_fixtures):
    ev = evidence_from_profile_file(h200_fixtures / "spmv_full_raw.csv",
                                    kernel="spmv_csr_scalar")
    result = analyze_evidence(ev)
    f = rule(result, "warp_divergence")
    assert f.numbers["branch_efficiency_pct"] == 53.85
    assert f.numbers["divergent_branches"] == 11711 and f.severity == "high"
    assert rule(result, "uncoalesced_access").numbers["kernel_sectors_ratio"] == \
        round(9098844 / 1605863, 3)


def test_uniform_branches_not_divergent(scalar):
    # scalar_device has 16 nonzeros in every row: per-row trip counts agree within a warp
    assert "warp_divergence" not in {f.rule for f in scalar.findings}


def test_report_without_csv_uses_its_own_sass(h200_fixtures):
    ev = evidence_from_profile_file(h200_fixtures / "spmv_full.ncu-rep")
    names = [k.name for k in ev.kernels]
    assert names == ["csrmv_v3_kernel", "spmv_csr_scalar"]
    scalar = ev.kernels[1]
    assert scalar.static is not None and scalar.static.max_chain_depth == 3
    assert sum(k.time_share for k in ev.kernels) == pytest.approx(1.0)
    result = analyze_evidence(ev)
    assert rule(result, "bank_conflicts", "csrmv_v3_kernel").numbers[
        "shared_load_ways"] == pytest.approx(1.97, abs=0.01)


def test_listing_from_samples_rebases_branch_targets(h200_fixtures):
    from sparsescope.profile.read_csv import load_instruction_samples_csv

    rows = load_instruction_samples_csv(h200_fixtures / "scalar_source_sass.csv")[0]
    listing = listing_from_samples(rows, "spmv_csr_scalar")
    assert listing.instructions[0].address == 0
    bra = next(i for i in listing.instructions if i.address == 0x110)
    assert bra.text == "@!P0 BRA 0xf00" and bra.branch_target == 0xF00


def test_analysis_json_round_trip(cant_csv, h200_fixtures):
    import json

    from sparsescope.analyze.api import analysis_from_dict, analysis_to_dict

    for ev in (evidence_from_profile_file(cant_csv, launch=1),
               evidence_from_profile_file(h200_fixtures / "spmv_full.ncu-rep")):
        result = analyze_evidence(ev)
        back = analysis_from_dict(json.loads(json.dumps(analysis_to_dict(result))))
        assert back.evidence == result.evidence
        assert back.findings == result.findings and back.roadmap == result.roadmap
    # a number a profile lacks is kept as null (no PC samples in a metric-group run)
    stall = rule(analyze_evidence(evidence_from_profile_file(cant_csv, launch=1)),
                 "dominant_stall")
    assert stall.numbers["pct_of_samples"] is None
