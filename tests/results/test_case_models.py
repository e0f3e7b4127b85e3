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
def run(tmp_path_factory, cpu_ceilings_measured_once):
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


@pytest.mark.usefixtures("figures_not_drawn")
def test_the_report_renders_the_stored_values(run, tmp_path):
    back = read_runset(run.results_path)
    first = back.cases[0]
    doctored = replace(first, model=replace(
        first.model, peak=replace(first.model.peak, pct_peak=12.345, gap=8.5)))
    write_report(replace(back, cases=(doctored, *back.cases[1:])), tmp_path, progress=False)
    row = json.loads((tmp_path / "tables" / "timing.json").read_text())["rows"][0]
    assert row["pct_of_peak_bw"] == 12.345 and row["gap_vs_floor_x"] == 8.5


def test_declared_traffic_is_the_basis_and_csr32_the_equivalent(run):
    """A case whose backend declared its format's bytes is judged by them; INT32 CSR's bytes /
    time is kept beside as the throughput that compares formats by time alone."""
    from sparsescope.model.traffic import Traffic
    from sparsescope.results.case_models import model_of

    back = read_runset(run.results_path)
    case = back.cases[0]
    matrix = next(m for m in back.matrices if m.name == case.matrix)
    st = matrix.stats
    half = Traffic("half of CSR", st.nnz * 4, st.nnz, st.rows + 1, st.cols * 4, 0, st.rows * 4,
                   flops=2 * st.nnz)
    model = model_of(replace(case, model=None, traffic=half), matrix, 100.0, None, 0)
    seconds = case.measurement.time_ms * 1e-3
    assert model.bytes_basis == "declared" and model.peak.bytes == half.total_bytes
    assert model.peak.eff_bw_gb_s == pytest.approx(half.total_bytes / seconds / 1e9)
    csr32 = 8 * st.nnz + 4 * (st.rows + 1) + 4 * st.cols + 4 * st.rows
    assert model.csr_equiv_gb_s == pytest.approx(csr32 / seconds / 1e9)
    old = model_of(replace(case, model=None, traffic=None), matrix, 100.0, None, 0)
    assert old.bytes_basis == "op model" and old.peak.bytes == case.model.peak.bytes


def test_above_peak_names_its_cause():
    from sparsescope.model.case_model import above_peak_cause

    assert above_peak_cause(99.0, 99.9, 10**9, 60 * 10**6, True) == ""
    cached = above_peak_cause(120.0, None, 40 * 10**6, 60 * 10**6, False)
    assert cached.startswith("120.0 % of peak: the working set (40.0 MB) fits in the L2 "
                             "(60.0 MB)") and "not flushed" in cached
    hit = above_peak_cause(95.0, 108.0, 10**9, 60 * 10**6, True)
    assert hit.startswith("108.0 % of copy: fewer bytes reached DRAM than the format declares")
