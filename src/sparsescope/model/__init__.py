"""First-principles performance model: bytes, floor, roofline, Little's law, gaps, DAE.

Every function is pure, states its formula and its source (a seed report section) in its
docstring, and takes its inputs (spec table, measured times, measured ceilings) as arguments.
"""

from sparsescope.model.concurrency import DaePrediction, dae_bw_prediction
from sparsescope.model.dae import (
    CpiPrediction,
    CrossGpuRow,
    FifoDepthRow,
    SramCostRow,
    cross_gpu_row,
    dae_cpi_prediction,
    fifo_depth_table,
    min_fifo_depth,
    sram_cost_table,
)
from sparsescope.model.gap import GapDecomposition, gap_decomposition
from sparsescope.model.index_width import IndexWidthRow, index_width_row
from sparsescope.model.littles_law import (
    LittlesLaw,
    SensitivityRow,
    bw_ceiling_from_max_warps,
    ceiling_pct,
    latency_sensitivity,
    littles_law,
    occupancy_adjusted_ceiling_pct,
    warps_per_sm_required,
)
from sparsescope.model.roofline import (
    RooflinePoint,
    attainable_gflops,
    ridge_point,
    roofline_point,
)
from sparsescope.model.spmv import (
    CaseMetrics,
    SpmvTraffic,
    case_metrics,
    physical_floor_ms,
    spmv_traffic,
)

__all__ = [
    "CaseMetrics", "CpiPrediction", "CrossGpuRow", "DaePrediction", "FifoDepthRow",
    "GapDecomposition", "IndexWidthRow", "LittlesLaw", "RooflinePoint", "SensitivityRow",
    "SpmvTraffic", "SramCostRow", "attainable_gflops", "bw_ceiling_from_max_warps",
    "case_metrics", "ceiling_pct", "cross_gpu_row", "dae_bw_prediction", "dae_cpi_prediction",
    "fifo_depth_table", "gap_decomposition", "index_width_row", "latency_sensitivity",
    "littles_law", "min_fifo_depth", "occupancy_adjusted_ceiling_pct", "physical_floor_ms",
    "ridge_point", "roofline_point", "sram_cost_table", "spmv_traffic", "warps_per_sm_required",
]
