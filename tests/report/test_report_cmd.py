"""``sparsescope report RESULTS.json --out DIR`` in-process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from report_builders import make_cpu_runset

from sparsescope.cli import main
from sparsescope.results.io import write_runset

MODULES = ["sparsescope.cli.report_cmd"]


@pytest.fixture(scope="module")
def results_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("results") / "run.json"
    write_runset(path, make_cpu_runset())
    return path


def test_report_json_lists_paths_and_readings(results_file, tmp_path, capsys):
    out_dir = tmp_path / "rep"
    assert main(["report", str(results_file), "--out", str(out_dir), "--json"],
                modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["markdown"] == str(out_dir / "report.md")
    assert out["html"] == str(out_dir / "report.html")
    # a CPU run: no gap decomposition or per-case DAE (figures and tables) on a GPU's warps
    assert len(out["figures"]) == 6 and len(out["tables"]) == 17
    assert all((out_dir / "figures").joinpath(p.rsplit("/", 1)[1]).is_file()
               for p in out["figures"])
    assert "reference GPU H200" in out["readings"]["littles_law"]
    assert out["readings"]["outcomes"].startswith("1 case(s) skipped and 1 failed, of 4")
    assert out["skipped_figures"] == [
        {"name": "predicted_vs_measured", "reason": "no timed case carries a predicted time"},
        {"name": "seed_vs_ours",
         "reason": "no torch-cusparse-i64 case on a matrix of seed 000 section 3.1"}]


def test_reference_gpu_names_the_gpu_of_a_cpu_runs_warp_model(tmp_path, capsys, monkeypatch):
    from sparsescope.report import spmv_layout

    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {})  # the tables are what is checked
    results = tmp_path / "run.json"
    write_runset(results, make_cpu_runset(reference_gpu=""))  # the run named no GPU
    assert main(["report", str(results), "--out", str(tmp_path / "a"), "--json"],
                modules=MODULES) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "littles_law" not in plain["readings"] and "dae_sram" not in plain["readings"]
    assert main(["report", str(results), "--out", str(tmp_path / "b"), "--json",
                 "--reference-gpu", "B200"], modules=MODULES) == 0
    named = json.loads(capsys.readouterr().out)
    assert named["readings"]["littles_law"].startswith(
        "Computed for the reference GPU B200 from its spec")
    assert "dae" not in named["readings"] and "gap" not in named["readings"]
    assert main(["report", str(results), "--out", str(tmp_path / "c"), "--reference-gpu",
                 "Z9"], modules=MODULES) == 2
    assert "Z9" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_report_text_output(results_file, tmp_path, capsys):
    assert main(["report", str(results_file), "--out", str(tmp_path)], modules=MODULES) == 0
    text = capsys.readouterr().out
    assert f"wrote {tmp_path / 'report.html'}" in text
    assert "wrote 6 figures" in text and "  timing: band-small comes closest" in text


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    ('{"schema_version": 999}', "run.json"),
])
def test_bad_results_file_exits_5_with_the_message(tmp_path, capsys, content, message):
    bad = tmp_path / "run.json"
    bad.write_text(content)
    out_dir = tmp_path / "rep"
    assert main(["report", str(bad), "--out", str(out_dir)], modules=MODULES) == 5
    err = capsys.readouterr().err
    assert err.startswith("sparsescope: error: ") and message in err
    assert "Traceback" not in err
    assert not out_dir.exists()


def test_missing_results_file_exits_5(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.json"), "--out", str(tmp_path / "r"), "--json"],
                modules=MODULES) == 5
    assert json.loads(capsys.readouterr().out)["type"] == "ResultsFormatError"


def test_importing_the_report_stage_loads_no_matplotlib():
    code = ("import sys, sparsescope.report, sparsescope.cli.report_cmd\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('matplotlib', 'torch', 'cupy', 'tqdm')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_report_with_profile_and_sass_sections(results_file, tmp_path, capsys, h200_fixtures):
    out_dir = tmp_path / "rep"
    argv = ["report", str(results_file), "--out", str(out_dir), "--json",
            "--profile", str(h200_fixtures / "ncu_metrics_cant_analog.csv"),
            "--sass", str(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass"),
            "--kernel", "spmv_csr_scalar"]
    assert main(argv, modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sections"] == ["Nsight Compute profile", "SASS analysis"]
    md = (out_dir / "report.md").read_text()
    assert "Long Scoreboard" in md or "long_scoreboard" in md
    assert "spmv_csr_scalar" in md and "spmv_csr_vector8" not in md
    assert (out_dir / "figures" / "profile_stalls.png").stat().st_size > 5000
    page = (out_dir / "report.html").read_text()
    # every figure, the profile's too, is embedded: the page loads nothing from outside
    assert page.count("data:image/png;base64") == len(list((out_dir / "figures").glob("*.png")))
    assert "[image:" not in page


def test_report_of_an_spmm_run_gets_the_op_sections(tmp_path, capsys):
    """A saved SpMM run (the committed H200 one) re-rendered by ``sparsescope report``: the
    SpMM sections, not SpMV tables with SpMM cases modelled as SpMV."""
    from pathlib import Path

    saved = Path(__file__).resolve().parents[2] / "results" / "h200" / "spmm" / "results.json.xz"
    assert main(["report", str(saved), "--out", str(tmp_path)], modules=MODULES) == 0
    capsys.readouterr()
    text = (tmp_path / "report.md").read_text()
    assert "# SpMM performance report" in text
    assert "## 3. SpMM: predicted against measured" in text
    assert "## 4. SpMM: time, bandwidth and % of bound" in text
    assert "SpMV" not in text.split("## 3.")[0]  # no SpMV byte model or tables before it
