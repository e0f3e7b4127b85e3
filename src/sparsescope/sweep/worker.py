"""What runs on a worker (a Dask worker process, or the client itself in process).

Workers never receive a matrix through the scheduler: each call loads it from its
:class:`~sparsescope.sweep.sources.MatrixSource` (the last one loaded is kept, so a worker
running the probe and then the cases of one matrix reads it once). Results go back as JSON-able
dicts (``results.io`` encoding), so any pickling of records is avoided.

A per-case timeout runs the case in a thread and stops waiting for it: the thread itself cannot
be stopped and runs on in the background (in process, or on the worker) until the case ends.

Each case carries its stage times (``CaseResult.stages``: the worker's time on it, stage by
stage, :mod:`sparsescope.stages`), with its queue time (submitted by the client -> started
here) and, once the client has it, its transfer time (finished here -> decoded there,
:func:`received_case`); both from the wall clocks (``time.time``) of the two processes, exact
on one host. The matrix's probe (its load and statistics) is its own task, not a case's.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import sys
import threading
import time
from dataclasses import replace
from typing import Any

from sparsescope.errors import SparsescopeError
from sparsescope.results.records import CaseResult, MatrixRecord
from sparsescope.stages import StageClock, stage
from sparsescope.sweep import first_use, matrix_cache
from sparsescope.sweep.sources import MatrixSource, source_hash
from sparsescope.sweep.tasks import SweepTask
from sparsescope.timing.types import TimingConfig


def _matrix(src: MatrixSource):
    """The loaded matrix of ``src`` (kept for the next calls, loaded once per worker even
    while a background thread prefetches it: ``sweep.matrix_cache``) and its content hash."""
    return matrix_cache.loaded(src)


def _worker_address() -> str | None:
    """The Dask worker this runs on (cases of its matrix are sent back to it), if any; Dask is
    not imported to find out (in process it is not loaded)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        return distributed.get_worker().address
    except ValueError:  # not on a worker
        return None


def probe(src: MatrixSource) -> dict:
    """Load ``src``: ``{"hash", "matrix": MatrixRecord dict, "seconds"}``, or, when it cannot
    be read, ``{"hash": source_hash, "matrix": None, "reason": why, "seconds"}``; ``seconds``:
    the worker's time on it (the engine's overhead is the wall time not spent so)."""
    from sparsescope.matrices import compute_stats
    from sparsescope.results.io import record_to_dict

    start = time.perf_counter()
    try:
        matrix, digest = _matrix(src)
    except SparsescopeError as exc:
        return {"hash": source_hash(src), "matrix": None, "reason": f"cannot read: {exc}",
                "seconds": time.perf_counter() - start}
    record = MatrixRecord(name=src.name, source=matrix.source, kind=matrix.kind,
                          analog_of=matrix.analog_of, stats=compute_stats(matrix.csr))
    return {"hash": digest, "matrix": record_to_dict(record), "reason": "",
            "seconds": time.perf_counter() - start, "worker": _worker_address()}


def failed_case(task: SweepTask, reason: str, outcome: str = "failed") -> CaseResult:
    """A case that never ran through the runner: ``failed`` (or ``skipped``) with ``reason``."""
    return CaseResult(matrix=task.source.name, backend=task.backend, op=task.op,
                      outcome=outcome, reason=reason, params=task.params)


def _ensure_backend(op: str, name: str, factory: Any) -> None:
    """Register a backend the parent registered at run time (a plug-in, a test's fake)."""
    from sparsescope import registry

    if factory is not None and (op, name) not in registry.BACKENDS:
        registry.register_backend(op, name, factory)


_MODEL_DEVICES: dict[tuple[str, str], Any] = {}
_MODEL_LOCK = threading.Lock()


def model_device(kind: str):
    """The device this worker's cases are predicted for (a ``context.DeviceContext``), once
    per worker process, sweep and device kind: its own GPU (each worker pins its own) with
    the ceilings of the sweep's plan (``sweep.first_use``: the client's measurement, or one
    per GPU kind and host; measured here without a plan), or the reason a CPU case is not
    modelled. Built by the worker's warm-up, before its first case, where there is one."""
    from sparsescope.backends.runner import sass_timed
    from sparsescope.context import CPU_BACKEND, not_modelled_context

    plan = first_use.installed()
    key = (kind, plan.sweep_id if plan is not None else "")
    with _MODEL_LOCK:  # a timed-out case's thread and the next case: one build
        if key not in _MODEL_DEVICES:
            if kind != "gpu":
                _MODEL_DEVICES[key] = not_modelled_context(CPU_BACKEND)
            else:
                with stage("device"):
                    _MODEL_DEVICES[key] = sass_timed(first_use.gpu_context(plan))
        return _MODEL_DEVICES[key]


def _run(task: SweepTask, timing: TimingConfig, seed: int) -> CaseResult:
    from sparsescope.backends.runner import run_case

    with stage("load"):  # loaded by the probe, unless it was evicted or probed elsewhere
        matrix, _ = _matrix(task.source)
    if matrix.name != task.source.name:
        from dataclasses import replace

        matrix = replace(matrix, name=task.source.name)
    choice = task.choice()
    backend = choice.create()
    backend.name = choice.result_name
    # the op case (float64 reference) built once per matrix for all its backends, as in `run`
    case = matrix_cache.shared_case(task.source, matrix, task.op, task.params,
                                    backend.capability.index_bytes[0], seed)
    return run_case(matrix, backend, task.op, config=timing, seed=seed, case=case,
                    model=model_device(backend.capability.device))


def run_task(task: SweepTask, timing: TimingConfig, *, case_timeout_s: float | None = None,
             factory: Any = None, seed: int = 0, submitted_at: float | None = None,
             plan: Any = None) -> dict:
    """Run one case: ``{"case": its CaseResult as a dict, "seconds": the worker's time on
    it, "finished_at": when it ended here (``time.time``)}``. A loading or runner error is a
    ``failed`` case with the error; past ``case_timeout_s`` the case is ``failed``. The case
    carries its stage times, with its queue time when ``submitted_at`` (the client's
    ``time.time()`` at submission) is given. ``plan``: the sweep's
    ``first_use.FirstUsePlan`` (installed here: the ceilings this worker predicts with)."""
    from sparsescope.results.io import record_to_dict

    first_use.install(plan)
    started_at = time.time()
    clock = StageClock()
    with clock.active():
        case = _case(task, timing, case_timeout_s, factory, seed)
    queue_s = None if submitted_at is None else max(0.0, started_at - submitted_at)
    case = replace(case, stages=replace(clock.total(), queue_s=queue_s))
    return {"case": record_to_dict(case), "seconds": case.stages.wall_s,
            "finished_at": time.time()}


def run_batch(tasks, timing: TimingConfig, *, factories=(), submitted_at: float | None = None,
              **options) -> list[dict]:
    """:func:`run_task` of each of ``tasks`` in turn (a batch of short cases of one matrix,
    ``sweep.batching``), each with its own factory, time and queue time (the queue time of a
    case after the first includes the batch's cases before it, as it would have waited behind
    them on this worker)."""
    factories = list(factories) or [None] * len(tasks)
    return [run_task(task, timing, factory=factory, submitted_at=submitted_at, **options)
            for task, factory in zip(tasks, factories, strict=True)]


def received_case(data: dict, path: str = "case", now=time.time) -> CaseResult:
    """The case of :func:`run_task`'s result, decoded in the client, its transfer time (from
    ``finished_at`` on the worker to ``now()``, never below 0) added to its stage times."""
    from sparsescope.results.io import record_from_dict

    case = record_from_dict(data["case"], CaseResult, path)
    finished_at = data.get("finished_at")
    if case.stages is None or finished_at is None:
        return case
    return replace(case, stages=replace(case.stages,
                                        transfer_s=max(0.0, now() - finished_at)))


def _case(task: SweepTask, timing: TimingConfig, case_timeout_s: float | None, factory: Any,
          seed: int) -> CaseResult:
    _ensure_backend(task.op, task.name, factory)
    if case_timeout_s is None:
        try:
            return _run(task, timing, seed)
        except Exception as exc:  # the runner records backend errors; this is anything else
            return failed_case(task, f"{type(exc).__name__}: {exc}")
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="case")
    # the thread charges this context's stage clock (a new thread starts with no context)
    future = pool.submit(contextvars.copy_context().run, _run, task, timing, seed)
    try:
        return future.result(timeout=case_timeout_s)
    except concurrent.futures.TimeoutError:
        return failed_case(task, f"timed out after {case_timeout_s:g} s "
                                 "(--case-timeout); its thread was left running")
    except Exception as exc:
        return failed_case(task, f"{type(exc).__name__}: {exc}")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
