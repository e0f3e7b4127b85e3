"""Every user error is one line and an exit code, never a traceback (issue 33, item 4).

Bad values are refused before anything is measured (``nothing_measured`` trips otherwise);
``--json`` with an argparse error prints a JSON error document; a closed pipe on stdout ends
quietly (exit 141), checked in a subprocess: only a real pipe shows it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sparsescope.cli import main

FAST = ["--warmups", "1", "--repeats", "2", "--flush", "off"]
GOOD = "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 2 2.0\n3 1 4.0\n"


@pytest.fixture
def nothing_measured(monkeypatch):
    from sparsescope.api import runs
    from sparsescope.backends import runner
    from sparsescope.hardware import cpu_ceilings

    def refuse(*args, **kwargs):
        raise AssertionError("measured before the usage error")

    monkeypatch.setattr(cpu_ceilings, "measure_cpu_ceilings", refuse)
    monkeypatch.setattr(runner, "run_matrix", refuse)
    monkeypatch.setattr(runs, "_matrices", refuse)


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.mtx"
    path.write_text(GOOD)
    return path


def _one_line_error(capsys, rc: int, code: int, *words: str) -> str:
    err = capsys.readouterr().err
    assert rc == code, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("sparsescope: error:")]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], err
    return lines[0]


@pytest.mark.parametrize("extra, words", [
    (["--seed", "-1"], ["--seed", "-1"]),
    (["--latency-ns", "nan"], ["--latency-ns", "nan"]),
    (["--latency-ns", "-5"], ["--latency-ns", "-5"]),
    (["--latency-ns", "inf"], ["--latency-ns"]),
    (["--repeats", "1000000000"], ["repeats", "100000"]),
    (["--warmups", "1000000000"], ["warmups", "100000"]),
])
def test_run_refuses_bad_values_before_measuring(tmp_path, good, capsys, nothing_measured,
                                                 extra, words):
    out = tmp_path / "o"
    rc = main(["run", "--matrix", str(good), "--out", str(out), "--no-store", *FAST, *extra])
    _one_line_error(capsys, rc, 2, *words)
    assert not (out / "results.json").exists()


@pytest.mark.parametrize("value", ["1000000000000", "1e12", "nan", "inf", "2.5"])
def test_rows_selected_out_of_reach_is_a_usage_error(tmp_path, good, capsys, nothing_measured,
                                                     value):
    rc = main(["run", "--op", "slice", "--matrix", str(good), "--rows-selected", value,
               "--out", str(tmp_path / "o"), "--no-store", *FAST])
    _one_line_error(capsys, rc, 2, "rows_selected")


def test_the_seed_is_checked_by_the_api_too(tmp_path):
    from sparsescope import api
    from sparsescope.errors import UsageError

    with pytest.raises(UsageError, match="--seed"):
        api.run(suite="seed6", scale=0.002, seed=-1, out_dir=tmp_path / "o", store=False)


def test_timing_config_checked():
    from sparsescope.errors import UsageError
    from sparsescope.timing.types import MAX_REPEATS, TimingConfig

    assert TimingConfig().checked() == TimingConfig()
    for bad in (dict(repeats=0), dict(repeats=MAX_REPEATS + 1), dict(warmups=-1),
                dict(repeats=2.5), dict(min_total_ms=float("nan")), dict(statistic="max"),
                dict(clock="sundial")):
        with pytest.raises(UsageError):
            TimingConfig(**bad).checked()


# ------------------------------------------------------------------ argparse errors and --json

@pytest.mark.parametrize("argv", [
    ["run", "--suite", "seed6", "--repeats", "1e9", "--out", "o", "--json"],
    ["run", "--json", "--no-such-option"],
    ["specs", "--json", "--bogus"],
    ["--json", "nonsense-command"],
])
def test_json_with_an_argparse_error_prints_a_json_error(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    captured = capsys.readouterr()
    assert stop.value.code == 2
    doc = json.loads(captured.out)
    assert doc["exit_code"] == 2 and doc["type"] == "UsageError" and doc["error"]
    assert doc["error"] in captured.err  # the same message argparse prints on stderr
    assert "Traceback" not in captured.err


def test_an_argparse_error_without_json_prints_nothing_on_stdout(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--no-such-option"])
    captured = capsys.readouterr()
    assert stop.value.code == 2 and captured.out == ""
    assert "error:" in captured.err


def test_help_still_exits_0(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["specs", "--help", "--json"])
    assert stop.value.code in (0, None)
    assert "usage:" in capsys.readouterr().out


# ------------------------------------------------------------------ a closed pipe

def _closed_pipe(argv: list[str]) -> tuple[int, str]:
    """Run the CLI with its stdout a pipe whose reader has already gone (`| true`)."""
    code = "import sys; from sparsescope.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes before anything is written
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize("argv", [["specs", "--json"], ["specs"]])
def test_a_closed_pipe_ends_quietly(argv):
    rc, err = _closed_pipe(argv)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert rc == 141, err


def test_a_closed_pipe_matrices_stats(tmp_path):
    path = tmp_path / "good.mtx"
    path.write_text(GOOD)
    rc, err = _closed_pipe(["matrices", "stats", str(path)])
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert rc == 141, err


def test_a_closed_pipe_does_not_stop_a_run(tmp_path, store_with_cpu_ceilings):
    """Case lines go to a reader that left (`run ... | head -1`): the run goes on and
    writes its results, and its exit code is the run's own. (Into the test process's store,
    whose cached CPU ceilings spare the run measuring them.)"""
    path = tmp_path / "good.mtx"
    path.write_text(GOOD)
    out = tmp_path / "o"
    rc, err = _closed_pipe(["run", "--matrix", str(path), "--matrix", str(path), "--out",
                            str(out), *FAST])
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert (out / "results.json").is_file(), err
    assert rc == 0, err
