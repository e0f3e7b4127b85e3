"""What runs on a worker (a Dask worker process, or the client itself in process).

Workers never receive a matrix through the scheduler: each call loads it from its
:class:`~sparsescope.sweep.sources.MatrixSource` (the last one loaded is kept, so a worker
running the probe and then the cases of one matrix reads it once). Results go back as JSON-able
dicts (``results.io`` encoding), so any pickling of records is avoided.

A per-case timeout runs the case in a thread and stops waiting for it: the thread itself cannot
be stopped and runs on in the background (in process, or on the worker) until the case ends.
"""

from __future__ import annotations

import concurrent.futures
import sys
import time
from collections import OrderedDict
from typing import Any

from sparsescope.errors import SparsescopeError
from sparsescope.results.records import CaseResult, MatrixRecord
from sparsescope.sweep.sources import MatrixSource, load_source, matrix_hash, source_hash
from sparsescope.sweep.tasks import SweepTask
from sparsescope.timing.types import TimingConfig

#: Matrices kept loaded per worker, most recent last: the probe's matrix stays while the
#: next matrices are probed and this one's cases run (the engine keeps workers + 1 probes in
#: flight), so a matrix is loaded once per worker.
KEEP_LOADED = 3
_LOADED: OrderedDict[str, tuple[Any, str]] = OrderedDict()


def _matrix(src: MatrixSource):
    """The loaded matrix of ``src`` (kept for the next calls) and its content hash."""
    if src.ref in _LOADED:
        _LOADED.move_to_end(src.ref)
    else:
        matrix = load_source(src)
        _LOADED[src.ref] = (matrix, matrix_hash(matrix.csr))
        while len(_LOADED) > KEEP_LOADED:
            _LOADED.popitem(last=False)
    return _LOADED[src.ref]


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


_MODEL_DEVICES: dict[str, Any] = {}


def _model_device(kind: str):
    """The device this worker's cases are predicted for (a ``context.DeviceContext``), once
    per worker process and device kind: its own GPU with ceilings measured here (each worker
    pins its own GPU), or the reason a CPU case is not modelled."""
    from sparsescope.context import CPU_BACKEND, not_modelled_context, present_device

    if kind not in _MODEL_DEVICES:
        if kind != "gpu":
            _MODEL_DEVICES[kind] = not_modelled_context(CPU_BACKEND)
        else:
            _MODEL_DEVICES[kind] = present_device("gpu", store=False)
    return _MODEL_DEVICES[kind]


def _run(task: SweepTask, timing: TimingConfig, seed: int) -> CaseResult:
    from sparsescope.backends.registry import get_backend
    from sparsescope.backends.runner import run_case

    matrix, _ = _matrix(task.source)
    if matrix.name != task.source.name:
        from dataclasses import replace

        matrix = replace(matrix, name=task.source.name)
    kind = get_backend(task.name).capability.device
    return run_case(matrix, task.choice(), task.op, task.params, config=timing, seed=seed,
                    model=_model_device(kind))


def run_task(task: SweepTask, timing: TimingConfig, *, case_timeout_s: float | None = None,
             factory: Any = None, seed: int = 0) -> dict:
    """Run one case: ``{"case": its CaseResult as a dict, "seconds": the worker's time on
    it}``. A loading or runner error is a ``failed`` case with the error; past
    ``case_timeout_s`` the case is ``failed``."""
    from sparsescope.results.io import record_to_dict

    start = time.perf_counter()
    case = _case(task, timing, case_timeout_s, factory, seed)
    return {"case": record_to_dict(case), "seconds": time.perf_counter() - start}


def _case(task: SweepTask, timing: TimingConfig, case_timeout_s: float | None, factory: Any,
          seed: int) -> CaseResult:
    _ensure_backend(task.op, task.name, factory)
    if case_timeout_s is None:
        try:
            return _run(task, timing, seed)
        except Exception as exc:  # the runner records backend errors; this is anything else
            return failed_case(task, f"{type(exc).__name__}: {exc}")
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="case")
    future = pool.submit(_run, task, timing, seed)
    try:
        return future.result(timeout=case_timeout_s)
    except concurrent.futures.TimeoutError:
        return failed_case(task, f"timed out after {case_timeout_s:g} s "
                                 "(--case-timeout); its thread was left running")
    except Exception as exc:
        return failed_case(task, f"{type(exc).__name__}: {exc}")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
