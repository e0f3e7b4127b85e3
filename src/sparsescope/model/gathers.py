"""How fast can x be gathered? A lower bound on SpMV time from L2 sector requests.

A CSR SpMV gathers ``x[col]`` once per nonzero. A gather served on chip (L1 or shared memory)
costs no L2 request; any other gather costs one 32-byte L2 sector for 4 useful bytes. Whatever
the kernel, an SM can keep at most its on-chip capacity of x entries, and the best it can do is
keep the most-gathered columns (all SMs the same ones). So with ``hot`` = the share of
nonzeros whose column is among the ``capacity`` most-gathered columns::

    x sectors        >= (1 - hot) * nnz
    stream sectors    = (nnz (value_bytes + index_bytes) + index_bytes (rows + 1)
                         + value_bytes rows) / 32
    time             >= (x sectors + stream sectors) / L2 sector rate

(the streams pass through L2 too). The bound holds for every ordering of the nonzeros within
the given matrix; a row/column permutation changes ``hot`` only through which columns share a
sector, which the bound does not credit (each gather counts a whole sector).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SECTOR_BYTES = 32


def hot_share(column_counts: np.ndarray, capacity: int) -> float:
    """Share of all gathers that go to the ``capacity`` most-gathered columns::

        sum of the capacity largest counts / sum of all counts
    """
    counts = np.asarray(column_counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0 or capacity <= 0:
        return 0.0
    if capacity >= counts.size:
        return 1.0
    top = np.partition(counts, counts.size - capacity)[counts.size - capacity:]
    return float(top.sum() / total)


@dataclass(frozen=True)
class GatherBound:
    """The L2-sector lower bound of one SpMV (module docstring)."""

    capacity_entries: int
    """x entries kept on chip per SM."""
    hot_share: float
    """Share of gathers the on-chip x serves at best."""
    x_sectors: float
    """(1 - hot_share) * nnz."""
    stream_sectors: float
    """Values, column indices, row pointers and y, in 32-byte sectors."""
    sector_rate_per_s: float
    time_floor_us: float
    """(x_sectors + stream_sectors) / sector_rate_per_s, in microseconds."""


def gather_bound(rows: int, nnz: int, hot: float, capacity_entries: int,
                 sector_rate_per_s: float, value_bytes: int = 4,
                 index_bytes: int = 4) -> GatherBound:
    """Lower bound on the time of one SpMV from its L2 sector requests (module docstring)."""
    if sector_rate_per_s <= 0:
        raise ValueError("sector rate must be positive")
    x_sectors = (1.0 - hot) * nnz
    stream = (nnz * (value_bytes + index_bytes) + index_bytes * (rows + 1)
              + value_bytes * rows) / SECTOR_BYTES
    return GatherBound(capacity_entries=int(capacity_entries), hot_share=float(hot),
                       x_sectors=x_sectors, stream_sectors=stream,
                       sector_rate_per_s=float(sector_rate_per_s),
                       time_floor_us=(x_sectors + stream) / sector_rate_per_s * 1e6)


def l2_sector_rate(l2_bw_gb_s: float) -> float:
    """Sectors per second of a measured L2 bandwidth: ``GB/s * 1e9 / 32``."""
    return l2_bw_gb_s * 1e9 / SECTOR_BYTES
