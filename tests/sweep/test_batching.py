"""Short cases batched into one Dask task, from this sweep's own case times (issue 35), and the
client's loop around the warm-up: each worker warmed first, cases held until their host is
warm, a failed batch split. The loop runs against a recording stand-in for the Dask client:
what is submitted, where and in which order is checked, nothing is timed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sparsescope.ops.params import SpmmParams, SpmvParams
from sparsescope.sweep import dask_loop, first_use, prefetch, warm_up
from sparsescope.sweep.batching import MIN_TASK_S, CaseTimes, batches
from sparsescope.sweep.outcomes import Probe
from sparsescope.sweep.sources import MatrixSource
from sparsescope.sweep.tasks import SweepTask

SRC = MatrixSource("/m/a.mtx", "a", "file")


def _task(backend: str, src: MatrixSource = SRC, params=None) -> SweepTask:
    return SweepTask(source=src, backend=backend, op="spmv", params=params or SpmvParams())


def test_a_case_is_bounded_by_the_same_backends_time_on_a_larger_matrix():
    times = CaseTimes()
    lib = _task("lib")
    times.add(lib, 1_000_000, 0.30)
    times.add(lib, 50_000, 0.02)
    times.add(lib, 200_000, 0.05)
    assert times.bound(lib, 40_000) == 0.02  # the shortest of those at least as large
    assert times.bound(lib, 100_000) == 0.05
    assert times.bound(lib, 200_000) == 0.05  # as large counts
    assert times.bound(lib, 2_000_000) is None  # nothing as large has run
    assert times.bound(_task("other"), 1_000) is None  # nor of another backend
    spmm = SweepTask(source=SRC, backend="lib", op="spmm", params=SpmmParams(k=8))
    assert times.bound(spmm, 1_000) is None  # nor of other parameters


def test_short_cases_are_batched_until_a_batch_reaches_the_minimum_in_plan_order():
    times = CaseTimes()
    names = ["a", "b", "c", "d", "long", "e"]
    for name, seconds in zip(names, (0.04, 0.04, 0.04, 0.04, 0.5, 0.04), strict=True):
        times.add(_task(name), 10_000, seconds)
    tasks = [_task(n) for n in [*names, "unknown"]]
    got = [[t.backend for t in batch] for batch in batches(tasks, 5_000, times)]
    # a+b+c = 0.12 s >= 0.1 s closes a batch; "long" goes alone and closes what is open
    assert got == [["a", "b", "c"], ["d"], ["long"], ["e"], ["unknown"]]
    assert MIN_TASK_S == 0.1
    # on a matrix larger than any seen, nothing is known: one case a task
    assert all(len(b) == 1 for b in batches(tasks, 50_000, times))


def test_a_batch_never_mixes_parameter_sets():
    times = CaseTimes()
    k8 = [SweepTask(source=SRC, backend=b, op="spmm", params=SpmmParams(k=8)) for b in "xy"]
    k64 = [SweepTask(source=SRC, backend=b, op="spmm", params=SpmmParams(k=64)) for b in "xy"]
    for task in (*k8, *k64):
        times.add(task, 1e6, 0.01)
    got = batches([*k8, *k64], 1e3, times)
    assert [[t.params.k for t in b] for b in got] == [[8, 8], [64, 64]]


class _Future:
    """A stand-in Dask future: what was submitted, and its result once set."""

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.value = None
        self.released = False

    def result(self, timeout=None):
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value

    def release(self):
        self.released = True


class _Client:
    def __init__(self):
        self.submitted: list[_Future] = []
        self.cancelled: list = []

    def submit(self, fn, *args, **kwargs):
        future = _Future(fn, args, kwargs)
        self.submitted.append(future)
        return future

    def cancel(self, futures):
        self.cancelled += list(futures)

    def of(self, fn) -> list[_Future]:
        return [f for f in self.submitted if f.fn is fn]


class _Finished:
    def __init__(self):
        self.futures = []

    def add(self, future):
        self.futures.append(future)

    def is_empty(self):
        return not self.futures


@pytest.fixture
def loop_parts(monkeypatch):
    import distributed

    monkeypatch.setattr(distributed, "as_completed", _Finished)
    client = _Client()
    reported = []

    def make(groups, plan):
        def decode_probe(data):
            return Probe(data["hash"], SimpleNamespace(stats=SimpleNamespace(nnz=data["nnz"])),
                         "")

        return dask_loop.DaskLoop(
            client, groups, sort=lambda group, probe: list(group), report=reported.append,
            decode_probe=decode_probe,
            decode_case=lambda data: SimpleNamespace(outcome="ok", seconds=data["seconds"]),
            on_probe=None, options=dict(timing=None, case_timeout_s=None, seed=0),
            prefetch_next=True, plan=plan, decode_warm=warms.append)

    warms: list = []
    return SimpleNamespace(client=client, reported=reported, warms=warms, make=make)


def _sources(*names_nnz):
    return [MatrixSource(f"/m/{n}.npz", n, "file") for n, _ in names_nnz]


def test_each_worker_is_warmed_first_and_its_hosts_cases_wait_for_every_warm_up(
        loop_parts, monkeypatch):
    big, small = _sources(("big", 0), ("small", 0))
    monkeypatch.setattr(dask_loop, "largest_first", lambda groups: [big, small])
    groups = {big: [_task("g1", big), _task("g2", big)], small: [_task("g1", small)]}
    warm = (_task("g1", small), _task("g2", small))
    plan = first_use.FirstUsePlan(sweep_id="s", warm=warm)
    loop = loop_parts.make(groups, plan)
    client = loop_parts.client
    loop.start({"tcp://h:1": {"host": "h"}, "tcp://h:2": {"host": "h"}})

    warmups = client.of(warm_up.warm_up_task)
    assert [w.kwargs["workers"] for w in warmups] == [["tcp://h:1"], ["tcp://h:2"]]
    assert [w.args[1] for w in warmups] == [(warm[0],), (warm[1],)]  # one warm case each
    assert [w.kwargs["prefetch_src"] for w in warmups] == [big, small]  # first matrices load
    assert all(w.kwargs["priority"] == dask_loop.WARM_PRIORITY for w in warmups)
    probes = client.of(prefetch.probe)
    assert [p.args for p in probes] == [(big, warmups[0]), (small, warmups[1])]  # beside

    # the first worker is warm and its matrix probed: held, the other worker still warms
    warmups[0].value = {"worker": "tcp://h:1", "seconds": 1.5}
    loop.handle(warmups[0])
    probes[0].value = {"hash": "hb", "nnz": 9000, "worker": "tcp://h:1"}
    loop.handle(probes[0])
    assert client.of(prefetch.run_task_beside) == [] and loop.busy()
    assert not probes[0].released  # kept: its cases will be placed beside it

    warmups[1].value = {"worker": "tcp://h:2", "seconds": 2.0}
    loop.handle(warmups[1])
    cases = client.of(prefetch.run_task_beside)
    assert [(c.args[0], c.args[1].backend) for c in cases] == [(probes[0], "g1"),
                                                               (probes[0], "g2")]
    assert all(c.kwargs["plan"] is plan for c in cases)
    assert probes[0].released
    assert loop_parts.warms == [{"worker": "tcp://h:1", "seconds": 1.5},
                                {"worker": "tcp://h:2", "seconds": 2.0}]


def test_a_host_of_one_worker_warms_nothing_and_is_not_held_by_another_host(loop_parts,
                                                                            monkeypatch):
    (src,) = _sources(("a", 0))
    monkeypatch.setattr(dask_loop, "largest_first", lambda groups: [src])
    plan = first_use.FirstUsePlan(sweep_id="s", warm=(_task("g1"),))
    loop = loop_parts.make({src: [_task("g1", src)]}, plan)
    loop.start({"tcp://a:1": {"host": "a"}, "tcp://b:1": {"host": "b"}})
    client = loop_parts.client
    warmups = client.of(warm_up.warm_up_task)
    assert [w.args[1] for w in warmups] == [(), ()]  # alone on its host: no warm case
    warmups[0].value = {"worker": "tcp://a:1", "seconds": 0.5}
    loop.handle(warmups[0])
    probe = client.of(prefetch.probe)[0]
    probe.value = {"hash": "h", "nnz": 10, "worker": "tcp://a:1"}
    loop.handle(probe)  # host b still warming: host a's cases go out all the same
    assert len(client.of(prefetch.run_task_beside)) == 1


def _one_batch(loop_parts, monkeypatch, backends, seconds, nnz):
    """A loop over one matrix of ``nnz`` nonzeros whose cases (``backends``) each took
    ``seconds`` on a larger matrix, started on one worker and probed: (loop, its tasks, the one
    batch it handed out)."""
    (src,) = _sources(("a", 0))
    monkeypatch.setattr(dask_loop, "largest_first", lambda groups: [src])
    tasks = [_task(b, src) for b in backends]
    loop = loop_parts.make({src: tasks}, None)
    for task in tasks:
        loop.times.add(task, 1e6, seconds)
    loop.start(["tcp://a:1"])
    probe = loop_parts.client.of(prefetch.probe)[0]
    probe.value = {"hash": "h", "nnz": nnz, "worker": "tcp://a:1"}
    loop.handle(probe)
    (batch,) = loop_parts.client.of(prefetch.run_batch_beside)
    return loop, tasks, batch


def test_a_batch_that_fails_as_a_whole_is_split_and_each_case_run_alone(loop_parts,
                                                                        monkeypatch):
    # each known to take 10 ms on a larger matrix
    loop, tasks, batch = _one_batch(loop_parts, monkeypatch, ("x", "y", "z"), 0.01, 500)
    client = loop_parts.client
    assert [t.backend for t in batch.args[1]] == ["x", "y", "z"] and loop.batched == 1

    batch.value = RuntimeError("KilledWorker: its worker died")
    loop.handle(batch)
    alone = client.of(prefetch.run_task_beside)
    assert [c.args[1].backend for c in alone] == ["x", "y", "z"]
    assert all(c.args[0] == {"worker": None} for c in alone)  # anywhere: not beside
    assert loop_parts.reported == []  # nothing failed yet: each case runs again
    for i, future in enumerate(alone):
        future.value = {"seconds": 0.01 * (i + 1)}
        loop.handle(future)
    assert [r.task.backend for r in loop_parts.reported] == ["x", "y", "z"]


def test_a_batchs_cases_are_each_reported_and_their_times_kept(loop_parts, monkeypatch):
    loop, tasks, batch = _one_batch(loop_parts, monkeypatch, ("x", "y"), 0.02, 700)
    batch.value = [{"seconds": 0.004}, {"seconds": 0.006}]
    loop.handle(batch)
    assert [r.task.backend for r in loop_parts.reported] == ["x", "y"]
    assert loop.times.bound(tasks[0], 700) == 0.004 and loop.times.bound(tasks[1], 700) == 0.006


def test_a_first_probe_lost_with_its_warm_up_is_probed_again(loop_parts, monkeypatch):
    (src,) = _sources(("a", 0))
    monkeypatch.setattr(dask_loop, "largest_first", lambda groups: [src])
    loop = loop_parts.make({src: [_task("g1", src)]}, first_use.FirstUsePlan(sweep_id="s"))
    loop.start({"tcp://a:1": {"host": "a"}})
    client = loop_parts.client
    (warm,) = client.of(warm_up.warm_up_task)
    (probe,) = client.of(prefetch.probe)
    warm.value = RuntimeError("KilledWorker")
    loop.handle(warm)
    assert loop_parts.warms[0]["error"] == "RuntimeError: KilledWorker"
    probe.value = RuntimeError("KilledWorker")  # its dependency failed
    loop.handle(probe)
    again = client.of(prefetch.probe)
    assert len(again) == 2 and again[1].args == (src,)  # queued again, anywhere
    assert loop_parts.reported == []  # no case failed for it


def test_a_batch_runs_each_case_through_the_worker_with_its_own_time(tmp_path, store):
    from sweep_builders import TIMING, write_collection

    from sparsescope.sweep import matrix_cache, worker
    from sparsescope.sweep.sources import expand_sources

    matrix_cache.clear()
    (src,) = expand_sources([str(write_collection(tmp_path / "c", 1))])
    tasks = [_task("scipy-cpu", src), _task("no-such-backend", src)]
    results = prefetch.run_batch_beside({"hash": "h"}, tasks, TIMING, submitted_at=0.0)
    cases = [worker.received_case(r) for r in results]
    assert [(c.backend, c.outcome) for c in cases] == [("scipy-cpu", "ok"),
                                                       ("no-such-backend", "failed")]
    assert all(r["seconds"] > 0 and r["seconds"] == c.stages.wall_s
               for r, c in zip(results, cases, strict=True))
    assert matrix_cache.COUNTS["loads"] == 1  # the batch's matrix read once
