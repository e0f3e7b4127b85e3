"""Outputs are checked before anything is measured or generated (exit 9), and a store that
fails after the results were written is exit 10 with the results safe.

In-process (``sparsescope.cli.main``), with the measuring functions replaced by ones that raise:
a command that fails first never reaches them. ``SPARSESCOPE_STORE`` points into the test's
tmp folder (tests/conftest.py), or at an unwritable path where a test says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparsescope.cli import main
from sparsescope.errors import OutputError, StoreWriteError

REPO = Path(__file__).resolve().parents[2]
SEED6_RESULTS = REPO / "results" / "h200" / "seed6" / "results.json"
FAST = ["--warmups", "1", "--repeats", "3", "--flush", "off"]
RUN = ["run", "--suite", "seed6", "--scale", "0.005", *FAST]
UNWRITABLE_DIR = Path("/sys/sparsescope-test-out")
UNWRITABLE_STORE = "/sys/x/store.sqlite"


pytestmark = pytest.mark.usefixtures("figures_not_drawn", "cpu_ceilings_measured_once")


@pytest.fixture
def calls(monkeypatch):
    """Names of the measuring/generating functions that were called (each raises too)."""
    seen: list[str] = []

    def tripwire(name):
        def called(*args, **kwargs):
            seen.append(name)
            raise AssertionError(f"measured: {name} was called")
        return called

    import sparsescope.api.runs
    import sparsescope.backends.runner
    import sparsescope.hardware.cpu_ceilings

    monkeypatch.setattr(sparsescope.backends.runner, "run_matrix", tripwire("run_matrix"))
    # api imports run_matrix inside _run_matrices today; if it ever imports it at module level,
    # the api's own name must trip too.
    monkeypatch.setattr(sparsescope.api.runs, "run_matrix", tripwire("run_matrix"),
                        raising=False)
    monkeypatch.setattr(sparsescope.hardware.cpu_ceilings, "measure_cpu_ceilings",
                        tripwire("measure_cpu_ceilings"))
    return seen


@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "not-a-folder"
    path.write_text("keep me\n")
    return path


def _assert_exit_9(rc: int, capsys, path: Path | str, calls: list[str]) -> str:
    err = capsys.readouterr().err
    assert rc == OutputError.exit_code == 9, err
    assert "Traceback" not in err
    assert err.startswith("sparsescope: error: ")
    assert str(path) in err, f"the message does not name {path}: {err}"
    assert calls == [], f"called before the output check failed: {calls}"
    return err


def _writable(path: Path) -> bool:
    """Whether this process can make ``path`` (as root in a container, /sys may be writable)."""
    try:
        path.mkdir(parents=True)
    except OSError:
        return False
    path.rmdir()
    return True


# ------------------------------------------------------------------ --out is an existing file

def test_run_out_is_a_file(a_file, capsys, calls):
    rc = main([*RUN, "--out", str(a_file), "--no-store"])
    err = _assert_exit_9(rc, capsys, a_file, calls)
    assert "not a folder" in err
    assert a_file.read_text() == "keep me\n"


def test_run_out_is_a_file_json(a_file, capsys, calls):
    import json

    rc = main([*RUN, "--out", str(a_file), "--no-store", "--json"])
    out = capsys.readouterr().out
    assert rc == 9 and calls == []
    doc = json.loads(out)
    assert doc["exit_code"] == 9 and doc["type"] == "OutputError" and str(a_file) in doc["error"]


def test_report_out_is_a_file(a_file, capsys, calls, monkeypatch):
    import sparsescope.report.write

    def no_report(*args, **kwargs):
        calls.append("write_report")
        raise AssertionError("the report was written")

    monkeypatch.setattr(sparsescope.report.write, "write_report", no_report)
    rc = main(["report", str(SEED6_RESULTS), "--out", str(a_file)])
    _assert_exit_9(rc, capsys, a_file, calls)
    assert a_file.read_text() == "keep me\n"


def test_matrices_generate_one_under_a_file(a_file, capsys, calls, monkeypatch):
    """One matrix: --out is a file path (an existing .mtx is replaced), so the failing case
    is a path whose folder is a file."""
    import sparsescope.matrices

    def no_generate(*args, **kwargs):
        calls.append("generate")
        raise AssertionError("generated")

    monkeypatch.setattr(sparsescope.matrices, "generate", no_generate)
    target = a_file / "b.mtx"
    rc = main(["matrices", "generate", "banded", "--rows", "100", "--nnz", "300",
               "--out", str(target)])
    _assert_exit_9(rc, capsys, a_file, calls)


def test_matrices_generate_suite_out_is_a_file(a_file, capsys, calls, monkeypatch):
    import sparsescope.matrices.suites

    def no_build(*args, **kwargs):
        calls.append("build_entry")
        raise AssertionError("generated")

    monkeypatch.setattr(sparsescope.matrices.suites, "build_entry", no_build)
    rc = main(["matrices", "generate", "--suite", "seed6", "--scale", "0.002",
               "--out", str(a_file)])
    _assert_exit_9(rc, capsys, a_file, calls)
    assert a_file.read_text() == "keep me\n"


def test_profile_report_out_is_a_file(a_file, capsys, calls, monkeypatch, h200_fixtures):
    import sparsescope.profile.section

    def no_load(*args, **kwargs):
        calls.append("load_inputs")
        raise AssertionError("profiles read")

    monkeypatch.setattr(sparsescope.profile.section, "load_inputs", no_load)
    rc = main(["profile", "report", str(h200_fixtures / "scalar_raw.csv"),
               "--details", str(h200_fixtures / "scalar_details.csv"), "--out", str(a_file)])
    _assert_exit_9(rc, capsys, a_file, calls)
    assert a_file.read_text() == "keep me\n"


# ------------------------------------------------------------------ unwritable out and store

def test_run_out_unwritable(capsys, calls):
    if _writable(UNWRITABLE_DIR):
        pytest.skip(f"{UNWRITABLE_DIR} is writable here")
    rc = main([*RUN, "--out", str(UNWRITABLE_DIR / "out"), "--no-store"])
    err = _assert_exit_9(rc, capsys, UNWRITABLE_DIR / "out", calls)
    assert "cannot write" in err


def test_run_store_unwritable(tmp_path, capsys, calls, monkeypatch):
    if _writable(Path(UNWRITABLE_STORE).parent):
        pytest.skip(f"{Path(UNWRITABLE_STORE).parent} is writable here")
    monkeypatch.setenv("SPARSESCOPE_STORE", UNWRITABLE_STORE)
    out = tmp_path / "out"
    rc = main([*RUN, "--out", str(out)])
    err = _assert_exit_9(rc, capsys, UNWRITABLE_STORE, calls)
    assert "--no-store" in err and "SPARSESCOPE_STORE" in err
    assert not (out / "results.json").exists()


def test_run_no_store_ignores_unwritable_store(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARSESCOPE_STORE", UNWRITABLE_STORE)
    out = tmp_path / "out"
    rc = main([*RUN, "--out", str(out), "--no-store"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "Traceback" not in captured.err
    assert (out / "results.json").is_file()
    assert not os.path.exists(UNWRITABLE_STORE)


# ------------------------------------------------------------------ store fails after results

def test_store_failing_after_results_is_exit_10(tmp_path, capsys, monkeypatch):
    from sparsescope.results.io import read_runset
    from sparsescope.results.store import ResultsStore

    def disk_full(self, runset):
        raise OSError("disk full")

    monkeypatch.setattr(ResultsStore, "append", disk_full)
    out = tmp_path / "out"
    rc = main([*RUN, "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == StoreWriteError.exit_code == 10, captured.err
    assert "Traceback" not in captured.err
    warning = [line for line in captured.err.splitlines() if "disk full" in line]
    assert warning, captured.err
    assert warning[0].startswith("sparsescope: warning: ")
    assert "results are safe" in warning[0]
    assert str(out / "results.json") in warning[0]
    runset = read_runset(out / "results.json")
    assert len(runset.cases) == 6 and {c.outcome for c in runset.cases} == {"ok"}
    assert (out / "report.html").is_file()
    assert f"results: {out / 'results.json'}" in captured.out
