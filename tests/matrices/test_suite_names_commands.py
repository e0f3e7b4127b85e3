"""``suite:NAME#ENTRY[@SCALE]`` through every command that takes a matrix (``run``, ``model``,
``matrices stats``, ``profile run``, ``sweep``), the old forms as aliases with one deprecation
line on stderr (never on ``--json`` stdout), and the errors (exit 2, one line naming the text
and listing the valid names). ``run`` and ``profile run`` are checked at the API call they make
(the case itself is the runner's and ncu's), plus one real run; the others run for real on
small matrices."""

from __future__ import annotations

import json

import pytest

from sparsescope import api
from sparsescope.cli import main
from sparsescope.errors import SparsescopeError

FAST = ["--warmups", "0", "--repeats", "1", "--flush", "off", "--no-store"]

pytestmark = pytest.mark.usefixtures("cpu_ceilings_measured_once")
NOTE = "sparsescope: warning: '{text}' is an old form of a suite matrix's name"


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "old form of a suite matrix's name" in line]


@pytest.fixture
def run_args(monkeypatch):
    """``api.run`` replaced by a recorder: what ``sparsescope run`` asked it to run."""
    seen: dict = {}

    class Stop(SparsescopeError):
        """Stops the command where the API would start work (exit 99, warnings printed)."""

        exit_code = 99

    def stop(**kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(api, "run", stop)
    return seen, Stop


@pytest.mark.parametrize("argv, suite, files, scale, note", [
    (["--suite", "suite:seed6#cant,pwtk@0.05"], "seed6#cant,pwtk", [], 0.05, None),
    (["--suite", "seed6", "--scale", "0.5"], "seed6", [], 0.5, None),
    (["--matrix", "suite:seed6#cant@0.05"], "seed6#cant", [], 0.05, None),
    (["--matrix", "suite:seed6#cant", "--matrix", "suite:seed6#ldoor", "--scale", "0.1"],
     "seed6#cant,ldoor", [], 0.1, None),
    (["--suite", "seed6#cant", "--scale", "0.05"], "seed6#cant", [], 0.05, "seed6#cant"),
    (["--matrix", "seed6:cant"], "seed6#cant", [], 1.0, "seed6:cant"),
    (["--matrix", "a.mtx"], None, ["a.mtx"], 1.0, None),
    ([], "seed6", [], 1.0, None),                                 # the op's default suite
])
def test_run_passes_the_named_suite_to_the_api(run_args, capsys, argv, suite, files, scale,
                                               note):
    seen, stop = run_args
    rc = main(["run", *argv, "--out", "unused", "--json"], modules=["sparsescope.cli.run_cmd"])
    assert rc == stop.exit_code
    assert (seen["suite"], seen["files"], seen["scale"]) == (suite, files, scale)
    out, err = capsys.readouterr()
    assert json.loads(out)["type"] == "Stop"  # --json stdout: the error document alone
    assert _notes(err) == ([] if note is None else [NOTE.format(text=note) + _tail(note)])


def _tail(text: str) -> str:
    suite, _, entry = text.replace(":", "#").partition("#")
    form = "NAME:ENTRY" if ":" in text else "NAME#ENTRY"
    return (f" ({form}); write 'suite:{suite}#{entry}' (suite:NAME#ENTRY[@SCALE], the one "
            f"form every command takes)")


@pytest.mark.slow  # a real run of one tiny matrix: its report and the CPU ceilings
def test_one_real_run_of_a_suite_entry(tmp_path, capsys, monkeypatch):
    from sparsescope.report import spmv_layout

    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {
        name: (lambda ctx, tables: "not drawn in this test") for name in spmv_layout.FIGURE_FUNCS})
    rc = main(["run", "--matrix", "suite:awkward#rmat-257", "--backend", "scipy-cpu", "--out",
               str(tmp_path / "o"), "--json", *FAST], modules=["sparsescope.cli.run_cmd"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    doc = json.loads(captured.out)
    assert (doc["suite"], [c["matrix"] for c in doc["cases"]]) == ("awkward#rmat-257",
                                                                   ["rmat-257"])
    assert doc["cases"][0]["outcome"] == "ok" and _notes(captured.err) == []


@pytest.mark.parametrize("argv, message", [
    (["--suite", "suite:seed6#nope"], "suite:seed6#nope: unknown entry of suite 'seed6' 'nope'; "
                                      "known: cage15, cant, circuit5M, ldoor, pwtk, webbase-1M"),
    (["--matrix", "suite:seed9#cant"], "suite:seed9#cant: unknown suite 'seed9'; known: "),
    (["--suite", "seed6#nope"], "seed6#nope: unknown entry of suite 'seed6' 'nope'"),
    (["--matrix", "suite:seed6#cant", "--matrix", "a.mtx"], "suite matrices and files"),
])
def test_run_refuses_a_bad_name_before_anything_runs(tmp_path, capsys, argv, message):
    rc = main(["run", *argv, "--out", str(tmp_path / "o"), *FAST],
              modules=["sparsescope.cli.run_cmd"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    (line,) = [e for e in err.splitlines() if e.startswith("sparsescope: error: ")]
    assert message in line
    assert not (tmp_path / "o").exists()


# -- model ----------------------------------------------------------------------------------
MODEL = ["--backend", "cuda-spmv-sell", "--gpu", "H100", "--no-sass", "--no-store", "--json"]


@pytest.mark.parametrize("argv, note", [
    (["suite:awkward#rmat-257,one-col"], None),
    (["--suite", "suite:awkward#rmat-257", "--matrix", "one-col"], None),
    (["--suite", "awkward#rmat-257,one-col"], "awkward#rmat-257,one-col"),
    (["awkward:rmat-257", "awkward:one-col"], "awkward:rmat-257"),
])
def test_model_predicts_the_named_entries(capsys, argv, note):
    rc = main(["model", *argv, *MODEL], modules=["sparsescope.cli.model_cmd"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert [case["matrix"] for case in json.loads(out)] == ["rmat-257", "one-col"]
    notes = _notes(err)
    assert len(notes) == (0 if note is None else 2 if "awkward:" in note else 1)
    if note:
        assert notes[0].startswith(NOTE.format(text=note))


def test_model_unknown_entry_is_one_line(capsys):
    rc = main(["model", "suite:awkward#nope", *MODEL], modules=["sparsescope.cli.model_cmd"])
    out, err = capsys.readouterr()
    assert rc == 2 and json.loads(out)["exit_code"] == 2
    assert err.strip().splitlines() == [
        "sparsescope: error: suite:awkward#nope: unknown entry of suite 'awkward' 'nope'; "
        "known: banded-1001, empty-rows, heavy-row, one-by-one, one-col, one-row, rmat-257, "
        "scattered-999, single-entry, wide-33x95"]


# -- matrices stats -------------------------------------------------------------------------
@pytest.mark.parametrize("argv, note", [
    (["suite:seed6#cant@0.002"], None),
    (["suite:seed6#cant", "--scale", "0.002"], None),
    (["seed6#cant", "--scale", "0.002"], "seed6#cant"),   # failed with "unknown matrix file type"
    (["seed6:cant", "--scale", "0.002"], "seed6:cant"),
])
def test_stats_of_a_suite_entry(capsys, argv, note):
    rc = main(["matrices", "stats", *argv, "--json"], modules=["sparsescope.cli.matrices_cmd"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    doc = json.loads(out)
    assert (doc["matrix"]["name"], doc["stats"]["rows"], doc["stats"]["nnz"]) == ("cant", 125,
                                                                                  8021)
    assert _notes(err) == ([] if note is None else [NOTE.format(text=note) + _tail(note)])


@pytest.mark.parametrize("spec, message", [
    ("suite:seed6", "suite:seed6: names no entry of suite seed6; one matrix is wanted"),
    ("suite:seed6#cant@0.002 --scale 0.5", "its @0.002 and --scale 0.5 disagree"),
    ("suite:nope#cant", "suite:nope#cant: unknown suite 'nope'; known: awkward, dlmc3"),
])
def test_stats_errors(capsys, spec, message):
    rc = main(["matrices", "stats", *spec.split()], modules=["sparsescope.cli.matrices_cmd"])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


# -- profile run ----------------------------------------------------------------------------
@pytest.fixture
def profile_args(monkeypatch):
    """``api.profile_case`` replaced by a recorder: the suite, entry and scale it was given."""
    seen: dict = {}

    class Stop(SparsescopeError):
        """Stops the command where the API would start work (exit 99, warnings printed)."""

        exit_code = 99

    def stop(suite, matrix, backend, out_dir, **kwargs):
        seen.update(suite=suite, matrix=matrix, backend=backend, scale=kwargs["scale"])
        raise Stop

    monkeypatch.setattr(api, "profile_case", stop)
    return seen, Stop


@pytest.mark.parametrize("argv, note", [
    (["--matrix", "suite:seed6#cant@0.05"], None),
    (["--suite", "suite:seed6#cant@0.05"], None),
    (["--suite", "seed6", "--matrix", "cant", "--scale", "0.05"], None),
    (["--suite", "seed6#cant", "--scale", "0.05"], "seed6#cant"),
    (["--matrix", "seed6:cant", "--scale", "0.05"], "seed6:cant"),
])
def test_profile_run_profiles_the_named_entry(profile_args, capsys, argv, note):
    seen, stop = profile_args
    rc = main(["profile", "run", *argv, "--backend", "cupy-cusparse-i32"],
              modules=["sparsescope.cli.profile_cmd"])
    assert rc == stop.exit_code
    assert seen == {"suite": "seed6", "matrix": "cant", "backend": "cupy-cusparse-i32",
                    "scale": 0.05}
    assert _notes(capsys.readouterr().err) == (
        [] if note is None else [NOTE.format(text=note) + _tail(note)])


@pytest.mark.parametrize("argv, message", [
    (["--matrix", "suite:seed6#nope", "--backend", "b"], "unknown entry of suite 'seed6' 'nope'"),
    (["--matrix", "suite:seed6", "--backend", "b"], "names no entry of suite seed6"),
    (["--matrix", "a.mtx", "--backend", "b"], "profile run takes a suite entry"),
    (["--backend", "b"], "profile run needs --matrix suite:NAME#ENTRY"),
    (["--matrix", "suite:seed6#cant"], "profile run needs --backend"),
])
def test_profile_run_errors_before_ncu(profile_args, capsys, argv, message):
    seen, _ = profile_args
    rc = main(["profile", "run", *argv], modules=["sparsescope.cli.profile_cmd"])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and seen == {}


# -- sweep ----------------------------------------------------------------------------------
@pytest.mark.slow  # one in-process sweep of two tiny matrices: a few seconds, mostly start-up
@pytest.mark.usefixtures("figures_not_drawn")
def test_sweep_runs_the_named_entries(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARSESCOPE_STORE", str(tmp_path / "store.sqlite"))
    rc = main(["sweep", "suite:awkward@1#one-by-one,single-entry", "awkward:rmat-257",
               "--backend", "scipy-cpu", "--out", str(tmp_path / "o"), "--warmups", "0",
               "--repeats", "1", "--flush", "off", "--json"],
              modules=["sparsescope.cli.sweep_cmd"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    json.loads(out)  # one JSON document on stdout, the note on stderr only
    cases = json.loads((tmp_path / "o" / "results.json").read_text())["cases"]
    assert [c["matrix"] for c in cases] == ["one-by-one", "single-entry", "rmat-257"]
    assert _notes(err) == [NOTE.format(text="awkward:rmat-257") + _tail("awkward:rmat-257")]


def test_sweep_unknown_entry_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARSESCOPE_STORE", str(tmp_path / "store.sqlite"))
    rc = main(["sweep", "suite:awkward#nope", "--out", str(tmp_path / "o")],
              modules=["sparsescope.cli.sweep_cmd"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "suite:awkward#nope: unknown entry of suite 'awkward' 'nope'; known: " in err
