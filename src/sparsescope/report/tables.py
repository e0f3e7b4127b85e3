"""Report tables computed from a RunSet: typed rows, units in the field names, a reading each.

``build_tables(runset)`` returns every table in report order. The tables live by family: what
ran (device, matrices, outcomes, provenance) in :mod:`sparsescope.report.run_tables`; measured
time and the physical floor in :mod:`sparsescope.report.timing_tables`; the roofline, gap
decomposition and index-width models in :mod:`sparsescope.report.model_tables`; predicted
against measured time in :mod:`sparsescope.report.prediction_tables`, the DAE what-if
validated by staged / unstaged pairs in :mod:`sparsescope.report.dae_validated` and seed 000's
claims checked in :mod:`sparsescope.report.seed_claims`; kernel
breakdown, byte models and stability in :mod:`sparsescope.report.gpu_tables`; the warp-based
ones (Little's law, latency sensitivity, DAE, cross-GPU) in
:mod:`sparsescope.report.warp_tables`. Which bandwidth and which GPU each table uses is decided
once, in :mod:`sparsescope.report.context`. Which SpMV tables there are, in which section, and
the figures under each, is declared once, in :mod:`sparsescope.report.spmv_layout`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparsescope.hardware.types import DeviceSpec
from sparsescope.report.context import ReportContext, build_context
from sparsescope.report.run_tables import device_table, matrices_table, provenance_table
from sparsescope.report.spmv_layout import SPMV_TABLES, build_spmv_tables
from sparsescope.report.table_types import Table
from sparsescope.results.records import RunSet

__all__ = ["RUN_TABLES", "SPMV_TABLES", "build_tables"]

#: Tables that describe the run whatever op its cases ran: all a report of other ops keeps
#: (``report.document`` lays them out: the device and the matrices first, provenance last).
RUN_TABLES = ("device", "matrices", "provenance")


def build_tables(runset: RunSet, *, specs: Sequence[DeviceSpec] | None = None,
                 ctx: ReportContext | None = None, spmv: bool = True,
                 reference_gpu: str | None = None) -> list[Table]:
    """Every table of the report, in report order (``specs`` replaces the spec table): the
    :data:`RUN_TABLES` around SpMV's tables (declared in :mod:`sparsescope.report.spmv_layout`);
    ``reference_gpu``: the GPU of a CPU run's warp model (``report.context``).

    ``spmv=False`` (a run of other ops only, whose own tables come with their sections): only
    the :data:`RUN_TABLES`, the device's reading naming the bandwidth those sections use."""
    ctx = ctx or build_context(runset, specs=specs, reference_gpu=reference_gpu)
    spmv_tables = build_spmv_tables(ctx) if spmv else []
    return [device_table(ctx, spmv=spmv), matrices_table(ctx), *spmv_tables,
            provenance_table(ctx)]
