"""Load the next matrix while the current one's cases run (``sparsescope run`` on a GPU).

A GPU run used to generate or read each matrix, and compute its statistics, only after the
matrix before it was done, with the GPU idle meanwhile: on the seed6 suite at full scale,
21 s of a 269 s run on an H100 (issue 35's stage breakdown). :func:`one_ahead` keeps one item
of an iterator under way in a background thread, so that a matrix's load overlaps the cases
of the matrix before it.

Only where nothing is timed on the CPU (the caller decides): a load beside a CPU timing would
share its cores and memory bandwidth and distort it. The thread is a daemon: an interrupted
run does not wait for a load nobody will read. At most one item is held ahead: two matrices
in memory at once, not more.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_END = object()


class _Pending:
    """One ``next(source)`` (and ``then`` on its item) running in a daemon thread."""

    def __init__(self, source: Iterator, then: Callable) -> None:
        self._done = threading.Event()
        self._value: object = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, args=(source, then), daemon=True,
                                        name="sparsescope-load-ahead")
        self._thread.start()

    def _work(self, source: Iterator, then: Callable) -> None:
        try:
            item = next(source, _END)
            self._value = item if item is _END else then(item)
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> object:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


def one_ahead(items: Iterable[T], then: Callable[[T], R], *, ahead: bool = True
              ) -> Iterator[R]:
    """``then(item)`` for each item of ``items``, in order; with ``ahead``, the next item is
    fetched and ``then`` applied in a background thread while the caller works on the
    current one. An exception raised fetching an item is raised where that item is asked
    for, as without ``ahead`` (so the caller names the right input)."""
    source = iter(items)
    if not ahead:
        for item in source:
            yield then(item)
        return
    pending = _Pending(source, then)
    while True:
        value = pending.result()  # raises the fetch's error at this item's turn
        if value is _END:
            return
        pending = _Pending(source, then)
        yield value
