"""Decoupled access-execute (DAE) what-if (Smith, ISCA 1982); seed 000 sections 7.6-7.11.

A DAE access unit runs ahead of execution and keeps ``depth`` loads per warp in flight through
a hardware FIFO, which breaks the ``col[j] -> x[col]`` chain. These functions answer: how deep a
FIFO, at what SRAM cost, for what bandwidth ceiling and speedup. The BW-based prediction
(:class:`DaePrediction`, :func:`dae_bw_prediction`) lives in :mod:`sparsescope.model.concurrency`,
below :mod:`sparsescope.model.littles_law`, and is re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from sparsescope.model.concurrency import (
    DEP_CHAIN_LENGTH,
    LINE_BYTES,
    DaePrediction,
    dae_bw_prediction,
)
from sparsescope.model.littles_law import ceiling_pct, littles_law, warps_per_sm_required

__all__ = [
    "CpiPrediction", "CrossGpuRow", "DaePrediction", "FifoDepthRow", "SramCostRow",
    "cross_gpu_row", "dae_bw_prediction", "dae_cpi_prediction", "fifo_depth_table",
    "min_fifo_depth", "sram_cost_table",
]


@dataclass(frozen=True)
class FifoDepthRow:
    """One FIFO depth of seed 000 section 7.9."""

    depth: int
    outstanding_requests_per_sm: float
    """depth x max_warps (depth 0: max_warps / chain_length, the chain-limited baseline)."""
    ceiling_pct: float
    """100 x min(1, outstanding / required)."""


def fifo_depth_table(required_warps_per_sm: float, max_warps_per_sm: int,
                     depths: Iterable[int] = (0, 1, 2, 4, 8, 16, 32), *,
                     chain_length: int = DEP_CHAIN_LENGTH) -> list[FifoDepthRow]:
    """Bandwidth ceiling against FIFO depth (seed 000, section 7.9)::

        outstanding(0) = max_warps / chain_length      (no FIFO: the chain halves MLP)
        outstanding(d) = max_warps x d                  (d >= 1)
        ceiling(d)     = 100 x min(1, outstanding(d) / required)

    Seed check (H200, 300 ns): depth 0 -> 32 requests, 37.5 %; 1 -> 64, 75.1 %; 2 -> 100 %.
    """
    rows = []
    for depth in depths:
        outstanding = (max_warps_per_sm / chain_length) if depth == 0 else max_warps_per_sm * depth
        rows.append(FifoDepthRow(depth=depth, outstanding_requests_per_sm=outstanding,
                                 ceiling_pct=ceiling_pct(outstanding, required_warps_per_sm)))
    return rows


def min_fifo_depth(required_warps_per_sm: float, max_warps_per_sm: int) -> int:
    """Smallest depth that saturates bandwidth: ceil(required / max_warps) (seed 7.8: 2)."""
    return max(1, math.ceil(required_warps_per_sm / max_warps_per_sm))


@dataclass(frozen=True)
class SramCostRow:
    """SRAM for one FIFO depth (seed 000, section 7.8)."""

    depth: int
    bytes_per_warp: int
    """depth x entry_bytes."""
    kib_per_sm: float
    """bytes_per_warp x max_warps / 1024."""
    total_mib: float
    """kib_per_sm x sm_count / 1024 (the seed's 'MB' are MiB)."""
    pct_of_register_file: float
    """100 x bytes per SM / (registers_per_sm x 4 B)."""


def sram_cost_table(sm_count: int, max_warps_per_sm: int, registers_per_sm: int,
                    depths: Iterable[int] = (2, 8, 16, 32, 64), *,
                    entry_bytes: int = 8) -> list[SramCostRow]:
    """FIFO SRAM cost per depth (seed 000, section 7.8); an entry is 4 B data + 4 B paired value.

    Seed check (H200): depth 32 -> 256 B/warp, 16.0 KiB/SM, 2.06 MiB in all, 6.3 % of the RF.
    """
    register_file_bytes = registers_per_sm * 4
    rows = []
    for depth in depths:
        per_warp = depth * entry_bytes
        per_sm = per_warp * max_warps_per_sm
        rows.append(SramCostRow(
            depth=depth, bytes_per_warp=per_warp, kib_per_sm=per_sm / 1024,
            total_mib=per_sm * sm_count / 2**20,
            pct_of_register_file=100.0 * per_sm / register_file_bytes,
        ))
    return rows


@dataclass(frozen=True)
class CpiPrediction:
    """CPI-based DAE speedup: remove one stall reason from the CPI (seed 000, section 7.7)."""

    cpi: float
    removed_stall_cycles: float
    projected_cpi: float
    """cpi - removed_stall_cycles."""
    speedup: float
    """cpi / projected_cpi."""


def dae_cpi_prediction(cpi: float, long_scoreboard_cycles: float) -> CpiPrediction:
    """CPI-based speedup if Long Scoreboard stalls vanished (seed 000, section 7.7)::

        projected = cpi - long_scoreboard        speedup = cpi / projected

    Seed checks: cant 11.3 - 4.25 -> 7.1, 1.60x; ldoor 10.3 - 3.41 -> 1.49x; cage15 1.62x.
    """
    projected = cpi - long_scoreboard_cycles
    if projected <= 0:
        raise ValueError(f"stall cycles {long_scoreboard_cycles} must be below the CPI {cpi}")
    return CpiPrediction(cpi=cpi, removed_stall_cycles=long_scoreboard_cycles,
                         projected_cpi=projected, speedup=cpi / projected)


@dataclass(frozen=True)
class CrossGpuRow:
    """One GPU of the cross-GPU DAE table (seed 000, sections 7.10-7.11)."""

    gpu: str
    bw_gb_s: float
    sm_count: int
    max_warps_per_sm: int
    latency_ns: float
    warps_per_sm_required: float
    warp_deficit: float
    headroom: float
    bw_ceiling_pct: float
    dep_chain_ceiling_pct: float
    min_fifo_depth: int
    current_pct: float | None
    """Best measured % of peak on this GPU, when a measurement exists."""
    dae_speedup: float | None
    """BW-based DAE speedup at current_pct (None without a measurement)."""


def cross_gpu_row(gpu: str, bw_gb_s: float, sm_count: int, max_warps_per_sm: int,
                  latency_ns: float, *, current_pct: float | None = None,
                  line_bytes: int = LINE_BYTES) -> CrossGpuRow:
    """Little's law and DAE for one GPU (seed 000, 7.10: B200 at 200 ns needs 84.5 warps/SM)."""
    ll = littles_law(bw_gb_s, latency_ns, sm_count, max_warps_per_sm, line_bytes=line_bytes)
    speedup = None
    if current_pct:
        speedup = dae_bw_prediction(current_pct, ll.bw_ceiling_pct).speedup
    required = warps_per_sm_required(bw_gb_s, latency_ns, sm_count, line_bytes=line_bytes)
    return CrossGpuRow(
        gpu=gpu, bw_gb_s=bw_gb_s, sm_count=sm_count, max_warps_per_sm=max_warps_per_sm,
        latency_ns=latency_ns, warps_per_sm_required=required, warp_deficit=ll.warp_deficit,
        headroom=ll.headroom, bw_ceiling_pct=ll.bw_ceiling_pct,
        dep_chain_ceiling_pct=ll.dep_chain_ceiling_pct,
        min_fifo_depth=min_fifo_depth(required, max_warps_per_sm),
        current_pct=current_pct, dae_speedup=speedup,
    )
