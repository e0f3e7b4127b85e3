"""Scoring: two hand-written analysis JSONs, predicted against measured speedup, the history in
the results store, and the CLI."""

from __future__ import annotations

import copy
import json

import pytest

from sparsescope.analyze.api import analysis_from_dict, read_analysis
from sparsescope.analyze.score import ScoreHistory, compare, mean_absolute_error
from sparsescope.cli import main
from sparsescope.errors import ResultsFormatError

MODULES = ["sparsescope.cli.analyze_cmd"]

DEVICE = {"name": "H200", "compute_capability": "9.0", "sm_count": 132, "max_warps_per_sm": 64,
          "peak_bw_gb_s": 4800.0, "fp32_peak_gflops": 66900.0, "dram_latency_ns": 300.0}


def evidence(version: str, time_ms: float) -> dict:
    return {"workload": "toy", "version": version, "device": DEVICE, "time_ms": time_ms,
            "time_source": "cuda-events", "ideal_bytes": 48_000_000, "ideal_flops": None,
            "bytes_source": "declared", "floor_ms": 0.01, "kernels": []}


def item(rank: int, rule: str, speedup: float, group: str = "") -> dict:
    return {"rank": rank, "rule": rule, "kernel": "k", "action": "fix", "model": "bytes-removed",
            "formula": "x", "assumption": "y", "kernel_speedup": speedup,
            "predicted_speedup": speedup, "predicted_time_ms": None, "group": group}


#: BEFORE: 0.100 ms, roadmap: overfetch 3.0x and uncoalesced 2.0x (same group), chain 1.5x.
BEFORE = {"kind": "sparsescope-analysis", "schema_version": 1, "workload": "toy",
          "version": "v0", "addresses": [], "evidence": evidence("v0", 0.100),
          "bottlenecks": [], "findings": [],
          "roadmap": [item(1, "overfetch", 3.0, "memory-traffic"),
                      item(2, "uncoalesced_access", 2.0, "memory-traffic"),
                      item(3, "dependent_load_chain", 1.5, "latency-hiding")]}


def after(version: str, time_ms: float, addresses: list[str]) -> dict:
    d = copy.deepcopy(BEFORE)
    d.update(version=version, addresses=addresses, evidence=evidence(version, time_ms),
             roadmap=[item(1, "dependent_load_chain", 1.2, "latency-hiding")])
    return d


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, data in (("before", BEFORE),
                       ("after", after("v1", 0.040, ["uncoalesced_access", "overfetch"])),
                       ("last", after("v2", 0.032, ["dependent_load_chain"]))):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(data))
    return paths


def test_compare_hand_computed(files):
    before, aft = read_analysis(files["before"]), read_analysis(files["after"])
    s = compare(before, aft)
    # same group: max(3.0, 2.0); floor cap 0.100 / 0.01 = 10 does not bind
    assert s.predicted_speedup == 3.0
    assert s.measured_speedup == pytest.approx(0.100 / 0.040)        # 2.5
    assert s.abs_error == pytest.approx(0.5)
    assert s.rel_error_pct == pytest.approx(20.0)
    assert s.applied == ("uncoalesced_access", "overfetch")
    assert "#1 overfetch" in s.basis and "#2 uncoalesced_access" in s.basis


def test_compare_defaults_and_unmatched_rules(files):
    before = read_analysis(files["before"])
    aft = read_analysis(files["after"])
    assert compare(before, aft, ["dependent_load_chain"]).predicted_speedup == 1.5
    none = compare(before, aft, ["warp_divergence"])
    assert none.predicted_speedup == 1.0 and "predicted no gain" in none.basis
    plain = analysis_from_dict({**after("v1", 0.05, []), "addresses": []})
    assert compare(before, plain).applied == ("overfetch",)         # BEFORE's top item


def test_history_and_mae(files, tmp_path):
    history = ScoreHistory(tmp_path / "store.sqlite")
    a, b, c = (read_analysis(files[k]) for k in ("before", "after", "last"))
    s1, s2 = compare(a, b), compare(b, c)
    assert s2.predicted_speedup == 1.2 and s2.measured_speedup == pytest.approx(1.25)
    history.record(s1)
    history.record(s2)
    stored = history.scores("toy")
    assert [x.score.after for x in stored] == ["v1", "v2"]
    assert history.mean_absolute_error("toy") == pytest.approx((0.5 + 0.05) / 2)
    assert mean_absolute_error([]) is None
    assert history.scores("other") == []


def test_cli_compare_series_writes_report_and_stores(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARSESCOPE_STORE", str(tmp_path / "store.sqlite"))
    out = tmp_path / "series"
    rc = main(["analyze", "--compare", str(files["before"]), str(files["after"]),
               str(files["last"]), "--reference-result", str(files["before"]), "--out",
               str(out), "--json"], modules=MODULES)
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["after"] for s in data["scores"]] == ["v1", "v2"]
    assert data["mae"] == pytest.approx(0.275)
    assert data["history_mae"] == pytest.approx(0.275)        # the store was empty before
    assert data["reference_speedup"] == pytest.approx(0.100 / 0.032)
    md = (out / "report.md").read_text()
    assert "| v0 -> v1 | uncoalesced_access, overfetch | 3.00x | 2.50x | 0.50 | +20 % |" in md
    assert "Mean absolute error of the predictions (this series): 0.275" in md
    assert "<table>" in (out / "report.html").read_text()
    assert json.loads((out / "scores.json").read_text())["mae"] == pytest.approx(0.275)
    # the second run adds to the history
    main(["analyze", "--compare", str(files["before"]), str(files["after"]), "--applied",
          "dependent_load_chain", "--json"], modules=MODULES)
    data = json.loads(capsys.readouterr().out)
    assert data["scores"][0]["predicted_speedup"] == 1.5
    assert data["history_mae"] == pytest.approx((0.5 + 0.05 + 1.0) / 3)


def test_bad_analysis_files(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**BEFORE, "schema_version": 99}))
    assert main(["analyze", "--compare", str(bad), str(bad)], modules=MODULES) == 5
    assert "schema_version 99" in capsys.readouterr().err
    wrong = {**BEFORE, "evidence": {**evidence("v0", 0.1), "bogus": 1}}
    with pytest.raises(ResultsFormatError, match="unknown field"):
        analysis_from_dict(wrong)
    with pytest.raises(ResultsFormatError, match="expected a number"):
        analysis_from_dict({**BEFORE, "evidence": {**evidence("v0", 0.1), "time_ms": "fast"}})
    notime = tmp_path / "notime.json"
    notime.write_text(json.dumps({**BEFORE, "evidence": evidence("v0", None)}))
    assert main(["analyze", "--compare", str(notime), str(notime)], modules=MODULES) == 2
