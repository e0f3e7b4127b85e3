"""Each timed case's model values (``CaseResult.model``), computed once from the run's own
records: the op's byte model of the case (from the matrix statistics and the case's typed
parameters) against the run's bandwidths. ``api.run`` stores them before writing; the report
reads them, and computes them the same way for an older file that lacks them."""

from __future__ import annotations

from dataclasses import replace

from sparsescope.model.case_model import CaseModel, case_model
from sparsescope.ops.registry import get_op
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet


def bandwidths(runset: RunSet) -> tuple[float, float | None]:
    """(basis, copy) GB/s: the device's peak (a CPU's is its measured copy) and the measured
    copy bandwidth when it is a second, different figure (None otherwise)."""
    device, copy = runset.device, runset.ceilings.copy_bw_gb_s
    copy = copy if copy is not None and copy > 0 else None
    if copy is not None and device.kind != "gpu" and abs(copy - device.peak_bw_gb_s) <= 1e-9 * copy:
        copy = None  # on a CPU the peak already is the measured copy: no second figure
    return device.peak_bw_gb_s, copy


def model_traffic(case: CaseResult, matrix: MatrixRecord):
    """The op's byte model of ``case`` (``Op.traffic_for``)."""
    st = matrix.stats
    return get_op(case.op).traffic_for(st.rows, st.cols, st.nnz, case.params, case.derived,
                                       value_bytes=case.value_bytes,
                                       index_bytes=case.index_bytes, y_read=case.y_read)


def model_of(case: CaseResult, matrix: MatrixRecord, basis_gb_s: float,
             copy_gb_s: float | None) -> CaseModel | None:
    """The stored model of ``case``, or the same values computed now; None when not timed."""
    if case.model is not None:
        return case.model
    if case.outcome != "ok" or case.measurement is None or not case.measurement.time_ms > 0:
        return None
    charged = get_op(case.op).model_bytes(model_traffic(case, matrix))
    if charged.total_bytes <= 0:
        return None
    return case_model(charged, case.measurement.time_ms, basis_gb_s, copy_gb_s)


def with_case_models(runset: RunSet) -> RunSet:
    """``runset`` with every timed case's :class:`CaseModel` filled in."""
    basis, copy = bandwidths(runset)
    matrices = {m.name: m for m in runset.matrices}
    cases = tuple(replace(c, model=model_of(c, matrices[c.matrix], basis, copy))
                  if c.matrix in matrices else c for c in runset.cases)
    return replace(runset, cases=cases)
