"""Short cases of one matrix batched into one Dask task, so the scheduler's cost is amortised.

Each Dask task costs the scheduler and the client about a millisecond beside its own work
(its scheduling, its result's transfer and decoding), and Dask's guidance is tasks of 100 ms
or more ("the scheduler may impose overheads up to 1 ms per task ... large enough that
operations take 100 ms or so", Dask's best practices): :data:`MIN_TASK_S`. A case of a small
matrix can take less (a library call checked and timed on a few thousand nonzeros), so the
cases of one matrix whose time is known to be short go out together, in plan order, in
batches of at least :data:`MIN_TASK_S` each; every other case goes alone, as before.

"Known to be short" comes from this sweep's own cases, not from a constant: matrices are
handed out largest first, so when a matrix's cases are submitted the same backend and
parameters have usually run on larger matrices already. :meth:`CaseTimes.bound` takes, for
a case on ``nnz`` nonzeros, the shortest time the same (backend, op, parameters) took on a
matrix of at least ``nnz`` nonzeros (a case on fewer nonzeros is taken to take no longer, the
same assumption that orders the matrices); with none seen, the case is not batched. So the
first matrix's cases, a backend that never returned (a worker it killed), and every case
whose bound reaches :data:`MIN_TASK_S` run one to a task, each with its own retry.

A batch that fails as a whole (its worker died: ``KilledWorker``) is split: the engine runs
each of its cases again alone, so one bad case fails alone, as it would unbatched.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from sparsescope.sweep.tasks import SweepTask, params_key

#: The shortest batch (seconds of the cases' own time, by :meth:`CaseTimes.bound`): Dask's
#: guidance for a task's length next to its ~1 ms overhead.
MIN_TASK_S = 0.1


def time_key(task: SweepTask) -> tuple[str, str, str]:
    """What a case's time is looked up by: (backend as results name it, op, parameters)."""
    return (task.backend, task.op, params_key(task.params))


class CaseTimes:
    """The worker time of each finished case of this sweep, by :func:`time_key` and the
    nonzeros of its matrix."""

    def __init__(self) -> None:
        self._seen: dict[tuple, list[tuple[float, float]]] = {}
        """key -> (nnz, seconds), sorted by nnz."""

    def add(self, task: SweepTask, nnz: float, seconds: float) -> None:
        bisect.insort(self._seen.setdefault(time_key(task), []), (float(nnz), float(seconds)))

    def bound(self, task: SweepTask, nnz: float) -> float | None:
        """The shortest time ``task``'s key took on a matrix of at least ``nnz`` nonzeros, or
        None when none has run."""
        seen = self._seen.get(time_key(task), [])
        start = bisect.bisect_left(seen, (float(nnz), float("-inf")))
        larger = [seconds for _, seconds in seen[start:]]
        return min(larger) if larger else None


def batches(tasks: Sequence[SweepTask], nnz: float, times: CaseTimes,
            min_task_s: float = MIN_TASK_S) -> list[tuple[SweepTask, ...]]:
    """``tasks`` (the cases of one matrix of ``nnz`` nonzeros, in plan order) as Dask tasks:
    runs of consecutive cases of one parameter set whose bounds are below ``min_task_s``,
    closed once their bounds sum to it (or the parameters change, so consecutive cases keep
    sharing one float64 reference); every other case alone (see the module docstring)."""
    out: list[tuple[SweepTask, ...]] = []
    batch: list[SweepTask] = []
    total = 0.0

    def close() -> None:
        nonlocal batch, total
        if batch:
            out.append(tuple(batch))
        batch, total = [], 0.0

    for task in tasks:
        if batch and params_key(batch[-1].params) != params_key(task.params):
            close()
        bound = times.bound(task, nnz)
        if bound is None or bound >= min_task_s:
            close()
            out.append((task,))
            continue
        batch.append(task)
        total += bound
        if total >= min_task_s:
            close()
    close()
    return out
