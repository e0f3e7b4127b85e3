"""The rows of a stored run, and two runs side by side: what ``sparsescope results show`` and
``sparsescope results compare`` print (through :mod:`sparsescope.api.results`).

Each row of :func:`result_rows`: ``matrix``, ``backend``, ``median_ms``, ``cv`` (std / mean of
the samples), ``rel_err`` (against float64), ``eff_bw_gb_s`` and ``pct_copy_bw``. The last two
use one byte model per op for every backend -- the op's own model (``Op.model_bytes`` of
``Op.traffic_for``) at INT32 indices with y written only, the fewest bytes the case needs
(SpMV: ``spmv_traffic(index_bytes=4, y_read=False)``; SpMM: the compulsory bytes, A once, X
once, Y written; slice: the dense bound), each named in :data:`BYTE_MODELS` -- so they compare
backends by time alone::

    eff_bw_gb_s = bytes_int32 / median_time        pct_copy_bw = 100 * eff_bw / copy_bw

``copy_bw`` is the run's measured ``ceilings.copy_bw_gb_s``; ``pct_copy_bw`` is None when the
run measured none. Cases without a time (skipped, failed) have None times and bandwidths.

:func:`compare_rows`: the same cases of two runs side by side (back-to-back repeatability, or
two machines). Per (matrix, backend, op)::

    ratio = median_b / median_a        spread = |median_a - median_b| / min(median_a, median_b)

A row *agrees* when spread <= ``within``. Only ok cases count as timed; a case timed in one run
and not in the other is a disagreement, a case timed in neither is ``untimed`` and left out of
the verdict (:func:`compare_summary`).

:func:`stage_table`: where a run's time went (``RunSet.stages``, ``CaseResult.stages``), one
:class:`StageRow` per stage with its seconds and its share of the wall time::

    share = stage seconds / wall seconds        (the stages and "other" sum to the wall)

A sweep records no run total (its cases run on several workers at once): its table is the sum
over its cases, the wall being the workers' time on them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sparsescope.model.prediction import OLDER_THAN_MODEL
from sparsescope.ops.registry import get_op
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet
from sparsescope.stages import LABELS, OTHER, STAGES, StageTimes, summed

BYTE_MODEL = "spmv_traffic(index_bytes=4, y_read=False): INT32 indices, y written"
"""The one byte model :func:`result_rows` judges every SpMV backend by."""
BYTE_MODELS = {
    "spmv": BYTE_MODEL,
    "spmm": "spmm_traffic(index_bytes=4).compulsory_bytes: A as INT32 CSR once, X read once, "
            "Y written",
    "slice": "slice_traffic(index_bytes=4).dense_bytes: the selected rows read as INT32 CSR, "
             "the dense output written once",
}
"""Op -> the byte model :func:`result_rows` judges each of its backends by."""
SPREAD_FORMULA = "|a - b| / min(a, b) of the two medians"
STATUSES = ("agree", "differ", "only_a", "only_b", "untimed")
"""A compared row's status: both timed and within / not within, timed in one run only, in
neither."""


@dataclass(frozen=True)
class ResultRow:
    """One case of a run: its time, spread, error and bandwidth (INT32, y-written bytes)."""

    matrix: str
    backend: str
    median_ms: float | None
    cv: float | None
    """std / mean of the samples."""
    rel_err: float | None
    """Against the float64 reference."""
    eff_bw_gb_s: float | None
    """The op's INT32, y-written bytes (:data:`BYTE_MODELS`) over the median time."""
    pct_copy_bw: float | None
    """``eff_bw_gb_s`` as a % of the run's measured copy bandwidth (None without one)."""
    outcome: str
    params: str
    """The case's parameters (``OpParams.label()``)."""
    traffic_bytes: int | None
    """The backend's own declared bytes."""
    above_peak: str
    """Why the case reads above the peak, when it does (the stored case model)."""
    predicted_ms: float | None
    prediction_error_pct: float | None
    """Signed: (measured - predicted) / measured x 100."""
    limiter: str | None
    not_modelled: str | None
    """Why there is no prediction (None when there is one)."""


@dataclass(frozen=True)
class PredictionFields:
    """A case's stored prediction as :class:`ResultRow` carries it."""

    predicted_ms: float | None
    prediction_error_pct: float | None
    limiter: str | None
    not_modelled: str | None


def prediction_fields(case: CaseResult) -> PredictionFields:
    """``predicted_ms``, ``prediction_error_pct`` (signed: (measured - predicted) / measured x
    100), ``limiter`` and, when there is no prediction, ``not_modelled`` (the reason)."""
    p = case.prediction
    if p is None:
        return PredictionFields(None, None, None, OLDER_THAN_MODEL)
    return PredictionFields(p.predicted_ms, p.error_pct, p.limiter or None,
                            p.not_modelled or None)


def byte_model_label(op: str) -> str:
    """The byte model the bandwidth columns use for ``op``'s cases (:data:`BYTE_MODELS`; an
    op registered elsewhere: its own ``model_bytes`` at INT32 indices, y written)."""
    return BYTE_MODELS.get(op, f"{op}: Op.model_bytes(traffic_for(index_bytes=4, "
                               f"y_read=False)), INT32 indices, y written")


def int32_bytes(case: CaseResult, matrix: MatrixRecord) -> int:
    """The bytes of ``case`` by its op's byte model at INT32 indices, y written only
    (:func:`byte_model_label`), whatever widths the backend ran with."""
    st, op = matrix.stats, get_op(case.op)
    traffic = op.traffic_for(st.rows, st.cols, st.nnz, case.params, case.derived,
                             value_bytes=case.value_bytes, index_bytes=4, y_read=False)
    return op.model_bytes(traffic).total_bytes


def result_rows(runset: RunSet) -> list[ResultRow]:
    """One :class:`ResultRow` for every case of ``runset``, in the run's order."""
    matrices = {m.name: m for m in runset.matrices}
    copy_bw = runset.ceilings.copy_bw_gb_s
    rows = []
    for case in runset.cases:
        m = case.measurement
        median = m.median_ms if m is not None else None
        eff = pct = None
        matrix = matrices.get(case.matrix)
        if median is not None and median > 0 and matrix is not None:
            eff = int32_bytes(case, matrix) / (median * 1e-3) / 1e9
            pct = 100.0 * eff / copy_bw if copy_bw else None
        p = prediction_fields(case)
        rows.append(ResultRow(
            matrix=case.matrix, backend=case.backend, median_ms=median,
            cv=m.cov if m is not None else None,
            rel_err=case.correctness.rel_err if case.correctness else None,
            eff_bw_gb_s=eff, pct_copy_bw=pct, outcome=case.outcome,
            params=case.params.label(),
            traffic_bytes=case.traffic.total_bytes if case.traffic else None,
            above_peak=case.model.above_peak if case.model else "",
            predicted_ms=p.predicted_ms, prediction_error_pct=p.prediction_error_pct,
            limiter=p.limiter, not_modelled=p.not_modelled))
    return rows


# ----------------------------------------------------------------------------- compare

@dataclass(frozen=True)
class CompareRow:
    """One case in two runs: both medians (None where not timed), their ratio and spread."""

    matrix: str
    backend: str
    op: str
    median_a_ms: float | None
    median_b_ms: float | None
    ratio_b_over_a: float | None
    spread: float | None
    """|a - b| / min(a, b), where both are timed."""
    status: str
    """One of :data:`STATUSES`."""


@dataclass(frozen=True)
class CompareSummary:
    """The verdict over every compared row."""

    within: float
    rows: int
    compared: int
    """Rows timed in both runs."""
    counts: dict[str, int]
    """Rows per status, in :data:`STATUSES` order."""
    max_spread: float | None
    max_spread_case: tuple[str, str] | None
    """(matrix, backend) of the largest spread."""
    median_spread: float | None
    all_within: bool
    """Some row was compared and every row agrees or is untimed."""


def _timed_median(case: CaseResult) -> float | None:
    """The median of an ok case with samples; None for skipped and failed cases."""
    m = case.measurement
    if case.outcome != "ok" or m is None or not m.samples_ms:
        return None
    return m.median_ms


def _keyed(runset: RunSet) -> dict[tuple[str, str, str, int], CaseResult]:
    """Cases by (matrix, backend, op, occurrence): a run that holds a case twice pairs them
    in order."""
    seen: dict[tuple[str, str, str], int] = {}
    out = {}
    for case in runset.cases:
        key = (case.matrix, case.backend, case.op)
        seen[key] = seen.get(key, 0) + 1
        out[(*key, seen[key])] = case
    return out


def compare_rows(runset_a: RunSet, runset_b: RunSet, within: float) -> list[CompareRow]:
    """One row per case of A (in A's order), then the cases only B holds.

    ``status``: ``agree`` / ``differ`` (both timed), ``only_a`` / ``only_b`` (timed in one run
    only), ``untimed`` (in neither).
    """
    a, b = _keyed(runset_a), _keyed(runset_b)
    rows = []
    for key in [*a, *(k for k in b if k not in a)]:
        ta = _timed_median(a[key]) if key in a else None
        tb = _timed_median(b[key]) if key in b else None
        ratio = spread = None
        if ta is not None and tb is not None and min(ta, tb) > 0:
            ratio = tb / ta
            spread = abs(ta - tb) / min(ta, tb)
            status = "agree" if spread <= within else "differ"
        elif ta is not None:
            status = "only_a"
        elif tb is not None:
            status = "only_b"
        else:
            status = "untimed"
        rows.append(CompareRow(matrix=key[0], backend=key[1], op=key[2], median_a_ms=ta,
                               median_b_ms=tb, ratio_b_over_a=ratio, spread=spread,
                               status=status))
    return rows


def compare_summary(rows: list[CompareRow], within: float) -> CompareSummary:
    """Largest spread, counts per status, and whether every timed row agrees within."""
    compared = [r for r in rows if r.spread is not None]
    worst = max(compared, key=lambda r: r.spread, default=None)
    counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
    return CompareSummary(
        within=within, rows=len(rows), compared=len(compared), counts=counts,
        max_spread=worst.spread if worst else None,
        max_spread_case=(worst.matrix, worst.backend) if worst else None,
        median_spread=statistics.median(r.spread for r in compared) if compared else None,
        all_within=bool(compared) and counts["agree"] + counts["untimed"] == len(rows))


# ----------------------------------------------------------------------------- stages

@dataclass(frozen=True)
class StageRow:
    """One stage of a run (or of a case): its seconds and its share of the wall time."""

    stage: str
    """The stage's key (``timing``; ``other`` for time in no stage)."""
    label: str
    """How tables name it (``first run + check``)."""
    seconds: float
    share: float
    """seconds / the wall time (0..1)."""


@dataclass(frozen=True)
class CaseStages:
    """Where one case's time went."""

    matrix: str
    backend: str
    params: str
    """The case's parameters (``OpParams.label()``)."""
    wall_s: float
    rows: tuple[StageRow, ...]
    """Every stage of :data:`~sparsescope.stages.STAGES`, then ``other``."""
    queue_s: float | None
    """A sweep case: submitted by the client -> started on a worker (not in ``wall_s``)."""
    transfer_s: float | None
    """A sweep case: finished on the worker -> decoded by the client (not in ``wall_s``)."""


@dataclass(frozen=True)
class StageTable:
    """Where a run's time went (:func:`stage_table`)."""

    basis: str
    """``run``: the run's own clock, start to report; ``cases``: the sum over its cases (a
    sweep); ``none``: the results predate stage times (schema < 3)."""
    wall_s: float | None
    rows: tuple[StageRow, ...]
    """Every stage, then ``other``; empty when ``basis`` is ``none``."""
    queue_s: float | None
    """Summed over the cases that have one (a sweep)."""
    transfer_s: float | None
    cases: tuple[CaseStages, ...]
    """The cases that carry stage times, in the run's order."""


def stage_rows(times: StageTimes) -> tuple[StageRow, ...]:
    """Every stage of ``times`` (0 s where it did not happen), then ``other``."""
    return tuple(StageRow(stage=name, label=LABELS[name], seconds=times.of(name),
                          share=times.share(name)) for name in (*STAGES, OTHER))


def stage_table(runset: RunSet) -> StageTable:
    """Where ``runset``'s time went: the run's own stage times, else (a sweep) the sum over
    its cases, else (an older file) ``basis="none"`` with no rows."""
    cases = tuple(CaseStages(matrix=c.matrix, backend=c.backend, params=c.params.label(),
                             wall_s=c.stages.wall_s, rows=stage_rows(c.stages),
                             queue_s=c.stages.queue_s, transfer_s=c.stages.transfer_s)
                  for c in runset.cases if c.stages is not None)
    over_cases = summed(c.stages for c in runset.cases if c.stages is not None)
    total, basis = ((runset.stages, "run") if runset.stages is not None
                    else (over_cases, "cases") if over_cases is not None else (None, "none"))
    if total is None:
        return StageTable(basis, None, (), None, None, cases)
    return StageTable(basis=basis, wall_s=total.wall_s, rows=stage_rows(total),
                      queue_s=over_cases.queue_s if over_cases else None,
                      transfer_s=over_cases.transfer_s if over_cases else None, cases=cases)
