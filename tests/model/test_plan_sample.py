"""Planning within a memory budget (``model.plan_sample``): the sample, the scaling back, and
what the model holds beside the matrix; hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.plan_sample import (
    PLAN_BYTES_PER_NNZ,
    SAMPLE_NNZ,
    RowSample,
    model_bytes,
    row_sample,
    sample_matrix,
    sample_target,
    scale_plan,
)
from sparsescope.model.traffic import Traffic

GIB = 2**30


def test_the_whole_matrix_while_its_plans_fit_the_budget():
    assert sample_target(1_000_000, 2 * GIB) is None          # 300 MB <= 2 GiB
    assert sample_target(10**8, 2 * GIB) == SAMPLE_NNZ        # 30 GB > 2 GiB
    assert sample_target(10**8, 100 * 10**6) == 100 * 10**6 // PLAN_BYTES_PER_NNZ  # 333,333


def test_model_bytes_by_hand():
    # 10^7 rows and columns, 10^8 nonzeros, 2 GiB: 640 MB + 320 MB + the budget
    assert model_bytes(10**7, 10**7, 10**8, 2 * GIB) == 640_000_000 + 320_000_000 + 2 * GIB
    # a small matrix: its whole plan, 300 B a nonzero
    assert model_bytes(100, 100, 1000, 2 * GIB) == 6_400 + 3_200 + 300_000


def test_row_sample_by_hand():
    # 10^7 rows of 10: windows of 256 x 6 = 1,536 rows, 65 of them evenly spaced
    indptr = np.arange(0, 10**8 + 1, 10, dtype=np.int64)
    indptr[5_000_001:] += 90          # row 5,000,000 is the longest (100)
    sample = row_sample(indptr, 10**6)
    assert (sample.window_rows, sample.windows) == (1536, 66)  # + the longest row's window
    assert 5_000_000 in set(sample.rows.tolist())
    assert sample.rows[0] == 0 and np.all(np.diff(sample.rows) > 0)
    assert sample.sample_nnz == 10 * sample.rows.size + 90
    assert abs(sample.sample_nnz - 10**6) < 3 * 15_360       # within a few windows
    assert "of 100,000,090 nonzeros" in sample.describe()


def test_sample_matrix_is_the_rows_themselves():
    a = sp.random(3000, 700, density=0.01, format="csr", random_state=1)
    a.sort_indices()
    sample = row_sample(a.indptr, 5_000)
    small = sample_matrix(a, sample)
    assert (small != a[sample.rows]).nnz == 0 and small.shape == (sample.rows.size, 700)
    assert small.indices.dtype == a.indices.dtype and small.has_canonical_format


def test_scale_plan_by_hand():
    # a SELL plan of 10^6 of 10^8 nonzeros and 10^5 of 10^7 rows
    sample = RowSample(rows=np.arange(100_000), windows=65, window_rows=1536,
                       total_rows=10**7, total_nnz=10**8, sample_nnz=10**6)
    traffic = Traffic("SELL", values_bytes=4_000_000, indices_bytes=4_000_000,
                      row_meta_bytes=12_500, x_bytes=40_000_000, y_read_bytes=0,
                      y_written_bytes=400_000, padding_bytes=100_000, flops=2_000_000)
    shape = KernelShape(kernel="k", decomposition="rows", block_threads=256, grid_blocks=391)
    t, s = scale_plan(traffic, shape, sample)
    assert (t.values_bytes, t.row_meta_bytes, t.y_written_bytes) == (
        400_000_000, 1_250_000, 40_000_000)
    assert (t.x_bytes, t.padding_bytes, t.flops) == (40_000_000, 10_000_000, 200_000_000)
    assert s.grid_blocks == 39_100
    # tiles of nonzeros scale by nonzeros; a persistent grid (one wave) stays
    tiles = KernelShape(kernel="t", decomposition="nnz", block_threads=256, grid_blocks=977)
    assert scale_plan(None, tiles, sample)[1].grid_blocks == 97_700
    hub = KernelShape(kernel="h", decomposition="nnz", block_threads=256, grid_blocks=1056,
                      onchip_x_entries=8192, onchip_x_copies=1056)
    assert scale_plan(None, hub, sample)[1] == hub


@pytest.mark.parametrize("rows, kept", [(0, 0), (1, 1), (300, 256)])
def test_tiny_matrices_sample_whole_windows(rows, kept):
    # a window is at least 256 rows, the matrix's own when it has fewer
    indptr = np.arange(rows + 1, dtype=np.int64) * 3
    sample = row_sample(indptr, 10)
    assert sample.rows.size == kept and sample.sample_nnz == 3 * kept
