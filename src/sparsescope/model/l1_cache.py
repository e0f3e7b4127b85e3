"""The x gathers that an SM's L1 serves across the blocks it runs, from the L1's capacity.

**Capacity.** An SM's L1 and its shared memory are one array (``hardware.specs.
UNIFIED_L1_SHARED_KIB``: 256 KB on Hopper). At a launch the driver sets aside a shared-memory
carveout, one of a fixed list of sizes (``SHARED_CARVEOUTS_KIB``), and the L1 keeps the rest::

    L1 bytes = unified - carveout
    carveout = smallest supported size >= resident blocks x (shared bytes + 1 KB reserved)

The driver's choice is not documented and it may take more: ncu on an H200 (driver 580) read a
132 KB carveout for the tile kernel, whose 6 resident blocks of 8.2 KB need 55 KB (64 KB here),
and 32 KB for kernels without shared memory (0 here). So the L1 here is the most a launch could
leave it, and its hits are an upper estimate where the driver takes more.

**Reuse.** The L1 is an LRU of 128-byte lines, each filled a 32-byte sector at a time. Blocks go
to the SMs in launch order (block b to SM b mod SMs); an SM holds R blocks at once and their warp
instructions take turns, one of each resident block in turn (a block's own in step order: every
warp's step s before any warp's step s + 1). A warp instruction asks once for each distinct
sector its lanes gather. On one SM's trace of these requests, one time step per warp
instruction, a request hits when its sector was fetched before and the LRU kept its line since.
The LRU's clock ticks once per line a warp instruction touches::

    a line stays while its accesses come at most w* ticks apart,
    w* = max{w : 128 B x fp_lines(w) <= L1 bytes}

fp_lines(w): the average count of distinct lines in a window of w ticks (HOTL, Xiang et al.,
ASPLOS 2013, as ``model.xgather`` (b) uses it for the L2): an LRU drops a line whose reuse
comes after more than its capacity of other lines, about w* ticks. The streams are taken to
bypass the L1, as the own kernels' do (``ld.global.nc.L1::no_allocate``)::

    L2 requests = requests per warp instruction x (1 - hits / requests, over the sampled SMs)

Every SM is simulated while the matrix has at most ``sample_nnz`` nonzeros; above, a few SMs
evenly spaced, each the first steps of its trace, about its share of ``sample_nnz`` gathers.
The prefix's cold start is counted once and the rest of the SM's trace is taken to hit as the
prefix does after its L1's lines are first all taken (counted as a plain prefix, rmat-29 at
200 K sampled gathers read 45.1 % against the whole trace's 55.6 %).

Measured (ncu, H200, ``results/h200/profile/2026-11-25-cases-hub8k``, read by the tests): the
tile kernel's L1 (124 KB at the driver's carveout) served 11.5 % of the webbase-1M analog's x
gathers and 8.8 % of circuit5M's; this model at 124 KB: 10.7 % and 8.1 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sparsescope.hardware.specs import SHARED_CARVEOUTS_KIB, UNIFIED_L1_SHARED_KIB
from sparsescope.model.footprint import largest_window, prepare_gaps, sorted_unique
from sparsescope.model.gathers import SECTOR_BYTES, sector_index
from sparsescope.model.kernel_shape import SMEM_RESERVED_PER_BLOCK

LINE_BYTES = 128
"""An L1 line: four 32-byte sectors under one tag."""


@dataclass(frozen=True)
class L1Cache:
    """One SM's L1 as a kernel's launch leaves it, and how the SMs run the kernel's blocks."""

    bytes: int
    """L1 data capacity per SM (module docstring)."""
    sms: int
    resident_blocks: int
    """Blocks an SM runs at once, whose warp instructions take turns."""


def l1_data_bytes(compute_capability: str, shared_bytes_per_block: int,
                  resident_blocks: int) -> tuple[int, int] | None:
    """(L1 bytes, carveout bytes) of one SM for a kernel of ``shared_bytes_per_block`` static
    shared memory with ``resident_blocks`` blocks per SM, or None for an architecture whose
    unified cache is not in the table. Hand check, Hopper: 6 blocks of 8,200 B need
    6 x 9,224 = 55,344 B -> carveout 64 KB -> L1 256 - 64 = 192 KB; no shared memory -> 256 KB.
    """
    unified = UNIFIED_L1_SHARED_KIB.get(compute_capability)
    sizes = SHARED_CARVEOUTS_KIB.get(compute_capability)
    if unified is None or not sizes:
        return None
    need = (max(1, resident_blocks) * (shared_bytes_per_block + SMEM_RESERVED_PER_BLOCK)
            if shared_bytes_per_block > 0 else 0)
    fitting = [k * 1024 for k in sizes if k * 1024 >= need]
    carveout = fitting[0] if fitting else sizes[-1] * 1024
    return max(0, unified * 1024 - carveout), carveout


def _sm_positions(indptr, sm: int, cache: L1Cache, tpr: int, per_block: int, blocks: int,
                  budget: int):
    """(nonzero positions, local instruction, block index on the SM, blocks, all the SM's
    gathers) of the blocks SM ``sm`` runs, in rounds of ``resident_blocks``, up to ``budget``
    gathers (whole rounds; at least one). A local instruction is a block's warp instruction in
    its step order: chunk ``k`` of 32 nonzeros (nonzero split), or step ``s`` of warp ``w`` at
    ``s x warps + w``."""
    nnz = int(indptr[-1])
    ids = np.arange(sm, blocks, cache.sms, dtype=np.int64)
    if tpr:
        rows = indptr.size - 1
        lo = indptr[np.minimum(ids * per_block, rows)]
        hi = indptr[np.minimum((ids + 1) * per_block, rows)]
    else:
        lo = np.minimum(ids * per_block, nnz)
        hi = np.minimum((ids + 1) * per_block, nnz)
    r = max(1, cache.resident_blocks)
    sizes = hi - lo
    total = int(sizes.sum())
    round_sizes = np.add.reduceat(sizes, np.arange(0, ids.size, r)) if ids.size else sizes
    keep_rounds = max(1, int(np.searchsorted(np.cumsum(round_sizes), budget, side="right")))
    ids, lo, sizes = (a[: keep_rounds * r] for a in (ids, lo, sizes))
    pos = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))
    which = np.repeat(np.arange(ids.size), sizes)
    if tpr:
        row = np.searchsorted(indptr, pos, side="right") - 1
        rows_per_warp = 32 // tpr
        warps = max(1, per_block // rows_per_warp)
        step = (pos - indptr[row]) // tpr
        warp = (row - ids[which] * per_block) // rows_per_warp
        local = step * warps + warp
    else:
        local = (pos - lo[which]) // 32
    return pos, local, which, int(ids.size), total


def _trace_times(local: np.ndarray, which: np.ndarray, blocks: int,
                 resident: int) -> tuple[np.ndarray, int]:
    """(time step of each request, steps) on one SM: its ``blocks`` blocks in rounds of
    ``resident``, one round after another; in a round of b blocks, instruction k of the block in
    slot i at ``k x b + i``. Hand check: 3 blocks, 2 resident, instructions (0, 1 | 0 | 0):
    round 0 of 2 blocks takes 2 x 2 steps, times 0, 2 and 1; round 1 of 1 block, time 4."""
    rnd = which // resident
    n_rounds = (blocks + resident - 1) // resident
    longest = np.zeros(n_rounds, dtype=np.int64)
    np.maximum.at(longest, rnd, local + 1)
    in_round = np.minimum(resident, blocks - np.arange(n_rounds) * resident)
    length = longest * in_round
    start = np.cumsum(length) - length
    return start[rnd] + local * in_round[rnd] + which % resident, int(length.sum())


def _distinct_pairs(times: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (time, key) pairs, sorted by time then key."""
    span = int(keys.max()) + 1
    pair = sorted_unique(times * span + keys)
    return pair // span, pair % span


def sm_hits(pos, local, which, blocks: int, indices, cache: L1Cache, value_bytes: int,
            skip: np.ndarray | None, budget: int | None = None,
            total: int | None = None) -> tuple[int, int]:
    """(requests, L1 hits) of one SM's gathers (module docstring): ``pos``, ``local`` and
    ``which`` as :func:`_sm_positions` gives them for the SM's ``blocks`` blocks; with
    ``budget``, only the gathers of the trace's first steps, about ``budget`` of them (a round
    of large blocks, a persistent kernel's, is cut in time), taken for the ``total`` gathers
    of the SM's whole trace."""
    cols = indices[pos].astype(np.int64)
    if skip is not None:
        keep = ~skip[cols]
        cols, local, which = cols[keep], local[keep], which[keep]
    if cols.size == 0:
        return 0, 0
    times, _ = _trace_times(local, which, blocks, max(1, cache.resident_blocks))
    gathers = times.size * (total / max(1, pos.size) if total else 1.0)   # after the skip
    if budget is not None and times.size > budget:
        keep = times < np.partition(times, budget)[budget]
        times, cols = times[keep], cols[keep]
    t, sec = _distinct_pairs(times, sector_index(cols, value_bytes, SECTOR_BYTES))
    line = sec // (LINE_BYTES // SECTOR_BYTES)
    # the LRU's clock counts line accesses, not warp instructions: a warp of one long row
    # walking alone touches a line a step, a full warp thirty, and only accesses evict.
    # The requests are sorted by (time, sector), so by (time, line) too: the distinct
    # (time, line) ticks are the runs of equal pairs, and a request's tick its run's number
    tick = np.ones(t.size, dtype=bool)
    tick[1:] = (t[1:] != t[:-1]) | (line[1:] != line[:-1])
    clock = np.cumsum(tick) - 1
    ln = line[tick]
    window = largest_window(prepare_gaps([(_tick_gaps(ln), 1.0)]), ln.size, float(cache.bytes),
                            0.0, LINE_BYTES)
    hit = line_lru_hits(clock, sec, line, window)
    if times.size >= gathers:
        return int(sec.size), int(np.count_nonzero(hit))
    # a prefix of the SM's trace: its cold start, which the whole trace pays once, would
    # weigh on the share; the rest of the trace hits as the prefix does once the L1's lines
    # are all taken
    first = np.sort(np.unique(ln, return_index=True)[1])
    lines = cache.bytes // LINE_BYTES
    warm = clock < (first[lines] if first.size > lines else ln.size)
    full = sec.size * gathers / times.size
    cold, cold_hits = int(np.count_nonzero(warm)), int(np.count_nonzero(hit & warm))
    rate = (np.count_nonzero(hit & ~warm) / (sec.size - cold) if sec.size > cold
            else cold_hits / max(1, cold))
    return int(round(full)), int(round(cold_hits + rate * (full - cold)))


def _tick_gaps(lines: np.ndarray):
    """``footprint.gap_terms`` of the trace whose tick k touches line ``lines[k]``, with only
    what ``footprint.largest_window`` reads of it: the sorted gaps (reuse times, first and last
    access terms, one sort for all) and the distinct lines; the first and last terms are not
    kept apart (their sorted copy serves the reuse-miss count alone, which the L1 does not
    take)."""
    steps = lines.size
    key = np.sort(lines.astype(np.int64) * steps + np.arange(steps))
    line = key // steps
    t = key - line * steps
    new = np.ones(key.size, dtype=bool)
    new[1:] = line[1:] != line[:-1]
    last = np.append(new[1:], True)
    gaps = np.sort(np.concatenate([np.diff(t)[~new[1:]], t[new] + 1, steps - t[last]]))
    return gaps, np.zeros(0, dtype=np.int64), int(np.count_nonzero(new))


def line_lru_hits(t: np.ndarray, sector: np.ndarray, line: np.ndarray,
                  window: int) -> np.ndarray:
    """Which requests hit an LRU of lines that keeps a line while it is touched at least every
    ``window`` steps: the sector was fetched before, and its line was not dropped since.

    A line is dropped (and its sectors with it) before an access that comes more than
    ``window`` steps after the line's previous access; its first access fills it. Hand check,
    one line, window 2: sectors (t) a(0) b(1) a(2) a(6) b(7): a(2) hits (a fetched at 0, gaps
    1 and 1); a(6) comes 4 steps after t = 2, the line is dropped: miss; b(7) misses (b was
    fetched at 1, the line dropped at 6): 1 hit."""
    if t.size == 0:
        return np.zeros(0, dtype=bool)
    ticks = int(t.max()) + 1
    # ties (sectors of one line at one tick) share their line's fate: any order of them will do
    by_line = np.argsort(line * ticks + t)
    lt, ll = t[by_line], line[by_line]
    k = np.arange(t.size)
    dropped = np.ones(t.size, dtype=bool)
    dropped[1:] = (ll[1:] != ll[:-1]) | (lt[1:] - lt[:-1] > window)
    last_drop = np.maximum.accumulate(np.where(dropped, k, -1))
    rank = np.empty(t.size, dtype=np.int64)
    rank[by_line] = k                                 # each request's place in line order
    by_sector = np.argsort(sector * ticks + t)     # one request a (sector, tick): no ties
    place = rank[by_sector]
    same = np.zeros(t.size, dtype=bool)
    same[1:] = sector[by_sector][1:] == sector[by_sector][:-1]
    previous = np.where(same, np.concatenate([[-1], place[:-1]]), -1)
    hit = np.zeros(t.size, dtype=bool)
    hit[by_sector] = same & (last_drop[place] <= previous)
    return hit


def l1_hit_share(indptr, indices, *, cache: L1Cache, threads_per_row: int, per_block: int,
                 value_bytes: int = 4, skip_columns: np.ndarray | None = None,
                 sample_nnz: int = 1_000_000, sampled_sms: int = 8) -> tuple[float, bool]:
    """(share of the warp instructions' sector requests the L1 serves, sampled?) (module
    docstring). ``per_block``: rows a block takes (``threads_per_row`` > 0) or nonzeros
    (0: the nonzero split)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    nnz = int(indptr[-1]) if indptr.size else 0
    if nnz == 0 or cache.bytes <= 0:
        return 0.0, False
    per_block = max(1, int(per_block))
    units = indptr.size - 1 if threads_per_row else nnz
    blocks = math.ceil(units / per_block)
    active = min(cache.sms, blocks)
    sampled = nnz > sample_nnz
    sms = (np.unique(np.linspace(0, active - 1, min(active, sampled_sms)).astype(np.int64))
           if sampled else np.arange(active))
    budget = sample_nnz // sms.size if sampled else nnz
    requests = hits = 0
    for sm in sms.tolist():
        pos, local, which, on_sm, total = _sm_positions(indptr, sm, cache, threads_per_row,
                                                        per_block, blocks, budget)
        if pos.size == 0:
            continue
        r, h = sm_hits(pos, local, which, on_sm, indices, cache, value_bytes, skip_columns,
                       budget if sampled else None, total)
        requests += r
        hits += h
    return (hits / requests if requests else 0.0), sampled
