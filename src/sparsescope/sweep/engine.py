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
error; ``on_result`` is called in the client for every case as it finishes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sparsescope.errors import MissingDependencyError, UsageError
from sparsescope.results.records import CaseResult, MatrixRecord
from sparsescope.sweep import worker
from sparsescope.sweep.sources import MatrixSource, source_hash
from sparsescope.sweep.tasks import SweepTask, task_key
from sparsescope.timing.types import TimingConfig

CLUSTERS = ("local", "cuda")


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


@dataclass(frozen=True)
class _Probe:
    hash: str
    matrix: MatrixRecord | None
    reason: str
    outcome: str = "skipped"
    """Outcome of every case of a source that could not be probed."""


def _decoded_probe(data: dict) -> _Probe:
    from sparsescope.results.io import record_from_dict

    matrix = None if data["matrix"] is None else record_from_dict(data["matrix"], MatrixRecord,
                                                                  "matrix")
    return _Probe(hash=data["hash"], matrix=matrix, reason=data["reason"])


def _decoded_case(data: dict) -> CaseResult:
    from sparsescope.results.io import record_from_dict

    return record_from_dict(data, CaseResult, "case")


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


def _in_process(tasks, *, timing, on_result, done, case_timeout_s, seed) -> None:
    for src, group in _groups(tasks).items():
        probe = _decoded_probe(worker.probe(src))
        for task in _after_probe(group, probe, done, on_result):
            case = _decoded_case(worker.run_task(task, timing, case_timeout_s=case_timeout_s,
                                                 seed=seed))
            on_result(SweepResult(task, probe.hash, probe.matrix, case))


def _import(module: str, what: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{module} is not installed (needed for {what}); install it with: "
            f"pip install 'sparsescope[sweep]'") from exc


@contextmanager
def dask_client(cluster: str | None, scheduler: str | None, workers: int | None,
                quiet: bool = False) -> Iterator[Any]:
    """A ``distributed.Client`` on a new local (CUDA) cluster or the one at ``scheduler``;
    its dashboard address printed on stderr unless ``quiet``."""
    distributed = _import("distributed", "a Dask sweep (--cluster, --scheduler)")
    owned = None
    if scheduler is None:
        if cluster == "cuda":
            dask_cuda = _import("dask_cuda", "--cluster cuda")
            owned = dask_cuda.LocalCUDACluster(**({"n_workers": workers} if workers else {}))
        else:
            owned = distributed.LocalCluster(n_workers=workers or 2, threads_per_worker=1,
                                             processes=True, dashboard_address=":0")
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


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _on_dask(client, tasks, *, timing, on_result, done, case_timeout_s, seed) -> None:
    from distributed import as_completed

    groups = _groups(tasks)
    probes = {client.submit(worker.probe, src, retries=1, pure=False): src for src in groups}
    cases: dict[Any, tuple[SweepTask, _Probe]] = {}
    finished = as_completed(list(probes))
    for future in finished:
        if future in probes:
            src = probes.pop(future)
            try:
                probe = _decoded_probe(future.result())
            except Exception as exc:  # the probe's worker died: every case of it failed
                probe = _Probe(source_hash(src), None, f"loading failed: {_error_text(exc)}",
                               outcome="failed")
            for task in _after_probe(groups[src], probe, done, on_result):
                submitted = client.submit(worker.run_task, task, timing,
                                          case_timeout_s=case_timeout_s, factory=_factory(task),
                                          seed=seed, retries=1, pure=False)
                cases[submitted] = (task, probe)
                finished.add(submitted)
        else:
            task, probe = cases.pop(future)
            try:
                case = _decoded_case(future.result())
            except Exception as exc:  # KilledWorker, or an error past its retry
                case = worker.failed_case(task, _error_text(exc))
            on_result(SweepResult(task, probe.hash, probe.matrix, case))
        future.release()


def execute(tasks: Sequence[SweepTask], *, cluster: str | None = None,
            scheduler: str | None = None, workers: int | None = None,
            timing: TimingConfig, on_result: Callable[[SweepResult], None],
            done: Collection[tuple] = frozenset(), case_timeout_s: float | None = None,
            seed: int = 0, quiet: bool = False) -> None:
    """Run ``tasks`` (see the module docstring); ``done``: keys (:func:`~sparsescope.sweep.
    tasks.task_key`) already stored, reported as ``stored`` without running."""
    if cluster is not None and cluster not in CLUSTERS:
        raise UsageError(f"unknown cluster {cluster!r}; known: {', '.join(CLUSTERS)}")
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    if case_timeout_s is not None and case_timeout_s <= 0:
        raise UsageError(f"--case-timeout must be > 0 seconds, got {case_timeout_s}")
    options = dict(timing=timing, on_result=on_result, done=done,
                   case_timeout_s=case_timeout_s, seed=seed)
    if cluster is None and scheduler is None:
        _in_process(tasks, **options)
        return
    with dask_client(cluster, scheduler, workers, quiet) as client:
        _on_dask(client, tasks, **options)
