"""Each timed case's model values (``CaseResult.model``), computed once from the run's own
records: the op's byte model of the case (from the matrix statistics and the case's typed
parameters) against the run's bandwidths. ``api.run`` stores them before writing; the report
reads them, and computes them the same way for an older file that lacks them."""

from __future__ import annotations

from dataclasses import replace

from sparsescope.model.case_model import CaseModel, ModelBytes, above_peak_cause, case_model
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


def model_traffic(case: CaseResult, matrix: MatrixRecord, index_bytes: int | None = None):
    """The op's byte model of ``case`` (``Op.traffic_for``), at the case's index width or at
    ``index_bytes`` (4: the INT32-CSR-equivalent bytes every format is compared by)."""
    st = matrix.stats
    return get_op(case.op).traffic_for(
        st.rows, st.cols, st.nnz, case.params, case.derived, value_bytes=case.value_bytes,
        index_bytes=case.index_bytes if index_bytes is None else index_bytes,
        y_read=case.y_read)


def model_of(case: CaseResult, matrix: MatrixRecord, basis_gb_s: float,
             copy_gb_s: float | None, l2_bytes: int = 0) -> CaseModel | None:
    """The stored model of ``case``, or the values computed now; None when not timed.

    Bytes: the backend's declared ``Traffic`` (its own format) when the case has one, else the
    op's byte model (older results files, which keep their numbers)."""
    if case.model is not None:
        return case.model
    if case.outcome != "ok" or case.measurement is None or not case.measurement.time_ms > 0:
        return None
    op_bytes = get_op(case.op).model_bytes(model_traffic(case, matrix))
    charged, basis = op_bytes, "op model"
    if case.traffic is not None and case.traffic.total_bytes > 0:
        charged = ModelBytes(case.traffic.total_bytes, case.traffic.flops or op_bytes.flops)
        basis = "declared"
    if charged.total_bytes <= 0:
        return None
    time_ms = case.measurement.time_ms
    csr32 = get_op(case.op).model_bytes(model_traffic(case, matrix, index_bytes=4))
    model = case_model(charged, time_ms, basis_gb_s, copy_gb_s, bytes_basis=basis,
                       csr_bytes=csr32.total_bytes)
    cause = above_peak_cause(model.peak.pct_peak, model.copy.pct_peak if model.copy else None,
                             charged.total_bytes, l2_bytes, case.measurement.flushed)
    return replace(model, above_peak=cause)


def with_case_models(runset: RunSet) -> RunSet:
    """``runset`` with every timed case's :class:`CaseModel` filled in."""
    basis, copy = bandwidths(runset)
    matrices = {m.name: m for m in runset.matrices}
    l2 = runset.device.l2_bytes
    cases = tuple(replace(c, model=model_of(c, matrices[c.matrix], basis, copy, l2))
                  if c.matrix in matrices else c for c in runset.cases)
    return replace(runset, cases=cases)
