"""What pinning the most-gathered x entries on chip would serve, and what filling them costs.

A kernel may keep the ``H`` most-gathered entries of x on chip: in one SM's shared memory, or
spread over the distributed shared memory of a thread-block cluster of ``c`` SMs (Hopper), each
SM holding ``H / c`` and reading the others' through the cluster. Their gathers then cost no L2
request. Every copy of the hot set (one per SM, or one per cluster: ``copies = SMs / c``) is
filled once a call from L2, a 32-byte sector at a time, every distinct sector the hot columns
fall in::

    H            = c x (entries one SM holds)
    served share = (sum of the H largest column counts) / nnz        (gathers.top_columns)
    fill sectors = copies x (distinct x sectors of the hot columns)

``served - fill sectors`` is an upper bound on the L2 requests saved: without the hot set, a
warp instruction's gathers that fall in one sector share one request, so the requests the hot
columns would have cost are at most their gathers. It tells which matrices a cluster-shared hot
set could help before such a kernel is built (``scripts/hot_set_reach.py``). Measured on the
H200 (results/h200/kernels/followups/2026-11-25-dsmem-gather-probe): random loads spread over a
cluster's blocks run at 0.4x (8 blocks) to 1.05x (2 blocks) the L2 random-gather rate, against
7.4x for a block's own shared memory, so a cluster-shared hot set would gather slower than the L2
it replaces; the memory floor (:mod:`model.gathers`) credits one SM's own shared memory only.

How many of the most-gathered columns one SM should pin (:func:`pinned_columns`): every SM
fills its own copy, so a column is worth its place only while the gathers it serves outweigh
its share of the fill. With the columns ranked most-gathered first (ties lowest index) and
``fill_cost`` the time of one fill sector in units of one gather request::

    gain(k) = served(first k) - fill_cost x SMs x (distinct sectors of the first k)
    pinned  = the first k* columns, k* = argmax gain (0 when no gain is positive), k* <= capacity
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.model.gathers import sector_index, top_columns


@dataclass(frozen=True)
class HotSetReach:
    """One hot-set size on one matrix: what it serves and what it costs to fill."""

    cluster: int
    """SMs sharing one copy (1: each SM its own)."""
    entries: int
    """x entries pinned (``cluster x`` one SM's, at most the columns)."""
    served: int
    """Gathers of the pinned columns."""
    share: float
    """served / all gathers."""
    copies: int
    """Copies filled a call: SMs / cluster."""
    fill_sectors: int
    """copies x distinct sectors of the pinned columns."""

    @property
    def net_saved(self) -> int:
        """Upper bound on the L2 requests saved: served - fill_sectors."""
        return self.served - self.fill_sectors


def hot_set_reach(column_counts: np.ndarray, *, entries_per_sm: int, cluster: int, sms: int,
                  value_bytes: int = 4) -> HotSetReach:
    """The :class:`HotSetReach` of pinning ``cluster x entries_per_sm`` entries, one copy per
    ``cluster`` SMs of ``sms``, for columns gathered ``column_counts`` times each."""
    if cluster < 1 or sms < cluster or entries_per_sm < 0:
        raise ValueError(f"need 1 <= cluster <= sms and entries >= 0, got cluster {cluster}, "
                         f"sms {sms}, entries {entries_per_sm}")
    counts = np.asarray(column_counts, dtype=np.int64)
    entries = min(cluster * int(entries_per_sm), counts.size)
    mask, served = top_columns(counts, entries)
    sectors = int(np.unique(sector_index(np.flatnonzero(mask), int(value_bytes))).size)
    total = int(counts.sum())
    copies = sms // cluster
    return HotSetReach(cluster=cluster, entries=entries, served=served,
                       share=served / total if total else 0.0, copies=copies,
                       fill_sectors=copies * sectors)


@dataclass(frozen=True)
class PinnedColumns:
    """The columns one SM pins (every SM the same ones) and what they serve and cost."""

    mask: np.ndarray
    """Boolean over the columns: pinned."""
    entries: int
    """Columns pinned (k*)."""
    served: int
    """Gathers of the pinned columns (in the units of the counts given)."""
    fill_sectors: int
    """SMs x distinct 32-byte sectors of the pinned columns: filled once a call."""


def pinned_columns(column_counts: np.ndarray, capacity: int, *, sms: int, fill_cost: float,
                   value_bytes: int = 4) -> PinnedColumns:
    """The :class:`PinnedColumns` of one SM's ``capacity`` entries (module docstring). Hand
    check: counts [9, 0, 1, 0, 0, 0, 0, 0, 5], 8 entries a sector, 2 SMs, fill cost 1: the
    ranking is columns 0 (9), 8 (5), 2 (1); gains 9 - 2 = 7, 14 - 4 = 10, 15 - 4 = 11: all three
    pinned, 4 fill sectors. With fill cost 3: 3, 2, 3: column 0 alone (the first maximum)."""
    if sms < 1 or fill_cost < 0:
        raise ValueError(f"need sms >= 1 and fill_cost >= 0, got {sms}, {fill_cost}")
    counts = np.asarray(column_counts, dtype=np.int64)
    cols = np.flatnonzero(top_columns(counts, capacity)[0])
    order = cols[np.lexsort((cols, -counts[cols]))]
    keep = np.zeros(counts.size, dtype=bool)
    if order.size == 0:
        return PinnedColumns(keep, 0, 0, 0)
    served = np.cumsum(counts[order])
    first = np.zeros(order.size, dtype=np.int64)
    first[np.unique(sector_index(order, int(value_bytes)), return_index=True)[1]] = 1
    fill = int(sms) * np.cumsum(first)
    gain = served - fill_cost * fill
    best = int(np.argmax(gain))
    if gain[best] <= 0:
        return PinnedColumns(keep, 0, 0, 0)
    keep[order[:best + 1]] = True
    return PinnedColumns(keep, best + 1, int(served[best]), int(fill[best]))
