"""The memory floor of an SpMV format (model.gathers, xgather.floor_requests), on
hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.model.gathers import gather_floor, l2_sector_rate, top_columns
from sparsescope.model.hot_set import pinned_columns
from sparsescope.model.xgather import FLOOR_STRATEGIES, floor_requests


def test_top_columns_breaks_ties_lowest_index_first():
    counts = np.array([2, 5, 2, 0, 3, 2])
    mask, gathers = top_columns(counts, 3)     # 5 and 3, then the first of the three 2s
    assert mask.tolist() == [True, True, False, False, True, False] and gathers == 10
    mask, gathers = top_columns(counts, 5)     # every 2: 5 + 3 + 2 + 2 + 2
    assert mask.tolist() == [True, True, True, False, True, True] and gathers == 14
    assert top_columns(counts, 0)[1] == 0 and top_columns(counts, 9)[1] == 14
    # the same sum as sorting, on counts with many ties (a sparse matrix's columns)
    rng = np.random.default_rng(0)
    many = rng.poisson(0.7, 10_000)
    for c in (1, 17, 4_000, 9_999):
        assert top_columns(many, c)[1] == np.sort(many)[::-1][:c].sum()
        assert top_columns(many, c)[0].sum() == c


def test_gather_floor_by_hand():
    f = gather_floor(1e6, 5e5, 1e6, hot=0.25, capacity_entries=4, strategy="s",
                     dram_bw_gb_s=3000.0, l2_bw_gb_s=5000.0, gather_gsectors_s=100.0)
    # L2: 1e6 B / 5,000 GB/s = 0.2 us + 1e6 / 100 G/s = 10 us; DRAM 1.5e6 B / 3,000 GB/s
    assert f.l2_ms == pytest.approx(0.0102) and f.dram_ms == pytest.approx(0.0005)
    assert f.floor_ms == pytest.approx(0.0102) and f.binding == "l2"
    assert "pinned columns serving 25.0 %" in f.formula
    # 62,500 pinned-column fill sectors: 2 MB more at 5,000 GB/s, 0.4 us more
    filled = gather_floor(1e6, 5e5, 1e6, hot=0.25, capacity_entries=4, strategy="s",
                          dram_bw_gb_s=3000.0, l2_bw_gb_s=5000.0, gather_gsectors_s=100.0,
                          fill_sectors=62_500)
    assert filled.l2_ms == pytest.approx(0.0106) and filled.fill_sectors == 62_500
    assert "+ 2,000,000 B fill" in filled.formula and "filled with 62,500 sectors" in filled.formula
    # 4.65e7 B of streams and 1e5 requests make DRAM bind: (4.65e7 + 5e5) B / 3,000 GB/s =
    # 15.67 us against L2's 9.3 + 1 us; plus a 3 us launch and a 0.8 us latency chain
    g = gather_floor(4.65e7, 5e5, 1e5, hot=0.0, capacity_entries=4, strategy="s",
                     dram_bw_gb_s=3000.0, l2_bw_gb_s=5000.0, gather_gsectors_s=100.0,
                     launch_ms=0.003, chain_ms=0.0008)
    assert g.binding == "dram" and g.dram_ms == pytest.approx(4.7e7 / 3e12 * 1e3)
    assert g.floor_ms == pytest.approx(0.003 + 0.0008 + 4.7e7 / 3e12 * 1e3)
    assert "pinned" not in g.formula and "latency chain (0.80 us)" in g.formula


def test_gather_floor_without_a_gather_rate_charges_32_bytes_at_l2_bandwidth():
    f = gather_floor(0.0, 0.0, 1e6, hot=0.0, capacity_entries=1, strategy="s",
                     dram_bw_gb_s=1000.0, l2_bw_gb_s=8000.0, gather_gsectors_s=None)
    assert f.l2_ms == pytest.approx(32e6 / 8e12 * 1e3)     # 4 us
    assert "no measured gather rate" in f.formula
    assert l2_sector_rate(8248.0) == pytest.approx(257.75e9)
    with pytest.raises(ValueError):
        gather_floor(0, 0, 0, hot=0, capacity_entries=1, strategy="s", dram_bw_gb_s=0,
                     l2_bw_gb_s=1, gather_gsectors_s=None)


def _three_rows():
    # row 0: cols 0..7 (sector 0), row 1: cols 8..15 (sector 1), row 2: cols 0..3
    rows = [list(range(8)), list(range(8, 16)), list(range(4))]
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.concatenate(rows).astype(np.int32)
    return sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(3, 16))


def test_floor_requests_by_hand():
    a = _three_rows()
    # capacity 4 pins cols 0..3 (gathered twice each): 8 of 20 gathers on chip. 32 consecutive
    # nonzeros (one instruction of 20): the other gathers touch sectors 0 and 1 -> 2 requests.
    # A thread per row: steps 0-3 only row 1 (sector 1) reaches L2, steps 4-7 rows 0 and 1
    # -> 4 + 8 = 12. Runs of 4 x 4 / 32 = 0 -> 1 nonzero: one request per gather, 20.
    # One SM, fill free: cols 0..3 serve 8 gathers for one fill sector (sector 0).
    r = floor_requests(a.indptr, a.indices, cols=16, capacity_entries=4, sms=1, fill_cost=0.0)
    assert r.requests == 2.0 and r.hot_share == pytest.approx(0.4)
    assert r.strategy == FLOOR_STRATEGIES[0][0] and not r.sampled and r.fill_sectors == 1
    # the same arrays again: the kept answer
    assert floor_requests(a.indptr, a.indices, cols=16, capacity_entries=4, sms=1,
                          fill_cost=0.0) is r
    # 8 SMs at a fill sector the cost of a request: column 0 serves 2 gathers for 8 fill
    # sectors (gain -6), all four (one sector) 8 for 8 (gain 0): never positive, so nothing is
    # pinned: 32
    # consecutive nonzeros touch sectors 0 and 1 -> 2 requests, no fill.
    r = floor_requests(a.indptr, a.indices, cols=16, capacity_entries=4, sms=8, fill_cost=1.0)
    assert r.requests == 2.0 and r.hot_share == 0.0 and r.fill_sectors == 0.0


def test_floor_requests_runs_win_on_a_band():
    # 64 rows of the same 8 columns (one sector): capacity 64 entries -> runs of 8 nonzeros
    # (one request each: 512 / 8 = 64); hot columns: all 8 fit on chip -> 0 requests.
    indptr = np.arange(0, 65 * 8, 8)
    indices = np.tile(np.arange(8, dtype=np.int32), 64)
    r = floor_requests(indptr, indices, cols=8, capacity_entries=64, sms=1, fill_cost=1.0)
    assert r.requests == 0.0 and r.hot_share == 1.0 and r.fill_sectors == 1.0
    # a band: row r holds cols r..r+7 (4,096 rows, 4,103 cols). Capacity 512 entries -> runs
    # of 512 x 4 / 32 = 64 nonzeros = 8 rows, cols 8k..8k+14: sectors k, k+1 -> 2 x 512 runs
    # = 1,024. An instruction of 32 nonzeros (4 rows, 11 cols) touches 2 sectors: 2,048, and
    # pinning 512 of 4,103 columns (64 sectors, each in at most 4 instructions) saves <= 256.
    n = 4096
    indptr = np.arange(0, 8 * n + 1, 8)
    indices = (np.arange(n)[:, None] + np.arange(8)).ravel().astype(np.int32)
    r = floor_requests(indptr, indices, cols=n + 7, capacity_entries=512, sms=4, fill_cost=0.6)
    assert r.requests == 1024.0 and r.strategy == FLOOR_STRATEGIES[2][0] and r.hot_share == 0.0


def test_pinned_columns_keep_only_what_pays_for_its_fill():
    counts = np.array([9, 0, 1, 0, 0, 0, 0, 0, 5])       # 8 entries a sector: 2 sectors
    # ranking 0 (9), 8 (5), 2 (1); 2 SMs, cost 1: gains 9 - 2, 14 - 4, 15 - 4 -> all three
    p = pinned_columns(counts, 8, sms=2, fill_cost=1.0)
    assert p.mask.tolist() == [True, False, True] + [False] * 5 + [True]
    assert (p.entries, p.served, p.fill_sectors) == (3, 15, 4)
    # cost 3: gains 3, 2, 3 -> the first maximum, column 0 alone
    p = pinned_columns(counts, 8, sms=2, fill_cost=3.0)
    assert (p.entries, p.served, p.fill_sectors) == (1, 9, 2)
    # capacity 1 keeps column 0 at most; a fill dearer than every gain keeps none
    assert pinned_columns(counts, 1, sms=2, fill_cost=1.0).entries == 1
    none = pinned_columns(counts, 8, sms=2, fill_cost=5.0)
    assert (none.entries, none.served, none.fill_sectors, none.mask.any()) == (0, 0, 0, False)
    with pytest.raises(ValueError):
        pinned_columns(counts, 8, sms=0, fill_cost=1.0)
