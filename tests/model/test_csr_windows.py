"""A CSR kernel's loop counted as its compiled loops read a row (``model.csr_windows``):
single steps and peeled copies are short windows, not main-loop iterations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.model.csr_windows import window_block_iterations, window_counts
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.predict import DeviceRates, predict_spmv
from sparsescope.model.traffic import csr_spmv_traffic

WINDOWS = (4, 16, 8, 4)
SCALAR = KernelShape(kernel="csr_scalar", decomposition="rows", block_threads=64,
                     grid_blocks=2, threads_per_row=1, nnz_per_iteration=16,
                     remainder_step=1, rounds_per_iteration=2, setup_rounds=1,
                     row_windows=WINDOWS)


@pytest.mark.parametrize("entries, main, short", [
    (13, 0, 3),    # 1 single; 12 left: peeled 8 and 4
    (37, 2, 2),    # 1 single, 2 x 16; 4 left: peeled 4
    (16, 1, 0),
    (3, 0, 3),     # 3 singles
    (0, 0, 0),
    (44, 2, 2),    # no single, 2 x 16; 12 left: 8 and 4
])
def test_window_counts_hand_checks(entries, main, short):
    m, s = window_counts(np.array([entries]), WINDOWS)
    assert (int(m[0]), int(s[0])) == (main, short)


def indptr_of(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def test_block_time_in_main_loop_iterations():
    # 128 rows of 1 entry (1 single each) but row 70 of 37 (2 main + 2 short): with short
    # windows at half a main iteration, block 0 (rows 0-63) takes 0.5, block 1 2 + 1 = 3.0
    lengths = [1] * 128
    lengths[70] = 37
    blocks = window_block_iterations(indptr_of(lengths), SCALAR, 0.5)
    assert blocks.tolist() == [0.5, 3.0]
    # two lanes a row: row 70's lanes hold 19 entries: 3 singles, 1 main -> 1 + 1.5 = 2.5
    two = dataclasses.replace(SCALAR, threads_per_row=2, grid_blocks=4)
    assert window_block_iterations(indptr_of(lengths), two, 0.5).tolist() == [0.5, 0.5, 2.5,
                                                                               0.5]


def test_short_rows_are_not_charged_main_iterations():
    """Rows of 13 entries: three short windows of one stream and one x round each, not
    thirteen 16-entry iterations (the CSR kernels' 2.5x over-prediction on the real
    development set)."""
    rates = DeviceRates(
        name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
        l2_bytes=1 << 30, dram_bw_gb_s=1000.0, l2_bw_gb_s=4000.0, dram_latency_ns=400.0,
        l2_latency_ns=200.0, fp32_gflops=10000.0, dram_gather_gsectors_s=None,
        l2_gather_gsectors_s=None, launch_us=None)
    a = sp.csr_matrix((np.ones(256 * 13), np.tile(np.arange(13), 256) * 7 % 256,
                       np.arange(0, 256 * 13 + 1, 13)), shape=(256, 256))
    a.sort_indices()
    traffic = csr_spmv_traffic(*a.shape, a.nnz)
    shape = dataclasses.replace(SCALAR, grid_blocks=4)
    p = predict_spmv(a.indptr, a.indices, 256, traffic, shape, rates, flushed=False)
    t_iter, x_round = p.inputs["iteration_ns"], p.inputs["x_round_ns"]
    short = (400.0 + x_round) / t_iter
    latency = next(t for t in p.terms if t.name == "latency")
    # every block: 1 setup round + 3 short windows of (stream + x round)
    assert latency.time_ms * 1e6 == pytest.approx(400.0 + 3 * short * t_iter)
    assert latency.time_ms * 1e6 < 400.0 + 13 * t_iter / 2
