"""Independent parts of one model answer computed side by side on threads.

The x-gather model of a large matrix is three passes over its gathers that share nothing but
their inputs: the L2 sector requests, the L1's hits and the L2's reuse
(``model.xgather``). Each spends its time in NumPy's sorts, gathers and ufuncs, which release
the GIL, so on a host of several cores they run in the time of the longest instead of the sum
(a run's first prediction of a matrix, while its GPU waits). The answers are the same either
way: each part is a pure function of its inputs, and the caller combines them in a fixed order.

A part that waits for the same answer being computed by another thread
(``model.last_matrix``) waits for a computation that needs no thread of this module, so parts
never wait on one another in a cycle.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

#: Nonzeros from which a matrix's parts run side by side: below it a part takes a few
#: milliseconds, about what starting a thread and switching the GIL cost.
SIDE_BY_SIDE_NNZ = 1_000_000

COUNTS = {"parallel": 0, "serial": 0}
"""Calls of :func:`side_by_side` that started threads, and those that ran in the caller."""


def worth_threads(nnz: int) -> bool:
    """Whether a matrix of ``nnz`` nonzeros has its parts computed side by side: large enough,
    and a host of more than one core."""
    return nnz >= SIDE_BY_SIDE_NNZ and (os.cpu_count() or 1) > 1


def side_by_side(parts: Sequence[Callable[[], Any]], parallel: bool) -> list[Any]:
    """Each of ``parts`` called once, its result in the same place of the list returned: the
    first in the calling thread and the others on threads of their own when ``parallel``, one
    after another otherwise. The first exception raised is raised here, after every part
    has finished."""
    if not parallel or len(parts) < 2:
        COUNTS["serial"] += 1
        return [part() for part in parts]
    COUNTS["parallel"] += 1
    results: list[Any] = [None] * len(parts)
    errors: list[BaseException | None] = [None] * len(parts)

    def run(i: int) -> None:
        try:
            results[i] = parts[i]()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller below
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,), name=f"sparsescope-model-part-{i}",
                                daemon=True) for i in range(1, len(parts))]
    for thread in threads:
        thread.start()
    run(0)
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results
