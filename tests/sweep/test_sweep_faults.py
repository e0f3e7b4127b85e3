"""Sweeps under faults (issue 33): a locked store, a cluster that loses every worker, a case
that never finishes past --time-limit, SIGTERM, a failed probe's rows on resume. Every case
ends stored once or failed with a reason, and every sweep ends."""

from __future__ import annotations

import json
import signal
import sqlite3
import textwrap
import threading
import time
from pathlib import Path

import pytest
from sweep_builders import TIMING, signal_mid_sweep, write_collection

from sparsescope import __version__, api, registry
from sparsescope.errors import StoreWriteError
from sparsescope.results.store import ResultsStore
from sparsescope.sweep import cluster, dask_loop, engine
from sparsescope.sweep.sources import expand_sources, source_hash
from sparsescope.sweep.tasks import plan_tasks, task_key

HERE = Path(__file__).parent


def _rows(store: Path) -> list[tuple]:
    with sqlite3.connect(store) as con:
        return con.execute("SELECT matrix_hash, backend, outcome FROM sweep_cases "
                           "ORDER BY matrix_hash, backend").fetchall()


def _results(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["cases"]


class _Lock:
    """A write lock on the store held by another connection (another sweep writing)."""

    def __init__(self, path: Path) -> None:
        self.path, self.con = path, None

    def take(self, *_) -> None:
        if self.con is None:
            self.con = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.con.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        if self.con is not None:
            self.con.execute("ROLLBACK")
            self.con.close()


@pytest.fixture
def short_store_waits(monkeypatch):
    from sparsescope.api import sweeps

    monkeypatch.setattr(sweeps, "STORE_WAIT_S", 0.3)


def test_store_locked_for_the_rest_of_the_sweep_keeps_every_case(tmp_path, store,
                                                                short_store_waits):
    # defect 9: a store locked past the busy timeout aborted the sweep with exit 5, the case
    # in flight lost and no results.json
    folder = write_collection(tmp_path / "c", 3)
    lock = _Lock(store)
    try:
        with pytest.raises(StoreWriteError) as info:  # exit 10: measured, not stored
            api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                      timing=TIMING, on_case=lock.take)  # locked once the first case is stored
    finally:
        lock.release()
    assert info.value.exit_code == 10
    message = str(info.value)
    assert "2 case(s) could not be stored" in message and "database is locked" in message
    assert str(tmp_path / "o" / "results.json") in message
    assert [c["outcome"] for c in _results(tmp_path / "o")] == ["ok"] * 3
    assert len(_rows(store)) == 1
    again = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                      timing=TIMING)  # the lock gone: the two cases not stored run again
    assert (again.ran, again.stored, len(_rows(store))) == (2, 1, 3)


def test_store_locked_for_a_while_is_waited_for_then_written(tmp_path, store,
                                                            short_store_waits):
    folder = write_collection(tmp_path / "c", 4)
    lock = _Lock(store)
    stored: list[int] = []  # rows in the store as each case is reported

    def on_case(case) -> None:
        stored.append(len(_rows(store)))
        if len(stored) == 1:
            lock.take()  # cases 2 and 3 wait for it, then are kept in memory
        elif len(stored) == 3:
            lock.release()  # case 4 writes all three

    out = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                    timing=TIMING, on_case=on_case)
    assert stored == [1, 1, 1, 4]
    assert out.ran == 4 and [c.outcome for c in out.runset.cases] == ["ok"] * 4
    assert len(_rows(store)) == 4 and len(_results(tmp_path / "o")) == 4


def test_failed_probe_rows_are_replaced_on_resume(tmp_path, store):
    # a probe whose worker died stored every case of its matrix as failed under the file's
    # hash; the resumed sweep stored them again under the content hash: 47 rows for 30 cases
    folder = write_collection(tmp_path / "c", 2)
    lost = plan_tasks(expand_sources([str(folder)]), ["scipy-cpu"], "spmv")[0]
    digest, backend, op, params = task_key(lost, source_hash(lost.source))
    ResultsStore().append_sweep_case(digest, lost.source.name, backend, op, params, _device(),
                                     __version__, "failed",
                                     json.dumps({"matrix": None, "case": {}}))
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                    timing=TIMING, retry_failed=True)
    assert out.ran == 2
    rows = _rows(store)
    assert len(rows) == 2 and {r[2] for r in rows} == {"ok"}, rows


def _device() -> str:
    from sparsescope.api.runs import device_context

    return device_context(["scipy-cpu"], True).device_name


@pytest.fixture
def hang_backend(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "hang-cpu"), "fake_backends:HangBackend")
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("SPARSESCOPE_TEST_HANG_DIR", str(marks))
    monkeypatch.setenv("SPARSESCOPE_TEST_HANG_S", "20")
    monkeypatch.setattr(engine, "POLL_S", 0.02)
    return marks


def _sweep_in_thread(limit_s: float, sweep=api.sweep, **kwargs):
    """``sweep(**kwargs)`` in a thread; the test fails, rather than hangs, past ``limit_s``."""
    box: dict = {}

    def target() -> None:
        try:
            box["out"] = sweep(**kwargs)
        except BaseException as exc:  # noqa: BLE001 (re-raised in the test)
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        pytest.fail(f"the sweep did not end within {limit_s} s")
    if "error" in box:
        raise box["error"]
    return box["out"], time.monotonic() - start


def test_a_hung_case_on_a_cluster_ends_by_the_clock(tmp_path, store, hang_backend, monkeypatch):
    # defect 4: --time-limit was checked only when a future completed
    import distributed

    monkeypatch.setattr(engine, "FIRST_CASE_GRACE_S", 0.5)
    one = write_collection(tmp_path / "one", 1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  dashboard_address=":0") as cluster:
        options = dict(backends=["hang-cpu"], timing=TIMING,
                       scheduler=cluster.scheduler_address, quiet=True)
        # 1. the case hangs: the time limit, by the clock, cancels it (nothing stored)
        out, took = _sweep_in_thread(15, sources=[str(one)], out_dir=tmp_path / "t",
                                     time_limit_s=0.5, **options)
        assert took < 8 and out.ran == 0 and out.engine.left == 1 and not out.engine.aborted
        assert _rows(store) == []


def test_a_cluster_with_no_live_worker_is_seen_as_lost(monkeypatch):
    """The engine's liveness check (asked at most once a second): no worker, or a scheduler
    that no longer answers, counts as lost time; a worker seen again resets it. A live cluster
    scaled to zero under a hung case is left out: Dask's graceful retirement can wait on the
    hung task for longer than a test should, on a loaded machine."""
    clock = [100.0]
    monkeypatch.setattr(dask_loop.time, "perf_counter", lambda: clock[0])

    class Client:
        answers: list = []

        def nthreads(self):
            answer = self.answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer

    client = Client()
    alive = dask_loop.Liveness(client)
    client.answers = [{"tcp://w": 2}, {}, OSError("scheduler gone"), {"tcp://w": 2}]
    clock[0] += 1.0
    assert alive.lost_for() == 0.0            # a worker answers
    clock[0] += 0.5
    assert alive.lost_for() == 0.5            # not asked again within a second
    clock[0] += 0.5
    assert alive.lost_for() == 1.0            # asked: no worker
    clock[0] += 1.0
    assert alive.lost_for() == 2.0            # the scheduler is gone too
    clock[0] += 1.0
    assert alive.lost_for() == 0.0            # a worker again


def test_owned_cluster_gives_a_killed_case_one_retry():
    # docs/SWEEP.md: a worker killed mid-case is retried once elsewhere (Dask's default
    # allowed-failures is 3: four workers died for one case)
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 3}):
        assert cluster.allowed_failures() == 1
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        assert cluster.allowed_failures() == 0


TERM_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from sparsescope import registry
    from sparsescope.cli import main
    registry.register_backend("spmv", "slow-cpu", "fake_backends:SlowBackend")
    sys.exit(main(["sweep", {folder!r}, "--out", {out!r}, "--backend", "slow-cpu",
                   "--warmups", "0", "--repeats", "2", "--flush", "off"]))
""")


def test_sigterm_stops_cleanly_with_results_and_a_resume_hint(tmp_path, store):
    # 8 slow cases: room for the signal to land mid-sweep on a loaded machine
    folder = write_collection(tmp_path / "c", 8)
    out = tmp_path / "o"
    script = TERM_SCRIPT.format(here=str(HERE), folder=str(folder), out=str(out))
    returncode, err = signal_mid_sweep(script, store, signal.SIGTERM)
    stored = len(_rows(store))
    assert returncode == 143, err
    assert "terminated (SIGTERM):" in err and "run the same command again to resume" in err
    assert "Traceback" not in err
    assert 2 <= stored < 8
    assert str(out / "results.json") in err
    assert len(_results(out)) == stored  # what finished is in results.json


def test_full_disk_store_keeps_every_case_in_results(tmp_path, store, short_store_waits,
                                                     monkeypatch):
    from sparsescope.results.store import StoreBusyError

    def full(self, rows):
        raise StoreBusyError(f"{self.path}: results store not writable now "
                             "(database or disk is full)")

    monkeypatch.setattr(ResultsStore, "append_sweep_cases", full)
    folder = write_collection(tmp_path / "c", 2)
    with pytest.raises(StoreWriteError, match=r"2 case\(s\) could not be stored .*disk is full"):
        api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                  timing=TIMING)
    assert [c["outcome"] for c in _results(tmp_path / "o")] == ["ok"] * 2
    assert (tmp_path / "o" / "report.md").is_file()


@pytest.mark.parametrize("limit", ["case_timeout_s", "time_limit_s"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0, -5.0])
def test_a_time_limit_that_is_not_a_positive_number_is_refused(limit, value):
    """NaN passes a plain ``<= 0`` check, and then every case times out at once."""
    from sparsescope.errors import UsageError
    from sparsescope.sweep.engine import execute

    with pytest.raises(UsageError, match="finite number of seconds > 0"):
        execute([], timing=TIMING, on_result=lambda r: None, **{limit: value})


def test_an_archive_gives_name_slash_name_mtx_not_the_first_mtx(tmp_path):
    """A SuiteSparse archive holding ``two/two_b.mtx`` (its right-hand side) before
    ``two/two.mtx`` measured the right-hand side (issue 33, defect 3)."""
    import io
    import tarfile

    from sparsescope.sweep.sources import expand_sources, load_source

    def mtx(rows: int) -> bytes:
        body = "".join(f"{i} 1 {i}.5\n" for i in range(1, rows + 1))
        return (f"%%MatrixMarket matrix coordinate real general\n{rows} 1 {rows}\n{body}"
                ).encode()

    archive = tmp_path / "two.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for member, data in (("two/two_b.mtx", mtx(5)), ("two/two.mtx", mtx(3))):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (source,) = expand_sources([str(archive)])
    matrix = load_source(source)
    assert matrix.csr.shape == (3, 1) and list(matrix.csr.data) == [1.5, 2.5, 3.5]


@pytest.mark.slow
def test_workers_killed_again_and_again_a_locked_then_full_store_every_case_once(
        tmp_path, store, monkeypatch, short_store_waits):
    """Issue 33's fault test: cases that kill every worker they reach (each retried once on
    another worker), the store locked by another writer for a while, then full (a faked
    ENOSPC) for a while, under a time limit. Every case ends stored once, ok or failed with
    its reason, and the sweep ends within its limit."""
    from sparsescope.results.store import StoreBusyError

    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "even-killer-cpu"),
                        "fake_backends:EvenRowsKillerBackend")
    folder = write_collection(tmp_path / "c", 4)  # 40..43 rows: two matrices kill
    lock = _Lock(store)
    append = ResultsStore.append_sweep_cases
    seen: list[str] = []
    full = {"on": False}

    def on_case(case) -> None:
        seen.append(case.outcome)
        if len(seen) == 1:
            lock.take()          # cases 2 and 3 find the store locked
        elif len(seen) == 3:
            lock.release()
            full["on"] = True    # cases 4 and 5 find the disk full
        elif len(seen) == 5:
            full["on"] = False

    def maybe_full(self, rows):
        if full["on"]:
            raise StoreBusyError(f"{self.path}: results store not writable now "
                                 "(database or disk is full)")
        return append(self, rows)

    monkeypatch.setattr(ResultsStore, "append_sweep_cases", maybe_full)
    out, _ = _sweep_in_thread(
        240, sources=[str(folder)], out_dir=tmp_path / "o", timing=TIMING, quiet=True,
        backends=["scipy-cpu", "even-killer-cpu"], cluster="local", workers=2,
        time_limit_s=180, on_case=on_case)
    assert out.ran == 8 and out.engine.left == 0 and not out.engine.aborted
    cases = {(c.matrix, c.backend): c for c in out.runset.cases}
    assert len(cases) == len(out.runset.cases) == 8  # each case once in results.json
    for (matrix, backend), case in cases.items():
        rows = int(matrix[1:3]) + 40
        if backend == "even-killer-cpu" and rows % 2 == 0:
            assert case.outcome == "failed" and "KilledWorker" in case.reason, case
        else:  # a case queued on a worker that died twice may fail with it (Dask's count)
            assert case.outcome == "ok" or "KilledWorker" in case.reason, case
    stored = _rows(store)
    assert len(stored) == 8 and len({r[:2] for r in stored}) == 8  # each stored once
    assert sorted(r[2] for r in stored) == sorted(c.outcome for c in cases.values())


def test_an_owned_cluster_keeps_each_case_beside_its_matrix():
    # work stealing off: an idle worker that stole a case loaded its matrix and rebuilt its
    # shared work again (results/h200/sweep-gpus/2026-11-28-held-out-half)
    import distributed

    settings = cluster.scheduler_settings()
    assert settings["distributed.scheduler.work-stealing"] is False
    assert settings["distributed.scheduler.allowed-failures"] == cluster.allowed_failures()
    owned = cluster.start_cluster("local", 1)
    try:
        with distributed.Client(owned) as client:
            extensions = client.run_on_scheduler(
                lambda dask_scheduler: sorted(dask_scheduler.extensions))
        assert "stealing" not in extensions
    finally:
        owned.close()
