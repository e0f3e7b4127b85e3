"""The analysis pipeline as functions: evidence -> diagnosis -> roadmap -> result, and the result
as versioned JSON (``analysis.json``, the ``BEFORE.json`` / ``AFTER.json`` of ``--compare``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from sparsescope.analyze.diagnose import diagnose
from sparsescope.analyze.evidence import Evidence
from sparsescope.analyze.records import (
    ANALYSIS_KIND,
    ANALYSIS_SCHEMA_VERSION,
    AnalysisResult,
    Bottleneck,
    Finding,
    RoadmapItem,
    UnrankedFinding,
    from_jsonable,
    to_jsonable,
)
from sparsescope.analyze.roadmap import build_roadmap, combine
from sparsescope.analyze.source_lines import quote_locations
from sparsescope.errors import ResultsFormatError


def analyze_evidence(ev: Evidence, *, addresses: Sequence[str] = (),
                     command: str = "") -> AnalysisResult:
    """Diagnose ``ev``, rank the roadmap, and wrap it all with provenance."""
    import sparsescope
    from sparsescope.results.provenance import git_commit

    bottlenecks, findings = diagnose(ev)
    # quoted here, where the sources are: analysis.json then carries the quotes it shows
    findings = quote_locations(findings)
    roadmap, unranked = build_roadmap(ev, findings)
    return AnalysisResult(
        workload=ev.workload, version=ev.version, addresses=tuple(addresses), evidence=ev,
        bottlenecks=bottlenecks, findings=findings, roadmap=roadmap, unranked=unranked,
        combined_speedup=combine(roadmap, ev.time_ms, ev.floor_ms) if roadmap else None,
        created_utc=datetime.now(UTC).isoformat(timespec="seconds"), command=command,
        sparsescope_version=sparsescope.__version__, git_commit=git_commit())


def analysis_to_dict(result: AnalysisResult) -> dict:
    return to_jsonable(result)


def analysis_from_dict(data: dict, where: str = "analysis") -> AnalysisResult:
    """Validate and rebuild an :class:`AnalysisResult` (refuses other kinds and versions)."""
    if not isinstance(data, dict):
        raise ResultsFormatError(f"{where}: expected a JSON object")
    if data.get("kind") != ANALYSIS_KIND:
        raise ResultsFormatError(f"{where}: not a sparsescope analysis (kind "
                                 f"{data.get('kind')!r}, expected {ANALYSIS_KIND!r})")
    if data.get("schema_version") != ANALYSIS_SCHEMA_VERSION:
        raise ResultsFormatError(f"{where}: schema_version {data.get('schema_version')!r}; this "
                                 f"sparsescope reads {ANALYSIS_SCHEMA_VERSION}")
    body = dict(data)
    ev = from_jsonable(Evidence, body.pop("evidence", None), f"{where}.evidence")
    rebuilt = from_jsonable(AnalysisResult, {**body, "evidence": None}, where)
    kw = {f: getattr(rebuilt, f) for f in rebuilt.__dataclass_fields__}
    kw["evidence"] = ev
    return AnalysisResult(**kw)


def read_analysis(path: str | Path) -> AnalysisResult:
    """An ``analysis.json`` (or its compressed ``analysis.json.xz`` / ``analysis.json.gz``, as
    results folders keep them) read back."""
    from sparsescope._compressed import read_json

    path = Path(path)
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise ResultsFormatError(f"{path}: no such file") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsFormatError(f"{path}: not readable JSON ({exc})") from None
    return analysis_from_dict(data, str(path))


def write_analysis(result: AnalysisResult, path: str | Path) -> Path:
    from sparsescope._atomic import write_json_atomic

    return write_json_atomic(Path(path), analysis_to_dict(result))


__all__ = ["AnalysisResult", "Bottleneck", "Finding", "RoadmapItem", "UnrankedFinding",
           "analysis_from_dict", "analysis_to_dict", "analyze_evidence", "read_analysis",
           "write_analysis"]
