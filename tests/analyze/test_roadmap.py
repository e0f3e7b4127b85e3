"""Gain models against hand-computed values; ranking, grouping and caps."""

from __future__ import annotations

import pytest

from sparsescope.analyze.api import analyze_evidence
from sparsescope.analyze.records import RoadmapItem
from sparsescope.analyze.roadmap import (
    amdahl,
    bytes_removed_speedup,
    cap_at_floor,
    combine,
    issue_reduced_speedup,
    littles_law_speedup,
    stall_removed_speedup,
    waves_speedup,
)


def test_amdahl():
    assert amdahl(2.0, 1.0) == 2.0
    assert amdahl(2.0, 0.5) == pytest.approx(1 / (0.5 + 0.25))   # 1.333
    assert amdahl(10.0, 0.0) == 1.0


def test_cap_at_floor():
    assert cap_at_floor(5.0, 1.0, 0.5) == 2.0          # cannot beat time / floor
    assert cap_at_floor(1.5, 1.0, 0.5) == 1.5
    assert cap_at_floor(3.0, 0.4, 0.5) == 1.0          # already under the floor
    assert cap_at_floor(3.0, None, None) == 3.0


def test_bytes_removed():
    assert bytes_removed_speedup(200.0, 100.0) == 2.0                 # unit saturated
    # u = 0.5, half the bytes removed: 1 / (1 - 0.25)
    assert bytes_removed_speedup(200.0, 100.0, 0.5) == pytest.approx(4 / 3)
    assert bytes_removed_speedup(100.0, 120.0) == 1.0                 # nothing removed
    with pytest.raises(ValueError):
        bytes_removed_speedup(0.0, 1.0)


def test_stall_removed_seed_000_section_7_7():
    # seed 000, 7.7: CPI 6.0 with 3.0 long-scoreboard cycles removed -> 2.0x
    assert stall_removed_speedup(6.0, 3.0) == pytest.approx(2.0)
    assert stall_removed_speedup(10.0, 20.0) == pytest.approx(20.0)  # capped at 95 % of CPI


def test_littles_law_and_waves_and_issue():
    assert littles_law_speedup(32, 64, None, None) == 2.0
    assert littles_law_speedup(32, 64, 40.0, 60.0) == 1.5             # ceiling 60 % / 40 %
    assert littles_law_speedup(32, 64, 70.0, 60.0) == 1.0             # already past it
    assert waves_speedup(512, 1056) == pytest.approx(1056 / 512)
    assert waves_speedup(1100, 1056) == pytest.approx(2 / (1100 / 1056))
    assert issue_reduced_speedup(50.0, 50.0) == pytest.approx(1 / 0.75)
    assert issue_reduced_speedup(0.0, 10.0) == 1.0


def item(rule, s, group=""):
    return RoadmapItem(1, rule, "k", "a", "m", "f", "a", s, s, None, group)


def test_combine_groups_take_the_largest():
    items = [item("overfetch", 3.0, "memory-traffic"),
             item("uncoalesced_access", 2.0, "memory-traffic"), item("narrow_loads", 1.5)]
    assert combine(items, None, None) == pytest.approx(4.5)          # max(3, 2) x 1.5
    assert combine(items, 1.0, 0.25) == 4.0                          # floor cap
    assert combine([], 1.0, 0.5) == 1.0


def test_scalar_roadmap_ranked_with_formulas(scalar_evidence):
    result = analyze_evidence(scalar_evidence)
    ranks = [it.rank for it in result.roadmap]
    assert ranks == list(range(1, len(ranks) + 1))
    speedups = [it.predicted_speedup for it in result.roadmap]
    assert speedups == sorted(speedups, reverse=True)
    by_rule = {it.rule: it for it in result.roadmap}
    assert set(by_rule) == {"overfetch", "uncoalesced_access", "too_few_blocks",
                            "dependent_load_chain"}
    # overfetch at L2 (71.4457 % busy): 1 / (1 - u (1 - ideal / requested))
    requested = 32 * (6326386 + 16384)
    u = 0.714457
    ideal = scalar_evidence.ideal_bytes
    assert by_rule["overfetch"].kernel_speedup == pytest.approx(
        1 / (1 - u * (1 - ideal / requested)), rel=1e-6)
    # chain: CPI 196.522 minus 2/3 of 82.979576 long-scoreboard cycles
    chain = by_rule["dependent_load_chain"]
    assert chain.model == "stall-removed"
    assert chain.kernel_speedup == pytest.approx(196.52214 / (196.52214 - 82.979576 * 2 / 3),
                                                 rel=1e-3)
    for it in result.roadmap:
        assert it.assumption and "=" in it.formula
        assert it.predicted_time_ms == pytest.approx(scalar_evidence.time_ms /
                                                     it.predicted_speedup)
    # every step together: the workload cannot beat its floor
    assert result.combined_speedup == pytest.approx(
        scalar_evidence.time_ms / scalar_evidence.floor_ms)
