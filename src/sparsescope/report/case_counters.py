"""Profiler readings attached to the cases they came from, so the report can hold each case's
prediction against what Nsight Compute measured (DRAM and L2 bytes, occupancy, stalls).

A profile's label is ``<backend> <matrix> [params]: <kernel>`` (``target.case_label``); the
launch that ran longest stands for its case (the SpMV kernel, not a partition or memset).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sparsescope.results.records import CaseCounters, RunSet


def counters_of(profile: Any) -> CaseCounters:
    """The :class:`CaseCounters` of one profiled launch::

        dram_bytes = dram__bytes_read.sum + dram__bytes_write.sum   l2_bytes = lts__t_bytes.sum
    """
    read = profile.value("dram__bytes_read.sum")
    write = profile.value("dram__bytes_write.sum")
    dram = None if read is None and write is None else (read or 0.0) + (write or 0.0)
    return CaseCounters(achieved_occupancy_pct=profile.achieved_occupancy_pct, cpi=profile.cpi,
                        long_scoreboard_cycles=profile.stalls.get("long_scoreboard"),
                        dram_bytes=dram, l2_bytes=profile.value("lts__t_bytes.sum"),
                        block_size=profile.block_size, stall_reasons=dict(profile.stalls))


def with_profile_counters(runset: RunSet, profiles: Sequence[Any],
                          labels: Sequence[str] | None) -> RunSet:
    """``runset`` with each profiled case's counters from its longest launch; cases without a
    profile keep theirs."""
    if not profiles or not labels:
        return runset
    longest: dict[str, Any] = {}
    for profile, label in zip(profiles, labels, strict=False):
        case_label = label.split(":", 1)[0].strip()
        best = longest.get(case_label)
        if best is None or (profile.duration_ns or 0.0) > (best.duration_ns or 0.0):
            longest[case_label] = profile
    cases = []
    for case in runset.cases:
        params = case.params.label() if hasattr(case.params, "label") else ""
        key = " ".join(part for part in (case.backend, case.matrix, params) if part)
        profile = longest.get(key)
        cases.append(replace(case, counters=counters_of(profile)) if profile else case)
    return replace(runset, cases=tuple(cases))
