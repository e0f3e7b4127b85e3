"""The x gathers of an SpMV: L2 sector requests and DRAM sectors, from structure and L2 size.

A CSR SpMV gathers ``x[col]`` once per nonzero; ``sector(col) = col * value_bytes // 32``.

(a) **L2 requests.** A warp instruction gathers 32 lanes; lanes in one 32-byte sector coalesce::

    requests = sum over warp instructions of |{sector(col) of its lanes}|

``threads_per_row`` = tpr in 1..32 (power of two): a warp covers ``32 / tpr`` consecutive rows;
at step s row r contributes its nonzeros ``s*tpr .. s*tpr + tpr - 1`` (tpr = 1: thread per row /
SELL, tpr = 32: warp per row). tpr = 0: nonzero split (merge path, tiles), a warp takes 32
consecutive nonzeros in storage order. Gathers to the first ``onchip_entries`` columns are
served from L1 / shared memory and cost no request: what the hub kernels pin (``x[0, hub)``,
every SM the same ones), popular or not; the floor's strategies (:func:`floor_requests`) pin
the most-gathered columns worth their fill instead (:func:`hot_set.pinned_columns`).
Example, the 64 x 64 tridiagonal, 4-byte x (8 entries a sector), tpr = 1:
warp 0, step 0 gathers cols {0, 0..30} = sectors 0..3: 4; step 1 cols 1..31: 4; step 2 cols
2..32: 5; warp 1: cols 31..62 (5), 32..63 (4), 33..63 (4): 26 requests for 190 gathers.

(b) **DRAM sectors.** The L2 is one LRU cache of ``l2_bytes`` (Hopper's two partitions are
treated as one); all SMs progress through the rows together, so the access stream is the
nonzeros in row order, one time step each. Each step also passes ``stream_bytes_per_nnz``
bytes of values / indices / row pointers through L2, used once. A reuse of an x sector hits iff
``32 * (distinct x sectors in between) + stream * (steps in between) < l2_bytes``. HOTL (Xiang,
Ding et al., ASPLOS 2013) estimates that LRU from the average footprint: with n steps, m
sectors, reuse times rt, first access f_k = t_first + 1 and last l_k = n - t_last (0-based t)::

    fp(w) = m - [sum_rt (rt - w)+ + sum_k (f_k - w)+ + sum_k (l_k - w)+] / (n - w + 1)
    F(w)  = 32 fp(w) + stream * w;  w* = max{w : F(w) <= l2_bytes}   (w* = n: all fits)
    dram  = distinct sectors + #{reuses with rt > w*}

fp(w) counts, for each sector, the windows of w steps that miss it (a gap of g steps holds
``(g - w + 1)+`` of them). A reuse after rt steps has, on average, a footprint of F(rt) bytes
in between, so it misses iff rt > w*; every first access misses (compulsory). HOTL's own
miss ratio fp(w* + 1) - fp(w*) ~ #{gaps > w*} / (n - w*) is the steady-state form of the same
count: on a finite trace it drops the compulsory misses whose first access comes early, and
``max(distinct, ratio * n)`` was 20-45 % low against exact LRU where compulsory and capacity
misses are comparable (a cache just below the x + stream footprint); the count above stays
within 7 % of exact LRU on the test matrices (worst at an 8-line cache; median 0.05 %).
Sectors gathered only on chip count once (their load).

Above ``max_exact_nnz`` nonzeros both parts sample about ``sample_nnz`` (seeded, deterministic)
and say so: (a) counts the row groups of many nonzeros whole and a random share of the others,
scaled by the ratio of their nonzeros; (b) SHARDS (Waldspurger et al., FAST 2015) keeps the
gathers whose sector passes ``(sector XOR mix(seed)) * 0x9E3779B1 mod 2^32 < R 2^32``
(R = sample_nnz / nnz) and scales their footprint and reuse misses by 1/R; the distinct
sectors stay exact (one pass over all gathers) and the on-chip columns are ranked on every
k-th gather. A hub sector in or out of the sample moves fp by 1/R sectors (kilobytes against
megabytes of L2) and hubs rarely miss: the many sectors with long reuses carry the estimate.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from sparsescope.model.footprint import gap_terms, hotl_misses
from sparsescope.model.gathers import SECTOR_BYTES, sector_index
from sparsescope.model.hot_set import pinned_columns
from sparsescope.model.l1_cache import l1_hit_share
from sparsescope.model.last_matrix import LastMatrixAnswers
from sparsescope.model.side_by_side import side_by_side, worth_threads
from sparsescope.model.work_sample import L1_SAMPLED_SMS, L1_SMS_BELOW_BUDGET, sample_for

_HASH = np.uint32(0x9E3779B1)           # Fibonacci hashing: sector * _HASH mod 2^32


@dataclass(frozen=True)
class XGather:
    """Predicted L2 requests and DRAM sectors of the x gathers (module docstring)."""

    gathers: int                 # nnz (x loads)
    l2_requests: float           # (a) sector requests to L2 (after on-chip hits)
    distinct_sectors: int        # compulsory DRAM sectors
    dram_sectors: float          # (b) predicted DRAM sectors for x
    l2_hit_rate: float           # 1 - dram_sectors / l2_requests (0 when none; clipped at 0)
    onchip_share: float          # share of gathers served on chip
    sampled: bool
    sample_fraction: float       # 1.0 when exact; else the smallest share sampled
    method: str                  # what was computed and how

    @property
    def dram_bytes(self) -> float:
        """``dram_sectors * 32``."""
        return self.dram_sectors * SECTOR_BYTES


@dataclass(frozen=True)
class SectorRequests:
    """(a): L2 sector requests of the x gathers; ``sample_fraction`` of the nnz counted."""

    requests: float
    sampled: bool
    sample_fraction: float


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, e)`` for each pair, as int64."""
    lens = (ends - starts).astype(np.int64)
    offs = np.repeat(starts.astype(np.int64) - (np.cumsum(lens) - lens), lens)
    return offs + np.arange(int(lens.sum()), dtype=np.int64)


def _count(pos, indptr, indices, tpr, value_bytes, sector_bytes, skip, block=0,
           row=None) -> int:
    """Distinct (warp instruction, sector) pairs among the nonzeros at positions ``pos``.

    The instruction of a nonzero is ``indptr[first row of its warp] + step`` (tpr > 0; a step is
    below the warp's nnz, so warps do not collide) or ``pos // 32`` (tpr = 0). With ``block``
    > 0 the unit is a block instead: ``row // block`` rows (tpr > 0) or ``pos // block``
    nonzeros (tpr = 0) -- the L1 keeps a block's x sectors, so each costs one request.
    ``row``: the row of each position where the caller knows it (:func:`_rows_of`), else
    found by a search of ``indptr``.

    The pairs are counted by a stable sort: a warp's positions come row after row, each row's
    instructions ascending, so the keys are runs, which NumPy's stable sort of 64-bit keys
    (timsort) merges: 2-30 times faster than its default sort on the circuit5M and cage15
    analogs (2026-11-28, the 2-core machine); the sorted keys, and the count, are the same."""
    cols = indices[pos].astype(np.int64)
    if tpr and row is None:
        row = np.searchsorted(indptr, pos, side="right") - 1
    if block:
        instr = row // block if tpr else pos // block
    elif tpr:
        instr = indptr[(row // (32 // tpr)) * (32 // tpr)] + (pos - indptr[row]) // tpr
    else:
        instr = pos // 32
    if skip is not None:
        keep = ~skip[cols]
        instr, cols = instr[keep], cols[keep]
    if cols.size == 0:
        return 0
    sec = sector_index(cols, value_bytes, sector_bytes)
    key = np.sort(instr.astype(np.int64) * (int(sec.max()) + 1) + sec, kind="stable")
    return 1 + int(np.count_nonzero(key[1:] != key[:-1]))


def _rows_of(indptr: np.ndarray, first_rows: np.ndarray, last_rows: np.ndarray) -> np.ndarray:
    """The row of each nonzero of the row ranges ``[first, last)``, in storage order (what
    ``searchsorted(indptr, position, "right") - 1`` finds for each, by one repeat)."""
    rows = _ranges(first_rows, last_rows)
    return np.repeat(rows, indptr[rows + 1] - indptr[rows])


def sector_requests(indptr, indices, *, threads_per_row: int, value_bytes: int = 4,
                    sector_bytes: int = SECTOR_BYTES, skip_columns: np.ndarray | None = None,
                    max_exact_nnz: int = 4_000_000, sample_nnz: int = 1_000_000,
                    seed: int = 0, l1_block: int = 0) -> SectorRequests:
    """(a) L2 sector requests (module docstring); ``skip_columns`` (bool per column): on chip.
    ``l1_block`` > 0: the kernel's x loads are cached in L1 for the life of a block of that many
    rows (tpr > 0) or nonzeros (tpr = 0), so a request is a distinct (block, sector) pair.

    Exact up to ``max_exact_nnz``. Above, the units (warps' row groups, or 32-nonzero chunks
    for tpr = 0) of more than ``max(32, 8 * mean, sample_nnz / 256)`` nnz are counted whole,
    the others each with probability sample_nnz / their nnz (seeded), by the ratio estimator::

        requests = big + sampled requests * (small nnz / sampled small nnz)"""
    tpr = int(threads_per_row)
    if tpr not in (0, 1, 2, 4, 8, 16, 32):
        raise ValueError("threads_per_row must be 0 or a power of two from 1 to 32")
    indptr = np.asarray(indptr, dtype=np.int64)
    nnz = int(indptr[-1]) if indptr.size else 0
    args = (indptr, indices, tpr, value_bytes, sector_bytes, skip_columns, l1_block)
    rows = indptr.size - 1
    if nnz <= max_exact_nnz:
        every = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr)) if tpr else None
        return SectorRequests(float(_count(np.arange(nnz), *args, row=every)), False, 1.0)
    group = (l1_block or 32 // tpr) if tpr else (l1_block or 32)
    if tpr:
        starts = indptr[:-1][::group]
    else:
        starts = np.arange(0, nnz, group, dtype=np.int64)
    ends = np.append(starts[1:], nnz)
    sizes = ends - starts
    big = sizes > max(32, 8 * nnz / sizes.size, sample_nnz / 256)
    big_nnz = int(sizes[big].sum())
    # salted: a generator that drew row lengths from default_rng(seed) must not steer the sample
    rng = np.random.default_rng([seed, 0x5EC7025])
    take = rng.random(starts.size) < sample_nnz / max(1, nnz - big_nnz)
    take &= ~big
    taken = int(sizes[take].sum())

    def counted(units: np.ndarray) -> int:
        # a unit of rows (tpr > 0) is rows [u group, (u + 1) group): their rows by one repeat
        first = units * group
        row = _rows_of(indptr, first, np.minimum(first + group, rows)) if tpr else None
        return _count(_ranges(starts[units], ends[units]), *args, row=row)

    est = counted(np.flatnonzero(big))
    if taken:
        est += counted(np.flatnonzero(take)) * (nnz - big_nnz) / taken
    return SectorRequests(float(est), True, (big_nnz + taken) / nnz)


def footprint_miss_ratio(sector_trace, *, capacity_bytes: float, stream_bytes_per_access: float,
                         sector_bytes: int = SECTOR_BYTES) -> float:
    """HOTL LRU misses per step of a trace (one sector per step, negative = no x access).

    ``misses = m + #{rt > w*}`` (module docstring), divided by ``len(trace)``. Example
    [0, 1, 0, 1], no stream, 32 B: gaps rt {2, 2}, f {1, 2}, l {2, 1}; fp(1) = 2 - 4/4 = 1,
    fp(2) = 2 - 0/3 = 2, so w* = 1 (F(2) = 64 > 32): 2 + 2 = 4 misses, as LRU of one line."""
    trace = np.asarray(sector_trace, dtype=np.int64)
    t = np.flatnonzero(trace >= 0)
    if t.size == 0:
        return 0.0
    terms = gap_terms(t, trace[t], trace.size)
    reuse = hotl_misses([(terms, 1.0)], trace.size, capacity_bytes, stream_bytes_per_access,
                        sector_bytes)
    return (terms[2] + reuse) / trace.size


def lru_misses_exact(sector_trace, stream_bytes_per_access: float, capacity_bytes: float,
                     sector_bytes: int = SECTOR_BYTES) -> int:
    """Exact LRU misses of the x accesses (negative entries: no x access that step).

    After each step ``stream_bytes_per_access / sector_bytes`` fresh, never-reused lines are
    inserted (the fraction accumulates); the cache holds ``capacity_bytes // sector_bytes``."""
    lines = int(capacity_bytes // sector_bytes)
    per = stream_bytes_per_access / sector_bytes
    cache: OrderedDict = OrderedDict()
    misses, owed, fresh = 0, 0.0, 0
    for s in np.asarray(sector_trace).tolist():
        if s >= 0:
            if s in cache:
                cache.move_to_end(s)
            else:
                misses += 1
                cache[s] = None
        owed += per
        while owed >= 1.0:
            owed -= 1.0
            fresh -= 1
            cache[("stream", fresh)] = None
        while len(cache) > lines:
            cache.popitem(last=False)
    return misses


def _onchip(indices: np.ndarray, cols: int, entries: int, max_exact_nnz: int, pin=None):
    """(share, skip mask, counting stride, fill sectors) of the first ``entries`` columns (what
    the hub kernels pin), or with ``pin`` = (SMs, fill cost, value bytes) of the most-gathered
    columns worth their fill among ``entries`` (``hot_set.pinned_columns``). The counts are of
    every stride-th gather (stride 1 up to ``max_exact_nnz``), scaled back by the stride before
    they are weighed against the fill."""
    if entries <= 0:
        return 0.0, None, 1, 0
    stride = max(1, -(-indices.size // max(1, max_exact_nnz)))
    counts = np.bincount(indices[::stride], minlength=cols)
    total = int(counts.sum())
    if pin is None:
        skip = np.zeros(cols, dtype=bool)
        skip[:entries] = True
        top, fill = int(counts[:entries].sum()), 0
    else:
        sms, cost, value_bytes = pin
        chosen = pinned_columns(counts * stride, entries, sms=sms, fill_cost=cost,
                                value_bytes=value_bytes)
        skip, top, fill = chosen.mask, chosen.served // stride, chosen.fill_sectors
    return (float(top / total) if total else 0.0), skip, stride, fill


def _l2_trace(indices, skip, value_bytes, sector_bytes, nsec, rate, seed, chunk=1 << 18):
    """One pass: distinct sectors of all gathers, and (step, sector) of the gathers that reach
    L2 (column not in ``skip``) with ``hash(sector) < rate 2^32`` (SHARDS; all when rate = 1)."""
    seen = np.zeros(nsec, dtype=bool)
    mix = np.uint32((seed * 0x85EBCA6B + 0x6A09E667) & 0xFFFFFFFF)
    limit = np.uint32(min(int(rate * 2 ** 32), 2 ** 32 - 1))
    pos, secs = [], []
    for o in range(0, indices.size, chunk):
        c = indices[o:o + chunk]
        s = sector_index(c, value_bytes, sector_bytes)
        seen[s] = True
        if rate >= 1.0:
            k = np.arange(s.size)
        else:
            k = np.flatnonzero((s.astype(np.uint32) ^ mix) * _HASH < limit)
        if skip is not None:
            k = k[~skip[c[k]]]
        pos.append(k + o)
        secs.append(s[k])
    return np.concatenate(pos), np.concatenate(secs), int(np.count_nonzero(seen))


X_GATHERS = LastMatrixAnswers()
"""The x-gather models of the last matrix (:func:`x_gather`)."""


def x_gather(indptr, indices, *, cols: int, l2_bytes: int, stream_bytes_per_nnz: float,
             threads_per_row: int = 1, value_bytes: int = 4, onchip_entries: int = 0,
             sector_bytes: int = SECTOR_BYTES, max_exact_nnz: int = 4_000_000,
             sample_nnz: int = 1_000_000, seed: int = 0, l1_block: int = 0,
             l1=None) -> XGather:
    """(a) and (b) for one CSR matrix (module docstring): exact up to ``max_exact_nnz``
    nonzeros, above that (a) and (b) sample about ``sample_nnz`` each. ``l1``: (``l1_cache.
    L1Cache``, rows or nonzeros a block takes): the requests per warp instruction less the
    share an SM's L1 serves across its blocks (``model.l1_cache``), in place of ``l1_block``.
    The same question of the same arrays is answered once (:data:`X_GATHERS`)."""
    key = (int(cols), int(l2_bytes), float(stream_bytes_per_nnz), int(threads_per_row),
           int(value_bytes), int(onchip_entries), int(sector_bytes), int(max_exact_nnz),
           int(sample_nnz), int(seed), int(l1_block), l1)
    return X_GATHERS.get((indptr, indices), key, lambda: _x_gather(
        indptr, indices, cols=cols, l2_bytes=l2_bytes,
        stream_bytes_per_nnz=stream_bytes_per_nnz, threads_per_row=threads_per_row,
        value_bytes=value_bytes, onchip_entries=onchip_entries, sector_bytes=sector_bytes,
        max_exact_nnz=max_exact_nnz, sample_nnz=sample_nnz, seed=seed, l1_block=l1_block,
        l1=l1))


def _x_gather(indptr, indices, *, cols: int, l2_bytes: int, stream_bytes_per_nnz: float,
              threads_per_row: int, value_bytes: int, onchip_entries: int, sector_bytes: int,
              max_exact_nnz: int, sample_nnz: int, seed: int, l1_block: int, l1) -> XGather:
    arrays = (indptr, indices)  # the caller's, by which the parts are kept (X_GATHERS)
    indptr = np.asarray(indptr, dtype=np.int64)
    nnz = int(indptr[-1]) if indptr.size else 0
    indices = np.asarray(indices)[:nnz]
    if nnz == 0:
        return XGather(0, 0.0, 0, 0.0, 0.0, 0.0, False, 1.0, "no nonzeros, no x gathers.")
    # each part depends on fewer parameters than the whole: kernels that differ only in their
    # launch share the on-chip columns, the L2 reuse and (same lanes a row) the requests
    share, skip, stride, _ = X_GATHERS.get(
        arrays, ("onchip", int(cols), onchip_entries, max_exact_nnz),
        lambda: _onchip(indices, cols, onchip_entries, max_exact_nnz))
    rate = 1.0 if nnz <= max_exact_nnz else min(1.0, sample_nnz / nnz)
    # above the work budget, fewer SMs, each followed as far (model.work_sample)
    above = l1 is not None and sample_for(arrays[0]) is not None

    def requests() -> SectorRequests:
        return X_GATHERS.get(
            arrays, ("requests", int(cols), threads_per_row, value_bytes, sector_bytes,
                     onchip_entries, max_exact_nnz, sample_nnz, seed,
                     0 if l1 is not None else l1_block),
            lambda: sector_requests(indptr, indices, threads_per_row=threads_per_row,
                                    value_bytes=value_bytes, sector_bytes=sector_bytes,
                                    skip_columns=skip, max_exact_nnz=max_exact_nnz,
                                    sample_nnz=sample_nnz, seed=seed,
                                    l1_block=0 if l1 is not None else l1_block))

    def l1_part() -> tuple[float, bool]:
        if l1 is None:
            return 0.0, False
        cache, per_block = l1
        sms = L1_SAMPLED_SMS if above else L1_SMS_BELOW_BUDGET
        l1_nnz = sample_nnz * sms // L1_SMS_BELOW_BUDGET
        return X_GATHERS.get(
            arrays, ("l1", int(cols), cache, per_block, threads_per_row, value_bytes,
                     onchip_entries, sample_nnz, sms),
            lambda: l1_hit_share(indptr, indices, cache=cache, threads_per_row=threads_per_row,
                                 per_block=per_block, value_bytes=value_bytes,
                                 skip_columns=skip, sample_nnz=l1_nnz, sampled_sms=sms))

    def l2_part() -> tuple[int, float]:
        return X_GATHERS.get(
            arrays, ("l2", int(cols), value_bytes, sector_bytes, onchip_entries, max_exact_nnz,
                     rate, seed, l2_bytes, stream_bytes_per_nnz),
            lambda: _l2_misses(indices, skip, cols=cols, nnz=nnz, value_bytes=value_bytes,
                               sector_bytes=sector_bytes, rate=rate, seed=seed,
                               l2_bytes=l2_bytes, stream_bytes_per_nnz=stream_bytes_per_nnz))

    # the three parts share nothing but their inputs: side by side on a large matrix
    req, (l1_share, l1_sampled), (distinct, reuse) = side_by_side(
        (requests, l1_part, l2_part), worth_threads(nnz))
    if l1 is not None:
        req = SectorRequests(req.requests * (1.0 - l1_share), req.sampled or l1_sampled,
                             req.sample_fraction)
    dram = float(distinct + reuse)
    sampled = req.sampled or rate < 1.0 or stride > 1
    onchip = f", on-chip columns ranked on every {stride}th gather" if stride > 1 else ""
    how = (f"sampled (seed {seed}): (a) {req.sample_fraction:.3g} of the nnz, (b) SHARDS at "
           f"rate {rate:.3g}{onchip}" if sampled else "exact")
    unit = (f"per block of {l1_block} {'rows' if threads_per_row else 'nonzeros'} (x kept in "
            f"L1 for a block's life)" if l1_block else "per warp instruction")
    if l1 is not None:
        unit = (f"per warp instruction less the {100 * l1_share:.1f} % an SM's L1 of "
                f"{l1[0].bytes // 1024} KB serves across its blocks ({l1[0].resident_blocks} "
                f"resident; model.l1_cache)")
        if above:
            unit += (f" (above the work budget: {L1_SAMPLED_SMS} sampled SMs, each followed "
                     f"through about {sample_nnz // L1_SMS_BELOW_BUDGET:,} gathers)")
    method = (f"x gathers of {nnz:,} nonzeros: L2 sector requests {unit}, "
              f"{lane_mapping(threads_per_row)}; DRAM sectors = distinct + HOTL reuse misses "
              f"of an LRU L2 of {l2_bytes:,} B shared with {stream_bytes_per_nnz:g} B/nnz of "
              f"streams; {how}.")
    hit = max(0.0, 1.0 - dram / req.requests) if req.requests > 0 else 0.0
    return XGather(gathers=nnz, l2_requests=req.requests, distinct_sectors=distinct,
                   dram_sectors=dram, l2_hit_rate=float(hit), onchip_share=float(share),
                   sampled=sampled, sample_fraction=min(req.sample_fraction, rate, 1 / stride),
                   method=method)


def lane_mapping(threads_per_row: int) -> str:
    """How a warp's lanes take the nonzeros, in words: ``threads_per_row`` lanes a row, or
    (0) the nonzero split: 32 consecutive nonzeros a warp instruction, rows cut anywhere."""
    if threads_per_row <= 0:
        return "32 consecutive nonzeros a warp instruction (the nonzero split: rows cut anywhere)"
    if threads_per_row == 1:
        return "one thread a row"
    return f"{threads_per_row} threads a row"


def _l2_misses(indices, skip, *, cols: int, nnz: int, value_bytes: int, sector_bytes: int,
               rate: float, seed: int, l2_bytes: int, stream_bytes_per_nnz: float
               ) -> tuple[int, float]:
    """(b): (distinct x sectors, HOTL reuse misses) of the gathers that reach the L2."""
    nsec = int(sector_index(np.array([cols - 1]), value_bytes, sector_bytes)[0]) + 1
    pos, secs, distinct = _l2_trace(indices, skip, value_bytes, sector_bytes, nsec, rate, seed)
    reuse = 0.0
    if pos.size:
        reuse = hotl_misses([(gap_terms(pos, secs, nnz), 1.0 / rate)], nnz, l2_bytes,
                            stream_bytes_per_nnz, sector_bytes)
    return distinct, reuse


#: The strategies the floor takes the fewest requests of: (name, threads per row, on-chip use).
#: ``hot``: the capacity pins the most-gathered columns worth their fill
#: (``hot_set.pinned_columns``); ``block``: it holds every x sector of a run of capacity / 32 B
#: consecutive nonzeros (at most that many distinct sectors, so they fit), each fetched once per
#: run.
FLOOR_STRATEGIES = (
    ("32 consecutive nonzeros per warp instruction, hot columns on chip", 0, "hot"),
    ("a thread per row, hot columns on chip", 1, "hot"),
    ("runs of consecutive nonzeros whose x sectors stay on chip", 0, "block"),
)


@dataclass(frozen=True)
class FloorRequests:
    """The fewest x sector requests of the floor's strategies, and which one."""

    requests: float
    hot_share: float
    """Share of gathers the pinned columns serve (0 for the run strategy)."""
    strategy: str
    """The strategy's name."""
    sampled: bool
    fill_sectors: float = 0.0
    """SMs x distinct sectors of the pinned columns, filled once a call (0 for the runs, whose
    requests already fetch each sector once)."""


def floor_requests(indptr, indices, *, cols: int, capacity_entries: int, sms: int,
                   fill_cost: float, value_bytes: int = 4, max_exact_nnz: int = 4_000_000,
                   sample_nnz: int = 1_000_000) -> FloorRequests:
    """min over :data:`FLOOR_STRATEGIES` of (a)'s requests plus ``fill_cost`` x fill sectors,
    the ``capacity_entries`` x entries of one SM's on-chip memory used as each strategy says
    (``model.gathers``' floor): the hot strategies pin the columns worth their fill in each of
    ``sms`` SMs, a fill sector costing ``fill_cost`` requests' time. Every candidate of one
    matrix asks the same question, so the answer is kept for the last matrix
    (:data:`X_GATHERS`: the same arrays, capacity, SMs, fill cost and value bytes)."""
    key = ("floor", int(cols), int(capacity_entries), int(sms), float(fill_cost),
           int(value_bytes), int(max_exact_nnz), int(sample_nnz))
    return X_GATHERS.get((indptr, indices), key, lambda: _floor_requests(
        indptr, indices, cols=cols, capacity_entries=capacity_entries, sms=sms,
        fill_cost=fill_cost, value_bytes=value_bytes, max_exact_nnz=max_exact_nnz,
        sample_nnz=sample_nnz))


def _floor_requests(indptr, indices, *, cols: int, capacity_entries: int, sms: int,
                    fill_cost: float, value_bytes: int, max_exact_nnz: int,
                    sample_nnz: int) -> FloorRequests:
    indptr_64 = np.asarray(indptr, dtype=np.int64)
    nnz = int(indptr_64[-1]) if indptr_64.size else 0
    idx = np.asarray(indices)[:nnz]
    share, skip, _, fill = _onchip(idx, cols, capacity_entries, max_exact_nnz,
                                   pin=(sms, fill_cost, value_bytes))
    run = max(1, capacity_entries * value_bytes // SECTOR_BYTES)
    best = FloorRequests(0.0, share, FLOOR_STRATEGIES[0][0], False, float(fill))
    if nnz:
        def option(name: str, tpr: int, use: str):
            def count() -> FloorRequests:
                req = sector_requests(indptr_64, idx, threads_per_row=tpr,
                                      value_bytes=value_bytes,
                                      skip_columns=skip if use == "hot" else None,
                                      max_exact_nnz=max_exact_nnz, sample_nnz=sample_nnz,
                                      l1_block=run if use == "block" else 0)
                hot = use == "hot"
                return FloorRequests(req.requests, share if hot else 0.0, name, req.sampled,
                                     float(fill) if hot else 0.0)
            return count

        # the strategies' passes share nothing but the matrix: side by side on a large one
        options = side_by_side([option(*s) for s in FLOOR_STRATEGIES], worth_threads(nnz))
        best = min(options, key=lambda o: o.requests + fill_cost * o.fill_sectors)
    return best
