"""How ``cuda-spmv-auto`` (and ``spmm-cuda-auto``) chose its kernel, per case: the prediction
table it kept in its case's notes (``selection_table``: every candidate's predicted time and
limiter, and the trial time of those it timed on the device), the choice marked, and the rule
that decided.

A run whose auto cases chose by the rules (``cuda-spmv-auto-rules``, or no device rates) keeps
no prediction table; the table is then left out."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sparsescope.report.collection_data import AUTO
from sparsescope.report.context import ReportContext
from sparsescope.report.table_types import Column, Table


@dataclass(frozen=True)
class ChoiceRow:
    matrix: str
    candidate: str
    predicted_us: float | None
    over_fastest_pct: float | None
    """(predicted - fastest prediction) / fastest prediction, %."""
    limiter: str
    trial_us: float | None
    """Median time in the trial on the device; None: not timed (outside the shortlist)."""
    chosen: str
    """``chosen`` for the kernel auto ran, else empty."""




def choice_rows(cases: Iterable[Any], auto: str = AUTO,
                label: Callable[[Any], str] = lambda c: c.matrix) -> list[ChoiceRow]:
    """Every candidate of each ``auto`` case's prediction table, fastest prediction first;
    ``label`` names the case (the matrix; SpMM adds k and the layout). The kernel auto ran is
    ``selected`` with ``selected_params``, or, around device transposes, ``row_major_kernel``."""
    rows = []
    for case in cases:
        if case.backend != auto or "selection_table" not in case.notes:
            continue
        table = json.loads(case.notes["selection_table"])
        chosen = (case.notes.get("row_major_kernel") or case.notes.get("selected", ""),
                  json.loads(case.notes.get("selected_params", "{}")))
        done = [r for r in table if r.get("predicted_ms") is not None]
        fastest = min((r["predicted_ms"] for r in done), default=None)
        for r in sorted(table, key=lambda r: (r.get("predicted_ms") is None,
                                              r.get("predicted_ms") or 0.0)):
            p = r.get("predicted_ms")
            trial = r.get("trial_ms")
            rows.append(ChoiceRow(
                label(case), r["label"], p * 1e3 if p is not None else None,
                100 * (p / fastest - 1) if p is not None and fastest else None,
                r.get("limiter") or r.get("not_modelled", ""),
                trial * 1e3 if trial is not None else None,
                "chosen" if (r["backend"], r["params"]) == chosen else ""))
    return rows


def auto_choice_table(ctx: ReportContext) -> Table | None:
    """Every candidate ``cuda-spmv-auto`` predicted, per matrix, fastest prediction first;
    None when no auto case kept a prediction table."""
    return choice_table(choice_rows((v.case for v in ctx.cases), AUTO), AUTO)


def choice_table(rows: list[ChoiceRow], auto: str, name: str = "auto_choice",
                 noun: str = "matrices") -> Table | None:
    """The table of :func:`choice_rows` with its reading (how often the trial overruled the
    fastest prediction; ``noun``: what a row's case is); None without rows."""
    if not rows:
        return None
    cases = list(dict.fromkeys(r.matrix for r in rows))
    overruled = [m for m in cases
                 if next((r for r in rows if r.matrix == m and r.chosen), None) is not
                 next((r for r in rows if r.matrix == m), None)]
    timed = sum(1 for r in rows if r.trial_us is not None)
    reading = (f"{auto} predicted {len(rows)} candidates on {len(cases)} {noun} "
               f"and timed {timed} of them on the device (those the model cannot rank apart); "
               f"the trial overruled the fastest prediction on {len(overruled)} "
               f"({', '.join(overruled) or 'none'}).")
    return Table(name, f"How {auto} chose", (
        Column("matrix", "Matrix" if noun == "matrices" else "Case"),
        Column("candidate", "Candidate"),
        Column("predicted_us", "Predicted", ",.1f"),
        Column("over_fastest_pct", "Over the fastest prediction", "+.1f"),
        Column("limiter", "Limiter"), Column("trial_us", "Timed here", ",.1f"),
        Column("chosen", "")), tuple(rows), reading,
        basis="The case's own selection_table: the time model on this run's device rates; "
              "trial = median of a few calls on the device, before the case was timed.")
