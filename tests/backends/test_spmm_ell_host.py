"""The ELL SpMM backend's host side without a GPU: the padded format, the padding bound, the
tile rule, the plan, the model's launch (no row-pointer round, every lane the padded width),
the traffic, and a lane-exact NumPy emulation of ``spmm_ell`` (used by the fake-device tests)
checked against float64."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.spmm_ell import (
    MAX_PADDING,
    ell_declined,
    ell_format,
    ell_kernel_name,
    ell_launch,
    ell_tile,
    padding,
    plan_ell,
)


def launch_ell(template: tuple, grid, block, args) -> None:
    """One launch of ``spmm_ell<T, I, C, BATCH, VEC, XROW>`` in NumPy, lane for lane as the
    kernel: lane r = blockIdx.x x blockDim + threadIdx (past rows: returns), tile c0 =
    blockIdx.y x C, pair i of row r at ``i x rows + r``, padding (col -1) gathering nothing;
    X[j, c] at ``j x k + c`` (XROW) or ``c x cols + j``; Y stored, never added to. Asserts
    what the kernel assumes: the grid covers every row and column tile, the column indices are
    in range, and a vector of VEC values is aligned and inside its row."""
    c_tile, batch, vec, xrow = template
    rows, cols, k, width, col, val, x, y = args
    rows, cols, k, width = int(rows), int(cols), int(k), int(width)
    assert grid[0] * block[0] >= rows and grid[1] == -(-k // c_tile)
    assert c_tile % vec == 0 and (vec == 1 or (xrow and k % vec == 0))
    assert batch >= 1 and col.size == val.size == rows * width
    xf, yf = np.asarray(x).reshape(-1), np.asarray(y).reshape(-1)
    dtype = np.asarray(val).dtype
    for by in range(grid[1]):
        c0 = by * c_tile
        cn = min(c_tile, k - c0)
        acc = np.zeros((rows, cn), dtype=dtype)
        for i in range(width):
            j = np.asarray(col[i * rows:(i + 1) * rows], dtype=np.int64)
            a = np.asarray(val[i * rows:(i + 1) * rows])
            real = j >= 0
            assert (j[real] < cols).all()
            jj = np.where(real, j, 0)
            cs = np.arange(c0, c0 + cn)
            gathered = (xf[jj[:, None] * k + cs[None, :]] if xrow
                        else xf[cs[None, :] * cols + jj[:, None]])
            acc += a[:, None] * np.where(real[:, None], gathered, 0).astype(dtype)
        for c in range(cn):
            if xrow:
                yf[np.arange(rows) * k + c0 + c] = acc[:, c]
            else:
                yf[(c0 + c) * rows + np.arange(rows)] = acc[:, c]


def _awkward(seed: int = 0) -> sp.csr_matrix:
    """37 x 50: empty rows, one row of 12, the rest 0-5 nonzeros (a partial warp)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, size=37)
    lengths[::5] = 0
    lengths[17] = 12
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = np.concatenate([np.sort(rng.choice(50, n, replace=False)) for n in lengths])
    return sp.csr_matrix((rng.standard_normal(indptr[-1]), indices, indptr), shape=(37, 50))


def test_format_by_hand():
    fmt = ell_format(np.array([0, 2, 2, 3]), np.array([0, 1, 0]), np.array([1.0, 2.0, 3.0]))
    assert fmt.width == 2 and fmt.stored == 6
    assert fmt.col.tolist() == [0, -1, 0, 1, -1, -1]
    assert fmt.val.tolist() == [1.0, 0.0, 3.0, 2.0, 0.0, 0.0]


@pytest.mark.parametrize("shape", [(37, 50), (1, 1), (0, 5), (4, 3)])
def test_format_round_trips(shape):
    csr = _awkward() if shape == (37, 50) else sp.random(
        *shape, density=0.5, format="csr", random_state=np.random.default_rng(1))
    fmt = ell_format(csr.indptr, csr.indices, csr.data)
    rows = csr.shape[0]
    back = np.zeros(csr.shape)
    for i in range(fmt.width):
        for r in range(rows):
            j = fmt.col[i * rows + r]
            if j >= 0:
                back[r, j] += fmt.val[i * rows + r]
            else:
                assert fmt.val[i * rows + r] == 0.0
    np.testing.assert_array_equal(back, csr.toarray())


def test_padding_and_decline_by_hand():
    assert padding(np.array([0, 3, 4, 6])) == pytest.approx(1.5)   # 3 x 3 / 6
    assert padding(np.array([0, 0, 0])) == 1.0
    assert ell_declined(np.array([0, 3, 4, 6])) == ""
    hub = np.concatenate(([0], np.cumsum([100] + [1] * 99)))   # 100 x 100 / 199 = 50.3
    why = ell_declined(hub)
    assert why.startswith("ELL padding 50.3") and f"> {MAX_PADDING:g}" in why
    assert "longest row 100" in why


@pytest.mark.parametrize(("args", "want"), [
    ((8, 15, "col", "float32", 1723), (1, 16, 1)),
    ((8, 15, "row", "float32", 1723), (4, 16, 4)),
    ((64, 15, "row", "float32", 1723), (4, 16, 4)),
    ((8, 4, "col", "float32", 500_000), (8, 4, 1)),
    ((8, 4, "col", "float32", 100_000), (2, 4, 1)),   # 3,125 warps: C 8, 4 below a wave
    ((8, 40, "col", "float32", 10), (1, 32, 1)),
    ((3, 5, "row", "float64", 10), (2, 8, 1)),        # C_min 2 doubles; 3 odd: VEC 1
    ((1, 3, "row", "float32", 10), (1, 4, 1)),
])
def test_tile_rule_by_hand(args, want):
    k, width, layout, dtype, rows = args
    assert ell_tile(k, width, layout, dtype, rows=rows, sm_count=132) == want


def test_tile_cols_given_and_rejected():
    assert ell_tile(6, 4, "row", "float32", rows=10, sm_count=132, tile_cols=8) == (8, 4, 2)
    with pytest.raises(ValueError, match="power of two"):
        ell_tile(8, 4, "col", "float32", rows=10, sm_count=132, tile_cols=3)
    with pytest.raises(ValueError, match="1 to 4"):
        ell_tile(3, 4, "col", "float32", rows=10, sm_count=132, tile_cols=8)
    assert ell_tile(8, 15, "col", "float32", rows=1723, sm_count=132, batch=4) == (1, 4, 1)
    with pytest.raises(ValueError, match="batch must be 1 to 32"):
        ell_tile(8, 15, "col", "float32", rows=1723, sm_count=132, batch=64)


def test_plan_names_the_instance_and_covers_the_grid():
    csr = _awkward()
    plan = plan_ell(csr.indptr, 8, "col", "float32", 4, 132)
    assert plan.kernel == "spmm_ell<float, int, 1, 16, 1, false>" == ell_kernel_name(
        "float32", 4, (1, 16, 1), "col")
    assert plan.width == 12 and plan.tiles == 8 and plan.blocks * plan.warps * 32 >= 37
    assert plan.notes["zero_fill"] == "no" and plan.notes["rounds"] == "1"
    row = plan_ell(csr.indptr, 64, "row", "float64", 8, 132)
    assert row.kernel == "spmm_ell<double, long long, 2, 16, 2, true>"


def test_launch_has_no_pointer_round_and_lanes_walk_the_width():
    from sparsescope.model.spmm_predict import warp_rounds

    indptr = np.array([0, 3, 4, 6])                 # rows of 3, 1, 2: W 3
    plan = plan_ell(indptr, 8, "col", "float32", 4, 132)
    launch = ell_launch(plan, registers=40)
    assert launch.pointer_rounds == 0 and launch.ell_width == 3
    assert launch.max_registers == 40 and launch.launches == 1 and not launch.zero_fill
    pairs, xr, busiest = warp_rounds(launch)        # one warp: BATCH 4 >= W: one round each
    assert pairs.tolist() == [1] and xr.tolist() == [1] and busiest.tolist() == [3]
    assert ell_launch(plan).registers_source == "the launch bound's cap (255)"


def test_model_drops_the_pointer_round():
    """Same lanes, one round of pairs and gathers each: the ELL lane's unloaded time is the
    CSR lane's less one DRAM latency (``t_warp``, the imbalance term's longest warp), and its
    A is the padded pairs."""
    from dataclasses import replace

    from sparsescope.model.predict import DeviceRates
    from sparsescope.model.spmm_predict import predict_spmm

    rates = DeviceRates(
        name="T", sm_count=2, max_threads_per_sm=2048, max_blocks_per_sm=32, l2_bytes=1 << 20,
        dram_bw_gb_s=1000.0, l2_bw_gb_s=2000.0, dram_latency_ns=400.0, l2_latency_ns=200.0,
        fp32_gflops=1000.0, dram_gather_gsectors_s=None, l2_gather_gsectors_s=10.0,
        launch_us=2.0, sm_clock_mhz=1000.0)
    csr = _awkward()
    ell = ell_launch(plan_ell(csr.indptr, 8, "col", "float32", 4, 132), registers=40)
    csr_lane = replace(ell, pointer_rounds=1, ell_width=0)
    args = (csr.indptr, csr.indices, 50, 8)
    ell_terms = {t.name: t for t in predict_spmm(*args, ell, rates, flushed=False).terms}
    csr_terms = {t.name: t for t in predict_spmm(*args, csr_lane, rates, flushed=False).terms}
    assert "longest warp: (0 + 1 pair rounds) x 400 ns" in ell_terms["imbalance"].formula
    assert "longest warp: (1 + 1 pair rounds) x 400 ns" in csr_terms["imbalance"].formula
    assert ell_terms["latency"].time_ms < csr_terms["latency"].time_ms
    assert "A 3,552 B" in ell_terms["dram"].formula          # 37 rows x W 12 x 8 bytes
    assert f"A {csr.nnz * 8 + 38 * 4:,} B" in csr_terms["dram"].formula


def test_traffic_by_hand():
    from sparsescope.model.traffic import ell_spmm_traffic

    t = ell_spmm_traffic(3, 5, 4, 8, 2)
    assert (t.values_bytes, t.indices_bytes, t.row_meta_bytes, t.padding_bytes) == (24, 24, 0,
                                                                                    16)
    assert (t.x_bytes, t.y_written_bytes, t.flops) == (160, 96, 64)
    assert t.format == "ELL INT32 (width 2)"


@pytest.mark.parametrize("layout", ["col", "row"])
@pytest.mark.parametrize(("k", "dtype", "index"), [(1, "float32", 4), (8, "float32", 4),
                                                   (6, "float64", 8), (33, "float32", 8)])
def test_emulated_kernel_matches_float64(layout, k, dtype, index):
    csr = _awkward(seed=k)
    rows, cols = csr.shape
    plan = plan_ell(csr.indptr, k, layout, dtype, index, 132)
    fmt = ell_format(csr.indptr, csr.indices, csr.data)
    rng = np.random.default_rng(k)
    xin = rng.standard_normal((cols, k))
    x = (xin if layout == "row" else xin.T).astype(dtype).copy()
    y = np.full((rows, k) if layout == "row" else (k, rows), np.nan, dtype=dtype)
    c, batch, vec = plan.tile
    launch_ell((c, batch, vec, layout == "row"), (plan.blocks, plan.tiles),
               (32 * plan.warps,),
               (rows, cols, k, plan.width, fmt.col.astype(np.int32 if index == 4 else np.int64),
                fmt.val.astype(dtype), x, y))
    got = y if layout == "row" else y.T
    want = csr.toarray() @ xin.astype(dtype).astype(np.float64)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())

