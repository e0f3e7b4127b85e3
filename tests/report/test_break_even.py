"""The dense break-even (``report.break_even``) on hand-built SpMM runs: the per-matrix ratio
and verdict, which cases count as the best sparse one, the crossing density and its honesty
(too few points, no rise, a non-monotone bracket), the SpMM section's part and the collection
report's, and the dense peer kept out of the sparse-library comparisons."""

from __future__ import annotations

import json
import math

import pytest
from report_builders import h200_spec, provenance, stats

from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.ops.params import SpmmParams
from sparsescope.report.break_even import (
    BreakEvenRow,
    break_even_rows,
    crossing,
    crossings,
    dense_without_sparse,
    log_log_fit,
)
from sparsescope.report.collection import write_collection_report
from sparsescope.report.sections import SectionInputs, op_sections
from sparsescope.report.write import write_report
from sparsescope.results.records import CaseResult, Correctness, MatrixRecord, RunSet
from sparsescope.timing.types import Measurement, TimingConfig

DENSE = "spmm-cublas-dense"
TF32 = "spmm-cublas-dense[math=tf32]"
K8 = SpmmParams(k=8, layout="row")
#: name -> nnz of a 1,000 x 1,000 matrix: densities 0.001, 0.01, 0.1, 0.5.
NNZ = {"m-0.001": 1_000, "m-0.01": 10_000, "m-0.1": 100_000, "m-0.5": 500_000}
#: name -> the best sparse time, 5 x density x the dense FP32 time (ms).
BEST_MS = {"m-0.001": 0.0005, "m-0.01": 0.005, "m-0.1": 0.05, "m-0.5": 0.25}
DENSE_FP32_MS, DENSE_TF32_MS = 0.1, 0.05


def case(matrix, backend, ms, params=K8, value_bytes=4, precision=None) -> CaseResult:
    notes = {"precision": precision} if precision else {}
    return CaseResult(matrix=matrix, backend=backend, op="spmm", outcome="ok",
                      value_bytes=value_bytes, params=params, notes=notes,
                      measurement=Measurement(samples_ms=(ms,), config=TimingConfig(
                          clock="cuda-events"), clock="cuda-events"),
                      correctness=Correctness(rel_err=1e-7, tolerance=1e-5))


def records() -> dict[str, MatrixRecord]:
    return {n: MatrixRecord(n, "generated", "pruned", None, stats(1000, 1000, z))
            for n, z in NNZ.items()}


def pruned_cases() -> list[CaseResult]:
    """Best sparse = 5 x density x the dense FP32 time: ratios 0.005, 0.05, 0.5, 2.5 (FP32) and
    twice that against TF32; around them, cases that must not count as the best sparse one."""
    cases = []
    for name, best in BEST_MS.items():
        cases += [case(name, "spmm-cuda-rowgroup", best),
                  case(name, "spmm-torch-i32", best * 1.5),
                  # faster, but plain TF32 products or float64: not a float32-accurate peer
                  case(name, "spmm-cuda-blocktc[passes=1]", best / 4,
                       precision="TF32 (10-bit mantissa inputs, float32 accumulation)"),
                  case(name, "spmm-cuda-rowwarp", best / 3, value_bytes=8),
                  case(name, DENSE, DENSE_FP32_MS, precision="float32 (IEEE products)"),
                  case(name, TF32, DENSE_TF32_MS, precision="TF32 (tensor cores)")]
    return cases


def test_rows_ratios_and_verdicts_by_hand():
    rows = {r.matrix: r for r in break_even_rows(pruned_cases(), records())}
    assert list(rows) == list(NNZ)
    low, high = rows["m-0.001"], rows["m-0.5"]
    assert (low.density, low.sparse_backend, low.sparse_own) == (0.001, "spmm-cuda-rowgroup",
                                                                 True)
    assert low.sparse_ms == pytest.approx(0.0005)
    assert (low.dense_fp32_ms, low.dense_tf32_ms) == (0.1, 0.05)
    assert low.ratio("fp32") == pytest.approx(0.005) and low.ratio("tf32") == pytest.approx(0.01)
    assert high.ratio("fp32") == pytest.approx(2.5) and high.ratio("tf32") == pytest.approx(5.0)
    assert low.verdict() == "sparse pays (FP32); sparse pays (TF32)"
    assert high.verdict() == "dense wins (FP32); dense wins (TF32)"
    assert rows["m-0.1"].ratio("tf32") == 1.0  # even: the dense call is as fast
    assert rows["m-0.1"].verdict() == "sparse pays (FP32); dense wins (TF32)"


def test_a_ratio_of_exactly_one_is_dense_winning():
    row = BreakEvenRow("m", 8, "row", 10, 10, 50, 0.5, "s", True, 0.2, 0.2, None)
    assert row.verdict() == "dense wins (FP32)" and row.ratio("tf32") is None


def test_log_log_fit_by_hand():
    # X = -3, -2, -1; Y = -2, -1, log10(0.5): S_xx = 2, S_xy = 1.69897 -> b = 0.849485,
    # a = mean(Y) - b mean(X) = -1.100343 + 1.698970 = 0.598627; SS_res 0.015103 of
    # SS_tot 1.458353 -> R^2 0.989644; crossing 10^(-a/b) = 10^-0.704693 = 0.19738
    a, b, r2 = log_log_fit([(0.001, 0.01), (0.01, 0.1), (0.1, 0.5)])
    assert (a, b, r2) == pytest.approx((0.598627, 0.849485, 0.989644), abs=2e-6)
    assert 10 ** (-a / b) == pytest.approx(0.19738, abs=1e-5)
    assert log_log_fit([(0.01, 0.1), (0.1, 1.0), (1.0, 10.0)]) == pytest.approx((1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="two distinct densities"):
        log_log_fit([(0.1, 1.0), (0.1, 2.0)])


def test_crossings_of_the_pruned_run_by_hand():
    rows = break_even_rows(pruned_cases(), records())
    fp32, tf32 = crossings(rows)
    # FP32: log10(ratio) = log10(5) + log10(density): crossing at 1/5
    assert (fp32.k, fp32.layout, fp32.math, fp32.matrices) == (8, "row", "fp32", 4)
    assert fp32.slope == pytest.approx(1.0) and fp32.intercept == pytest.approx(math.log10(5))
    assert fp32.r2 == pytest.approx(1.0) and fp32.density == pytest.approx(0.2)
    assert not fp32.extrapolated
    assert (fp32.sparse_pays_up_to, fp32.dense_wins_from) == (0.1, 0.5)
    assert fp32.reading.startswith("sparse stops paying at density 0.2 (log-log fit over 4 "
                                   "matrices, slope 1.00, R² 1.00). Measured: sparse pays up "
                                   "to density 0.1, dense wins from 0.5.")
    # TF32 (twice as fast): crossing at 1/10, where a matrix measured 1.0 (dense wins)
    assert tf32.density == pytest.approx(0.1) and tf32.dense_wins_from == 0.1
    assert tf32.sparse_pays_up_to == 0.01


def test_too_few_points_no_rise_and_an_overlap_are_said_so():
    def row(name, density, ratio):
        return BreakEvenRow(name, 8, "col", 100, 100, int(density * 1e4), density, "s", True,
                            ratio, 1.0, None)

    two = crossing([row("a", 0.01, 0.1), row("b", 0.1, 2.0)], 8, "col", "fp32")
    assert two.density is None and two.slope is None
    assert two.reading == ("2 matrices of distinct density: too few for a fit (3 needed). "
                           "Measured: sparse pays up to density 0.01, dense wins from 0.1.")
    falling = crossing([row("a", 0.01, 2.0), row("b", 0.1, 1.5), row("c", 0.5, 0.5)],
                       8, "col", "fp32")
    assert falling.density is None and falling.slope < 0
    assert falling.reading.startswith("the ratio does not rise with density")
    assert falling.reading.endswith("Measured: sparse pays at density 0.5 while dense "
                                    "already wins at 0.01: density alone does not decide.")
    cheap = crossing([row("a", 0.001, 0.002), row("b", 0.01, 0.02), row("c", 0.1, 0.2)],
                     8, "col", "fp32")  # ratio = 2 x density: crosses 1 at 0.5, unmeasured
    assert cheap.density == pytest.approx(0.5) and cheap.extrapolated
    assert cheap.reading.startswith("sparse stops paying at density 0.5 (log-log fit over 3 "
                                    "matrices, slope 1.00, R² 1.00, extrapolated beyond the "
                                    "densities measured (0.001-0.1)).")
    far = crossing([row("a", 0.001, 0.0001), row("b", 0.01, 0.001), row("c", 0.1, 0.01)],
                   8, "col", "fp32")  # ratio = density / 10: beyond a full matrix
    assert far.density == pytest.approx(10.0) and far.extrapolated
    assert far.reading.startswith("the fit stays below 1 up to a full matrix")
    assert "Sparse pays on every matrix measured (up to density 0.1)." in far.reading


def test_groups_without_a_pair_are_counted_not_shown():
    cases = [case("m-0.01", DENSE, 0.1), case("m-0.1", "spmm-torch-i32", 0.2),
             case("m-0.5", DENSE, 0.1),
             case("m-0.5", "spmm-cuda-rowwarp", 0.05, value_bytes=8)]
    assert break_even_rows(cases, records()) == []
    assert dense_without_sparse(cases) == 2


def runset(cases) -> RunSet:
    return RunSet(run_id="r", suite="pruned", scale=1.0,
                  provenance=provenance("NVIDIA H200", "sparsescope run --op spmm"),
                  device=h200_spec(), ceilings=MeasuredCeilings(device="NVIDIA H200"),
                  timing=TimingConfig(clock="cuda-events"), matrices=tuple(records().values()),
                  cases=tuple(cases), latency_ns=300.0)


def test_the_spmm_section_shows_the_break_even_and_keeps_dense_out_of_the_peers(tmp_path):
    run = runset(pruned_cases())
    (section,) = op_sections(run, SectionInputs(figures_dir=tmp_path / "figures"))
    texts = {h: "".join(b.text for b in blocks) for h, blocks in section.body}
    text = texts["SpMM: the dense break-even"]
    assert ("| m-0.001 | 8 | row | 0.001 | spmm-cuda-rowgroup | 0.0005 | 0.1 | 0.005 | 0.05 | "
            "0.01 | sparse pays (FP32); sparse pays (TF32) |") in text
    assert ("sparse pays on 3 of 4 (matrix, k, layout) against dense FP32; sparse pays on 2 "
            "of 4 (matrix, k, layout) against dense TF32.") in text
    assert "| 8 | row | FP32 | 4 | 1.00 | 1.00 | 0.2 | sparse stops paying" in text
    assert (tmp_path / "figures" / "ops_spmm_break_even.png").stat().st_size > 1000
    peers = section.tables["ops_spmm_peers"]["rows"]
    assert peers and all(not r["best_peer"].startswith(DENSE) for r in peers)
    assert {r["best_peer"] for r in peers} == {"spmm-torch-i32"}
    rows = section.tables["ops_spmm_break_even"]["rows"]
    assert [r["ratio_fp32"] for r in rows] == pytest.approx([0.005, 0.05, 0.5, 2.5])
    fits = section.tables["ops_spmm_break_even_crossing"]["rows"]
    assert [(f["math"], round(f["density"], 6)) for f in fits] == [("fp32", 0.2), ("tf32", 0.1)]


def test_a_report_without_a_dense_case_has_no_break_even(tmp_path):
    run = runset([c for c in pruned_cases() if not c.backend.startswith(DENSE)])
    write_report(run, tmp_path, progress=False)
    assert "dense break-even" not in (tmp_path / "report.md").read_text()
    assert not (tmp_path / "tables" / "ops_spmm_break_even.json").exists()
    assert not (tmp_path / "figures" / "ops_spmm_break_even.png").exists()


def test_the_collection_report_gives_each_matrix_and_the_crossing(tmp_path):
    paths = write_collection_report(runset(pruned_cases()), tmp_path)
    md = paths.markdown.read_text()
    assert "## Dense break-even" in md and "### Where sparse stops paying" in md
    assert ("| [m-0.5](matrices/m-0.5.md) | 8 | row | 0.5 | spmm-cuda-rowgroup | 0.25 | 0.1 | "
            "2.500 | 0.05 | 5.000 | dense wins (FP32); dense wins (TF32) |") in md
    data = json.loads((tmp_path / "tables" / "collection_break_even.json").read_text())
    assert [r["verdict"].split(" (")[0] for r in data["rows"]] == [
        "sparse pays", "sparse pays", "sparse pays", "dense wins"]
    assert data["crossings"][0]["density"] == pytest.approx(0.2)
    assert (tmp_path / "figures" / "collection_break_even.png").stat().st_size > 1000
    # the best library of the main table is the sparse one, never the dense baseline
    matrices = json.loads((tmp_path / "tables" / "collection_matrices.json").read_text())
    assert {r["library_backend"] for r in matrices["rows"]} == {"spmm-torch-i32"}
    # a sweep without dense cases: no break-even part, its files removed
    write_collection_report(runset([c for c in pruned_cases()
                                    if not c.backend.startswith(DENSE)]), tmp_path)
    assert "Dense break-even" not in paths.markdown.read_text()
    assert not (tmp_path / "tables" / "collection_break_even.json").exists()
    assert not (tmp_path / "figures" / "collection_break_even.png").exists()
