"""The auto trial's tie-break (``trial.time_shortlist`` with ``retime``): a
runner-up within TIE_MARGIN of the fastest is re-timed with it, alternated, and the lower
median of each one's timings wins; further apart, or without ``retime``, the first pass
decides as before."""

from __future__ import annotations

import pytest

from sparsescope.backends.select_predicted import Candidate, CandidatePrediction
from sparsescope.backends.trial import TIE_MARGIN, TIE_ROUNDS, time_shortlist


def _shortlist(*names):
    table = [CandidatePrediction(Candidate(name), predicted_ms=1.0) for name in names]
    return table, list(table)


class _Trial:
    """A fake device: each candidate's first timing, then its re-timings in order; records
    the order of every timing and which prepared calls are still alive."""

    def __init__(self, first: dict[str, float], again: dict[str, list[float]]):
        self.first, self.again, self.order = first, {k: list(v) for k, v in again.items()}, []

    def prepare_and_time(self, cand):
        self.order.append(cand.backend)
        return f"backend {cand.backend}", {"name": cand.backend}, self.first[cand.backend]

    def retime(self, backend, prepared):
        self.order.append(prepared["name"])
        return self.again[prepared["name"]].pop(0)


def test_a_tie_is_re_timed_alternately_and_the_lower_median_wins():
    table, short = _shortlist("a", "b", "c")
    # first pass: a 1.00 ms, b 1.03 ms (within 5 %), c 2.0; again: a slower, b steady
    trial = _Trial({"a": 1.00, "b": 1.03, "c": 2.0},
                   {"a": [1.10, 1.12], "b": [1.02, 1.04]})
    result = time_shortlist(short, table, 0.3, 10, trial.prepare_and_time, trial.retime)
    assert result.candidate.backend == "b"
    assert result.prepared == {"name": "b"} and result.backend == "backend b"
    # b (the runner-up) first, then a, TIE_ROUNDS times
    assert trial.order == ["a", "b", "c"] + ["b", "a"] * TIE_ROUNDS
    times = {p.candidate.backend: p.trial_ms for p in result.table}
    assert times == {"a": pytest.approx(1.10), "b": pytest.approx(1.03), "c": 2.0}
    assert "a and b within 5 %, timed 2 more times each: medians 1,100.0 and 1,030.0 us" \
        in result.words and result.words.endswith("b kept")


def test_the_fastest_keeps_a_tie_it_still_wins():
    table, short = _shortlist("a", "b")
    trial = _Trial({"a": 1.00, "b": 1.01}, {"a": [1.0, 1.0], "b": [1.05, 1.01]})
    result = time_shortlist(short, table, 0.3, 10, trial.prepare_and_time, trial.retime)
    assert result.candidate.backend == "a" and result.words.endswith("a kept")


def test_a_runner_up_beyond_the_margin_is_not_re_timed():
    table, short = _shortlist("a", "b")
    slower = 1.0 * (1 + TIE_MARGIN) + 0.01
    trial = _Trial({"a": 1.0, "b": slower}, {})
    result = time_shortlist(short, table, 0.3, 10, trial.prepare_and_time, trial.retime)
    assert result.candidate.backend == "a" and trial.order == ["a", "b"]
    assert "within 5 %, timed" not in result.words


def test_without_retime_the_first_pass_decides():
    table, short = _shortlist("a", "b")
    trial = _Trial({"a": 1.0, "b": 1.01}, {})
    result = time_shortlist(short, table, 0.3, 10, trial.prepare_and_time)
    assert result.candidate.backend == "a" and trial.order == ["a", "b"]


def test_the_runner_up_is_the_second_fastest_whatever_the_order():
    """The fastest found last: the one it displaced becomes the runner-up, not the slowest."""
    table, short = _shortlist("c", "b", "a")
    trial = _Trial({"c": 1.5, "b": 1.02, "a": 1.0}, {"a": [1.2, 1.2], "b": [1.0, 1.0]})
    result = time_shortlist(short, table, 0.3, 10, trial.prepare_and_time, trial.retime)
    assert trial.order == ["c", "b", "a", "b", "a", "b", "a"]
    assert result.candidate.backend == "b"


def test_out_of_memory_with_a_runner_up_kept_drops_it_and_goes_on():
    """The third candidate's first prepare runs out of device memory while two prepared calls
    are alive: the runner-up is let go, the third prepared again, and the trial ends without
    the tie-break (no re-timing, though a and b lie within 5 %)."""
    table, short = _shortlist("a", "b", "c")
    trial = _Trial({"a": 1.0, "b": 1.01, "c": 1.5}, {})
    failed = []

    def prepare_and_time(cand):
        if cand.backend == "c" and not failed:
            failed.append(cand.backend)
            raise RuntimeError("cudaErrorMemoryAllocation: out of memory")
        return trial.prepare_and_time(cand)

    result = time_shortlist(short, table, 0.3, 10, prepare_and_time, trial.retime)
    assert failed == ["c"] and trial.order == ["a", "b", "c"]
    assert result.candidate.backend == "a" and "within 5 %, timed" not in result.words


def test_other_errors_and_out_of_memory_without_a_runner_up_propagate():
    table, short = _shortlist("a", "b")

    def broken(cand):
        raise RuntimeError("cudaErrorMemoryAllocation: out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):   # nothing kept to give back
        time_shortlist(short, table, 0.3, 10, broken, lambda b, p: 1.0)
    trial = _Trial({"a": 1.0}, {})

    def second_fails(cand):
        if cand.backend == "b":
            raise ValueError("a bad plan")
        return trial.prepare_and_time(cand)

    with pytest.raises(ValueError, match="a bad plan"):
        time_shortlist(short, table, 0.3, 10, second_fails, trial.retime)
