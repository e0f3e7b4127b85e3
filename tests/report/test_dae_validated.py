"""The DAE what-if validated by staged / unstaged pairs, and the rule every DAE table follows:
a gain below 1 is written "no gain: limited by ...", never printed as a speedup."""

from __future__ import annotations

import dataclasses
import re

import pytest
from prediction_builders import SELL, dae_runset, prediction, timed
from report_builders import make_gpu_runset

from sparsescope.report.context import build_context
from sparsescope.report.dae_validated import dae_pairs, dae_validated_table, gain_text
from sparsescope.report.warp_tables import cross_gpu_table, dae_table, sensitivity_table


def test_gain_text_never_prints_a_speedup_below_one():
    assert gain_text(1.31, "dram") == "1.31x"
    assert gain_text(0.93, "dram") == "no gain: limited by dram"
    assert gain_text(None, "dram") == "—"


def test_pairs_need_the_same_kernel_shape_and_matrix():
    pairs = dae_pairs(dae_runset())
    assert [(p.staged.matrix, p.staged.backend, p.unstaged.backend) for p in pairs] == [
        ("cant", "cuda-spmv-sell[cp.async]", "cuda-spmv-sell"),
        ("pwtk", "cuda-spmv-sell[cp.async]", "cuda-spmv-sell")]  # ldoor's has no sibling
    assert dae_pairs(make_gpu_runset()) == []


def test_predicted_and_measured_gains():
    t = dae_validated_table(dae_runset())
    cant, pwtk = t.rows
    assert cant.predicted_gain_x == pytest.approx(0.042 / 0.030)  # 1.40
    assert cant.measured_gain_x == pytest.approx(0.040 / 0.031)   # 1.29
    assert cant.verdict == "holds: predicted 1.40x, measured 1.29x"
    assert pwtk.predicted_gain_x == pytest.approx(0.9)
    assert pwtk.predicted_gain_cell == "no gain: limited by dram"
    assert pwtk.measured_gain_cell == "none: staged 1.04x slower"
    assert pwtk.verdict == ("holds: predicted no gain (limited by dram), measured staged "
                            "1.04x slower")
    assert t.cells()[1][3:5] == ["no gain: limited by dram", "none: staged 1.04x slower"]
    assert t.reading == ("2 staged/unstaged pair(s); the prediction holds within 25 % on 2 of "
                         "2 modelled. Median measured gain of staging: 1.13x.")


def test_a_gain_far_from_its_prediction_is_refuted():
    t = dae_validated_table(dae_runset(cant=(0.020, 0.040)))  # measured 2.0x, predicted 1.4x
    assert t.rows[0].verdict == "refuted: predicted 1.40x, measured 2.00x"


def test_a_pair_without_a_prediction_says_why():
    rs = dae_runset()
    cases = tuple(dataclasses.replace(c, prediction=dataclasses.replace(
        c.prediction, predicted_ms=None, not_modelled="no SASS"))
        if c.backend == "cuda-spmv-sell" and c.matrix == "cant" else c for c in rs.cases)
    row = dae_validated_table(dataclasses.replace(rs, cases=cases)).rows[0]
    assert row.predicted_gain_x is None and row.predicted_gain_cell == "not modelled"
    assert row.verdict == "not modelled: cuda-spmv-sell: no SASS"


def test_params_split_pairs():
    rs = make_gpu_runset()
    t = rs.cases[0]
    cases = (timed("cant", "a[staged]", 0.03, prediction(0.03, kernel=SELL, staged=True), t),
             timed("pwtk", "a", 0.04, prediction(0.04, kernel=SELL), t))
    assert dae_pairs(dataclasses.replace(rs, cases=cases)) == []  # two matrices: no pair


def test_warp_dae_tables_write_no_gain_below_one(fake_specs):
    # at 400 ns the Little's-law ceiling is 56.3 %: ldoor (60.8 %) already runs above it
    ctx = build_context(dataclasses.replace(make_gpu_runset(), latency_ns=400.0))
    dae = dae_table(ctx)
    ldoor = next(r for r in dae.rows if r.label == "ldoor")
    assert ldoor.bw_speedup_x == pytest.approx(56.26 / 60.83, abs=1e-3)  # kept in JSON
    assert ldoor.bw_speedup_text == "no gain: limited by the 56.3 % Little's-law ceiling"
    assert "ldoor, already at 60.8 %, gets no gain: limited by the 56.3 % Little's-law " \
           "ceiling" in dae.reading
    sens = sensitivity_table(build_context(make_gpu_runset()))
    assert [r.dae_speedup_text for r in sens.rows] == [
        "1.64x", "1.23x", "no gain: limited by the 56.3 % Little's-law ceiling"]
    assert "400 ns: no gain: limited by the 56.3 % Little's-law ceiling." in sens.reading
    cross = cross_gpu_table(ctx)
    h200 = next(r for r in cross.rows if r.gpu == "H200")
    assert h200.dae_speedup_text.startswith("no gain: limited by")
    assert "DAE would give no gain: limited by the 56.3 % Little's-law ceiling." in cross.reading
    for table in (dae, sens, cross):
        speedup = [i for i, c in enumerate(table.columns) if "speedup" in c.header.lower()]
        for row in table.cells():
            assert not any(re.fullmatch(r"0\.\d+x", row[i]) for i in speedup), row
