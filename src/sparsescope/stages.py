"""Where a run's time goes: a stage clock, and the record it produces.

A :class:`StageClock` splits wall time into named stages (:data:`STAGES`) and ``other``. Stages
nest: entering a stage pauses the one around it, so every second is charged to exactly one
stage, the innermost one open at that moment, or to ``other`` when none is open::

    sum(seconds over STAGES) + other = wall

e.g. ``prepare`` from 0 to 10 s with ``sass_plan`` open from 2 to 5 s inside it, over a 12 s
wall: prepare 7 s, sass_plan 3 s, other 2 s.

The code being measured does not receive the clock: it marks its stages with the module-level
:func:`stage` (a no-op unless a clock is active in this context, :meth:`StageClock.active`), so
the runner, the backends and the report mark stages without a parameter, and a caller that
keeps no clock (a test, the ncu target) pays two attribute reads per stage.

This module is a leaf: it imports nothing of sparsescope, so every stage may use it.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

#: The stages, in the order tables list them. Each run records all of them (0.0 where a stage
#: did not happen, e.g. ``profile`` in ``sparsescope run``).
STAGES = ("device", "load", "reference", "prepare", "sass_plan", "prediction", "check",
          "timing", "profile", "report")
OTHER = "other"
"""Time in no stage (argument checks, case bookkeeping, the progress bar, writing results)."""

LABELS = {
    "device": "device ceilings",
    "load": "load or generate",
    "reference": "float64 reference",
    "prepare": "prepare / pack",
    "sass_plan": "SASS and plan",
    "prediction": "prediction",
    "check": "first run + check",
    "timing": "timing",
    "profile": "profile",
    "report": "report",
    OTHER: "other",
}
"""How tables and the report name each stage."""

DESCRIPTIONS = {
    "device": "the device context: the device's ceilings measured (or read from the store)",
    "load": "a matrix read from its file or generated, and its statistics (on a GPU run, the "
            "wait for a load that ran beside the matrix before it)",
    "reference": "the op's case built: its inputs and the float64 reference result",
    "prepare": "the backend's format packed and uploaded (an auto backend's choice included, "
               "less its SASS)",
    "sass_plan": "the kernel's launch plan (kernel shape) and its SASS read for the model",
    "prediction": "the time model's prediction of the call",
    "check": "the output poisoned, the backend run once and compared with float64",
    "timing": "the timing protocol: warm-ups, flushes and timed repeats",
    "profile": "profiler passes (ncu)",
    "report": "the report, its tables and figures written",
    OTHER: "time in no stage",
}


@dataclass(frozen=True)
class StageTimes:
    """Where the wall time of a case or of a run went, stage by stage (seconds).

    ``seconds`` holds every stage of :data:`STAGES` and ``other``; they sum to ``wall_s``
    (each second in exactly one stage: the innermost open). A case's wall time runs from the
    end of the case before it in the same run to its own end, so a matrix's load and the
    float64 reference its backends share are charged to the first case that needed them."""

    wall_s: float
    """Seconds from the start to the end (a run: until its report was written)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Stage -> seconds spent in it and in no stage nested inside it, ``other`` last."""
    queue_s: float | None = None
    """A sweep case: seconds from its submission by the client to its start on a worker (the
    two machines' wall clocks; not in ``wall_s``); None outside a sweep."""
    transfer_s: float | None = None
    """A sweep case: seconds from its end on the worker to its result decoded by the client
    (not in ``wall_s``); None outside a sweep."""

    def of(self, name: str) -> float:
        """Seconds of stage ``name`` (0.0 when it was not recorded)."""
        return self.seconds.get(name, 0.0)

    def share(self, name: str) -> float:
        """Stage ``name``'s share of the wall time (0..1; 0.0 for a zero wall)."""
        return self.of(name) / self.wall_s if self.wall_s > 0 else 0.0


def summed(times: Iterable[StageTimes]) -> StageTimes | None:
    """The stage times of several cases added up (a sweep's cases, run on several workers at
    once: their wall times add to worker time, not to the sweep's wall time); queue and
    transfer times added over the cases that have them. None for none."""
    times = list(times)
    if not times:
        return None
    seconds = {name: sum(t.of(name) for t in times) for name in (*STAGES, OTHER)}
    queued = [t.queue_s for t in times if t.queue_s is not None]
    moved = [t.transfer_s for t in times if t.transfer_s is not None]
    return StageTimes(wall_s=sum(t.wall_s for t in times), seconds=seconds,
                      queue_s=sum(queued) if queued else None,
                      transfer_s=sum(moved) if moved else None)


#: :func:`where_time_went` names the stages of at least this share of the wall time, and
#: sums the rest.
MENTIONED_SHARE = 0.01


def where_time_went(times: StageTimes | None) -> str:
    """One line for the report: the stages that took at least :data:`MENTIONED_SHARE` of
    the time, largest first, with their share, the rest summed, e.g. ``Where the time went
    (11.3 s): timing 5.20 s (46 %), float64 reference 2.10 s (19 %), other 0.310 s (3 %),
    2 more stage(s) 0.0120 s together``; "" when no stage times were recorded. A run whose report
    stage is still 0 is being reported on: the line says the report's own time is in the
    results file."""
    if times is None:
        return ""
    spent = sorted(((s, n) for n, s in times.seconds.items() if s > 0), reverse=True)
    shown = [(s, n) for s, n in spent if times.share(n) >= MENTIONED_SHARE]
    parts = [f"{LABELS.get(n, n)} {_seconds(s)} ({100 * times.share(n):.0f} %)"
             for s, n in shown]
    rest = spent[len(shown):]
    if rest:
        parts.append(f"{len(rest)} more stage(s) {_seconds(sum(s for s, _ in rest))} "
                     f"together")
    line = f"Where the time went ({_seconds(times.wall_s)}): {', '.join(parts) or 'nothing'}"
    if times.of("report") == 0:
        line += ("; this report's own time is added to results.json after it is written "
                 "(`sparsescope results show results.json --stages`)")
    return line


def _seconds(value: float) -> str:
    """Seconds to 3 significant digits, never in exponent form (``0.00412 s``, ``5.20 s``,
    ``313 s``; at most 6 decimals)."""
    if value <= 0:
        return "0 s"
    if value < 1e-6:
        return "< 0.000001 s"
    if value >= 100:
        return f"{value:,.0f} s"
    decimals = min(6, 2 - math.floor(math.log10(value)))
    return f"{value:.{decimals}f} s"


class StageClock:
    """Wall time split into stages, each second charged to the innermost stage open then.

    ``now``: the clock (``time.perf_counter`` by default; a test injects a fake one). The
    wall time runs from construction. Thread-safe: a case run in a thread (a sweep's case
    timeout) charges the clock of the context it was started from."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._start = self._mark = now()
        self._open: list[str] = []
        self._spent = dict.fromkeys((*STAGES, OTHER), 0.0)
        self._split_at = self._start
        self._split_spent = dict(self._spent)

    def _charge(self, now: float) -> None:
        """The time since the last mark to the innermost open stage (``other`` if none)."""
        self._spent[self._open[-1] if self._open else OTHER] += now - self._mark
        self._mark = now

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time spent inside the ``with`` block is ``name``'s, less that of stages opened
        inside it."""
        if name not in self._spent or name == OTHER:
            raise ValueError(f"unknown stage {name!r}; stages: {', '.join(STAGES)}")
        with self._lock:
            self._charge(self._now())
            self._open.append(name)
        try:
            yield
        finally:
            with self._lock:
                self._charge(self._now())
                # the innermost stage of this name: an exception unwinding several stages
                # closes them in order; a thread left running (a timed-out case) may close
                # its own stages after the clock's owner stopped reading it
                for i in range(len(self._open) - 1, -1, -1):
                    if self._open[i] == name:
                        del self._open[i]
                        break

    def total(self) -> StageTimes:
        """Every stage from the clock's start until now."""
        with self._lock:
            now = self._now()
            self._charge(now)
            return _times(now - self._start, self._spent)

    def split(self) -> StageTimes:
        """The stages since the previous split (or the clock's start) until now: one case's
        share of a run, when taken as each case ends."""
        with self._lock:
            now = self._now()
            self._charge(now)
            spent = {n: s - self._split_spent[n] for n, s in self._spent.items()}
            times = _times(now - self._split_at, spent)
            self._split_at, self._split_spent = now, dict(self._spent)
            return times

    @contextmanager
    def active(self) -> Iterator[StageClock]:
        """This clock receives :func:`stage` marks made in this context (and in contexts
        copied from it) until the block ends."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


def _times(wall_s: float, spent: dict[str, float]) -> StageTimes:
    return StageTimes(wall_s=wall_s, seconds={n: spent[n] for n in (*STAGES, OTHER)})


_ACTIVE: contextvars.ContextVar[StageClock | None] = contextvars.ContextVar(
    "sparsescope_stage_clock", default=None)


def active_clock() -> StageClock | None:
    """The clock :func:`stage` charges in this context, or None."""
    return _ACTIVE.get()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def stage(name: str):
    """``with stage("timing"): ...``: charged to the active clock's stage ``name``; nothing
    when no clock is active."""
    clock = _ACTIVE.get()
    return _nothing() if clock is None else clock.stage(name)


def timed(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` whose every call is charged to stage ``name`` (of the clock active at the call);
    ``fn`` itself when it already is (wrapping twice would change nothing but the cost)."""
    if getattr(fn, "stage", None) == name:
        return fn

    def charged(*args: Any, **kwargs: Any) -> Any:
        with stage(name):
            return fn(*args, **kwargs)

    charged.stage = name  # type: ignore[attr-defined]
    charged.__wrapped__ = fn  # type: ignore[attr-defined]
    charged.__doc__ = fn.__doc__
    return charged
