"""RunSet <-> versioned JSON, validated on read.

The layout is the records' own: one JSON object per dataclass, with its field names. Reading
checks ``schema_version``, every field's presence and type (driven by the records' type
hints), the enumerations and the stage times (known stages adding up to their wall time),
and names the JSON path of the first problem, e.g.
``cases[3].outcome: expected one of ok/skipped/failed, got 'great'``.

Round trips are exact: tuples come back as tuples, raw timing samples are kept, and non-finite
floats (an infinite error of a failed case) are written as the strings ``"Infinity"``,
``"-Infinity"`` and ``"NaN"`` so the file stays strict JSON.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import types
import typing
from pathlib import Path
from typing import Any

from sparsescope._compressed import read_text, write_bytes_compressed_atomic
from sparsescope.errors import ResultsFormatError
from sparsescope.results.records import OUTCOMES, SCHEMA_VERSION, RunSet
from sparsescope.timing.types import TIMING_MODES

_NONFINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}

#: Allowed values of string fields, by (record class name, field name).
_ENUMS = {
    ("CaseResult", "outcome"): OUTCOMES,
    ("DeviceSpec", "kind"): ("gpu", "cpu"),
    ("TimingConfig", "statistic"): ("median", "mean", "min"),
    ("TimingConfig", "clock"): ("host", "cuda-events"),
    ("Measurement", "clock"): ("host", "cuda-events"),
    ("TimingConfig", "mode"): TIMING_MODES,
    ("CaseResult", "timing_mode"): TIMING_MODES,
}


# ----------------------------------------------------------------------------- encoding

def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # NumPy scalars
        return _encode(value.item())
    return value


def record_to_dict(record: Any) -> Any:
    """Any record (a dataclass, or a container of them) as JSON-ready data, in the layout of
    results files: what travels between processes and into the store's JSON columns."""
    return _encode(record)


def record_from_dict(data: Any, cls: type, path: str = "") -> Any:
    """A record of type ``cls`` from :func:`record_to_dict`'s data, validated like a results
    file (a :class:`ResultsFormatError` naming ``path`` and the field at fault)."""
    return _decode_record(data, cls, path)


def runset_to_dict(runset: RunSet) -> dict:
    """The JSON-ready dict of ``runset`` (records as objects, tuples as lists)."""
    return _encode(runset)


# ----------------------------------------------------------------------------- decoding

def _fail(path: str, message: str) -> typing.NoReturn:
    raise ResultsFormatError(f"{path}: {message}" if path else message)


def _describe(value: Any) -> str:
    kind = {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)
    return f"{kind} {value!r}" if isinstance(value, (str, int, float)) else kind


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A record class's field types, resolved once per class: ``typing.get_type_hints``
    compiles every string annotation again on each call, and reading a results file asks it
    once per record (most of a large file's read time). Callers do not change the dict."""
    return typing.get_type_hints(cls)


def _decode(value: Any, hint: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [o for o in typing.get_args(hint) if o is not type(None)]
        if value is None:  # the records' unions are all "X | None"
            return None
        (inner,) = options
        return _decode(value, inner, path)
    if dataclasses.is_dataclass(hint):
        return _decode_record(value, hint, path)
    if origin is tuple:
        if not isinstance(value, list):
            _fail(path, f"expected an array, got {_describe(value)}")
        (item_hint, _) = typing.get_args(hint)
        return tuple(_decode(v, item_hint, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            _fail(path, f"expected an object, got {_describe(value)}")
        args = typing.get_args(hint)
        if args and args[1] is str:
            for key, item in value.items():
                if not isinstance(item, str):
                    _fail(f"{path}.{key}", f"expected a string, got {_describe(item)}")
        if args and args[1] is float:  # numbers, non-finite ones written as strings
            return {k: _decode_scalar(v, float, f"{path}.{k}") for k, v in value.items()}
        return dict(value)
    return _decode_scalar(value, hint, path)


def _decode_scalar(value: Any, hint: Any, path: str) -> Any:
    if hint is bool:
        if not isinstance(value, bool):
            _fail(path, f"expected a boolean, got {_describe(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(path, f"expected an integer, got {_describe(value)}")
        return value
    if hint is float:
        if isinstance(value, str) and value in _NONFINITE:
            return _NONFINITE[value]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(path, f"expected a number, got {_describe(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            _fail(path, f"expected a string, got {_describe(value)}")
        return value
    _fail(path, f"no decoder for type {hint!r}")  # a record gained a type this reader lacks


def _op_hints(value: dict, hints: dict[str, Any], path: str) -> dict[str, Any]:
    """A case's ``params`` and ``derived`` hints: the record types its op registered."""
    from sparsescope import registry

    op = value.get("op")
    entry = registry.OPS.get(op) if isinstance(op, str) else None
    if entry is None:
        _fail(f"{path}.op", f"expected one of {'/'.join(registry.OPS)}, got {op!r}")
    return {**hints, "params": registry.load(entry.params),
            "derived": registry.load(entry.derived)}


def _decode_record(value: Any, cls: type, path: str) -> Any:
    if not isinstance(value, dict):
        _fail(path, f"expected an object ({cls.__name__}), got {_describe(value)}")
    hints = _hints(cls)
    if cls.__name__ == "CaseResult":  # params and derived are typed by the case's op
        hints = _op_hints(value, hints, path)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in value:
        if key not in fields:
            _fail(path, f"unexpected field {key!r} in {cls.__name__}")
    kwargs = {}
    for name, field in fields.items():
        here = f"{path}.{name}" if path else name
        if name not in value:
            if (field.default is dataclasses.MISSING
                    and field.default_factory is dataclasses.MISSING):
                _fail(here, "required field missing")
            continue
        decoded = _decode(value[name], hints[name], here)
        allowed = _ENUMS.get((cls.__name__, name))
        if allowed is not None and decoded not in allowed:
            _fail(here, f"expected one of {'/'.join(allowed)}, got {decoded!r}")
        kwargs[name] = decoded
    record = cls(**kwargs)
    _check_record(record, path)
    return record


def _check_record(record: Any, path: str) -> None:
    """Rules a type cannot express."""
    name = type(record).__name__
    if name == "Measurement" and not record.samples_ms:
        _fail(f"{path}.samples_ms", "expected at least one sample")
    if name == "CaseResult" and record.outcome == "ok" and record.measurement is None:
        _fail(f"{path}.measurement", "an ok case must carry its measurement")
    if name == "StageTimes":
        _check_stage_times(record, path)


def _check_stage_times(times: Any, path: str) -> None:
    """Known stages, no negative or non-finite seconds, and the stages adding up to the wall
    time (each second is in exactly one stage; float rounding aside)."""
    from sparsescope.stages import OTHER, STAGES

    for key, value in times.seconds.items():
        if key not in (*STAGES, OTHER):
            _fail(f"{path}.seconds.{key}", f"unknown stage; stages: {', '.join(STAGES)}, "
                                           f"{OTHER}")
        if not (math.isfinite(value) and value >= 0):
            _fail(f"{path}.seconds.{key}", f"expected seconds >= 0, got {value!r}")
    for key in ("wall_s", "queue_s", "transfer_s"):
        value = getattr(times, key)
        if value is not None and not (math.isfinite(value) and value >= 0):
            _fail(f"{path}.{key}", f"expected seconds >= 0, got {value!r}")
    total = math.fsum(times.seconds.values())
    if times.seconds and abs(total - times.wall_s) > 1e-6 * times.wall_s + 1e-9:
        _fail(f"{path}.seconds", f"the stages add up to {total!r} s, not the wall time "
                                 f"{times.wall_s!r} s")


def runset_from_dict(d: Any) -> RunSet:
    """Validate ``d`` against the schema and build the :class:`RunSet`.

    Raises :class:`ResultsFormatError` naming the JSON path of the first problem.
    """
    from sparsescope.results.migrate import migrate

    if not isinstance(d, dict):
        _fail("", f"expected a JSON object at the top level, got {_describe(d)}")
    d = migrate(d)
    version = d.get("schema_version")
    if version != SCHEMA_VERSION:
        _fail("schema_version", f"expected {SCHEMA_VERSION}, got {version!r}")
    return _decode_record(d, RunSet, "")


# ----------------------------------------------------------------------------- files

def write_runset(path: str | os.PathLike, runset: RunSet) -> Path:
    """Write ``runset`` as JSON atomically: a failure midway leaves any old file intact. A
    ``.json.xz`` (or ``.json.gz``) name is written compressed."""
    text = json.dumps(runset_to_dict(runset), indent=2, allow_nan=False) + "\n"
    return write_bytes_compressed_atomic(path, text.encode("utf-8"))


def read_runset(path: str | os.PathLike) -> RunSet:
    """Read and validate a results file (``results.json``, or compressed: ``results.json.xz``
    as ``sparsescope results compact`` keeps large runs, ``results.json.gz`` as they were kept
    before); every problem is a :class:`ResultsFormatError` naming the file."""
    target = Path(path)
    try:
        text = read_text(target)
    except FileNotFoundError:
        raise ResultsFormatError(f"{target}: no such results file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFormatError(f"{target}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFormatError(
            f"{target}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:  # the decoder recurses once per nesting level
        raise ResultsFormatError(f"{target}: not a results file: JSON nested deeper than "
                                 f"Python's recursion limit") from None
    try:
        return runset_from_dict(data)
    except ResultsFormatError as exc:
        raise ResultsFormatError(f"{target}: {exc}") from None
