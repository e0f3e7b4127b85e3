"""Tables for multi-backend GPU runs: kernel breakdown, two byte models, timing stability.

* :func:`kernel_breakdown_tables`: seed 000 section 3.2 from ``Measurement.kernel_breakdown``
  (the CUDA timing protocol profiles one call per case): every kernel of every backend on the
  largest matrix, and a JSON-only table with every case.
* :func:`bandwidth_models_table`: each ok case under the INT64 and the INT32 byte model (y
  written only), and against the *measured* copy bandwidth with the INT32 model -- the fewest
  bytes the matrix needs -- so backends compare by time alone::

      eff_bw_int64 = bytes(INT64) / time        eff_bw_int32 = bytes(INT32) / time
      pct_of_measured_copy_bw = 100 x eff_bw_int32 / copy_bw
      measured_floor_ms = bytes(INT32) / copy_bw         gap = time / measured_floor

* :func:`stability_table`: seed 000 section 3.3, spread of the raw samples per case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparsescope.model import spmv_traffic
from sparsescope.report.byte_models import csr_model, own_differs
from sparsescope.report.ceiling_causes import peak_cause
from sparsescope.report.context import CaseView, ReportContext
from sparsescope.report.labels import code
from sparsescope.report.seed_comparison import (
    SEED_000_COV_PCT,
    SEED_000_KERNELS,
    SEED_BACKEND,
    SEED_KERNEL_MATRIX,
)
from sparsescope.report.table_types import (
    MB,
    Column,
    Table,
    adaptive_fmt,
    bw_text,
    count_text,
    span,
)
from sparsescope.timing.modes import mode_suffix

STABLE_COV_PCT = 3.0
"""Seed 000 section 3.3 calls timings with a CoV below 3 % reliable."""

#: Substring of a kernel name -> what it does in an SpMV call (seed 000 section 3.2's roles).
KERNEL_ROLES: tuple[tuple[str, str], ...] = (
    ("csrmv_v3_kernel", "main SpMV kernel (merge-based)"),
    ("csr_partition_kernel", "row partitioning (merge path)"),
    ("vector_scalar_multiply_kernel", "vector scaling"),
    ("vectorized_elementwise_kernel", "elementwise (output zero-fill)"),
    ("Memset", "memset (output or workspace)"),
    ("Memcpy", "copy"),
    ("csr_scalar", "SpMV kernel, one thread per row"),
    ("csr_vector", "SpMV kernel, several threads per row"),
)


def kernel_role(name: str) -> str:
    """What a kernel does, from :data:`KERNEL_ROLES` (empty when unknown)."""
    return next((role for key, role in KERNEL_ROLES if key in name), "")


@dataclass(frozen=True)
class KernelRow:
    """One kernel of one case's call (seed 000 section 3.2)."""

    label: str
    matrix: str
    backend: str
    kernel: str
    """Short name (no return type, template arguments or parameters)."""
    role: str
    pct_gpu_time: float
    """Share of the call's device time (kernels, memsets and copies together, as nsys)."""
    avg_ns: float
    """Time per launch: time per call / launches per call."""
    launches_per_call: float
    time_per_call_ns: float


def _kernel_rows(view: CaseView) -> list[KernelRow]:
    rows = []
    for k in view.case.measurement.kernel_breakdown:
        try:
            time_ms = float(k["time_ms"])
            pct = float(k["pct"])
            launches = float(k.get("launches", 1.0)) or 1.0
            name = str(k["name"])
        except (KeyError, TypeError, ValueError):
            continue  # an entry the profiler left incomplete: nothing to report for it
        rows.append(KernelRow(view.label, view.case.matrix, view.case.backend, name,
                              kernel_role(name), pct, time_ms * 1e6 / launches, launches,
                              time_ms * 1e6))
    return rows


def _main(rows: list[KernelRow]) -> KernelRow:
    return max(rows, key=lambda r: r.pct_gpu_time)


def _breakdown_reading(matrix: str, nnz: int, by_backend: Mapping[str, list[KernelRow]],
                       cases: int) -> str:
    parts = [f"{b}: {code(_main(rs).kernel)} {_main(rs).pct_gpu_time:.1f} %"
             for b, rs in by_backend.items()]
    text = (f"On {matrix} (the largest matrix with a breakdown, {count_text(nnz)} nnz) the "
            f"longest kernel's share of GPU time per backend is {'; '.join(parts)}.")
    aux = [100 - _main(rs).pct_gpu_time for rs in by_backend.values() if len(rs) > 1]
    if aux:
        text += f" Auxiliary kernels, memsets and copies take {span(aux)} % where there are any."
    if matrix.lower() == SEED_KERNEL_MATRIX and SEED_BACKEND in by_backend:
        seed = SEED_000_KERNELS[0]
        ours = next((r for r in by_backend[SEED_BACKEND] if seed.kernel in r.kernel), None)
        if ours is not None:
            text += (f" Seed 000 section 3.2 (nsys, {SEED_KERNEL_MATRIX}): {code(seed.kernel)} "
                     f"{seed.pct_gpu_time:.1f} % at {seed.avg_ns:,.0f} ns per launch; here "
                     f"{ours.pct_gpu_time:.1f} % at {ours.avg_ns:,.0f} ns.")
    return text + (f" `tables/kernel_breakdown_all.json` holds all {cases} cases with a "
                   f"breakdown.")


_KERNEL_COLUMNS = (
    Column("backend", "Backend"), Column("kernel", "Kernel", code=True),
    Column("role", "Role"),
    Column("pct_gpu_time", "% GPU time", ".1f"), Column("avg_ns", "Avg per launch", ",.0f"),
    Column("launches_per_call", "Launches per call", ".2g"))


def kernel_breakdown_tables(ctx: ReportContext) -> tuple[Table, Table] | None:
    """(largest matrix, every case) kernel tables, or None when no case has a breakdown."""
    views = [v for v in ctx.cases if v.case.measurement.kernel_breakdown]
    per_case = {v.label: _kernel_rows(v) for v in views}
    views = [v for v in views if per_case[v.label]]
    if not views:
        return None
    largest = max(views, key=lambda v: v.matrix.stats.nnz).matrix
    shown = [v for v in views if v.matrix.name == largest.name]
    by_backend = {v.case.backend: per_case[v.label] for v in shown}
    rows = tuple(r for v in shown for r in per_case[v.label])
    every = tuple(r for v in views for r in per_case[v.label])
    basis = ("PyTorch profiler (CUPTI) over 3 calls after the timed repeats, per call; % of "
             "the call's device time, as nsys's GPU kernel summary (seed 000, section 3.2).")
    display = Table("kernel_breakdown", f"Kernel breakdown: {largest.name}", _KERNEL_COLUMNS,
                    rows, _breakdown_reading(largest.name, largest.stats.nnz, by_backend,
                                             len(views)), basis=basis)
    mains = [_main(per_case[v.label]) for v in views]
    full = Table(
        "kernel_breakdown_all", "Kernel breakdown: every case",
        (Column("label", "Case"), *_KERNEL_COLUMNS[1:]), every,
        f"{len(views)} cases, {len(every)} kernel rows; the longest kernel takes "
        f"{span([r.pct_gpu_time for r in mains])} % of a call's GPU time.", basis=basis)
    return display, full


@dataclass(frozen=True)
class BandwidthModelRow:
    """One ok case under both byte models (y written only) and against the measured copy."""

    label: str
    matrix: str
    backend: str
    index_bytes: int
    """Index width the case actually ran with."""
    int64_mb: float
    int32_mb: float
    time_ms: float
    eff_bw_int64_gb_s: float
    eff_bw_int32_gb_s: float
    pct_of_measured_copy_bw: float | None
    """100 x eff_bw_int32 / measured copy bandwidth (None when none was measured)."""
    measured_floor_ms: float | None
    """INT32 bytes / measured copy bandwidth."""
    gap_vs_measured_floor_x: float | None
    fastest_on_matrix: bool
    """Shortest time of the backends on this matrix."""


def _copy_bw(ctx: ReportContext) -> float | None:
    copy = ctx.runset.ceilings.copy_bw_gb_s
    return copy if copy is not None and copy > 0 else None


def bandwidth_models_table(ctx: ReportContext) -> Table:
    copy = _copy_bw(ctx)
    best: dict[str, float] = {}
    for v in ctx.cases:
        best[v.case.matrix] = min(best.get(v.case.matrix, float("inf")), v.metrics.time_ms)
    rows = []
    for v in ctx.cases:
        st, vb, t = v.matrix.stats, v.case.value_bytes, v.metrics.time_ms
        b64 = spmv_traffic(st.rows, st.cols, st.nnz, value_bytes=vb, index_bytes=8).total_bytes
        b32 = spmv_traffic(st.rows, st.cols, st.nnz, value_bytes=vb, index_bytes=4).total_bytes
        bw64, bw32 = b64 / (t * 1e-3) / 1e9, b32 / (t * 1e-3) / 1e9
        floor = b32 / (copy * 1e9) * 1e3 if copy else None
        rows.append(BandwidthModelRow(
            v.label, v.case.matrix, v.case.backend, v.case.index_bytes, b64 / MB, b32 / MB, t,
            bw64, bw32, 100 * bw32 / copy if copy else None, floor,
            t / floor if floor else None, t == best[v.case.matrix]))
    bw = adaptive_fmt([r.eff_bw_int32_gb_s for r in rows])
    mb = adaptive_fmt([r.int32_mb for r in rows], ",.1f", ",.3f", 1.0)
    columns = [Column("label", "Case"), Column("index_bytes", "Index bytes as run", "d"),
               Column("int64_mb", "INT64 bytes", mb), Column("int32_mb", "INT32 bytes", mb),
               Column("time_ms", f"Time, {ctx.runset.timing.statistic}"
                                  f"{mode_suffix(ctx.runset.timing)}", ".4f"),
               Column("eff_bw_int64_gb_s", "Eff. BW, INT64 model", bw),
               Column("eff_bw_int32_gb_s", "Eff. BW, INT32 model", bw)]
    if copy:
        columns += [Column("pct_of_measured_copy_bw", f"% of measured copy {bw_text(copy)} GB/s "
                           "(INT32)", ".1f"),
                    Column("measured_floor_ms", "Measured floor, INT32", ".4f"),
                    Column("gap_vs_measured_floor_x", "Gap vs measured floor", ".2f", "x")]
    columns.append(Column("fastest_on_matrix", "Fastest on matrix"))
    return Table("bandwidth_models", "Effective bandwidth under the INT64 and INT32 byte models",
                 tuple(columns), tuple(rows),
                 _models_reading(rows, copy) + _above_copy(ctx, rows),
                 basis=(f"Byte model: {csr_model(False)}, at the case's value width; INT32 "
                        "is the fewest bytes the matrix needs, whatever index width the backend "
                        "used, so its bandwidths compare backends by time alone. Measured "
                        "floor = INT32 bytes / measured copy bandwidth"
                        + (f" ({bw_text(copy)} GB/s, read + write counted)." if copy else
                           ": no copy bandwidth was measured.")
                        + own_differs(ctx, {r.matrix: r.int32_mb for r in rows}, y_read=False)))


def _above_copy(ctx: ReportContext, rows: list[BandwidthModelRow]) -> str:
    """Why a case's INT32-CSR bandwidth reads above the measured copy bandwidth: its own
    format moves fewer bytes than INT32 CSR (a throughput, not a bandwidth reached), or the
    case's own cause (``ceiling_causes.peak_cause``)."""
    views = {v.label: v for v in ctx.cases}
    out = []
    for r in rows:
        if r.pct_of_measured_copy_bw is None or r.pct_of_measured_copy_bw <= 100.0:
            continue
        v = views[r.label]
        own_mb = v.metrics.bytes / MB
        if own_mb < r.int32_mb - 5e-4:
            out.append(f"{r.label} reads {r.pct_of_measured_copy_bw:.1f} % because its own "
                       f"format moves {own_mb:,.1f} MB, not INT32 CSR's {r.int32_mb:,.1f} MB: "
                       f"this column compares formats by time alone, it is no bandwidth "
                       f"reached")
        else:
            cause = peak_cause(ctx, v) or (
                f"{r.label} reads {r.pct_of_measured_copy_bw:.1f} % because fewer bytes reached "
                f"memory than INT32 CSR counts (cache hits)")
            out.append(cause)
    return "".join(f" **Above the ceiling:** {c}." for c in out)


def _models_reading(rows: list[BandwidthModelRow], copy: float | None) -> str:
    if not rows:
        return "No case was timed."
    ratio = [r.int64_mb / r.int32_mb for r in rows]
    text = (f"The INT64 model counts {span(ratio, '.2f')}x the bytes of the INT32 model, so "
            f"INT64 bandwidths read that much higher for the same time")
    narrow = sum(r.index_bytes < 8 for r in rows)
    text += (f"; {narrow} of {len(rows)} cases ran with narrower indices, for which the INT64 "
             f"model counts bytes never moved." if narrow else ".")
    winners = [r for r in rows if r.fastest_on_matrix]
    if copy:
        best = max(rows, key=lambda r: r.pct_of_measured_copy_bw)
        text += (f" Against the measured copy bandwidth ({bw_text(copy)} GB/s, INT32 model) "
                 f"cases reach {span([r.pct_of_measured_copy_bw for r in rows])} %; closest to "
                 f"the measured floor: {best.label} at {best.pct_of_measured_copy_bw:.1f} % "
                 f"(gap {best.gap_vs_measured_floor_x:.2f}x).")
    if len({r.backend for r in rows}) > 1:
        text += " Fastest per matrix: " + "; ".join(
            f"{r.matrix} {r.backend}" + (f" ({r.pct_of_measured_copy_bw:.1f} %)" if copy else "")
            for r in winners) + "."
    return text


@dataclass(frozen=True)
class StabilityRow:
    """Seed 000 section 3.3: spread of one case's raw samples."""

    label: str
    samples: int
    median_ms: float
    min_ms: float
    max_ms: float
    std_ms: float
    cov_pct: float
    """100 x std / mean."""
    max_over_min_x: float
    flushed: bool
    stable: bool
    """CoV below 3 % (seed 000 section 3.3)."""


def stability_table(ctx: ReportContext) -> Table:
    rows = []
    for v in ctx.cases:
        m = v.case.measurement
        cov = 100 * m.cov
        rows.append(StabilityRow(v.label, len(m.samples_ms), m.median_ms, m.min_ms,
                                 max(m.samples_ms), m.std_ms, cov,
                                 max(m.samples_ms) / m.min_ms if m.min_ms > 0 else float("inf"),
                                 m.flushed, cov < STABLE_COV_PCT))
    return Table("timing_stability", "Timing stability", (
        Column("label", "Case"), Column("samples", "Samples", "d"),
        Column("median_ms", "Median", ".4f"), Column("min_ms", "Min", ".4f"),
        Column("max_ms", "Max", ".4f"), Column("std_ms", "Std", ".4f"),
        Column("cov_pct", "CoV", ".1f"), Column("max_over_min_x", "Max / min", ".2f", "x"),
        Column("flushed", "L2 flushed"), Column("stable", f"CoV < {STABLE_COV_PCT:.0f} %")),
        tuple(rows), _stability_reading(ctx, rows),
        basis=f"Raw samples of each case; {STABLE_COV_PCT:.0f} % CoV is seed 000 section 3.3's "
              f"mark of a reliable timing.")


def _stability_reading(ctx: ReportContext, rows: list[StabilityRow]) -> str:
    if not rows:
        return "No case was timed."
    stable = sum(r.stable for r in rows)
    noisy = max(rows, key=lambda r: r.cov_pct)
    calm = min(rows, key=lambda r: r.cov_pct)
    text = (f"CoV {span([r.cov_pct for r in rows])} % over {len(rows)} cases; {stable} below "
            f"{STABLE_COV_PCT:.0f} %. Noisiest: {noisy.label} (CoV {noisy.cov_pct:.1f} %, "
            f"max/min {noisy.max_over_min_x:.2f}x); steadiest: {calm.label} "
            f"({calm.cov_pct:.1f} %).")
    seed = []
    for v, r in zip(ctx.cases, rows, strict=True):
        name = (v.matrix.analog_of or v.matrix.name)
        if v.case.backend == SEED_BACKEND and name in SEED_000_COV_PCT:
            seed.append(f"{v.case.matrix} {r.cov_pct:.1f} % (seed {SEED_000_COV_PCT[name]:.1f} %)")
    if seed:
        text += f" {SEED_BACKEND} against seed 000 section 3.3: {', '.join(seed)}."
    return text
