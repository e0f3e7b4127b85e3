"""Stored runs scored against the model as it is now (``analyze.score_runs``,
``analyze.score_summary``): the summaries' arithmetic on hand-made cases, and the whole path on
committed runs (``sparsescope model score``), no GPU."""

from __future__ import annotations

import json

import pytest

from sparsescope.analyze import score_runs as sr
from sparsescope.analyze import score_summary as ss
from sparsescope.analyze.score_runs import ScoredCase
from sparsescope.cli import main


def case(matrix, backend, measured, predicted, **kw) -> ScoredCase:
    return ScoredCase(gpu="H200", matrix=matrix, backend=backend, measured_ms=measured,
                      predicted_ms=predicted, limiter=kw.pop("limiter", "dram"), **kw)

def test_summary_errors_and_the_cost_of_choosing_by_prediction():
    cases = [case("m", "cuda-spmv-sell[sell-u4-m6-h1]", 0.010, 0.008),
             case("m", "cuda-spmv-sell[sell-u2-m8-h1]", 0.012, 0.006)]
    text = ss.summary_text(cases)
    # |errors| 20 % and 50 %: median 35 %; the 90th percentile (nearest rank: the
    # ceil(0.9 x 2) = 2nd) 50 %
    assert ("H200 SpMV: 2 cases, median |error| 35.0 %, 90th percentile 50.0 % (nearest rank)"
            in text)   # the op named by its registry title
    assert ("sell-u2-m8-h1              median signed error  +50.0 %, median |error| 50.0 % "
            "over 1") in text
    # u2-m8 is predicted fastest but measured 20 % slower than u4-m6
    assert ("m: the fastest prediction (cuda-spmv-sell[sell-u2-m8-h1]) measured +20.0 % over "
            "the fastest") in text
    assert ("choosing by prediction alone: +20.0 % geomean over the fastest, largest +20.0 %, "
            "1 of 1 matrices above 5 %") in text
    # geomean of 1.0 and 1.21: 1.1
    assert ss.regret_line([1.0, 1.21]).startswith("+10.0 % geomean")

def test_comparison_with_a_baseline_on_the_cases_both_predicted():
    def row(backend, predicted):
        return case("m", backend, 0.010, predicted, limiter="latency")

    before = [row("cuda-spmv-sell[sell-u2-m8-h1]", 0.005),
              row("cuda-spmv-delta16[delta16-u4-m6-h1]", 0.008),
              row("cuda-spmv-merge[merge-i1-h1]", 0.009)]   # not scored now: left out
    now = [row("cuda-spmv-sell[sell-u2-m8-h1]", 0.011),
           row("cuda-spmv-delta16[delta16-u4-m6-h1]", 0.009)]
    table = ss.comparison(now, before).splitlines()
    # signed errors before +50 %, +20 % (median +35 %); now -10 %, +10 % (median 0 %)
    assert table[2] == "| H200 | all | 2 | 35.0 % | 10.0 % | +35.0 % | +0.0 % |"
    assert table[3] == "| H200 | delta16 | 1 | 20.0 % | 10.0 % | +20.0 % | +10.0 % |"
    assert table[4] == "| H200 | sell | 1 | 50.0 % | 10.0 % | +50.0 % | -10.0 % |"

def test_by_matrix_kind():
    cases = [case("rmat-20", "cuda-spmv-sell[sell-u4-m6-h1]", 0.026, 0.020),
             case("rmat-26", "cuda-spmv-sell[sell-u4-m6-h1]", 0.030, 0.020),
             case("banded-05", "cuda-spmv-sell[sell-u4-m6-h1]", 0.010, 0.010),
             case("rmat-20", "cuda-spmv-merge[merge-i1-h1]", 0.018, 0.012)]
    lines = ss.by_kind(cases).splitlines()
    assert lines[0] == "| GPU | variant | banded | rmat |"
    # merge: one rmat case, 1.5; sell: banded 1.0, rmat median of 1.3 and 1.5 = 1.4
    assert lines[2] == "| H200 | merge-i1-h1 |  | 1.50 |"
    assert lines[3] == "| H200 | sell-u4-m6-h1 | 1.00 | 1.40 |"

def test_older_offline_score_rows_read_back(tmp_path):
    """A ``--baseline`` may be the older offline score's list of rows (no op, no basis)."""
    path = tmp_path / "old.json"
    path.write_text(json.dumps([{"gpu": "H200", "matrix": "m", "backend": "b",
                                 "measured_ms": 0.01, "predicted_ms": 0.008,
                                 "limiter": "dram"}]))
    (c,) = sr.read_scores(path)
    assert (c.op, c.basis, c.error) == ("spmv", sr.MODEL_NOW, pytest.approx(0.2))

def test_a_results_file_read_as_a_score_file_is_a_clear_error(tmp_path, capsys):
    """``model score --from-json`` on a run's results file (cases without ``gpu``,
    ``measured_ms``, ``predicted_ms``) names the file and the case, exits 5, no traceback; a
    file with no list of cases too."""
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"cases": [{"matrix": "m", "backend": "b", "op": "spmm"}]}))
    with pytest.raises(sr.ResultsFormatError,
                       match=r"results.json: not a score file: case 0 lacks gpu, "
                             r"measured_ms, predicted_ms"):
        sr.read_scores(results)
    assert main(["model", "score", str(results), "--from-json"]) == 5
    err = capsys.readouterr().err
    assert "not a score file: case 0 lacks" in err and "Traceback" not in err
    scalar = tmp_path / "scalar.json"
    scalar.write_text(json.dumps({"cases": 3}))
    with pytest.raises(sr.ResultsFormatError, match="no list of scored cases"):
        sr.read_scores(scalar)


def test_spmm_errors_regret_and_trials():
    table = json.dumps([{"backend": "spmm-cuda-rowgroup", "predicted_ms": 0.5},
                        {"backend": "spmm-cuda-rowwarp", "predicted_ms": 0.6}])
    common = dict(op="spmm", k=8, layout="row", basis=sr.STORED)
    cases = [case("m", "spmm-cuda-rowgroup", 1.0, 0.8, **common),
             case("m", "spmm-cuda-rowwarp", 0.5, 0.6, **common),
             case("m", "spmm-cuda-auto", 0.55, 0.6, selected="spmm-cuda-rowwarp", table=table,
                  **common)]
    summary = {s.group: s for s in ss.error_summaries(cases)}
    # errors +20 %, -20 %, -9.09 %: |median| 20 %
    assert summary["all"].cases == 3
    assert summary["all"].median_abs_pct == pytest.approx(20.0)
    assert summary["all"].median_signed_pct == pytest.approx(-100 * 0.05 / 0.55)
    # auto's case also counted under the kernel it ran
    assert summary["auto: rowwarp"].cases == 1
    (r,) = ss.spmm_regrets(cases)
    assert r["faster"] == "spmm-cuda-rowwarp" and r["regret_pct"] == pytest.approx(10.0)
    assert r["prediction_right"] is False   # rowgroup was predicted faster
    text = ss.spmm_text([r], [])
    assert "geomean regret +10.0 %" in text and "named the faster kernel in 0 of 1" in text

    trial = json.dumps([
        {"label": "spmm-cuda-rowgroup", "predicted_ms": 0.4, "trial_ms": 0.30},
        {"label": "spmm-cuda-rowgroup[min_slice=32]", "predicted_ms": 0.3, "trial_ms": 0.15},
        {"label": "spmm-cuda-rowwarp", "predicted_ms": 0.2, "trial_ms": 0.20}])
    untimed = json.dumps([{"label": "spmm-cuda-rowgroup", "predicted_ms": 0.1,
                           "trial_ms": None}])
    autos = [case("g", "spmm-cuda-auto", 0.15, 0.3, table=trial, **{**common, "k": 32}),
             case("h", "spmm-cuda-auto", 0.1, 0.1, table=untimed, **common)]
    (t,) = ss.spmm_trials(autos)   # h timed nothing: left out
    assert t["predicted_first"] == "spmm-cuda-rowwarp"
    assert t["kept"] == "spmm-cuda-rowgroup[min_slice=32]" and t["over_default"] == 2.0
    text = ss.spmm_text([], [t])
    assert "the fastest prediction was the fastest timed in 0" in text
    assert "geomean 2.000x, largest 2.00x" in text

def test_a_case_is_scored_by_its_backend_whatever_its_op():
    from types import SimpleNamespace as NS

    def stored(backend, op="spmm", layout="row", **notes):
        params = NS(k=8, layout=layout) if op == "spmm" else NS()
        return NS(backend=backend, op=op, params=params, notes=notes)

    assert sr.case_basis(stored("cuda-spmv-sell[sell-u4-m6-h1]", "spmv")) == sr.PLANNED
    assert sr.case_basis(stored("slice-cuda-gather", "slice")) == sr.PLANNED
    assert sr.case_basis(stored("spmm-cuda-transposed")) == sr.PLANNED
    assert sr.case_basis(stored("spmm-cuda-rowgroup")) == sr.STORED
    assert sr.case_basis(stored("spmm-cuda-blocktc")) == sr.BLOCKTC_PLAN
    assert sr.case_basis(stored("spmm-cuda-blocktc", layout="col")) == sr.STORED
    assert sr.case_basis(stored("spmm-cuda-auto", selected="spmm-cuda-blocktc")) == \
        sr.BLOCKTC_PLAN
    assert sr.case_basis(stored("spmm-cuda-auto", selected="spmm-cuda-rowwarp")) == sr.STORED
    # a chooser is scored as the own kernel it ran; a GPU library is planned (CSR bytes and
    # cuSPARSE's declared shape); a CPU backend is not the GPU model's
    assert sr.case_basis(stored("cuda-spmv-auto", "spmv", selected="cuda-spmv-sell")) == \
        sr.PLANNED
    assert sr.case_basis(stored("torch-cusparse-i32", "spmv")) == sr.PLANNED
    assert sr.case_basis(stored("nvmath-cusparse-i32[alg=2,preprocess=0]", "spmv")) == \
        sr.PLANNED
    assert sr.case_basis(stored("spmm-cupy-i32")) == sr.PLANNED
    assert sr.case_basis(stored("scipy-cpu", "spmv")) == ""

def test_a_backend_that_plans_only_on_its_device_keeps_the_stored_prediction(monkeypatch):
    from types import SimpleNamespace as NS

    def replace_ns(ns, **kw):
        return NS(**{**vars(ns), **kw})

    from sparsescope.context.predict import PlannedPrediction

    rs = NS(device=NS(name="H200"))
    c = NS(backend="spmm-cuda-transposed", op="spmm", matrix="m", params=NS(k=8, layout="col"),
           notes={}, outcome="ok", prediction=NS(predicted_ms=0.5, limiter="dram"),
           measurement=NS(samples_ms=[1.0, 1.0, 1.0]))
    monkeypatch.setattr(sr, "_planned", lambda *a: PlannedPrediction(
        not_modelled=f"spmm-cuda-transposed {sr.CANNOT_PLAN}"))
    s = sr._score_case(rs, c, None, None, {}, {})
    assert (s.basis, s.predicted_ms, s.limiter, s.k, s.layout) == (sr.STORED, 0.5, "dram", 8,
                                                                   "col")
    s = sr._score_case(rs, replace_ns(c, prediction=None), None, None, {}, {})
    assert (s.basis, s.predicted_ms, s.not_modelled) == (
        sr.STORED, None, f"spmm-cuda-transposed {sr.CANNOT_PLAN}, and the run stored no "
        "prediction")
    # any other reason is today's model's answer, not hidden by the stored one
    monkeypatch.setattr(sr, "_planned", lambda *a: PlannedPrediction(not_modelled="refused"))
    s = sr._score_case(rs, c, None, None, {}, {})
    assert (s.basis, s.predicted_ms, s.not_modelled) == (sr.MODEL_NOW, None, "refused")

def test_choices_group_by_op_matrix_and_parameters():
    now = dict(op="spmm", layout="row")
    cases = [case("m", "spmm-cuda-blocktc", 0.010, 0.009, k=8, **now),   # 1.5x: not shortlisted
             case("m", "spmm-cuda-x", 0.012, 0.006, k=8, **now),
             case("m", "spmm-cuda-x", 0.020, 0.010, k=32, **now),   # alone at k = 32
             case("m", "spmm-cuda-auto", 0.011, 0.007, k=8, selected="spmm-cuda-x", **now),
             case("m", "spmm-cuda-rowgroup", 0.009, 0.009, k=8, basis=sr.STORED, **now)]
    (r,) = ss.choice_regrets(cases)   # the two fixed kernels predicted now at k = 8
    assert (r.picked, r.ratio) == ("spmm-cuda-x", pytest.approx(1.2))
    (sl,) = ss.shortlist_regrets(cases)
    assert (sl.shortlisted, sl.kept, sl.regret) == (1, "spmm-cuda-x", pytest.approx(0.2))
    text = ss.summary_text(cases)
    assert text.startswith("H200 SpMM: 5 cases")
    assert "m: the fastest prediction (spmm-cuda-x) measured +20.0 % over the fastest" in text

def test_the_memory_floor_is_a_declared_property_of_an_op():
    from sparsescope.ops.registry import get_op

    assert get_op("spmv").memory_floor
    assert not get_op("spmm").memory_floor and not get_op("slice").memory_floor

def test_shortlist_times_what_auto_would_time():
    cases = [  # m: the fastest (merge) predicted 1.5x the fastest prediction: not shortlisted
        case("m", "cuda-spmv-sell[a]", 0.012, 0.010), case("m", "cuda-spmv-sell[b]", 0.011, 0.012),
        case("m", "cuda-spmv-merge", 0.010, 0.015),
        # n: every variant within 35 %: the fastest measured is kept, regret 0
        case("n", "cuda-spmv-sell[a]", 0.020, 0.010), case("n", "cuda-spmv-merge", 0.010, 0.013)]
    res = {r.matrix: r for r in ss.shortlist_regrets(cases)}
    assert (res["m"].regret, res["m"].kept) == (pytest.approx(0.1), "cuda-spmv-sell[b]")
    assert (res["n"].regret, res["n"].kept) == (0.0, "cuda-spmv-merge")
    # geomean of 1.1 and 1.0: 1.0488
    assert ss.shortlist_text("now", list(res.values())) == (
        "now H200: shortlist regret +4.9 % geomean, largest +10.0 %, fastest not shortlisted "
        "on 1 of 2 matrices")
    assert ss.shortlist_changes(list(res.values()), list(res.values())).count("\n") == 1

def test_probe_call_costs_from_the_committed_probe(committed):
    probe = committed("results/h200/kernels/followups/2026-11-25-call-overhead-probe/probe.json")
    rows = {r["probe"]: r for r in json.loads(sr.read_text(probe)) if r["flushed"]}
    costs = sr.probe_call_costs(probe)
    # the flushed medians: one empty launch, and what the second of two adds
    assert costs["call_us"] == rows["empty"]["median_us"] == pytest.approx(3.68, abs=0.01)
    assert costs["next_launch_us"] == pytest.approx(
        rows["empty x2"]["median_us"] - rows["empty"]["median_us"])
    assert 1.0 < costs["next_launch_us"] < costs["call_us"]

def test_a_matrix_is_built_again_from_the_source_the_run_recorded(committed):
    from sparsescope.results.io import read_runset

    rs = read_runset(committed(
        "results/h200/kernels/2026-11-25-held-out-warp-rows/part1/results.json"))
    record = next(m for m in rs.matrices if m.name == "pruned-05")
    assert record.source.startswith("generated:pruned(")
    a = sr.run_csr(rs, "pruned-05")
    b = sr.suite_csr(rs.suite, "pruned-05", rs.scale)
    assert a.nnz == record.stats.nnz and (a != b).nnz == 0

def test_results_folders_stand_for_their_results_files(committed, tmp_path):
    folder = committed("results/h200/kernels/2026-11-25-held-out-warp-rows/part1/results.json"
                       ).parents[1]
    files = sr.results_files([folder])
    assert len(files) >= 2 and all(f.name.startswith("results.json") for f in files)
    with pytest.raises(sr.UsageError, match="no results.json"):
        sr.results_files([tmp_path])

def test_model_score_spmv_variants_on_a_committed_run(committed, capsys):
    """pruned-05 (10,486 nonzeros) of the held-out run: every own kernel variant planned here
    and predicted with the run's own rates (declared shapes: --no-sass)."""
    path = committed("results/h200/kernels/2026-11-25-held-out-warp-rows/part1/results.json")
    assert main(["model", "score", str(path), "--matrix", "pruned-05", "--no-sass",
                 "--shortlist", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cases = [ScoredCase.from_dict(c) for c in doc["cases"]]
    assert cases and {c.matrix for c in cases} == {"pruned-05"}
    assert all(c.op == "spmv" and c.basis == "model now" for c in cases)
    assert all(c.predicted_ms and c.predicted_ms > 0 for c in cases)
    # a chooser's case is predicted as the kernel it selected, and stays out of the choices
    autos = [c for c in cases if c.backend.startswith("cuda-spmv-auto")]
    assert autos and all(c.selected.startswith("cuda-spmv-") for c in autos)
    assert doc["errors"][0]["group"] == "all" and doc["errors"][0]["cases"] == len(cases)
    assert len(doc["shortlist"]) == 1 and doc["notes"]   # the --no-sass note

def test_model_score_the_block_kernel_on_the_committed_final_run(committed, capsys):
    """weights-00 at k = 32, 128, 512: the block kernel's own cases and auto's picks of it,
    predicted now with the folder's regs.txt, the rest of auto as the run stored it."""
    folder = committed("results/h200/spmm-tuning/2026-11-25-blocktc-final/results.json").parent
    regs = sr.read_regs(committed(
        "results/h200/spmm-tuning/2026-11-25-blocktc-final/regs.txt"))
    assert regs["spmm_blocktc<3, 1, true, 1, 4>"] > 0
    assert main(["model", "score", str(folder), "--matrix", "weights-00", "--json"]) == 0
    cases = [ScoredCase.from_dict(c) for c in json.loads(capsys.readouterr().out)["cases"]]
    assert {c.k for c in cases} == {32, 128, 512}
    assert {c.backend for c in cases} == {"spmm-cuda-blocktc", "spmm-cuda-auto"}
    for c in cases:
        assert c.basis == "model now" and c.predicted_ms > 0
        assert c.error == pytest.approx((c.measured_ms - c.predicted_ms) / c.measured_ms)
    # the committed offline score of the day: 8.7 us measured, 5.2 us predicted at k = 32
    k32 = next(c for c in cases if c.k == 32 and c.backend == "spmm-cuda-blocktc")
    assert 1e3 * k32.predicted_ms == pytest.approx(5.2, abs=0.05)

def test_model_score_from_json_with_a_baseline_and_kinds(tmp_path, capsys):
    path = tmp_path / "score.json"
    rows = [case("rmat-20", "cuda-spmv-sell[sell-u4-m6-h1]", 0.026, 0.020).as_dict(),
            case("rmat-20", "cuda-spmv-merge[merge-i1-h1]", 0.018, 0.012).as_dict()]
    path.write_text(json.dumps({"cases": rows}))
    assert main(["model", "score", str(path), "--from-json", "--baseline", str(path),
                 "--by-kind", "--shortlist"]) == 0
    text = capsys.readouterr().out
    assert "H200 SpMV: 2 cases" in text and "| H200 | all | 2 |" in text
    assert "| GPU | variant | rmat |" in text and "now H200: shortlist regret" in text

@pytest.mark.parametrize("argv, message", [
    (["--memory-floor", "--by-kind", "x.json"], "go with the score"),
    (["--memory-floor", "--spmm-bounds", "x.json"], "one reading at a time"),
    (["--x-reuse", "x.json"], "goes with --spmm-bounds"),
    ([], "needs RESULTS"),
    (["--l1-check", "d", "x.json"], "not RESULTS"),
    (["--spmm-bounds", "--matrix", "m", "x.json"], "--matrix goes with the score"),
])
def test_model_score_usage_errors(argv, message, capsys):
    assert main(["model", "score", *argv]) == 2
    assert message in capsys.readouterr().err

@pytest.mark.usefixtures("cpu_ceilings_measured_once", "figures_not_drawn")
def test_a_cpu_run_is_not_scored_and_says_why(tmp_path, capsys):
    out = tmp_path / "cpu"
    assert main(["run", "--suite", "seed6#cant", "--scale", "0.01", "--backend", "scipy-cpu",
                 "--warmups", "1", "--repeats", "2", "--no-store", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["model", "score", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cases"] == [] and "the time model is the GPU's" in doc["notes"][0]

def test_model_without_score_keeps_its_what_if_arguments(capsys):
    """``model`` still takes MATRIX positionals and its own options; ``score`` is routed."""
    assert main(["model", "--gpu", "H100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"].startswith("H100")


def test_a_chooser_s_kernel_is_read_from_its_notes_in_a_run_before_selected_params():
    """A run made before choosers recorded ``selected_params`` (results/h200/model): the
    chosen kernel's parameters are read from its own notes, so cant's auto is scored as the
    staged blocked16 it ran (stage 4, blocks of 3), not the default launch."""
    from sparsescope.analyze.score_runs import _recorded_params

    cant = {"selected": "cuda-spmv-blocked16", "sigma": "256", "long_row": "176",
            "unroll": "4", "minb": "6", "hint": "1", "stage": "4", "threads_per_row": "1",
            "block_width": "3", "padding_ratio": "1.0302", "value_dtype": "float32"}
    assert _recorded_params("cuda-spmv-blocked16", cant) == {
        "sigma": 256, "long_row": 176, "unroll": 4, "minb": 6, "hint": 1, "tpr": 1,
        "stage": 4, "block": 3}
    # recorded: taken as it is
    assert _recorded_params("cuda-spmv-blocked16", {**cant, "selected_params": '{"stage": 0}'}
                            ) == {"stage": 0}
    assert _recorded_params("no-such-backend", cant) == {}
