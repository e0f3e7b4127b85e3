"""Automatic kernel selection: rules on hand-made statistics, statistics on known matrices,
and the own backends' CPU-side surface (registration, parameters, capability)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.select import (
    BLOCKED_MIN_SAVING,
    DELTA16_MAX_ESCAPE_FRACTION,
    ITERS2_MIN_MEAN,
    SELL_MAX_PADDING,
    SELL_MIN_WARPS_PER_SM,
    MatrixStatistics,
    blocked_sell_bytes,
    delta16_sell_bytes,
    matrix_statistics,
    select_for,
    select_kernel,
    sell_params,
    wave_fill,
)
from sparsescope.matrices import generate


def stats(**over) -> MatrixStatistics:
    base = dict(rows=1000, cols=1000, nnz=10_000, mean_nnz_per_row=10.0, max_nnz_per_row=12,
                cv_nnz_per_row=0.1, empty_row_fraction=0.0, escape_fraction=0.5,
                delta16_byte_ratio=0.95, sell_padding_ratio=1.02)
    return MatrixStatistics(**{**base, **over})


def test_rules_in_order():
    many = 16 * SELL_MIN_WARPS_PER_SM * 132  # rows: exactly the warps SELL needs on 132 SMs
    regular = dict(sell_padding_ratio=SELL_MAX_PADDING, rows=many)
    chosen = select_kernel(stats(**regular, escape_fraction=DELTA16_MAX_ESCAPE_FRACTION))
    assert chosen.backend == "cuda-spmv-delta16" and chosen.rule == "regular-rows-delta16"
    chosen = select_kernel(stats(**regular, escape_fraction=0.021))
    assert chosen.backend == "cuda-spmv-sell" and "2.1% of the columns" in chosen.reason
    # 1 x 3 blocks when they save at least BLOCKED_MIN_SAVING of delta16's bytes
    blocked = dict(regular, escape_fraction=0.0, block_width=3, delta16_byte_ratio=0.8)
    chosen = select_kernel(stats(**blocked, blocked_byte_ratio=0.8 * (1 - BLOCKED_MIN_SAVING)))
    assert chosen.backend == "cuda-spmv-blocked16" and chosen.rule == "regular-rows-blocked16"
    assert chosen.params == {"block": 3, "tpr": 1, "stage": 4, "minb": 6}
    assert "10% fewer" in chosen.reason and "cp.async" in chosen.reason
    # ... even with too few rows for the register-pipelined SELL kernels
    few = dict(blocked, rows=many - 16, blocked_byte_ratio=0.6)
    assert select_kernel(stats(**few)).backend == "cuda-spmv-blocked16"
    chosen = select_kernel(stats(**blocked, blocked_byte_ratio=0.8 * 0.91))
    assert chosen.backend == "cuda-spmv-delta16"
    # blocks never rescue escapes: too many escapes still means INT32 SELL
    chosen = select_kernel(stats(**{**blocked, "escape_fraction": 0.05},
                                 blocked_byte_ratio=0.5))
    assert chosen.backend == "cuda-spmv-sell"
    # regular but too few rows: tiles
    chosen = select_kernel(stats(**{**regular, "rows": many - 16}, escape_fraction=0.0))
    assert chosen.backend == "cuda-spmv-adaptive" and "too few loads" in chosen.reason
    # irregular rows: tiles of whole rows, iters by the mean row length
    irregular = dict(sell_padding_ratio=1.5, escape_fraction=0.0)
    chosen = select_kernel(stats(**irregular, mean_nnz_per_row=ITERS2_MIN_MEAN - 0.1))
    assert chosen.backend == "cuda-spmv-adaptive" and chosen.params == {"iters": 1}
    chosen = select_kernel(stats(**irregular, mean_nnz_per_row=ITERS2_MIN_MEAN))
    assert chosen.params == {"iters": 2} and "SELL would pad 50%" in chosen.reason


def test_sell_launch_parameters_from_waves():
    # pwtk-sized: 217,918 rows -> 6,810 slices = 0.81 waves of 64 x 132: two threads per row;
    # 13,620 warps fill 2.15 waves of 48 x 132 (last 72%) or 1.61 of 64 x 132 (last 81%)
    params, text = sell_params(217_918, 132)
    assert params == {"tpr": 2, "unroll": 2, "minb": 8} and "0.81 waves" in text
    # ldoor-sized: 29,757 slices, 3.52 waves: one thread; last wave 94% (48) vs 88% (64)
    assert sell_params(952_203, 132)[0] == {"tpr": 1, "unroll": 4, "minb": 6}
    assert wave_fill(6336, 48, 132) == 1.0 and wave_fill(6337, 48, 132) == pytest.approx(
        (6337 / 6336) / 2)


def test_blocked_sell_byte_estimate():
    # 1,000 rows, 10,000 nonzeros in 3,500 blocks of 3, 5% padding, 10% escapes, 2,000 cols:
    # 3,675 x 14 + 4.4 x 350 + 4 x 32 x 32 slices + 12 x 32 + 4 x 3,000
    assert blocked_sell_bytes(1000, 2000, 10_000, 1.05, 0.1, 0.35, 3) == pytest.approx(
        51_450 + 1_540 + 4_096 + 384 + 12_000)


def test_delta16_sell_byte_estimate():
    # 1,000 rows x 10 nonzeros, 5% padding, 10% escapes, 2,000 columns:
    # 10,500 x 6 + 4.4 x 1,000 + 4 x 32 x 32 slices + 12 x 32 + 4 x 3,000
    assert delta16_sell_bytes(1000, 2000, 10_000, 1.05, 0.1) == pytest.approx(
        63_000 + 4_400 + 4_096 + 384 + 12_000)


def test_statistics_of_a_banded_matrix():
    csr = generate("banded", 80_000, 1_600_000, seed=1)
    st = matrix_statistics(csr)
    assert (st.rows, st.nnz, st.mean_nnz_per_row) == (80_000, 1_600_000, 20.0)
    assert st.escape_fraction == 0.0  # the band (< 2 * 80 + 1 columns) fits 16 bits
    assert st.sell_padding_ratio < 1.1  # row lengths within +-25% of the mean
    expected = delta16_sell_bytes(80_000, 80_000, 1_600_000, st.sell_padding_ratio, 0.0)
    assert st.delta16_byte_ratio == pytest.approx(
        expected / (1_600_000 * 8 + 4 * 80_001 + 4 * 160_000))
    # runs of three columns: 1 x 3 blocks, about one per three nonzeros (plus a partial block
    # per row of 20: 7 blocks per row, 0.35 per nonzero)
    assert st.block_width == 3
    assert st.blocked_byte_ratio == pytest.approx(blocked_sell_bytes(
        80_000, 80_000, 1_600_000, st.sell_padding_ratio, 0.0, 0.35, 3) / (
        1_600_000 * 8 + 4 * 80_001 + 4 * 160_000), rel=0.02)
    # 80,000 rows = 37.9 warps of 16 rows per SM on 132 SMs: SELL of 1 x 3 blocks
    assert select_for(csr).backend == "cuda-spmv-blocked16"
    # 25 warps per SM on 200 SMs: too few for the register-pipelined kernels, not for blocks
    assert select_for(csr, sm_count=200).backend == "cuda-spmv-blocked16"



def test_statistics_of_power_law_and_uniform_matrices():
    rng = np.random.default_rng(3)
    wide = sp.random(2000, 3_000_000, density=2e-6, format="csr", random_state=rng)
    wide.sort_indices()
    st = matrix_statistics(wide)
    assert st.escape_fraction > 0.9 and st.delta16_byte_ratio > 1.0
    # ~6 nonzeros per row, multinomial lengths: SELL pads a lot: tiles
    assert st.sell_padding_ratio > SELL_MAX_PADDING
    assert select_for(wide).backend == "cuda-spmv-adaptive"
    power = generate("powerlaw", 200_000, 2_000_000, seed=2, long_rows=3, long_row_frac=0.01,
                     cols=3_000_000)
    st = matrix_statistics(power)
    assert st.max_nnz_per_row == 30_000 and st.cv_nnz_per_row > 2
    assert st.escape_fraction > 0.5  # power-law columns over 3 M: most do not fit 16 bits
    chosen = select_for(power)
    assert chosen.backend == "cuda-spmv-adaptive" and chosen.params == {"iters": 1}
    assert "irregular rows" in chosen.reason


def test_empty_matrix_statistics():
    st = matrix_statistics(sp.csr_matrix((4, 4)))
    assert (st.nnz, st.cv_nnz_per_row, st.escape_fraction, st.empty_row_fraction) == \
        (0, 0.0, 0.0, 1.0)


def test_backend_classes_take_known_parameters_only():
    from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
    from sparsescope.backends.spmv_auto import CHOICES, CudaSpmvAuto
    from sparsescope.backends.spmv_compressed import CudaSpmvTileDelta16
    from sparsescope.backends.spmv_sell import CudaSpmvBlocked16, CudaSpmvDelta16, CudaSpmvSell

    assert CudaSpmvAdaptive(iters=2).chunks == 512
    with pytest.raises(ValueError):
        CudaSpmvAdaptive(iters=2, hub=8192)  # would pass the 48 KB of static shared memory
    assert CudaSpmvTileDelta16(tiling="merge").format_key() == ("CudaSpmvTileDelta16", 256,
                                                                "merge")
    assert CudaSpmvDelta16(sigma=64).format_key() == ("CudaSpmvDelta16", 64, None, 1)
    with pytest.raises(ValueError):
        CudaSpmvSell(unroll=5)
    with pytest.raises(ValueError, match="stage one of"):
        CudaSpmvSell(stage=3)
    with pytest.raises(TypeError, match="no parameter sigma"):
        CudaSpmvAdaptive(sigma=3)
    with pytest.raises(ValueError):
        CudaSpmvAdaptive(iters=3)
    assert CudaSpmvSell(sigma=32, tpr=2).format_key() == ("CudaSpmvSell", 32, None, 2)
    for cls in (*CHOICES.values(), CudaSpmvAuto, CudaSpmvTileDelta16):
        cap = cls.capability
        assert cap.index_bytes == (4,) and not cap.y_read and cap.device == "gpu"
        assert cap.unsupported_reason("spmv", "float64", 8).startswith("INT64")
    assert set(CHOICES) == {"cuda-spmv-adaptive", "cuda-spmv-merge", "cuda-spmv-delta16",
                            "cuda-spmv-sell", "cuda-spmv-blocked16"}
    assert CudaSpmvBlocked16(tpr=2).format_key() == ("CudaSpmvBlocked16", 256, None, 2, 3)
    with pytest.raises(ValueError, match="block must be one of"):
        CudaSpmvBlocked16(block=5)


def test_formats_build_without_a_gpu():
    from sparsescope.backends.spmv_compressed import CudaSpmvTileDelta16
    from sparsescope.backends.spmv_merge import CudaSpmvMerge
    from sparsescope.backends.spmv_sell import CudaSpmvDelta16

    csr = generate("scattered", 3000, 30_000, seed=4, cols=100_000)
    tiles = CudaSpmvMerge(iters=2).build_format(csr)
    assert tiles.kind == "merge" and tiles.chunks == 512
    d16 = CudaSpmvTileDelta16().build_format(csr)
    assert 0.0 < d16.escape_fraction < 0.2  # the 10% far columns escape, the local ones fit
    s16 = CudaSpmvDelta16().build_format(csr)
    assert 0.0 < s16.escape_fraction < 0.2
