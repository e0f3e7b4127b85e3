"""Run a sweep's tasks in process or on a Dask cluster, reporting each case as it finishes.

``cluster=None`` and no ``scheduler``: in process, one case after another (Dask is not
imported). ``"local"``: a ``distributed.LocalCluster`` of ``workers`` (default 2) single-thread
processes. ``"cuda"``: a ``dask_cuda.LocalCUDACluster`` (one worker per GPU). ``scheduler``:
join a running cluster by address (its workers need sparsescope installed and the matrix paths
readable). Dask comes from the ``sweep`` extra (``sweep.cluster``).

Before anything is loaded or started, the matrices whose content hash the store remembers
(``known``: ``sweep.source_facts``) and whose every case is stored are reported ``stored``;
when nothing is left to run, no cluster is started and no matrix loaded (issue 35: a sweep
with every case stored took 38 s on a 2-GPU cluster to run nothing).

Each remaining matrix is *probed* by a worker (loaded, hashed, its statistics computed); then
its cases whose key is not in ``done`` run (on Dask: ``sweep.dask_loop``, one lane of matrices
per worker, the largest first, the next matrix loaded while the current one's cases run).
A case whose key a case of this sweep already has (two files with the same content) is run
once: the second source waits for it and is reported ``stored`` under its own name
(:class:`_Claims`). A task that raises after its retries (its worker died: ``KilledWorker``)
is a ``failed`` case with the error; ``on_result`` is called in the client for every case as
it finishes. A cluster we start lets a case kill one worker and be retried elsewhere, not four
(:func:`~sparsescope.sweep.cluster.allowed_failures`).

A sweep of GPU backends first does each worker's first use (``sweep.warm_up``): the device
context built from the ceilings the client measured (one measurement per GPU model and driver,
not one per worker) and, on a host of several workers, the warm cases that compile the
sweep's kernels into the host's caches once; :attr:`EngineStats.first_use` keeps what it cost
each worker, apart from the cases.

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
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from sparsescope.errors import UsageError
from sparsescope.results.records import CaseResult
from sparsescope.sweep import first_use, host_cores, warm_up, worker
from sparsescope.sweep.cluster import CLUSTERS, check_arguments, dask_client
from sparsescope.sweep.outcomes import Probe, SweepResult
from sparsescope.sweep.sources import MatrixSource
from sparsescope.sweep.tasks import SweepTask, task_key
from sparsescope.timing.types import TimingConfig

__all__ = ["CLUSTERS", "EngineStats", "SweepResult", "execute"]

#: How often the client looks at its futures (seconds) while none is finished.
POLL_S = 0.05
#: How long a Dask cluster may have no live worker, with cases outstanding, before the sweep
#: ends them as failed (a LocalCluster's nanny restarts a killed worker within seconds).
NO_WORKER_GRACE_S = 60.0
#: Past ``time_limit_s`` with no case finished yet (every call should make progress), how
#: much longer the sweep waits for a first one before it stops all the same.
FIRST_CASE_GRACE_S = 60.0


@dataclass
class EngineStats:
    """Where a sweep's wall time went, for its overhead.

    ``overhead = 1 - busy_s / (wall_s x workers)``: the share of the workers' time not spent
    loading matrices or running cases (scheduling, transfers, idle workers while the last
    cases finish, the client's store and progress), e.g. 2 workers busy 95 s and 97 s over a
    100 s sweep: 1 - 192 / 200 = 4 %.
    """

    workers: int = 1
    """Workers that ran the cases (0: none was needed, every case was stored)."""
    busy_s: float = 0.0
    """Sum over probes and cases of the worker's own time on each."""
    wall_s: float = 0.0
    """From the first submission to the last result, client clock."""
    client_s: float = 0.0
    """Time the client spent in ``on_result`` (storing each case, the progress bar)."""
    left: int = 0
    """Tasks not run because the time limit was reached or the cluster lost its workers (a
    re-run resumes them)."""
    cases: int = 0
    """Cases run (the time limit applies once one has, or :data:`FIRST_CASE_GRACE_S` after
    it: every call makes progress)."""
    aborted: str = ""
    """Why the sweep ended early with cases failed by it (no live worker), or empty."""
    cluster: str = ""
    """The cluster started or joined (``local``, ``cuda``, ``scheduler``); empty: none (in
    process, or nothing left to run)."""
    probes: int = 0
    """Matrices loaded by a worker (probed); those found stored without loading are not."""
    prefetched: int = 0
    """Matrices a worker began loading in the background while it ran the cases before."""
    reported: int = 0
    """Tasks reported to ``on_result`` (run, failed, or stored)."""
    shared_cores: str = ""
    """Why the CPU timings of this sweep may be disturbed (its CPU cases ran beside each
    other on too few cores: ``host_cores.shared_cores_warning``), or empty."""
    first_use: list[dict] = field(default_factory=list)
    """Each worker's first use (``warm_up.FirstUse`` as a dict: its warm-up's seconds, stage
    by stage, where its ceilings came from, its warm cases); its seconds are in ``busy_s``."""
    batched: int = 0
    """Dask tasks that held several short cases of one matrix (``sweep.batching``)."""

    @property
    def first_use_s(self) -> float:
        """The workers' first use, summed (worker time, like ``busy_s``)."""
        return sum(float(record.get("seconds", 0.0)) for record in self.first_use)

    @property
    def overhead(self) -> float:
        capacity = self.wall_s * self.workers
        return max(0.0, 1.0 - self.busy_s / capacity) if capacity > 0 else 0.0


def _decoded_probe(data: dict, stats: EngineStats) -> Probe:
    from sparsescope.results.io import record_from_dict
    from sparsescope.results.records import MatrixRecord

    stats.busy_s += data["seconds"]
    stats.probes += 1
    matrix = None if data["matrix"] is None else record_from_dict(data["matrix"], MatrixRecord,
                                                                  "matrix")
    return Probe(hash=data["hash"], matrix=matrix, reason=data["reason"])


def _decoded_case(data: dict, stats: EngineStats) -> CaseResult:
    stats.busy_s += data["seconds"]
    stats.cases += 1
    return worker.received_case(data)  # its transfer time added


class _Claims:
    """Which case keys of this sweep are stored, and which are running with other sources
    waiting for them: a case is run once per content. Two files with the same content (or a
    renamed copy) are one measurement, reported under each file's own name: the first
    source's case runs; the second's waits and is reported ``stored`` once the first one is
    (issue 33: the second file's cases were reported under the first file's name)."""

    def __init__(self, done: Collection[tuple], on_result: Callable[[SweepResult], None]):
        self.done = set(done)
        self.running: dict[tuple, list[tuple[SweepTask, Probe]]] = {}
        self.on_result = on_result

    def sort(self, group: Sequence[SweepTask], probe: Probe) -> list[SweepTask]:
        """Report the stored and unreadable cases of one probed matrix; return those to
        run (the others wait for a running one)."""
        todo = []
        for task in group:
            key = task_key(task, probe.hash)
            if key in self.done:
                self.on_result(SweepResult(task, probe.hash, probe.matrix, None, stored=True))
            elif key in self.running:
                self.running[key].append((task, probe))
            elif probe.matrix is None:
                case = worker.failed_case(task, probe.reason, outcome=probe.outcome)
                self.report(SweepResult(task, probe.hash, None, case))
            else:
                self.running[key] = []
                todo.append(task)
        return todo

    def report(self, result: SweepResult) -> None:
        """One case run (or failed) now, then every task that waited for its key."""
        self.on_result(result)
        key = task_key(result.task, result.matrix_hash)
        self.done.add(key)
        for task, probe in self.running.pop(key, []):
            self.on_result(SweepResult(task, probe.hash, probe.matrix, None, stored=True))

    def skip_stored(self, groups: dict[MatrixSource, list[SweepTask]],
                    known: Mapping[MatrixSource, str]) -> dict[MatrixSource, list[SweepTask]]:
        """Report ``stored`` every case of each matrix whose content hash is ``known`` and
        whose every case is stored, without loading it; the groups left to probe."""
        left = {}
        for src, group in groups.items():
            digest = known.get(src)
            if digest is not None and all(task_key(t, digest) in self.done for t in group):
                for task in group:
                    self.on_result(SweepResult(task, digest, None, None, stored=True))
            else:
                left[src] = group
        return left


def _groups(tasks: Sequence[SweepTask]) -> dict[MatrixSource, list[SweepTask]]:
    groups: dict[MatrixSource, list[SweepTask]] = {}
    for task in tasks:
        groups.setdefault(task.source, []).append(task)
    return groups


def _warm_record(data: dict, stats: EngineStats) -> None:
    stats.busy_s += float(data.get("seconds", 0.0))
    stats.first_use.append(data)


def _in_process(groups, claims: _Claims, *, timing, case_timeout_s, seed, stats, deadline,
                on_probe, plan=None) -> None:
    """One matrix after another, each case as it comes (the next matrix loading in the
    background when no CPU backend is timed); past ``deadline`` the rest is left. With a
    ``plan`` (GPU backends) the device context is built first, from the client's ceilings,
    and recorded as the first use; no warm cases: one process has none to share them with."""
    from sparsescope.sweep import prefetch

    if plan is not None:
        _warm_record(warm_up.warm_up_task(plan, (), timing, seed=seed), stats)
    sources = list(groups)
    # no CPU timing to disturb, and a core to spare: load the next matrix meanwhile
    ahead = not timed_on_cpu(groups) and host_cores.physical_cores() >= 2
    for i, (src, group) in enumerate(groups.items()):
        probe = _decoded_probe(prefetch.probe(src), stats)
        if on_probe is not None:
            on_probe(src, probe.hash)
        if ahead and i + 1 < len(sources):
            stats.prefetched += prefetch.start(sources[i + 1])
        for task in claims.sort(group, probe):
            if _past(deadline, stats):
                return
            case = _decoded_case(worker.run_task(task, timing, case_timeout_s=case_timeout_s,
                                                 seed=seed, submitted_at=time.time()), stats)
            claims.report(SweepResult(task, probe.hash, probe.matrix, case))


def _on_dask(client, groups, claims: _Claims, *, timing, case_timeout_s, seed, stats,
             deadline, on_probe, plan=None) -> None:
    """The groups on the cluster (``sweep.dask_loop``): past ``deadline`` (a
    ``time.perf_counter`` value), checked by the clock whether or not a case finishes, what
    is queued is cancelled; a cluster with no live worker for :data:`NO_WORKER_GRACE_S` ends
    the sweep (the cases in flight reported failed, ``stats.aborted`` set)."""
    from sparsescope.sweep.dask_loop import DaskLoop, Liveness

    workers = client.scheduler_info().get("workers", {})
    stats.workers = max(1, len(workers))
    load = host_cores.host_load(client)
    on_cpu = timed_on_cpu(groups)
    stats.shared_cores = host_cores.shared_cores_warning(load) if on_cpu else ""
    if stats.shared_cores:
        print(f"sparsescope: warning: {stats.shared_cores}", file=sys.stderr, flush=True)
    loop = DaskLoop(client, groups, sort=claims.sort, report=claims.report,
                    decode_probe=lambda data: _decoded_probe(data, stats),
                    decode_case=lambda data: _decoded_case(data, stats), on_probe=on_probe,
                    options=dict(timing=timing, case_timeout_s=case_timeout_s, seed=seed),
                    prefetch_next=not on_cpu and host_cores.room_to_prefetch(load),
                    plan=plan, decode_warm=lambda data: _warm_record(data, stats))
    loop.start(workers)
    alive = Liveness(client)
    try:
        while not loop.finished.is_empty():
            batch = loop.finished.next_batch(block=False)
            for future in batch:
                loop.handle(future)
            if loop.busy() and _past(deadline, stats):
                loop.cancel()
                return
            if not batch:
                lost = alive.lost_for()
                loop.new_workers(alive.workers)
                if lost > NO_WORKER_GRACE_S:
                    stats.aborted = (f"no live Dask worker for {NO_WORKER_GRACE_S:g} s: the "
                                     "cluster lost every worker")
                    loop.abandon(stats.aborted)
                    return
                time.sleep(POLL_S)
    finally:
        stats.prefetched = loop.prefetched
        stats.batched = loop.batched


def _first_use_plan(plan: first_use.FirstUsePlan | None,
                    groups: dict[MatrixSource, list[SweepTask]]
                    ) -> first_use.FirstUsePlan | None:
    """``plan`` with the sweep's warm cases, for a sweep with a GPU backend (none where CuPy
    shares compiled kernels through its disk cache: ``warm_up.kernels_shared_on_disk``); None
    for one of CPU backends alone (no device context to build, nothing compiled)."""
    from sparsescope.sweep.source_facts import size_hint

    def on_gpu(task: SweepTask) -> bool:
        return _backend_device(task) == "gpu"

    if not any(on_gpu(task) for group in groups.values() for task in group):
        return None
    plan = plan or first_use.FirstUsePlan(sweep_id=uuid.uuid4().hex[:12])
    if warm_up.kernels_shared_on_disk():  # each worker's first cases read the disk caches
        return replace(plan, warm=())
    return replace(plan, warm=warm_up.warm_cases(groups, size_hint, on_gpu))


def execute(tasks: Sequence[SweepTask], *, cluster: str | None = None,
            scheduler: str | None = None, workers: int | None = None,
            timing: TimingConfig, on_result: Callable[[SweepResult], None],
            done: Collection[tuple] = frozenset(), case_timeout_s: float | None = None,
            seed: int = 0, quiet: bool = False, time_limit_s: float | None = None,
            known: Mapping[MatrixSource, str] | None = None,
            on_probe: Callable[[MatrixSource, str], None] | None = None,
            first_use_plan: first_use.FirstUsePlan | None = None) -> EngineStats:
    """Run ``tasks`` (see the module docstring); ``done``: keys (:func:`~sparsescope.sweep.
    tasks.task_key`) already stored, reported as ``stored`` without running. ``known``:
    content hashes of sources known without loading them (a matrix whose every case is in
    ``done`` is then not loaded; none left to run: no cluster). ``on_probe(source, hash)``:
    called in the client when a worker has loaded a source (or found it unreadable).
    ``time_limit_s``: submit nothing after this many seconds of sweeping, cancel what is
    queued (cases running then are lost, not stored) and return; a re-run resumes.
    ``first_use_plan``: the client's ceilings for the workers (``first_use.plan_for``; a
    sweep of GPU backends without one measures once per GPU kind and host). Returns where the
    wall time went and how many tasks were left (:class:`EngineStats`)."""
    check_arguments(cluster, scheduler, workers)
    # NaN passes a plain `<= 0`: every case would then time out at once
    if case_timeout_s is not None and not (math.isfinite(case_timeout_s) and case_timeout_s > 0):
        raise UsageError(f"--case-timeout must be a finite number of seconds > 0, "
                         f"got {case_timeout_s}")
    if time_limit_s is not None and not (math.isfinite(time_limit_s) and time_limit_s > 0):
        raise UsageError(f"--time-limit must be a finite number of seconds > 0, got {time_limit_s}")
    stats = EngineStats()

    def timed_on_result(result: SweepResult) -> None:
        start = time.perf_counter()
        stats.reported += 1
        on_result(result)
        stats.client_s += time.perf_counter() - start

    claims = _Claims(done, timed_on_result)
    groups = claims.skip_stored(_groups(tasks), known or {})
    plan = _first_use_plan(first_use_plan, groups) if groups else None
    options = dict(timing=timing, case_timeout_s=case_timeout_s, seed=seed, stats=stats,
                   on_probe=on_probe, plan=plan)
    start = time.perf_counter()
    try:
        if not groups:  # every case stored: nothing loaded, no cluster
            stats.workers = 0
        elif cluster is None and scheduler is None:
            _in_process(groups, claims, **options, deadline=_deadline(start, time_limit_s))
        else:
            with dask_client(cluster, scheduler, workers, quiet) as client:
                stats.cluster = cluster or "scheduler"
                start = time.perf_counter()  # the cluster's start-up is not the sweep's
                _on_dask(client, groups, claims, **options,
                         deadline=_deadline(start, time_limit_s))
    finally:
        first_use.remove_share(plan)
    stats.wall_s = time.perf_counter() - start
    stats.left = len(tasks) - stats.reported
    return stats


def _backend_device(task: SweepTask) -> str:
    """``cpu`` or ``gpu``: where the task's backend runs (``cpu`` when it cannot be told, so
    that nothing is loaded beside a timing that might be a CPU's)."""
    from sparsescope import registry

    try:
        factory = registry.load_backend_factory(task.name)
        capability = getattr(factory, "capability", None)
        if capability is None:
            from sparsescope.backends.registry import get_backend

            capability = get_backend(task.name).capability
        return capability.device
    except Exception:  # noqa: BLE001 (an unknown backend fails in its case, with its reason)
        return "cpu"


def timed_on_cpu(groups: Mapping[MatrixSource, Sequence[SweepTask]]) -> bool:
    """Whether any case of ``groups`` times a CPU backend."""
    names = {task.name: task for group in groups.values() for task in group}
    return any(_backend_device(task) != "gpu" for task in names.values())


def _past(deadline: float | None, stats: EngineStats) -> bool:
    """The time limit is reached, and this call has run a case (so every call progresses),
    or it is :data:`FIRST_CASE_GRACE_S` past it (so every call ends)."""
    if deadline is None:
        return False
    now = time.perf_counter()
    return now > deadline and (stats.cases > 0 or now > deadline + FIRST_CASE_GRACE_S)


def _deadline(start: float, time_limit_s: float | None) -> float | None:
    return None if time_limit_s is None else start + time_limit_s
