"""The seed's published H200 numbers beside ours, row by row, with the known causes of the gap.

Reference data, cited as published (not recomputed): seed 000 ("SpMV Performance Analysis on
NVIDIA H200 GPU"), section 3.1, ``torch.sparse.mm`` -> cuSPARSE ``csrmv_v3_kernel`` with INT64
indices on six SuiteSparse matrices; section 3.2 (nsys kernel split on cage15); section 3.3
(timing stability); section 2.2 (software); section 4.1 (block size 32). The seed's effective
bandwidth counts INT64 indices and y written only::

    bytes = 4 nnz + 8 nnz + 8 (rows + 1) + 4 cols + 4 rows       eff_bw = bytes / time

(webbase-1M: 53,266,520 B / 0.0411 ms = 1,296 GB/s, as published), so our figure beside it
uses the same model on our matrix and our median time.

The comparison table holds one row per seed matrix for which the run timed
``torch-cusparse-i64`` on a matrix with the seed's name (a real matrix, or a generated analog
whose ``analog_of`` names it). Its ``causes`` column and its reading list what is known to make
the two numbers differ; each cause is computed from the run (analog or real, sizes, flushed or
not, clock, library and driver versions from provenance), none is assumed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from sparsescope.model import spmv_traffic
from sparsescope.report.context import CaseView, ReportContext
from sparsescope.report.table_types import Column, Table, span

SEED_SOURCE = "seed 000, section 3.1"
"""Where the published figures come from (seed report 000, copied to
tests/fixtures/seeds/000_*.txt)."""
SEED_BACKEND = "torch-cusparse-i64"
"""Our backend that runs the seed's call: ``torch.sparse.mm`` on INT64 CSR."""
SEED_PEAK_BW_GB_S = 4800.0
"""The H200 peak the seed's % of peak refers to (seed 000, sections 2.1 and 3.1)."""
AGREE_WITHIN = 0.05
"""Ratios within 1 +- this count as agreeing with the seed."""


@dataclass(frozen=True)
class SeedFigure:
    """One row of seed 000 section 3.1 as published (rows and nnz from section 2.3)."""

    matrix: str
    rows: int
    nnz: int
    time_ms: float
    eff_bw_gb_s: float
    pct_of_peak_bw: float
    """Of 4,800 GB/s."""


#: Seed 000, section 3.1 (times, eff. BW, % of peak) and 2.3 (rows, nnz); square matrices.
SEED_000_H200: tuple[SeedFigure, ...] = (
    SeedFigure("webbase-1M", 1_000_005, 3_105_536, 0.0411, 1296.0, 27.0),
    SeedFigure("cant", 62_451, 4_007_383, 0.0408, 1205.0, 25.1),
    SeedFigure("pwtk", 217_918, 11_634_424, 0.0663, 2158.0, 44.9),
    SeedFigure("ldoor", 952_203, 46_522_475, 0.1964, 2920.0, 60.8),
    SeedFigure("circuit5M", 5_558_326, 59_524_291, 0.3211, 2501.0, 52.1),
    SeedFigure("cage15", 5_154_859, 99_199_551, 0.4636, 2745.0, 57.2),
)


@dataclass(frozen=True)
class SeedKernel:
    """One row of seed 000 section 3.2 (nsys CUDA GPU kernel summary, cage15)."""

    kernel: str
    pct_gpu_time: float
    avg_ns: float


SEED_KERNEL_MATRIX = "cage15"
#: Seed 000, section 3.2.
SEED_000_KERNELS: tuple[SeedKernel, ...] = (
    SeedKernel("csrmv_v3_kernel", 91.0, 438_561.0),
    SeedKernel("csr_partition_kernel", 4.4, 10_432.0),
    SeedKernel("vector_scalar_multiply_kernel", 2.2, 2_582.0),
    SeedKernel("vectorized_elementwise_kernel", 2.0, 2_490.0),
)
#: Seed 000, section 3.3: coefficient of variation of torch.sparse.mm, %.
SEED_000_COV_PCT = {"cant": 4.8, "cage15": 0.4}

#: Seed 000, section 2.2 (software) and 2.4 (protocol).
SEED_DRIVER = "570.86.15"
SEED_TORCH = "2.9.1+cu128"
SEED_CUDA = "13.0.1"
SEED_WARMUPS, SEED_REPEATS = 5, 20
SEED_CSRMV_BLOCK_THREADS = 32
"""``csrmv_v3_kernel`` block size in the seed's profile (seed 000, section 4.1)."""
CUDA13_CSRMV_BLOCK_THREADS = 512
"""``csrmv_v3_kernel`` block size with CUDA 13 cuSPARSE, measured with Nsight Compute on an H200
(tests/fixtures/h200/README.md; ``Block Size`` of every csrmv_v3_kernel launch in
``ncu_metrics_cant_analog.csv`` and ``ncu_metrics_cage15_analog.csv``)."""
FIXTURE_README = "tests/fixtures/h200/README.md"


@dataclass(frozen=True)
class SeedComparisonRow:
    """One seed matrix: the published figure beside ours, same byte model (INT64, y written)."""

    matrix: str
    analog: bool
    """Our matrix is a generated stand-in (same rows and nnz, synthetic column pattern)."""
    same_size: bool
    """Our rows and nnz equal the seed's (False for a scaled suite)."""
    seed_time_ms: float
    time_ms: float
    """Our time (the run's statistic, median by default)."""
    ratio_x: float
    """ours / seed: above 1 we are slower."""
    seed_eff_bw_gb_s: float
    eff_bw_gb_s: float
    """Our bytes (INT64, y written only) / our time."""
    seed_pct_of_peak_bw: float
    pct_of_peak_bw: float
    """100 x eff_bw / 4,800 GB/s, the seed's basis."""
    flushed: bool
    """Our protocol flushed L2 between repeats of this case."""
    causes: str
    """Row-specific causes of the difference, short; the reading explains them."""


def seed_figure(name: str) -> SeedFigure | None:
    """The seed's row for a matrix name (case-insensitive), or None."""
    for fig in SEED_000_H200:
        if fig.matrix.lower() == name.lower():
            return fig
    return None


def _seed_view(view: CaseView) -> SeedFigure | None:
    if view.case.backend != SEED_BACKEND or view.case.index_bytes != 8:
        return None
    return seed_figure(view.matrix.name) or (
        seed_figure(view.matrix.analog_of) if view.matrix.analog_of else None)


def _cuda_major(version: str) -> int | None:
    try:
        return int(version.strip().split(".")[0])
    except (ValueError, IndexError):
        return None


def _csrmv_share(view: CaseView) -> float | None:
    """% of GPU time of csrmv_v3_kernel in the case's kernel breakdown, if recorded."""
    for k in view.case.measurement.kernel_breakdown:
        if "csrmv_v3_kernel" in str(k.get("name", "")):
            try:
                return float(k.get("pct", 0.0))
            except (TypeError, ValueError):
                return None
    return None


def _row_causes(view: CaseView, seed: SeedFigure) -> list[str]:
    st, case = view.matrix.stats, view.case
    causes = []
    if (st.rows, st.nnz) != (seed.rows, seed.nnz):
        causes.append(f"scaled: {st.rows:,} rows, {st.nnz:,} nnz")
    if view.matrix.analog_of:
        causes.append(f"generated {view.matrix.kind} analog")
    if case.value_bytes != 4:
        causes.append(f"{8 * case.value_bytes}-bit values (seed: 32)")
    share = _csrmv_share(view)
    if share is not None:
        causes.append(f"`csrmv_v3_kernel` {share:.1f} % of the call")
    if case.measurement.flushed:
        causes.append("L2 flushed")
    return causes


def seed_comparison_rows(ctx: ReportContext) -> list[tuple[CaseView, SeedFigure]]:
    """(our case, seed figure) for every seed matrix the run timed with torch-cusparse-i64,
    in the seed's order (the first such case per matrix)."""
    found: dict[str, CaseView] = {}
    for view in ctx.cases:
        seed = _seed_view(view)
        if seed is not None:
            found.setdefault(seed.matrix, view)
    return [(found[s.matrix], s) for s in SEED_000_H200 if s.matrix in found]


def _reading(ctx: ReportContext, rows: Sequence[SeedComparisonRow],
             views: Sequence[CaseView]) -> str:
    ratios = [r.ratio_x for r in rows]
    agree = [r for r in rows if abs(r.ratio_x - 1) <= AGREE_WITHIN]
    far = max(rows, key=lambda r: abs(r.ratio_x - 1))
    text = (f"Against {SEED_SOURCE} ({SEED_BACKEND}, the seed's torch.sparse.mm call): our "
            f"times are {span(ratios, '.2f')}x the published ones (median "
            f"{statistics.median(ratios):.2f}x); {len(agree)} of {len(rows)} within "
            f"{100 * AGREE_WITHIN:.0f} %. Furthest: {far.matrix}, "
            f"{far.time_ms:.4f} ms against {far.seed_time_ms:.4f} ms "
            f"({far.ratio_x:.2f}x, {far.pct_of_peak_bw:.1f} % of peak against "
            f"{far.seed_pct_of_peak_bw:.1f} %). Known causes:")
    causes = []
    scaled = [r.matrix for r in rows if not r.same_size]
    if scaled:
        causes.append(f"the suite was scaled, so {', '.join(scaled)} have fewer rows and "
                      f"nonzeros than the seed's: their times are not comparable")
    analogs = [r.matrix for r in rows if r.analog]
    if analogs:
        causes.append(f"{len(analogs)} of {len(rows)} matrices are generated analogs with the "
                      f"real rows and nnz but a synthetic column pattern, so x reuse and cache "
                      f"hits differ from the SuiteSparse matrix")
    libs = ctx.runset.provenance.libraries
    torch_cuda = libs.get("torch_cuda", "")
    major = _cuda_major(torch_cuda)
    if major is not None and major >= 13:
        causes.append(f"PyTorch {libs.get('torch', '?')} is built for CUDA {torch_cuda}, whose "
                      f"cuSPARSE launches `csrmv_v3_kernel` with {CUDA13_CSRMV_BLOCK_THREADS}-"
                      f"thread blocks ({FIXTURE_README}, Nsight Compute) where the seed's "
                      f"PyTorch {SEED_TORCH} (cuSPARSE of CUDA 12.8) launched "
                      f"{SEED_CSRMV_BLOCK_THREADS}-thread blocks (seed 000, section 4.1): a "
                      f"different kernel configuration")
    elif torch_cuda:
        causes.append(f"PyTorch {libs.get('torch', '?')} (CUDA {torch_cuda}) against the seed's "
                      f"{SEED_TORCH}: the cuSPARSE kernel configuration may differ")
    flushed = [r.matrix for r in rows if r.flushed]
    if flushed:
        causes.append(f"our protocol flushed L2 between repeats for {', '.join(flushed)} (their "
                      f"working set fits the L2); the seed states no flush, so a matrix that "
                      f"fits could be read partly from cache there (this makes ours slower)")
    clocks = {v.case.measurement.clock for v in views}
    if clocks == {"cuda-events"}:
        causes.append("our samples are device time with each call already queued behind a "
                      "hold kernel (host launch gaps excluded); the seed bracketed each call "
                      "with torch.cuda.synchronize(), so launch gaps between its kernels could "
                      "count (this makes ours faster, not slower)")
    else:
        causes.append(f"our clock was {', '.join(sorted(clocks))}, the seed's CUDA events")
    stat = ctx.runset.timing.statistic
    t = ctx.runset.timing
    causes.append(f"we report the {stat} of {t.repeats} repeats after {t.warmups} warm-ups; the "
                  f"seed ran {SEED_WARMUPS} + {SEED_REPEATS} and does not state its statistic")
    driver = ctx.runset.provenance.driver or "unknown"
    causes.append(f"driver {driver} against the seed's {SEED_DRIVER} (CUDA {SEED_CUDA})")
    return text + " " + "; ".join(f"({i}) {c}" for i, c in enumerate(causes, start=1)) + "."


def seed_comparison_table(ctx: ReportContext) -> Table | None:
    """Seed 000 section 3.1 beside this run, or None when no case matches a seed matrix."""
    pairs = seed_comparison_rows(ctx)
    if not pairs:
        return None
    rows = []
    for view, seed in pairs:
        st = view.matrix.stats
        ours = spmv_traffic(st.rows, st.cols, st.nnz, value_bytes=view.case.value_bytes,
                            index_bytes=8, y_read=False).total_bytes
        time_ms = view.metrics.time_ms
        eff = ours / (time_ms * 1e-3) / 1e9
        rows.append(SeedComparisonRow(
            matrix=seed.matrix, analog=view.matrix.analog_of is not None,
            same_size=(st.rows, st.nnz) == (seed.rows, seed.nnz), seed_time_ms=seed.time_ms,
            time_ms=time_ms, ratio_x=time_ms / seed.time_ms,
            seed_eff_bw_gb_s=seed.eff_bw_gb_s, eff_bw_gb_s=eff,
            seed_pct_of_peak_bw=seed.pct_of_peak_bw, pct_of_peak_bw=100 * eff / SEED_PEAK_BW_GB_S,
            flushed=view.case.measurement.flushed,
            causes="; ".join(_row_causes(view, seed)) or "—"))
    stat = ctx.runset.timing.statistic
    columns = (
        Column("matrix", "Matrix"), Column("analog", "Analog"),
        Column("seed_time_ms", "Seed time", ".4f"), Column("time_ms", f"Our time, {stat}", ".4f"),
        Column("ratio_x", "Ours / seed", ".2f", "x"),
        Column("seed_eff_bw_gb_s", "Seed eff. BW", ",.0f"),
        Column("eff_bw_gb_s", "Our eff. BW", ",.0f"),
        Column("seed_pct_of_peak_bw", "Seed % of 4,800 GB/s", ".1f"),
        Column("pct_of_peak_bw", "Our % of 4,800 GB/s", ".1f"),
        Column("causes", "Why they differ (this row)"))
    return Table(
        "seed_comparison", f"Against the seed's published H200 numbers ({SEED_SOURCE})",
        columns, tuple(rows), _reading(ctx, rows, [v for v, _ in pairs]),
        basis=(f"Seed figures as published in {SEED_SOURCE} (H200, torch.sparse.mm, INT64 "
               f"indices). Ours: {SEED_BACKEND} on this run's matrices; both bandwidths count "
               f"INT64 indices and y written only, % of the seed's {SEED_PEAK_BW_GB_S:,.0f} "
               f"GB/s."))
