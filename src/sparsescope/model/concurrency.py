"""Memory-level-parallelism assumptions and the BW-based DAE prediction (seed 000, 5.3, 7.7).

The bottom of the warp model: :mod:`~sparsescope.model.littles_law` (the ceilings) and
:mod:`~sparsescope.model.dae` (FIFO depth, SRAM, cross-GPU) both build on it, so the
dependency runs one way: ``concurrency <- littles_law <- dae``. Nothing here imports another
sparsescope module.
"""

from __future__ import annotations

from dataclasses import dataclass

LINE_BYTES = 128
"""One outstanding L1/L2 cache-line request per warp, as the seed assumes."""
DEP_CHAIN_LENGTH = 2
"""CSR SpMV's chain ``col_indices[j] -> x[col]``: two dependent loads."""


@dataclass(frozen=True)
class DaePrediction:
    """BW-based DAE prediction for one measured case (seed 000, section 7.7)."""

    current_pct: float
    predicted_pct: float
    """min(Little's-law ceiling, mlp_gain x current)."""
    speedup: float
    """predicted / current."""
    limited_by: str
    """``littles_law`` (ceiling reached) or ``mlp_gain`` (doubling MLP is not enough)."""


def dae_bw_prediction(current_pct: float, bw_ceiling_pct: float, *,
                      mlp_gain: float = DEP_CHAIN_LENGTH) -> DaePrediction:
    """BW-based DAE speedup (seed 000, section 7.7)::

        predicted = min(littles_law_ceiling, mlp_gain x current)     speedup = predicted / current

    DAE restores one request per warp (MLP x chain_length) but cannot exceed the ceiling of
    the resident warps. Seed checks: cage15 57.2 % -> 75.1 %, 1.31x; cant 25.1 % -> 50.2 %, 2.00x.
    """
    if current_pct <= 0:
        raise ValueError(f"current_pct must be > 0, got {current_pct}")
    doubled = mlp_gain * current_pct
    predicted = min(bw_ceiling_pct, doubled)
    return DaePrediction(current_pct=current_pct, predicted_pct=predicted,
                         speedup=predicted / current_pct,
                         limited_by="littles_law" if bw_ceiling_pct <= doubled else "mlp_gain")
