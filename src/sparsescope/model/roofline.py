"""Roofline model (Williams, Waterman & Patterson, CACM 2009); seed 000 sections 5.1 and 6."""

from __future__ import annotations

from dataclasses import dataclass


def ridge_point(fp32_peak_gflops: float, bw_gb_s: float) -> float:
    """Ridge point = peak FLOP/s / peak bytes/s (FLOP/byte).

    Seed check (section 5.1): H200, 66,900 GFLOP/s / 4,800 GB/s = 13.9 FLOP/byte.
    """
    return fp32_peak_gflops / bw_gb_s


def attainable_gflops(ai: float, fp32_peak_gflops: float, bw_gb_s: float) -> float:
    """Roofline: attainable = min(peak FLOP/s, AI x bandwidth), GFLOP/s."""
    return min(fp32_peak_gflops, ai * bw_gb_s)


@dataclass(frozen=True)
class RooflinePoint:
    """One measured case placed on the roofline."""

    label: str
    arithmetic_intensity: float
    """FLOP/byte."""
    gflops: float
    """Measured GFLOP/s."""
    attainable_gflops: float
    """The roof at this AI."""
    below_ridge_factor: float
    """ridge / AI: how far left of the ridge the case sits (seed: SpMV is 85-119x below)."""
    memory_bound: bool
    """AI < ridge."""


def roofline_point(label: str, ai: float, gflops: float, fp32_peak_gflops: float,
                   bw_gb_s: float) -> RooflinePoint:
    """Place a case on the roofline of a device (peak FP32 and a bandwidth)."""
    ridge = ridge_point(fp32_peak_gflops, bw_gb_s)
    return RooflinePoint(
        label=label, arithmetic_intensity=ai, gflops=gflops,
        attainable_gflops=attainable_gflops(ai, fp32_peak_gflops, bw_gb_s),
        below_ridge_factor=ridge / ai if ai > 0 else float("inf"),
        memory_bound=ai < ridge,
    )
