"""``sparsescope analyze``: bottleneck diagnosis, a roadmap with predicted gains, and the
predictions scored, for any GPU kernel.

Pipeline: a :mod:`.workload` (a ``module:function`` or a CUDA source with a launch spec) is
measured by :mod:`.measure` (timing protocol, correctness, ncu profile, SASS, floor) into
:class:`.evidence.Evidence` -- or the evidence is read from recorded files by :mod:`.sources`
(``--from-profile``, ``--sass``) or from a live run's folder (``--from-measurement``);
:mod:`.bound` and :mod:`.diagnose` turn it into a bottleneck and :class:`.records.Finding`
records, :mod:`.roadmap` ranks them by the gain the model predicts,
:mod:`.score` compares a prediction with the next version's measurement and keeps the history,
:mod:`.source_lines` quotes each finding's source line where its file has it; the report stage
(``report.analyze_render``) writes the report. :mod:`.threadflow` is the per-lane dataflow the
static rules use. No module imports a GPU library at import time.

Typical use (no GPU needed)::

    from sparsescope.analyze import analyze_evidence, evidence_from_profile_file
    result = analyze_evidence(evidence_from_profile_file("report.ncu-rep", ideal_bytes=...))
    for item in result.roadmap:
        print(item.rank, item.rule, item.predicted_speedup, item.assumption)
"""

from __future__ import annotations

import importlib

_LAZY = {
    "analyze_evidence": "api", "read_analysis": "api", "write_analysis": "api",
    "analysis_from_dict": "api", "analysis_to_dict": "api",
    "Evidence": "evidence", "KernelEvidence": "evidence", "static_evidence": "evidence",
    "evidence_from_profile_file": "sources", "evidence_from_profiles": "sources",
    "evidence_from_sass": "sources",
    "diagnose": "diagnose", "RULES": "diagnose", "build_roadmap": "roadmap",
    "compare": "score", "compare_series": "score", "ScoreHistory": "score",
    "measure": "measure", "evidence_from_measurement": "measure",
    "evidence_changes": "score", "assign_samples": "sources",
    "quote_locations": "source_lines",
    "callable_workload": "workload", "cuda_workload": "workload",
    "describe": "workload",
    "AnalysisResult": "records", "Finding": "records", "RoadmapItem": "records",
    "Score": "records",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"sparsescope.analyze.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'sparsescope.analyze' has no attribute {name!r}")
