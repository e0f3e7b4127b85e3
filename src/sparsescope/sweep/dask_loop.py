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

A sweep of GPU backends starts with a warm-up (``sweep.warm_up``): one task per worker, placed
on it (a loose restriction: Dask runs it elsewhere if that worker dies), that builds the
worker's device context from the sweep's shared ceilings, runs its share of the host's warm
cases and starts loading its first matrix; that matrix's probe waits beside it. Cases are
held until every warm-up of their host is done (its kernels are then in the host's caches);
the probes and loads go on meanwhile. Each warm-up's record is the worker's first use.

The cases of a matrix go out one to a task, or in batches where this sweep's own times show
them short (``sweep.batching``); a batch whose worker died is split and each case run alone.

Every wait is bounded by the clock: past the deadline what is queued is cancelled; a cluster
left with no live worker for ``engine.NO_WORKER_GRACE_S`` ends the sweep, the cases in flight
reported failed with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sparsescope.sweep import first_use, prefetch, warm_up, worker
from sparsescope.sweep.batching import CaseTimes, batches
from sparsescope.sweep.outcomes import Probe, SweepResult
from sparsescope.sweep.source_facts import largest_first
from sparsescope.sweep.sources import MatrixSource, source_hash
from sparsescope.sweep.tasks import SweepTask

#: Dask priorities (higher runs first on a worker): the warm-up first, then the background
#: load of the next matrix as soon as the worker is free, then the current matrix's cases,
#: then the next probe.
WARM_PRIORITY, PREFETCH_PRIORITY, CASE_PRIORITY, PROBE_PRIORITY = 3, 2, 1, 0

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
                 prefetch_next: bool, plan: first_use.FirstUsePlan | None = None,
                 decode_warm: Callable[[dict], None] | None = None) -> None:
        from distributed import as_completed

        self.client, self.groups, self.options = client, groups, options
        self.sort, self.report = sort, report
        self.decode_probe, self.decode_case, self.on_probe = decode_probe, decode_case, on_probe
        self.prefetch_next = prefetch_next
        self.plan, self.decode_warm = plan, decode_warm
        self.waiting = largest_first(groups)[::-1]  # popped from the end: largest first
        self.probes: dict[Any, MatrixSource] = {}
        self.cases: dict[Any, tuple[tuple[SweepTask, ...], Probe]] = {}
        self.finished = as_completed()
        self.lanes: set[str] = set()
        self.prefetched = 0
        self.warming: dict[Any, str] = {}
        """Warm-up future -> the worker it was placed on."""
        self.hosts: dict[str, str] = {}
        """Worker address -> its host."""
        self.unwarmed: dict[str, int] = {}
        """Host -> its warm-ups not finished (its cases are held until none is left)."""
        self.held: list[tuple[MatrixSource, Probe, Any, str]] = []
        """Probed matrices whose host is still warming: (source, probe, probe future, host)."""
        self.first_probes: set[Any] = set()
        """Probes placed beside a warm-up: one that fails with it is queued again."""
        self.times = CaseTimes()
        self.batched = 0
        """Tasks that held more than one case."""

    def start(self, workers: Sequence[str] | dict[str, dict]) -> None:
        """A lane for each worker. Without a warm-up: as many first probes as workers, which
        Dask spreads over the idle ones (one when the cluster has no worker yet). With one
        (``workers``: the scheduler's worker info, for their hosts): each worker's warm-up,
        its first matrix's probe beside it."""
        self.lanes.update(workers)
        if self.plan is None or not workers:
            for _ in range(max(1, len(workers))):
                self.assign(None)
            return
        info = workers if isinstance(workers, dict) else {}
        by_host: dict[str, list[str]] = {}
        for address in sorted(workers):
            host = str((info.get(address) or {}).get("host", address))
            self.hosts[address] = host
            by_host.setdefault(host, []).append(address)
        for host, addresses in by_host.items():
            dealt = warm_up.shares(self.plan.warm, len(addresses))
            for address, share in zip(addresses, dealt, strict=True):
                self._warm(address, host, share)

    def _warm(self, address: str, host: str, share: tuple[SweepTask, ...]) -> None:
        """``address``'s warm-up with its ``share`` of the warm cases, and its first
        matrix's probe beside it (that matrix loading in the background meanwhile)."""
        options = self.options
        src = self.waiting.pop() if self.waiting else None
        future = self.client.submit(
            warm_up.warm_up_task, self.plan, share, options["timing"],
            case_timeout_s=options["case_timeout_s"], seed=options["seed"],
            factories=[_factory(t) for t in share],
            prefetch_src=src if self.prefetch_next else None,
            workers=[address], allow_other_workers=True, pure=False, priority=WARM_PRIORITY)
        self.warming[future] = address
        self.unwarmed[host] = self.unwarmed.get(host, 0) + 1
        self.finished.add(future)
        if src is not None:
            self.first_probes.add(self._probe(src, (future,)))

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
        self._probe(src, beside)

    def _probe(self, src: MatrixSource, beside: tuple):
        future = self.client.submit(prefetch.probe, src, *beside, retries=1, pure=False,
                                    priority=PROBE_PRIORITY)
        self.probes[future] = src
        self.finished.add(future)
        return future

    def handle(self, future) -> None:
        """One finished future: a probe's matrix gets its cases and its worker the next
        matrix; a case is reported. A result lost with its worker is left for Dask to compute
        again (the future watched again)."""
        if future not in self.probes and future not in self.cases and \
                future not in self.warming:
            return  # cancelled and forgotten
        data = self._fetch(future)
        if data is _LOST:
            return
        if future in self.warming:
            self._warmed(future, data)
        elif future in self.probes:
            src = self.probes.pop(future)
            if isinstance(data, BaseException) and future in self.first_probes:
                self.waiting.append(src)  # failed with its warm-up: probed again, next
                self.assign(None)
            elif not self._probed_matrix(src, self._probed(data, src), future, data):
                return  # held until its host is warm: the probe's result is kept
        else:
            self._case_done(future, data)
        self.first_probes.discard(future)
        future.release()

    def _probed_matrix(self, src: MatrixSource, probe: Probe, future, data) -> bool:
        """A probed matrix's cases submitted and its worker given the next matrix, or (False)
        held while its host warms up."""
        if probe.matrix is None:  # unreadable, or its worker died: nothing to place beside
            self.sort(self.groups[src], probe)
            self.assign(None)
            return True
        host = self.hosts.get(data.get("worker") or "", "")
        if self.unwarmed.get(host, 0) > 0:
            self.held.append((src, probe, future, host))
            return False
        self._submit_cases(src, probe, future)
        self.assign(future)
        return True

    def _warmed(self, future, data) -> None:
        """A worker's warm-up done: its first-use record kept; once its host's last one is,
        the cases held for that host go out."""
        address = self.warming.pop(future)
        if isinstance(data, BaseException):
            data = warm_up.FirstUse(worker=address, host=self.hosts.get(address, ""),
                                    seconds=0.0, error=_error_text(data)).to_dict()
        if self.decode_warm is not None:
            self.decode_warm(data)
        host = self.hosts.get(address, "")
        self.unwarmed[host] = self.unwarmed.get(host, 1) - 1
        if self.unwarmed[host] > 0:
            return
        ready = [entry for entry in self.held if entry[3] == host]
        self.held = [entry for entry in self.held if entry[3] != host]
        for src, probe, probed, _ in ready:
            self._submit_cases(src, probe, probed)
            self.assign(probed)
            probed.release()

    def _case_done(self, future, data) -> None:
        """A task of cases finished: each reported (its time kept for batching); a batch
        that failed as a whole is split, each case run again alone."""
        tasks, probe = self.cases.pop(future)
        if isinstance(data, BaseException) and len(tasks) > 1:
            for task in tasks:  # anywhere: its matrix is loaded where it runs
                self._submit((task,), probe, {"worker": None})
            return
        if isinstance(data, BaseException):  # KilledWorker, or an error past its retry
            self.report(SweepResult(tasks[0], probe.hash, probe.matrix,
                                    worker.failed_case(tasks[0], _error_text(data))))
            return
        nnz = probe.matrix.stats.nnz if probe.matrix is not None else 0
        for task, item in zip(tasks, data if isinstance(data, list) else [data], strict=True):
            case = self.decode_case(item)
            self.times.add(task, nnz, item["seconds"])
            self.report(SweepResult(task, probe.hash, probe.matrix, case))

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
        """The cases of ``src`` to run, beside its matrix (``probed``: the probe's future;
        see the module docstring), one to a task or batched (``sweep.batching``)."""
        tasks = self.sort(self.groups[src], probe)
        for batch in batches(tasks, probe.matrix.stats.nnz, self.times):
            self._submit(batch, probe, probed)

    def _submit(self, batch: tuple[SweepTask, ...], probe: Probe, probed) -> None:
        options = self.options
        common = dict(case_timeout_s=options["case_timeout_s"], seed=options["seed"],
                      submitted_at=time.time(), plan=self.plan, retries=1,
                      pure=False, priority=CASE_PRIORITY)
        if len(batch) == 1:
            submitted = self.client.submit(prefetch.run_task_beside, probed, batch[0],
                                           options["timing"], factory=_factory(batch[0]),
                                           **common)
        else:
            submitted = self.client.submit(prefetch.run_batch_beside, probed, batch,
                                           options["timing"],
                                           factories=[_factory(t) for t in batch], **common)
            self.batched += 1
        self.cases[submitted] = (batch, probe)
        self.finished.add(submitted)

    def new_workers(self, seen: set[str]) -> None:
        """A lane (one more matrix handed out) for each worker that joined since the start;
        a worker that died and came back under a new address is one of them."""
        for address in sorted(seen - self.lanes):
            self.lanes.add(address)
            self.assign(None)

    def busy(self) -> bool:
        """Whether anything is in flight or held (a deadline then cancels it)."""
        return bool(self.probes or self.cases or self.warming or self.held)

    def cancel(self) -> None:
        """Cancel every future in flight (the time limit): their cases, and those held for
        a warm-up, are left for a re-run."""
        self.client.cancel([*self.probes, *self.cases, *self.warming,
                            *(entry[2] for entry in self.held)])

    def abandon(self, reason: str) -> None:
        """The cluster has no worker: every case in flight, and every case of a matrix being
        probed or held for a warm-up, reported failed with ``reason``; the matrices waiting
        are left."""
        self.cancel()
        why = f"{reason}; run again with --retry-failed"
        for src in [*self.probes.values(), *(entry[0] for entry in self.held)]:
            digest = source_hash(src)
            for task in self.groups[src]:
                self.report(SweepResult(task, digest, None, worker.failed_case(task, why)))
        for tasks, probe in self.cases.values():
            for task in tasks:
                self.report(SweepResult(task, probe.hash, probe.matrix,
                                        worker.failed_case(task, why)))
