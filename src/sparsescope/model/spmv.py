"""CSR SpMV byte and flop model, and the per-case metrics derived from a measured time.

Seed report 000 (H200 SpMV analysis), sections 2.5, 3.1, 5.1, 5.2 and 9.3.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
"""Bandwidths are in GB/s with 1 GB = 10^9 bytes, as datasheets quote them."""


@dataclass(frozen=True)
class SpmvTraffic:
    """Bytes a CSR SpMV ``y = A x`` must move at least once, by array (seed 000, section 2.5)."""

    rows: int
    cols: int
    nnz: int
    value_bytes: int
    """Bytes per stored value and per x / y element (4 for float32)."""
    index_bytes: int
    """Bytes per column index and per row pointer (4 INT32, 8 INT64)."""
    y_read: bool
    """Whether the kernel reads y before writing it (``y += A x``)."""
    values_bytes: int
    """nnz x value_bytes."""
    col_index_bytes: int
    """nnz x index_bytes."""
    row_ptr_bytes: int
    """(rows + 1) x index_bytes."""
    x_bytes: int
    """cols x value_bytes: x read once (perfect reuse)."""
    y_write_bytes: int
    """rows x value_bytes."""
    y_read_bytes: int
    """rows x value_bytes when y_read, else 0."""

    @property
    def total_bytes(self) -> int:
        """Sum of all arrays: the minimum DRAM traffic of one SpMV."""
        return (self.values_bytes + self.col_index_bytes + self.row_ptr_bytes + self.x_bytes
                + self.y_write_bytes + self.y_read_bytes)

    @property
    def index_share(self) -> float:
        """Fraction of the bytes that are indices (column indices + row pointers)."""
        return (self.col_index_bytes + self.row_ptr_bytes) / self.total_bytes

    @property
    def flops(self) -> int:
        """2 x nnz: one multiply and one add per stored nonzero."""
        return 2 * self.nnz

    @property
    def arithmetic_intensity(self) -> float:
        """flops / bytes (FLOP/byte); seed 000 section 5.2: AI = 2 nnz / total_bytes."""
        return self.flops / self.total_bytes


def spmv_traffic(rows: int, cols: int, nnz: int, *, value_bytes: int = 4, index_bytes: int = 4,
                 y_read: bool = False) -> SpmvTraffic:
    """Minimum bytes of CSR SpMV (seed 000, section 2.5)::

        bytes = nnz * value_bytes                 (values)
              + nnz * index_bytes                 (column indices)
              + (rows + 1) * index_bytes          (row pointers)
              + cols * value_bytes                (x, read once)
              + rows * value_bytes                (y written)
              + rows * value_bytes  if y_read     (y read by kernels computing y += A x)

    Seed check: webbase-1M (1,000,005 rows, 3,105,536 nnz), float32, INT64, y written only:
    53,266,520 bytes = 53.3 MB (section 5.1); with y read, 57.3 MB (section 9.3).
    """
    if min(rows, cols, nnz) < 0:
        raise ValueError(f"rows, cols and nnz must be >= 0, got {rows}, {cols}, {nnz}")
    if index_bytes not in (2, 4, 8) or value_bytes not in (2, 4, 8):
        raise ValueError(f"index_bytes and value_bytes must be 2, 4 or 8, got "
                         f"{index_bytes}, {value_bytes}")
    return SpmvTraffic(
        rows=rows, cols=cols, nnz=nnz, value_bytes=value_bytes, index_bytes=index_bytes,
        y_read=y_read,
        values_bytes=nnz * value_bytes,
        col_index_bytes=nnz * index_bytes,
        row_ptr_bytes=(rows + 1) * index_bytes,
        x_bytes=cols * value_bytes,
        y_write_bytes=rows * value_bytes,
        y_read_bytes=rows * value_bytes if y_read else 0,
    )


@dataclass(frozen=True)
class CaseMetrics:
    """A measured time judged against the byte model and a bandwidth (seed 000, 3.1 and 5.1)."""

    bytes: int
    flops: int
    time_ms: float
    bw_gb_s: float
    """The bandwidth the case is judged against (datasheet peak or a measured ceiling)."""
    eff_bw_gb_s: float
    """bytes / time: effective bandwidth."""
    gflops: float
    """flops / time, GFLOP/s."""
    arithmetic_intensity: float
    """flops / bytes, FLOP/byte."""
    pct_peak: float
    """100 x eff_bw / bw."""
    floor_ms: float
    """bytes / bw: the physical floor, the time at the bandwidth with zero overhead."""
    gap: float
    """time / floor: how many times slower than the floor."""


def case_metrics(traffic, time_ms: float, bw_gb_s: float) -> CaseMetrics:
    """Effective bandwidth, GFLOP/s, % of peak, floor and gap of one measured case::

        eff_bw  = bytes / time            pct_peak = 100 * eff_bw / bw
        floor   = bytes / bw              gap      = time / floor = bw / eff_bw
        GFLOP/s = 2 nnz / time            AI       = 2 nnz / bytes

    ``traffic``: anything with ``total_bytes``, ``flops`` and ``arithmetic_intensity``
    (:class:`SpmvTraffic`, ``model.case_model.ModelBytes``).

    Seed check (section 3.1): ldoor, INT64, y written only, 0.1964 ms at 4,800 GB/s ->
    573.5 MB, 2,920 GB/s, 474 GFLOP/s, 60.8 % of peak, floor 0.1195 ms, gap 1.6x.
    """
    if time_ms <= 0:
        raise ValueError(f"time_ms must be > 0, got {time_ms}")
    if bw_gb_s <= 0:
        raise ValueError(f"bw_gb_s must be > 0, got {bw_gb_s}")
    total = traffic.total_bytes
    seconds = time_ms * 1e-3
    eff_bw = total / seconds / GB
    floor_ms = physical_floor_ms(total, bw_gb_s)
    return CaseMetrics(
        bytes=total, flops=traffic.flops, time_ms=time_ms, bw_gb_s=bw_gb_s,
        eff_bw_gb_s=eff_bw,
        gflops=traffic.flops / seconds / GB,
        arithmetic_intensity=traffic.arithmetic_intensity,
        pct_peak=100.0 * eff_bw / bw_gb_s,
        floor_ms=floor_ms,
        gap=time_ms / floor_ms if floor_ms > 0 else float("inf"),
    )


def physical_floor_ms(total_bytes: float, bw_gb_s: float) -> float:
    """Physical floor = bytes / bandwidth, in ms (seed 000, section 5.1)."""
    return total_bytes / (bw_gb_s * GB) * 1e3
