"""Store format 2 (sweep_cases) and its migration; ``sparsescope sweep`` on the command line;
no Dask import at ``import sparsescope`` or ``--help``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from sweep_builders import write_collection

from sparsescope.cli import main
from sparsescope.errors import ResultsFormatError
from sparsescope.results.store import STORE_VERSION, ResultsStore

OLD_TABLES = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, created TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL,
    libraries TEXT NOT NULL, sparsescope_version TEXT NOT NULL, git_commit TEXT NOT NULL,
    command TEXT NOT NULL, suite TEXT NOT NULL, scale REAL NOT NULL,
    schema_version INTEGER NOT NULL, json TEXT NOT NULL);
CREATE TABLE cases (
    run_id TEXT NOT NULL REFERENCES runs(run_id), idx INTEGER NOT NULL, matrix TEXT NOT NULL,
    backend TEXT NOT NULL, op TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL,
    time_ms REAL, rel_err REAL, PRIMARY KEY (run_id, idx));
CREATE TABLE ceilings_cache (machine_key TEXT PRIMARY KEY, device TEXT NOT NULL,
    measured_utc TEXT NOT NULL, json TEXT NOT NULL);
INSERT INTO runs VALUES ('r1', '2026-01-01T00:00:00+00:00', 'cpu', '', '{}', '0.1.0', 'abc',
    'sparsescope run', 'seed6', 1.0, 2, '{}');
INSERT INTO cases VALUES ('r1', 0, 'cant', 'scipy-cpu', 'spmv', 'ok', '', 1.5, 1e-7);
"""


def test_old_store_is_migrated_in_place_and_keeps_its_runs(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript(OLD_TABLES)
    store = ResultsStore(path)
    assert [r.run_id for r in store.runs()] == ["r1"]
    assert [c.time_ms for c in store.cases()] == [1.5]
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION == 2
    store.append_sweep_case("h1", "cant", "scipy-cpu", "spmv", "{}", "cpu", "0.1.0", "ok", "{}")
    assert store.done_keys("cpu", "0.1.0") == {("h1", "scipy-cpu", "spmv", "{}")}
    assert store.done_keys("cpu", "0.1.0", ("failed",)) == set()


def test_newer_store_is_refused_clearly(tmp_path):
    path = tmp_path / "new.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("PRAGMA user_version = 99")
    with pytest.raises(ResultsFormatError, match="format 99 is newer than this sparsescope"):
        ResultsStore(path).runs()


def test_cli_sweep_json_prints_one_document(tmp_path, store, capsys):
    folder = write_collection(tmp_path / "c", 3)
    code = main(["sweep", str(folder), "--out", str(tmp_path / "o"), "--backend", "scipy-cpu",
                 "--warmups", "0", "--repeats", "2", "--flush", "off", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["exit_code"] == 0 and doc["ran"] == 3
    assert [c["outcome"] for c in doc["cases"]] == ["ok"] * 3


def test_cli_sweep_text_prints_each_case(tmp_path, store, capsys):
    folder = write_collection(tmp_path / "c", 2)
    code = main(["sweep", str(folder), "--out", str(tmp_path / "o"), "--backend", "scipy-cpu",
                 "--warmups", "0", "--repeats", "2", "--flush", "off"])
    out = capsys.readouterr().out
    assert code == 0 and out.count(" ok ") == 2 and "2 run now, 0 already stored" in out


def test_cli_help_documents_options_and_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = capsys.readouterr().out
    for option in ("--out", "--backend", "--op", "--cluster", "--scheduler", "--workers",
                   "--retry-failed", "--case-timeout", "--warmups", "--repeats", "--json"):
        assert option in text
    assert "Exit codes: 0" in text and "11" in text and "9" in text


def test_no_dask_at_import_or_help():
    code = ("import sys, io, contextlib\nimport sparsescope, sparsescope.sweep.engine\n"
            "from sparsescope.cli import build_parser\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: build_parser().parse_args(['--help'])\n"
            "    except SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'dask', 'distributed', 'dask_cuda'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_cli_sweep_op_parameters_every_combination_and_resume(tmp_path, store, capsys):
    folder = write_collection(tmp_path / "c", 2)
    args = ["sweep", str(folder), "--out", str(tmp_path / "o"), "--op", "spmm",
            "--backend", "spmm-scipy-cpu", "--k", "2", "--k", "5", "--layout", "row",
            "--layout", "col", "--warmups", "0", "--repeats", "2", "--flush", "off", "--json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ran"] == 8 and doc["stored"] == 0
    assert sorted({(c["params"]["k"], c["params"]["layout"]) for c in doc["cases"]}) == [
        (2, "col"), (2, "row"), (5, "col"), (5, "row")]
    assert main(args) == 0  # every (matrix, k, layout) case is found in the store
    again = json.loads(capsys.readouterr().out)
    assert again["ran"] == 0 and again["stored"] == 8


def test_cli_sweep_parameter_of_another_op_is_a_usage_error(tmp_path, store, capsys):
    folder = write_collection(tmp_path / "c", 1)
    code = main(["sweep", str(folder), "--out", str(tmp_path / "o"), "--k", "8"])
    assert code == 2 and "--k applies to --op spmm" in capsys.readouterr().err


def test_cli_sweep_variant_is_a_case_under_its_label(tmp_path, store, capsys):
    folder = write_collection(tmp_path / "c", 1)
    code = main(["sweep", str(folder), "--out", str(tmp_path / "o"), "--backend", "scipy-cpu",
                 "--variant", "cuda-spmv-sell[unroll=4]", "--warmups", "0", "--repeats", "2",
                 "--flush", "off", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    by_backend = {c["backend"]: c for c in doc["cases"]}
    assert set(by_backend) == {"scipy-cpu", "cuda-spmv-sell[unroll=4]"}
    variant = by_backend["cuda-spmv-sell[unroll=4]"]
    if not _has_gpu():  # skipped with the reason, under its own label
        assert variant["outcome"] == "skipped" and "unavailable" in variant["reason"]
    else:
        assert variant["outcome"] == "ok"


def test_cli_sweep_no_store_keeps_cases_in_the_out_folder(tmp_path, store, capsys):
    folder = write_collection(tmp_path / "c", 2)
    out = tmp_path / "o"
    args = ["sweep", str(folder), "--out", str(out), "--backend", "scipy-cpu", "--no-store",
            "--warmups", "0", "--repeats", "2", "--flush", "off", "--json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["store"] == str(out / "sweep-store.sqlite") and doc["ran"] == 2
    assert ResultsStore(store).sweep_cases(doc["device"], _version()) == {}
    assert main(args) == 0  # resumes from the folder's own store
    assert json.loads(capsys.readouterr().out)["stored"] == 2


def test_cli_sweep_store_and_no_store_together_is_a_usage_error(tmp_path, capsys):
    code = main(["sweep", str(tmp_path), "--out", str(tmp_path / "o"), "--no-store",
                 "--store", str(tmp_path / "s.sqlite")])
    assert code == 2 and "not both" in capsys.readouterr().err


def _has_gpu() -> bool:
    from sparsescope.hardware import detect

    return detect.detect_gpu() is not None


def _version() -> str:
    from sparsescope import __version__

    return __version__


def test_engine_overhead_is_the_share_of_worker_time_not_spent_on_cases():
    from sparsescope.sweep.engine import EngineStats

    assert EngineStats(workers=2, busy_s=192.0, wall_s=100.0).overhead == pytest.approx(0.04)
    assert EngineStats(workers=1, busy_s=0.0, wall_s=0.0).overhead == 0.0


def test_cli_sweep_reports_cases_per_minute_and_overhead(tmp_path, store, capsys):
    folder = write_collection(tmp_path / "c", 3)
    base = ["sweep", str(folder), "--out", str(tmp_path / "o"), "--backend", "scipy-cpu",
            "--warmups", "0", "--repeats", "2", "--flush", "off"]
    assert main([*base, "--json"]) == 0
    t = json.loads(capsys.readouterr().out)["throughput"]
    assert t["workers"] == 1 and 0 < t["busy_s"] <= t["wall_s"]
    assert t["client_max_rss_mb"] > 10  # this process's peak since the sweep began
    assert t["cases_per_min"] == pytest.approx(60 * 3 / t["wall_s"], rel=0.001)
    assert t["overhead_pct"] == pytest.approx(100 * (1 - t["busy_s"] / t["wall_s"]), abs=0.01)
    assert main(base) == 0  # nothing left to run: said so
    assert "no case run now" in capsys.readouterr().out


def test_own_kernels_are_keyed_by_their_code_fingerprint():
    from sparsescope.sweep.tasks import own_code_fingerprint, store_backend

    fingerprint = own_code_fingerprint()
    assert len(fingerprint) == 12 and int(fingerprint, 16) >= 0
    assert store_backend("scipy-cpu") == "scipy-cpu"
    assert store_backend("torch-cusparse-i32") == "torch-cusparse-i32"
    assert store_backend("cuda-csr-scalar") == f"cuda-csr-scalar@{fingerprint}"
    assert store_backend("cuda-spmv-sell[unroll=4]") == f"cuda-spmv-sell[unroll=4]@{fingerprint}"


def test_a_resumed_sweep_runs_own_kernels_again_after_their_code_changed(tmp_path, store,
                                                                         capsys, monkeypatch):
    from sparsescope.sweep import tasks

    folder = write_collection(tmp_path / "c", 1)
    args = ["sweep", str(folder), "--out", str(tmp_path / "o"), "--backend", "scipy-cpu",
            "--backend", "cuda-csr-scalar", "--warmups", "0", "--repeats", "2",
            "--flush", "off", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["ran"] == 2 and first["stored"] == 0
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["stored"] == 2
    monkeypatch.setattr(tasks, "own_code_fingerprint", lambda: "0123456789ab")
    assert main(args) == 0   # the library's case stays stored, our kernel's runs again
    again = json.loads(capsys.readouterr().out)
    assert again["ran"] == 1 and again["stored"] == 1
    assert {c["backend"] for c in again["cases"]} == {"scipy-cpu", "cuda-csr-scalar"}
