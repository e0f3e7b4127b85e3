"""``api.sweep`` in process and on a local Dask cluster: same cases, resume, failures."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest
from sweep_builders import COMPLEX_MTX, TIMING, signal_mid_sweep, write_collection

from sparsescope import api, matrices, registry
from sparsescope.results.store import ResultsStore

HERE = Path(__file__).parent


def _rows(store: Path) -> list[tuple]:
    with sqlite3.connect(store) as con:
        return con.execute("SELECT matrix_hash, backend, outcome, json FROM sweep_cases "
                           "ORDER BY matrix_hash, backend").fetchall()


def _summary(store: Path) -> dict[tuple, float | None]:
    out = {}
    for digest, backend, outcome, data in _rows(store):
        case = json.loads(data)["case"]
        out[(digest, backend, outcome)] = (case["correctness"] or {}).get("rel_err")
    return out


def test_in_process_and_local_cluster_give_the_same_cases(collection, tmp_path, monkeypatch,
                                                          store):
    first = api.sweep([str(collection)], out_dir=tmp_path / "a", backends=["scipy-cpu"],
                      timing=TIMING)
    assert first.ran == 30 and {c.outcome for c in first.runset.cases} == {"ok"}
    local_store = tmp_path / "local.sqlite"
    local_store.write_bytes(store.read_bytes())
    with sqlite3.connect(local_store) as con:
        con.execute("DELETE FROM sweep_cases")
    monkeypatch.setenv("SPARSESCOPE_STORE", str(local_store))
    second = api.sweep([str(collection)], out_dir=tmp_path / "b", backends=["scipy-cpu"],
                       timing=TIMING, cluster="local", workers=2, quiet=True)
    assert second.ran == 30
    assert _summary(store) == _summary(local_store)
    assert len(_summary(store)) == 30
    assert (tmp_path / "b" / "results.json").is_file()


def test_unreadable_complex_file_is_skipped_and_others_run(tmp_path, store):
    folder = write_collection(tmp_path / "c", 3)
    (folder / "cplx.mtx").write_text(COMPLEX_MTX)
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                    timing=TIMING)
    by_name = {c.matrix: c for c in out.runset.cases}
    assert by_name["cplx"].outcome == "skipped"
    assert "complex" in by_name["cplx"].reason
    assert sum(c.outcome == "ok" for c in out.runset.cases) == 3
    # every case the workers ran was put to the time model first: a CPU one says why not
    assert all("CPU" in c.prediction.not_modelled for c in out.runset.cases if c.outcome == "ok")
    again = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                      timing=TIMING)
    assert again.ran == 0 and again.stored == 4 and len(again.runset.cases) == 4


def test_suitesparse_archive_is_read(tmp_path, store):
    csr = matrices.generate("banded", 30, 120, seed=3)
    mtx = matrices.write_matrix(csr, tmp_path / "Bcsstk" / "Bcsstk.mtx")
    archive = tmp_path / "Group" / "Bcsstk.tar.gz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(mtx, arcname="Bcsstk/Bcsstk.mtx")
    out = api.sweep([str(archive)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                    timing=TIMING)
    (case,) = out.runset.cases
    assert case.matrix == "Bcsstk" and case.outcome == "ok"
    assert out.runset.matrices[0].stats.nnz == csr.nnz


def test_worker_killed_mid_case_is_a_failed_case(tmp_path, store, monkeypatch):
    import dask

    monkeypatch.syspath_prepend(str(HERE))
    registry.register_backend("spmv", "killer-cpu", "fake_backends:KillerBackend")
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "killer-cpu"), "fake_backends:KillerBackend")
    folder = write_collection(tmp_path / "c", 4)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}):
        out = api.sweep([str(folder / "m01_powerlaw.npz")], out_dir=tmp_path / "k",
                        backends=["killer-cpu"], timing=TIMING, cluster="local", workers=2,
                        quiet=True)
        rest = api.sweep([str(folder)], out_dir=tmp_path / "r", backends=["scipy-cpu"],
                         timing=TIMING, cluster="local", workers=2, quiet=True)
    (killed,) = out.runset.cases
    assert killed.outcome == "failed" and "KilledWorker" in killed.reason
    assert [c.outcome for c in rest.runset.cases] == ["ok"] * 4


SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from sparsescope import api, registry
    from sparsescope.timing.types import TimingConfig
    registry.register_backend("spmv", "slow-cpu", "fake_backends:SlowBackend")
    api.sweep([{folder!r}], out_dir={out!r}, backends=["slow-cpu"],
              timing=TimingConfig(warmups=0, repeats=2, flush_l2=False))
""")


def _resume_slow_sweep(monkeypatch, folder: Path, out: Path, store: Path, stored_before: int,
                       total: int):
    """Run the interrupted slow sweep again: it runs only what was not stored, and every case
    is then stored once, ok."""
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "slow-cpu"), "fake_backends:SlowBackend")
    again = api.sweep([str(folder)], out_dir=out, backends=["slow-cpu"], timing=TIMING)
    assert again.stored == stored_before and again.ran == total - stored_before
    rows = _rows(store)
    assert len(rows) == total and len({r[:2] for r in rows}) == total
    assert {r[2] for r in rows} == {"ok"}
    return again


def test_sweep_killed_part_way_resumes_without_repeating(tmp_path, store, monkeypatch):
    folder = write_collection(tmp_path / "c", 12)
    out = tmp_path / "o"
    script = SCRIPT.format(here=str(HERE), folder=str(folder), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if (tmp_path / "store.sqlite").exists() and len(_rows(store)) >= 3:
                break
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    stored_before = len(_rows(store))
    assert 3 <= stored_before < 12
    again = _resume_slow_sweep(monkeypatch, folder, out, store, stored_before, 12)
    assert len(again.runset.cases) == 12


def test_case_timeout_is_a_failed_case(tmp_path, store, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "slow-cpu"), "fake_backends:SlowBackend")
    folder = write_collection(tmp_path / "c", 1)
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["slow-cpu"],
                    timing=TIMING, case_timeout_s=0.05)
    (case,) = out.runset.cases
    assert case.outcome == "failed" and "timed out after 0.05 s" in case.reason
    retried = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["slow-cpu"],
                        timing=TIMING, retry_failed=True)
    assert retried.ran == 1 and retried.runset.cases[0].outcome == "ok"


def test_store_is_kept_once_per_key(store):
    assert ResultsStore().done_keys("none", "0") == set()


@pytest.mark.parametrize("spec", ["suite:awkward"])
def test_suite_source(tmp_path, store, spec):
    out = api.sweep([spec], out_dir=tmp_path / "o", backends=["scipy-cpu"], timing=TIMING)
    assert out.ran == len(out.runset.cases) > 0


CLI_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from sparsescope import registry
    from sparsescope.cli import main
    registry.register_backend("spmv", "slow-cpu", "fake_backends:SlowBackend")
    sys.exit(main(["sweep", {folder!r}, "--out", {out!r}, "--backend", "slow-cpu",
                   "--warmups", "0", "--repeats", "2", "--flush", "off", *{extra!r}]))
""")


@pytest.mark.parametrize("extra", [[], ["--cluster", "local", "--workers", "2"]],
                         ids=["in-process", "local-cluster"])
def test_ctrl_c_stops_cleanly_and_a_rerun_resumes(tmp_path, store, monkeypatch, extra):
    # 8 slow cases: room for the signal to land mid-sweep on a loaded machine. Ctrl-C at a
    # terminal reaches the whole process group: each worker of a local cluster printed a
    # KeyboardInterrupt traceback (four on a 2-worker sweep, issue 33)
    folder = write_collection(tmp_path / "c", 8)
    out = tmp_path / "o"
    script = CLI_SCRIPT.format(here=str(HERE), folder=str(folder), out=str(out), extra=extra)
    returncode, err = signal_mid_sweep(script, store, signal.SIGINT, group=True)
    stored_before = len(_rows(store))
    assert returncode == 130, err
    assert "interrupted:" in err and "run the same command again to resume" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "CancelledError" not in err, err
    assert 2 <= stored_before < 8
    _resume_slow_sweep(monkeypatch, folder, out, store, stored_before, 8)


@pytest.mark.parametrize("cluster", [None, "local"])
def test_time_limit_stops_a_sweep_that_a_rerun_finishes(tmp_path, store, monkeypatch, cluster):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "slow-cpu"), "fake_backends:SlowBackend")
    folder = write_collection(tmp_path / "c", 4)
    options = dict(out_dir=tmp_path / "o", backends=["slow-cpu"], timing=TIMING,
                   cluster=cluster, workers=1 if cluster else None, quiet=True)
    part = api.sweep([str(folder)], time_limit_s=0.01, **options)  # past it at once: one case
    left = part.throughput()["left"]
    assert part.ran >= 1 and left >= 1 and part.ran + left == 4
    assert len(part.runset.cases) == part.ran  # results of what was done are written
    assert len(_rows(store)) == part.ran
    rest = api.sweep([str(folder)], **options)
    assert rest.stored == part.ran and rest.ran == 4 - part.ran
    assert rest.throughput()["left"] == 0 and len(_rows(store)) == 4


def test_cli_time_limit_exit_code_says_to_resume(tmp_path, store, monkeypatch, capsys):
    from sparsescope.cli import main

    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "slow-cpu"), "fake_backends:SlowBackend")
    folder = write_collection(tmp_path / "c", 4)
    code = main(["sweep", str(folder), "--out", str(tmp_path / "o"), "--backend", "slow-cpu",
                 "--warmups", "0", "--repeats", "2", "--flush", "off", "--time-limit", "0.01",
                 "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 12 and doc["exit_code"] == 12 and doc["throughput"]["left"] >= 1
    assert "run the same command again to resume" in doc["exit_reason"]
