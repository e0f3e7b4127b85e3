"""CSR row slicing ``out[r, :] = A[rows[r], :]`` (dense out): bytes and the bounds to judge it.

Seed 003 (brainevent's ``csr_slice_rows`` on an A100) models the 5,000 rows x 1,000 nnz/row
workload as: reads 40 MB (row pointers 0.04 MB, column indices 20 MB, values 20 MB) at
1,500 GB/s = 0.027 ms, plus 5 M scattered 4-byte writes each costing a **128-byte line read and
written back** in L2 (256 bytes per write, 1,280 MB) at 3,000 GB/s = 0.427 ms: a bound of
0.453 ms, of which its kernel reached 36.4 % (1.25 ms, memset excluded).

This module states that model and the alternatives the measurements can be held against:

* **streaming bound** -- read the selected rows' pointers, indices and values once and write
  their entries once, all at DRAM bandwidth (the floor of the scatter kernel alone, zero fill
  excluded, as the seed timed it);
* **dense-output bound** -- the same reads plus the whole dense output written once (what any
  call that returns ``out`` must move; a kernel that assembles each output row on chip and
  writes it once, coalesced, can approach it);
* **sector scatter bound** -- the reads at DRAM bandwidth plus one **32-byte sector** per
  distinct (output row, sector) the scatter touches, at L2 bandwidth. An L2 write of 4 bytes
  moves one 32-byte sector with a byte mask, not a 128-byte line read and written back; the
  sectors of one warp's store instruction that fall in the same 32 bytes merge, so the count is
  the distinct sectors, not the writes;
* **seed line bound** -- seed 003's model as stated (256 bytes of L2 traffic per write);
* **sector read-modify-write bound** -- the reads plus, for every distinct sector the scatter
  touches, one 32-byte sector *read from* and one *written back to* DRAM, all at DRAM
  bandwidth. This is where a partial-sector store lands once the output no longer fits in L2:
  the H200's DRAM is written in whole 32-byte sectors (ECC), so L2 fetches the rest of a
  partly written sector before it writes it back. ncu's ``dram__sectors_read/write`` of the
  scatter kernel test it directly.

A bound a measured time beats is refuted (no kernel runs faster than its bound); among those
not refuted, the tightest (highest % of bound) is the one the measurements support.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparsescope.model.spmv import GB

SECTOR_BYTES = 32
LINE_BYTES = 128
SEED_BYTES_PER_WRITE = 2 * LINE_BYTES
"""Seed 003: each scattered 4-byte write reads a 128-byte line and writes it back."""
WEIGHTS = ("scalar", "per-nnz")


@dataclass(frozen=True)
class SliceTraffic:
    """Bytes of one CSR row slice into a dense ``selected_rows x cols`` output."""

    selected_rows: int
    """len(rows): output rows (repeats and zero rows included)."""
    cols: int
    nnz_selected: int
    """Nonzeros in the selected rows, repeats counted each time."""
    value_bytes: int
    index_bytes: int
    weights: str
    """``scalar`` (one value for every nonzero, read once) or ``per-nnz`` (one per nonzero)."""
    rows_array_bytes: int
    """selected_rows x index_bytes: the row index array."""
    row_ptr_bytes: int
    """2 x selected_rows x index_bytes: start and end pointer of each selected row."""
    col_index_bytes: int
    """nnz_selected x index_bytes."""
    values_bytes: int
    """nnz_selected x value_bytes (per-nnz) or value_bytes (scalar)."""
    entry_write_bytes: int
    """nnz_selected x value_bytes: the entries written (the rest of out is zero fill)."""
    dense_out_bytes: int
    """selected_rows x cols x value_bytes: the whole output once."""
    sector_writes: int
    """Distinct 32-byte sectors of out the entries fall in (measured on the matrix), or the
    upper estimate nnz_selected when not counted."""

    @property
    def csr_read_bytes(self) -> int:
        """Row pointers + column indices + values: seed 003's "total reads"."""
        return self.row_ptr_bytes + self.col_index_bytes + self.values_bytes

    @property
    def read_bytes(self) -> int:
        """csr_read_bytes + the row index array."""
        return self.csr_read_bytes + self.rows_array_bytes

    @property
    def streaming_bytes(self) -> int:
        """read_bytes + entry_write_bytes."""
        return self.read_bytes + self.entry_write_bytes

    @property
    def dense_bytes(self) -> int:
        """read_bytes + dense_out_bytes."""
        return self.read_bytes + self.dense_out_bytes

    @property
    def sector_write_bytes(self) -> int:
        """sector_writes x 32."""
        return self.sector_writes * SECTOR_BYTES

    @property
    def seed_line_bytes(self) -> int:
        """nnz_selected x 256: seed 003's L2 read-modify-write traffic."""
        return self.nnz_selected * SEED_BYTES_PER_WRITE


def slice_traffic(selected_rows: int, cols: int, nnz_selected: int, *, value_bytes: int = 4,
                  index_bytes: int = 4, weights: str = "per-nnz",
                  sector_writes: int | None = None) -> SliceTraffic:
    """Bytes of a row slice::

        reads  = n_sel * ib                    (row index array)
               + 2 * n_sel * ib                (row pointers: start and end of each row)
               + nnz_sel * ib                  (column indices)
               + nnz_sel * vb  | vb (scalar)   (values)
        entry writes = nnz_sel * vb            dense out = n_sel * cols * vb
        sector writes = distinct 32-byte sectors of out written (nnz_sel when not counted)

    Seed check (section "Memory Traffic"): 5,000 rows x 1,000 nnz, float32, INT32, per-nnz:
    row pointers 40,000 B (0.04 MB), indices 20 MB, values 20 MB, csr reads 40.04 MB.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    if min(selected_rows, cols, nnz_selected) < 0:
        raise ValueError("selected_rows, cols and nnz_selected must be >= 0")
    if sector_writes is None:
        sector_writes = nnz_selected
    return SliceTraffic(
        selected_rows=selected_rows, cols=cols, nnz_selected=nnz_selected,
        value_bytes=value_bytes, index_bytes=index_bytes, weights=weights,
        rows_array_bytes=selected_rows * index_bytes,
        row_ptr_bytes=2 * selected_rows * index_bytes,
        col_index_bytes=nnz_selected * index_bytes,
        values_bytes=nnz_selected * value_bytes if weights == "per-nnz" else value_bytes,
        entry_write_bytes=nnz_selected * value_bytes,
        dense_out_bytes=selected_rows * cols * value_bytes,
        sector_writes=int(sector_writes))


def _ms(nbytes: float, bw_gb_s: float) -> float:
    if bw_gb_s <= 0:
        raise ValueError(f"bandwidth must be > 0, got {bw_gb_s}")
    return nbytes / (bw_gb_s * GB) * 1e3


def streaming_bound_ms(t: SliceTraffic, dram_bw_gb_s: float) -> float:
    """``(read_bytes + entry_write_bytes) / dram_bw``: every byte once, zero fill excluded."""
    return _ms(t.streaming_bytes, dram_bw_gb_s)


def dense_bound_ms(t: SliceTraffic, dram_bw_gb_s: float) -> float:
    """``(read_bytes + dense_out_bytes) / dram_bw``: the floor of a call returning dense out."""
    return _ms(t.dense_bytes, dram_bw_gb_s)


def sector_scatter_bound_ms(t: SliceTraffic, dram_bw_gb_s: float, l2_bw_gb_s: float) -> float:
    """``read_bytes / dram_bw + sector_writes x 32 / l2_bw`` (kernel after the zero fill).

    Seed 003's structure (reads at DRAM bandwidth, then the scatter at L2 bandwidth) with the
    write cost of an L2 sector instead of a line round trip. Seed workload, every write its own
    sector (5 M sectors, 160 MB) at 1,500 / 3,000 GB/s: 0.0267 + 0.0533 = 0.080 ms.
    """
    return _ms(t.read_bytes, dram_bw_gb_s) + _ms(t.sector_write_bytes, l2_bw_gb_s)


def seed_line_bound_ms(t: SliceTraffic, dram_bw_gb_s: float, l2_bw_gb_s: float) -> float:
    """Seed 003's bound: ``read_bytes / dram_bw + nnz_sel x 256 / l2_bw``.

    Seed check: 40.06 MB / 1,500 GB/s + 1,280 MB / 3,000 GB/s = 0.0267 + 0.4267 = 0.453 ms.
    """
    return _ms(t.read_bytes, dram_bw_gb_s) + _ms(t.seed_line_bytes, l2_bw_gb_s)


def sector_rmw_bound_ms(t: SliceTraffic, dram_bw_gb_s: float) -> float:
    """``(read_bytes + 2 x sector_writes x 32) / dram_bw``: each touched sector read and
    written back in DRAM (kernel after the zero fill, output larger than L2).

    Seed workload on an A100 figure (1,500 GB/s), every write its own sector (5 M sectors):
    (40.06 MB + 320 MB) / 1,500 GB/s = 0.240 ms.
    """
    return _ms(t.read_bytes + 2 * t.sector_write_bytes, dram_bw_gb_s)


def expected_sectors_uniform(nnz_per_row: int, cols: int, value_bytes: int = 4,
                             sector_bytes: int = SECTOR_BYTES) -> float:
    """Expected distinct sectors one output row touches when its ``nnz_per_row`` columns are
    distinct and uniform over ``cols`` (a row starting on a sector boundary)::

        s = sector_bytes / value_bytes elements per sector, n = ceil(cols / s) sectors,
        the last holding cols - s (n - 1);
        P(sector of m elements untouched) = C(cols - m, k) / C(cols, k)
                                          = prod_{i<m} (cols - k - i) / (cols - i)
        E[sectors] = sum over sectors of 1 - P(untouched)

    Hand checks: cols 16, k 1, s 8: 2 x (1 - 8/16) = 1; cols 16, k 2: 2 x (1 - 28/120) = 1.533.
    Seed 003's workload on 10,000 columns (k 1,000, float32): 1,250 x (1 - 0.4303) = 712.1.
    """
    k = int(nnz_per_row)
    if not 0 <= k <= cols:
        raise ValueError(f"nnz_per_row must be in [0, cols], got {k} for {cols} columns")
    per_sector = max(1, sector_bytes // value_bytes)
    full, last = divmod(cols, per_sector)

    def untouched(m: int) -> float:
        if k > cols - m:
            return 0.0
        return math.exp(math.lgamma(cols - m + 1) - math.lgamma(cols - m - k + 1)
                        - math.lgamma(cols + 1) + math.lgamma(cols - k + 1))

    expected = full * (1.0 - untouched(per_sector))
    if last:
        expected += 1.0 - untouched(last)
    return expected


@dataclass(frozen=True)
class BoundVerdict:
    """One bound against a set of measured times."""

    name: str
    bound_ms: tuple[float, ...]
    """The bound of each case."""
    time_ms: tuple[float, ...]
    pct_of_bound: tuple[float, ...]
    """100 x bound / time per case (above 100 means the time beat the bound)."""
    refuted: bool
    """Some case ran faster than the bound (beyond ``tolerance``)."""
    supported: bool = False
    """Not refuted and the tightest such bound (highest median % of bound)."""

    @property
    def median_pct(self) -> float:
        ordered = sorted(self.pct_of_bound)
        n = len(ordered)
        if n == 0:
            return float("nan")
        return ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2])


def judge_bounds(bounds: dict[str, list[float]], times_ms: list[float], *,
                 tolerance: float = 0.05, decisive: int | None = None) -> list[BoundVerdict]:
    """Which bounds the times refute and which they support.

    A bound is refuted when some case took less than ``(1 - tolerance) x bound`` (timing noise
    of a few % is not a refutation). Of the bounds left, the one with the highest
    ``bound / time`` is the one the measurements support: the tightest bound still respected.
    "Highest" is the median over the cases, or the value at case ``decisive`` when given (the
    largest workload: small ones are launch-bound, where every bound is far below the time).
    """
    verdicts = []
    for name, values in bounds.items():
        if len(values) != len(times_ms):
            raise ValueError(f"bound {name!r} has {len(values)} values for {len(times_ms)} "
                             "times")
        pct = tuple(100.0 * b / t for b, t in zip(values, times_ms, strict=True))
        refuted = any(t < (1.0 - tolerance) * b for b, t in zip(values, times_ms, strict=True))
        verdicts.append(BoundVerdict(name, tuple(values), tuple(times_ms), pct, refuted))
    standing = [v for v in verdicts if not v.refuted and v.pct_of_bound]
    if standing:
        best = max(standing, key=lambda v: v.median_pct if decisive is None
                   else v.pct_of_bound[decisive])
        verdicts = [BoundVerdict(v.name, v.bound_ms, v.time_ms, v.pct_of_bound, v.refuted,
                                 supported=v is best) for v in verdicts]
    return verdicts
