"""x gathers: L2 sector requests by lane mapping (hand counts), HOTL DRAM sectors vs exact LRU."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.matrices.generators import generate
from sparsescope.model.xgather import (
    XGather,
    footprint_miss_ratio,
    lru_misses_exact,
    sector_requests,
    x_gather,
)


def tridiagonal(n: int) -> sp.csr_matrix:
    """Row r holds columns r-1, r, r+1 (clipped): 3n - 2 nonzeros."""
    return sp.diags([np.ones(n - 1), np.ones(n), np.ones(n - 1)], [-1, 0, 1],
                    shape=(n, n), format="csr", dtype=np.float64)


def csr(rows: list[list[int]], cols: int) -> sp.csr_matrix:
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.array([c for r in rows for c in r], dtype=np.int32)
    return sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(len(rows), cols))


def requests(a: sp.csr_matrix, tpr: int, **kw) -> float:
    return sector_requests(a.indptr, a.indices, threads_per_row=tpr, **kw).requests


def brute_requests(a: sp.csr_matrix, tpr: int, value_bytes: int = 4) -> int:
    """Independent loop over warp instructions, lane by lane."""
    ip, ix = a.indptr, a.indices
    total = 0
    if tpr == 0:
        for c in range(0, a.nnz, 32):
            total += len({int(x) * value_bytes // 32 for x in ix[c:c + 32]})
        return total
    per_warp = 32 // tpr
    for g in range(0, a.shape[0], per_warp):
        rows = range(g, min(g + per_warp, a.shape[0]))
        longest = max(ip[r + 1] - ip[r] for r in rows)
        for s in range(0, longest, tpr):
            lanes = {int(ix[k]) * value_bytes // 32 for r in rows
                     for k in range(ip[r] + s, min(ip[r] + s + tpr, ip[r + 1]))}
            total += len(lanes)
    return total


# ---------------------------------------------------------------- (a) requests, by hand


def test_tridiagonal_64_thread_per_row():
    # 8 x entries a sector. Warp 0 (rows 0-31): step 0 cols {0, 0..30} -> sectors 0-3 (4),
    # step 1 cols 1..31 (4), step 2 cols 2..32 (5: row 0 has no third nonzero);
    # warp 1: cols 31..62 (sectors 3-7: 5), 32..63 (4), 33..63 (4; row 63 has two): 26.
    assert requests(tridiagonal(64), 1) == 26


def test_tridiagonal_64_warp_per_row():
    # One instruction a row; cols r-1..r+1 cross a sector boundary iff r % 8 in {0, 7}:
    # rows 8, 16, .., 56 (7) and 7, 15, .., 55 (7; row 63 holds only 62, 63): 64 + 14.
    assert requests(tridiagonal(64), 32) == 78


def test_tridiagonal_64_nonzero_split():
    # 190 nonzeros in chunks of 32: cols 0-11, 10-21, 22-32, 32-43, 42-53, 54-63. Two sectors
    # each except chunk 2 (positions 64-95), whose position 94 is row 31's col 32: 2+2+3+2+2+2.
    assert requests(tridiagonal(64), 0) == 13


def test_empty_rows_by_hand():
    a = csr([[0, 1, 2], [], [8, 9], [40]], cols=48)
    # tpr 1, one warp: step 0 cols 0, 8, 40 (sectors 0, 1, 5), step 1 cols 1, 9, step 2 col 2
    assert requests(a, 1) == 3 + 2 + 1
    # tpr 2: step 0 = positions 0-1 of each row (sectors 0, 1, 5), step 1 = row 0's col 2
    assert requests(a, 2) == 3 + 1
    assert requests(a, 32) == 3          # one sector a row, the empty row none
    assert requests(a, 0) == 3           # one chunk of 6: sectors {0, 1, 5}
    # 8-byte values: 4 entries a sector, so col 2 and col 1 share, col 8 and 9 share
    assert requests(a, 32, value_bytes=8) == 1 + 1 + 1


@pytest.mark.parametrize("kind", ["banded", "powerlaw", "scattered", "uniform"])
@pytest.mark.parametrize("tpr", [0, 1, 2, 8, 32])
def test_requests_equal_lane_by_lane_count(kind, tpr):
    a = generate(kind, 200, 2400, seed=5)
    assert requests(a, tpr) == brute_requests(a, tpr)


def test_onchip_columns_cost_no_request():
    # Arrow: every row gathers col 0, rows r >= 1 also col r. Warp per row: row 0 one sector,
    # rows 1-7 one (col r shares sector 0), rows 8-31 two: 56. With col 0 on chip: 31 rows
    # of one request each; on-chip share 32 / 63 of the gathers.
    a = csr([[0]] + [[0, r] for r in range(1, 32)], cols=32)
    kw = dict(cols=32, l2_bytes=1 << 20, stream_bytes_per_nnz=8.0, threads_per_row=32)
    assert x_gather(a.indptr, a.indices, **kw).l2_requests == 56
    x = x_gather(a.indptr, a.indices, onchip_entries=1, **kw)
    assert x.l2_requests == 31 and x.onchip_share == pytest.approx(32 / 63)
    assert x.dram_sectors == x.distinct_sectors == 4           # everything fits, loaded once
    full = x_gather(a.indptr, a.indices, onchip_entries=32, **kw)
    assert full.l2_requests == 0 and full.onchip_share == 1.0 and full.l2_hit_rate == 0.0
    assert full.dram_sectors == 4


def test_onchip_columns_are_the_first_ones_popular_or_not():
    # every row gathers col 31 (the popular one), row r < 31 also col r. Warp per row, 8
    # columns a sector: rows 0-23 two requests, rows 24-30 one (r and 31 share sector 3),
    # row 31 one: 56. Pinning the first column (a hub kernel's x[0, 1)) serves row 0's gather
    # of col 0 only: 1 of 63 gathers, 55 requests (pinning col 31 would leave 31)
    a = csr([[0, 31]] + [[r, 31] for r in range(1, 31)] + [[31]], cols=32)
    kw = dict(cols=32, l2_bytes=1 << 20, stream_bytes_per_nnz=8.0, threads_per_row=32)
    assert x_gather(a.indptr, a.indices, **kw).l2_requests == 56
    x = x_gather(a.indptr, a.indices, onchip_entries=1, **kw)
    assert x.onchip_share == pytest.approx(1 / 63) and x.l2_requests == 55


def test_bad_threads_per_row():
    with pytest.raises(ValueError):
        requests(tridiagonal(4), 3)


# ---------------------------------------------------------------- tiny and empty matrices


def test_single_entry():
    x = x_gather(np.array([0, 1]), np.array([0]), cols=1, l2_bytes=1 << 20,
                 stream_bytes_per_nnz=8.0)
    assert (x.gathers, x.l2_requests, x.distinct_sectors, x.dram_sectors) == (1, 1.0, 1, 1.0)
    assert x.l2_hit_rate == 0.0 and x.dram_bytes == 32.0 and not x.sampled


@pytest.mark.parametrize("shape", [(5, 5), (0, 0), (1, 1)])
@pytest.mark.parametrize("tpr", [0, 1, 32])
def test_no_nonzeros(shape, tpr):
    a = sp.csr_matrix(shape)
    x = x_gather(a.indptr, a.indices, cols=shape[1], l2_bytes=1 << 20,
                 stream_bytes_per_nnz=8.0, threads_per_row=tpr)
    assert x == XGather(0, 0.0, 0, 0.0, 0.0, 0.0, False, 1.0, x.method)
    assert requests(a, tpr) == 0


def test_hit_rate_of_the_tridiagonal():
    a = tridiagonal(64)
    x = x_gather(a.indptr, a.indices, cols=64, l2_bytes=1 << 20, stream_bytes_per_nnz=8.0)
    assert x.distinct_sectors == 8 and x.dram_sectors == 8.0      # x fits: compulsory only
    assert x.l2_hit_rate == pytest.approx(1 - 8 / 26) and x.dram_bytes == 256.0
    assert x.sample_fraction == 1.0 and "exact" in x.method


# ---------------------------------------------------------------- (b) LRU: exact and HOTL


def test_lru_exact_by_hand():
    assert lru_misses_exact([0, 1, 0, 1], 0.0, 64) == 2       # both fit
    assert lru_misses_exact([0, 1, 0, 1], 0.0, 32) == 4       # one line: all miss
    assert lru_misses_exact([0, 1, 0, 1], 32.0, 64) == 4      # a stream line pushes out
    # half a stream line a step: the second step's full line evicts sector 0
    assert lru_misses_exact([0, 0, 0], 16.0, 32) == 2
    assert lru_misses_exact([0, -1, 0], 0.0, 64) == 1         # -1: no x access
    assert lru_misses_exact([0, -1, 0], 32.0, 64) == 2        # but its stream still passes
    assert lru_misses_exact([], 8.0, 64) == 0


def test_hotl_by_hand():
    # docstring: gaps rt {2, 2}, f {1, 2}, l {2, 1}; fp(1) = 1, fp(2) = 2
    assert footprint_miss_ratio([0, 1, 0, 1], capacity_bytes=32,
                                stream_bytes_per_access=0.0) == 1.0
    assert footprint_miss_ratio([0, 1, 0, 1], capacity_bytes=64,
                                stream_bytes_per_access=0.0) == 0.5     # compulsory 2 of 4
    assert footprint_miss_ratio([-1, -1], capacity_bytes=64, stream_bytes_per_access=8.0) == 0


def _lru_cases():
    for kind in ("banded", "powerlaw", "scattered", "uniform"):
        for cap in (256, 2048, 8192, 32768, 1 << 20):    # 1 MB: everything fits
            for stream in (0.0, 8.0, 12.0):
                yield kind, cap, stream


@pytest.fixture(scope="module")
def small_matrices():
    return {k: generate(k, 3000, 30_000, seed=3)
            for k in ("banded", "powerlaw", "scattered", "uniform")}


@pytest.mark.parametrize(("kind", "cap", "stream"), list(_lru_cases()))
def test_hotl_within_8_percent_of_exact_lru(small_matrices, kind, cap, stream):
    """Measured worst 6.6 % (scattered, 256 B, 12 B/nnz); median 0.05 %."""
    a = small_matrices[kind]
    exact = lru_misses_exact(a.indices // 8, stream, cap)
    x = x_gather(a.indptr, a.indices, cols=3000, l2_bytes=cap, stream_bytes_per_nnz=stream)
    assert x.dram_sectors == pytest.approx(exact, rel=0.08, abs=10)
    assert x.dram_sectors >= x.distinct_sectors
    ratio = footprint_miss_ratio(a.indices // 8, capacity_bytes=cap,
                                 stream_bytes_per_access=stream)
    assert ratio * a.nnz == pytest.approx(x.dram_sectors)


def test_nothing_reused_and_everything_fits(small_matrices):
    a = small_matrices["uniform"]
    # 64 B of stream a step overflows a one-line L2 before any reuse: every gather misses
    none = x_gather(a.indptr, a.indices, cols=3000, l2_bytes=32, stream_bytes_per_nnz=64.0)
    assert none.dram_sectors == a.nnz == lru_misses_exact(a.indices // 8, 64.0, 32)
    fits = x_gather(a.indptr, a.indices, cols=3000, l2_bytes=1 << 30, stream_bytes_per_nnz=8.0)
    assert fits.dram_sectors == fits.distinct_sectors == 375


# ---------------------------------------------------------------- sampling


@pytest.fixture(scope="module")
def mid_matrix():
    return generate("powerlaw", 40_000, 400_000, seed=2)


def test_sampling_is_deterministic_and_close(mid_matrix):
    a = mid_matrix
    kw = dict(cols=40_000, l2_bytes=64 << 10, stream_bytes_per_nnz=12.0, threads_per_row=1)
    exact = x_gather(a.indptr, a.indices, **kw)
    s0 = x_gather(a.indptr, a.indices, max_exact_nnz=100_000, sample_nnz=50_000, **kw)
    again = x_gather(a.indptr, a.indices, max_exact_nnz=100_000, sample_nnz=50_000, **kw)
    s1 = x_gather(a.indptr, a.indices, max_exact_nnz=100_000, sample_nnz=50_000, seed=1, **kw)
    assert s0 == again and s0 != s1
    assert s0.sampled and 0.05 < s0.sample_fraction < 0.25 and "sampled" in s0.method
    assert not exact.sampled and exact.sample_fraction == 1.0
    for s in (s0, s1):
        assert s.distinct_sectors == exact.distinct_sectors
        assert s.l2_requests == pytest.approx(exact.l2_requests, rel=0.03)
        assert s.dram_sectors == pytest.approx(exact.dram_sectors, rel=0.05)


@pytest.mark.parametrize("tpr", [0, 32])
def test_sampled_requests_close_to_exact(mid_matrix, tpr):
    a = mid_matrix
    exact = requests(a, tpr)
    s = sector_requests(a.indptr, a.indices, threads_per_row=tpr, max_exact_nnz=100_000,
                        sample_nnz=50_000)
    assert s.sampled and s.requests == pytest.approx(exact, rel=0.03)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["powerlaw", "banded"])
def test_large_matrices_are_sampled(kind):
    # sampling is what keeps 10^8 nonzeros to seconds (no wall time asserted: machines differ);
    # it starts above max_exact_nnz (4 x 10^6), so 2 x 10^7 takes the same path at a fifth of
    # the test's time (the whole 10^8 prediction: test_predict_terms)
    a = generate(kind, 2_000_000, 20_000_000, seed=0)
    x = x_gather(a.indptr, a.indices, cols=2_000_000, l2_bytes=50 << 20,
                 stream_bytes_per_nnz=12.4, threads_per_row=1)
    assert x.sampled and x.distinct_sectors == 250_000
