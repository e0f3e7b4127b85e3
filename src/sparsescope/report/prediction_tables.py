"""Predicted against measured: each timed case's predicted time (``CaseResult.prediction``,
made by :mod:`sparsescope.model.prediction` before the case was timed) beside its measured
time, the signed error, the term that binds, and -- where the error is above 25 % -- which
assumption broke, named from the evidence the case carries.

The prediction is overhead plus the time the binding term alone needs, so it is a floor: a case
that beats it by more than 25 % is a **model defect** (the model charges it something it does
not pay), never a gap. The "why" evidence comes in a fixed order: with profiler counters,
measured DRAM bytes against ``inputs['dram_bytes']``, achieved occupancy against
``inputs['resident_warps_per_sm']``, then the top stall reason; without counters, the
assumption of the term that binds.

SpMV's section shows the :class:`~sparsescope.report.table_types.Table` of
:func:`prediction_table` (figure ``predicted_vs_measured``); SpMM's and row slicing's show
:func:`prediction_markdown` (figure ``ops_<op>_predicted.png``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparsescope.analyze.score_family import (  # noqa: F401 - percentile re-exported
    LIBRARIES,
    OURS,
    error_summary,
    percentile,
)
from sparsescope.model.prediction import OLDER_THAN_MODEL, ModelPrediction, signed_error_pct
from sparsescope.registry import is_own
from sparsescope.report.context import ok_cases
from sparsescope.report.labels import humanize, params_text
from sparsescope.report.table_types import Column, Table
from sparsescope.results.records import CaseResult, RunSet
from sparsescope.timing.modes import mode_suffix

BAND_PCT = 25.0
"""|error| above this names a broken assumption; below -BAND_PCT is a model defect."""
DEFECT = "model defect: beats its predicted time"
MATCH = 1.25
"""Measured / predicted beyond [1 / MATCH, MATCH] is a mismatch of a model input."""
#: Colour of each limiter in the scatter (fixed, so two reports read alike).
LIMITER_COLORS = {"dram": "tab:blue", "l2": "tab:cyan", "latency": "tab:red",
                  "imbalance": "tab:orange", "compute": "tab:green", "overhead": "tab:gray"}


@dataclass(frozen=True)
class PredictionRow:
    """One timed case: predicted against measured."""

    matrix: str
    backend: str
    params: str
    """The op's parameters (``k=8 layout=row``), empty for SpMV."""
    predicted_ms: float | None
    """None when not modelled (``not_modelled`` says why)."""
    time_ms: float
    error_pct: float | None
    """(measured - predicted) / measured x 100; negative: faster than predicted."""
    limiter: str
    why: str
    not_modelled: str
    """Why there is no prediction; empty when there is one."""
    kernel: str
    own: bool
    """An own kernel (``registry.is_own``), not a library's."""

    @property
    def predicted_cell(self) -> str:
        if self.predicted_ms is None:
            return f"not modelled: {self.not_modelled}"
        return f"{self.predicted_ms:.4f}"

    @property
    def error_cell(self) -> str:
        return "not modelled" if self.error_pct is None else f"{self.error_pct:+.1f}"

    @property
    def limiter_cell(self) -> str:
        return self.limiter or "—"


@dataclass(frozen=True)
class PredictionSummary:
    """The summary lines of one op's predictions."""

    timed: int
    modelled: int
    median_abs_error_pct: float | None
    p90_abs_error_pct: float | None
    """90th percentile of |error|, linear interpolation between ranks."""
    faster: int
    """Cases that beat their prediction by more than 25 % (model defects)."""
    slower: int
    """Cases more than 25 % slower than predicted."""


def case_error_pct(case: CaseResult) -> float | None:
    """The stored signed error, or the one of the stored prediction and the measured time."""
    p = case.prediction
    if p is None or p.predicted_ms is None or not case.time_ms:
        return None
    return p.error_pct if p.error_pct is not None else signed_error_pct(p.predicted_ms,
                                                                       case.time_ms)


def _finite(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _number(inputs: Mapping[str, Any], key: str) -> float | None:
    """A model input as a finite number (None when absent)."""
    return _finite(inputs.get(key))


def _counter(case: CaseResult, name: str) -> float | None:
    """A profiler reading of the case as a finite number (None when absent)."""
    return _finite(getattr(case.counters, name, None))


def _off(measured: float, predicted: float) -> bool:
    return predicted > 0 and not 1 / MATCH <= measured / predicted <= MATCH


def top_stall(case: CaseResult) -> str:
    """The largest stall reason the counters hold (``stall_reasons``: name -> cycles per
    instruction, when recorded; else the long-scoreboard reading against the CPI)."""
    reasons = getattr(case.counters, "stall_reasons", None)
    if isinstance(reasons, Mapping) and reasons:
        name, cycles = max(reasons.items(), key=lambda kv: kv[1])
        return f"top stall: {name.replace('_', ' ')} {cycles:.2f} cycles/instruction"
    lsb, cpi = _counter(case, "long_scoreboard_cycles"), _counter(case, "cpi")
    if lsb is None:
        return ""
    share = f" ({100 * lsb / cpi:.0f} % of CPI {cpi:.1f})" if cpi else ""
    return f"stall: long scoreboard {lsb:.2f} cycles/instruction{share}"


def counter_findings(case: CaseResult, max_warps_per_sm: int) -> list[tuple[bool, str]]:
    """(mismatch, text) from the counters, in order: DRAM bytes, then occupancy; a reading
    beyond 25 % of the model's input is a mismatch."""
    inputs = case.prediction.inputs if case.prediction else {}
    found = []
    dram, want = _counter(case, "dram_bytes"), _number(inputs, "dram_bytes")
    if dram is not None and want is not None:
        off = _off(dram, want)
        found.append((off, f"DRAM bytes: {'measured' if off else 'as predicted,'} "
                           f"{dram / 1e6:,.1f} MB against predicted {want / 1e6:,.1f} MB"))
    occ = _counter(case, "achieved_occupancy_pct")
    resident = _number(inputs, "resident_warps_per_sm")
    if occ is not None and resident is not None:
        warps = occ / 100 * max_warps_per_sm
        off = _off(warps, resident)
        found.append((off, f"occupancy: {'achieved' if off else 'as predicted,'} "
                           f"{warps:.1f} warps/SM ({occ:.0f} %) against {resident:.1f} "
                           "predicted resident"))
    return found


def limiter_assumption(prediction: ModelPrediction) -> str:
    """What the binding term assumes, with its inputs, for a case without counters."""
    inputs, limiter = prediction.inputs, prediction.limiter
    mb, hit = _number(inputs, "dram_bytes"), _number(inputs, "x_l2_hit_rate")
    flight = _number(inputs, "bytes_in_flight_per_warp")
    dram = ""
    if mb is not None:
        rate = f", x hit rate in L2 {100 * hit:.0f} %" if hit is not None else ""
        dram = f" ({mb / 1e6:,.1f} MB{rate})"
    texts = {
        "dram": f"DRAM-bound by the model: the predicted DRAM bytes{dram} may be wrong",
        "l2": "L2-bound by the model: the L2 bytes requested or the L2 bandwidth may be wrong",
        "latency": "latency-bound by the model: bytes in flight per warp"
                   + (f" ({flight:,.0f} B)" if flight is not None else "")
                   + " from SASS/declared shape may be wrong",
        "imbalance": "imbalance-bound by the model: the longest unit of work (row, slice) "
                     "may be mis-estimated",
        "compute": "compute-bound by the model: the instructions per nonzero may be wrong",
        "overhead": "overhead-bound by the model: the launch and call overhead may be wrong",
    }
    return texts.get(limiter, f"{limiter or 'unnamed'}-bound by the model") + \
        "; profile this case"


def why_text(case: CaseResult, error_pct: float | None, max_warps_per_sm: int) -> str:
    """The "why" cell: within the band, or the broken assumption named from the evidence
    (counters first: DRAM bytes, occupancy, top stall; else the limiter's assumption)."""
    p = case.prediction
    if p is None or error_pct is None:
        return "not modelled"
    if abs(error_pct) <= BAND_PCT:
        return f"within {BAND_PCT:.0f} % of the model"
    found = counter_findings(case, max_warps_per_sm) if case.counters is not None else []
    broken = [text for off, text in found if off]
    if not broken:  # nothing measured contradicts an input: the binding term's assumption
        broken = [text for _, text in found] + [limiter_assumption(p)]
    stall = top_stall(case) if case.counters is not None else ""
    evidence = "; ".join(broken + ([stall] if stall else []))
    if error_pct < -BAND_PCT:
        return f"{DEFECT} (error {error_pct:+.0f} %); {evidence}"
    return evidence


def prediction_row(case: CaseResult, max_warps_per_sm: int) -> PredictionRow:
    p = case.prediction
    error = case_error_pct(case)
    modelled = p is not None and p.predicted_ms is not None
    reason = "" if modelled else (OLDER_THAN_MODEL if p is None
                                  else p.not_modelled or "no reason given")
    return PredictionRow(
        matrix=case.matrix, backend=case.backend, params=params_text(case.params),
        predicted_ms=p.predicted_ms if modelled else None, time_ms=case.time_ms,
        error_pct=error, limiter=p.limiter if modelled else "",
        why=why_text(case, error, max_warps_per_sm) if modelled else "not modelled",
        not_modelled=humanize(reason), kernel=p.kernel if p is not None else "",
        own=is_own(case.backend))


def prediction_rows(runset: RunSet) -> list[PredictionRow]:
    """One row per timed case of ``runset`` (one op's cases), in run order."""
    return [prediction_row(c, runset.device.max_warps_per_sm) for c in ok_cases(runset)]


def summarize(rows: Sequence[PredictionRow]) -> PredictionSummary:
    errors = [r.error_pct for r in rows if r.error_pct is not None]
    absolute = [abs(e) for e in errors]
    return PredictionSummary(
        timed=len(rows), modelled=len(errors), median_abs_error_pct=percentile(absolute, 50),
        p90_abs_error_pct=percentile(absolute, 90),
        faster=sum(e < -BAND_PCT for e in errors), slower=sum(e > BAND_PCT for e in errors))


def summary_lines(s: PredictionSummary) -> list[str]:
    """The summary as sentences (the table's reading, the op sections' bullets)."""
    if not s.timed:
        return ["No case was timed, so no prediction is checked."]
    if not s.modelled:
        return [f"None of the {s.timed} timed case(s) carries a predicted time "
                "(each row says why)."]
    return [f"{s.modelled} of {s.timed} timed case(s) modelled.",
            f"Median |error| {s.median_abs_error_pct:.1f} %; 90th percentile "
            f"{s.p90_abs_error_pct:.1f} %.",
            f"{s.faster} case(s) faster than the model allows (beat their prediction by more "
            f"than {BAND_PCT:.0f} %: model defects); {s.slower} more than {BAND_PCT:.0f} % "
            "slower than predicted."]


#: the two families the accuracy targets are stated for (issue 36), by ``PredictionRow.own``
FAMILIES = ((True, OURS), (False, LIBRARIES))


def family_lines(rows: Sequence[PredictionRow]) -> list[str]:
    """One sentence per family (our kernels; the libraries) with its own median and 90th
    percentile |error| (``analyze.score_family``: the one definition ``model score
    --by-family`` and ``scripts/family_errors.py`` share), when the rows hold modelled cases
    of both: one family's error must not hide behind the other's."""
    groups = {name: error_summary([r.error_pct for r in rows
                                   if r.error_pct is not None and r.own is own])
              for own, name in FAMILIES}
    if not all(g.cases for g in groups.values()):
        return []
    return [f"{name.capitalize()}: {g.cases} modelled, median |error| "
            f"{g.median_abs_pct:.1f} %, 90th percentile {g.p90_abs_pct:.1f} %."
            for name, g in groups.items()]


def reading(rows: Sequence[PredictionRow]) -> list[str]:
    """The summary sentences of ``rows``, then one per family (:func:`family_lines`)."""
    return summary_lines(summarize(rows)) + family_lines(rows)


def _columns(rows: Sequence[PredictionRow]) -> tuple[Column, ...]:
    params = any(r.params for r in rows)
    return (Column("matrix", "Matrix"), Column("backend", "Backend"),
            *([Column("params", "Params")] if params else []),
            Column("predicted_cell", "Predicted (ms)"), Column("time_ms", "Measured", ".4f"),
            Column("error_cell", "Error (%)"), Column("limiter_cell", "Limiter"),
            Column("why", "Why"))


def prediction_table(runset: RunSet, name: str = "predicted_vs_measured") -> Table:
    """The predicted-against-measured table of ``runset``'s timed cases (one op's)."""
    rows = tuple(prediction_rows(runset))
    return Table(name, f"Predicted against measured time{mode_suffix(runset.timing)}",
                 _columns(rows), rows,
                 " ".join(reading(rows)),
                 basis="Prediction, made before timing: overhead + the largest of the memory "
                       "term (the DRAM and L2 queues and the round trips, solved by MVA), "
                       "the longest block (imbalance) and compute; the limiter is the binding "
                       "term, or for memory its longest station (dram, l2, latency). Error = "
                       "(measured - predicted) / measured x 100.")


def draw_predictions(rows: Sequence[PredictionRow], title: str):
    """Log-log predicted against measured time, one panel per family (our kernels; the
    libraries) with its median and 90th-percentile |error| in its title, y = x and the +-25 %
    error band, points coloured by limiter, own kernels filled and library ones hollow:
    ``(figure, caption)``, or why there is nothing to draw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    drawn = [r for r in rows if r.predicted_ms is not None and r.time_ms > 0]
    if not drawn:
        return "no timed case carries a predicted time"
    values = [v for r in drawn for v in (r.predicted_ms, r.time_ms)]
    lo, hi = min(values) / 1.6, max(values) * 1.6
    families = [(own, name) for own, name in FAMILIES if any(r.own is own for r in drawn)]
    fig = Figure(figsize=(10.0 if len(families) == 1 else 13.0, 5.2), dpi=110,
                 layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(families), squeeze=False)[0]
    for ax, (own, name) in zip(axes, families, strict=True):
        pick = [r for r in drawn if r.own is own]
        g = summarize(pick)
        _draw_family(ax, pick, own, lo, hi)
        ax.set_title(f"{title}\n{name}: median |error| {g.median_abs_error_pct:.1f} %, "
                     f"p90 {g.p90_abs_error_pct:.1f} % ({g.modelled} cases)", fontsize=9)
    inside = sum(abs(r.error_pct) <= BAND_PCT for r in drawn if r.error_pct is not None)
    missing = len(rows) - len(drawn)
    caption = (f"{inside} of {len(drawn)} modelled case(s) inside the ±{BAND_PCT:.0f} % band; "
               "below it a case beat its prediction (a model defect), above it ran slower")
    caption += f"; {missing} not modelled, not plotted." if missing else "."
    return fig, caption


def _draw_family(ax, rows: Sequence[PredictionRow], own: bool, lo: float, hi: float) -> None:
    """One family's panel: y = x, the +-25 % band, its points coloured by limiter (own
    kernels filled, library ones hollow)."""
    ax.plot([lo, hi], [lo, hi], color="k", lw=1, label="measured = predicted")
    # error = (m - p) / m: +25 % at m = p / 0.75, -25 % at m = p / 1.25
    ax.fill_between([lo, hi], [lo / 1.25, hi / 1.25], [lo / 0.75, hi / 0.75], color="0.85",
                    label=f"±{BAND_PCT:.0f} % error")
    for limiter in dict.fromkeys(r.limiter for r in rows):
        pick = [r for r in rows if r.limiter == limiter]
        color = LIMITER_COLORS.get(limiter, "tab:purple")
        ax.scatter([r.predicted_ms for r in pick], [r.time_ms for r in pick], s=36,
                   marker="o" if own else "s", zorder=3, color=color if own else "none",
                   edgecolors=color, label=limiter)
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
           xlabel="Predicted time (ms)", ylabel="Measured time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")


def plot_predicted_vs_measured(ctx, tables: Mapping[str, Table]):
    """SpMV's figure (declared in ``report.spmv_layout``) from its prediction table."""
    table = tables.get("predicted_vs_measured")
    rows = list(table.rows) if table is not None else []
    return draw_predictions(rows, f"Predicted against measured — {ctx.device_label}")


def prediction_markdown(runset: RunSet, op: str, title: str, fig_dir: Path | None
                        ) -> tuple[str, dict[str, list[dict]], tuple[Path, ...]]:
    """An op section's part (SpMM, slice): the summary, the table and the scatter written to
    ``<fig_dir>/ops_<op>_predicted.png``; its JSON rows as ``ops_<op>_predicted``."""
    from sparsescope.report.markdown import table_markdown
    from sparsescope.report.ops_common import save_png

    table = prediction_table(runset, f"ops_{op}_predicted")
    rows = list(table.rows)
    text = "\n".join(f"- {line}" for line in reading(rows))
    if rows:
        text += f"\n\n*{table.basis}*\n\n{table_markdown(table)}"
    written: tuple[Path, ...] = ()
    out = draw_predictions(rows, f"{title}: predicted against measured")
    if fig_dir is not None and not isinstance(out, str):
        name = f"ops_{op}_predicted.png"
        written = (save_png(out[0], fig_dir / name),)
        text += f"\n\n![{title}: predicted against measured](figures/{name})\n\n*{out[1]}*"
    json_rows = [dataclasses.asdict(r) for r in rows]
    return text, {f"ops_{op}_predicted": json_rows}, written
