"""The stage clock (``sparsescope.stages``) on an injected fake time source: every second is
charged to exactly one stage (the innermost open), so the stages and ``other`` add up to the
wall time; splits partition a run into its cases; marks outside an active clock cost nothing."""

from __future__ import annotations

import ast
import concurrent.futures
import contextvars
import math
from pathlib import Path

import pytest

from sparsescope import stages
from sparsescope.stages import OTHER, STAGES, StageClock, StageTimes, stage, summed, timed


class FakeTime:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def _nonzero(times: StageTimes) -> dict[str, float]:
    return {k: v for k, v in times.seconds.items() if v}


def test_nested_stages_are_charged_to_the_innermost_only():
    now = FakeTime()
    clock = StageClock(now)
    now.advance(1.0)                        # other: nothing open yet
    with clock.stage("prepare"):
        now.advance(2.0)
        with clock.stage("sass_plan"):      # pauses prepare
            now.advance(3.0)
        now.advance(5.0)
    now.advance(1.0)                        # other again
    total = clock.total()
    assert _nonzero(total) == {"prepare": 7.0, "sass_plan": 3.0, OTHER: 2.0}
    assert total.wall_s == 12.0
    assert math.fsum(total.seconds.values()) == total.wall_s
    assert list(total.seconds) == [*STAGES, OTHER]  # every stage, in table order
    assert total.share("prepare") == pytest.approx(7 / 12)


def test_splits_partition_the_wall_time_into_cases():
    now = FakeTime()
    clock = StageClock(now)
    with clock.stage("device"):
        now.advance(4.0)
    assert _nonzero(clock.split()) == {"device": 4.0}  # before the first case
    cases = []
    for load, timing in ((0.5, 2.0), (0.0, 3.0)):
        if load:
            with clock.stage("load"):
                now.advance(load)
        with clock.stage("timing"):
            now.advance(timing)
        now.advance(0.25)                   # bookkeeping between cases
        cases.append(clock.split())
    with clock.stage("report"):
        now.advance(1.5)
    first, second = cases
    assert _nonzero(first) == {"load": 0.5, "timing": 2.0, OTHER: 0.25}
    assert first.wall_s == 2.75
    assert _nonzero(second) == {"timing": 3.0, OTHER: 0.25} and second.wall_s == 3.25
    total = clock.total()
    assert total.wall_s == 4.0 + 2.75 + 3.25 + 1.5
    for name in (*STAGES, OTHER):  # the run's total is the cases' stages plus its own
        own = {"device": 4.0, "report": 1.5}.get(name, 0.0)
        assert total.of(name) == pytest.approx(first.of(name) + second.of(name) + own)


def test_a_stage_left_by_an_exception_is_closed():
    now = FakeTime()
    clock = StageClock(now)
    with pytest.raises(RuntimeError), clock.stage("check"):
        now.advance(1.0)
        raise RuntimeError("backend failed")
    now.advance(2.0)
    assert _nonzero(clock.total()) == {"check": 1.0, OTHER: 2.0}


def test_marks_reach_only_the_active_clock():
    now = FakeTime()
    clock = StageClock(now)
    with stage("timing"):                   # no clock active: nothing charged
        now.advance(1.0)
    assert stages.active_clock() is None
    with clock.active():
        assert stages.active_clock() is clock
        with stage("timing"):
            now.advance(2.0)
    with stage("timing"):
        now.advance(4.0)
    assert _nonzero(clock.total()) == {"timing": 2.0, OTHER: 5.0}


def test_a_thread_run_in_a_copied_context_charges_the_clock():
    """A sweep case under --case-timeout runs in a thread started from a copy of the
    worker's context: its stages reach the case's clock."""
    now = FakeTime()
    clock = StageClock(now)

    def work() -> None:
        with stage("prepare"):
            now.advance(3.0)

    with clock.active(), concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(contextvars.copy_context().run, work).result()
        pool.submit(work).result()          # a bare thread has no clock: other
    assert _nonzero(clock.total()) == {"prepare": 3.0, OTHER: 3.0}


def test_an_unknown_stage_is_refused():
    clock = StageClock(FakeTime())
    for name in ("compile", OTHER):
        with pytest.raises(ValueError, match="unknown stage"), clock.stage(name):
            pass


def test_timed_charges_each_call_and_wraps_once():
    now = FakeTime()
    clock = StageClock(now)

    def refine(shape):
        now.advance(0.5)
        return shape + 1

    charged = timed(refine, "sass_plan")
    assert timed(charged, "sass_plan") is charged
    with clock.active():
        assert charged(1) == 2 and charged(2) == 3
    assert _nonzero(clock.total()) == {"sass_plan": 1.0}


def test_where_time_went_names_the_large_stages_and_sums_the_rest():
    times = StageTimes(wall_s=20.0, seconds={"device": 0.1, "timing": 12.0, "report": 5.0,
                                             "reference": 2.85, "check": 0.04, OTHER: 0.01})
    assert stages.where_time_went(times) == (
        "Where the time went (20.0 s): timing 12.0 s (60 %), report 5.00 s (25 %), "
        "float64 reference 2.85 s (14 %), 3 more stage(s) 0.150 s together")
    pending = StageTimes(wall_s=2.0, seconds={"timing": 2.0})
    assert stages.where_time_went(pending).endswith(
        "this report's own time is added to results.json after it is written "
        "(`sparsescope results show results.json --stages`)")
    assert stages.where_time_went(None) == ""


def test_summed_adds_cases_and_their_queue_and_transfer_times():
    a = StageTimes(wall_s=3.0, seconds={"timing": 2.0, OTHER: 1.0}, queue_s=0.5,
                   transfer_s=0.25)
    b = StageTimes(wall_s=1.0, seconds={"load": 1.0})
    total = summed([a, b])
    assert total.wall_s == 4.0 and _nonzero(total) == {"load": 1.0, "timing": 2.0, OTHER: 1.0}
    assert (total.queue_s, total.transfer_s) == (0.5, 0.25)
    assert summed([]) is None


def test_the_stage_module_imports_nothing_of_sparsescope():
    """Every stage marks time through it (matrices and timing included): it must stay a
    leaf of the layering."""
    tree = ast.parse(Path(stages.__file__).read_text())
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [n for n in names if n.split(".")[0] == "sparsescope"]
