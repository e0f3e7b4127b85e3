"""The SQLite results store: append, list, load, query cases, provenance columns, errors."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from sparsescope.errors import ResultsFormatError, UnknownNameError, UsageError
from sparsescope.results.records import SCHEMA_VERSION
from sparsescope.results.store import ResultsStore, StoredCase, default_store_path


@pytest.fixture
def store(tmp_path) -> ResultsStore:
    return ResultsStore(tmp_path / "store" / "results.sqlite")


def test_append_list_load(store, make_runset):
    first = make_runset("run000000001", created="2026-02-28T10:00:00+00:00")
    second = make_runset("run000000002", created="2026-03-01T09:30:00+00:00",
                         device="NVIDIA H100 80GB HBM3")
    store.append(second)
    store.append(first)
    runs = store.runs()
    assert [r.run_id for r in runs] == ["run000000001", "run000000002"]  # oldest first
    assert runs[1].device == "NVIDIA H100 80GB HBM3"
    assert (runs[0].suite, runs[0].scale, runs[0].case_count) == ("seed6", 1.0, 3)
    assert (runs[0].driver, runs[0].git_commit, runs[0].command) == (
        "570.86.15", "unknown", "sparsescope run --suite seed6")
    loaded = store.load("run000000002")
    assert loaded == second
    assert loaded.device.sources == second.device.sources


def test_cases_query_by_matrix_and_backend(store, make_runset):
    store.append(make_runset("run000000001", created="2026-02-28T10:00:00+00:00"))
    store.append(make_runset("run000000002", created="2026-03-01T09:30:00+00:00"))
    rows = store.cases(matrix="ldoor", backend="torch-cusparse-i64")
    assert [r.run_id for r in rows] == ["run000000001", "run000000002"]
    assert rows[0] == StoredCase(
        run_id="run000000001", created="2026-02-28T10:00:00+00:00", device="NVIDIA H200",
        matrix="ldoor", backend="torch-cusparse-i64", op="spmv", outcome="ok", reason="",
        time_ms=pytest.approx(0.19675), rel_err=3.2e-8)
    assert len(store.cases()) == 6
    assert len(store.cases(matrix="ldoor")) == 4
    failed = store.cases(backend="own-scalar")
    assert [(r.outcome, r.time_ms, r.rel_err) for r in failed] == [("failed", None, math.inf)] * 2
    skipped = store.cases(backend="cupy-csr-i32")[0]
    assert (skipped.outcome, skipped.rel_err) == ("skipped", None)
    assert skipped.reason == "backend unavailable: cupy is not installed"
    assert store.cases(matrix="cant") == []


def test_provenance_columns_and_json_are_stored(store, make_runset):
    runset = make_runset()
    store.append(runset)
    con = sqlite3.connect(store.path)
    try:
        row = con.execute("SELECT run_id, created, device, driver, libraries, "
                          "sparsescope_version, git_commit, command, suite, scale, "
                          "schema_version, json FROM runs").fetchone()
    finally:
        con.close()
    assert row[:4] == ("a1b2c3d4e5f6", "2026-02-28T10:00:00+00:00", "NVIDIA H200", "570.86.15")
    assert json.loads(row[4]) == {"numpy": "2.4.6", "torch": "2.9.1+cu128"}
    assert row[5:11] == ("0.1.0", "unknown", "sparsescope run --suite seed6", "seed6", 1.0,
                          SCHEMA_VERSION)
    assert json.loads(row[11])["cases"][0]["measurement"]["samples_ms"][0] == 0.1964


def test_a_run_is_stored_once(store, make_runset):
    store.append(make_runset())
    with pytest.raises(UsageError, match="run 'a1b2c3d4e5f6' is already in"):
        store.append(make_runset())
    assert len(store.runs()) == 1 and len(store.cases()) == 3


def test_unknown_run(store, make_runset):
    store.append(make_runset())
    with pytest.raises(UnknownNameError, match="unknown run 'zzz'; known: a1b2c3d4e5f6"):
        store.load("zzz")


def test_empty_store(store):
    assert store.runs() == [] and store.cases() == []


def test_not_a_database_is_a_results_format_error(tmp_path):
    path = tmp_path / "results.sqlite"
    path.write_text("this is not SQLite\n" * 100)
    with pytest.raises(ResultsFormatError, match=f"^{path}: not a usable results store"):
        ResultsStore(path).runs()


def test_default_path_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARSESCOPE_STORE", str(tmp_path / "s.sqlite"))
    assert ResultsStore().path == tmp_path / "s.sqlite"
    monkeypatch.delenv("SPARSESCOPE_STORE")
    path = default_store_path()
    assert path.name == "results.sqlite" and "sparsescope" in path.parent.parts[-2:]
    assert isinstance(path, Path)
