"""Metric groups and stall names against the real fixture headers; CSV number and unit parsing."""

from __future__ import annotations

import csv
import math

import pytest

from sparsescope.profile import metrics as M
from sparsescope.profile.units import parse_number, to_base_unit


def _raw_header(path):
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    return next(csv.reader([lines[start]]))


def test_every_group_metric_is_a_real_ncu_name(h200_fixtures):
    known = set(_raw_header(h200_fixtures / "ncu_metrics_cant_analog.csv"))
    known |= set(_raw_header(h200_fixtures / "spmv_full_raw.csv"))
    for group in M.METRIC_GROUPS.values():
        missing = [m for m in group.metrics if m not in known]
        assert not missing, f"group {group.name}: {missing}"


def test_group_sections_are_real_section_identifiers(h200_fixtures):
    # the details pages name each rule's section by identifier
    seen = set()
    for name in ("spmv_full_details.csv", "scalar_details.csv"):
        for row in csv.reader((h200_fixtures / name).open()):
            if len(row) > 15 and row[15] and row[0] != "ID":
                seen.add(row[11])
    for group in M.METRIC_GROUPS.values():
        assert set(group.sections) <= seen, group.name


def test_stall_reasons_match_the_fixture_and_round_trip(h200_fixtures):
    header = _raw_header(h200_fixtures / "spmv_full_raw.csv")
    reasons = [M.stall_reason(h) for h in header if M.stall_reason(h)]
    assert tuple(reasons) == M.STALL_REASONS
    for reason in M.STALL_REASONS:
        assert M.stall_reason(M.stall_metric(reason)) == reason
        assert reason in M.STALL_LABELS
    assert M.stall_reason("smsp__average_warp_latency_per_inst_issued.ratio") is None


def test_source_and_pcsamp_names_map_to_known_reasons(h200_fixtures):
    rows = list(csv.reader((h200_fixtures / "scalar_source_sass.csv").open()))
    columns = [c for c in rows[1] if c.startswith("stall_")]
    assert len(columns) == 36
    for column in columns:
        reason, not_issued = M.source_column_reason(column)
        assert reason in M.STALL_REASONS, column
        assert not_issued == column.endswith("(Not Issued)")
    assert M.source_column_reason("stall_long_sb") == ("long_scoreboard", False)
    assert M.source_column_reason("stall_sleeping (Not Issued)") == ("sleeping", True)
    assert M.source_column_reason("Address") is None
    assert M.pcsamp_reason("smsp__pcsamp_warps_issue_stalled_no_instructions_not_issued") == (
        "no_instruction", True)
    assert M.pcsamp_reason("smsp__pcsamp_warps_issue_stalled_wait") == ("wait", False)
    assert M.pcsamp_reason("smsp__pcsamp_sample_count") is None


def test_group_metrics_union_keeps_order_and_drops_repeats():
    metrics, sections = M.group_metrics(["launch", "occupancy"])
    assert metrics[0] == "launch__block_size"
    assert metrics.count(M.REGISTERS_PER_THREAD) == 1  # in both groups
    assert sections == ("LaunchStats", "Occupancy")
    with pytest.raises(KeyError):
        M.group_metrics(["stall"])


@pytest.mark.parametrize("text, expected", [
    ("1,305", 1305.0), ("6,138.67", 6138.67), ("0", 0.0), ("-2.5", -2.5), (" 42 ", 42.0),
    ("PolicySpread", None), ("", None), ("(512, 1, 1)", None),
])
def test_parse_number(text, expected):
    assert parse_number(text) == expected


def test_parse_number_nan():
    assert math.isnan(parse_number("nan"))


@pytest.mark.parametrize("value, unit, expected, base", [
    (27.84, "us", 27840.0, "ns"),
    (49.121792, "Mbyte", 49121792.0, "byte"),
    (6.016, "Kbyte", 6016.0, "byte"),
    (1.844478, "Tbyte/s", 1.844478e12, "byte/s"),
    (38.426628, "Gbyte/s", 38.426628e9, "byte/s"),
    (1.504, "Kbyte/cycle", 1504.0, "byte/cycle"),
    (12.67, "Kbyte/block", 12670.0, "byte/block"),
    (3.195498, "Ghz", 3.195498e9, "hz"),
    (56.297629, "sector/ns", 56.297629e9, "sector/s"),
    (754.310345, "sector/us", 754.310345e6, "sector/s"),
    (1.5, "sector/ms", 1500.0, "sector/s"),
    (132.0, "SM", 132.0, "SM"),
    (14.54, "cycle", 14.54, "cycle"),
    (2.03, "inst/cycle", 2.03, "inst/cycle"),
    (5.0, "", 5.0, ""),
])
def test_to_base_unit(value, unit, expected, base):
    got, got_unit = to_base_unit(value, unit)
    assert got_unit == base
    assert got == pytest.approx(expected, rel=1e-12)
