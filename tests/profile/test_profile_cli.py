"""``sparsescope profile`` in-process: read, report, and run with the fake ncu."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sparsescope.cli import main

MODULES = ["sparsescope.cli.profile_cmd"]
SUMMARY_KEYS = {"index", "name", "demangled_name", "block_size", "grid_size",
                "registers_per_thread", "cpi", "stalls", "achieved_occupancy_pct",
                "theoretical_occupancy_pct", "duration_ns", "replay_passes"}


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_read_report_json(h200_fixtures, capsys):
    rc = main(["profile", "read", str(h200_fixtures / "spmv_full.ncu-rep"), "--json"],
              modules=MODULES)
    assert rc == 0
    out = _json(capsys)
    assert out["format"] == "ncu-rep" and len(out["kernels"]) == 4
    first = out["kernels"][0]
    assert set(first) == SUMMARY_KEYS
    assert (first["name"], first["block_size"], first["grid_size"]) == (
        "csrmv_v3_kernel", 512, 1305)
    assert first["registers_per_thread"] == 47
    assert first["cpi"] == pytest.approx(14.540206, abs=1e-6)
    assert first["stalls"]["long_scoreboard"] == pytest.approx(4.035870, abs=1e-6)
    assert "smsp__" not in "".join(first["stalls"])           # reason names, not metric names
    assert first["theoretical_occupancy_pct"] == 50.0
    assert first["duration_ns"] == 27840.0
    assert first["replay_passes"] == 38                       # --set full on the H200


def test_read_csv_with_details(h200_fixtures, capsys):
    rc = main(["profile", "read", str(h200_fixtures / "spmv_full_raw.csv"), "--details",
               str(h200_fixtures / "spmv_full_details.csv")], modules=MODULES)
    assert rc == 0
    text = capsys.readouterr().out
    assert "4 kernel launch(es)" in text
    assert "spmv_csr_scalar" in text and "long_scoreboard 38.34" in text


def test_read_not_a_report(tmp_path, capsys):
    bad = tmp_path / "x.ncu-rep"
    bad.write_bytes(b"\x13\x37" * 2000)
    rc = main(["profile", "read", str(bad), "--json"], modules=MODULES)
    assert rc == 8
    captured = capsys.readouterr()
    assert json.loads(captured.out)["type"] == "ProfileError"
    assert f"sparsescope: error: {bad}: not an Nsight Compute report" in captured.err


def test_report_writes_markdown_and_figures(h200_fixtures, tmp_path, capsys):
    rc = main(["profile", "report", str(h200_fixtures / "ncu_metrics_cant_analog.csv"),
               str(h200_fixtures / "spmv_full.ncu-rep"), "--kernel", "csrmv_v3_kernel",
               "--labels", "cant-int64,cant-int32,cant-full", "--out", str(tmp_path), "--json"],
              modules=MODULES)
    assert rc == 0
    out = _json(capsys)
    assert out["kernels"] == 3                         # one launch per distinct launch config
    markdown = (tmp_path / "profile.md").read_text()
    assert "| Metric | cant-int64 | cant-int32 | cant-full |" in markdown
    assert "| Registers/Thread | 47 | 32 | 47 |" in markdown
    assert "![Warp stall breakdown](profile_stalls.png)" in markdown
    # the metric-group runs hold no FLOP counters; the full set does (classic roofline)
    assert set(out["figures"]) == {"stalls", "pie:cant-int64", "pie:cant-int32", "pie:cant-full",
                                   "instruction_roofline", "shared_roofline", "classic_roofline"}
    assert out["ceiling_kinds"] == ["ncu peak", "spec"]   # no results file, no store
    for path in out["figures"].values():
        assert (tmp_path / path.split("/")[-1]).read_bytes()[:4] == b"\x89PNG"


def test_report_usage_errors(h200_fixtures, capsys):
    rep = str(h200_fixtures / "spmv_full.ncu-rep")
    assert main(["profile", "report", rep, "--kernel", "nope"], modules=MODULES) == 2
    assert main(["profile", "report", rep, "--labels", "a,b,c"], modules=MODULES) == 2  # 2 kept
    assert main(["profile", "read", rep, "--details", rep], modules=MODULES) == 2
    assert "no kernel named 'nope'" in capsys.readouterr().err


def test_run_with_fake_ncu(fake_ncu, tmp_path, capsys):
    rc = main(["profile", "run", "--suite", "seed6", "--matrix", "cant", "--backend",
               "torch-cusparse-i64", "--set", "full", "--kernel", "regex:csrmv", "--launch-skip",
               "1", "--clock-control", "none", "--out", str(tmp_path), "--json"], modules=MODULES)
    assert rc == 0
    out = _json(capsys)
    assert out["report"] == str(tmp_path / "profile_seed6_cant_torch-cusparse-i64.ncu-rep")
    assert out["source_csv"] == str(tmp_path / "profile_seed6_cant_torch-cusparse-i64_source.csv")
    assert [k["name"] for k in out["kernels"]] == ["csrmv_v3_kernel"] * 3 + ["spmv_csr_scalar"]
    assert set(out["kernels"][0]) == SUMMARY_KEYS
    assert out["passes"] == [{"kernel": "csrmv_v3_kernel", "passes": 40}]
    command = " ".join(out["command"])
    assert "--set full" in command and "--kernel-name regex:csrmv" in command
    assert "--launch-skip 1" in command and "--clock-control none" in command
    # the user's --kernel replaces the cuSPARSE pattern (and its demangled name base); the
    # checked call alone is still profiled
    assert "--kernel-name-base function" in command
    assert "--profile-from-start off" in command
    assert out["kernel_selection"]["origin"] == "user"
    assert out["kernel_selection"]["kernel_filter"] == "regex:csrmv"
    assert out["kernel_selection"]["one_call"] is True
    assert out["collected"] == {"set": "full", "groups": [], "sections": []}
    assert out["command"][-16:] == [
        sys.executable, "-m", "sparsescope.target", "case", "--op", "spmv", "--suite", "seed6",
        "--matrix", "cant", "--backend", "torch-cusparse-i64", "--scale", "1.0",
        "--check-only", "--profile-call"]


@pytest.mark.parametrize("options, stem, target", [
    (["--op", "spmm", "--suite", "dlmc3", "--matrix", "dlmc-512x1024", "--backend",
      "spmm-cuda-rowwarp", "--k", "64", "--layout", "col"],
     "profile_dlmc3_dlmc-512x1024_spmm-cuda-rowwarp_k-64_layout-col",
     ["--op", "spmm", "--suite", "dlmc3", "--matrix", "dlmc-512x1024", "--backend",
      "spmm-cuda-rowwarp", "--scale", "1.0", "--param", "k=64", "--param", "layout=col",
      "--check-only", "--profile-call"]),
    (["--op", "slice", "--suite", "slice003", "--matrix", "slice-10000", "--backend",
      "slice-cuda-scatter", "--rows-selected", "5000", "--weights", "scalar", "--scale", "0.5"],
     "profile_slice003_slice-10000_slice-cuda-scatter_rows-selected-5000_weights-scalar_"
     "out-of-range-error",
     ["--op", "slice", "--suite", "slice003", "--matrix", "slice-10000", "--backend",
      "slice-cuda-scatter", "--scale", "0.5", "--param", "rows_selected=5000", "--param",
      "weights=scalar", "--param", "out_of_range=error", "--check-only", "--profile-call"]),
])
def test_run_other_ops_with_fake_ncu(fake_ncu, tmp_path, capsys, options, stem, target):
    rc = main(["profile", "run", *options, "--groups", "stalls", "--launch-count", "2",
               "--out", str(tmp_path), "--json"], modules=MODULES)
    assert rc == 0
    out = _json(capsys)
    assert out["report"] == str(tmp_path / f"{stem}.ncu-rep")
    assert out["raw_csv"] == str(tmp_path / f"{stem}_raw.csv")
    op_target = [sys.executable, "-m", "sparsescope.target", "case", *target]
    assert out["command"][-len(op_target):] == op_target
    assert out["command"].count("sparsescope.target") == 1
    assert out["command"][out["command"].index("--launch-count") + 1] == "2"
    assert fake_ncu.calls()[0].endswith(" ".join(op_target))     # what ncu was given


@pytest.mark.parametrize("options, message", [
    (["--op", "slice", "--backend", "spmm-cuda-rowwarp"],
     "sparsescope: error: backend 'spmm-cuda-rowwarp' does not support op 'slice' "
     "(it implements spmm); backends for slice: slice-brainevent, slice-cuda-gather, "
     "slice-cuda-scatter, slice-cupy-i32, slice-scipy-cpu, slice-torch\n"),
    (["--op", "spmm", "--backend", "cuda-csr-vector"],
     "sparsescope: error: backend 'cuda-csr-vector' does not support op 'spmm' "
     "(it implements spmv); backends for spmm: spmm-cublas-dense, spmm-cuda-auto, "
     "spmm-cuda-auto-rules, spmm-cuda-blocktc, spmm-cuda-colmajor, spmm-cuda-ell, "
     "spmm-cuda-paneltc, spmm-cuda-rowgroup, spmm-cuda-rowtile, "
     "spmm-cuda-rowwarp, spmm-cuda-transposed, spmm-cupy-i32, spmm-ginkgo, spmm-nvmath-i32, "
     "spmm-scipy-cpu, spmm-torch-i32, spmm-torch-i64\n"),
    (["--op", "spmm", "--backend", "spmm-cuda"],
     "sparsescope: error: unknown spmm backend 'spmm-cuda'; known: spmm-cublas-dense, "
     "spmm-cuda-auto, "),
    (["--backend", "slice-torch"],
     "sparsescope: error: backend 'slice-torch' does not support op 'spmv' "
     "(it implements slice); backends for spmv: "),
    (["--op", "spmm", "--backend", "spmm-scipy-cpu", "--rows-selected", "8"],
     "sparsescope: error: --rows-selected applies to --op slice, not --op spmm\n"),
    # the first option the op does not take is named (the parameters' order: k, then layout)
    (["--backend", "scipy-cpu", "--k", "8", "--layout", "col"],
     "sparsescope: error: --k applies to --op spmm, not --op spmv\n"),
    (["--op", "spmm", "--backend", "spmm-scipy-cpu", "--layout", "diag"],
     "sparsescope: error: layout must be one of row, col, got 'diag'\n"),
    (["--op", "slice", "--backend", "slice-scipy-cpu", "--out-of-range", "wrap"],
     "sparsescope: error: out_of_range must be one of error, zero, got 'wrap'\n"),
])
def test_run_usage_errors_stop_before_ncu(fake_ncu, tmp_path, capsys, options, message):
    rc = main(["profile", "run", "--suite", "dlmc3", "--matrix", "dlmc-128x256", *options,
               "--out", str(tmp_path)], modules=MODULES)
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith(message)
    assert "Traceback" not in err
    assert fake_ncu.calls() == []                                   # ncu never started


@pytest.mark.parametrize("option", ["--repeats", "--warmups"])
def test_run_has_no_timing_options(fake_ncu, tmp_path, capsys, option):
    # every op's target is checked once under ncu and not timed: no warm-up or repeat count
    with pytest.raises(SystemExit) as exit_:
        main(["profile", "run", "--suite", "dlmc3", "--matrix", "dlmc-128x256", "--op", "slice",
              "--backend", "slice-scipy-cpu", option, "5", "--out", str(tmp_path)],
             modules=MODULES)
    assert exit_.value.code == 2
    assert f"unrecognized arguments: {option} 5" in capsys.readouterr().err
    assert fake_ncu.calls() == []


def test_bare_profile_is_run_and_reports_errors(fake_ncu, tmp_path, capsys):
    fake_ncu.mode("perm")
    rc = main(["profile", "--suite", "seed6", "--matrix", "cant", "--backend",
               "torch-cusparse-i64", "--out", str(tmp_path)], modules=MODULES)
    assert rc == 8
    assert "ERR_NVGPUCTRPERM" in capsys.readouterr().err
    assert main(["profile"], modules=MODULES) == 2
    assert main(["profile", "run", "--suite", "seed6", "--matrix", "cant", "--backend", "b",
                 "--groups", "stalls,bogus"], modules=MODULES) == 2
    assert "unknown metric group 'bogus'" in capsys.readouterr().err


def test_cli_module_imports_no_heavy_library():
    # scipy may load: the op options are generated from each op's ParamSpecs, on the op
    # classes, whose modules hold the float64 references (scipy.sparse)
    code = ("import sys; from sparsescope.cli import build_parser; "
            "build_parser(['sparsescope.cli.profile_cmd']); import sparsescope.profile; "
            "print(sorted(m for m in ('matplotlib', 'ncu_report', 'torch', 'cupy') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_report_takes_measured_ceilings_from_a_results_file(h200_fixtures, tmp_path, capsys):
    from pathlib import Path

    results = Path(__file__).resolve().parents[2] / "results" / "h200" / "seed6" / "results.json"
    rc = main(["profile", "report", str(h200_fixtures / "spmv_full.ncu-rep"), "--results",
               str(results), "--json"], modules=MODULES)
    assert rc == 0
    out = _json(capsys)
    assert out["ceiling_kinds"] == ["measured", "ncu peak", "spec"]
    assert out["labels"] == ["csrmv_v3_kernel", "spmv_csr_scalar"]
    with pytest.raises(SystemExit) as exit_:                              # one source of ceilings
        main(["profile", "report", str(h200_fixtures / "spmv_full.ncu-rep"), "--results",
              str(results), "--store"], modules=MODULES)
    assert exit_.value.code == 2
