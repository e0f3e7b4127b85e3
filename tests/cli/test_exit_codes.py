"""``sparsescope run`` exit codes: 11 when a case fails its check (or, with ``--strict``, is
skipped), 0 with a skipped case, 2 for a bad ``--scale``; and ``--help`` documents 9, 10, 11."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from sparsescope.cli import main
from sparsescope.errors import EXIT_CASES_FAILED
from sparsescope.results.io import read_runset

FAST = ["--warmups", "1", "--repeats", "3", "--flush", "off"]
HEADER = "%%MatrixMarket matrix coordinate real general\n"


pytestmark = pytest.mark.usefixtures("figures_not_drawn", "cpu_ceilings_measured_once")


def _mtx(path, first_value: str):
    path.write_text(HEADER + f"3 3 4\n1 1 {first_value}\n1 3 0.5\n2 2 2.0\n3 3 3.0\n")
    return path


def test_every_case_failing_its_check_is_exit_11(tmp_path, capsys):
    """Three values of 3e38 fit float32 but their row's sum does not: with x of seed 0
    (0.274, -0.460, -0.918), signed to add up, the float32 result is inf (4.96e38 in float64),
    so rel_err is inf and the case fails. (A value beyond float32 itself, 1e39, is a skipped
    case with the number: test_a_value_beyond_float32_is_a_skipped_case_not_a_failure.)"""
    matrix = tmp_path / "overflow.mtx"
    matrix.write_text(HEADER + "3 3 5\n1 1 3e38\n1 2 -3e38\n1 3 -3e38\n2 2 2.0\n3 3 3.0\n")
    out = tmp_path / "out"
    rc = main(["run", "--matrix", str(matrix), "--out", str(out), "--no-store", "--json",
               *FAST])
    captured = capsys.readouterr()
    assert rc == EXIT_CASES_FAILED == 11, captured.err
    assert "Traceback" not in captured.err
    doc = json.loads(captured.out, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
    assert doc["exit_code"] == 11 and "failed" in doc["exit_reason"]
    assert [c["outcome"] for c in doc["cases"]] == ["failed"]
    assert doc["cases"][0]["rel_err"] is None  # inf, as strict JSON
    assert "sparsescope: warning: 1 of 1 case(s) failed" in captured.err
    # results and report are written all the same; the file keeps the inf
    case, = read_runset(out / "results.json").cases
    assert case.outcome == "failed" and math.isinf(case.correctness.rel_err)
    assert case.measurement is None  # not timed
    assert (out / "report.html").is_file()


def test_a_value_beyond_float32_is_a_skipped_case_not_a_failure(tmp_path, capsys):
    matrix = _mtx(tmp_path / "overflow.mtx", "1e39")
    rc = main(["run", "--matrix", str(matrix), "--out", str(tmp_path / "out"), "--no-store",
               "--json", *FAST])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    case, = doc["cases"]
    assert case["outcome"] == "skipped"
    assert case["reason"] == ("the matrix holds values up to 1e+39, beyond float32's largest "
                              "finite value 3.4e+38; run it in float64")


@pytest.fixture
def skipping_backend():
    """torch-cusparse-i64 is skipped as unavailable on a machine without a CUDA GPU."""
    from sparsescope.hardware.detect import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present: torch-cusparse-i64 would run, not skip")
    return ["--backend", "scipy-cpu", "--backend", "torch-cusparse-i64"]


def test_skipped_case_is_exit_0(tmp_path, capsys, skipping_backend):
    matrix = _mtx(tmp_path / "small.mtx", "1.0")
    rc = main(["run", "--matrix", str(matrix), *skipping_backend, "--out", str(tmp_path / "o"),
               "--no-store", "--json", *FAST])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    cases = {c["backend"]: c for c in json.loads(captured.out)["cases"]}
    assert cases["scipy-cpu"]["outcome"] == "ok", cases["scipy-cpu"]["reason"]
    skipped = cases["torch-cusparse-i64"]
    assert skipped["outcome"] == "skipped", skipped  # skipped, not failed
    assert "unavailable" in skipped["reason"]
    assert "warning" not in captured.err


def test_skipped_case_with_strict_is_exit_11(tmp_path, capsys, skipping_backend):
    matrix = _mtx(tmp_path / "small.mtx", "1.0")
    rc = main(["run", "--matrix", str(matrix), *skipping_backend, "--out", str(tmp_path / "o"),
               "--no-store", "--strict", *FAST])
    captured = capsys.readouterr()
    assert rc == 11, captured.err
    assert "skipped (--strict)" in captured.err and "torch-cusparse-i64" in captured.err
    assert (tmp_path / "o" / "results.json").is_file()  # written all the same


def test_scale_above_one_is_usage_error(tmp_path, capsys):
    rc = main(["run", "--suite", "seed6", "--scale", "2", "--out", str(tmp_path / "o"),
               "--no-store"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "Traceback" not in err
    assert err.startswith("sparsescope: error: ") and "--scale" in err and "(0, 1]" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]], ids=["top", "run"])
def test_help_documents_exit_codes(argv):
    proc = subprocess.run([sys.executable, "-m", "sparsescope", *argv], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # argparse re-wraps the run epilog
    assert "Exit codes:" in text
    for code, words in ((9, "cannot be written"), (10, "store failed"), (11, "failed")):
        assert f"{code} " in text, f"exit code {code} not in `sparsescope {' '.join(argv)}`"
        index = text.index(f"{code} ")
        assert words in text[index:index + 120], f"exit code {code} is not explained"


@pytest.mark.parametrize("argv", [["--latency-ns", "nan"], ["--bw-gb-s", "inf"],
                                  ["--rows", "10", "--nnz", "10", "--time-ms", "inf"]])
def test_model_refuses_non_finite_numbers(argv, capsys):
    from sparsescope.cli import main

    assert main(["model", *argv]) == 2
    err = capsys.readouterr().err
    assert "finite" in err and "Traceback" not in err


def test_analyze_out_on_a_file_fails_first(tmp_path, capsys):
    from sparsescope.cli import main

    taken = tmp_path / "taken"
    taken.write_text("keep me")
    code = main(["analyze", "--compare", "a.json", "b.json", "--out", str(taken)])
    err = capsys.readouterr().err
    assert code == 9 and str(taken) in err and taken.read_text() == "keep me"
