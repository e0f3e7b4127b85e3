"""HOTL: an LRU cache's misses from the average footprint of a trace (Xiang, Ding et al.,
ASPLOS 2013), shared by the L2 model (``model.xgather`` (b)) and the L1 model
(``model.l1_cache``).

With n steps, m keys (sectors or lines), reuse times rt, first access f_k = t_first + 1 and last
l_k = n - t_last (0-based t)::

    fp(w) = m - [sum_rt (rt - w)+ + sum_k (f_k - w)+ + sum_k (l_k - w)+] / (n - w + 1)
    F(w)  = unit fp(w) + stream w;   w* = max{w : F(w) <= capacity}   (w* = n: all fits)

A reuse after more than w* steps misses (``model.xgather`` gives the hand checks).
"""

from __future__ import annotations

import numpy as np


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by one sort: NumPy 2's ``unique`` hashes before it sorts, six
    times slower on a trace of 150 K distinct keys (the L1 model calls it for every SM of
    every prediction)."""
    ordered = np.sort(values)
    keep = np.ones(ordered.size, dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def gap_terms(times: np.ndarray, sectors: np.ndarray, steps: int):
    """Sorted HOTL gaps (reuse times, f_k, l_k), sorted f_k and l_k alone, distinct sectors."""
    key = np.sort(sectors.astype(np.int64) * steps + times)
    sec = key // steps
    t = key - sec * steps
    new = np.ones(key.size, dtype=bool)
    new[1:] = sec[1:] != sec[:-1]
    ends = np.sort(np.concatenate([t[new] + 1, steps - t[np.append(new[1:], True)]]))
    gaps = np.sort(np.concatenate([np.diff(t)[~new[1:]], ends]))
    return gaps, ends, int(np.count_nonzero(new))


def prepare_gaps(parts):
    """``parts`` ((gap_terms, weight) pairs) with each part's prefix sums of its gaps."""
    return [(g, e, np.concatenate([[0], np.cumsum(g, dtype=np.float64)]), m, wt)
            for (g, e, m), wt in parts]


def largest_window(prepared, steps: int, capacity_bytes: float, stream: float,
                   unit_bytes: int) -> int:
    """w* = max{w : F(w) <= capacity} (module docstring), ``steps`` when all of it fits;
    F(w) = ``unit_bytes`` x fp(w) + ``stream`` x w."""

    def over(w: int) -> bool:           # F(w) > capacity, F(0) = 0
        fp = 0.0
        for gaps, _, csum, m, wt in prepared:
            i = int(np.searchsorted(gaps, w, side="right"))
            missed = (csum[-1] - csum[i]) - w * (gaps.size - i)
            fp += wt * (m - missed / (steps - w + 1))
        return w > 0 and unit_bytes * fp + stream * w > capacity_bytes

    if not over(steps):
        return steps
    lo, hi = 0, steps                   # F(lo) <= capacity < F(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if over(mid) else (mid, hi)
    return lo


def reuse_misses(prepared, window: int) -> float:
    """Reuses whose time is above ``window``: sum of weight x #{rt > window}."""
    return sum(wt * ((g.size - np.searchsorted(g, window, side="right"))
                     - (e.size - np.searchsorted(e, window, side="right")))
               for g, e, _, _, wt in prepared)


def hotl_misses(parts, steps: int, capacity_bytes: float, stream: float,
                sector_bytes: int) -> float:
    """Reuses that miss, sum of weight * #{rt > w*}; ``parts``: (gap_terms, weight)."""
    prepared = prepare_gaps(parts)
    window = largest_window(prepared, steps, capacity_bytes, stream, sector_bytes)
    return 0.0 if window >= steps else reuse_misses(prepared, window)
