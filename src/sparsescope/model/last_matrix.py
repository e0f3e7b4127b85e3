"""Answers kept for the last matrix the model was asked about (:class:`LastMatrixAnswers`):
the x-gather model (``model.xgather.X_GATHERS``), the rows' lengths as a kernel walks them
(``model.iterations.ROW_LENGTHS``), the longest block's L1 lines
(``model.l1_wavefronts.WAVEFRONTS``)."""

from __future__ import annotations

import contextlib
import threading
import weakref

_KEEP = [True]
"""Whether answers are kept (:func:`answers_kept`)."""


@contextlib.contextmanager
def answers_kept(keep: bool):
    """Within the block, every :class:`LastMatrixAnswers` keeps and reads its answers
    (``keep`` True, the default outside any block) or computes each one afresh, keeping
    nothing (False): the model without its memos, which tests compare the predictions of
    with the model's own, bit for bit. Process-wide: meant for a test or a check, not for
    planning threads."""
    before = _KEEP[0]
    _KEEP[0] = bool(keep)
    try:
        yield
    finally:
        _KEEP[0] = before


class LastMatrixAnswers:
    """Answers of a pure function of one matrix's arrays and some parameters, kept for the
    last matrix asked about only: every candidate kernel of an auto choice, and every backend
    of a what-if or a run, asks the same questions of one matrix (26 x-gather models of a
    150 K-nonzero matrix for ``--backend all``, 7 of them distinct; 44 row-length passes over
    10^7 rows at 10^8 nonzeros, 2 distinct). The arrays are recognised by identity
    and address (a matrix changed in place in the same buffers is not seen: none of the
    callers does that) and held by weak references: a matrix no longer used is freed, not
    kept for its answers (a sweep's 10^8-nonzero matrix must go before the next one comes),
    and its answers go with it.

    Planning threads share it: each question is answered once, by the first thread that asks
    it, while a thread asking the same question meanwhile waits for that answer instead of
    computing it again; different questions are answered side by side (the model's passes
    spend their time in NumPy's sorts and gathers, which release the GIL: auto's candidates,
    predicted on a thread a format, no longer wait for one another's x-gather models). A
    whole (arrays, answers) tuple is swapped at once when another matrix is asked about; an
    answer computed for a matrix no longer the last is handed to its caller, not kept.

    :attr:`computed` counts the answers computed; :attr:`waited` the questions that found
    their answer being computed by another thread and waited for it (tests count both)."""

    def __init__(self) -> None:
        self._last: tuple = ((), {})
        self._lock = threading.Lock()
        self._pending: dict = {}
        """(identity, key) -> the Event of the answer a thread is computing now."""
        self.computed = 0
        """Answers computed (not found kept) in this process: what tests count."""
        self.waited = 0
        """Questions answered by waiting for another thread's computation of the same."""

    @staticmethod
    def _identity(arrays) -> tuple:
        return tuple((id(a), getattr(a, "ctypes", None) and a.ctypes.data, getattr(a, "size", 0))
                     for a in arrays)

    @staticmethod
    def _same(held: tuple, identity: tuple, arrays) -> bool:
        return (bool(held) and held[0] == identity
                and all(ref() is a for ref, a in zip(held[1], arrays, strict=True)))

    def get(self, arrays, key, compute):
        if not _KEEP[0]:  # answers_kept(False): the model without its memos
            self.computed += 1
            return compute()
        identity = self._identity(arrays)
        held, answers = self._last
        if self._same(held, identity, arrays) and key in answers:
            return answers[key]
        try:
            refs = tuple(weakref.ref(a, self._released) for a in arrays)
        except TypeError:  # a list or the like: nothing to recognise it by later
            self.computed += 1
            return compute()
        while True:
            with self._lock:
                held, answers = self._last
                if self._same(held, identity, arrays):
                    if key in answers:
                        return answers[key]
                else:  # another matrix: its answers go, this one's start
                    answers = {}
                    self._last = ((identity, refs), answers)
                busy = self._pending.get((identity, key))
                if busy is None:
                    done = threading.Event()
                    self._pending[(identity, key)] = done
                    break
            busy.wait()  # the same question, being answered by another thread
            with self._lock:
                self.waited += 1
            # found kept on the next pass (or computed here when the other thread failed, or
            # another matrix was asked about meanwhile)
        try:
            value = compute()
            with self._lock:
                self.computed += 1
                held, kept = self._last
                if kept is answers and self._same(held, identity, arrays):
                    kept[key] = value
            return value
        finally:
            with self._lock:
                self._pending.pop((identity, key), None)
            done.set()

    def _released(self, ref: weakref.ref) -> None:
        """A kept matrix's array is freed: its answers go with it, not when another matrix is
        asked about (a run's matrix and what the model kept of it leave together). Called by
        the garbage collector in any thread, perhaps while this one holds the lock: one
        assignment, no lock."""
        held, _ = self._last
        if held and any(r is ref for r in held[1]):
            self._last = ((), {})

    @property
    def kept(self) -> int:
        """Answers kept now (for the last matrix asked about, while it lives)."""
        return len(self._last[1])

    def clear(self) -> None:
        with self._lock:
            self._last = ((), {})
