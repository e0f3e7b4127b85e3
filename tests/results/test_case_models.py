"""Model values a report shows are computed once, when the run ends, and stored with each case
(``CaseResult.model``); the report renders the stored values and recomputes nothing."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sparsescope import api
from sparsescope.model.spmv import spmv_traffic
from sparsescope.report.write import write_report
from sparsescope.results.io import read_runset


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return api.run(suite="seed6", scale=0.005, out_dir=tmp_path_factory.mktemp("run"),
                   store=False)


def test_every_timed_case_stores_its_model(run):
    back = read_runset(run.results_path)
    for case, matrix in ((c, next(m for m in back.matrices if m.name == c.matrix))
                         for c in back.cases):
        st = matrix.stats
        bytes_ = spmv_traffic(st.rows, st.cols, st.nnz, value_bytes=case.value_bytes,
                              index_bytes=case.index_bytes, y_read=case.y_read).total_bytes
        assert case.model.peak.bytes == bytes_
        assert case.model.peak.eff_bw_gb_s == pytest.approx(
            bytes_ / (case.measurement.time_ms * 1e-3) / 1e9)
        assert case.model.peak.bw_gb_s == back.device.peak_bw_gb_s


def test_the_report_renders_the_stored_values(run, tmp_path):
    back = read_runset(run.results_path)
    first = back.cases[0]
    doctored = replace(first, model=replace(
        first.model, peak=replace(first.model.peak, pct_peak=12.345, gap=8.5)))
    write_report(replace(back, cases=(doctored, *back.cases[1:])), tmp_path, progress=False)
    row = json.loads((tmp_path / "tables" / "timing.json").read_text())["rows"][0]
    assert row["pct_of_peak_bw"] == 12.345 and row["gap_vs_floor_x"] == 8.5
