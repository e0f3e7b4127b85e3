"""The model values a report shows for one timed case, computed once when the run ends and
stored with the case (``CaseResult.model``), so re-rendering a results file recomputes nothing.

Each op's byte model (``Op.traffic_for``) gives the bytes and flops it charges a case; this
module judges the measured time against them at the run's bandwidths (:func:`case_model`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.model.spmv import CaseMetrics, case_metrics


@dataclass(frozen=True)
class ModelBytes:
    """What an op's byte model charges one case (the minimum it must move)."""

    total_bytes: int
    """Bytes of the op's model (SpMV: CSR at the case's widths; SpMM: compulsory; slice:
    dense output)."""
    flops: int
    """Floating-point operations of the case (0 for a slice)."""

    @property
    def arithmetic_intensity(self) -> float:
        """flops / bytes (FLOP/byte)."""
        return self.flops / self.total_bytes if self.total_bytes else 0.0


@dataclass(frozen=True)
class CaseModel:
    """A timed case against its op's byte model."""

    peak: CaseMetrics
    """Against the run's basis bandwidth: the datasheet peak on a GPU, the measured copy
    bandwidth on a CPU (eff. bandwidth, % of peak, floor, gap)."""
    copy: CaseMetrics | None = None
    """Against the measured copy bandwidth of a GPU, when one was measured."""


def case_model(charged: ModelBytes, time_ms: float, basis_gb_s: float,
               copy_gb_s: float | None = None) -> CaseModel:
    """``charged`` bytes and flops at ``time_ms`` against ``basis_gb_s`` (and ``copy_gb_s``):
    ``model.spmv.case_metrics`` for each bandwidth (eff_bw = bytes / time, floor = bytes / bw,
    gap = time / floor)."""
    return CaseModel(peak=case_metrics(charged, time_ms, basis_gb_s),
                     copy=case_metrics(charged, time_ms, copy_gb_s) if copy_gb_s else None)
