"""The error per backend family (``analyze.score_family``: ``model score --by-family``,
``scripts/family_errors.py`` and the report's family sentences), and what ``model score`` now
scores: GPU libraries and choosers planned, each case in the timing mode it was measured in."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sparsescope.analyze import score_family as sf
from sparsescope.analyze import score_runs as sr
from sparsescope.analyze.score_runs import ScoredCase
from sparsescope.cli import main

SMOKE = "results/h200/sweep-smoke/results.json"


def err(backend, pct, mode="latency", matrix="m", gpu="H200"):
    return sf.FamilyError(gpu, mode, backend, pct, matrix, (None, ""))


def test_percentile_and_summary_hand_checks():
    # |errors| 10, 20, 30, 40: median 25; p90 rank 0.9 x 3 = 2.7 -> 30 + 0.7 x 10 = 37
    s = sf.error_summary([10.0, -20.0, 30.0, -40.0])
    assert (s.cases, s.median_abs_pct, s.p90_abs_pct) == (4, 25.0, pytest.approx(37.0))
    assert s.median_signed_pct == pytest.approx(-5.0)   # of -40, -20, 10, 30
    assert sf.error_summary([]).median_abs_pct is None


def test_families_by_backend_name():
    assert sf.family_of("cuda-spmv-sell[sell-u4-m6-h1]") == sf.OURS
    assert sf.family_of("cuda-spmv-auto") == sf.OURS
    assert sf.family_of("nvmath-cusparse-i32[alg=2]") == sf.LIBRARIES
    assert sf.family_of("torch-cusparse-i64") == sf.LIBRARIES
    # the dense break-even peer is scored apart: it never moves the libraries' numbers
    assert sf.family_of("spmm-cublas-dense") == sf.DENSE
    assert sf.family_of("spmm-cublas-dense[math=tf32]") == sf.DENSE
    rows = sf.family_summaries([err("spmm-cublas-dense", 40.0), err("spmm-cupy-i32", 4.0)])
    assert [(r.family, r.backend, r.cases) for r in rows if r.backend == "all"] == [
        (sf.LIBRARIES, "all", 1), (sf.DENSE, "all", 1)]


def test_family_rows_per_gpu_mode_and_backend():
    errors = [err("cuda-spmv-sell", 5.0), err("cuda-csr-scalar", -30.0),
              err("cupy-cusparse-i32", 12.0), err("cupy-cusparse-i32", 8.0, matrix="n"),
              err("cuda-spmv-sell", 2.0, mode="throughput")]
    rows = sf.family_summaries(errors)
    keys = [(r.timing_mode, r.family, r.backend, r.cases) for r in rows]
    assert keys == [("latency", sf.OURS, "all", 2), ("latency", sf.OURS, "cuda-csr-scalar", 1),
                    ("latency", sf.OURS, "cuda-spmv-sell", 1),
                    ("latency", sf.LIBRARIES, "all", 2),
                    ("latency", sf.LIBRARIES, "cupy-cusparse-i32", 2),
                    ("throughput", sf.OURS, "all", 1), ("throughput", sf.OURS, "cuda-spmv-sell", 1)]
    ours, libs = rows[0], rows[3]
    # ours: |5|, |30| -> median 17.5, p90 5 + 0.9 x 25 = 27.5: missed; libraries: |8|, |12|
    # -> median 10, p90 8 + 0.9 x 4 = 11.6: met
    assert (ours.median_abs_pct, ours.p90_abs_pct, ours.meets_target) == (17.5, 27.5, False)
    assert (libs.median_abs_pct, libs.p90_abs_pct, libs.meets_target) == (
        10.0, pytest.approx(11.6), True)
    table = sf.family_markdown(rows).splitlines()
    assert table[2] == ("| H200 | latency | our kernels | **all** | 2 | 17.5 | 27.5 | -12.5 | "
                        "missed |")
    assert table[5] == "| H200 | latency | libraries | **all** | 2 | 10.0 | 11.6 | +10.0 | met |"


def test_comparison_counts_only_the_cases_both_scores_predicted():
    before = [err("cupy-cusparse-i32", 30.0), err("cupy-cusparse-i32", 20.0, matrix="n"),
              err("cupy-cusparse-i32", 50.0, mode="throughput")]
    now = [err("cupy-cusparse-i32", 3.0), err("cupy-cusparse-i32", -4.0, matrix="n"),
           err("cupy-cusparse-i32", 1.0, matrix="new")]   # "new": not in the baseline
    lines = sf.family_comparison(now, before).splitlines()
    assert len(lines) == 4   # header, rule, the family, its one backend: latency only
    assert lines[2] == ("| H200 | latency | libraries | **all** | 2 | 25.0 | 3.5 | 29.0 | 3.9 | "
                        "+25.0 | -0.5 | met |")


def _smoke_cases(committed, capsys, path=None, *extra):
    target = str(path or committed(SMOKE))
    assert main(["model", "score", target, "--matrix", "webbase-1M", "--no-sass",
                 "--by-family", "--json", *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    return doc, {c["backend"]: ScoredCase.from_dict(c) for c in doc["cases"]}


def test_model_score_plans_libraries_and_choosers(committed, capsys):
    """webbase-1M of the sweep smoke run: the wrappers' cuSPARSE calls and auto's case are
    predicted now, auto's as the kernel it selected (the same prediction as that kernel's own
    case, which ran with the same options)."""
    doc, cases = _smoke_cases(committed, capsys)
    assert set(cases) == {"cupy-cusparse-i32", "torch-cusparse-i32", "cuda-spmv-auto",
                          "cuda-spmv-sell", "cuda-spmv-adaptive"}
    assert all(c.basis == sr.MODEL_NOW and c.predicted_ms > 0 for c in cases.values())
    auto = cases["cuda-spmv-auto"]
    assert auto.selected == "cuda-spmv-adaptive"
    assert auto.predicted_ms == pytest.approx(cases["cuda-spmv-adaptive"].predicted_ms)
    families = {(r["family"], r["backend"]): r for r in doc["families"]}
    assert families[(sf.LIBRARIES, "all")]["cases"] == 2
    assert families[(sf.OURS, "all")]["cases"] == 3


def test_each_case_is_predicted_in_its_timing_mode(committed, capsys, tmp_path):
    """The same run relabelled as timed back to back: every case is predicted for the
    throughput mode (launches overlapped, the L2 warm), faster than timed alone."""
    from sparsescope.results.io import read_runset, write_runset

    rs = read_runset(committed(SMOKE))
    warm = [dataclasses.replace(
        c, timing_mode="throughput",
        measurement=dataclasses.replace(c.measurement, flushed=False, config=dataclasses.replace(
            c.measurement.config, mode="throughput", throughput_calls=20)))
        for c in rs.cases if c.matrix == "webbase-1M"]
    path = tmp_path / "results.json"
    write_runset(path, dataclasses.replace(rs, cases=tuple(warm)))
    _, alone = _smoke_cases(committed, capsys)
    _, back_to_back = _smoke_cases(committed, capsys, path)
    assert set(alone) == set(back_to_back)
    for backend, c in back_to_back.items():
        assert c.timing_mode == "throughput" and alone[backend].timing_mode == "latency"
        assert c.predicted_ms < alone[backend].predicted_ms, backend


def test_rescore_script_compares_two_score_folders(tmp_path):
    """scripts/model_rescore.py compare: per committed set found in both folders, the family
    table of the cases both scores predicted, with the command that made it."""
    import gzip

    from tests.test_scripts import load

    script = load("model_rescore")

    def write(folder, predicted):
        folder.mkdir()
        rows = [ScoredCase(gpu="H200", matrix="m", backend="cupy-cusparse-i32",
                           measured_ms=0.010, predicted_ms=predicted).as_dict()]
        # a folder `score` wrote before its files were .json.xz: read too
        with gzip.open(folder / "real-dev-h200.json.gz", "wt") as fh:
            json.dump({"cases": rows}, fh)

    write(tmp_path / "before", 0.007)   # +30 %
    write(tmp_path / "now", 0.0095)     # +5 %
    argv = ["compare", "--before", "b", "--now", "n", "--note", "before: the old model"]
    text = script.compare(tmp_path / "before", tmp_path / "now", argv, ["before: the old model"])
    assert "<!-- generated by `python scripts/model_rescore.py compare --before b --now n" in text
    assert "- before: the old model" in text
    assert "## real-dev-h200:" in text and "## seed6-h200" not in text   # only sets in both
    assert ("| H200 | latency | libraries | **all** | 1 | 30.0 | 5.0 | 30.0 | 5.0 | +30.0 | "
            "+5.0 | met |") in text
