"""The rowgroup SpMM kernel without a GPU: its pure host rules (hand-computed values) and a
lane-exact NumPy emulation of its index arithmetic (groups, stages, shuffles, slabs, cut rows)
against the float64 product."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.spmm_cuda import slice_plan
from sparsescope.backends.spmm_rowgroup import (
    choose_slab_cols,
    plan_rowgroup,
    rowgroup_grid,
    rowgroup_kernel_name,
    rowgroup_pipeline,
    rowgroup_shape,
    vector_width,
    warp_slab_cols,
)


@pytest.mark.parametrize(("k", "dtype", "vec"), [
    (1, "float32", 1), (3, "float32", 1), (6, "float32", 2), (8, "float32", 4),
    (256, "float32", 4), (600, "float32", 4), (33, "float32", 1), (8, "float64", 2),
    (256, "float64", 2), (33, "float64", 1), (6, "float64", 2),
])
def test_vector_width(k, dtype, vec):
    assert vector_width(k, dtype) == vec


def test_vector_width_rejects_k0():
    with pytest.raises(ValueError):
        vector_width(0, "float32")


@pytest.mark.parametrize(("k", "dtype", "kslab"), [
    (1, "float32", 1), (8, "float32", 8), (64, "float32", 64), (128, "float32", 128),
    (256, "float32", 128), (512, "float32", 128),   # a warp's 32 float4 loads: 128 columns
    (600, "float32", 120),     # 5 slabs of 120, not 4 x 128 + 88
    (129, "float32", 65),      # VEC 1: 65 + 64
    (1030, "float32", 116),    # VEC 2: 9 slabs of 116 (the last 102)
    (256, "float64", 64), (600, "float64", 60), (4096, "float64", 64),  # 32 double2: 64
])
def test_choose_slab_cols(k, dtype, kslab):
    assert choose_slab_cols(k, dtype) == kslab
    slabs = -(-k // kslab)
    assert kslab <= warp_slab_cols(dtype) and slabs == -(-k // warp_slab_cols(dtype))
    assert kslab % vector_width(k, dtype) == 0


def test_warp_slab_cols():
    assert (warp_slab_cols("float32"), warp_slab_cols("float64")) == (128, 64)


def test_choose_slab_cols_override():
    assert choose_slab_cols(256, "float32", 64) == 64
    assert choose_slab_cols(8, "float32", 32) == 8  # wider than k: k
    for bad in (0, 6, 1024):
        with pytest.raises(ValueError):
            choose_slab_cols(256, "float32", bad)


@pytest.mark.parametrize(("kslab", "vec", "shape"), [
    (1, 1, (1, 1, 1)), (8, 4, (4, 2, 1)), (6, 2, (2, 4, 1)), (3, 1, (1, 4, 1)),
    (64, 4, (4, 16, 1)), (256, 4, (4, 32, 2)), (512, 2, (2, 32, 8)), (300, 4, (4, 32, 3)),
    (33, 1, (1, 32, 2)), (512, 4, (4, 32, 4)), (512, 1, (1, 32, 16)), (4, 4, (4, 1, 1)),
])
def test_rowgroup_shape(kslab, vec, shape):
    assert rowgroup_shape(kslab, vec) == shape
    v, g, chunks = shape
    assert chunks * v <= 32  # <= 32 accumulator values a lane (32 registers for float)


def test_rowgroup_shape_rejects_a_slab_that_vec_does_not_divide():
    with pytest.raises(ValueError):
        rowgroup_shape(6, 4)


@pytest.mark.parametrize(("shape", "depth", "stages"), [
    ((1, 1, 1), None, (4, 4)), ((4, 2, 1), None, (4, 8)), ((4, 16, 1), None, (2, 8)),
    ((4, 32, 1), None, (2, 8)), ((4, 32, 2), None, (2, 4)), ((4, 32, 3), None, (2, 2)),
    ((2, 32, 8), None, (2, 1)), ((1, 32, 16), None, (2, 1)), ((2, 4, 1), None, (4, 8)),
    ((4, 2, 1), 1, (1, 2)), ((4, 8, 1), 2, (2, 8)), ((4, 32, 1), 1, (1, 8)),
])
def test_rowgroup_pipeline(shape, depth, stages):
    assert rowgroup_pipeline(shape, depth) == stages
    d, batch = stages
    # a stage: 4 pairs a lane at G <= 8, 2 at G >= 16 (64 pairs at G = 32, so that its
    # batches unroll: MIN_DEPTH)
    assert (d * shape[1]) % batch == 0 and d * shape[1] <= 64


@pytest.mark.parametrize(("shape", "depth", "batch", "stages"), [
    ((4, 16, 1), None, 4, (2, 4)), ((4, 2, 1), None, 2, (4, 2)), ((4, 32, 1), 1, 32, (1, 32)),
    ((1, 1, 1), None, 4, (4, 4)),
])
def test_rowgroup_pipeline_batch_override(shape, depth, batch, stages):
    assert rowgroup_pipeline(shape, depth, batch) == stages


@pytest.mark.parametrize("batch", [3, 0, 16])
def test_rowgroup_pipeline_rejects_a_batch_that_does_not_divide_the_stage(batch):
    # (4, 2, 1): DEPTH 4 x G 2 = a stage of 8 pairs
    with pytest.raises(ValueError, match="dividing DEPTH x G = 8"):
        rowgroup_pipeline((4, 2, 1), None, batch)


def test_rowgroup_pipeline_rejects_a_depth_that_is_not_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        rowgroup_pipeline((4, 2, 1), 3)


def test_rowgroup_grid():
    assert rowgroup_grid(100_000, 2, 132) == (782, 8)
    assert rowgroup_grid(512, 32, 132) == (128, 4)
    assert rowgroup_grid(512, 2, 132) == (32, 1)
    assert rowgroup_grid(0, 4, 132) == (1, 1)
    assert rowgroup_grid(33, 1, 132) == (2, 1)       # a lane per slice: 2 warps
    assert rowgroup_grid(100_000, 2, 132, warps=2) == (3125, 2)
    # blocks no larger than the fewest warps that fill an SM (2 on Hopper: 64 warps, 32 blocks)
    assert rowgroup_grid(100_000, 2, 132, full_warps=2) == (3125, 2)
    assert rowgroup_grid(100_000, 32, 132, full_warps=2) == (50_000, 2)
    assert rowgroup_grid(512, 32, 132, full_warps=2) == (256, 2)
    assert rowgroup_grid(512, 2, 132, full_warps=2) == (32, 1)   # 1 already: kept
    assert rowgroup_grid(100_000, 2, 132, warps=8, full_warps=2) == (782, 8)  # override wins


def test_full_block_warps():
    from sparsescope.backends._gpu import full_block_warps

    assert full_block_warps(2048, 32) == 2   # Hopper, A100: 64 warps, 32 blocks
    assert full_block_warps(1536, 24) == 2   # Ada: 48 warps, 24 blocks
    assert full_block_warps(1536, 16) == 4   # sm_86: 48 warps, 16 blocks -> 3 -> 4
    assert full_block_warps(2048, 16) == 4   # Volta-style limits: 64 / 16
    assert full_block_warps(0, 32) == 8      # unknown: the largest block the kernels use


@pytest.mark.parametrize(("value_dtype", "warps", "minb"), [
    ("float32", 1, 2), ("float32", 2112, 2), ("float32", 2113, 4), ("float32", 10**6, 4),
    ("float64", 1, 2), ("float64", 10**6, 2),
])
def test_wave_minb(value_dtype, warps, minb):
    from sparsescope.backends.spmm_rowgroup import wave_minb

    # 132 SMs x the 16 warps MINB 2 guarantees = 2,112 warps in one wave
    assert wave_minb(value_dtype, warps, 132) == minb


def test_a_grid_over_a_wave_takes_minb_4_and_an_override_wins():
    indptr = np.arange(0, 300_001, 3)  # 100,000 rows of 3: one row a slice
    big = plan_rowgroup(indptr, 300_000, 64, "float32", 4, 132)
    # G 16: 2 slices a warp -> 50,000 warps, over 2,112: MINB 4
    assert big.kernel == "spmm_rowgroup<float, int, 4, 16, 1, 2, 8, 4>"
    assert plan_rowgroup(indptr, 300_000, 64, "float32", 4, 132, minb=2).kernel.endswith(
        ", 2>")
    # the same matrix on a device of 4,000 SMs fits one wave (64,000 warps)
    assert plan_rowgroup(indptr, 300_000, 64, "float32", 4, 4000).kernel.endswith(", 2>")


def test_kernel_name_and_plan_notes():
    # MINB by value type: 4 for float32 (64 registers), 2 for float64
    assert (rowgroup_kernel_name("float32", 4, (4, 2, 1), (4, 8))
            == "spmm_rowgroup<float, int, 4, 2, 1, 4, 8, 4>")
    assert (rowgroup_kernel_name("float32", 4, (4, 2, 1), (4, 8), minb=2)
            == "spmm_rowgroup<float, int, 4, 2, 1, 4, 8, 2>")
    assert (rowgroup_kernel_name("float64", 8, (2, 32, 8), (2, 1))
            == "spmm_rowgroup<double, long long, 2, 32, 8, 2, 1, 2>")
    indptr = np.array([0, 3, 3, 2000, 2010])
    plan = plan_rowgroup(indptr, 2010, 600, "float32", 4, 132)
    # 5 slabs of 120: 30 float4 lanes -> G 32, one load a lane, 2 pairs a lane a stage, 8 X
    # rows in flight; 5 warps, one wave: MINB 2 (wave_minb)
    assert plan.kernel == "spmm_rowgroup<float, int, 4, 32, 1, 2, 8, 2>"
    assert plan.notes["minb"] == "2"
    assert (plan.slab, plan.slabs) == (120, 5)
    assert plan.plan.slice_nnz == 1024 and plan.plan.split_rows == 1  # the 1,997-entry row
    assert plan.notes["zero_fill"] == "yes" and plan.notes["slices"] == "5"
    assert plan.notes["slices_per_warp"] == "1" and plan.notes["index_dtype"] == "int32"
    small = plan_rowgroup(indptr, 2010, 8, "float64", 8, 132, min_slice=4096)
    assert small.kernel == "spmm_rowgroup<double, long long, 2, 4, 1, 4, 8, 2>"
    assert small.plan.split_rows == 0 and small.notes["zero_fill"] == "no"
    assert (small.blocks, small.warps) == (1, 1)


# -- lane-exact emulation ----------------------------------------------------------------------

def launch_transpose(grid, block, args) -> None:
    """One launch of ``transpose_tile<T>`` in NumPy, tile for tile as the kernel indexes: block
    b of the flat grid reads rows [32 (b / ct), +32) x columns [32 (b % ct), +32) of the R x C
    input (ct = ceil(C / 32); bounds checked) and writes them transposed."""
    src, dst, rows, cols = args
    rows, cols = int(rows), int(cols)
    assert tuple(block) == (32, 8) and grid[1] == 1 and grid[0] < 2**31
    a = np.asarray(src).reshape(rows, cols)
    out = np.asarray(dst).reshape(cols, rows)
    col_tiles = -(-cols // 32)
    for b in range(grid[0]):
        r0, c0 = 32 * (b // col_tiles), 32 * (b % col_tiles)
        tile = a[r0:r0 + 32, c0:c0 + 32]
        out[c0:c0 + tile.shape[1], r0:r0 + tile.shape[0]] = tile.T


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (33, 95), (64, 32), (5, 200)])
def test_transpose_emulation_covers_every_value(rows, cols):
    from sparsescope.backends.spmm_transposed import transpose_grid

    a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    out = np.full((cols, rows), np.nan, dtype=np.float32)
    launch_transpose(transpose_grid(rows, cols), (32, 8), (a, out, rows, cols))
    assert np.array_equal(out, a.T)


def test_transposed_traffic_hand_check():
    from sparsescope.backends.spmm_transposed import transpose_grid, transposed_traffic
    from sparsescope.model.traffic import csr_spmm_traffic

    base = csr_spmm_traffic(10, 20, 30, 8)
    t = transposed_traffic(base, 10, 20, 8, 4)
    assert t.x_bytes - base.x_bytes == 1280 and t.y_written_bytes - base.y_written_bytes == 640
    assert t.format.endswith("+ device transposes")
    assert transpose_grid(1000, 33) == (64, 1) and transpose_grid(1, 1) == (1, 1)
    # a Y of 5 M rows: 156,250 row bands, more than grid.y's 65,535, all in grid.x
    assert transpose_grid(5_000_000, 8) == (156_250, 1)

PADS = (np.iinfo(np.int32).min, np.iinfo(np.int64).min)
"""A pad slice's slice_row in the block-sum layout: the index type's least value."""


def launch_rowgroup(template, grid, block, args) -> None:
    """One launch of ``spmm_rowgroup<T, I, VEC, G, CHUNKS, DEPTH, BATCH, MINB[, BLOCKSUM]>`` in
    NumPy, thread for thread as the kernel indexes: blockIdx (x, y), warp = global thread >>
    5, group gi = lane / G owning slice warp x 32 / G + gi (a group past n_slices returns, or
    with BLOCKSUM walks nothing), stages of DEPTH x G pairs (lane li holds pair base + G d +
    li), the group-uniform tail break, entry i read from slot i // G of lane i % G (the
    shuffle), X and Y through flat row-major arrays. BLOCKSUM: a cut row's groups (slice_row
    < 0) leave their sums in the block's shared memory; after the barrier the row's last group
    in the block adds those of the groups before it with the same row and stores; pads (the
    index type's least slice_row) store nothing. ELL (the flag after BLOCKSUM): group s walks
    the ``ell_width`` stored pairs at s x ell_width (no slice pointers), a pad (col -1, val 0)
    gathers X's row 0, and the group stops at the first batch after one that held a pad.
    ``args`` are the kernel's arguments in order; Y is written in place."""
    vec, group, chunks, depth, batch, _minb, *rest = template
    block_sum = bool(rest and rest[0])
    ell = bool(len(rest) > 1 and rest[1])
    n_slices, k, slab, sliced, slice_ptr, slice_row, col, val, x, y, ell_width = args
    n_slices, k, slab, sliced = int(n_slices), int(k), int(slab), int(sliced)
    ell_width = int(ell_width)
    xf, yf = x.reshape(-1), y.reshape(-1)  # views: Y written through
    stage = depth * group
    groups = 32 // group
    li = np.arange(group)
    nnz = col.size
    for by in range(grid[1]):
        slab0 = by * slab
        kk = min(slab, k - slab0)
        for bx in range(grid[0]):
            records = []   # (row, atomic, key, acc) of each live, non-pad group of the block
            for t0 in range(0, block[0], 32):
                warp = (bx * block[0] + t0) >> 5
                for gi in range(groups):
                    s = warp * groups + gi
                    if s >= n_slices:
                        records.append((None, False, -1, None))  # returns / walks nothing
                        continue
                    row, atomic, pad = s, False, False
                    if sliced:
                        r = int(slice_row[s])
                        pad = block_sum and r in PADS
                        atomic, row = r < 0 and not pad, (-r - 1 if r < 0 else r)
                    if ell:
                        begin, end = s * ell_width, (s + 1) * ell_width
                    else:
                        begin, end = int(slice_ptr[s]), int(slice_ptr[s + 1])
                    acc = np.zeros((group, chunks, vec))
                    for base in range(begin, end, stage):
                        my_col = np.zeros((depth, group), dtype=np.int64)
                        my_val = np.zeros((depth, group))
                        for d in range(depth):
                            idx = base + group * d + li
                            have = idx < end
                            my_col[d] = np.where(have, col[np.minimum(idx, nnz - 1)], 0)
                            my_val[d] = np.where(have, val[np.minimum(idx, nnz - 1)], 0.0)
                        n = min(stage, end - base)
                        padded = False
                        for i0 in range(0, stage, batch):
                            if i0 >= n or padded:
                                break
                            a = np.zeros(batch)
                            xv = np.zeros((batch, group, chunks, vec))
                            for b in range(batch):
                                i = i0 + b
                                d = 0 if depth == 1 else i // group
                                e = i % group
                                assert d < depth and e < group
                                j, av = int(my_col[d, e]), my_val[d, e]
                                live = i < n
                                padded |= ell and j < 0
                                j = max(j, 0) if ell else j   # a pad (val 0) gathers row 0
                                a[b] = av if live else 0.0
                                for c in range(chunks):
                                    cc = (li + group * c) * vec
                                    m = live & (cc < kk)
                                    for v in range(vec):
                                        xv[b, m, c, v] = xf[j * k + slab0 + cc[m] + v]
                            for b in range(batch):
                                acc += a[b] * xv[b]
                        if padded:
                            break  # the rest of the row is padding
                    records.append((None if pad else row, atomic, row if atomic else -1, acc))
            for g, (row, atomic, key, acc) in enumerate(records):
                if row is None:
                    continue
                if block_sum and atomic:
                    if g + 1 < len(records) and records[g + 1][2] == key:
                        continue  # not the row's last group in the block
                    acc = acc.copy()
                    before = g - 1
                    while before >= 0 and records[before][2] == key:
                        acc += records[before][3]
                        before -= 1
                    atomic = False
                for lane in li:
                    for c in range(chunks):
                        cc = (lane + group * c) * vec
                        if cc >= kk:
                            continue
                        at = slice(row * k + slab0 + cc, row * k + slab0 + cc + vec)
                        if atomic:
                            yf[at] += acc[lane, c]
                        else:
                            yf[at] = acc[lane, c]


def emulate(csr: sp.csr_matrix, x: np.ndarray, k: int, shape, stages, plan, kslab: int,
            n_slices: int | None = None) -> np.ndarray:
    """The launch the backend makes for ``plan`` (grid from :func:`rowgroup_grid`), on a
    NaN-poisoned Y (zeroed when rows are cut, as the host's memset). ``n_slices`` launches
    fewer slices than the plan holds (a dropped slice)."""
    total = plan.n_slices if n_slices is None else n_slices
    blocks, warps = rowgroup_grid(plan.n_slices, shape[1], 132)
    y = np.full((csr.shape[0], k), np.nan)
    if plan.split_rows:
        y[:] = 0.0
    slice_row = plan.slice_row if plan.slice_row is not None else plan.slice_ptr
    args = (total, k, kslab, int(plan.split_rows > 0), plan.slice_ptr, slice_row,
            csr.indices, csr.data, np.ascontiguousarray(x), y, 0)
    launch_rowgroup((*shape, *stages, 2), (blocks, -(-k // kslab)), (32 * warps,), args)
    return y


def _matrix(rows: int, cols: int, seed: int, long_row: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 12, size=rows)
    lengths[::5] = 0  # empty rows must still be written (zeros)
    if long_row:
        lengths[rows // 2] = long_row
    lengths = np.minimum(lengths, cols)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = np.concatenate([np.sort(rng.choice(cols, n, replace=False)) for n in lengths])
    return sp.csr_matrix((rng.random(indptr[-1]) * 2 - 1, indices, indptr), shape=(rows, cols))


@pytest.mark.parametrize("k", [1, 3, 6, 8, 33, 64, 256, 600])
@pytest.mark.parametrize("slice_nnz", [16, 4096])
def test_emulated_kernel_matches_the_reference(k, slice_nnz):
    csr = _matrix(37, 150, seed=k, long_row=140)  # 37 rows: partial warps for every G
    rng = np.random.default_rng(k + 1)
    x = rng.random((150, k)) * 2 - 1
    kslab = choose_slab_cols(k, "float32")
    shape = rowgroup_shape(kslab, vector_width(k, "float32"))
    plan = slice_plan(csr.indptr, slice_nnz)
    assert (plan.split_rows > 0) == (slice_nnz == 16)
    y = emulate(csr, x, k, shape, rowgroup_pipeline(shape), plan, kslab)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k,slab,depth,batch", [(8, 4, 1, None), (12, 12, 2, None),
                                                 (64, 32, None, None), (40, 8, 4, None),
                                                 (64, None, None, 4), (8, None, 1, 1)])
def test_emulated_overrides_match_the_reference(k, slab, depth, batch):
    csr = _matrix(9, 40, seed=k + (slab or 0), long_row=35)
    x = np.random.default_rng(3).random((40, k))
    kslab = choose_slab_cols(k, "float64", slab)
    shape = rowgroup_shape(kslab, vector_width(k, "float64"))
    plan = slice_plan(csr.indptr, 8)
    y = emulate(csr, x, k, shape, rowgroup_pipeline(shape, depth, batch), plan, kslab)
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k,vec,group", [(64, 2, 32), (64, 1, 32), (8, 2, 4), (8, 1, 8),
                                          (6, 1, 8)])
def test_emulated_narrower_vec_matches_the_reference(k, vec, group):
    """``vec`` below the rule's: more lanes a row slice (k = 64, float2: G 32, one slice a
    warp; float: G 32 and two loads a lane), the same sums."""
    csr = _matrix(37, 150, seed=k + vec, long_row=140)
    x = np.random.default_rng(vec).random((150, k)) * 2 - 1
    host = plan_rowgroup(csr.indptr, csr.nnz, k, "float32", 4, 132, vec=vec)
    assert host.shape[:2] == (vec, group) and host.notes["vec"] == str(vec)
    y = emulate(csr, x, k, host.shape, host.stages, slice_plan(csr.indptr, 16), host.slab)
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


def test_vector_width_takes_a_narrower_vec_that_divides_k():
    assert vector_width(64, "float32", 2) == 2 and vector_width(64, "float32") == 4
    assert vector_width(6, "float32", 1) == 1
    for k, dtype, vec in ((6, "float32", 4), (64, "float64", 4), (64, "float32", 3)):
        with pytest.raises(ValueError, match="vec must be"):
            vector_width(k, dtype, vec)


def test_auto_offers_narrower_vec_on_a_grid_under_one_wave():
    """1,723 rows of about 4 (bcspwr09-like) on 132 SMs: at k = 64 (float4, G 16: 862 warps,
    under the 8,448 of a wave) float2 lanes give G 32, a warp a row; float lanes give no more
    lanes (G 32 again), so only vec 2. At k = 8 (float4, G 2): vec 2 (G 4) and 1 (G 8). At
    k = 256 (G 32 already) none. On one SM (a wave of 64 warps) none. Each plan of the rule's
    VEC or a narrower one is offered again on ELL rows (rows of 3-5: padding 5 / 4 = 1.25,
    within the limit), and a matrix with one long row (padding above it) gets none."""
    from sparsescope.backends.spmm_auto_candidates import candidate_plans

    indptr = np.concatenate(([0], np.cumsum(np.tile([3, 4, 5, 4], 431)[:1723])))
    nnz = int(indptr[-1])

    def labels(k, sms):
        return [c.label for c, _ in candidate_plans(indptr, nnz, k, "float32", 4, sms, 2)]

    assert labels(64, 132) == ["spmm-cuda-rowgroup", "spmm-cuda-rowgroup[vec=2]",
                               "spmm-cuda-rowgroup[ell=1]", "spmm-cuda-rowgroup[ell=1,vec=2]",
                               "spmm-cuda-rowwarp"]
    assert labels(8, 132)[1:6] == ["spmm-cuda-rowgroup[vec=2]", "spmm-cuda-rowgroup[vec=1]",
                                   "spmm-cuda-rowgroup[ell=1]", "spmm-cuda-rowgroup[ell=1,vec=2]",
                                   "spmm-cuda-rowgroup[ell=1,vec=1]"]
    assert "vec" not in " ".join(labels(256, 132))
    over_wave = labels(64, 1)
    assert "vec" not in " ".join(over_wave) and "spmm-cuda-rowgroup[ell=1]" in over_wave
    indptr = np.concatenate((indptr, [nnz + 500]))   # a row of 500: ELL padding ~ 72
    nnz += 500
    assert "ell" not in " ".join(labels(64, 132))


def test_emulated_single_row_and_a_dropped_slice_shows_as_nan():
    csr = _matrix(1, 50, seed=5, long_row=45)
    x = np.random.default_rng(2).random((50, 6))
    shape = rowgroup_shape(6, 2)
    plan = slice_plan(csr.indptr, 4096)
    y = emulate(csr, x, 6, shape, rowgroup_pipeline(shape), plan, 6)
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12)
    many = _matrix(20, 50, seed=6)
    plan = slice_plan(many.indptr, 4096)
    y = emulate(many, np.ones((50, 6)), 6, shape, rowgroup_pipeline(shape), plan, 6,
                n_slices=plan.n_slices - 1)
    assert np.isnan(y[-1]).all() and not np.isnan(y[:-1]).any()


# -- column-major kernel (spmm-cuda-colmajor) --------------------------------------------------

from sparsescope.backends.spmm_colmajor import (  # noqa: E402
    colmajor_grid,
    colmajor_kernel_name,
    colmajor_slice_nnz,
    colmajor_tile,
    plan_colmajor,
)


@pytest.mark.parametrize(("k", "tile"), [
    (1, (1, 8)), (2, (2, 8)), (3, (4, 4)), (6, (8, 2)), (8, (8, 2)), (33, (8, 2)),
    (256, (8, 2)), (600, (8, 2)),
])
def test_colmajor_tile(k, tile):
    assert colmajor_tile(k) == tile
    assert tile[0] * tile[1] <= 16


def test_colmajor_slice_nnz():
    assert colmajor_slice_nnz(10_000, 50_000) == 32      # mean 5: nothing under 32 is cut
    assert colmajor_slice_nnz(1_000, 100_000) == 224     # mean 100: 2 x 100 -> 224
    assert colmajor_slice_nnz(0, 0) == 32
    assert colmajor_slice_nnz(10, 100, min_slice=4096) == 4096


def test_colmajor_grid_and_name():
    assert colmajor_grid(10_000, 256, 8, 132) == (79, 32, 4)
    assert colmajor_grid(33, 3, 4, 132) == (2, 1, 1)
    assert colmajor_grid(0, 1, 1, 132) == (1, 1, 1)
    assert colmajor_grid(100_000, 600, 8, 132, warps=8) == (391, 75, 8)
    assert colmajor_kernel_name("float32", 4, (8, 2)) == "spmm_colmajor<float, int, 8, 2>"
    assert (colmajor_kernel_name("float64", 8, (1, 8))
            == "spmm_colmajor<double, long long, 1, 8>")
    plan = plan_colmajor(np.array([0, 3, 3, 100, 110]), 110, 3, "float32", 4, 132)
    # 2 x 27.5 -> S = 64: the 97-entry row cut into 2 slices inside the warp, no pad
    assert plan.plan.slice_nnz == 64 and plan.notes["split_rows"] == "1"
    assert plan.plan.split_rows == 0 and plan.notes["rows_across_warps"] == "0"
    assert plan.notes["slices"] == "5" and plan.notes["zero_fill"] == "no"
    assert plan.notes["cut_row_sum"] == "warp scan (1 steps), stored by the row's last lane"
    assert plan.kernel == "spmm_colmajor<float, int, 4, 4, true>" and plan.tiles == 1
    assert plan.span == 2


def launch_colmajor(template, grid, block, args) -> None:
    """One launch of ``spmm_colmajor<T, I, C, BATCH>`` in NumPy, warp for warp and lane for
    lane: slice s = blockIdx.x x blockDim + threadIdx (past n_slices: no pairs), tile c0 =
    blockIdx.y x C, BATCH pairs a step, X[j, c] = x[c * cols + j] and Y[i, c] = y[c * rows +
    i] on the flat arrays the backend uploads (k x cols and k x rows, C-ordered). With SEG
    (``template[2]``), the warp's segmented inclusive scan of ``log2(span)`` steps (a row's
    consecutive lanes one segment; pads and lanes past the end key -1), and only a segment's
    last lane writes Y: a store, or an add for a row across warps (slice_row < 0). With ELL
    (``template[3]``), lane s walks the ``ell_width`` stored pairs at s x ell_width, a pad
    (col -1, val 0) gathers X's row 0, and the lane stops after its first batch holding a
    pad. Y written in place."""
    c_tile, batch, *rest = template
    seg = bool(rest and rest[0])  # the kernel's SEG
    ell = bool(len(rest) > 1 and rest[1])
    n_slices, rows, cols, k, sliced, span, slice_ptr, slice_row, col, val, x, y, width = args
    n_slices, rows, cols, k, sliced, span = (int(v) for v in (n_slices, rows, cols, k, sliced,
                                                              span))
    width = int(width)
    xf, yf = x.reshape(-1), y.reshape(-1)
    for by in range(grid[1]):
        c0 = by * c_tile
        cn = min(c_tile, k - c0)
        for bx in range(grid[0]):
            for w in range(0, block[0], 32):
                lanes = []  # (live, atomic, row, key, acc) per lane of the warp
                for t in range(w, w + 32):
                    s = bx * block[0] + t
                    live = s < n_slices
                    row, atomic, pad = s, False, False
                    acc = np.zeros(c_tile)
                    if live:
                        if sliced:
                            r = int(slice_row[s])
                            pad = r < -rows
                            atomic, row = r < 0 and not pad, (-r - 1 if r < 0 else r)
                        begin, end = ((s * width, (s + 1) * width) if ell else
                                      (int(slice_ptr[s]), int(slice_ptr[s + 1])))
                        for base in range(begin, end, batch):
                            padded = False
                            for b in range(batch):
                                if base + b >= end:
                                    continue
                                j, a = int(col[base + b]), val[base + b]
                                padded |= j < 0
                                j = max(j, 0)   # a pad (val 0) gathers X's row 0
                                for c in range(cn):
                                    acc[c] += a * xf[(c0 + c) * cols + j]
                            if padded:
                                break
                    key = row if live and not pad else -1
                    lanes.append([live and not pad, atomic, row, key, acc])
                if seg:
                    off = 1
                    while off < span:  # the shuffles read the values before this step
                        before = [lane[4].copy() for lane in lanes]
                        for i in range(off, 32):
                            if lanes[i - off][3] == lanes[i][3]:
                                lanes[i][4] += before[i - off]
                        off *= 2
                for i, (live, atomic, row, key, acc) in enumerate(lanes):
                    if not live:
                        continue
                    if seg and i < 31 and lanes[i + 1][3] == key:
                        continue  # not the segment's last lane
                    for c in range(cn):
                        at = (c0 + c) * rows + row
                        yf[at] = yf[at] + acc[c] if atomic else acc[c]


def emulate_colmajor(csr: sp.csr_matrix, x: np.ndarray, k: int, host) -> np.ndarray:
    """The launch the backend makes for a :func:`plan_colmajor` plan, Y poisoned first; on ELL
    rows (``host.ell_width``) the padded pairs (``spmm_ell_format.ell_format``) and slice pointers
    given as NaN (never read)."""
    from sparsescope.backends.spmm_ell_format import ell_format

    rows, cols = csr.shape
    plan = host.plan
    y = np.full((k, rows), np.nan)
    if plan.split_rows:
        y[:] = 0.0
    slice_row = plan.slice_row if plan.slice_row is not None else plan.slice_ptr
    ptr, col, val = plan.slice_ptr, csr.indices, csr.data
    if host.ell:
        fmt = ell_format(csr.indptr, csr.indices, csr.data)
        assert fmt.width == host.ell_width
        ptr = slice_row = np.full(1, np.nan)
        col, val = fmt.col, fmt.val
    args = (plan.n_slices, rows, cols, k, int(plan.slice_row is not None), host.span,
            ptr, slice_row, col, val, np.ascontiguousarray(np.asarray(x).T), y, host.ell_width)
    seg = host.kernel.endswith(", true>") and not host.ell
    launch_colmajor((*host.tile, seg, host.ell), (host.blocks, host.tiles), (32 * host.warps,),
                    args)
    return y.T


@pytest.mark.parametrize("k", [1, 3, 8, 33])
@pytest.mark.parametrize("lengths", [(3, 0, 5, 1, 4), (40, 1, 0, 33, 2), (16,), (0, 0)])
def test_emulated_colmajor_ell_matches_the_reference(k, lengths):
    """colmajor on ELL rows (a lane a row, no slice pointers): rows of 0 to 40 pairs (many
    batches of pads for the short ones, each lane stopping at its own row's end) against the
    float64 product; the ELL instance, no scan, no zero fill, no pointer round in the model."""
    from sparsescope.backends.spmm_colmajor import colmajor_launch

    rng = np.random.default_rng(k + len(lengths))
    rows = np.repeat(np.arange(len(lengths) * 7), np.tile(lengths, 7))
    cols = np.concatenate([rng.choice(50, n, replace=False) for n in np.tile(lengths, 7)])
    csr = sp.csr_matrix((rng.random(rows.size) * 2 - 1, (rows, cols)),
                        shape=(len(lengths) * 7, 50))
    x = np.asfortranarray(rng.random((50, k)) * 2 - 1)
    host = plan_colmajor(csr.indptr, csr.nnz, k, "float64", 8, 132, ell=True)
    assert host.kernel.endswith(", false, true>") and host.span == 1
    assert host.plan.n_slices == csr.shape[0] and host.plan.split_rows == 0
    assert host.notes["pointer_rounds"] == "0" and host.notes["zero_fill"] == "no"
    launch = colmajor_launch(host)
    assert (launch.pointer_rounds, launch.ell_width) == (0, host.ell_width)
    y = emulate_colmajor(csr, x, k, host)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="ell cuts no row"):
        plan_colmajor(csr.indptr, csr.nnz, k, "float64", 8, 132, ell=True, slice_nnz=4)


@pytest.mark.parametrize("k", [1, 3, 6, 33])
def test_emulated_colmajor_matches_the_reference(k):
    csr = _matrix(37, 60, seed=k, long_row=55)
    x = np.asfortranarray(np.random.default_rng(k).random((60, k)) * 2 - 1)
    plan = plan_colmajor(csr.indptr, csr.nnz, k, "float64", 8, 132)
    # the 55-entry row is cut (S = 32) inside its warp: one launch, Y poisoned, no atomics
    assert plan.notes["split_rows"] == "1" and plan.notes["zero_fill"] == "no"
    y = emulate_colmajor(csr, x, k, plan)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


def test_colmajor_short_slices_and_deep_batches():
    """short_slices: deep = min(8, 2 x BATCH); S = max(deep, round_up(ceil(nnz / rows), deep))."""
    from sparsescope.backends.spmm_colmajor import short_slices

    assert colmajor_tile(8, batch=4) == (8, 4)
    with pytest.raises(ValueError, match="batch must be 1 to 8"):
        colmajor_tile(8, batch=16)
    assert short_slices(13_436, 99_000, 8) == {"slice_nnz": 8, "batch": 4}  # mean 7.4 -> 8
    assert short_slices(1_000, 21_000, 8) == {"slice_nnz": 24, "batch": 4}  # mean 21 -> 24
    assert short_slices(1_000, 3_000, 1) == {"slice_nnz": 8, "batch": 8}    # BATCH 8 already
    assert short_slices(0, 0, 3) == {"slice_nnz": 8, "batch": 8}            # k = 3: BATCH 4
    plan = plan_colmajor(np.array([0, 3, 3, 100, 110]), 110, 8, "float32", 4, 132,
                         slice_nnz=8, batch=4)
    # rows of 3, 0, 97, 10 cut at 8: 1 + 1 + 13 + 2 slices, two rows cut, each in one warp
    assert (plan.plan.n_slices, plan.notes["split_rows"], plan.span) == (17, "2", 16)
    assert plan.kernel == "spmm_colmajor<float, int, 8, 4, true>"
    assert plan.notes["slice_rule"] == "S = 8 (given)"


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("k", [1, 8, 33])
def test_emulated_colmajor_with_short_slices_matches_the_reference(k, aligned):
    """Short slices cut most rows: kept inside their warps (pads, the scan, stores) or, not
    aligned, summed with an atomic a slice into a zero-filled Y."""
    from sparsescope.backends.spmm_colmajor import short_slices

    csr = _matrix(37, 60, seed=k, long_row=55)
    x = np.asfortranarray(np.random.default_rng(k).random((60, k)) * 2 - 1)
    short = short_slices(csr.shape[0], csr.nnz, k)
    plan = plan_colmajor(csr.indptr, csr.nnz, k, "float64", 8, 132, aligned=aligned, **short)
    assert plan.notes["zero_fill"] == ("no" if aligned else "yes")
    assert int(plan.notes["split_rows"]) > 1 and plan.tile[1] == short["batch"]
    y = emulate_colmajor(csr, x, k, plan)
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


def test_emulated_colmajor_sums_a_row_cut_across_warps_once_a_warp():
    """An arrowhead's dense row (row 5: 400 nonzeros) cut into 4-pair slices spans 100
    consecutive lanes over four warps, beside whole rows on either side: each warp adds its
    segment's sum once per column (the atomics this saves are the kernel's business; the
    sums must still be the row's)."""
    rng = np.random.default_rng(3)
    dense = np.zeros((40, 400))
    dense[5] = rng.random(400) + 0.5
    for i in range(40):
        dense[i, rng.integers(0, 400, 3)] = rng.random(3) + 0.5
    csr = sp.csr_matrix(dense)
    x = np.asfortranarray(rng.random((400, 8)) * 2 - 1)
    plan = plan_colmajor(csr.indptr, csr.nnz, 8, "float64", 8, 132, slice_nnz=4, batch=4)
    cut = plan.plan.slice_row < 0
    assert plan.plan.split_rows >= 1 and int(cut.sum()) >= 100
    assert plan.kernel.endswith(", true>") and plan.notes["cut_row_sum"].startswith("warp")
    y = emulate_colmajor(csr, x, 8, plan)
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


def test_auto_plans_short_slices_on_any_grid_and_narrow_tiles_on_one_wave():
    from sparsescope.backends.spmm_auto_candidates import SM_THREADS, colmajor_plans

    small = _matrix(37, 60, seed=1, long_row=55)
    found = colmajor_plans(small.indptr, small.nnz, 8, "float32", 4, 132)
    # short slices (the mean row, 8) and fitted ones (the 55-entry row in 32: 4)
    assert [c.params for c, _ in found] == [{}, short_slices_of(small, 8),
                                            {"slice_nnz": 4, "batch": 4}, {"tile_cols": 1}]
    # one SM's worth of lanes and a row more: two waves' worth on a 1-SM device: short
    # slices still (mean 3.2 -> 4; fitted ones no shorter: the longest row, 10, -> 4) and,
    # over a wave, twice as long ones (8); no narrower tiles
    rows = SM_THREADS + 1
    many = sp.random(rows, 64, density=0.05, format="csr", random_state=2)
    assert short_slices_of(many, 8) == {"slice_nnz": 4, "batch": 4}
    assert [c.params for c, _ in colmajor_plans(many.indptr, many.nnz, 8, "float32", 4, 1)] == [
        {}, {"slice_nnz": 4, "batch": 4}, {"slice_nnz": 8, "batch": 4}, {"ell": 1}]
    # on 2 SMs one wave of lanes; 9 blocks of 8 warps (72) already fill the cap's wave (2 x 8
    # warps), so no narrower tiles (the plain, short-slice and ELL plans only)
    assert len(colmajor_plans(many.indptr, many.nnz, 8, "float32", 4, 2)) == 3


def short_slices_of(csr, k):
    from sparsescope.backends.spmm_colmajor import short_slices

    return short_slices(csr.shape[0], csr.nnz, k)


# -- spmm-cuda-auto's rule ---------------------------------------------------------------------

from sparsescope.backends.spmm_auto import (  # noqa: E402
    choose_spmm_kernel,
    row_lengths,
    rowwarp_supports,
)


def test_row_lengths():
    assert row_lengths(np.array([0, 3, 3, 10])) == (10 / 3, 7)
    assert row_lengths(np.array([0])) == (0.0, 0)


def test_rowwarp_supports():
    assert rowwarp_supports(255, "float32") and rowwarp_supports(256, "float64")
    assert not rowwarp_supports(4095, "float32")  # VEC 1, no 32-column slab: 128 loads


@pytest.mark.parametrize(("args", "chosen", "words"), [
    # (k, layout, dtype, nnz, rows, mean, max, SMs)
    ((8, "col", "float32", 1000, 100, 10.0, 20, 132), "spmm-cuda-transposed", "transposed"),
    ((8, "row", "float32", 0, 100, 0.0, 0, 132), "spmm-cuda-rowgroup", "no nonzeros"),
    # a DLMC layer: 512 rows of 300; rowgroup G = 2 -> 32 warps < 1,056
    ((8, "row", "float32", 153_600, 512, 300.0, 400, 132), "spmm-cuda-rowwarp", "32 warps"),
    # the same at k = 256: G = 32 -> 512 warps, still < 1,056
    ((256, "row", "float32", 153_600, 512, 300.0, 400, 132), "spmm-cuda-rowwarp", "512 warps"),
    # a web graph: 326,000 rows, mean 4.6, one row of 10,000
    ((256, "row", "float32", 1_500_000, 326_000, 4.6, 10_000, 132), "spmm-cuda-rowgroup",
     "32 lanes"),
    ((64, "row", "float64", 1_500_000, 326_000, 4.6, 10_000, 132), "spmm-cuda-rowgroup",
     "32 lanes"),
    # ... at k = 8 too: its long row no longer sends it to rowwarp (v3, measured)
    ((8, "row", "float32", 1_500_000, 326_000, 4.6, 10_000, 132), "spmm-cuda-rowgroup",
     "rows average 4.6 < 32"),
    # FEM: 100,000 rows of 20-40
    ((8, "row", "float32", 2_000_000, 100_000, 20.0, 40, 132), "spmm-cuda-rowgroup",
     "16 rows a warp"),
    ((1, "row", "float32", 2_000_000, 100_000, 20.0, 40, 132), "spmm-cuda-rowgroup",
     "32 rows a warp"),
    # long-ish rows, many of them, small k: rowwarp's defaults
    ((8, "row", "float32", 10_000_000, 200_000, 50.0, 300, 132), "spmm-cuda-rowwarp",
     "defaults"),
    # k = 9 (odd): 9 lanes -> G 16 -> rowgroup
    ((9, "row", "float32", 10_000_000, 200_000, 50.0, 300, 132), "spmm-cuda-rowgroup",
     "16 lanes"),
    # rowwarp would refuse k = 4095: never chosen
    ((4095, "row", "float32", 153_600, 512, 300.0, 400, 132), "spmm-cuda-rowgroup",
     "32 lanes"),
])
def test_choose_spmm_kernel(args, chosen, words):
    name, reason = choose_spmm_kernel(*args)
    assert name == chosen and words in reason, reason
    assert "\n" not in reason


def test_auto_rule_uses_the_sm_count():
    # 20,000 rows of 40, k = 8: G = 2 -> 1,250 warps: enough for 132 SMs, not for 200
    args = (8, "row", "float32", 800_000, 20_000, 40.0, 60)
    assert choose_spmm_kernel(*args, 132)[0] == "spmm-cuda-rowwarp"  # rule 6
    assert "1250 warps" in choose_spmm_kernel(*args, 200)[1]           # rule 3


def emulate_block_sum(csr: sp.csr_matrix, x: np.ndarray, k: int, host) -> np.ndarray:
    """The launch the backend makes for a ``block_sum`` plan (its grid, block and BLOCKSUM
    instance), on a NaN-poisoned Y: no zero fill, so a row left unstored stays NaN."""
    from sparsescope.backends.spmm_rowgroup import kernel_minb

    y = np.full((csr.shape[0], k), np.nan)
    plan = host.plan
    slice_row = plan.slice_row if plan.slice_row is not None else plan.slice_ptr
    args = (plan.n_slices, k, host.slab, int(plan.slice_row is not None), plan.slice_ptr,
            slice_row, csr.indices, csr.data, np.ascontiguousarray(x), y, 0)
    launch_rowgroup((*host.shape, *host.stages, kernel_minb(host.kernel),
                     host.kernel.endswith("true>")), (host.blocks, host.slabs),
                    (32 * host.warps,), args)
    return y


def emulate_ell(csr: sp.csr_matrix, x: np.ndarray, k: int, host) -> np.ndarray:
    """The launch the backend makes for an ``ell`` plan: the ELL instance on the padded pairs
    (``spmm_ell_format.ell_format``, col -1 in the padding), slice pointers never read (given as
    NaN to prove it), on a NaN-poisoned Y."""
    from sparsescope.backends.spmm_ell_format import ell_format
    from sparsescope.backends.spmm_rowgroup import kernel_minb

    fmt = ell_format(csr.indptr, csr.indices, csr.data)
    assert fmt.width == host.ell_width
    y = np.full((csr.shape[0], k), np.nan)
    unread = np.full(1, np.nan)
    args = (host.plan.n_slices, k, host.slab, 0, unread, unread, fmt.col, fmt.val,
            np.ascontiguousarray(x), y, host.ell_width)
    launch_rowgroup((*host.shape, *host.stages, kernel_minb(host.kernel), False, True),
                    (host.blocks, host.slabs), (32 * host.warps,), args)
    return y


@pytest.mark.parametrize("k", [1, 3, 8, 64, 256])
@pytest.mark.parametrize("lengths", [(3, 0, 5, 1, 4), (40, 1, 0, 33, 2), (16,), (0, 0)])
def test_emulated_ell_matches_the_reference(k, lengths):
    """ell: A as row-major ELL, a group a row, no slice pointers; rows of 0 to 40 pairs (a row
    over several stages, an empty row, a row filling its stage exactly: 16 pairs at G 16 x
    DEPTH 2 = 32 is a part stage, at k = 8 G 2 x DEPTH 4 = 8 two whole ones) against the
    float64 product, every row of Y stored."""
    rng = np.random.default_rng(k + len(lengths))
    rows = np.repeat(np.arange(len(lengths) * 7), np.tile(lengths, 7))
    cols = np.concatenate([rng.choice(50, n, replace=False) for n in np.tile(lengths, 7)])
    csr = sp.csr_matrix((rng.random(rows.size) * 2 - 1, (rows, cols)),
                        shape=(len(lengths) * 7, 50))
    x = rng.random((50, k)) * 2 - 1
    host = plan_rowgroup(csr.indptr, csr.nnz, k, "float32", 4, 132, ell=True)
    assert host.plan.n_slices == csr.shape[0] and host.plan.split_rows == 0
    y = emulate_ell(csr, x, k, host)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


def test_ell_plan_name_notes_and_launch():
    """An ``ell`` plan by hand: rows of 3, 0, 5 and 1 pairs, k = 64 float32: the longest row 5
    -> the ELL kernel's G 8 -> stored width 8; VEC 4, G 16, one load a lane (the plain
X (", false,
    true") at MINB 2 (ELL_MINB, on any grid); the model's launch has no pointer round and
    stops at a pad; block_sum or slice sizes with ell are refused."""
    from sparsescope.backends.spmm_rowgroup import rowgroup_launch

    indptr = np.array([0, 3, 3, 8, 9])
    host = plan_rowgroup(indptr, 9, 64, "float32", 4, 132, ell=True)
    assert host.kernel == "spmm_rowgroup<float, int, 4, 16, 1, 2, 8, 2, false, true>"
    assert host.ell_width == 8 and host.plan.slice_nnz == 5
    assert (host.blocks, host.warps) == (2, 1)
    assert host.notes["ell_width"] == "8" and host.notes["pointer_rounds"] == "0"
    assert host.notes["slice_rule"] == "a row a group (ELL)"
    assert host.notes["zero_fill"] == "no"
    launch = rowgroup_launch(host)
    assert (launch.pointer_rounds, launch.ell_width, launch.walks_padding) == (0, 8, False)
    plain = rowgroup_launch(plan_rowgroup(indptr, 9, 64, "float32", 4, 132))
    assert (plain.pointer_rounds, plain.ell_width) == (1, 0)
    # over a wave (20,000 rows on one SM: 10,000 warps) still ELL_MINB, where slices take 4
    many = np.arange(0, 60_001, 3)
    assert plan_rowgroup(many, 60_000, 64, "float32", 4, 1, ell=True).notes["minb"] == "2"
    assert plan_rowgroup(many, 60_000, 64, "float32", 4, 1).notes["minb"] == "4"
    for options in ({"block_sum": True}, {"slice_nnz": 4}, {"min_slice": 32}):
        with pytest.raises(ValueError, match="ell cuts no row"):
            plan_rowgroup(indptr, 9, 64, "float32", 4, 132, ell=True, **options)


@pytest.mark.parametrize("k", [1, 8, 64, 600])
@pytest.mark.parametrize("long_row", [140, 3000])
def test_block_sum_keeps_cut_rows_in_their_block_and_matches(k, long_row):
    """block_sum: the rows the slice rule cuts (S = 32: the 140- or 3,000-nonzero row, and at
    most the 12-nonzero others whole) are summed by their block in shared memory: no zero
    fill, Y poisoned, the float64 product; every cut row's slices inside one block; the
    BLOCKSUM instance at MINB 2; its shared memory the cut sums and the group keys."""
    from sparsescope.backends.spmm_rowgroup import BLOCK_SUM_MINB, kernel_minb

    csr = _matrix(300, 3100, seed=k, long_row=long_row)
    x = np.random.default_rng(k).random((3100, k)) * 2 - 1
    host = plan_rowgroup(csr.indptr, csr.nnz, k, "float32", 4, 132, min_slice=32,
                         block_sum=True)
    assert host.kernel.endswith(", true>") and kernel_minb(host.kernel) == BLOCK_SUM_MINB
    assert host.notes["zero_fill"] == "no" and host.plan.split_rows == 0
    assert host.notes["split_rows"] == "1"
    assert host.notes["cut_row_sum"].startswith("1 row(s) summed in shared memory")
    vec, group, chunks = host.shape
    threads = 32 * host.warps
    assert host.shared_bytes == threads * vec * chunks * 4 + threads // group * 8
    per_block = 32 // group * host.warps
    cut = np.flatnonzero(host.plan.slice_row == -(300 // 2 + 1))
    assert cut.size > 1 and cut[0] // per_block == cut[-1] // per_block
    y = emulate_block_sum(csr, x, k, host)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


def test_block_sum_slices_size_the_block_pad_and_fit():
    """block_sum_slices by hand: G 2 (16 groups a warp). A 632-nonzero row at S 32 has 20
    slices -> 2 warps (32 groups); at S 4, 158 slices are more than 8 warps' 128 groups ->
    8 warps, the row cut into 128 slices of round_up(ceil(632 / 128), 2) = 6 pairs (106 of
    them) in whole groups. 30 rows of 1, then a row of 70 at S 32 (3 slices), with 1-warp
    blocks (16 groups): the row would take groups 30-32 of blocks of 32 (2 warps): fits; with
    warps = 1 it would straddle groups 14-16 -> 2 pads, the pads at the index type's least
    value; nothing cut -> None."""
    from sparsescope.backends.spmm_rowgroup import block_sum_slices

    long = np.concatenate(([0], np.cumsum([3] * 100 + [632] + [3] * 100)))
    assert block_sum_slices(long, 32, 2, 1, 4).warps == 2
    fitted = block_sum_slices(long, 4, 2, 1, 4)
    assert fitted.warps == 8
    cut = np.flatnonzero(fitted.plan.slice_row == -101)
    assert cut.size == 106 and (np.diff(fitted.plan.slice_ptr)[cut] <= 6).all()
    short = np.concatenate(([0], np.cumsum([1] * 14 + [70] + [1] * 5)))
    padded = block_sum_slices(short, 32, 2, 1, 4, warps=1)
    assert (padded.warps, padded.pads, padded.cut_rows) == (1, 2, 1)
    least = np.iinfo(np.int32).min
    assert padded.plan.slice_row.tolist()[14:19] == [least, least, -15, -15, -15]
    assert block_sum_slices(short, 32, 2, 1, 8, warps=1).plan.slice_row[14] == \
        np.iinfo(np.int64).min
    assert block_sum_slices(np.arange(0, 40, 4), 32, 2, 1, 4) is None


@pytest.mark.parametrize("k", [8, 64])
def test_rowgroup_slice_nnz_given_with_block_sum_matches(k):
    """slice_nnz: S as given, below the slice rule's floor of 32 (8: a stage of pairs at
    k = 8), most rows of up to 12 cut, each inside its block and summed there; the product
    matches on a NaN-poisoned Y; 0 is refused."""
    csr = _matrix(300, 700, seed=k, long_row=632)
    x = np.random.default_rng(k).random((700, k)) * 2 - 1
    host = plan_rowgroup(csr.indptr, csr.nnz, k, "float32", 4, 132, slice_nnz=8,
                         block_sum=True)
    assert host.plan.slice_nnz == 8 and host.notes["slice_rule"] == "S = 8 (given)"
    assert int(host.notes["split_rows"]) > 50 and host.notes["zero_fill"] == "no"
    y = emulate_block_sum(csr, x, k, host)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="slice_nnz must be >= 1"):
        plan_rowgroup(csr.indptr, csr.nnz, k, "float32", 4, 132, slice_nnz=0)


def test_a_batch_override_the_stage_does_not_hold_is_a_skip_with_its_reason():
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
    from sparsescope.ops.registry import get_op

    op = get_op("spmm")
    case = op.make_case(_matrix(20, 30, seed=1), {"k": 64, "layout": "row"}, seed=1)
    # float32 k = 64: G 16, DEPTH 2, a stage of 32 pairs
    assert SpmmCudaRowGroup(batch=4).unsupported_params(case) == ""
    assert SpmmCudaRowGroup(batch=64).unsupported_params(case) == (
        "batch must be a power of two dividing DEPTH x G = 32, got 64")
    plan = SpmmCudaRowGroup(batch=4).plan(case, "float32", 4, 132)
    assert plan.stages == (2, 4) and plan.kernel == "spmm_rowgroup<float, int, 4, 16, 1, 2, 4, 2>"
