"""The 1 x B blocked format of ``cuda-spmv-blocked16``: greedy blocking by hand, the packed
layout, its byte model, and the emulated kernel against SciPy on the awkward matrices."""

from __future__ import annotations

import numpy as np
import pytest
from test_spmv_formats import MATRICES, _csr

from sparsescope.backends.spmv_blocked_format import (
    block_starts,
    blocked_bytes_per_nonzero,
    blocks_per_nonzero,
    emulate_blocked,
    pack_blocked,
    to_row_blocks,
)
from sparsescope.matrices.generators import banded


def test_greedy_blocks_by_hand():
    # row 0 columns 0 1 2 5 6 9: blocks [0,3) {0,1,2}, [5,8) {5,6}, [9,12) {9}
    # row 1 empty; row 2 columns 3 4 5 6: [3,6) {3,4,5}, [6,9) {6}
    a = _csr(3, 12, [(0, 0, 1.0), (0, 1, 2.0), (0, 2, 3.0), (0, 5, 4.0), (0, 6, 5.0),
                     (0, 9, 6.0), (2, 3, 7.0), (2, 4, 8.0), (2, 5, 9.0), (2, 6, 10.0)])
    assert block_starts(a.indptr, a.indices, 3).tolist() == [0, 3, 5, 6, 9]
    rb = to_row_blocks(a.indptr, a.indices, a.data, 3)
    assert rb.indptr.tolist() == [0, 3, 3, 5]
    assert rb.cols.tolist() == [0, 5, 9, 3, 6]
    assert rb.vals.tolist() == [[1, 2, 3], [4, 5, 0], [6, 0, 0], [7, 8, 9], [10, 0, 0]]
    assert rb.stored_per_nonzero == pytest.approx(15 / 10)
    # width 2: {0,1} {2} {5,6} {9} | {3,4} {5,6}
    assert block_starts(a.indptr, a.indices, 2).tolist() == [0, 2, 3, 5, 6, 8]
    assert blocks_per_nonzero(a.indptr, a.indices, 2) == pytest.approx(0.6)


def test_segments_cut_long_rows():
    # one row of 10 consecutive columns, segments of 4 entries: width 3 blocks restart at
    # entries 4 and 8 -> starts 0 3 | 4 7 | 8
    a = _csr(1, 10, [(0, c, 1.0) for c in range(10)])
    assert block_starts(a.indptr, a.indices, 3, segment=4).tolist() == [0, 3, 4, 7, 8]
    assert block_starts(a.indptr, a.indices, 3).tolist() == [0, 3, 6, 9]


def test_packed_layout_and_bytes_by_hand():
    # rows 0: {0,1,2}, 1: {4,5,6, 10}; width 3, sigma 1, one slice, lane 0 -> row 0,
    # lane 1 -> row 1; steps: k=0 blocks (0, 4), k=1 (pad, 10)
    a = _csr(2, 12, [(0, 0, 1.0), (0, 1, 2.0), (0, 2, 3.0), (1, 4, 4.0), (1, 5, 5.0),
                     (1, 6, 6.0), (1, 10, 7.0)])
    sb = pack_blocked(a.indptr, a.indices, a.data, a.shape, width=3, sigma=1, long_row=64)
    assert sb.blocks == 3 and sb.padded == 64
    assert sb.packed.base.tolist() == [0]
    assert sb.packed.offsets[[0, 1, 32, 33]].tolist() == [0, 4, 0xFFFE, 10]
    vals = sb.vals.reshape(2, 3, 32)      # (step, j, lane)
    assert vals[0, :, 0].tolist() == [1, 2, 3] and vals[0, :, 1].tolist() == [4, 5, 6]
    assert vals[1, :, 1].tolist() == [7, 0, 0] and not vals[1, :, 0].any()
    # 64 stored blocks x (3 x 4 + 2) + no escapes + slice_ptr 8 + base 4 + esc_ptr 8
    # + destinations 128 + x and y 4 x (12 + 2) + the empty split list's pointer 4
    assert sb.bytes_moved(2, 12) == 896 + 8 + 4 + 8 + 128 + 56 + 4
    assert blocked_bytes_per_nonzero(1 / 3, 3) == pytest.approx(14 / 3)


@pytest.mark.parametrize("name", sorted(MATRICES))
@pytest.mark.parametrize("width,sigma,long_row,tpr", [(3, 256, None, 1), (2, 1, 3, 2),
                                                      (4, 32, 2, 4), (3, 1, None, 8)])
def test_blocked_computes_scipy_product(name, width, sigma, long_row, tpr):
    a = MATRICES[name]
    x = np.random.default_rng(3).random(a.shape[1]) * 2 - 1
    sb = pack_blocked(a.indptr, a.indices, a.data, a.shape, width=width, sigma=sigma,
                      long_row=long_row, tpr=tpr)
    np.testing.assert_allclose(emulate_blocked(sb, a.shape[0], x), a @ x, rtol=1e-12,
                               atol=1e-12)
    assert np.count_nonzero(sb.vals) == np.count_nonzero(a.data)


def test_fem_runs_of_three_need_a_third_of_the_indices():
    # the banded analog's rows are runs of three consecutive columns (3-dof blocks)
    a = banded(3000, 160_000, seed=0)
    ratio = blocks_per_nonzero(a.indptr, a.indices, 3)
    # one block per 3 entries, the last block of a row partial: <= 1/3 + 1/mean length
    assert 1 / 3 <= ratio <= 1 / 3 + 3000 / 160_000
    sb = pack_blocked(a.indptr, a.indices, a.data, a.shape, width=3)
    assert sb.stored_per_nonzero < 1.10
    assert sb.bytes_moved(*a.shape) < 0.65 * (8 * a.nnz + 4 * (3000 + 1) + 8 * 3000)


def test_bad_width_raises():
    a = MATRICES["1x1"]
    with pytest.raises(ValueError, match="block width"):
        pack_blocked(a.indptr, a.indices, a.data, a.shape, width=5)
