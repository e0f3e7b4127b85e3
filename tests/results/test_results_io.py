"""Results JSON: exact round trip, validation naming the JSON path, atomic writes."""

from __future__ import annotations

import copy
import json
import math
import os

import pytest

from sparsescope import _atomic
from sparsescope.errors import ResultsFormatError
from sparsescope.results.io import (
    read_runset,
    record_from_dict,
    record_to_dict,
    runset_from_dict,
    runset_to_dict,
    write_runset,
)
from sparsescope.results.records import SCHEMA_VERSION


def _strict_loads(text: str):
    def refuse(token):
        raise AssertionError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def test_round_trip_is_exact(runset):
    data = _strict_loads(json.dumps(runset_to_dict(runset), allow_nan=False))
    back = runset_from_dict(data)
    assert back == runset
    # fields excluded from == are kept too
    assert back.device.sources == runset.device.sources
    assert back.ceilings.method == runset.ceilings.method
    assert back.cases[0].notes == {"kernel": "csrmv_v3_kernel"}
    assert back.cases[0].measurement.kernel_breakdown == (
        {"name": "csrmv_v3_kernel", "time_ms": 0.19, "pct": 96.7},)
    # tuples stay tuples, samples are kept in order, statistics are recomputable
    assert isinstance(back.cases, tuple) and isinstance(back.matrices, tuple)
    assert back.cases[0].measurement.samples_ms == (0.1964, 0.1971, 0.1958, 0.2012)
    assert back.cases[0].time_ms == pytest.approx(0.19675)
    halves = runset.cases[0].measurement.__class__(
        samples_ms=(0.1, 0.1, 0.2, 0.2), config=runset.cases[0].measurement.config, halves_at=2)
    assert record_from_dict(record_to_dict(halves), type(halves)) == halves
    assert back.cases[2].correctness.rel_err == math.inf
    assert back.ceilings.read_bw_gb_s is None
    assert back.matrices[1].analog_of == "webbase-1M" and back.matrices[0].analog_of is None


def test_dict_layout(runset):
    d = runset_to_dict(runset)
    assert d["schema_version"] == SCHEMA_VERSION
    assert d["cases"][2]["correctness"]["rel_err"] == "Infinity"
    assert d["cases"][0]["measurement"]["samples_ms"] == [0.1964, 0.1971, 0.1958, 0.2012]
    assert d["device"]["sources"]["sm_count"].startswith("seed 000")
    assert d["cases"][1]["measurement"] is None


def test_file_round_trip(runset, tmp_path):
    path = write_runset(tmp_path / "out" / "results.json", runset)
    assert path == tmp_path / "out" / "results.json"
    _strict_loads(path.read_text())
    assert read_runset(path) == runset


def test_gzipped_results_file_is_read(runset, tmp_path):
    import gzip

    path = write_runset(tmp_path / "results.json", runset)
    packed = tmp_path / "results.json.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert read_runset(packed) == runset
    packed.write_bytes(gzip.compress(path.read_bytes())[:40])  # cut short
    with pytest.raises(ResultsFormatError, match="results.json.gz: cannot read"):
        read_runset(packed)


def test_xz_results_file_is_written_and_read(runset, tmp_path):
    """``write_runset`` writes a ``.json.xz`` name compressed (xz, told by its first bytes) and
    ``read_runset`` reads it back whole; a damaged one is a format error naming the file and
    what is wrong, and the CLI prints it on one line (exit 5, no traceback)."""
    import lzma

    path = write_runset(tmp_path / "results.json.xz", runset)
    packed = path.read_bytes()
    assert packed.startswith(b"\xfd7zXZ\x00")
    assert json.loads(lzma.decompress(packed))["run_id"] == runset.run_id
    assert read_runset(path) == runset
    # the format is the file's, not its name's: xz under a .json name reads the same
    (tmp_path / "renamed.json").write_bytes(packed)
    assert read_runset(tmp_path / "renamed.json") == runset
    path.write_bytes(packed[: len(packed) // 2])  # cut short
    with pytest.raises(ResultsFormatError,
                       match=r"results.json.xz: cannot read: damaged xz data \(Compressed data "
                             r"ended before the end-of-stream marker"):
        read_runset(path)
    path.write_bytes(packed[:6] + bytes(len(packed) - 6))  # the header kept, the rest zeros
    with pytest.raises(ResultsFormatError, match=r"results.json.xz: cannot read: damaged xz"):
        read_runset(path)


def test_damaged_xz_results_file_at_the_cli(runset, tmp_path, capsys):
    from sparsescope.cli import main

    path = write_runset(tmp_path / "results.json.xz", runset)
    path.write_bytes(path.read_bytes()[:100])
    assert main(["results", "show", str(path)], modules=["sparsescope.cli.results_cmd"]) == 5
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"sparsescope: error: {path}: cannot read: damaged xz data (Compressed data ended "
        "before the end-of-stream marker was reached)"]


def mutate(d, path, value):
    """Set (or with value=KeyError, delete) the entry at a path like ('cases', 1, 'outcome')."""
    target = d
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value


@pytest.mark.parametrize("path, value, message", [
    (("cases", 1, "outcome"), "great",
     "cases[1].outcome: expected one of ok/skipped/failed, got 'great'"),
    (("schema_version",), 4, "schema_version: expected 3, got 4"),
    (("schema_version",), KeyError, "schema_version: expected 3, got None"),
    (("provenance", "git_commit"), KeyError, "provenance.git_commit: required field missing"),
    (("matrices", 0, "stats", "rows"), "12",
     "matrices[0].stats.rows: expected an integer, got string '12'"),
    (("matrices", 0, "stats", "rows"), 12.0,
     "matrices[0].stats.rows: expected an integer, got float 12.0"),
    (("cases", 0, "measurement", "samples_ms", 1), "fast",
     "cases[0].measurement.samples_ms[1]: expected a number, got string 'fast'"),
    (("cases", 0, "measurement", "samples_ms"), [],
     "cases[0].measurement.samples_ms: expected at least one sample"),
    (("cases", 0, "measurement"), None,
     "cases[0].measurement: an ok case must carry its measurement"),
    (("cases", 0, "y_read"), 1, "cases[0].y_read: expected a boolean, got int 1"),
    (("device", "kind"), "tpu", "device.kind: expected one of gpu/cpu, got 'tpu'"),
    (("device", "sources", "sm_count"), 132,
     "device.sources.sm_count: expected a string, got int 132"),
    (("timing", "statistic"), "p90",
     "timing.statistic: expected one of median/mean/min, got 'p90'"),
    (("cases",), {}, "cases: expected an array, got object"),
    (("cases", 2), "failed", "cases[2]: expected an object (CaseResult), got string 'failed'"),
    (("cases", 0, "foo"), 1, "cases[0]: unexpected field 'foo' in CaseResult"),
    (("scale",), True, "scale: expected a number, got boolean True"),
    (("suite",), None, "suite: expected a string, got null"),
    (("cases", 2, "correctness", "rel_err"), "huge",
     "cases[2].correctness.rel_err: expected a number, got string 'huge'"),
])
def test_validation_names_the_json_path(runset, path, value, message):
    d = copy.deepcopy(runset_to_dict(runset))
    mutate(d, path, value)
    with pytest.raises(ResultsFormatError) as info:
        runset_from_dict(d)
    assert str(info.value) == message


def test_top_level_must_be_an_object():
    with pytest.raises(ResultsFormatError,
                       match="expected a JSON object at the top level, got array"):
        runset_from_dict([1, 2])


def test_optional_fields_with_defaults_may_be_absent(runset):
    d = runset_to_dict(runset)
    del d["reference_gpu"], d["cases"][1]["notes"], d["cases"][1]["y_read"]
    back = runset_from_dict(d)
    assert back.reference_gpu == "H200" and back.cases[1].notes == {}


def test_read_errors_name_the_file(runset, tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(ResultsFormatError, match=f"^{missing}: no such results file$"):
        read_runset(missing)
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1,\n  "run_id": }')
    with pytest.raises(ResultsFormatError, match=rf"^{bad}: not JSON \(line 2, column 13"):
        read_runset(bad)
    wrong = tmp_path / "wrong.json"
    d = runset_to_dict(runset)
    d["cases"][0]["outcome"] = "great"
    wrong.write_text(json.dumps(d))
    with pytest.raises(ResultsFormatError) as info:
        read_runset(wrong)
    assert str(info.value) == (
        f"{wrong}: cases[0].outcome: expected one of ok/skipped/failed, got 'great'")
    assert info.value.exit_code == 5


def test_failed_serialisation_leaves_the_old_file_intact(runset, tmp_path):
    path = write_runset(tmp_path / "results.json", runset)
    before = path.read_bytes()
    broken = runset.__class__(**{**runset.__dict__, "cases": (
        runset.cases[0].__class__(**{**runset.cases[0].__dict__, "notes": {"bad": {1, 2}}}),)})
    with pytest.raises(TypeError):
        write_runset(path, broken)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["results.json"]


def test_a_crash_while_writing_leaves_the_old_file_intact(runset, tmp_path, monkeypatch):
    path = write_runset(tmp_path / "results.json", runset)
    before = path.read_bytes()

    def crash(fd):
        raise OSError("disk full")

    monkeypatch.setattr(_atomic.os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        write_runset(path, runset.__class__(**{**runset.__dict__, "run_id": "other"}))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["results.json"]


@pytest.mark.parametrize("suffix", [".json", ".json.gz", ".json.xz"])
def test_deeply_nested_json_is_a_results_format_error(tmp_path, suffix):
    """A results file nested deeper than the decoder's recursion gave a RecursionError
    traceback (issue 33); it is a format error naming the file, exit 5."""
    import gzip
    import lzma

    from sparsescope.cli import main

    text = "[" * 100_000 + "]" * 100_000
    path = tmp_path / f"deep{suffix}"
    if suffix.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    elif suffix.endswith(".xz"):
        path.write_bytes(lzma.compress(text.encode()))
    else:
        path.write_text(text)
    with pytest.raises(ResultsFormatError, match="nested deeper than"):
        read_runset(path)
    assert main(["results", "show", str(path)]) == 5
