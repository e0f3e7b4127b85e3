"""Load a worker's next matrix while its current matrix's cases run (Dask tasks).

A GPU worker waited for every matrix it loaded: its next matrix was read, hashed and its
statistics computed (the probe) only after the current matrix's last case, with the GPU idle
meanwhile (issue 35: 1.5x on 2 GPUs, the small matrices leaving the GPUs waiting on host-side
preparation). The engine now sends :func:`start` to the worker as soon as it hands it a
matrix's cases: :func:`start` returns at once, and one background thread probes the next
matrix (``worker.probe``, through the thread-safe ``sweep.matrix_cache``), so that when that
matrix's :func:`probe` task runs, after the cases before it, it finds the work done or under
way.

Only for sweeps that time no CPU backend (the engine decides): a load beside a CPU timing would
share its cores and memory bandwidth and distort it; a GPU's timing waits on the device.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from sparsescope.sweep import worker
from sparsescope.sweep.source_facts import source_identity
from sparsescope.sweep.sources import MatrixSource

_LOCK = threading.Lock()
_PROBES: dict[str, tuple[str | None, Future]] = {}
_POOL: list[ThreadPoolExecutor] = []


def _pool() -> ThreadPoolExecutor:
    """One background thread per worker process: one matrix loads at a time."""
    with _LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch"))
        return _POOL[0]


def start(src: MatrixSource, *_beside) -> bool:
    """Begin probing ``src`` on this worker in the background; return at once (True when a
    probe started, False when one was already under way or done). ``_beside``: the probe
    whose worker this lane is (a Dask data dependency that places this task; unused)."""
    pool = _pool()
    identity = source_identity(src)
    with _LOCK:
        if src.ref in _PROBES and _PROBES[src.ref][0] == identity:
            return False
        _PROBES[src.ref] = (identity, pool.submit(worker.probe, src))
    return True


def probe(src: MatrixSource, *_beside) -> dict:
    """``worker.probe(src)``: the background probe's result when :func:`start` began one here
    (waited for), else probed now. ``seconds`` is this task's own time (its wait), the time
    the worker could run nothing else; ``worker`` this worker's address. ``_beside`` as for
    :func:`start`."""
    begin = time.perf_counter()
    with _LOCK:
        started = _PROBES.pop(src.ref, None)
    if started is not None and started[0] is not None and started[0] == source_identity(src):
        data = dict(started[1].result())
    else:  # none started, or its file changed since (a long-lived worker's next sweep)
        data = worker.probe(src)
    data["seconds"] = time.perf_counter() - begin
    if data.get("matrix") is not None:
        data["worker"] = _address()
    return data


def _address() -> str | None:
    """The Dask worker running this task, or None outside one (Dask is not imported to find
    out: in process it is not loaded)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        return distributed.get_worker().address
    except (AttributeError, ValueError):  # not on a worker
        return None


def run_task_beside(_probed: dict, task, timing, **options) -> dict:
    """``worker.run_task(task, timing, **options)`` on the worker holding ``_probed``, the
    probe of the task's matrix (a Dask data dependency: its matrix is loaded there; if that
    worker dies, Dask probes the matrix again elsewhere and runs the case there)."""
    return worker.run_task(task, timing, **options)


def run_batch_beside(_probed: dict, tasks, timing, **options) -> list[dict]:
    """``worker.run_batch(tasks, timing, **options)`` beside ``_probed``, as
    :func:`run_task_beside` (a batch of short cases of one matrix: ``sweep.batching``)."""
    return worker.run_batch(tasks, timing, **options)
