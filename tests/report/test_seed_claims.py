"""Seed 000's claims against a run: each checker supported, refuted and untestable on
hand-made runs (the seed's six matrices timed as the seed timed them on an H200)."""

from __future__ import annotations

import dataclasses

import pytest
from prediction_builders import ProfiledCounters, dae_runset, predicted_runset
from report_builders import SEED_MATRICES, make_cpu_runset, make_gpu_runset, samples_around

from sparsescope.model.traffic import Traffic, csr_spmv_traffic
from sparsescope.report.seed_claims import (
    CLAIMS,
    REFUTED,
    SUPPORTED,
    UNTESTABLE,
    claim_inputs,
    cusparse_occupancy_claim,
    dae_gain_claim,
    dependent_chain_claim,
    int32_claim,
    littles_law_claim,
    seed_claims_table,
)
from sparsescope.results.records import CaseCounters, RunSet


def check(checker, runset: RunSet):
    return checker(claim_inputs(runset))


def with_latency(runset: RunSet, latency_ns: float) -> RunSet:
    return dataclasses.replace(runset, ceilings=dataclasses.replace(
        runset.ceilings, dram_latency_ns=latency_ns))


def slower(runset: RunSet, factor: float) -> RunSet:
    cases = tuple(dataclasses.replace(c, measurement=dataclasses.replace(
        c.measurement, samples_ms=tuple(t * factor for t in c.measurement.samples_ms)))
        for c in runset.cases)
    return dataclasses.replace(runset, cases=cases)


def test_cant_fits_in_the_l2_and_tests_no_dram_claim():
    timed = {t.case.matrix: t for t in claim_inputs(make_gpu_runset()).timed}
    assert not timed["cant"].from_dram  # 49.1 MB <= 50 MiB, not flushed
    assert timed["ldoor"].from_dram and round(timed["ldoor"].pct_peak, 1) == 60.8


def test_littles_law_supported_at_the_datasheet_latency():
    v = check(littles_law_claim, make_gpu_runset())
    assert v.verdict == SUPPORTED
    # 4,800 GB/s x 300 ns / 132 SMs / 128 B = 85.2 warps/SM; 64 / 85.2 = 75.1 %
    assert v.evidence == ("H200: 85.2 warps/SM required at 300 ns (datasheet estimate) and "
                          "4,800 GB/s, 64 resident: the 1-line-per-warp ceiling is 75.1 % of "
                          "peak; the fastest case, ldoor [torch-cusparse-i64], reaches 60.8 %, "
                          "at or below it")


def test_littles_law_refuted_at_a_measured_latency():
    # at 400 ns measured: 113.6 warps/SM, ceiling 56.3 %, and ldoor reaches 60.8 %
    v = check(littles_law_claim, with_latency(make_gpu_runset(), 400.0))
    assert v.verdict == REFUTED
    assert "113.6 warps/SM required at 400 ns (measured)" in v.evidence
    # above the ceiling, with its cause: 60.8 / 56.3 = 1.08 lines in flight per warp
    assert ("ldoor [torch-cusparse-i64] reaches 60.8 % by its own bytes: 60.8 % is above the "
            "56.3 % Little's-law ceiling because that ceiling counts one 128-byte line in "
            "flight per resident warp at 400 ns, and 60.8 % takes at least 1.08 lines per "
            "warp") in v.evidence
    assert "estimate" not in v.evidence  # a measured latency: the cause is not blamed on it


def test_warp_claims_are_untestable_on_a_cpu():
    for checker in (littles_law_claim, dependent_chain_claim):
        v = check(checker, make_cpu_runset())
        assert v.verdict == UNTESTABLE
        assert v.evidence.startswith("the cases ran on a CPU (AMD EPYC 7B13 (2 cores))")


def test_dependent_chain_refuted_by_a_case_above_the_halved_ceiling():
    v = check(dependent_chain_claim, predicted_runset())
    assert v.verdict == REFUTED
    assert "the halved (dependent-chain) ceiling is 37.5 % of peak; ldoor " \
           "[torch-cusparse-i64] reaches 60.8 %" in v.evidence
    # pwtk's kernel keeps 256 B per warp in flight over 2 rounds
    assert v.evidence.endswith("1 case(s) run a chain of 2 rounds with more than 64 B in "
                               "flight per warp (most: pwtk [torch-cusparse-i64], 256 B): "
                               "there the chain halves only one line's worth")


def test_dependent_chain_supported_when_every_case_sits_below_it():
    # twice as slow: ldoor at 30.4 %, below the 37.5 % halved ceiling
    v = check(dependent_chain_claim, slower(make_gpu_runset(), 2.0))
    assert v.verdict == SUPPORTED
    assert "ldoor [torch-cusparse-i64], reaches 30.4 %, at or below it" in v.evidence


def test_dae_gain_from_measured_pairs():
    assert check(dae_gain_claim, make_gpu_runset()).verdict == UNTESTABLE
    # gains 1.29 and 0.96: median 1.13, outside 1.3-1.6
    v = check(dae_gain_claim, dae_runset())
    assert v.verdict == REFUTED
    assert v.evidence == ("median measured gain of staging over 2 pair(s): 1.13x; best 1.29x, "
                          "worst none: staged 1.04x slower")
    # gains 0.056 / 0.040 = 1.40 and 0.075 / 0.050 = 1.50: median 1.45
    v = check(dae_gain_claim, dae_runset(cant=(0.040, 0.056), pwtk=(0.050, 0.075)))
    assert v.verdict == SUPPORTED and "1.45x" in v.evidence


def _int32_run(traffic: dict[int, Traffic] | None = None) -> RunSet:
    """The seed run plus torch-cusparse-i32 on cage15 at 0.31 ms (0.4636 ms at INT64)."""
    rs = make_gpu_runset()
    cage = next(c for c in rs.cases if c.matrix == "cage15")
    narrow = dataclasses.replace(cage, backend="torch-cusparse-i32", index_bytes=4,
                                 measurement=dataclasses.replace(
                                     cage.measurement, samples_ms=samples_around(0.31)))
    cases = [*rs.cases, narrow]
    if traffic:
        cases = [dataclasses.replace(c, traffic=traffic[c.index_bytes])
                 if c.matrix == "cage15" else c for c in cases]
    return dataclasses.replace(rs, cases=tuple(cases))


def test_int32_saving_from_the_op_model_bytes():
    _, rows, nnz = next((n, r, z) for n, r, z, *_ in SEED_MATRICES if n == "cage15")
    b64 = csr_spmv_traffic(rows, rows, nnz, index_bytes=8).total_bytes
    b32 = csr_spmv_traffic(rows, rows, nnz, index_bytes=4).total_bytes
    saving = 100 * (1 - b32 / b64)  # 32.6 %
    v = check(int32_claim, _int32_run())
    assert v.verdict == SUPPORTED
    time_saving = 100 * (1 - 0.31 / 0.4636)  # 33.1 %
    assert v.evidence == (f"1 INT32/INT64 pair(s): median byte saving {saving:.1f} % (range "
                          f"{saving:.1f} %), median time saving {time_saving:.1f} %; e.g. "
                          f"cage15 [torch-cusparse]: {saving:.1f} % fewer bytes, "
                          f"{time_saving:.1f} % less time")


def test_int32_refuted_by_declared_bytes_and_untestable_without_pairs():
    def traffic(total: int) -> Traffic:
        return Traffic("test", total, 0, 0, 0, 0, 0)

    v = check(int32_claim, _int32_run({8: traffic(100_000_000), 4: traffic(90_000_000)}))
    assert v.verdict == REFUTED and "median byte saving 10.0 %" in v.evidence
    assert check(int32_claim, make_gpu_runset()).verdict == UNTESTABLE


def _profiled(counters) -> RunSet:
    rs = make_gpu_runset()
    return dataclasses.replace(rs, cases=tuple(dataclasses.replace(c, counters=counters)
                                               for c in rs.cases))


def test_cusparse_occupancy_needs_counters():
    v = check(cusparse_occupancy_claim, make_gpu_runset())
    assert v.verdict == UNTESTABLE
    assert v.evidence == ("no cuSPARSE case carries profiler counters (achieved occupancy, "
                          "block size)")
    v = check(cusparse_occupancy_claim, _profiled(CaseCounters(achieved_occupancy_pct=48.0)))
    assert v.verdict == SUPPORTED
    assert v.evidence == ("6 profiled cuSPARSE case(s): achieved occupancy 48 %, block size "
                          "not recorded")
    v = check(cusparse_occupancy_claim, _profiled(ProfiledCounters(achieved_occupancy_pct=47.0,
                                                                    block_size=256)))
    assert v.verdict == REFUTED and v.evidence.endswith("block size 256 threads")
    v = check(cusparse_occupancy_claim, _profiled(CaseCounters(achieved_occupancy_pct=90.0)))
    assert v.verdict == REFUTED


def test_the_claims_table_has_one_row_per_checker():
    t = seed_claims_table(make_gpu_runset())
    assert [r.claim for r in t.rows] == [checker(claim_inputs(make_gpu_runset())).claim
                                         for checker in CLAIMS]
    assert [r.verdict for r in t.rows] == [SUPPORTED, REFUTED, UNTESTABLE, UNTESTABLE,
                                           UNTESTABLE]
    assert t.reading == "Of seed 000's 5 claims this run supports 1, refutes 1 and cannot test 3."
    assert [c.key for c in t.columns] == ["claim", "verdict", "evidence"]


@pytest.mark.parametrize("checker", CLAIMS)
def test_every_claim_is_untestable_without_a_timed_case(checker):
    rs = make_cpu_runset()
    empty = dataclasses.replace(rs, cases=tuple(c for c in rs.cases if c.outcome != "ok"))
    assert check(checker, empty).verdict == UNTESTABLE
