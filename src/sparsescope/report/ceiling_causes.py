"""The named cause of an achieved figure above a ceiling the report states beside it.

Little's law bounds DRAM bandwidth by the bytes the resident warps keep in flight:

    ceiling = 100 x min(1, L x warps / required),  required = peak_bw x latency / SMs / 128 B

with ``L`` the 128-byte lines one warp keeps in flight (1 for the Little's-law ceiling, 1/2 for
the dependent-chain ceiling, where a warp's ``col[j] -> x[col]`` chain halves its loads in
flight). A case measured above it contradicts one of the inputs, and the report says which
instead of printing the two numbers side by side:

    lines per warp needed = L x achieved / ceiling

so either each warp keeps that many lines in flight (independent loads: a row's values, column
indices and x gathers, or several rows at once, or lanes whose loads touch several lines), or
the DRAM latency is below the one used -- possible only when that latency is an estimate, not
a measurement (a pointer chase measures the unloaded latency; under load it only grows).

Every "above the ... ceiling" the report prints goes through :func:`above_ceiling`, so each
carries its cause (``because``), and ``tests/report/test_no_contradictions.py`` checks that
none is printed without one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparsescope.report.context import ReportContext

LINE_BYTES = 128
"""Bytes of the line the ceilings count per warp."""


def lines_needed(achieved_pct: float, ceiling_pct: float, lines_per_warp: float = 1.0) -> float:
    """Lines in flight per warp that ``achieved_pct`` takes, where ``ceiling_pct`` counts
    ``lines_per_warp`` (``L x achieved / ceiling``)."""
    return lines_per_warp * achieved_pct / ceiling_pct if ceiling_pct > 0 else float("inf")


def above_ceiling(achieved_pct: float, ceiling_pct: float, ceiling: str, *,
                  lines_per_warp: float = 1.0, latency_ns: float | None = None,
                  latency_measured: bool = True, loads: str = "") -> str:
    """``"66.3 % is above the 65.7 % Little's-law ceiling because ..."``, or "" at or below it.

    ``ceiling``: its name (``Little's-law``, ``dependent-chain``); ``lines_per_warp``: the lines
    per warp it counts; ``latency_ns`` / ``latency_measured``: the latency it was computed at
    and whether that was measured (else an estimate the cause may blame); ``loads``: what is
    known of the kernel's loads (``its loads touch 19.5 sectors per request``), said as
    evidence."""
    if not achieved_pct > ceiling_pct:
        return ""
    need = lines_needed(achieved_pct, ceiling_pct, lines_per_warp)
    counted = "one 128-byte line" if lines_per_warp == 1 else (
        f"{lines_per_warp:g} of a 128-byte line")
    at = f" at {latency_ns:,.0f} ns" if latency_ns else ""
    text = (f"{achieved_pct:.1f} % is above the {ceiling_pct:.1f} % {ceiling} ceiling because "
            f"that ceiling counts {counted} in flight per resident warp{at}, and "
            f"{achieved_pct:.1f} % takes at least {need:.2f} lines per warp: the kernel keeps "
            f"more in flight per warp than the ceiling counts (independent loads)")
    if loads:
        text += f" ({loads})"
    if not latency_measured and latency_ns:
        text += f", or the DRAM latency is below the {latency_ns:,.0f} ns estimate"
    return text


def cause_above(ctx: ReportContext, pct: float, ceiling_pct: float,
                ceiling: str = "Little's-law", lines_per_warp: float = 1.0) -> str:
    """:func:`above_ceiling` at the report's latency (an estimate unless measured)."""
    return above_ceiling(pct, ceiling_pct, ceiling, lines_per_warp=lines_per_warp,
                         latency_ns=ctx.latency_ns,
                         latency_measured=ctx.latency_source == "measured")


#: Spread of a CPU ceiling's trials above which the measurement itself is suspect (matches
#: ``report.run_tables.BUSY_SPREAD_PCT``).
NOISY_SPREAD_PCT = 10.0


def peak_cause(ctx: ReportContext, view) -> str:
    """``"ldoor reads 117.2 % of its 11.6 GB/s peak because ..."`` for a case above 100 % of a
    bandwidth by its own bytes, "" otherwise.

    On a GPU the cause is the run's (``CaseModel.above_peak``: the working set served from the
    L2, or streams that hit in it). On a CPU there is no ncu to count DRAM bytes: the causes
    are the last-level cache (a working set it holds is read from it, not from RAM) and the
    peak itself (a copy probe whose trials spread widely, on a busy machine, understates it).
    """
    pct = view.metrics.pct_peak
    copy = view.measured.pct_peak if view.measured is not None else None
    if pct <= 100.0 and (copy is None or copy <= 100.0):
        return ""
    stored = view.model.above_peak if view.model is not None else ""
    over, _, why = stored.partition(": ")
    if not ctx.on_cpu and why:
        return f"{view.label} reads {over} because {why}"
    reasons = []
    bytes_ = view.metrics.bytes
    cache = ctx.device.l2_bytes
    if cache and bytes_ <= cache:
        reasons.append(f"its working set ({bytes_ / 1e6:,.1f} MB) fits in the "
                       f"{cache / 1e6:,.1f} MB {'L2' if not ctx.on_cpu else 'last-level cache'}"
                       f", so part of it is read from the cache, not from memory")
    spread = ctx.runset.ceilings.copy_bw_spread_pct
    if ctx.on_cpu and spread is not None and spread > NOISY_SPREAD_PCT:
        reasons.append(f"the copy bandwidth it is compared with varied by {spread:.0f} % across "
                       f"its trials (a busy machine), so that peak is understated")
    if not reasons:
        reasons.append("the peak is a one-thread copy probe (read + write), not the most the "
                       "memory system gives this kernel's read-mostly stream" if ctx.on_cpu else
                       "fewer bytes reached DRAM than the case's own bytes count (cache hits)")
    return (f"{view.label} reads {max(pct, copy or 0):.1f} % of the "
            f"{ctx.bw_gb_s:,.1f} GB/s peak ({ctx.bw_label}) because " + "; and ".join(reasons))
