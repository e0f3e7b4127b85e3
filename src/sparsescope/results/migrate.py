"""Older results files brought to the current layout before they are validated.

Schema 1 (before the one-path records) kept an op's parameters and derived counts as strings
under ``op.<name>`` keys of ``CaseResult.notes``, and profiler readings under bare keys. Schema 2
keeps them as typed records (``params``, ``derived``, ``counters``). :func:`migrate` moves each
such string into its field, converted to the field's type, so a report re-rendered from a
schema-1 file shows the same numbers.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from sparsescope import registry

COUNTER_KEYS = ("achieved_occupancy_pct", "cpi", "long_scoreboard_cycles")
KAPPA_NOTE = "tolerance_scaled_by_cancellation"
"""Schema 1's SpMV note of a tolerance scaled by cancellation (``kappa 14.6``)."""


def _convert(text: str, hint: Any) -> Any:
    """A schema-1 note string as a value of ``hint`` (None when it cannot be one)."""
    options = [o for o in typing.get_args(hint) if o is not type(None)] or [hint]
    target = options[0]
    if typing.get_origin(target) is tuple:
        try:  # "3,3,49"; a long list was kept only as "N indices (sha1 ...)"
            return tuple(int(v) for v in text.split(","))
        except ValueError:
            return None
    try:
        return target(text) if target in (int, float, str) else None
    except ValueError:
        return None


def _typed(notes: dict[str, str], cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        text = notes.get(f"op.{f.name}")
        if text is not None and (value := _convert(text, hints[f.name])) is not None:
            out[f.name] = value
    return out


def _migrate_case(case: dict) -> dict:
    notes = dict(case.get("notes") or {})
    entry = registry.OPS.get(case.get("op", ""))
    if entry is not None:
        case.setdefault("params", _typed(notes, registry.load(entry.params)))
        case.setdefault("derived", _typed(notes, registry.load(entry.derived)))
    if case.get("op") == "spmv" and isinstance(case.get("derived"), dict):
        # schema 1's SpMV runner noted a scaled tolerance as "kappa 14.6" (SpmvDerived now)
        text = notes.get(KAPPA_NOTE)
        kappa = _convert(text.removeprefix("kappa "), float) if isinstance(text, str) else None
        if kappa is not None:
            case["derived"].setdefault("cancellation", kappa)
            notes.pop(KAPPA_NOTE)
    counters = {}
    for key in COUNTER_KEYS:
        try:
            counters[key] = float(notes.pop(key))
        except (KeyError, ValueError):
            continue
    if counters:
        case.setdefault("counters", counters)
    case["notes"] = {k: v for k, v in notes.items() if not k.startswith("op.")}
    return case


def migrate(data: Any) -> Any:
    """``data`` (a parsed results file) in the current layout; other versions untouched.
    Schema 2 -> 3 only adds stage times, which an older file does not have (None)."""
    if not isinstance(data, dict) or data.get("schema_version") not in (1, 2):
        return data
    cases = data.get("cases")
    if isinstance(cases, list) and data["schema_version"] == 1:
        data["cases"] = [_migrate_case(dict(c)) if isinstance(c, dict) else c for c in cases]
    data["schema_version"] = 3
    return data
