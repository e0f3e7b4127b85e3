"""Schema 2's typed case records (params, derived, traffic, counters) through JSON, and schema-1
files (op parameters as ``op.*`` note strings) read back as the current schema by
``results.migrate``."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from sparsescope._compressed import read_json
from sparsescope.errors import ResultsFormatError
from sparsescope.model.traffic import Traffic, csr_slice_traffic
from sparsescope.ops.params import (
    SliceDerived,
    SliceParams,
    SpmmDerived,
    SpmmParams,
    SpmvDerived,
    SpmvParams,
)
from sparsescope.results.io import read_runset, runset_from_dict, runset_to_dict, write_runset
from sparsescope.results.records import SCHEMA_VERSION, CaseCounters, CaseResult

RESULTS = Path(__file__).resolve().parents[2] / "results" / "h200"
# spmm and slice are committed compacted (``results compact``: .json.xz, floats to 7 digits)
SCHEMA1_FILES = {"seed6": RESULTS / "seed6" / "results.json",
                 "spmm": RESULTS / "spmm" / "results.json.xz",
                 "slice": RESULTS / "slice" / "results.json.xz"}


def _schema1(name: str) -> dict:
    path = SCHEMA1_FILES[name]
    if not path.is_file():
        pytest.skip(f"{path} is not in this checkout")
    data = read_json(path)
    assert data["schema_version"] == 1  # the committed run predates the typed records
    return data


def _round_trips(runset, tmp_path):
    path = write_runset(tmp_path / "results.json", runset)
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION == 3
    back = read_runset(path)
    assert back == runset
    assert [c.notes for c in back.cases] == [c.notes for c in runset.cases]  # compare=False
    assert runset_to_dict(back) == runset_to_dict(runset)
    return back


def test_schema1_spmm_file_reads_with_typed_params_and_round_trips(tmp_path):
    old = _schema1("spmm")
    runset = read_runset(SCHEMA1_FILES["spmm"])
    assert runset.schema_version == 3
    assert len(runset.cases) == len(old["cases"]) > 0
    for before, case in zip(old["cases"], runset.cases, strict=True):
        notes = before["notes"]
        assert case.op == "spmm"
        assert isinstance(case.params, SpmmParams) and isinstance(case.derived, SpmmDerived)
        assert type(case.params.k) is int and case.params.k == int(notes["op.k"])
        assert case.params.layout == notes["op.layout"]
        assert case.derived.condition == float(notes["op.condition"])
        assert not any(key.startswith("op.") for key in case.notes)
        # the backend's free-text facts stay
        assert case.notes == {k: v for k, v in notes.items() if not k.startswith("op.")}
    assert {c.params.k for c in runset.cases} >= {1, 8}
    back = _round_trips(runset, tmp_path)
    assert back.cases[0].params == runset.cases[0].params


def test_schema1_slice_file_reads_with_typed_params_and_derived_counts(tmp_path):
    old = _schema1("slice")
    runset = read_runset(SCHEMA1_FILES["slice"])
    for before, case in zip(old["cases"], runset.cases, strict=True):
        notes = before["notes"]
        assert isinstance(case.params, SliceParams) and isinstance(case.derived, SliceDerived)
        assert case.params.rows_selected == int(notes["op.rows_selected"])
        assert case.params.weights == notes["op.weights"]
        assert case.params.out_of_range == notes["op.out_of_range"]
        assert case.derived == SliceDerived(
            nnz_selected=int(notes["op.nnz_selected"]), sectors_32b=int(notes["op.sectors_32b"]),
            lines_128b=int(notes["op.lines_128b"]), invalid_rows=int(notes["op.invalid_rows"]))
        assert not any(key.startswith("op.") for key in case.notes)
    _round_trips(runset, tmp_path)


def test_schema1_spmv_file_keeps_its_cancellation_factor(tmp_path):
    old = _schema1("seed6")
    runset = read_runset(SCHEMA1_FILES["seed6"])
    scaled = 0
    for before, case in zip(old["cases"], runset.cases, strict=True):
        assert case.params == SpmvParams() and isinstance(case.derived, SpmvDerived)
        note = before["notes"].get("tolerance_scaled_by_cancellation")
        if note is None:
            assert case.derived.cancellation == 1.0
        else:  # "kappa 217": the typed field now, not a note
            scaled += 1
            assert case.derived.cancellation == float(note.removeprefix("kappa "))
            assert "tolerance_scaled_by_cancellation" not in case.notes
    assert scaled > 0
    _round_trips(runset, tmp_path)


def test_schema1_counters_move_out_of_the_notes(runset):
    d = runset_to_dict(runset)
    d["schema_version"] = 1
    del d["cases"][0]["params"], d["cases"][0]["derived"], d["cases"][0]["counters"]
    d["cases"][0]["notes"] = {"kernel": "csrmv_v3_kernel", "achieved_occupancy_pct": "61.5",
                              "cpi": "4.25", "tolerance_scaled_by_cancellation": "kappa 14.6"}
    case = runset_from_dict(d).cases[0]
    assert case.counters == CaseCounters(achieved_occupancy_pct=61.5, cpi=4.25)
    assert case.derived.cancellation == pytest.approx(14.6)
    assert case.notes == {"kernel": "csrmv_v3_kernel"}


def _typed_cases(ok: CaseResult) -> tuple[CaseResult, ...]:
    spmm_traffic = Traffic(format="CSR INT32", values_bytes=400, indices_bytes=400,
                           row_meta_bytes=44, x_bytes=2048, y_read_bytes=0,
                           y_written_bytes=2560, flops=12800)
    slice_params = SliceParams(rows_selected=3, rows=(3, 3, 49), weights="scalar",
                               out_of_range="zero")
    return (
        dataclasses.replace(ok, matrix="m", backend="spmm-scipy-cpu", op="spmm",
                            params=SpmmParams(k=64, layout="col"),
                            derived=SpmmDerived(condition=3.25), traffic=spmm_traffic,
                            counters=CaseCounters(achieved_occupancy_pct=48.0, cpi=None,
                                                  long_scoreboard_cycles=12.5),
                            notes={"kernel": "csrmm"}),
        dataclasses.replace(ok, matrix="m", backend="slice-scipy-cpu", op="slice",
                            params=slice_params,
                            derived=SliceDerived(nnz_selected=17, sectors_32b=9, lines_128b=4,
                                                 invalid_rows=1),
                            traffic=csr_slice_traffic(3, 40, 17, weights="scalar"),
                            notes={}),
        CaseResult(matrix="m", backend="slice-cupy-i32", op="slice", outcome="skipped",
                   reason="backend unavailable: cupy is not installed",
                   params=SliceParams(rows_selected=16), derived=SliceDerived()),
    )


def test_typed_case_records_round_trip(runset, tmp_path):
    runset = dataclasses.replace(runset, cases=_typed_cases(runset.cases[0]))
    back = _round_trips(runset, tmp_path)
    spmm, sliced, skipped = back.cases
    assert spmm.params == SpmmParams(k=64, layout="col") and type(spmm.params.k) is int
    assert spmm.derived == SpmmDerived(condition=3.25)
    assert spmm.traffic.total_bytes == 400 + 400 + 44 + 2048 + 2560 and spmm.traffic.flops == 12800
    assert spmm.counters.cpi is None and spmm.counters.long_scoreboard_cycles == 12.5
    assert sliced.params.rows == (3, 3, 49) and isinstance(sliced.params.rows, tuple)
    assert sliced.derived.invalid_rows == 1 and sliced.traffic.format == "CSR INT32 row slice"
    assert skipped.params.rows is None and skipped.traffic is None and skipped.counters is None
    d = runset_to_dict(runset)
    assert d["cases"][0]["params"] == {"k": 64, "layout": "col"}
    assert d["cases"][1]["params"]["rows"] == [3, 3, 49]
    assert d["cases"][1]["derived"] == {"nnz_selected": 17, "sectors_32b": 9, "lines_128b": 4,
                                        "invalid_rows": 1}


def test_typed_params_are_validated_by_the_ops_record(runset):
    runset = dataclasses.replace(runset, cases=_typed_cases(runset.cases[0]))
    d = runset_to_dict(runset)
    bad = copy.deepcopy(d)
    bad["cases"][0]["params"]["k"] = "64"
    with pytest.raises(ResultsFormatError,
                       match=r"^cases\[0\]\.params\.k: expected an integer, got string '64'$"):
        runset_from_dict(bad)
    bad = copy.deepcopy(d)
    bad["cases"][0]["params"]["rows_selected"] = 3  # a slice parameter on an spmm case
    with pytest.raises(ResultsFormatError,
                       match=r"^cases\[0\]\.params: unexpected field 'rows_selected' in "
                             r"SpmmParams$"):
        runset_from_dict(bad)


def test_an_unknown_op_is_named_by_its_json_path(runset):
    d = runset_to_dict(runset)
    d["cases"][0]["op"] = "spgemm"
    with pytest.raises(ResultsFormatError) as info:
        runset_from_dict(d)
    assert str(info.value) == "cases[0].op: expected one of spmv/spmm/slice, got 'spgemm'"
    assert str(info.value).startswith("cases[0].op")


def test_a_case_built_without_params_gets_its_ops_records_and_round_trips(runset, tmp_path):
    bare = CaseResult(matrix="m", backend="spmm-scipy-cpu", op="spmm", outcome="skipped",
                      reason="no")
    assert bare.params == SpmmParams() and bare.derived == SpmmDerived()
    assert runset.cases[0].params == SpmvParams() and runset.cases[0].derived == SpmvDerived()
    _round_trips(dataclasses.replace(runset, cases=(*runset.cases, bare)), tmp_path)
