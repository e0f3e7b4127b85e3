"""``sparsescope model`` in-process: the keys the issue names, with the seed's numbers."""

from __future__ import annotations

import json

import pytest

from sparsescope.cli import main

MODULES = ["sparsescope.cli.model_cmd"]


def run_json(capsys, *argv: str) -> dict:
    assert main(["model", *argv, "--json"], modules=MODULES) == 0
    return json.loads(capsys.readouterr().out)


def test_littles_law_block_h200(capsys):
    out = run_json(capsys, "--gpu", "H200")
    ll = out["littles_law"]
    assert round(ll["warps_per_sm_required"], 1) == 85.2
    assert round(ll["bw_ceiling_pct"], 1) == 75.1
    assert round(ll["dep_chain_ceiling_pct"], 1) == 37.5
    assert round(out["roofline"]["ridge_flop_per_byte"], 1) == 13.9
    assert [round(s["warps_per_sm_required"], 1) for s in out["sensitivity"]] == [56.8, 85.2, 113.6]
    assert out["dae"]["min_fifo_depth"] == 2
    assert "case" not in out


def test_latency_override(capsys):
    out = run_json(capsys, "--gpu", "h200", "--latency-ns", "400")
    assert round(out["littles_law"]["bw_ceiling_pct"], 1) == 56.3
    assert round(out["littles_law"]["dep_chain_ceiling_pct"], 1) == 28.2


def test_one_case_ldoor_seed_section_3_1(capsys):
    out = run_json(capsys, "--gpu", "H200", "--rows", "952203", "--cols", "952203",
                   "--nnz", "46522475", "--time-ms", "0.1964", "--index-bytes", "8",
                   "--no-y-read")
    case = out["case"]
    assert case["bytes"] == 573_504_956
    assert round(case["floor_ms"], 4) == 0.1195
    assert round(case["eff_bw_gb_s"]) == 2920
    assert round(case["pct_peak"], 1) == 60.8
    assert round(case["gap"], 1) == 1.6
    assert round(out["dae"]["bw_prediction"]["speedup"], 2) == 1.23


def test_cpi_prediction_and_text(capsys):
    assert main(["model", "--cpi", "11.0", "--long-scoreboard", "4.23"], modules=MODULES) == 0
    text = capsys.readouterr().out
    assert "85.2 warps/SM required" in text
    assert "CPI 11.00 -> 6.77, 1.62x" in text


@pytest.mark.parametrize("argv, message", [
    (["--rows", "10", "--nnz", "5"], "a case needs --rows, --nnz and --time-ms"),
    (["--rows", "10", "--nnz", "5", "--time-ms", "0"], "--time-ms finite and > 0"),
    (["--cpi", "11.0"], "needs both --cpi and --long-scoreboard"),
    (["--cpi", "3", "--long-scoreboard", "4"], "must be below the CPI"),
])
def test_bad_arguments_exit_2(capsys, argv, message):
    assert main(["model", *argv], modules=MODULES) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_unknown_gpu_lists_known(capsys):
    assert main(["model", "--gpu", "Z9000"], modules=MODULES) == 2
    err = capsys.readouterr().err
    assert "unknown GPU 'Z9000'" in err and "H200" in err
