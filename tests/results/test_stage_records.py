"""Stage times in results files (schema 3): they round-trip with the case and the run, a
file that breaks their rules is refused naming the JSON path, and a schema-2 file (no stage
times) reads as schema 3 with none."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from sparsescope.errors import ResultsFormatError
from sparsescope.results.io import read_runset, runset_from_dict, runset_to_dict, write_runset
from sparsescope.results.records import SCHEMA_VERSION
from sparsescope.stages import StageTimes
from sparsescope.sweep.worker import received_case

CASE_TIMES = StageTimes(wall_s=2.5, seconds={"reference": 0.5, "prepare": 0.25, "timing": 1.5,
                                             "other": 0.25}, queue_s=0.125, transfer_s=0.0625)
RUN_TIMES = StageTimes(wall_s=10.0, seconds={"device": 3.0, "timing": 4.0, "report": 2.0,
                                             "other": 1.0})


@pytest.fixture
def timed_runset(make_runset):
    runset = make_runset()
    cases = (dataclasses.replace(runset.cases[0], stages=CASE_TIMES), *runset.cases[1:])
    return dataclasses.replace(runset, cases=cases, stages=RUN_TIMES)


def test_stage_times_round_trip(timed_runset, tmp_path):
    back = read_runset(write_runset(tmp_path / "results.json", timed_runset))
    assert back.schema_version == SCHEMA_VERSION == 3
    assert back.stages == RUN_TIMES
    assert back.cases[0].stages == CASE_TIMES and back.cases[1].stages is None
    assert runset_to_dict(back) == runset_to_dict(timed_runset)


def test_a_schema_2_file_reads_with_no_stage_times(timed_runset):
    d = runset_to_dict(timed_runset)
    del d["stages"]
    for case in d["cases"]:
        case.pop("stages")
    d["schema_version"] = 2
    runset = runset_from_dict(d)
    assert runset.schema_version == 3 and runset.stages is None
    assert all(c.stages is None for c in runset.cases)
    assert runset.cases == timed_runset.cases  # stages are not compared; the rest is equal


@pytest.mark.parametrize(("path", "value", "message"), [
    (("stages", "seconds", "timing"), -1.0, "stages.seconds.timing: expected seconds >= 0"),
    (("stages", "seconds", "compile"), 0.0, "stages.seconds.compile: unknown stage"),
    (("stages", "wall_s"), 11.0,
     "stages.seconds: the stages add up to 10.0 s, not the wall time 11.0 s"),
    (("cases", 0, "stages", "queue_s"), "NaN", "cases[0].stages.queue_s: expected seconds"),
    (("cases", 0, "stages", "seconds", "timing"), "1.5 s",
     "cases[0].stages.seconds.timing: expected a number, got string '1.5 s'"),
])
def test_broken_stage_times_are_refused_naming_the_path(timed_runset, path, value, message):
    d = copy.deepcopy(runset_to_dict(timed_runset))
    target = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ResultsFormatError, match=message.replace("(", r"\(").replace(
            ")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        runset_from_dict(d)


def test_a_sweep_case_gets_its_transfer_time_in_the_client(timed_runset):
    """The worker's result says when it finished; the client adds the time until it decoded
    it (here 0.75 s on a frozen wall clock)."""
    case = dataclasses.replace(timed_runset.cases[0],
                               stages=dataclasses.replace(CASE_TIMES, transfer_s=None))
    data = {"case": runset_to_dict(dataclasses.replace(timed_runset, cases=(case,)))["cases"][0],
            "finished_at": 1000.0}
    received = received_case(data, now=lambda: 1000.75)
    assert received.stages.transfer_s == 0.75
    assert received.stages.queue_s == 0.125 and received.stages.wall_s == 2.5
