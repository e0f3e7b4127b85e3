"""The ELL SpMM backend's host side without a GPU: the padded format, the padding bound, the
tile rule, the plan, the model's launch (no row-pointer round, every lane the padded width),
the traffic, and a lane-exact NumPy emulation of ``spmm_ell`` (used by the fake-device tests)
checked against float64."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.spmm_ell import (
    ell_kernel_name,
    ell_launch,
    ell_tile,
    plan_ell,
    widest_tile,
)
from sparsescope.backends.spmm_ell_format import (
    MAX_PADDING,
    ell_declined,
    ell_format,
    ell_rows,
    group_lanes,
    padding,
    stored_width,
)


def launch_ell(template: tuple, grid, block, args) -> None:
    """One launch of ``spmm_ell<T, I, G, C, VEC, XROW>`` in NumPy, as the kernel: thread t =
    blockIdx.x x blockDim + threadIdx, its row t / G (past rows: no store), lane t % G taking
    the row's stored entries t % G, t % G + G, ... (entry i of row r at ``r x width + i``),
    padding (col -1) gathering nothing, the group's partial sums added; tile c0 = blockIdx.y x
    C; X[j, c] at ``j x k + c`` (XROW) or ``c x cols + j``; Y stored, never added to. Asserts
    what the kernel assumes: whole warps a block, G dividing 32 and the width, the grid
    covering every row's group and every column tile, column indices in range, and a vector
    of VEC values aligned and inside its row."""
    group, c_tile, vec, xrow = template
    rows, cols, k, width, col, val, x, y = args
    rows, cols, k, width = int(rows), int(cols), int(k), int(width)
    assert block[0] % 32 == 0 and 32 % group == 0 and width % group == 0
    assert grid[0] * block[0] >= rows * group and grid[1] == -(-k // c_tile)
    assert c_tile % vec == 0 and (vec == 1 or (xrow and k % vec == 0))
    assert col.size == val.size == rows * width
    xf, yf = np.asarray(x).reshape(-1), np.asarray(y).reshape(-1)
    dtype = np.asarray(val).dtype
    j = np.asarray(col, dtype=np.int64).reshape(rows, width)
    a = np.asarray(val).reshape(rows, width)
    real = j >= 0
    assert (j[real] < cols).all()
    jj = np.where(real, j, 0)
    for by in range(grid[1]):
        c0 = by * c_tile
        cn = min(c_tile, k - c0)
        for c in range(c0, c0 + cn):
            gathered = xf[jj * k + c] if xrow else xf[c * cols + jj]
            acc = (a * np.where(real, gathered, 0)).astype(dtype).sum(axis=1, dtype=dtype)
            if xrow:
                yf[np.arange(rows) * k + c] = acc
            else:
                yf[c * rows + np.arange(rows)] = acc


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
    assert (fmt.longest, fmt.width, fmt.stored) == (2, 2, 6)
    assert fmt.col.tolist() == [0, 1, -1, -1, 0, -1]
    assert fmt.val.tolist() == [1.0, 2.0, 0.0, 0.0, 3.0, 0.0]
    three = ell_format(np.array([0, 3, 3]), np.array([0, 1, 2]), np.array([1.0, 2.0, 3.0]))
    assert (three.longest, three.width) == (3, 4)   # G 4: every lane of the pass an entry
    assert three.col.tolist() == [0, 1, 2, -1, -1, -1, -1, -1]


def test_group_and_stored_width_by_hand():
    assert [widest_tile(k) for k in (1, 3, 8, 64)] == [1, 4, 8, 8]
    assert [group_lanes(w) for w in (0, 1, 5, 13, 32, 41)] == [1, 1, 8, 16, 32, 32]
    assert [stored_width(w) for w in (0, 5, 13, 41)] == [0, 8, 16, 64]


@pytest.mark.parametrize("shape", [(37, 50), (1, 1), (0, 5), (4, 3)])
def test_format_round_trips(shape):
    csr = _awkward() if shape == (37, 50) else sp.random(
        *shape, density=0.5, format="csr", random_state=np.random.default_rng(1))
    fmt = ell_format(csr.indptr, csr.indices, csr.data)
    rows = csr.shape[0]
    back = np.zeros(csr.shape)
    for r in range(rows):
        for i in range(fmt.width):
            j = fmt.col[r * fmt.width + i]
            if j >= 0:
                back[r, j] += fmt.val[r * fmt.width + i]
            else:
                assert fmt.val[r * fmt.width + i] == 0.0
    np.testing.assert_array_equal(back, csr.toarray())


def test_padding_and_decline_by_hand():
    assert padding(np.array([0, 3, 4, 6])) == pytest.approx(2.0)   # 3 x 4 / 6
    assert padding(np.array([0, 0, 0])) == 1.0
    assert ell_declined(np.array([0, 3, 4, 6])) == ""
    hub = np.concatenate(([0], np.cumsum([100] + [1] * 99)))   # 100 x 128 / 199 = 64.3
    why = ell_declined(hub)
    assert why.startswith("ELL padding 64.3") and f"> {MAX_PADDING:g}" in why
    assert "longest row 100" in why


@pytest.mark.parametrize(("args", "want"), [
    ((8, 15, "col", "float32", 1723), (16, 1, 1)),
    ((8, 15, "row", "float32", 1723), (16, 4, 4)),
    ((64, 15, "row", "float32", 1723), (16, 8, 4)),   # C 4: 13,792 warps; C 8: 6,896
    ((8, 4, "col", "float32", 500_000), (4, 8, 1)),   # past a wave even at C_k
    ((8, 4, "col", "float32", 20_000), (4, 4, 1)),    # C 2: 10,000 warps; C 4: 5,000
    ((8, 40, "col", "float32", 10), (32, 1, 1)),
    ((3, 5, "row", "float64", 10), (8, 2, 1)),        # C_min 2 doubles; 3 odd: VEC 1
    ((1, 3, "row", "float32", 10), (4, 1, 1)),
])
def test_tile_rule_by_hand(args, want):
    k, width, layout, dtype, rows = args
    assert ell_tile(k, width, layout, dtype, rows=rows, sm_count=132) == want


def test_tile_cols_given_and_rejected():
    assert ell_tile(6, 3, "row", "float32", rows=10, sm_count=132, tile_cols=8) == (4, 8, 2)
    with pytest.raises(ValueError, match="power of two"):
        ell_tile(8, 4, "col", "float32", rows=10, sm_count=132, tile_cols=3)
    with pytest.raises(ValueError, match="1 to 4"):
        ell_tile(3, 4, "col", "float32", rows=10, sm_count=132, tile_cols=8)


def test_plan_names_the_instance_and_covers_the_grid():
    csr = _awkward()
    plan = plan_ell(csr.indptr, 8, "col", "float32", 4, 132)
    assert plan.kernel == "spmm_ell<float, int, 16, 1, 1, false>" == ell_kernel_name(
        "float32", 4, (16, 1, 1), "col")
    assert plan.width == 16 and plan.tiles == 8 and plan.blocks * plan.warps * 32 >= 37 * 16
    assert plan.notes["zero_fill"] == "no" and plan.notes["passes"] == "1"
    assert plan.notes["ell_longest_row"] == "12" and plan.notes["lanes_per_row"] == "16"
    row = plan_ell(csr.indptr, 64, "row", "float64", 8, 132)
    assert row.kernel == "spmm_ell<double, long long, 16, 2, 2, true>"


def test_launch_has_no_pointer_round_and_a_pass_a_group():
    from sparsescope.model.spmm_predict import warp_rounds

    indptr = np.array([0, 3, 4, 6])                 # rows of 3, 1, 2: G 4, Wp 4
    plan = plan_ell(indptr, 8, "col", "float32", 4, 132)
    launch = ell_launch(plan, registers=40)
    assert launch.pointer_rounds == 0 and launch.ell_width == 4
    assert (launch.slices_per_warp, launch.groups_per_slice, launch.stage_pairs,
            launch.batch) == (8, 4, 4, 1)
    assert launch.max_registers == 40 and launch.launches == 1 and not launch.zero_fill
    pairs, xr, busiest = warp_rounds(launch)        # one pass: a round of each, a pair a lane
    assert pairs.tolist() == [1] and xr.tolist() == [1] and busiest.tolist() == [1]
    assumed = ell_launch(plan)
    assert assumed.max_registers == 32 and assumed.registers_source.startswith("assumed (32")
    long_rows = np.array([0, 41, 41])   # W 41: G 32, Wp 64, two passes (the empty row too)
    two = ell_launch(plan_ell(long_rows, 8, "col", "float32", 4, 132))
    assert [v.tolist() for v in warp_rounds(two)] == [[2, 2]] * 3   # a warp a row, both


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
    assert "A 4,736 B" in ell_terms["dram"].formula          # 37 rows x Wp 16 x 8 bytes
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
    group, c, vec = plan.tile
    launch_ell((group, c, vec, layout == "row"), (plan.blocks, plan.tiles),
               (32 * plan.warps,),
               (rows, cols, k, plan.width, fmt.col.astype(np.int32 if index == 4 else np.int64),
                fmt.val.astype(dtype), x, y))
    got = y if layout == "row" else y.T
    want = csr.toarray() @ xin.astype(dtype).astype(np.float64)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())



def test_ell_rows_one_slice_a_row_uncut():
    """The slices of a plan on ELL rows by hand: rows of 3, 0 and 5 -> S 5 (the longest row),
    3 slices over the row pointers themselves, none cut, no slice rows; no rows -> S 0."""
    plan = ell_rows(np.array([0, 3, 3, 8]))
    assert (plan.slice_nnz, plan.n_slices, plan.split_rows) == (5, 3, 0)
    assert plan.slice_row is None and plan.slice_ptr.tolist() == [0, 3, 3, 8]
    assert ell_rows(np.array([0])).slice_nnz == 0
