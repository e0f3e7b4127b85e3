"""Sectors a CSR kernel fetches twice because its threads read each row in windows.

A CSR kernel with ``tpr`` lanes per row (``csr_scalar``: 1, ``csr_vector``: 2..32) reads a
row's values and column indices one window at a time: each loop iteration, the row's lanes load
``W = tpr x nnz_per_iteration`` consecutive entries (``W x e`` bytes for entries of ``e``
bytes), then the tail of the row. A window that starts inside a 32-byte sector requests that
sector again, though the previous window already fetched it: every boundary between two
windows of a row that is not sector-aligned costs one more sector request. With ``b0`` the
row's first byte (``indptr[r] x e``), ``n`` its windows (main iterations, plus one for a
non-empty tail)::

    refetches(row) = #{k = 1 .. n - 1 : (b0 + k W e) mod 32 != 0}
                   = (n - 1) x [b0 mod 32 != 0]             when W e is a multiple of 32

(summed over the value and the index stream). A warp of ``csr_scalar`` reads 32 rows at once,
so its loads are not coalesced: each such sector is its own request, whose data the L1 no
longer holds by the next iteration (2,048 threads x 2 streams x a 128-byte line per SM is
twice the L1). Whether the L2 still holds it depends on the kernel's footprint: when the
streams and x fit in the L2 nothing is evicted, else a once-read stream sector is gone by the
thread's next iteration (the L2 drops lines read once first, ``predict._x_gathers``) and the
refetch is a lone sector read from DRAM.

ncu on an H200 (csr_scalar, caches flushed): ldoor analog 20.1 M L2 read misses for 12.0 M
sectors of streams (the count below gives 1.6x); cage15 1,424 MB from DRAM for 835 MB of
streams and rows (1.7x); webbase-1M, whose 28 MB of streams fit in the L2, misses only its
unique sectors. A warp-per-row kernel (``tpr`` 32) has long windows and few refetches.
"""

from __future__ import annotations

import math

import numpy as np

from sparsescope.model.gathers import SECTOR_BYTES
from sparsescope.model.work_sample import sample_for


def window_refetches(indptr: np.ndarray, threads: int, windows: tuple[int, ...],
                     entry_bytes: float) -> float:
    """Sector requests beyond a row's own sectors, for one stream of ``entry_bytes`` entries
    (module docstring). ``windows = (u, w, p1, p2, ...)`` is how the kernel's loops read a row
    of ``n = L / threads`` entries a lane (its SASS): first ``n mod u`` entries one at a time,
    then ``w`` at a time while ``w`` remain, then one peeled copy of ``p1``, ``p2``, ... each
    while that many remain; a window of ``k`` entries a lane covers ``threads x k`` entries of
    the row. Each boundary between two consecutive windows that does not fall on a multiple of
    32 bytes requests its sector again. Hand check (1 thread, windows (4, 16, 8, 4), 4-byte
    entries): a row of 49 entries at entry 49 (byte 196): 1 single, then 3 windows of 16; the
    3 boundaries at bytes 200, 264, 328 are unaligned: 3. A row of 27 entries at entry 8
    (byte 32): 3 singles (boundaries at 36, 40, 44), a window of 16 (boundary at 108) and one
    of 8: 4."""
    indptr = np.asarray(indptr, dtype=np.int64)
    if indptr.size < 2 or entry_bytes <= 0 or len(windows) < 2:
        return 0.0
    if not float(entry_bytes).is_integer():   # mixed widths: count every boundary unaligned
        entry_bytes = 0
    e = int(entry_bytes)
    return float(_refetches_of(np.diff(indptr) // max(1, threads), indptr[:-1], threads,
                               windows, e))


def _refetches_of(n: np.ndarray, starts: np.ndarray, threads: int, windows: tuple[int, ...],
                  e: int) -> int:
    """:func:`window_refetches` of rows of ``n`` entries a lane starting at entry ``starts``."""
    phase = (starts * e) % SECTOR_BYTES if e else np.zeros_like(n)
    # rows are alike: evaluate each (entries a lane, phase) pair once, weighted by its rows
    short = n < _TABLE_ROWS
    key = n[short] * SECTOR_BYTES + phase[short]
    weight = np.bincount(key, minlength=1)
    kinds = np.flatnonzero(weight)
    extra = _row_refetches(kinds // SECTOR_BYTES, kinds % SECTOR_BYTES, weight[kinds],
                           threads, windows, e)
    if not short.all():
        extra += _row_refetches(n[~short], phase[~short], None, threads, windows, e)
    return extra


#: Rows with fewer entries a lane than this are counted by kind (entries, phase).
_TABLE_ROWS = 4096


def _row_refetches(n: np.ndarray, phase: np.ndarray, weight: np.ndarray | None,
                   threads: int, windows: tuple[int, ...], e: int) -> int:
    """Unaligned window boundaries of rows of ``n`` entries a lane starting ``phase`` bytes
    into a sector, each counted ``weight`` times (once when None)."""
    u, w, *peeled = windows
    singles = n % u
    counts = [singles, (n - singles) // w]
    left = (n - singles) % w
    for p in peeled:
        counts.append(left // p)
        left = left - counts[-1] * p
    widths = [threads * k * e for k in (1, w, *peeled)]
    after = np.zeros(n.shape, dtype=bool)   # a window follows the segment
    later = []
    for count in reversed(counts):
        later.append(after)
        after = after | (count > 0)
    later.reverse()
    position, extra = phase.copy(), 0
    for count, width, follows in zip(counts, widths, later, strict=True):
        bounds = np.where(follows, count, np.maximum(count - 1, 0))
        extra += _unaligned(position, width, bounds if weight is None else bounds * weight,
                            weight)
        position = position + count * width
    return extra


def _unaligned(first: np.ndarray, width: int, count: np.ndarray,
               weight: np.ndarray | None = None) -> int:
    """Of the positions ``first + k width`` (k = 1 .. count, bytes), how many are not a
    multiple of 32, summed over the rows (all of them for an unknown ``width`` of 0);
    ``count`` already carries each row's ``weight``."""
    total = int(count.sum())
    if total == 0 or width <= 0:
        return total
    ones = 1 if weight is None else weight
    if SECTOR_BYTES % width == 0:
        per = SECTOR_BYTES // width                # windows per sector
        offset = (first % SECTOR_BYTES) // width  # whole windows into the sector
        reps = count // ones                       # boundaries a row
        aligned = np.where(first % width == 0, (offset + reps) // per, 0) * ones
        return total - int(aligned.sum())
    if width % SECTOR_BYTES == 0:
        return int(np.sum(count[first % SECTOR_BYTES != 0]))
    return round(total * (1.0 - math.gcd(width, SECTOR_BYTES) / SECTOR_BYTES))


def csr_refetches(indptr: np.ndarray, threads: int, windows: tuple[int, ...],
                  value_bytes: float, index_bytes: float) -> float:
    """:func:`window_refetches` of the value and the index stream, in sectors. Above the work
    budget (``model.work_sample``), of the sample's rows at their places in the matrix, each
    group of rows of one weight counted that many times."""
    sample = sample_for(indptr)
    if sample is not None:
        return _sampled_refetches(sample, threads, windows, value_bytes, index_bytes)
    values = window_refetches(indptr, threads, windows, value_bytes)
    if index_bytes == value_bytes:
        return 2 * values
    return values + window_refetches(indptr, threads, windows, index_bytes)


def _sampled_refetches(sample, threads: int, windows: tuple[int, ...], value_bytes: float,
                       index_bytes: float) -> float:
    if len(windows) < 2 or sample.rows.size == 0:
        return 0.0
    n = np.diff(sample.indptr) // max(1, threads)
    total = 0.0
    for weight in np.unique(sample.row_weight).tolist():
        rows = sample.row_weight == weight
        for width in (value_bytes, index_bytes):
            if width <= 0:
                continue
            e = int(width) if float(width).is_integer() else 0
            total += weight * _refetches_of(n[rows], sample.starts[rows], threads, windows, e)
    return total
