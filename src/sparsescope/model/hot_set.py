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
set could help before such a kernel is built (``scripts/hot_set_reach.py``); the memory floor
(:mod:`model.gathers`) credits only one SM's shared memory, what our kernels can use today.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.model.gathers import SECTOR_BYTES, top_columns


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
    per_sector = max(1, SECTOR_BYTES // int(value_bytes))
    sectors = int(np.unique(np.flatnonzero(mask) // per_sector).size)
    total = int(counts.sum())
    copies = sms // cluster
    return HotSetReach(cluster=cluster, entries=entries, served=served,
                       share=served / total if total else 0.0, copies=copies,
                       fill_sectors=copies * sectors)
