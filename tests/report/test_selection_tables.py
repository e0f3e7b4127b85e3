"""``How cuda-spmv-auto chose``: the prediction table auto keeps in its notes, rendered per
matrix, the choice marked, against hand-computed percentages."""

from __future__ import annotations

import dataclasses
import json

from report_builders import make_gpu_runset

from sparsescope.report import build_tables
from sparsescope.report.context import build_context
from sparsescope.report.selection_tables import auto_choice_table
from sparsescope.results.records import CaseResult, Correctness
from sparsescope.timing.types import Measurement

TABLE = [
    {"backend": "cuda-spmv-sell", "params": {"tpr": 1}, "label": "cuda-spmv-sell[tpr=1]",
     "predicted_ms": 0.050, "limiter": "dram", "not_modelled": "", "plan_s": 0.1,
     "trial_ms": 0.061},
    {"backend": "cuda-spmv-adaptive", "params": {"iters": 1},
     "label": "cuda-spmv-adaptive[iters=1]", "predicted_ms": 0.040, "limiter": "l2",
     "not_modelled": "", "plan_s": 0.1, "trial_ms": 0.065},
    {"backend": "cuda-spmv-merge", "params": {}, "label": "cuda-spmv-merge",
     "predicted_ms": None, "limiter": "", "not_modelled": "no shape", "plan_s": 0.0,
     "trial_ms": None},
]


def with_auto(rs, table=TABLE, selected=("cuda-spmv-sell", {"tpr": 1})):
    config = rs.cases[0].measurement.config
    auto = CaseResult(
        matrix="ldoor", backend="cuda-spmv-auto", op="spmv", outcome="ok", value_bytes=4,
        index_bytes=4, y_read=False,
        measurement=Measurement(samples_ms=(0.06, 0.061, 0.062), config=config, flushed=False,
                                clock="cuda-events"),
        correctness=Correctness(rel_err=7e-8, tolerance=1e-5),
        notes={"selected": selected[0], "selected_params": json.dumps(selected[1]),
               "selection_rule": "predicted-then-timed", "selection_reason": "table",
               "selection_table": json.dumps(table)})
    return dataclasses.replace(rs, cases=(*rs.cases, auto))


def test_auto_choice_rows_and_reading():
    table = auto_choice_table(build_context(with_auto(make_gpu_runset())))
    assert table is not None and table.name == "auto_choice"
    rows = table.rows
    # fastest prediction first, the one the model could not take last
    assert [r.candidate for r in rows] == ["cuda-spmv-adaptive[iters=1]",
                                           "cuda-spmv-sell[tpr=1]", "cuda-spmv-merge"]
    assert [r.predicted_us for r in rows[:2]] == [40.0, 50.0]
    # (0.050 - 0.040) / 0.040 = +25 %
    assert rows[1].over_fastest_pct == 25.0 and rows[0].over_fastest_pct == 0.0
    assert [r.trial_us for r in rows] == [65.0, 61.0, None]
    assert [r.chosen for r in rows] == ["", "chosen", ""]
    assert rows[2].limiter == "no shape" and rows[2].predicted_us is None
    assert table.reading == (
        "cuda-spmv-auto predicted 3 candidates on 1 matrices and timed 2 of them on the device "
        "(those the model cannot rank apart); the trial overruled the fastest prediction on 1 "
        "(ldoor).")
    assert [c.unit for c in table.columns if c.key.endswith("_us")] == ["us", "us"]


def test_no_table_without_a_prediction_table():
    rs = make_gpu_runset()
    assert auto_choice_table(build_context(rs)) is None
    assert "auto_choice" not in {t.name for t in build_tables(rs)}
    assert "auto_choice" in {t.name for t in build_tables(with_auto(rs))}
