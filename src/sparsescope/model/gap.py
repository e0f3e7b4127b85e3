"""Gap decomposition: floor, Little's-law deficit, dependent chain and other (seed 000, 5.5)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GapDecomposition:
    """Measured time split into three stacked parts that add up to it."""

    time_ms: float
    floor_ms: float
    """bytes / peak bandwidth: irreducible."""
    littles_law_deficit_ms: float
    """Extra time because resident warps cannot keep enough bytes in flight."""
    dep_chain_and_other_ms: float
    """The rest: the dependent-load chain, grid saturation, launch overhead, excess traffic."""
    beats_littles_law: bool
    """True when the case ran faster than the Little's-law ceiling allows (deficit clipped)."""


def gap_decomposition(time_ms: float, floor_ms: float, bw_ceiling_pct: float) -> GapDecomposition:
    """Split a measured time (seed 000, section 5.5)::

        ll_time  = floor / (bw_ceiling_pct / 100)       time at the Little's-law ceiling
        deficit  = min(ll_time, time) - floor           warp-limited part
        other    = time - floor - deficit               dependent chain + everything else

    A time below the floor is impossible under the model and is reported with deficit and
    other at 0 (the byte count overstates the traffic, e.g. x served from cache).
    Seed check: cant 0.0408 ms, floor 0.0103 ms, ceiling 75.1 % -> 0.0034 + 0.0271 ms.
    """
    if bw_ceiling_pct <= 0:
        raise ValueError(f"bw_ceiling_pct must be > 0, got {bw_ceiling_pct}")
    ll_time = floor_ms / (bw_ceiling_pct / 100.0)
    capped = min(ll_time, time_ms)
    deficit = max(0.0, capped - floor_ms)
    other = max(0.0, time_ms - floor_ms - deficit)
    return GapDecomposition(
        time_ms=time_ms, floor_ms=floor_ms, littles_law_deficit_ms=deficit,
        dep_chain_and_other_ms=other, beats_littles_law=time_ms < ll_time,
    )
