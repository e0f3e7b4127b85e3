"""Host formats of the own SpMV kernels, built once per (matrix, format), some in advance.

Packing a matrix into a kernel's format (SELL slices, 16-bit offsets, 1 x B blocks, row
tiles) is NumPy work on the host that grows with the nonzeros: 1-34 s per format at 10^7-10^8
nonzeros, the largest share of ``sparsescope run --suite seed6 --backend all`` (173 s of 269 s
on an H100, issue 35's stage breakdown). Two things make it cheaper without changing a
format:

* **once**: every backend and variant asks :data:`FORMATS` by its ``format_key``; a format
  asked for twice (a variant sweep, auto's candidates and the same kernel's own case, the
  trial) is built once, and a build under way is waited for, not started again;
* **in advance**: :meth:`FormatCache.prefetch` starts a build on a few background threads
  (the runner asks at the start of a matrix, for each backend of the run, and auto for its
  shortlist), so that the formats of later cases are packed while the GPU times earlier ones
  (NumPy's sorts, searches and copies release the GIL). The ``prepare`` stage then records
  the wait, not the build.

It holds the formats of at most two matrices, the least recently used dropped: the matrix at
hand and the row sample its plans run on (``context.predict``), which used to evict each other.
:meth:`FormatCache.retain` drops every other matrix when a run moves on to the next one.
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

#: Matrices whose formats are kept (the matrix at hand and its plans' row sample).
MATRICES_KEPT = 2
#: Host bytes one format build may hold per nonzero at its peak (an estimate from the
#: largest builder, the 1 x B blocked packing: int64 keys and links, blocks x B float64
#: values, their SELL-ordered copy), used to bound concurrent builds by the host's memory.
BUILD_BYTES_PER_NONZERO = 160


def matrix_identity(csr: Any) -> tuple:
    """The same object with the same arrays: a matrix changed in place gets new formats. The
    cache holds each matrix it keeps formats for (:class:`FormatCache`), so no later matrix can
    be given the same ``id`` and buffers while they are kept."""
    return (id(csr), csr.data.ctypes.data, csr.indices.ctypes.data, csr.nnz, csr.shape)


def build_threads(nnz: int, *, cores: int | None = None, memory: int | None = None) -> int:
    """Background builders for a matrix of ``nnz`` nonzeros: at most the cores less one (the
    run's own thread keeps one) and 8, and no more than half the host's memory holds at
    :data:`BUILD_BYTES_PER_NONZERO` a nonzero; at least 1."""
    from sparsescope.hardware.cpuinfo import logical_cores, total_ram_bytes

    if cores is None:
        cores = logical_cores() or 1
    if memory is None:
        memory = total_ram_bytes()
    by_memory = memory // (2 * BUILD_BYTES_PER_NONZERO * max(nnz, 1)) if memory else 8
    return int(max(1, min(cores - 1, 8, by_memory)))


class _Builders:
    """Daemon threads that run format builds in the order asked (an interrupted run does not
    wait for builds nobody will read). The threads grow to the most asked and never shrink,
    so each job carries its own bound: it starts only while fewer than ``threads`` builds run
    (a large matrix's builds stay within the memory :func:`build_threads` allows it even where
    a smaller matrix's grew the pool first)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._turn = threading.Condition()
        self.running = 0
        """Builds under way."""
        self.most_running = 0
        """The most builds that ran at once (for tests and benchmarks)."""

    def submit(self, job: Callable[[], None], threads: int) -> None:
        with self._lock:
            while len(self._threads) < threads:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"sparsescope-format-{len(self._threads)}")
                thread.start()
                self._threads.append(thread)
        self._jobs.put((job, max(1, int(threads))))

    def _work(self) -> None:
        while True:
            job, bound = self._jobs.get()
            with self._turn:
                while self.running >= bound:
                    self._turn.wait()
                self.running += 1
                self.most_running = max(self.most_running, self.running)
            try:
                job()
            finally:
                with self._turn:
                    self.running -= 1
                    self._turn.notify_all()


class FormatCache:
    """Formats by (matrix, ``format_key``), each built once (module docstring)."""

    def __init__(self, matrices: int = MATRICES_KEPT) -> None:
        self._keep = matrices
        self._formats: OrderedDict[tuple, dict[tuple, Future]] = OrderedDict()
        self._held: dict[tuple, Any] = {}
        """Each kept matrix itself: a matrix freed while its formats were kept could hand
        its ``id`` and its buffers' addresses to the next one of the same shape, which would
        then be given the freed matrix's formats (seen on the GPU: two meshes of one shape
        and nonzero count built in turn, the second's product 63 % wrong)."""
        self._lock = threading.Lock()  # planners on several threads share the cache
        self._builders = _Builders()
        self.builds = 0
        """Formats built (counted for tests and benchmarks: a format asked for again is not
        built again)."""

    def _slot(self, identity: tuple, csr: Any) -> dict[tuple, Future]:
        """The matrix's formats, most recently used; the oldest matrix dropped past the
        limit (lock held)."""
        slot = self._formats.pop(identity, None)
        if slot is None:
            slot = {}
            while len(self._formats) >= self._keep:
                oldest, _ = self._formats.popitem(last=False)
                self._held.pop(oldest, None)
        self._formats[identity] = slot
        self._held[identity] = csr
        return slot

    def get(self, csr: Any, key: tuple, build: Callable[[Any], Any]) -> Any:
        """``build(csr)``, or the format built (or being built) before for ``key``. A
        background build that failed is tried again here, so its error is this call's."""
        identity = matrix_identity(csr)
        with self._lock:
            slot = self._slot(identity, csr)
            found = slot.get(key)
            if found is None or (found.done() and found.exception() is not None):
                found, mine = Future(), True
                slot[key] = found
            else:
                mine = False
        if mine:
            self._build(csr, build, found)
        return found.result()

    def prefetch(self, csr: Any, key: tuple, build: Callable[[Any], Any]) -> bool:
        """Start ``build(csr)`` on a background thread unless ``key``'s format is built or
        under way; True when a build started."""
        identity = matrix_identity(csr)
        with self._lock:
            slot = self._slot(identity, csr)
            if key in slot:
                return False
            future: Future = Future()
            slot[key] = future
        self._builders.submit(lambda: self._build(csr, build, future),
                              build_threads(int(csr.nnz)))
        return True

    def _build(self, csr: Any, build: Callable[[Any], Any], future: Future) -> None:
        try:
            value = build(csr)
        except BaseException as exc:  # noqa: BLE001 - for the waiters; the next ask builds
            future.set_exception(exc)
            return
        with self._lock:
            self.builds += 1
        future.set_result(value)

    def retain(self, csr: Any) -> None:
        """Drop the formats of every matrix but ``csr`` (a run moving on to its next matrix:
        one matrix's formats in memory, not two)."""
        identity = matrix_identity(csr)
        with self._lock:
            for other in [k for k in self._formats if k != identity]:
                del self._formats[other]
                self._held.pop(other, None)

    def clear(self) -> None:
        with self._lock:
            self._formats.clear()
            self._held.clear()


FORMATS = FormatCache()
"""The process's cache: every own SpMV backend asks it."""
