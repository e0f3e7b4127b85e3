"""Host-side formats of the own SpMV kernels, checked against SciPy with NumPy emulations of
what the kernels compute (tiles + fixup, delta16 decoding, SELL slices)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
from sparsescope.backends.spmv_compressed import CudaSpmvTileDelta16
from sparsescope.backends.spmv_delta16_format import (
    ESCAPE,
    decode_delta16,
    delta16_bytes,
    encode_delta16,
)
from sparsescope.backends.spmv_merge import CudaSpmvMerge
from sparsescope.backends.spmv_sell16_format import PAD, decode_sell16, encode_sell16
from sparsescope.backends.spmv_sell_format import (
    default_long_row,
    emulate_sell,
    pack_sell,
    sell_padding_ratio,
    virtual_rows,
)
from sparsescope.backends.spmv_tiling import (
    chunk_span,
    emulate_tiles,
    listed_long_rows,
    merge_coordinates,
    merge_items,
    merge_tiles,
    row_tiles,
    tile_lanes,
)
from sparsescope.model.traffic import csr_spmv_traffic


def _csr(rows, cols, entries) -> sp.csr_matrix:
    r, c, v = zip(*entries, strict=True) if entries else ((), (), ())
    m = sp.csr_matrix((np.array(v, float), (np.array(r, int), np.array(c, int))),
                      shape=(rows, cols))
    m.sort_indices()
    return m


def _random(rng, rows, cols, density) -> sp.csr_matrix:
    m = sp.random(rows, cols, density=density, format="csr", random_state=rng,
                  data_rvs=lambda n: rng.random(n) * 2 - 1)
    m.sum_duplicates()
    m.sort_indices()
    return m


def _heavy_row(rng, n) -> sp.csr_matrix:
    """One row holding most nonzeros, many empty rows, n not a multiple of 32."""
    heavy = rng.choice(n, size=n * 3 // 4, replace=False)
    rows = np.concatenate([np.full(heavy.size, n // 3), rng.integers(0, n, size=n // 8)])
    cols = np.concatenate([heavy, rng.integers(0, n, size=n // 8)])
    m = sp.coo_matrix((rng.random(rows.size) - 0.5, (rows, cols)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    m.sort_indices()
    return m


def matrices():
    rng = np.random.default_rng(7)
    return {
        "1x1": _csr(1, 1, [(0, 0, 2.0)]),
        "1x777": _random(rng, 1, 777, 0.3),
        "777x1": _random(rng, 777, 1, 0.3),
        "mostly-empty-1000": _random(rng, 1000, 1000, 0.0005),
        "4099x3001": _random(rng, 4099, 3001, 0.01),
        "heavy-row-3001": _heavy_row(rng, 3001),
        "dense-rows-65x2049": _random(rng, 65, 2049, 0.5),
        "wide-300x200000": _random(rng, 300, 200_000, 0.002),  # columns beyond 16 bits
        "empty-5x5": sp.csr_matrix((5, 5)),
    }


MATRICES = matrices()


@pytest.mark.parametrize("name", sorted(MATRICES))
@pytest.mark.parametrize("tiling", ["rows-8", "rows-8-max3", "merge-8", "merge-2", "rows-256"])
def test_tiles_compute_scipy_product(name, tiling):
    a = MATRICES[name]
    x = np.random.default_rng(1).random(a.shape[1]) * 2 - 1
    kind, chunks, *extra = tiling.split("-")
    if kind == "rows":
        tiles = row_tiles(a.indptr, int(chunks), 3 if extra else None)
    else:
        tiles = merge_tiles(a.indptr, int(chunks))
    t = tiles.tiles.astype(np.int64)
    assert np.all(chunk_span(t[:, 2], t[:, 3]) <= int(chunks))
    assert np.array_equal(t[1:, 2], t[:-1, 3]) and (a.nnz == 0 or t[-1, 3] == a.nnz)
    y = emulate_tiles(tiles, a.indptr, a.indices, a.data, x)
    np.testing.assert_allclose(y, a @ x, rtol=1e-12, atol=1e-12)
    # encoding the same tiles in 16 bits and decoding gives the columns back
    d = encode_delta16(tiles, a.indptr, a.indices, *a.shape)
    assert np.array_equal(decode_delta16(d), a.indices)
    np.testing.assert_allclose(emulate_tiles(d.tiles, a.indptr, decode_delta16(d), a.data, x),
                               a @ x, rtol=1e-12, atol=1e-12)


def test_row_tiles_hand_example():
    # rows of 3, 9, 0, 2 nonzeros; 2 chunks (8 nonzeros) per tile
    indptr = np.array([0, 3, 12, 12, 14])
    tiles = row_tiles(indptr, 2)
    # row 0 alone (row 1 ends at 12 > 8); row 1 cut at 8 (4 * (3 // 4 + 2)); rows 2-3 together
    assert tiles.tiles[:, :6].tolist() == [[0, 1, 0, 3, -1, -1], [1, 2, 3, 8, -1, 0],
                                           [1, 2, 8, 12, 1, -1], [2, 4, 12, 14, -1, -1]]
    assert tiles.split_rows.tolist() == [1] and tiles.split_ptr.tolist() == [0, 2]


def test_merge_coordinates_match_a_walk():
    indptr = np.array([0, 2, 2, 5, 6, 6, 9])
    # walk the merge: consume a nonzero while j < indptr[i+1], else end row i
    i = j = 0
    expected = [(0, 0)]
    while i < 6:
        if j < indptr[i + 1]:
            j += 1
        else:
            i += 1
        expected.append((i, j))
    got_i, got_j = merge_coordinates(indptr, np.arange(len(expected)))
    assert list(zip(got_i.tolist(), got_j.tolist(), strict=True)) == expected


def test_merge_tiles_carry_equal_work():
    indptr = np.concatenate([[0], np.cumsum(np.r_[np.ones(500, int), 5000, np.zeros(40, int)])])
    tiles = merge_tiles(indptr, 8)
    t = tiles.tiles.astype(np.int64)
    items = (t[:, 3] - t[:, 2]) + np.diff(np.r_[merge_coordinates(indptr, [0])[0], t[1:, 0],
                                                 541])
    assert merge_items(8) == 28 and np.all(items[:-1] == 28)
    assert 5000 // 28 <= tiles.nslots  # the long row is spread over ~180 tiles


def test_delta16_escapes_and_bytes(monkeypatch):
    import sparsescope.backends.spmv_delta16_format as fmt

    monkeypatch.setattr(fmt, "SAMPLE_STRIDE", 1)  # judge the bases on every nonzero
    a = _csr(3, 200_000, [(0, 5, 1.0), (1, 150_000, 3.0), (1, 150_001, 4.0), (1, 150_002, 2.0),
                          (2, 0, 5.0)])
    d = encode_delta16(row_tiles(a.indptr, 2), a.indptr, a.indices, *a.shape)
    # One tile of 5 nonzeros. Candidates: smallest column 0 covers {5, 0}; diagonal
    # 1 * 200_000 // 3 - 32_767 = 33_899 covers none; middle column 150_001 - 32_767 =
    # 117_234 covers the three 150_00x: it wins, 5 and 0 become escapes.
    assert d.tiles.tiles[0, 6] == 117_234 and d.base_choice.tolist() == [2]
    assert d.offsets.tolist() == [ESCAPE, 32_766, 32_767, 32_768, ESCAPE]
    assert d.escapes.tolist() == [5, 0] and d.escape_fraction == pytest.approx(0.4)
    assert np.array_equal(decode_delta16(d), a.indices)
    # 5 * (4 + 2) + 2 * 4 + 4 * (3 + 1) + 4 * (200_000 + 3)
    assert delta16_bytes(3, 200_000, 5, 2) == 30 + 8 + 16 + 800_012


@pytest.mark.parametrize("name", sorted(MATRICES))
@pytest.mark.parametrize("sigma,long_row,tpr", [(1, None, 1), (32, 7, 1), (256, None, 1),
                                                (10_000, 2, 1), (1, None, 2), (256, 7, 2),
                                                (1, None, 4), (256, 7, 4), (256, None, 8),
                                                (32, 5, 8)])
def test_sell_computes_scipy_product(name, sigma, long_row, tpr):
    a = MATRICES[name]
    x = np.random.default_rng(2).random(a.shape[1]) * 2 - 1
    sell = pack_sell(a.indptr, a.indices, a.data, sigma=sigma, long_row=long_row, tpr=tpr)
    np.testing.assert_allclose(emulate_sell(sell, a.shape[0], x), a @ x, rtol=1e-12, atol=1e-12)
    assert sell.padded >= a.nnz and np.all(sell.cols[sell.vals == 0] < 0) or a.nnz == 0
    assert sell_padding_ratio(np.diff(a.indptr), sigma, sell.long_row, tpr) == pytest.approx(
        sell.padding_ratio)


def test_sell_hand_example():
    # row lengths 1, 3, 2 (+ 29 empty lanes), sigma 2: rows (0,1) sorted -> (1,0); row 2 alone
    a = _csr(3, 4, [(0, 0, 1.0), (1, 1, 2.0), (1, 2, 3.0), (1, 3, 4.0), (2, 0, 5.0),
                    (2, 3, 6.0)])
    sell = pack_sell(a.indptr, a.indices, a.data, sigma=2, long_row=64)
    assert sell.slice_ptr.tolist() == [0, 3]
    assert sell.out[:4].tolist() == [1, 0, 2, -1]
    assert sell.cols[:3].tolist() == [1, 0, 0] and sell.cols[32:35].tolist() == [2, -1, 3]
    assert sell.padding_ratio == pytest.approx(96 / 6)


def test_sell_declares_its_own_arrays():
    """SELL's declared traffic is its packed arrays, not CSR's: the hand example's 6 nonzeros
    sit in one slice of 3 x 32 entries, so its values and columns carry 90 padding slots."""
    a = _csr(3, 4, [(0, 0, 1.0), (1, 1, 2.0), (1, 2, 3.0), (1, 3, 4.0), (2, 0, 5.0),
                    (2, 3, 6.0)])
    sell = pack_sell(a.indptr, a.indices, a.data, sigma=2, long_row=64)
    traffic = sell.traffic(3, 4, 4)
    assert traffic.total_bytes == sell.bytes_moved(3, 4, 4)
    assert traffic.padding_bytes == (sell.padded - sell.nnz) * 8 == 720
    # 96 values and INT32 columns; slice_ptr 4 x 2 + destinations 4 x 32 + split_ptr [0];
    # x 4 x 4, y 4 x 3
    assert (traffic.values_bytes, traffic.indices_bytes, traffic.row_meta_bytes,
            traffic.x_bytes, traffic.y_read_bytes, traffic.y_written_bytes) == (
        384, 384, 140, 16, 0, 12)
    assert traffic.flops == 12 and traffic.format == "SELL-32 INT32"
    csr = csr_spmv_traffic(3, 4, 6, value_bytes=4, index_bytes=4)
    assert traffic.total_bytes == 936 > csr.total_bytes == 92  # padding costs more than CSR
    # a random matrix of ~30 nonzeros per row pads little (about 7%): a little more than CSR
    b = MATRICES["4099x3001"]
    packed = pack_sell(b.indptr, b.indices, b.data)
    declared = packed.traffic(*b.shape, 4)
    assert declared.total_bytes == packed.bytes_moved(*b.shape, 4)
    assert declared.padding_bytes == (packed.padded - packed.nnz) * 8
    assert declared.values_bytes == 4 * packed.padded >= 4 * b.nnz
    plain = csr_spmv_traffic(*b.shape, b.nnz, value_bytes=4, index_bytes=4).total_bytes
    assert plain < declared.total_bytes < 1.2 * plain


def test_sell_two_threads_per_row_hand_example():
    # rows of 3 and 4 nonzeros, tpr 2: one slice of 16 rows, ceil(4 / 2) = 2 columns;
    # lane 0: row 0 entries 0-1, lane 16: entry 2; lane 1: row 1 entries 0-1, lane 17: 2-3
    a = _csr(2, 9, [(0, 0, 1.0), (0, 1, 2.0), (0, 2, 3.0), (1, 3, 4.0), (1, 4, 5.0),
                    (1, 5, 6.0), (1, 6, 7.0)])
    sell = pack_sell(a.indptr, a.indices, a.data, sigma=1, long_row=64, tpr=2)
    assert sell.slice_ptr.tolist() == [0, 2] and sell.tpr == 2
    assert sell.cols[[0, 1, 16, 17]].tolist() == [0, 3, 2, 5]
    assert sell.cols[[32, 33, 48, 49]].tolist() == [1, 4, -1, 6]
    assert sell.out[:2].tolist() == [0, 1] and np.all(sell.out[16:] == -1)
    assert sell.padding_ratio == pytest.approx(64 / 7)


def test_sell_four_threads_per_row_hand_example():
    # rows of 5 and 2 nonzeros, tpr 4: one slice of 8 rows, ceil(5 / 4) = 2 columns;
    # row 0: lane 0 entries 0-1, lane 8: 2-3, lane 16: 4, lane 24: none; row 1 (ceil(2/4) = 1):
    # lane 1 entry 0, lane 9 entry 1
    a = _csr(2, 9, [(0, 0, 1.0), (0, 1, 2.0), (0, 2, 3.0), (0, 3, 4.0), (0, 4, 5.0),
                    (1, 5, 6.0), (1, 6, 7.0)])
    sell = pack_sell(a.indptr, a.indices, a.data, sigma=1, long_row=64, tpr=4)
    assert sell.slice_ptr.tolist() == [0, 2] and sell.tpr == 4
    assert sell.cols[[0, 8, 16, 24, 1, 9, 17]].tolist() == [0, 2, 4, -1, 5, 6, -1]
    assert sell.cols[[32, 40, 48, 33]].tolist() == [1, 3, -1, -1]
    assert sell.out[:2].tolist() == [0, 1] and np.all(sell.out[8:32] == -1)
    x = np.arange(1.0, 10.0)
    np.testing.assert_allclose(emulate_sell(sell, 2, x), a @ x)


def test_sell_rejects_three_threads_per_row():
    a = _csr(1, 2, [(0, 0, 1.0)])
    with pytest.raises(ValueError):
        pack_sell(a.indptr, a.indices, a.data, tpr=3)


def test_virtual_rows_cut_long_rows():
    v_row, k, v_len = virtual_rows(np.array([0, 5, 2]), 2)
    assert v_row.tolist() == [0, 1, 1, 1, 2] and k.tolist() == [0, 0, 1, 2, 0]
    assert v_len.tolist() == [0, 2, 2, 1, 2]
    # mean 19.9 -> 8 * 20 = 160; 99th percentile 19.9; floor 64
    assert default_long_row(np.array([10] * 99 + [1000])) == 160
    assert default_long_row(np.array([1] * 50 + [100] * 50)) == 8 * 51


def test_bad_parameters_raise():
    with pytest.raises(ValueError):
        row_tiles(np.array([0, 1]), 1)
    with pytest.raises(ValueError):
        pack_sell(np.array([0, 1]), np.array([0]), np.array([1.0]), sigma=0)
    with pytest.raises(ValueError):
        encode_delta16(row_tiles(np.array([0, 2]), 2), None, np.array([1]), 1, 4)


@pytest.mark.parametrize("name", sorted(MATRICES))
@pytest.mark.parametrize("sigma,long_row,tpr", [(1, None, 1), (256, 5, 1), (256, None, 2),
                                                (256, 5, 4), (256, None, 8)])
def test_sell16_decodes_to_the_sell_columns(name, sigma, long_row, tpr):
    a = MATRICES[name]
    sell = pack_sell(a.indptr, a.indices, a.data, sigma=sigma, long_row=long_row, tpr=tpr)
    s16 = encode_sell16(sell, *a.shape)
    assert np.array_equal(decode_sell16(s16), sell.cols.astype(np.int64))
    assert np.array_equal(s16.offsets == PAD, sell.cols < 0)


def test_sell16_hand_example(monkeypatch):
    import sparsescope.backends.spmv_sell16_format as fmt

    monkeypatch.setattr(fmt, "SAMPLE_STRIDE", 1)
    # 2 rows, 200,000 columns: row 0 = {10, 150,000}, row 1 = {11, 12, 150,001}; one slice
    a = _csr(2, 200_000, [(0, 10, 1.0), (0, 150_000, 2.0), (1, 11, 3.0), (1, 12, 4.0),
                          (1, 150_001, 5.0)])
    sell = pack_sell(a.indptr, a.indices, a.data, sigma=1, long_row=64)
    s16 = encode_sell16(sell, *a.shape)
    # Stored column-major (sigma 1: no sort): k=0 -> 10, 11; k=1 -> 150,000, 12; k=2 -> pad,
    # 150,001. Candidates: smallest column 10 covers {10, 11, 12}; diagonal (mean row 0) -> 0
    # covers the same three; the middle entry (index 48) is padding -> smallest. Tie: first.
    assert s16.base.tolist() == [10] and s16.esc_ptr.tolist() == [0, 1]
    assert s16.offsets[[0, 1, 32, 33, 64, 65]].tolist() == [0, 1, fmt.ESCAPE, 2, PAD,
                                                              fmt.ESCAPE]
    # one escape per lane: a slab one column deep, lane 0 and lane 1 filled
    assert s16.escapes[:3].tolist() == [150_000, 150_001, -1] and s16.escapes.size == 32
    assert s16.escape_fraction == pytest.approx(2 / 5)
    # 96 entries x 6 + 4 x 32 escape slots + slice_ptr 4 x 2 + base 4 + esc_ptr 4 x 2
    # + destinations 4 x 32 + x and y 4 x (2 + 200,000) + the empty split list's pointer 4
    assert s16.bytes_moved(2, 200_000) == 576 + 128 + 8 + 4 + 8 + 128 + 800_008 + 4
    # steps 1 and 2 hold an escape (a lane each), step 0 none: one-step iterations 2 of 3,
    # two-step iterations {0, 1}, {2}: both; a four-step iteration: the one
    assert s16.escape_iteration_share(1) == pytest.approx(2 / 3)
    assert s16.escape_iteration_share(2) == pytest.approx(1.0)
    assert s16.escape_iteration_share(4) == pytest.approx(1.0)


def test_finishing_tiles_plan_one_launch_and_map_each_slot_to_its_split_row():
    from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive

    # rows of 3, 9, 0, 2 nonzeros in tiles of 2 chunks: row 1 is split over slots 0 and 1
    indptr = np.array([0, 3, 12, 12, 14])
    tiles = row_tiles(indptr, 2)
    assert tiles.slot_split.tolist() == [0, 0]
    # one split row of 3 slots, one of 2: slots 0-2 -> 0, 3-4 -> 1
    three = replace(tiles, split_rows=np.array([5, 9], np.int32),
                    split_ptr=np.array([0, 3, 5], np.int32))
    assert three.slot_split.tolist() == [0, 0, 0, 1, 1]
    a = sp.csr_matrix((np.ones(14), np.arange(14) % 12, indptr), shape=(4, 12))
    with pytest.raises(ValueError, match="finish must be one of"):
        CudaSpmvAdaptive(finish=2)
    # a tile of 256 x 1 chunks cannot hold a row of 5,000: split, so the plain plan launches
    # spmv_fixup too and the finishing plan does not
    long_row = sp.csr_matrix((np.ones(5000), np.arange(5000), [0, 5000]), shape=(1, 5000))
    for matrix in (a, long_row):
        _, plain = CudaSpmvAdaptive().host_plan(matrix, "float32", 4, 132)
        _, finished = CudaSpmvAdaptive(finish=1).host_plan(matrix, "float32", 4, 132)
        assert finished.launches == 1 and finished.kernel.endswith(", 0, 1, 0>")
        assert plain.kernel.endswith(", 1, 0, 0, 0>")
        assert not finished.fixup and not plain.finish_split
    assert plain.launches == 2 and plain.fixup
    assert finished.finish_split  # the long row is finished by its last tile's chain
    _, whole = CudaSpmvAdaptive(finish=1).host_plan(a, "float32", 4, 132)
    assert not whole.finish_split  # nothing split (four short rows): no chain to wait on


def test_delta16_declares_the_share_of_iterations_that_meet_an_escape():
    from sparsescope.backends.spmv_sell import CudaSpmvDelta16, CudaSpmvSell

    # the hand example's two rows: steps 1 and 2 of the one slice hold an escape
    a = _csr(2, 200_000, [(0, 10, 1.0), (0, 150_000, 2.0), (1, 11, 3.0), (1, 12, 4.0),
                          (1, 150_001, 5.0)])
    _, shape = CudaSpmvDelta16(unroll=4).host_plan(a, "float32", 4, 132)
    shares = dict(shape.escape_share)
    assert sorted(shares) == [1, 2, 3, 4, 6, 8]
    assert shares[1] == pytest.approx(2 / 3) and shares[2] == pytest.approx(1.0)
    # INT32 columns never escape
    _, plain = CudaSpmvSell(unroll=4).host_plan(a, "float32", 4, 132)
    assert plain.escape_share == ()
    assert plain.launches == 1 and not plain.fixup
    # rows longer than long_row are cut into pieces that spmv_fixup adds
    _, cut = CudaSpmvSell(unroll=4, long_row=1).host_plan(a, "float32", 4, 132)
    assert cut.launches == 2 and cut.fixup


def test_tile_lanes_by_rows():
    # largest power of two <= 256 / rows, at most 32, at least 1
    assert tile_lanes(np.array([1, 8, 9, 100, 128, 129, 300, 0]), 256).tolist() == [
        32, 32, 16, 2, 2, 1, 1, 32]


def test_listed_long_rows_by_hand():
    # 300 rows of 1 nonzero and one of 33 in a 1,024-chunk tile: 301 rows -> 1 lane a row,
    # the row of 33 is listed; with 32 it is not. A tile of 8 rows gets 32 lanes: none listed.
    for long, listed in ((33, 1), (32, 0)):
        lengths = np.r_[np.ones(150, int), long, np.ones(150, int)]
        indptr = np.r_[0, np.cumsum(lengths)]
        tiles = row_tiles(indptr, 1024)
        assert tiles.ntiles == 1 and listed_long_rows(tiles, indptr, 256) == listed
    indptr = np.r_[0, np.cumsum(np.full(8, 100))]
    assert listed_long_rows(row_tiles(indptr, 1024), indptr, 256) == 0
    # whole-row tiles give a row longer than a tile tiles of its own (one row, 32 lanes: not
    # listed); merge-path tiles cut it anywhere, so the first tile holds the 300 short rows
    # and the long row's head, a part longer than 32 nonzeros at 1 lane: listed once
    indptr = np.r_[0, np.cumsum(np.r_[np.ones(300, int), 5000])]
    assert listed_long_rows(row_tiles(indptr, 1024), indptr, 256) == 0
    merged = merge_tiles(indptr, 1024)
    assert merged.tiles[0, 1] - merged.tiles[0, 0] == 301
    assert listed_long_rows(merged, indptr, 256) == 1


def test_only_int32_tiles_with_a_listed_row_ask_for_warp_rows():
    # 150 short rows, one of 600 (listed at 1 lane a row), 150 short rows; and a band
    lengths = np.r_[np.ones(150, int), 600, np.ones(150, int)]
    indptr = np.r_[0, np.cumsum(lengths)]
    rng = np.random.default_rng(0)
    mixed = sp.csr_matrix((np.ones(indptr[-1]), rng.integers(0, 301, indptr[-1]), indptr),
                          shape=(301, 301))
    band = sp.diags([np.ones(300)] * 3, [-1, 0, 1], shape=(300, 300), format="csr")
    for backend, matrix, ending in ((CudaSpmvAdaptive(iters=2), mixed, ", 1>"),
                                    (CudaSpmvMerge(), mixed, ", 1>"),
                                    (CudaSpmvAdaptive(iters=1), band, ", 0>"),
                                    (CudaSpmvTileDelta16(iters=2), mixed, ", 0>")):
        shape = backend.host_shape(backend.build_format(matrix), matrix, "float32", 132)
        assert shape.kernel.endswith(ending), (type(backend).__name__, shape.kernel)
