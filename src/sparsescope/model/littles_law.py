"""Little's law for the memory system: how many warps a GPU needs to keep DRAM busy.

Seed 000 sections 5.3, 5.4, 7.3 and 12.3. The model: each warp keeps ``requests_per_warp``
cache-line requests of ``line_bytes`` in flight; a dependent load chain of length
``chain_length`` (``col[j] -> x[col]`` is 2) lets a warp keep only 1/chain_length of that.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from sparsescope.model.concurrency import DEP_CHAIN_LENGTH, LINE_BYTES, dae_bw_prediction
from sparsescope.model.spmv import GB

__all__ = [
    "DEP_CHAIN_LENGTH", "LINE_BYTES", "LittlesLaw", "SensitivityRow", "bw_ceiling_from_max_warps",
    "ceiling_pct", "latency_sensitivity", "littles_law", "occupancy_adjusted_ceiling_pct",
    "warps_per_sm_required",
]


@dataclass(frozen=True)
class LittlesLaw:
    """Little's-law figures of one GPU at one latency (seed 000, sections 5.3-5.4, 7.3)."""

    bw_gb_s: float
    latency_ns: float
    sm_count: int
    max_warps_per_sm: int
    line_bytes: int
    outstanding_bytes: float
    """bw x latency: bytes that must be in flight to sustain ``bw``."""
    outstanding_bytes_per_sm: float
    """outstanding_bytes / sm_count."""
    warps_per_sm_required: float
    """outstanding_bytes_per_sm / (line_bytes x requests_per_warp)."""
    warp_deficit: float
    """required - available warps per SM (negative: surplus)."""
    headroom: float
    """available / required warps per SM."""
    bw_ceiling_pct: float
    """100 x min(1, available / required): ceiling at 100% occupancy, independent loads."""
    dep_chain_ceiling_pct: float
    """100 x min(1, available / chain_length / required): with the dependent-load chain."""

    @property
    def bw_ceiling_gb_s(self) -> float:
        return self.bw_gb_s * self.bw_ceiling_pct / 100.0

    @property
    def dep_chain_ceiling_gb_s(self) -> float:
        return self.bw_gb_s * self.dep_chain_ceiling_pct / 100.0


def warps_per_sm_required(bw_gb_s: float, latency_ns: float, sm_count: int, *,
                          line_bytes: int = LINE_BYTES, requests_per_warp: float = 1.0) -> float:
    """required warps/SM = bw x latency / sm_count / (line_bytes x requests_per_warp).

    Seed check (section 5.3): 4,800 GB/s x 300 ns = 1.44 MB; / 132 SMs = 10,909 B/SM;
    / 128 B = 85.2 warps/SM.
    """
    outstanding = bw_gb_s * GB * latency_ns * 1e-9
    return outstanding / sm_count / (line_bytes * requests_per_warp)


def ceiling_pct(effective_warps_per_sm: float, required_warps_per_sm: float) -> float:
    """Bandwidth ceiling (% of bw) when only ``effective`` warps keep a request in flight::

        ceiling = 100 x min(1, effective / required)

    Seed checks: 64 / 85.2 = 75.1 % (5.3); 32 / 85.2 = 37.5 % (5.4); 15.3 / 85.2 = 18.0 % (5.4).
    """
    if required_warps_per_sm <= 0:
        return 100.0
    return 100.0 * min(1.0, effective_warps_per_sm / required_warps_per_sm)


def littles_law(bw_gb_s: float, latency_ns: float, sm_count: int, max_warps_per_sm: int, *,
                line_bytes: int = LINE_BYTES, chain_length: int = DEP_CHAIN_LENGTH) -> LittlesLaw:
    """All of seed 000 section 5.3-5.4 for one GPU and one latency."""
    required = warps_per_sm_required(bw_gb_s, latency_ns, sm_count, line_bytes=line_bytes)
    outstanding = bw_gb_s * GB * latency_ns * 1e-9
    return LittlesLaw(
        bw_gb_s=bw_gb_s, latency_ns=latency_ns, sm_count=sm_count,
        max_warps_per_sm=max_warps_per_sm, line_bytes=line_bytes,
        outstanding_bytes=outstanding,
        outstanding_bytes_per_sm=outstanding / sm_count,
        warps_per_sm_required=required,
        warp_deficit=required - max_warps_per_sm,
        headroom=max_warps_per_sm / required if required > 0 else math.inf,
        bw_ceiling_pct=ceiling_pct(max_warps_per_sm, required),
        dep_chain_ceiling_pct=ceiling_pct(max_warps_per_sm / chain_length, required),
    )


def occupancy_adjusted_ceiling_pct(active_warps_per_sm: float, required_warps_per_sm: float, *,
                                   chain_length: int = DEP_CHAIN_LENGTH) -> float:
    """Naive dependent-chain ceiling at the achieved occupancy (seed 000, section 5.4)::

        ceiling = 100 x min(1, active_warps / chain_length / required)

    Seed check: 48 % occupancy -> 30.7 warps/SM, /2 = 15.3, / 85.2 = 18.0 %.
    """
    return ceiling_pct(active_warps_per_sm / chain_length, required_warps_per_sm)


def bw_ceiling_from_max_warps(bw_gb_s: float, max_warps_per_sm: int,
                              required_warps_per_sm: float) -> float:
    """Largest bandwidth (GB/s) the resident warps can sustain: bw x min(1, max / required)."""
    return bw_gb_s * ceiling_pct(max_warps_per_sm, required_warps_per_sm) / 100.0


@dataclass(frozen=True)
class SensitivityRow:
    """One latency of the sensitivity sweep (seed 000, sections 5.3 and 12.3)."""

    latency_ns: float
    warps_per_sm_required: float
    bw_ceiling_pct: float
    bw_ceiling_gb_s: float
    dep_chain_ceiling_pct: float
    dep_chain_ceiling_gb_s: float
    dae_ceiling_pct: float
    """Ceiling with a decoupled access-execute FIFO of ``dae_depth`` entries per warp."""
    dae_ceiling_gb_s: float
    dae_bw_speedup: float | None
    """BW-based DAE speedup for the case judged (None when no case was given)."""


def latency_sensitivity(bw_gb_s: float, sm_count: int, max_warps_per_sm: int,
                        latencies_ns: Iterable[float] = (200.0, 300.0, 400.0), *,
                        current_pct: float | None = None, dae_depth: int = 2,
                        line_bytes: int = LINE_BYTES,
                        chain_length: int = DEP_CHAIN_LENGTH) -> list[SensitivityRow]:
    """Little's-law ceilings swept over DRAM latency (seed 000, section 12.3).

    ``dae_ceiling = 100 x min(1, max_warps x dae_depth / required)``; the BW-based DAE speedup of
    a case at ``current_pct`` of peak is ``min(bw_ceiling, mlp_gain x current) / current`` with
    the MLP gain equal to the chain length (see
    :func:`sparsescope.model.concurrency.dae_bw_prediction`).
    Seed checks: 200 / 300 / 400 ns -> 56.8 / 85.2 / 113.6 warps/SM, ceilings 100 / 75.1 / 56.3 %,
    dep-chain 56.3 / 37.5 / 28.2 %, cage15 (57.2 %) speedups 1.75 / 1.31 / 0.98.
    """
    rows = []
    for latency in latencies_ns:
        ll = littles_law(bw_gb_s, latency, sm_count, max_warps_per_sm, line_bytes=line_bytes,
                         chain_length=chain_length)
        dae_pct = ceiling_pct(max_warps_per_sm * dae_depth, ll.warps_per_sm_required)
        speedup = None
        if current_pct is not None and current_pct > 0:
            speedup = dae_bw_prediction(current_pct, ll.bw_ceiling_pct,
                                        mlp_gain=chain_length).speedup
        rows.append(SensitivityRow(
            latency_ns=float(latency), warps_per_sm_required=ll.warps_per_sm_required,
            bw_ceiling_pct=ll.bw_ceiling_pct, bw_ceiling_gb_s=ll.bw_ceiling_gb_s,
            dep_chain_ceiling_pct=ll.dep_chain_ceiling_pct,
            dep_chain_ceiling_gb_s=ll.dep_chain_ceiling_gb_s,
            dae_ceiling_pct=dae_pct, dae_ceiling_gb_s=bw_gb_s * dae_pct / 100.0,
            dae_bw_speedup=speedup,
        ))
    return rows
