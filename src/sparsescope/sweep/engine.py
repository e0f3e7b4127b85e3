"""Run a sweep's tasks in process or on a Dask cluster, reporting each case as it finishes.

``cluster=None`` and no ``scheduler``: in process, one case after another (Dask is not
imported). ``"local"``: a ``distributed.LocalCluster`` of ``workers`` (default 2) single-thread
processes. ``"cuda"``: a ``dask_cuda.LocalCUDACluster`` (one worker per GPU). ``scheduler``:
join a running cluster by address (its workers need sparsescope installed and the matrix paths
readable). Dask comes from the ``sweep`` extra.

Each matrix is first *probed* by a worker (loaded, hashed, its statistics computed); then one
task per (matrix, backend, parameters) whose key is not in ``done`` is submitted with
``retries=1``. Keys in ``done`` come back as ``stored`` results without running. A task that
raises after its retries (its worker died: ``KilledWorker``) is a ``failed`` case with the
error; ``on_result`` is called in the client for every case as it finishes. A cluster we start
lets a case kill one worker and be retried elsewhere, not four (:func:`allowed_failures`).

Every wait is bounded by the clock (issue 33: a sweep whose workers kept dying waited for
ever): the client polls its futures, so ``time_limit_s`` stops the sweep on time even while no
case finishes, and a cluster left with no live worker for :data:`NO_WORKER_GRACE_S` ends the
sweep: the cases in flight are ``failed`` with the reason, the rest left for a re-run, and
:attr:`EngineStats.aborted` says why (the CLI exits with
:data:`sparsescope.errors.EXIT_SWEEP_ABORTED`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sparsescope.errors import MissingDependencyError, UsageError
from sparsescope.results.records import CaseResult, MatrixRecord
from sparsescope.sweep import worker, worker_logs
from sparsescope.sweep.sources import MatrixSource, source_hash
from sparsescope.sweep.tasks import SweepTask, task_key
from sparsescope.timing.types import TimingConfig

CLUSTERS = ("local", "cuda")

#: How often the client looks at its futures (seconds) while none is finished.
POLL_S = 0.05
#: How long a Dask cluster may have no live worker, with cases outstanding, before the sweep
#: ends them as failed (a LocalCluster's nanny restarts a killed worker within seconds).
NO_WORKER_GRACE_S = 60.0
#: Past ``time_limit_s`` with no case finished yet (every call should make progress), how
#: much longer the sweep waits for a first one before it stops all the same.
FIRST_CASE_GRACE_S = 60.0


@dataclass(frozen=True)
class SweepResult:
    """One finished task, as the client sees it."""

    task: SweepTask
    matrix_hash: str
    """Content hash of the matrix (``file-...`` for a source that could not be read)."""
    matrix: MatrixRecord | None
    """Identity and statistics; None when the source could not be read."""
    case: CaseResult | None
    """The case; None when ``stored`` (already in the store, not run again)."""
    stored: bool = False


@dataclass
class EngineStats:
    """Where a sweep's wall time went, for its overhead.

    ``overhead = 1 - busy_s / (wall_s x workers)``: the share of the workers' time not spent
    loading matrices or running cases (scheduling, transfers, idle workers while the last
    cases finish, the client's store and progress), e.g. 2 workers busy 95 s and 97 s over a
    100 s sweep: 1 - 192 / 200 = 4 %.
    """

    workers: int = 1
    busy_s: float = 0.0
    """Sum over probes and cases of the worker's own time on each."""
    wall_s: float = 0.0
    """From the first submission to the last result, client clock."""
    client_s: float = 0.0
    """Time the client spent in ``on_result`` (storing each case, the progress bar)."""
    left: int = 0
    """Tasks not run because the time limit was reached (a re-run resumes them)."""
    cases: int = 0
    """Cases run (the time limit applies once one has, or :data:`FIRST_CASE_GRACE_S` after
    it: every call makes progress)."""
    aborted: str = ""
    """Why the sweep ended early with cases failed by it (no live worker), or empty."""

    @property
    def overhead(self) -> float:
        capacity = self.wall_s * self.workers
        return max(0.0, 1.0 - self.busy_s / capacity) if capacity > 0 else 0.0


@dataclass(frozen=True)
class _Probe:
    hash: str
    matrix: MatrixRecord | None
    reason: str
    outcome: str = "skipped"
    """Outcome of every case of a source that could not be probed."""


def _decoded_probe(data: dict, stats: EngineStats) -> _Probe:
    from sparsescope.results.io import record_from_dict

    stats.busy_s += data["seconds"]
    matrix = None if data["matrix"] is None else record_from_dict(data["matrix"], MatrixRecord,
                                                                  "matrix")
    return _Probe(hash=data["hash"], matrix=matrix, reason=data["reason"])


def _decoded_case(data: dict, stats: EngineStats) -> CaseResult:
    from sparsescope.results.io import record_from_dict

    stats.busy_s += data["seconds"]
    stats.cases += 1
    return record_from_dict(data["case"], CaseResult, "case")


def _after_probe(group: Sequence[SweepTask], probe: _Probe, done: Collection[tuple],
                 on_result: Callable[[SweepResult], None]) -> list[SweepTask]:
    """Report the stored and unreadable cases of one matrix; return the tasks to run."""
    todo = []
    for task in group:
        stored = task_key(task, probe.hash) in done
        if stored:
            on_result(SweepResult(task, probe.hash, probe.matrix, None, stored=True))
        elif probe.matrix is None:
            case = worker.failed_case(task, probe.reason, outcome=probe.outcome)
            on_result(SweepResult(task, probe.hash, None, case))
        else:
            todo.append(task)
    return todo


def _groups(tasks: Sequence[SweepTask]) -> dict[MatrixSource, list[SweepTask]]:
    groups: dict[MatrixSource, list[SweepTask]] = {}
    for task in tasks:
        groups.setdefault(task.source, []).append(task)
    return groups


def _factory(task: SweepTask) -> Any:
    from sparsescope import registry

    return registry.BACKENDS.get((task.op, task.name))


def _in_process(tasks, *, timing, on_result, done, case_timeout_s, seed, stats,
                deadline) -> int:
    """One matrix after another, each case as it comes; past ``deadline`` the rest is left
    (their number returned)."""
    groups = list(_groups(tasks).items())
    for i, (src, group) in enumerate(groups):
        probe = _decoded_probe(worker.probe(src), stats)
        todo = _after_probe(group, probe, done, on_result)
        for j, task in enumerate(todo):
            if _past(deadline, stats):
                return len(todo) - j + sum(len(g) for _, g in groups[i + 1:])
            case = _decoded_case(worker.run_task(task, timing, case_timeout_s=case_timeout_s,
                                                 seed=seed), stats)
            on_result(SweepResult(task, probe.hash, probe.matrix, case))
    return 0


def _import(module: str, what: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{module} is not installed (needed for {what}); install it with: "
            f"pip install 'sparsescope[sweep]'") from exc


#: Imported on each worker of a cluster we start: drops the lost-heartbeat traceback a worker
#: prints when the cluster closes under it (``sweep.worker_logs``).
WORKER_PRELOAD = "sparsescope.sweep.worker_logs"


@contextmanager
def dask_client(cluster: str | None, scheduler: str | None, workers: int | None,
                quiet: bool = False) -> Iterator[Any]:
    """A ``distributed.Client`` on a new local (CUDA) cluster or the one at ``scheduler``;
    its dashboard address printed on stderr unless ``quiet``."""
    distributed = _import("distributed", "a Dask sweep (--cluster, --scheduler)")
    owned = None
    if scheduler is None:
        import dask

        # the scheduler reads it when it starts: one worker death per case, then KilledWorker
        with dask.config.set({"distributed.scheduler.allowed-failures": allowed_failures()}):
            if cluster == "cuda":
                dask_cuda = _import("dask_cuda", "--cluster cuda")
                owned = dask_cuda.LocalCUDACluster(
                    preload=[WORKER_PRELOAD], **({"n_workers": workers} if workers else {}))
            else:
                owned = distributed.LocalCluster(n_workers=workers or 2, threads_per_worker=1,
                                                 processes=True, dashboard_address=":0",
                                                 preload=[WORKER_PRELOAD])
    worker_logs.install_client()  # Ctrl-C is reported by the sweep, not as a loop traceback
    client = distributed.Client(owned if owned is not None else scheduler)
    try:
        if not quiet:
            print(f"sparsescope: Dask dashboard: {client.dashboard_link}", file=sys.stderr,
                  flush=True)
        yield client
    finally:
        client.close()
        if owned is not None:
            owned.close()


def allowed_failures() -> int:
    """Worker deaths a case may cause on a cluster we start before it is failed
    (``KilledWorker``): one, as docs/SWEEP.md says ("retried once elsewhere"), or fewer when
    Dask's configuration says so. Dask's default, 3, let one case kill four workers."""
    import dask

    return min(1, int(dask.config.get("distributed.scheduler.allowed-failures", 1)))


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _on_dask(client, tasks, *, timing, on_result, done, case_timeout_s, seed, stats,
             deadline) -> int:
    """Probe matrices a few at a time (workers + 1 in flight) and submit each matrix's cases
    as its probe returns, to the worker that loaded it (its matrix is cached there) and ahead
    of further probes (``priority=1``), so a worker finishes one matrix before it loads the
    next. Past ``deadline`` (a ``time.perf_counter`` value), checked by the clock whether or
    not a case finishes, nothing more is submitted, what is queued is cancelled, and the
    number of tasks left is returned; so it is when the cluster has had no live worker for
    :data:`NO_WORKER_GRACE_S` (the cases in flight reported failed, ``stats.aborted`` set)."""
    from distributed import as_completed

    stats.workers = max(1, len(client.scheduler_info().get("workers", {})))
    groups = _groups(tasks)
    waiting = list(groups)[::-1]  # popped from the end: plan order
    probes: dict[Any, MatrixSource] = {}
    cases: dict[Any, tuple[SweepTask, _Probe]] = {}
    finished = as_completed()
    options = dict(timing=timing, on_result=on_result, done=done,
                   case_timeout_s=case_timeout_s, seed=seed)

    def probe_next() -> None:
        src = waiting.pop()
        future = client.submit(worker.probe, src, retries=1, pure=False)
        probes[future] = src
        finished.add(future)

    def handle(future) -> None:
        if future in probes:
            src = probes.pop(future)
            _submit_cases(client, future, src, groups[src], cases, finished, stats, options)
            if waiting:
                probe_next()
        else:
            task, probe = cases.pop(future)
            try:
                case = _decoded_case(future.result(), stats)
            except Exception as exc:  # KilledWorker, or an error past its retry
                case = worker.failed_case(task, _error_text(exc))
            on_result(SweepResult(task, probe.hash, probe.matrix, case))
        future.release()

    for _ in range(min(len(waiting), stats.workers + 1)):
        probe_next()
    alive = _Liveness(client)
    while not finished.is_empty():
        batch = finished.next_batch(block=False)
        for future in batch:
            handle(future)
        if (probes or cases) and _past(deadline, stats):
            return _cancel_rest(client, probes, cases, waiting, groups)
        if not batch:
            if alive.lost_for() > NO_WORKER_GRACE_S:
                stats.aborted = (f"no live Dask worker for {NO_WORKER_GRACE_S:g} s: the "
                                 "cluster lost every worker")
                return _abandon(client, probes, cases, waiting, groups, stats.aborted,
                                on_result)
            time.sleep(POLL_S)
    return 0


class _Liveness:
    """How long the cluster has had no worker (asked at most once a second)."""

    def __init__(self, client) -> None:
        self.client = client
        self.seen = self.asked = time.perf_counter()

    def lost_for(self) -> float:
        now = time.perf_counter()
        if now - self.asked >= 1.0:
            self.asked = now
            try:
                if self.client.nthreads():
                    self.seen = now
            except Exception:  # noqa: BLE001 (the scheduler gone too: no worker either)
                pass
        return now - self.seen


def _abandon(client, probes: dict, cases: dict, waiting: list, groups: dict, reason: str,
             on_result: Callable[[SweepResult], None]) -> int:
    """End a sweep whose cluster has no worker: every case in flight (and every case of a
    matrix being probed) reported failed with ``reason``; the number of tasks not run."""
    client.cancel([*probes, *cases])
    why = f"{reason}; run again with --retry-failed"
    for src in probes.values():
        digest = source_hash(src)
        for task in groups[src]:
            on_result(SweepResult(task, digest, None, worker.failed_case(task, why)))
    for task, probe in cases.values():
        on_result(SweepResult(task, probe.hash, probe.matrix, worker.failed_case(task, why)))
    return sum(len(groups[src]) for src in waiting)


def _submit_cases(client, future, src: MatrixSource, group: Sequence[SweepTask], cases: dict,
                  finished, stats: EngineStats, options: dict) -> None:
    """Submit the cases of one probed matrix (its stored and unreadable cases reported)."""
    where = None
    try:
        data = future.result()
        probe = _decoded_probe(data, stats)
        where = data.get("worker")
    except Exception as exc:  # the probe's worker died: every case of it failed
        probe = _Probe(source_hash(src), None, f"loading failed: {_error_text(exc)}",
                       outcome="failed")
    for task in _after_probe(group, probe, options["done"], options["on_result"]):
        submitted = client.submit(
            worker.run_task, task, options["timing"], case_timeout_s=options["case_timeout_s"],
            factory=_factory(task), seed=options["seed"], retries=1, pure=False, priority=1,
            workers=[where] if where else None, allow_other_workers=True)
        cases[submitted] = (task, probe)
        finished.add(submitted)


def _cancel_rest(client, probes: dict, cases: dict, waiting: list, groups: dict) -> int:
    """Cancel every outstanding future; the number of tasks not finished."""
    outstanding = [*probes, *cases]
    client.cancel(outstanding)
    left = sum(len(groups[src]) for src in probes.values()) + len(cases)
    left += sum(len(groups[src]) for src in waiting)
    return left


def execute(tasks: Sequence[SweepTask], *, cluster: str | None = None,
            scheduler: str | None = None, workers: int | None = None,
            timing: TimingConfig, on_result: Callable[[SweepResult], None],
            done: Collection[tuple] = frozenset(), case_timeout_s: float | None = None,
            seed: int = 0, quiet: bool = False,
            time_limit_s: float | None = None) -> EngineStats:
    """Run ``tasks`` (see the module docstring); ``done``: keys (:func:`~sparsescope.sweep.
    tasks.task_key`) already stored, reported as ``stored`` without running.
    ``time_limit_s``: submit nothing after this many seconds of sweeping, cancel what is
    queued (cases running then are lost, not stored) and return; a re-run resumes. Returns
    where the wall time went and how many tasks were left (:class:`EngineStats`)."""
    if cluster is not None and cluster not in CLUSTERS:
        raise UsageError(f"unknown cluster {cluster!r}; known: {', '.join(CLUSTERS)}")
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    # NaN passes a plain `<= 0`: every case would then time out at once
    if case_timeout_s is not None and not (math.isfinite(case_timeout_s) and case_timeout_s > 0):
        raise UsageError(f"--case-timeout must be a finite number of seconds > 0, "
                         f"got {case_timeout_s}")
    if time_limit_s is not None and not (math.isfinite(time_limit_s) and time_limit_s > 0):
        raise UsageError(f"--time-limit must be a finite number of seconds > 0, got {time_limit_s}")
    stats = EngineStats()

    def timed_on_result(result: SweepResult) -> None:
        start = time.perf_counter()
        on_result(result)
        stats.client_s += time.perf_counter() - start

    options = dict(timing=timing, on_result=timed_on_result, done=done,
                   case_timeout_s=case_timeout_s, seed=seed, stats=stats)
    if cluster is None and scheduler is None:
        start = time.perf_counter()
        stats.left = _in_process(tasks, **options, deadline=_deadline(start, time_limit_s))
    else:
        with dask_client(cluster, scheduler, workers, quiet) as client:
            start = time.perf_counter()  # the cluster's start-up is not the sweep's overhead
            stats.left = _on_dask(client, tasks, **options,
                                  deadline=_deadline(start, time_limit_s))
    stats.wall_s = time.perf_counter() - start
    return stats


def _past(deadline: float | None, stats: EngineStats) -> bool:
    """The time limit is reached, and this call has run a case (so every call progresses),
    or it is :data:`FIRST_CASE_GRACE_S` past it (so every call ends)."""
    if deadline is None:
        return False
    now = time.perf_counter()
    return now > deadline and (stats.cases > 0 or now > deadline + FIRST_CASE_GRACE_S)


def _deadline(start: float, time_limit_s: float | None) -> float | None:
    return None if time_limit_s is None else start + time_limit_s
