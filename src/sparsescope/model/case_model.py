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
    """A timed case against the bytes it moves."""

    peak: CaseMetrics
    """Against the run's basis bandwidth: the datasheet peak on a GPU, the measured copy
    bandwidth on a CPU (eff. bandwidth, % of peak, floor, gap)."""
    copy: CaseMetrics | None = None
    """Against the measured copy bandwidth of a GPU, when one was measured."""
    bytes_basis: str = "op model"
    """Whose bytes: ``declared`` (the backend's own format, its ``Traffic``) or ``op model``
    (the op's byte model: CSR at the case's widths; older results)."""
    csr_equiv_gb_s: float | None = None
    """The op model's bytes (CSR at the case's widths) / time: a throughput that compares
    formats by time alone, not a bandwidth any format reached (GB/s)."""
    above_peak: str = ""
    """Why the case reads above 100 % of a bandwidth by its own bytes (the cause named), or
    "" when it does not."""


def case_model(charged: ModelBytes, time_ms: float, basis_gb_s: float,
               copy_gb_s: float | None = None, *, bytes_basis: str = "op model",
               csr_bytes: int | None = None, above_peak: str = "") -> CaseModel:
    """``charged`` bytes and flops at ``time_ms`` against ``basis_gb_s`` (and ``copy_gb_s``):
    ``model.spmv.case_metrics`` for each bandwidth (eff_bw = bytes / time, floor = bytes / bw,
    gap = time / floor); ``csr_bytes / time`` as the CSR-equivalent throughput."""
    return CaseModel(peak=case_metrics(charged, time_ms, basis_gb_s),
                     copy=case_metrics(charged, time_ms, copy_gb_s) if copy_gb_s else None,
                     bytes_basis=bytes_basis,
                     csr_equiv_gb_s=csr_bytes / (time_ms * 1e-3) / 1e9 if csr_bytes else None,
                     above_peak=above_peak)


def above_peak_cause(pct_peak: float, pct_copy: float | None, working_set_bytes: int,
                     l2_bytes: int, flushed: bool) -> str:
    """The named cause of a case above 100 % of a bandwidth by its own bytes ("" below it).

    The bytes are a lower bound on DRAM traffic only when every byte comes from DRAM once: a
    working set that fits in the L2 and was not flushed between repeats is served from the
    cache; otherwise part of the declared streams (x gathers, metadata) hit in the L2 within
    the call, which the declared once-each bytes already assume for x but not beyond.
    """
    over = [f"{pct:.1f} % of {name}" for pct, name in ((pct_peak, "peak"), (pct_copy, "copy"))
            if pct is not None and pct > 100.0]
    if not over:
        return ""
    if working_set_bytes <= l2_bytes and not flushed:
        return (f"{' and '.join(over)}: the working set ({working_set_bytes / 1e6:,.1f} MB) "
                f"fits in the L2 ({l2_bytes / 1e6:,.1f} MB) and the cache was not flushed "
                f"between repeats, so the repeats read it from the L2, not from DRAM")
    return (f"{' and '.join(over)}: fewer bytes reached DRAM than the format declares -- part "
            f"of its streams hit in the L2 within the call (ncu's dram__bytes would show how "
            f"much)")
