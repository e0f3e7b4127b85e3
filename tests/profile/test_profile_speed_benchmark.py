"""``benchmarks/profile_speed.py`` without a GPU: its arguments, the command and environment of a
run, the row it reads from ``profile run --json``, its tables -- and one whole run through the
fake ncu (conftest.FAKE_NCU) in a fresh process, as on the device."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from sparsescope.profile import metrics as M

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    from tests.test_scripts import load

    return load("profile_speed", "benchmarks")


def test_defaults_are_issue_35s_case(bench):
    args = bench.parse_args([])
    assert args.case == [("suite:seed6#webbase-1M", "cuda-spmv-auto")]
    assert (args.scale, args.repeats, args.before_src, args.each_group) == (1.0, 3, None, False)
    assert args.after_src == REPO / "src"


def test_cases_trees_and_bad_repeats(bench, capsys):
    args = bench.parse_args(["--case", "suite:seed6#cant", "cupy-cusparse-i32", "--case",
                             "suite:dlmc3#dlmc-128x256", "spmm-cuda-rowwarp", "--before-src",
                             "/tmp/before/src", "--repeats", "5", "--scale", "0.5"])
    assert args.case == [("suite:seed6#cant", "cupy-cusparse-i32"),
                         ("suite:dlmc3#dlmc-128x256", "spmm-cuda-rowwarp")]
    assert (args.before_src, args.repeats, args.scale) == (Path("/tmp/before/src"), 5, 0.5)
    with pytest.raises(SystemExit) as exit_:
        bench.parse_args(["--repeats", "0"])
    assert exit_.value.code == 2
    assert "--repeats must be >= 1" in capsys.readouterr().err


def test_a_run_is_profile_run_in_the_trees_source(bench, monkeypatch):
    assert bench.profile_argv("suite:seed6#cant", "cuda-spmv-sell", 1.0, "/o", ["--set", "full"]) \
        == [sys.executable, "-m", "sparsescope", "profile", "run", "--matrix", "suite:seed6#cant",
            "--backend", "cuda-spmv-sell", "--scale", "1.0", "--out", "/o", "--json", "--set",
            "full"]
    monkeypatch.setenv("PYTHONPATH", "/other")
    assert bench.tree_env(Path("/tmp/before/src"))["PYTHONPATH"] == (
        "/tmp/before/src" + os.pathsep + "/other")
    monkeypatch.delenv("PYTHONPATH")
    assert bench.tree_env(Path("/t/src"))["PYTHONPATH"] == "/t/src"


def test_summarise_reads_the_runs_json(bench):
    result = {"profile_wall_s": 9.876, "export_wall_s": 1.234, "ncu_version": "Version 2025.3",
              "passes": [{"kernel": "spmv_tile", "passes": 21},
                         {"kernel": "spmv_fixup", "passes": 21}],
              "kernels": [{"name": "spmv_tile", "replay_passes": 21},
                          {"name": "spmv_fixup", "replay_passes": 21}],
              "kernel_selection": {"text": "our kernels (13 in backends/kernels/*.cu) of the "
                                           "checked call"},
              "collected": {"set": None, "groups": ["stalls"], "sections": []}}
    assert bench.summarise(result, 12.345) == {
        "wall_s": 12.35, "ncu_wall_s": 9.88, "export_wall_s": 1.23, "launches": 2,
        "passes": [21, 21], "kernels": ["spmv_fixup", "spmv_tile"],
        "selection": "our kernels (13 in backends/kernels/*.cu) of the checked call",
        "groups": ["stalls"], "ncu_version": "Version 2025.3"}
    # an older tree: no selection, no pass lines -> the report's replay passes
    old = {"profile_wall_s": 21.0, "export_wall_s": 4.0, "passes": [],
           "kernels": [{"name": "cupy_fill", "replay_passes": 34},
                       {"name": "spmv_tile", "replay_passes": 34}]}
    row = bench.summarise(old, 26.0)
    assert (row["passes"], row["selection"], row["groups"]) == (
        [34, 34], "not recorded (older tree)", [])
    assert bench.passes_text([34, 34]) == "34" and bench.passes_text([34, 12]) == "34, 12"
    assert bench.passes_text([]) == "n/a"


def test_the_table_gives_each_trees_median_and_every_run(bench):
    def run(tree, wall, ncu, extra=(), error=None):
        row = {"tree": tree, "matrix": "suite:seed6#webbase-1M", "backend": "cuda-spmv-auto",
               "extra": list(extra), "exit": 1 if error else 0, "wall_s": wall}
        if error:
            return {**row, "error": error}
        return {**row, "ncu_wall_s": ncu, "export_wall_s": 1.0, "launches": 1 if tree ==
                "after" else 5, "passes": [21] if tree == "after" else [34] * 5,
                "kernels": ["spmv_tile"] if tree == "after" else ["cupy_fill", "spmv_tile"],
                "selection": "sel", "groups": [], "ncu_version": "Version 2025.3.1.0"}

    payload = {"date_utc": "2026-11-28T10:00:00+00:00", "gpu": "NVIDIA H200, 580.159",
               "scale": 1.0, "repeats": 3, "target_s": 15.0,
               "trees": {"before": "/tmp/b/src", "after": "/w/src"},
               "runs": [run("before", 26.0, 21.0), run("before", 25.0, 20.0),
                        run("before", 27.0, 22.0), run("after", 12.0, 7.0),
                        run("after", 11.0, 6.0), run("after", 0.4, None, error="ncu died"),
                        run("after", 9.0, 4.0, ["--groups", "stalls"])]}
    text = bench.markdown(payload)
    assert "NVIDIA H200, 580.159; ncu: Version 2025.3.1.0; scale 1;" in text
    assert ("| before | suite:seed6#webbase-1M cuda-spmv-auto | default | 3 | 26.0 | 21.0 | 1.0 "
            "| 5 | 34 | cupy_fill, spmv_tile |") in text
    assert ("| after | suite:seed6#webbase-1M cuda-spmv-auto | default | 2 (1 failed) | 11.5 | "
            "6.5 | 1.0 | 1 | 21 | spmv_tile |") in text
    assert "| after | suite:seed6#webbase-1M cuda-spmv-auto | --groups stalls | 1 | 9.0 |" in text
    assert "- after suite:seed6#webbase-1M cuda-spmv-auto: 0.4 s; ncu died" in text
    assert "- after suite:seed6#webbase-1M cuda-spmv-auto --groups stalls: 9.0 s; sel" in text


def test_one_run_through_the_fake_ncu(bench, fake_ncu, tmp_path, capsys):
    out = tmp_path / "speed.json"
    rc = bench.main(["--case", "suite:seed6#cant", "cuda-spmv-sell", "--repeats", "1",
                     "--out", str(out)])
    assert rc == 0
    payload = json.loads(out.read_text())
    [row] = payload["runs"]
    assert (row["tree"], row["exit"], row["launches"], row["passes"], row["kernels"]) == (
        "after", 0, 4, [40], ["csrmv_v3_kernel", "spmv_csr_scalar"])
    assert row["selection"].startswith("our kernels (")
    assert row["groups"] == list(M.DEFAULT_GROUPS)
    # the fake ncu answers in milliseconds: its wall may round to 0.0
    assert row["wall_s"] > 0 and row["wall_s"] >= row["ncu_wall_s"] >= 0
    # ncu was given the case in the after tree's code, every run in a fresh process
    [profiled] = [c for c in fake_ncu.calls() if c.startswith("--export ")]
    assert "--profile-from-start off" in profiled and profiled.endswith("--profile-call")
    assert "| after | suite:seed6#cant cuda-spmv-sell | default | 1 |" in capsys.readouterr().out
    assert bench.main(["--table", str(out)]) == 0                   # the table again


def test_the_sitting_times_the_before_tree_first_then_each_group(bench, monkeypatch):
    calls = []

    def run_once(tree, src, matrix, backend, scale, extra, timeout_s):
        calls.append((tree, str(src), backend, tuple(extra)))
        return {"tree": tree, "matrix": matrix, "backend": backend, "extra": extra,
                "exit": 0, "wall_s": 1.0}

    monkeypatch.setattr(bench, "run_once", run_once)
    monkeypatch.setattr(bench, "gpu_name", lambda: "")
    args = bench.parse_args(["--before-src", "/b/src", "--after-src", "/a/src", "--repeats",
                             "2", "--each-group", "--ncu", "/opt/ncu"])
    payload = bench.collect(args)
    ncu = ("--ncu", "/opt/ncu")
    assert calls == [("before", "/b/src", "cuda-spmv-auto", ncu)] * 2 + [
        ("after", "/a/src", "cuda-spmv-auto", ncu)] * 2 + [
        ("after", "/a/src", "cuda-spmv-auto", (*ncu, "--groups", g)) for g in M.METRIC_GROUPS]
    assert payload["trees"] == {"before": "/b/src", "after": "/a/src"}
    assert len(payload["runs"]) == 4 + len(M.METRIC_GROUPS)
