"""Answers kept for the last matrix the model was asked about (:class:`LastMatrixAnswers`):
the x-gather model (``model.xgather.X_GATHERS``) and the rows' lengths as a kernel walks them
(``model.iterations.ROW_LENGTHS``)."""

from __future__ import annotations

import threading
import weakref


class LastMatrixAnswers:
    """Answers of a pure function of one matrix's arrays and some parameters, kept for the
    last matrix asked about only: every candidate kernel of an auto choice, and every backend
    of a what-if, asks the same questions of one matrix (26 x-gather models of a 150 K-nonzero
    matrix for ``--backend all``, 7 of them distinct; 44 row-length passes over 10^7 rows at
    10^8 nonzeros, 2 distinct). The arrays are recognised by identity
    and address (a matrix changed in place in the same buffers is not seen: none of the
    callers does that) and held by weak references: a matrix no longer used is freed, not
    kept for its answers (a sweep's 10^8-nonzero matrix must go before the next one comes).
    Planning threads share it: an answer is computed under the instance's lock (a thread
    asking the same question meanwhile waits for it instead of computing it again; the
    model's passes hold the GIL most of their time, so little parallelism is lost), and a
    whole (arrays, answers) tuple is swapped at once."""

    def __init__(self) -> None:
        self._last: tuple = ((), {})
        self._lock = threading.RLock()
        self.computed = 0
        """Answers computed (not found kept) in this process: what tests count."""

    @staticmethod
    def _identity(arrays) -> tuple:
        return tuple((id(a), getattr(a, "ctypes", None) and a.ctypes.data, getattr(a, "size", 0))
                     for a in arrays)

    @staticmethod
    def _same(held: tuple, identity: tuple, arrays) -> bool:
        return (bool(held) and held[0] == identity
                and all(ref() is a for ref, a in zip(held[1], arrays, strict=True)))

    def get(self, arrays, key, compute):
        identity = self._identity(arrays)
        held, answers = self._last
        if self._same(held, identity, arrays) and key in answers:
            return answers[key]
        try:
            refs = tuple(weakref.ref(a) for a in arrays)
        except TypeError:  # a list or the like: nothing to recognise it by later
            self.computed += 1
            return compute()
        with self._lock:
            held, answers = self._last
            if self._same(held, identity, arrays) and key in answers:
                return answers[key]
            value = compute()
            self.computed += 1
            held, answers = self._last
            if not self._same(held, identity, arrays):
                answers = {}
                self._last = ((identity, refs), answers)
            answers[key] = value
            return value

    def clear(self) -> None:
        self._last = ((), {})
