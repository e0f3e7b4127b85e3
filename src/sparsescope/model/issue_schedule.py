"""One loop iteration's time when a warp issues in order: the loads of its body, which of them
each waiting instruction needs, and how long the iteration lasts for given latencies.

A warp stops at the first instruction whose operand is a load still in flight; nothing behind
it issues until that load returns. So the iteration time is not "dependent chain x latency"
alone: it is the walk of the body in issue order (``sass.issue_order`` builds the steps from a
kernel's SASS)::

    t = 0; for iteration 1 .. WARM + SPAN, for each step in issue order:
        t = max(t, arrival of every load the step reads)       (this or the last iteration's)
        arrival(load issued now) = t + latency(load)           (stream: DRAM, gather: x round)
    T = (t after the last iteration - t after iteration WARM) / SPAN

the steady state of the recurrence, reached once the warm-up transient is over: a column
loaded one iteration ahead (``LDG x[c_prev]; LDG c_next; FADD s, x``) makes each iteration wait
350 ns for its column and hides the gather's 150 ns behind it. Each time ``t`` moves the warp
made a *stop*; the load that arrived last names its kind (stops per iteration are averaged over
the same span).
Hand check (:func:`IssueSchedule.walk`): ``LDG c; LDG x[c]; FADD s, x`` with stream latency
350 ns and gather latency 150 ns: the gather waits for ``c`` (t = 350), the add for ``x``
(t = 500): T = 500 ns, one stream and one gather stop.

**Issue.** A warp also spends time on the instructions themselves: it issues at most one a
cycle, and one that reads the result of the instruction before it waits for that pipeline's
latency. Where the steps carry how many instructions the warp issues before each of them
(``IssueStep.issued``, from the SASS; the body's rest after the last step: ``tail``), each
takes ``issue_ns`` on the warp's path, overlapping the loads in flight but not a stop::

    t = max(t + issued x issue_ns, arrival of every load the step reads)
    (after the last step: t += tail x issue_ns)

A stop is then a wait beyond the issue time. Hand check: ``LDG c; LDG x[c]; FADD s, x`` issued
one instruction each, 5 ns an instruction, streams 350 ns, gathers 150 ns: c leaves at 5 and
arrives at 355, the gather issues at 355 (and arrives at 505), the add at 505: T = 505 ns.
"""

from __future__ import annotations

from dataclasses import dataclass

STREAM, GATHER = "stream", "gather"
#: Iterations walked before the span measured (the transient from an empty pipeline), and the
#: span averaged: a multiple of every short period (1, 2, 4, 8 iterations) the loads can set.
WARM_ITERATIONS, SPAN_ITERATIONS = 16, 64


@dataclass(frozen=True)
class IssueStep:
    """One instruction of the body that issues a load or reads one."""

    load: int = -1
    """The load this step issues (an index into :attr:`IssueSchedule.kinds`), -1 for none."""
    reads: tuple[int, ...] = ()
    """Loads of this iteration (issued by an earlier step) whose results it reads."""
    carried: tuple[int, ...] = ()
    """Loads of the previous iteration (issued at this step or after it in the body) whose
    results it reads: the software pipeline."""
    issued: int = 0
    """Warp instructions the warp issues from the step before (the loop's top for the first
    step) up to and including this one (SASS, NOPs left out); 0: not counted (issue taken as
    free, the walk of the loads alone)."""


@dataclass(frozen=True)
class IssueWalk:
    """The steady state of one iteration for given latencies."""

    iteration_ns: float
    stream_stops: float
    """Stops per iteration waiting for a stream load (averaged over the span)."""
    gather_stops: float
    """Stops per iteration waiting for a gather."""


@dataclass(frozen=True)
class IssueSchedule:
    """The every-iteration path of a loop body as issue steps, and its loads' kinds."""

    steps: tuple[IssueStep, ...]
    kinds: tuple[str, ...]
    """Per load: :data:`STREAM` (columns, values, pointers) or :data:`GATHER` (x)."""
    source: str = ""
    """Where the steps were read (``SASS of spmv_sell<...> (sm_90, nvrtc 13.5)``)."""
    tail: int = 0
    """Warp instructions of the body after its last step, up to the back edge (SASS)."""

    @property
    def instructions(self) -> int:
        """Warp instructions of the walked body: the steps' ``issued`` and the ``tail`` (0 for a
        schedule that does not count them)."""
        return sum(step.issued for step in self.steps) + self.tail

    def stops(self) -> IssueWalk:
        """The walk with one unit of latency for every load: how many times an iteration
        waits, whatever the device (``spmv_sell<float, 0, 1, 1, 2, 8, 1>``: 3 stream and 3
        gather stops where the chain count says 2 rounds)."""
        return self.walk(1.0, 1.0)

    def walk(self, stream_ns: float, gather_ns: float,
             reuse_ns: float | None = None, issue_ns: float = 0.0) -> IssueWalk:
        """The iteration's steady-state length and stops (module docstring), stream loads
        taking ``stream_ns`` and gathers ``gather_ns``. ``reuse_ns``: the latency of a stream
        load issued after the iteration's first stop, when the loads before that stop opened
        every memory unit the iteration's streams read (a lane walking its own row: the
        later loads read what the first ones brought on chip); None: ``stream_ns`` for all.
        ``issue_ns``: the warp's time per instruction it issues (module docstring, Issue); 0,
        or steps that count none, leave the walk of the loads alone.
        Hand check: ``LDG c; FADD s, c; LDG v; FADD s, v`` with 350 ns streams, reuse 150 ns:
        350 + 150 = 500 ns (700 ns without reuse)."""
        arrival = [float("-inf")] * len(self.kinds)  # of each load's latest issue
        t, start, stops = 0.0, 0.0, {STREAM: 0, GATHER: 0}
        for iteration in range(WARM_ITERATIONS + SPAN_ITERATIONS):
            if iteration == WARM_ITERATIONS:
                start, stops = t, {STREAM: 0, GATHER: 0}
            opened = False   # has this iteration stopped yet (its first loads are out)
            for step in self.steps:
                # the instructions up to this one issue first, one issue_ns each
                t += step.issued * issue_ns
                # reads: issued earlier this iteration; carried: issued last iteration, not yet
                # issued again (they lie at or after this step) -- both are the latest issue
                ready, last = t, -1
                for d in step.reads + step.carried:
                    if arrival[d] > ready:
                        ready, last = arrival[d], d
                if last >= 0:
                    stops[self.kinds[last]] += 1
                    t = ready
                    opened = True
                if step.load >= 0:
                    if self.kinds[step.load] == GATHER:
                        latency = gather_ns
                    else:
                        latency = reuse_ns if opened and reuse_ns is not None else stream_ns
                    arrival[step.load] = t + latency
            t += self.tail * issue_ns
        return IssueWalk(iteration_ns=(t - start) / SPAN_ITERATIONS,
                         stream_stops=stops[STREAM] / SPAN_ITERATIONS,
                         gather_stops=stops[GATHER] / SPAN_ITERATIONS)
