"""The client's loop of a sweep on a Dask cluster: one lane of matrices per worker.

Each worker has a lane: the engine hands it one matrix at a time, largest first
(``source_facts.largest_first``). A matrix is probed on a worker (loaded, hashed, its
statistics computed); then its cases are submitted beside it (``priority=1``), and at that
moment the worker's next matrix is handed out: its probe queued behind the cases and, in a
sweep that times no CPU backend, a :func:`~sparsescope.sweep.prefetch.start` that loads it in
the background while the cases run (``priority=2``: it runs first and returns at once). So a
GPU worker goes from one matrix's last case to the next matrix's first case without waiting
for a load.

"Beside it" is a data dependency, not a worker restriction: each of those tasks takes the
probe's future as an argument, so Dask runs it where the probe's result is. When that worker
dies, Dask probes the matrix again on another worker and runs the tasks there. (A task
restricted to a worker that died waited for ever once every worker had died and come back
under new addresses: Dask reschedules such a task only on a worker it names.) A worker that
joins later gets a lane of its own at the next liveness check.

Every wait is bounded by the clock: past the deadline what is queued is cancelled; a cluster
left with no live worker for ``engine.NO_WORKER_GRACE_S`` ends the sweep, the cases in flight
reported failed with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sparsescope.sweep import prefetch, worker
from sparsescope.sweep.outcomes import Probe, SweepResult
from sparsescope.sweep.source_facts import largest_first
from sparsescope.sweep.sources import MatrixSource, source_hash
from sparsescope.sweep.tasks import SweepTask

#: Dask priorities (higher runs first on a worker): the background load of the next matrix
#: starts as soon as the worker is free, then the current matrix's cases, then the next probe.
PREFETCH_PRIORITY, CASE_PRIORITY, PROBE_PRIORITY = 2, 1, 0

#: How long the client waits to fetch a finished task's result (seconds; a result is a few
#: kB). A worker that dies holding a result the client has not fetched yet loses it: Dask
#: computes it again, and ``Future.result()`` waited for that without end (issue 33's fault
#: test hung there, past its time limit). Past this wait the future is watched again instead.
RESULT_WAIT_S = 5.0

#: What :meth:`DaskLoop._fetch` returns for a result lost with its worker.
_LOST = object()


def _factory(task: SweepTask) -> Any:
    """The registry entry of the task's backend (a plug-in or a test's fake registered at run
    time travels with the task, so the worker can register it too)."""
    from sparsescope import registry

    return registry.BACKENDS.get((task.op, task.name))


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Liveness:
    """How long the cluster has had no worker, and which workers it has (asked at most once
    a second)."""

    def __init__(self, client) -> None:
        self.client = client
        self.seen = self.asked = time.perf_counter()
        self.workers: set[str] = set()

    def lost_for(self) -> float:
        now = time.perf_counter()
        if now - self.asked >= 1.0:
            self.asked = now
            try:
                threads = self.client.nthreads()
            except Exception:  # noqa: BLE001 (the scheduler gone too: no worker either)
                threads = {}
            self.workers = set(threads)
            if threads:
                self.seen = now
        return now - self.seen


class DaskLoop:
    """One sweep's futures on ``client``: probes and cases in flight, the matrices waiting,
    and each worker's lane (see the module docstring). ``sort(group, probe)`` reports a
    matrix's stored and unreadable cases and returns those to run (``engine._Claims``);
    ``report(result)`` reports one finished case; ``decode_probe`` / ``decode_case`` read a
    worker's answer (its busy time counted)."""

    def __init__(self, client, groups: dict[MatrixSource, list[SweepTask]], *,
                 sort: Callable, report: Callable, decode_probe: Callable,
                 decode_case: Callable, on_probe: Callable | None, options: dict,
                 prefetch_next: bool) -> None:
        from distributed import as_completed

        self.client, self.groups, self.options = client, groups, options
        self.sort, self.report = sort, report
        self.decode_probe, self.decode_case, self.on_probe = decode_probe, decode_case, on_probe
        self.prefetch_next = prefetch_next
        self.waiting = largest_first(groups)[::-1]  # popped from the end: largest first
        self.probes: dict[Any, MatrixSource] = {}
        self.cases: dict[Any, tuple[SweepTask, Any]] = {}
        self.finished = as_completed()
        self.lanes: set[str] = set()
        self.prefetched = 0

    def start(self, workers: Sequence[str]) -> None:
        """A lane for each worker: as many first probes as workers, which Dask spreads over
        the idle ones (one when the cluster has no worker yet)."""
        self.lanes.update(workers)
        for _ in range(max(1, len(workers))):
            self.assign(None)

    def assign(self, after=None) -> None:
        """The next matrix, largest first: beside ``after`` (the future of the probe whose
        cases were just submitted: its worker's lane), or on any worker (None)."""
        if not self.waiting:
            return
        src = self.waiting.pop()
        beside = () if after is None else (after,)
        if self.prefetch_next and after is not None:
            from distributed import fire_and_forget

            fire_and_forget(self.client.submit(prefetch.start, src, *beside, pure=False,
                                               priority=PREFETCH_PRIORITY))
            self.prefetched += 1
        future = self.client.submit(prefetch.probe, src, *beside, retries=1, pure=False,
                                    priority=PROBE_PRIORITY)
        self.probes[future] = src
        self.finished.add(future)

    def handle(self, future) -> None:
        """One finished future: a probe's matrix gets its cases and its worker the next
        matrix; a case is reported. A result lost with its worker is left for Dask to compute
        again (the future watched again)."""
        if future not in self.probes and future not in self.cases:
            return  # cancelled and forgotten
        data = self._fetch(future)
        if data is _LOST:
            return
        if future in self.probes:
            src = self.probes.pop(future)
            probe = self._probed(data, src)
            if probe.matrix is None:  # unreadable, or its worker died: nothing to place beside
                self.sort(self.groups[src], probe)
                self.assign(None)
            else:
                self._submit_cases(src, probe, future)
                self.assign(future)
        else:
            task, probe = self.cases.pop(future)
            if isinstance(data, BaseException):  # KilledWorker, or an error past its retry
                case = worker.failed_case(task, _error_text(data))
            else:
                case = self.decode_case(data)
            self.report(SweepResult(task, probe.hash, probe.matrix, case))
        future.release()

    def _fetch(self, future):
        """The future's result, its error (an exception, returned), or :data:`_LOST` when it
        could not be fetched within :data:`RESULT_WAIT_S`."""
        try:
            return future.result(timeout=RESULT_WAIT_S)
        except TimeoutError:
            self.finished.add(future)  # yielded again once computed again
            return _LOST
        except Exception as exc:  # noqa: BLE001 (the task's own error, or KilledWorker)
            return exc

    def _probed(self, data, src: MatrixSource) -> Probe:
        """The probe of ``src``: its worker's answer, or every case failed when its worker
        died."""
        if isinstance(data, BaseException):  # the probe's worker died
            return Probe(source_hash(src), None, f"loading failed: {_error_text(data)}",
                         outcome="failed")
        probe = self.decode_probe(data)
        if self.on_probe is not None:
            self.on_probe(src, probe.hash)
        return probe

    def _submit_cases(self, src: MatrixSource, probe: Probe, probed) -> None:
        """The cases of ``src`` to run, each beside its matrix (``probed``: the probe's
        future; see the module docstring)."""
        options = self.options
        for task in self.sort(self.groups[src], probe):
            submitted = self.client.submit(
                prefetch.run_task_beside, probed, task, options["timing"],
                case_timeout_s=options["case_timeout_s"], factory=_factory(task),
                seed=options["seed"], submitted_at=time.time(), retries=1, pure=False,
                priority=CASE_PRIORITY)
            self.cases[submitted] = (task, probe)
            self.finished.add(submitted)

    def new_workers(self, seen: set[str]) -> None:
        """A lane (one more matrix handed out) for each worker that joined since the start;
        a worker that died and came back under a new address is one of them."""
        for address in sorted(seen - self.lanes):
            self.lanes.add(address)
            self.assign(None)

    def cancel(self) -> None:
        """Cancel every future in flight (the time limit): their cases are left for a
        re-run."""
        self.client.cancel([*self.probes, *self.cases])

    def abandon(self, reason: str) -> None:
        """The cluster has no worker: every case in flight, and every case of a matrix being
        probed, reported failed with ``reason``; the matrices waiting are left."""
        self.cancel()
        why = f"{reason}; run again with --retry-failed"
        for src in self.probes.values():
            digest = source_hash(src)
            for task in self.groups[src]:
                self.report(SweepResult(task, digest, None, worker.failed_case(task, why)))
        for task, probe in self.cases.values():
            self.report(SweepResult(task, probe.hash, probe.matrix,
                                    worker.failed_case(task, why)))
