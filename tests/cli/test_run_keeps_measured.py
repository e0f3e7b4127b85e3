"""``run`` never throws away what it measured (issue 33, defect 6 and the late failures).

- every input is checked (exists, its header parses) before anything is measured;
- an input that still fails later (a reader error, a ``MemoryError`` setting up a case) leaves
  the cases measured before it in ``--out/results.json``, and the error names the input;
- a report, results or store failure after measuring keeps the results and names them;
- two runs into one ``--out`` are refused, and a kill in the write phase never leaves a report
  of another run beside ``results.json``.

In-process (``sparsescope.cli.main``); ``SPARSESCOPE_STORE`` points into the test's tmp folder
(tests/conftest.py).
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from sparsescope.cli import main
from sparsescope.results.io import read_runset

FAST = ["--warmups", "1", "--repeats", "2", "--flush", "off"]
GOOD = "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 2 2.0\n3 1 4.0\n"
BAD_BODY = "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 2 2.0\n"
BAD_HEADER = "%%MatrixMarket matrix coordinate real general\n3 three 2\n1 1 1.0\n"

pytestmark = pytest.mark.usefixtures("figures_not_drawn", "cpu_ceilings_measured_once")


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    made = {}
    for name, text in (("good", GOOD), ("good2", GOOD), ("bad", BAD_BODY),
                       ("badhead", BAD_HEADER)):
        made[name] = tmp_path / f"{name}.mtx"
        made[name].write_text(text)
    return made


@pytest.fixture
def measured(monkeypatch) -> list[str]:
    """Names of the matrices run_matrix was called with (it still runs them)."""
    from sparsescope.backends import runner

    seen: list[str] = []
    real = runner.run_matrix

    def spy(matrix, *args, **kwargs):
        seen.append(matrix.name)
        return real(matrix, *args, **kwargs)

    monkeypatch.setattr(runner, "run_matrix", spy)
    return seen


def _run(out: Path, *inputs: Path, extra=()) -> int:
    argv = ["run", "--out", str(out), "--no-store", *FAST, *extra]
    for path in inputs:
        argv += ["--matrix", str(path)]
    return main(argv)


# ------------------------------------------------------------------ inputs checked first

@pytest.mark.parametrize("second, code, words", [
    ("missing", 4, "no such file"),
    ("badhead", 3, "badhead.mtx, line 2"),
    ("dir", 3, "is a directory"),
    ("txt", 3, "unknown matrix file type"),
])
def test_every_input_is_checked_before_measuring(files, tmp_path, capsys, measured, second,
                                                 code, words):
    other = {"missing": tmp_path / "missing.mtx", "badhead": files["badhead"],
             "dir": tmp_path / "folder.mtx", "txt": tmp_path / "m.txt"}[second]
    if second == "dir":
        other.mkdir()
    if second == "txt":
        other.write_text(GOOD)
    out = tmp_path / "out"
    rc = _run(out, files["good"], other)
    err = capsys.readouterr().err
    assert rc == code, err
    assert words in err and "Traceback" not in err
    assert measured == [], "a matrix was measured before every input was checked"
    assert not (out / "results.json").exists()


# ------------------------------------------------------------------ a later input fails

def test_a_bad_second_matrix_keeps_the_first(files, tmp_path, capsys):
    out = tmp_path / "out"
    rc = _run(out, files["good"], files["bad"])
    err = capsys.readouterr().err
    assert rc == 3, err
    assert "bad.mtx, line 4" in err and "Traceback" not in err
    assert str(out / "results.json") in err
    rs = read_runset(out / "results.json")
    assert [m.name for m in rs.matrices] == ["good"]
    assert [(c.matrix, c.outcome) for c in rs.cases] == [("good", "ok")]


def test_a_bad_only_matrix_keeps_old_results(files, tmp_path, capsys):
    """Nothing measured: nothing written, an earlier results.json is left as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("previous\n")
    rc = _run(out, files["bad"])
    assert rc == 3
    assert (out / "results.json").read_text() == "previous\n"


def test_memory_error_in_a_later_case_keeps_the_earlier_ones(files, tmp_path, capsys,
                                                             monkeypatch):
    from sparsescope.ops.registry import get_op

    op = get_op("spmv")
    real = type(op).make_case
    built: list[int] = []

    def make_case(self, *args, **kwargs):
        built.append(1)
        if len(built) == 2:
            raise MemoryError("Unable to allocate 7.28 TiB")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(op), "make_case", make_case)
    out = tmp_path / "out"
    rc = _run(out, files["good"], files["good2"])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert "good2" in err and "memory" in err
    assert str(out / "results.json") in err
    rs = read_runset(out / "results.json")
    assert [c.matrix for c in rs.cases] == ["good"]


def test_a_failed_input_with_json_prints_one_error_document(files, tmp_path, capsys):
    out = tmp_path / "out"
    rc = _run(out, files["good"], files["bad"], extra=["--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 3 and doc["exit_code"] == 3
    assert "bad.mtx" in doc["error"] and str(out / "results.json") in doc["error"]


# ------------------------------------------------------------------ late failures keep results

def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_writing_the_report_keeps_results(files, tmp_path, capsys, monkeypatch):
    import sparsescope.report.write

    monkeypatch.setattr(sparsescope.report.write, "write_text_atomic", _enospc)
    out = tmp_path / "out"
    rc = _run(out, files["good"])
    err = capsys.readouterr().err
    assert rc == 10, err
    assert "Traceback" not in err and "report" in err and "no space left" in err.lower()
    assert str(out / "results.json") in err
    assert read_runset(out / "results.json").cases[0].outcome == "ok"


def test_a_report_that_raises_keeps_results(files, tmp_path, capsys, monkeypatch):
    import sparsescope.report.write

    def broken(*args, **kwargs):
        raise ValueError("cannot convert float NaN to integer")

    monkeypatch.setattr(sparsescope.report.write, "build_document", broken)
    out = tmp_path / "out"
    rc = _run(out, files["good"], extra=["--json"])
    captured = capsys.readouterr()
    assert rc == 10, captured.err
    assert "Traceback" not in captured.err
    doc = json.loads(captured.out)
    assert doc["exit_code"] == 10 and "NaN" in doc["exit_reason"]
    assert doc["results"] == str(out / "results.json")
    assert (out / "results.json").is_file()


def test_a_full_disk_writing_results_keeps_them_elsewhere(files, tmp_path, capsys,
                                                          monkeypatch):
    import sparsescope.results.io

    real = sparsescope.results.io.write_runset
    kept: list[Path] = []

    def full_out(path, runset):
        if Path(path).parent == tmp_path / "out":
            _enospc()
        kept.append(Path(path))
        return real(path, runset)

    monkeypatch.setattr(sparsescope.results.io, "write_runset", full_out)
    out = tmp_path / "out"
    rc = _run(out, files["good"])
    err = capsys.readouterr().err
    assert rc == 9, err
    assert "Traceback" not in err and "no space left" in err
    assert len(kept) == 1 and str(kept[0]) in err
    assert read_runset(kept[0]).cases[0].matrix == "good"
    kept[0].unlink()


def test_a_full_disk_in_the_store_keeps_results(files, tmp_path, capsys, monkeypatch):
    from sparsescope.results.store import ResultsStore

    monkeypatch.setattr(ResultsStore, "append", _enospc)
    out = tmp_path / "out"
    rc = main(["run", "--out", str(out), *FAST, "--matrix", str(files["good"])])
    err = capsys.readouterr().err
    assert rc == 10 and "Traceback" not in err
    assert str(out / "results.json") in err and (out / "report.md").is_file()


# ------------------------------------------------------------------ one writer per --out

def test_a_second_run_into_a_locked_out_is_refused(files, tmp_path, capsys, measured):
    from sparsescope._outputs import out_dir_lock

    out = tmp_path / "out"
    out.mkdir()
    with out_dir_lock(out):
        rc = _run(out, files["good"])
    err = capsys.readouterr().err
    assert rc == 9, err
    assert "another sparsescope" in err and str(out) in err and "Traceback" not in err
    assert measured == []
    assert not (out / "results.json").exists()


def test_the_lock_is_released_after_a_run(files, tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(out, files["good"]) == 0
    assert _run(out, files["good"]) == 0
    assert not [p.name for p in out.iterdir() if "lock" in p.name]


def test_a_kill_while_writing_leaves_no_report_of_another_run(files, tmp_path, capsys,
                                                              monkeypatch):
    """Run A writes everything; run B is killed after its results.json and before its report:
    the folder must not show A's report beside B's results."""
    import sparsescope.report.write

    out = tmp_path / "out"
    assert _run(out, files["good"]) == 0
    first = read_runset(out / "results.json").run_id
    assert first in (out / "report.md").read_text()

    class Killed(BaseException):
        pass

    def killed(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(sparsescope.report.write, "write_text_atomic", killed)
    with pytest.raises(Killed):
        _run(out, files["good2"])
    second = read_runset(out / "results.json").run_id
    assert second != first
    for name in ("report.md", "report.html"):
        path = out / name
        assert not path.exists() or second in path.read_text(), f"{name} is run {first}'s"


def test_a_lock_held_by_another_process_names_it_and_dies_with_it(files, tmp_path, capsys):
    """Another process holds the folder: refused, naming its pid; after a ``kill -9`` of it
    the next run goes ahead (the lock went with the process)."""
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from sparsescope._outputs import out_dir_lock\n"
         "with out_dir_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(120)",
         str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        rc = _run(out, files["good"])
        err = capsys.readouterr().err
        assert rc == 9 and f"pid {holder.pid}" in err and "Traceback" not in err, err
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    assert _run(out, files["good"]) == 0
    assert read_runset(out / "results.json").cases[0].matrix == "good"
