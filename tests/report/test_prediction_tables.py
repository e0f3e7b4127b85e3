"""Predicted against measured time: the rows, the signed errors and their summary, the
"not modelled" and "model defect" texts, the "why" column from counters or from the limiter,
the scatter, the SpMM section's part and the whole report's order of sections."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from prediction_builders import (
    ProfiledCounters,
    dae_runset,
    predicted_runset,
    prediction,
)
from report_builders import SEED_TIMES_MS, make_gpu_runset

from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices.types import MatrixStats
from sparsescope.ops.params import SpmmParams
from sparsescope.report.prediction_tables import (
    draw_predictions,
    percentile,
    prediction_rows,
    prediction_table,
    summarize,
    why_text,
)
from sparsescope.report.sections import SectionInputs, op_sections
from sparsescope.report.write import write_report
from sparsescope.results.records import CaseResult, Correctness, MatrixRecord, RunSet
from sparsescope.timing.types import Measurement, TimingConfig


def err(predicted: float, measured: float) -> float:
    return (measured - predicted) / measured * 100


@pytest.fixture()
def rows():
    return {r.matrix: r for r in prediction_rows(predicted_runset())}


def test_percentile_interpolates_between_ranks():
    assert percentile([40.0, 10.0, 30.0, 20.0], 90) == pytest.approx(37.0)
    assert percentile([10.0, 20.0, 30.0], 50) == 20.0
    assert percentile([], 90) is None


def test_rows_carry_signed_errors_and_limiters(rows):
    assert rows["cant"].error_pct == pytest.approx(10.0, abs=1e-9)
    assert rows["pwtk"].error_pct == pytest.approx(err(0.0400, SEED_TIMES_MS["pwtk"]))  # 39.67
    assert rows["ldoor"].error_pct == pytest.approx(-52.75, abs=0.01)
    assert (rows["pwtk"].limiter, rows["ldoor"].limiter) == ("latency", "dram")
    assert rows["cant"].why == "within 25 % of the model"
    assert not rows["cant"].own  # torch-cusparse-i64 is a library


def test_not_modelled_is_never_a_number(rows):
    old, reason = rows["cage15"], rows["webbase-1M"]
    assert old.predicted_ms is None and old.error_pct is None and old.limiter == ""
    assert old.predicted_cell == "not modelled: results older than the model"
    assert reason.predicted_cell == "not modelled: no SASS for this kernel"
    table = prediction_table(predicted_runset())
    cells = {row[0]: row for row in table.cells()}
    assert cells["cage15"][2:5] == ["not modelled: results older than the model", "0.4636",
                                    "not modelled"]
    assert cells["cage15"][5] == "—"
    # in JSON the number is null and the reason beside it
    js = {r["matrix"]: r for r in table.to_dict()["rows"]}
    assert js["cage15"]["predicted_ms"] is None
    assert js["webbase-1M"]["not_modelled"] == "no SASS for this kernel"
    assert js["cant"]["predicted_ms"] == pytest.approx(0.03672)


def test_summary_median_p90_and_defects(rows):
    s = summarize(list(rows.values()))
    errors = sorted(abs(e) for e in (10.0, err(0.04, 0.0663), err(0.3, 0.1964),
                                     err(0.2, 0.3211)))  # 10, 37.71, 39.67, 52.75
    assert (s.timed, s.modelled, s.faster, s.slower) == (6, 4, 1, 2)
    assert s.median_abs_error_pct == pytest.approx((errors[1] + errors[2]) / 2)  # 38.69
    assert s.p90_abs_error_pct == pytest.approx(errors[2] + 0.7 * (errors[3] - errors[2]))
    reading = prediction_table(predicted_runset()).reading
    assert reading.startswith("4 of 6 timed case(s) modelled. Median |error| 38.7 %; 90th "
                              "percentile 48.8 %.")
    assert "1 case(s) faster than the model allows" in reading


def test_a_case_that_beats_its_prediction_is_a_model_defect(rows):
    assert rows["ldoor"].why.startswith("model defect: beats its predicted time (error -53 %); "
                                        "DRAM-bound by the model: the predicted DRAM bytes "
                                        "(560.0 MB) may be wrong; profile this case")


def test_why_names_the_limiters_assumption_without_counters(rows):
    assert rows["pwtk"].why == ("latency-bound by the model: bytes in flight per warp (256 B) "
                                "from SASS/declared shape may be wrong; profile this case")


def test_why_reads_the_counters_first(rows):
    # 48 % of 64 warps = 30.7 resident against 64 predicted: the occupancy broke
    assert rows["circuit5M"].why == (
        "occupancy: achieved 30.7 warps/SM (48 %) against 64.0 predicted resident; stall: "
        "long scoreboard 4.00 cycles/instruction (36 % of CPI 11.0)")


def test_why_compares_measured_dram_bytes_before_occupancy():
    case = next(c for c in predicted_runset().cases if c.matrix == "circuit5M")
    counters = ProfiledCounters(achieved_occupancy_pct=100.0, dram_bytes=750e6,
                                stall_reasons={"long_scoreboard": 4.0, "lg_throttle": 6.5})
    profiled = dataclasses.replace(case, counters=counters)
    assert why_text(profiled, 37.7, 64) == (
        "DRAM bytes: measured 750.0 MB against predicted 500.0 MB; top stall: lg throttle "
        "6.50 cycles/instruction")
    # readings that match the model: the limiter's assumption is what is left
    matched = dataclasses.replace(case, counters=ProfiledCounters(
        achieved_occupancy_pct=100.0, dram_bytes=510e6))
    assert why_text(matched, 37.7, 64) == (
        "DRAM bytes: as predicted, 510.0 MB against predicted 500.0 MB; occupancy: as "
        "predicted, 64.0 warps/SM (100 %) against 64.0 predicted resident; DRAM-bound by the "
        "model: the predicted DRAM bytes (500.0 MB) may be wrong; profile this case")


def test_scatter_draws_modelled_cases_on_log_axes(rows):
    fig, caption = draw_predictions(list(rows.values()), "t")
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    labels = ax.get_legend_handles_labels()[1]
    assert labels[:2] == ["measured = predicted", "±25 % error"]
    assert {"dram", "latency"} <= set(labels)  # limiters; the family is the panel's title
    assert [a.get_title().splitlines()[1].split(":")[0] for a in fig.axes] == ["libraries"]
    assert caption == ("1 of 4 modelled case(s) inside the ±25 % band; below it a case beat "
                       "its prediction (a model defect), above it ran slower; 2 not modelled, "
                       "not plotted.")
    assert draw_predictions([rows["cage15"]], "t") == "no timed case carries a predicted time"


def test_own_kernels_and_libraries_are_told_apart():
    rows = prediction_rows(dae_runset())
    fig, _ = draw_predictions(rows, "t")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert {"dram", "latency"} <= set(labels)
    assert fig.axes[0].get_title().splitlines()[1].startswith("our kernels: median |error| ")


def _spmm_run() -> RunSet:
    st = MatrixStats(rows=512, cols=1024, nnz=157_286, nnz_per_row_mean=307.2,
                     nnz_per_row_std=0.0, nnz_per_row_min=0, nnz_per_row_max=0, empty_rows=0,
                     bandwidth=1024, distinct_columns=1024, x_reuse=153.6, x_reuse_in_window=0.0)
    rs = make_gpu_runset()
    cfg = TimingConfig(clock="cuda-events")

    def case(backend, time_ms, k, pred):
        return CaseResult("dlmc", backend, "spmm", "ok", params=SpmmParams(k=k),
                          measurement=Measurement(samples_ms=(time_ms,), config=cfg),
                          correctness=Correctness(rel_err=1e-7, tolerance=1e-5),
                          prediction=pred)

    cases = (case("spmm-cuda-rowwarp", 0.010, 8, prediction(0.008, "latency")),
             case("spmm-torch-i32", 0.020, 8, None),
             case("spmm-cuda-rowwarp", 0.050, 64, prediction(0.080, "l2")))
    return dataclasses.replace(rs, matrices=(MatrixRecord("dlmc", "generated", "pruned", None,
                                                          st),),
                               cases=cases, ceilings=MeasuredCeilings(device="H200"))


def test_spmm_section_opens_with_predicted_against_measured(tmp_path):
    (section,) = op_sections(_spmm_run(), SectionInputs(figures_dir=tmp_path))
    heading, (block,) = section.body[0]
    assert heading == "SpMM: predicted against measured"
    text = block.text
    # errors +20 % (0.008 against 0.010) and -60 % (0.080 against 0.050): median |error| 40,
    # 90th percentile 20 + 0.9 x 40 = 56
    assert text.startswith("- 2 of 3 timed case(s) modelled.\n- Median |error| 40.0 %; 90th "
                           "percentile 56.0 %.")
    assert "| spmm-torch-i32 | k 8, layout row | not modelled: results older than the model |" \
        in text
    assert "model defect: beats its predicted time (error -60 %)" in text
    assert "![SpMM: predicted against measured](figures/ops_spmm_predicted.png)" in text
    assert (tmp_path / "ops_spmm_predicted.png").stat().st_size > 5000
    rows = section.tables["ops_spmm_predicted"]["rows"]
    assert [r["error_pct"] for r in rows] == [pytest.approx(20.0), None, pytest.approx(-60.0)]


def _headings(md: str, level: str = "## ") -> list[str]:
    return [line[len(level):] for line in md.splitlines() if line.startswith(level)]


def test_the_full_report_leads_with_predictions_and_claims(tmp_path):
    paths = write_report(dae_runset(), tmp_path, progress=False)
    md = paths.markdown.read_text()
    assert _headings(md)[2:12] == [
        "3. Predicted against measured", "4. Seed 000's claims against this run",
        "5. Timing and throughput", "6. Physical floor and roofline",
        "7. Little's law and latency sensitivity", "8. Gap decomposition",
        "9. Decoupled access-execute (DAE) what-if", "10. INT32 against INT64 indices",
        "11. Skipped and failed cases", "Appendix: provenance and files"]
    dae = md[md.index("## 9. "):md.index("## 10. ")]
    assert dae.index("DAE what-if validated") < dae.index("DAE what-if per case")
    assert (tmp_path / "figures" / "predicted_vs_measured.png").stat().st_size > 15_000
    assert "predicted_vs_measured" not in dict(paths.skipped_figures)
    tables = {p.stem: json.loads(p.read_text()) for p in paths.tables}
    assert {"predicted_vs_measured", "seed_claims", "dae_validated"} <= set(tables)
    assert len(tables["dae_validated"]["rows"]) == 2
    # pwtk's staged kernel is predicted to gain nothing: said so, not printed as 0.90x
    assert "| no gain: limited by dram | none: staged 1.04x slower |" in dae
    assert not re.search(r"\| 0\.9\dx \|", dae)
