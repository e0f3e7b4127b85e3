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
once, in :mod:`sparsescope.report.context`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparsescope.hardware.types import DeviceSpec
from sparsescope.report.context import ReportContext, build_context
from sparsescope.report.model_tables import gap_table, index_width_table, roofline_table
from sparsescope.report.run_tables import (
    device_table,
    matrices_table,
    outcomes_table,
    provenance_table,
)
from sparsescope.report.table_types import Table
from sparsescope.report.timing_tables import floor_table, timing_table
from sparsescope.results.records import RunSet

#: Tables that describe the run whatever op its cases ran: all a report of other ops keeps.
RUN_TABLES = ("device", "matrices", "provenance")
#: Every other table :func:`build_tables` can make (some only for some runs): SpMV cases
#: measured and modelled with SpMV's byte model, and the SpMV warp model of the GPU.
SPMV_TABLES = ("predicted_vs_measured", "seed_claims", "timing", "own_vs_peers", "auto_choice",
               "kernel_breakdown", "kernel_breakdown_all", "timing_stability",
               "bandwidth_models", "seed_comparison", "floor", "roofline", "littles_law",
               "latency_sensitivity", "gap", "dae_validated", "dae", "dae_sram", "dae_fifo",
               "cross_gpu", "index_width", "outcomes")


def build_tables(runset: RunSet, *, specs: Sequence[DeviceSpec] | None = None,
                 ctx: ReportContext | None = None, spmv: bool = True) -> list[Table]:
    """Every table of the report, in report order (``specs`` replaces the spec table).

    ``spmv=False`` (a run of other ops only, whose own tables come with their sections): only
    the :data:`RUN_TABLES`, the device's reading naming the bandwidth those sections use."""
    from sparsescope.report import gpu_tables as gt
    from sparsescope.report import warp_tables as wt
    from sparsescope.report.dae_validated import dae_validated_table
    from sparsescope.report.memory_floor_table import memory_floor_table
    from sparsescope.report.peer_tables import own_vs_peer_table
    from sparsescope.report.prediction_tables import prediction_table
    from sparsescope.report.seed_claims import seed_claims_table
    from sparsescope.report.seed_comparison import seed_comparison_table
    from sparsescope.report.selection_tables import auto_choice_table

    ctx = ctx or build_context(runset, specs=specs)
    if not spmv:
        return [device_table(ctx, spmv=False), matrices_table(ctx), provenance_table(ctx)]
    # Shown only when the run has them: kernel breakdowns, a seed matrix timed as the seed did.
    kernels = gt.kernel_breakdown_tables(ctx) or ()
    seed = seed_comparison_table(ctx)
    peers = own_vs_peer_table(ctx)
    choice = auto_choice_table(ctx)
    floors = memory_floor_table(ctx)
    return [
        device_table(ctx), matrices_table(ctx), prediction_table(ctx.runset),
        seed_claims_table(ctx.runset), timing_table(ctx), *([peers] if peers else []),
        *([choice] if choice else []),
        *kernels,
        gt.stability_table(ctx), gt.bandwidth_models_table(ctx), *([seed] if seed else []),
        floor_table(ctx), *([floors] if floors else []), roofline_table(ctx),
        wt.littles_law_table(ctx),
        wt.sensitivity_table(ctx), gap_table(ctx), dae_validated_table(ctx.runset),
        wt.dae_table(ctx), wt.sram_table(ctx),
        wt.fifo_table(ctx), wt.cross_gpu_table(ctx), index_width_table(ctx),
        outcomes_table(ctx), provenance_table(ctx),
    ]
