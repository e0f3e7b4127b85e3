"""Latency checks on measured profiles: Little's law at the measured occupancy and DRAM latency
(seed 000 sections 5.3-5.4), and the two DAE estimates of its section 7.7 from measured stalls and
measured DRAM throughput.

    required warps/SM  = bw x latency / SMs / 128 B          (model.littles_law)
    ceiling            = 100 x min(1, active warps / required)        one line in flight per warp
    chain ceiling      = 100 x min(1, active warps / 2 / required)    the col[j] -> x[col] chain
    achieved           = (dram bytes read + written) / duration, % of bw
    lines per warp     = achieved x latency / SMs / 128 B / active warps   (Little's law inverted)
    CPI-based DAE      = CPI / (CPI - long_scoreboard)                     (model.dae)
    BW-based DAE       = min(ceiling at max warps, 2 x achieved %) / achieved %

``bw`` and ``latency`` come from :class:`~sparsescope.profile.ceilings.RooflineCeilings` (measured
where the run measured them, else the spec table), each labelled with its kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparsescope.model.dae import dae_bw_prediction
from sparsescope.model.littles_law import (
    LINE_BYTES,
    ceiling_pct,
    littles_law,
    occupancy_adjusted_ceiling_pct,
)
from sparsescope.profile import metrics as M
from sparsescope.profile.analysis import cpi_speedup, top_level_row
from sparsescope.profile.ceilings import RooflineCeilings
from sparsescope.profile.records import KernelProfile

#: Achieved within this fraction of a ceiling counts as "at" it.
AT_CEILING = 0.9


def achieved_dram_gb_s(profile: KernelProfile) -> float | None:
    """(dram__bytes_read.sum + dram__bytes_write.sum) / gpu__time_duration.sum, in GB/s (sectors
    x 32 when the byte counters are absent)."""
    read, write = profile.value("dram__bytes_read.sum"), profile.value("dram__bytes_write.sum")
    if read is None or write is None:
        sectors = [profile.value(n) for n in M.DRAM_SECTORS]
        if any(s is None for s in sectors):
            return None
        read, write = 32.0 * sectors[0], 32.0 * sectors[1]  # type: ignore[operator]
    if not profile.duration_ns:
        return None
    return (read + write) / profile.duration_ns


@dataclass(frozen=True)
class LittlesLawCheck:
    """Little's law for one kernel at its measured occupancy."""

    kernel: str
    active_warps_per_sm: float
    latency_ns: float
    bw_gb_s: float
    required_warps_per_sm: float
    ceiling_pct: float
    """One 128-byte line in flight per active warp."""
    chain_ceiling_pct: float
    """Half of that: the dependent col -> x chain (seed 5.4)."""
    achieved_gb_s: float | None
    achieved_pct: float | None
    lines_in_flight_per_warp: float | None
    """Lines each active warp keeps in flight on average to reach the achieved bandwidth."""
    verdict: str


def _verdict(achieved: float | None, ceiling: float, chain: float) -> str:
    if achieved is None:
        return "no DRAM traffic figures in the profile"
    if achieved >= AT_CEILING * ceiling:
        return ("at the ceiling of its resident warps: only more warps or more lines in flight "
                "per warp raise it")
    if achieved > chain:
        return ("between the chain and one-line ceilings: consistent with the dependent "
                "col -> x loads limiting memory-level parallelism")
    return ("below even the chain ceiling: fewer lines in flight than the warps allow (issue, "
            "load imbalance or a short kernel), not memory parallelism, limits it")


def littles_law_check(profile: KernelProfile, ceilings: RooflineCeilings,
                      label: str | None = None) -> LittlesLawCheck | None:
    """None when the profile lacks the occupancy or the ceilings lack bandwidth, latency or SMs."""
    active = top_level_row(profile).active_warps_per_sm
    bw, latency, sms = ceilings.dram_gb_s, ceilings.dram_latency_ns, ceilings.sm_count
    if active is None or not active or bw is None or latency is None or not sms:
        return None
    ll = littles_law(bw.value, latency.value, sms, ceilings.max_warps_per_sm or 64)
    required = ll.warps_per_sm_required
    achieved = achieved_dram_gb_s(profile)
    pct = None if achieved is None else 100.0 * achieved / bw.value
    lines = None
    if achieved is not None:
        lines = achieved * latency.value / sms / LINE_BYTES / active
    ceiling = ceiling_pct(active, required)
    chain = occupancy_adjusted_ceiling_pct(active, required)
    return LittlesLawCheck(label or profile.name, active, latency.value, bw.value, required,
                           ceiling, chain, achieved, pct, lines, _verdict(pct, ceiling, chain))


def littles_law_checks(profiles: Sequence[KernelProfile], labels: Sequence[str],
                       ceilings: RooflineCeilings) -> tuple[LittlesLawCheck, ...]:
    rows = (littles_law_check(p, ceilings, lab) for p, lab in zip(profiles, labels, strict=True))
    return tuple(r for r in rows if r is not None)


@dataclass(frozen=True)
class DaeEstimate:
    """Seed 000 section 7.7's two DAE estimates for one kernel, from measured figures."""

    kernel: str
    cpi: float | None
    long_scoreboard: float | None
    cpi_speedup: float | None
    """CPI / (CPI - long_scoreboard)."""
    achieved_pct: float | None
    """Achieved DRAM bandwidth, % of the ceiling bandwidth."""
    bw_ceiling_pct: float | None
    """Little's-law ceiling at 100 % occupancy (max warps, one line each)."""
    bw_speedup: float | None
    """min(ceiling, 2 x achieved) / achieved."""
    limited_by: str
    """``littles_law`` or ``mlp_gain`` (BW-based), empty when not computed."""


def dae_estimate(profile: KernelProfile, ceilings: RooflineCeilings,
                 label: str | None = None) -> DaeEstimate | None:
    """None when neither estimate can be computed."""
    cpi_row = cpi_speedup(profile)
    achieved = achieved_dram_gb_s(profile)
    bw, latency, sms = ceilings.dram_gb_s, ceilings.dram_latency_ns, ceilings.sm_count
    pct = ceiling = speedup = None
    limited = ""
    if achieved and bw is not None and latency is not None and sms:
        pct = 100.0 * achieved / bw.value
        ceiling = littles_law(bw.value, latency.value, sms,
                              ceilings.max_warps_per_sm or 64).bw_ceiling_pct
        pred = dae_bw_prediction(pct, ceiling)
        speedup, limited = pred.speedup, pred.limited_by
    if cpi_row is None and speedup is None:
        return None
    return DaeEstimate(
        kernel=label or profile.name, cpi=profile.cpi,
        long_scoreboard=profile.stalls.get("long_scoreboard"),
        cpi_speedup=None if cpi_row is None else cpi_row.speedup, achieved_pct=pct,
        bw_ceiling_pct=ceiling, bw_speedup=speedup, limited_by=limited)


def dae_estimates(profiles: Sequence[KernelProfile], labels: Sequence[str],
                  ceilings: RooflineCeilings) -> tuple[DaeEstimate, ...]:
    rows = (dae_estimate(p, ceilings, lab) for p, lab in zip(profiles, labels, strict=True))
    return tuple(r for r in rows if r is not None)
