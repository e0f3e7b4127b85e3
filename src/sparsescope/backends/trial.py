"""The auto backends' trial: each shortlisted candidate prepared and timed on the device, the
fastest measured kept (:func:`time_shortlist`), a near tie re-timed before the choice.

The shortlist itself (who is timed) is ``select_predicted.shortlist``; the SpMV and SpMM auto
backends call :func:`time_shortlist` with their own ``prepare_and_time``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any

from sparsescope.backends.gpu_memory import free_device_memory, is_out_of_memory
from sparsescope.backends.select_predicted import Candidate, CandidatePrediction


@dataclass
class TrialResult:
    """The trial of a shortlist: the fastest candidate measured, with its backend and prepared
    call, the table with every trial time, and the trial in words."""

    candidate: Candidate
    backend: Any
    prepared: Any
    table: list[CandidatePrediction]
    words: str
    """``The n within m % of the fastest prediction, timed here (median of r calls): ...``"""


#: Trial times this close (the runner-up within this fraction of the fastest) are re-timed
#: before the choice: the auto backends' regret target is 5 %, and one trial pass of 10 calls
#: moved by more than that between two runs of one kernel (H200, a 5 us SpMM call).
TIE_MARGIN = 0.05
#: Extra timings of each of the two, alternated, when they tie (:func:`time_shortlist`).
TIE_ROUNDS = 2


def time_shortlist(short: list[CandidatePrediction], table: list[CandidatePrediction],
                   margin: float, repeats: int, prepare_and_time, retime=None) -> TrialResult:
    """Each candidate of ``short`` prepared and timed by ``prepare_and_time(candidate) ->
    (backend, prepared, ms)``; the fastest measured is kept, the others' prepared calls are
    dropped as the loop goes (their device memory with them).

    With ``retime(backend, prepared) -> ms`` the runner-up is kept too, and where it lies
    within :data:`TIE_MARGIN` of the fastest the two are timed :data:`TIE_ROUNDS` more times
    each, alternated (runner-up, fastest, runner-up, ...), so that a drift of the device
    during the trial falls on both; the one with the lower median of its timings is kept,
    and the table records those medians. Should a later candidate run out of device memory
    while the runner-up is kept, the runner-up is dropped, the memory given back, and the
    candidate prepared once more: the trial then goes on without the tie-break."""
    best = second = None
    timed = []
    for entry in short:
        try:
            backend, prepared, ms = prepare_and_time(entry.candidate)
        except Exception as exc:
            if second is None or not is_out_of_memory(exc):
                raise
            # the kept runner-up's device memory was the difference: give it back, go on
            # without the tie-break's second timing, as before it existed
            second, retime = None, None
            free_device_memory()
            backend, prepared, ms = prepare_and_time(entry.candidate)
        timed.append((entry.candidate, ms))
        current = (entry.candidate, backend, ms, prepared)
        if best is None or ms < best[2]:
            best, second = current, (best if retime is not None else None)
        elif retime is not None and (second is None or ms < second[2]):
            second = current
        del prepared, current
    trial_ms = {c.label: ms for c, ms in timed}
    trial = ", ".join(f"{c.label} {1e3 * ms:,.1f} us" for c, ms in timed)
    tie = ""
    if second is not None and second[2] <= best[2] * (1 + TIE_MARGIN):
        best, second, tie = _break_tie(best, second, retime, trial_ms)
    cand, backend, _, prepared = best
    del second
    return TrialResult(cand, backend, prepared,
                       [replace(p, trial_ms=trial_ms.get(p.candidate.label)) for p in table],
                       f"The {len(short)} within {100 * margin:.0f} % of the fastest "
                       f"prediction, timed here (median of {repeats} calls): {trial}{tie}")


def _break_tie(best: tuple, second: tuple, retime, trial_ms: dict) -> tuple:
    """(winner, loser, words) of two trial entries ``(candidate, backend, ms, prepared)``
    within :data:`TIE_MARGIN`: each re-timed :data:`TIE_ROUNDS` times, alternated; the lower
    median of each one's timings (its first included) wins. ``trial_ms`` gets the medians."""
    best_times, second_times = [best[2]], [second[2]]
    for _ in range(TIE_ROUNDS):
        second_times.append(retime(second[1], second[3]))
        best_times.append(retime(best[1], best[3]))
    best_ms, second_ms = statistics.median(best_times), statistics.median(second_times)
    trial_ms[best[0].label], trial_ms[second[0].label] = best_ms, second_ms
    winner, loser = (second, best) if second_ms < best_ms else (best, second)
    words = (f"; {best[0].label} and {second[0].label} within {100 * TIE_MARGIN:.0f} %, "
             f"timed {TIE_ROUNDS} more times each: medians "
             f"{1e3 * best_ms:,.1f} and {1e3 * second_ms:,.1f} us, {winner[0].label} kept")
    return winner, loser, words
