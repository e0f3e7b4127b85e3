"""The classic hierarchical roofline (FLOP per byte at L1, L2 and DRAM; Williams, Waterman &
Patterson 2009, hierarchical as Nsight Compute draws it) from a kernel profile.

    FLOPs    = sum over ops of count x flops_per_op     (FMA 2, ADD and MUL 1; predicated on)
    count    = smsp__sass_thread_inst_executed_op_<op>_pred_on.sum, or, in the full set,
               its .sum.per_cycle_elapsed x smsp__cycles_elapsed.avg
    bytes_L1 = 32 x (global ld+st sectors) + 128 x (shared ld+st wavefronts)
    bytes_L2 = 32 x L2 sectors;  bytes_DRAM = 32 x DRAM sectors read + written
    AI_level = FLOPs / bytes_level;   GFLOP/s = FLOPs / duration_ns

The bytes are the transactions of the instruction roofline
(:mod:`sparsescope.profile.instruction_roofline`) times their size, so both rooflines rest on the
same counts. Precision: the one with more FLOPs (FP32 or FP64).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparsescope.profile import metrics as M
from sparsescope.profile.instruction_roofline import SECTOR_BYTES, roofline_point
from sparsescope.profile.records import KernelProfile

WAVEFRONT_BYTES = 128


@dataclass(frozen=True)
class ClassicRooflinePoint:
    """One kernel on the FLOP/byte roofline."""

    kernel: str
    precision: str
    """``fp32`` or ``fp64``: the precision with the most FLOPs."""
    flops: float
    duration_ns: float
    gflops: float
    """flops / duration_ns."""
    l1_bytes: float | None
    l2_bytes: float | None
    dram_bytes: float | None
    l1_ai: float | None
    """FLOPs per L1 byte."""
    l2_ai: float | None
    dram_ai: float | None


def flop_count(profile: KernelProfile, precision: str) -> float | None:
    """FLOPs of one precision (``fp32``/``fp64``); None when the profile lacks the counters."""
    cycles = profile.value(*M.SM_CYCLES_ELAPSED)
    total = 0.0
    for op, factor in M.FLOP_OPS[precision]:
        base = M.flop_counter(op)
        count = profile.value(f"{base}.sum")
        if count is None:
            rate = profile.value(f"{base}.sum.per_cycle_elapsed")
            if rate is None or cycles is None:
                return None
            count = rate * cycles
        total += factor * count
    return total


def _times(a: float | None, b: float) -> float | None:
    return None if a is None else a * b


def _ai(flops: float, nbytes: float | None) -> float | None:
    return None if not nbytes else flops / nbytes


def classic_point(profile: KernelProfile, label: str | None = None) -> ClassicRooflinePoint | None:
    """Place one kernel; None when the profile has no FLOP counters, no duration, or no FLOPs."""
    counts = {prec: flop_count(profile, prec) for prec in M.FLOP_OPS}
    known = {k: v for k, v in counts.items() if v is not None}
    if not known or not profile.duration_ns or profile.value(*M.WARP_INST) is None:
        return None
    precision = max(known, key=lambda k: known[k])
    flops = known[precision]
    if flops <= 0:
        return None
    inst = roofline_point(profile, label)
    l1 = _times(inst.l1_transactions, SECTOR_BYTES)
    l2 = _times(inst.l2_transactions, SECTOR_BYTES)
    dram = _times(inst.dram_transactions, SECTOR_BYTES)
    return ClassicRooflinePoint(
        kernel=label or profile.name, precision=precision, flops=flops,
        duration_ns=profile.duration_ns, gflops=flops / profile.duration_ns,
        l1_bytes=l1, l2_bytes=l2, dram_bytes=dram,
        l1_ai=_ai(flops, l1), l2_ai=_ai(flops, l2), dram_ai=_ai(flops, dram))


def classic_roofline(profiles: Sequence[KernelProfile], labels: Sequence[str] | None = None,
                     ) -> tuple[ClassicRooflinePoint, ...]:
    """Points of every profile that holds FLOP counters and FLOPs."""
    labels = labels or [None] * len(profiles)  # type: ignore[list-item]
    points = (classic_point(p, lab) for p, lab in zip(profiles, labels, strict=True))
    return tuple(p for p in points if p is not None)
