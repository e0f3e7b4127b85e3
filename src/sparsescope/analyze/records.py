"""Records of ``sparsescope analyze``: findings, roadmap items, the analysis result, scores.

Every record is a frozen dataclass; :func:`to_jsonable` and :func:`from_jsonable` turn any of them
(and the evidence records of :mod:`sparsescope.analyze.evidence`) into JSON and back, driven by
the dataclass type hints, so a ``BEFORE.json`` read back is the record that was written.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from sparsescope.errors import ResultsFormatError

#: Bumped on any incompatible change of the analysis JSON; readers refuse other versions.
ANALYSIS_SCHEMA_VERSION = 1
#: The ``kind`` field of an analysis JSON (tells it apart from a RunSet).
ANALYSIS_KIND = "sparsescope-analysis"

Number = float | int | str | None


@dataclass(frozen=True)
class Location:
    """Where in the kernel a finding sits: one SASS instruction and its source line."""

    kernel: str
    address: int
    """Offset of the instruction in the kernel (as in the SASS listing)."""
    sass: str
    """The instruction text."""
    source_line: int = 0
    """CUDA source line (from ``-lineinfo``); 0 when unknown."""
    detail: str = ""
    """What this location contributes, with its numbers (``32.0 sectors/request, ideal 4``)."""
    source_file: str = ""
    """The file the SASS line info names for ``source_line`` (the kernel's ``.cu``, or a header
    whose function was inlined); empty when the line info names none."""
    source_text: str | None = None
    """Line ``source_line`` of ``source_file`` as read when the analysis ran (stripped); None
    when it was not quoted (:func:`sparsescope.analyze.source_lines.quote_locations`)."""
    source_note: str = ""
    """Why a known line was not quoted (``the file has 5 lines``); empty otherwise."""


@dataclass(frozen=True)
class Finding:
    """One diagnosis rule that fired on one kernel, with the numbers that made it fire."""

    rule: str
    """Rule identifier (``uncoalesced_access``, ``register_spill``, ...); see ``diagnose.RULES``."""
    kernel: str
    title: str
    severity: str
    """``high``, ``medium``, ``low`` or ``info``."""
    basis: str
    """What the finding rests on: ``static`` (SASS and resources), ``profile`` (ncu counters) or
    ``static+profile``."""
    summary: str
    """One sentence with the numbers."""
    numbers: dict[str, Number] = field(default_factory=dict)
    """The measured or derived quantities, units in the keys (``sectors_per_request``)."""
    locations: tuple[Location, ...] = ()
    remedy: str = ""
    """What to change in the kernel."""


@dataclass(frozen=True)
class Bottleneck:
    """What bounds one kernel: bandwidth, latency, compute (issue) or the launch."""

    kernel: str
    bound: str
    """``bandwidth``, ``latency``, ``compute`` (FP32 work), ``issue`` (a busy SM issuing
    instructions that are not floating-point math) or ``unknown``."""
    reason: str
    """The comparison that decided it, with its numbers."""
    numbers: dict[str, Number] = field(default_factory=dict)


@dataclass(frozen=True)
class RoadmapItem:
    """One finding turned into a step with a predicted gain computed from the model."""

    rank: int
    """1 = largest predicted workload speedup."""
    rule: str
    kernel: str
    action: str
    """The change to make."""
    model: str
    """Gain model: ``bytes-removed``, ``stall-removed``, ``littles-law``, ``waves``,
    ``issue-reduced`` or ``dae``."""
    formula: str
    """The formula with the numbers put in."""
    assumption: str
    """What must hold for the prediction to be right."""
    kernel_speedup: float
    """Predicted speedup of this kernel alone."""
    predicted_speedup: float
    """Predicted speedup of the whole workload (Amdahl over the kernel's time share, capped by the
    workload's physical floor)."""
    predicted_time_ms: float | None
    """Workload time after the step; None when the current time is unknown."""
    group: str = ""
    """Items of one group remove the same cost (e.g. the same excess bytes): when several are
    applied together only the largest counts."""
    inputs: dict[str, Number] = field(default_factory=dict)


@dataclass(frozen=True)
class UnrankedFinding:
    """A finding the roadmap cannot put a number on, and why."""

    rule: str
    kernel: str
    reason: str


@dataclass(frozen=True)
class AnalysisResult:
    """Everything one ``sparsescope analyze`` run found: written as ``analysis.json``."""

    workload: str
    version: str
    """Label of this version of the workload (``naive``, ``smem``, ...)."""
    addresses: tuple[str, ...]
    """Rules this version was written to address (what ``--compare`` scores against the previous
    version's roadmap); empty when not declared."""
    evidence: Any
    """:class:`sparsescope.analyze.evidence.Evidence` (typed as Any to keep this module free of
    the evidence import cycle)."""
    bottlenecks: tuple[Bottleneck, ...]
    findings: tuple[Finding, ...]
    roadmap: tuple[RoadmapItem, ...]
    unranked: tuple[UnrankedFinding, ...] = ()
    combined_speedup: float | None = None
    """Predicted speedup with every roadmap step applied (largest per group, product across
    groups, capped by the floor)."""
    created_utc: str = ""
    command: str = ""
    sparsescope_version: str = ""
    git_commit: str = ""
    kind: str = ANALYSIS_KIND
    schema_version: int = ANALYSIS_SCHEMA_VERSION

    @property
    def time_ms(self) -> float | None:
        return self.evidence.time_ms


@dataclass(frozen=True)
class Score:
    """A prediction scored: the change from one version to the next, predicted and measured."""

    workload: str
    before: str
    """Version label before the change."""
    after: str
    applied: tuple[str, ...]
    """Rules whose roadmap items the change applied (their gains make the prediction)."""
    predicted_speedup: float
    measured_speedup: float
    """before.time_ms / after.time_ms."""
    abs_error: float
    """|predicted - measured| (speedup units)."""
    rel_error_pct: float
    """100 x (predicted - measured) / measured."""
    before_time_ms: float
    after_time_ms: float
    device: str = ""
    basis: str = ""
    """Which roadmap items made the prediction, or why none did."""
    created_utc: str = ""


# --------------------------------------------------------------------------- JSON conversion


def to_jsonable(obj: Any) -> Any:
    """Dataclasses -> dicts, tuples -> lists, non-finite floats -> None (JSON has no NaN)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        if len(args) == 1:
            return args[0], optional
        return tp, optional
    return tp, False


def _convert(tp: Any, value: Any, where: str) -> Any:
    tp, optional = _strip_optional(tp)
    if value is None:
        if optional or tp is Any:
            return None
        raise ResultsFormatError(f"{where}: missing value")
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):
        return from_jsonable(tp, value, where)
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, list | tuple):
            raise ResultsFormatError(f"{where}: expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        return tuple(_convert(a, v, f"{where}[{i}]") for i, (a, v) in
                     enumerate(zip(args, value, strict=False)))
    if origin is dict:
        if not isinstance(value, dict):
            raise ResultsFormatError(f"{where}: expected an object, got {type(value).__name__}")
        _k, vt = typing.get_args(tp) or (str, Any)
        return {k: _convert(vt, v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ResultsFormatError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ResultsFormatError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is str and not isinstance(value, str):
        raise ResultsFormatError(f"{where}: expected a string, got {value!r}")
    if tp is bool and not isinstance(value, bool):
        raise ResultsFormatError(f"{where}: expected true/false, got {value!r}")
    return value


def from_jsonable(cls: type, data: Any, where: str = "") -> Any:
    """Rebuild dataclass ``cls`` from :func:`to_jsonable` output, checking types on the way;
    a missing field with a default takes the default, an unknown field is an error."""
    where = where or cls.__name__
    if not isinstance(data, dict):
        raise ResultsFormatError(f"{where}: expected an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ResultsFormatError(f"{where}: unknown field(s) {', '.join(unknown)}")
    kwargs = {}
    for name, f in known.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ResultsFormatError(f"{where}: missing field {name!r}")
            continue
        kwargs[name] = _convert(hints[name], data[name], f"{where}.{name}")
    return cls(**kwargs)
