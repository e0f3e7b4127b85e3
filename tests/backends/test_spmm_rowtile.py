"""The row-tile SpMM kernel (``spmm-cuda-rowtile``) without a GPU: its packed format against a
NumPy reference on awkward matrices, a NumPy emulation of the kernel's block / item / stage
index arithmetic run on the arrays the backend uploads (unstaged shared memory reads as NaN, so
a stored value that used one fails), the launch geometry and options, the tile rule's
hand-worked numbers, auto's candidate rule both ways, and the backend end to end through the
op runner's float64 gate on a fake device."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.runner import run_case
from sparsescope.backends.spmm_rowtile import (
    SpmmCudaRowTile,
    check_options,
    choose_splits,
    choose_tile,
    launch_stages,
    plan_rowtile,
    rowtile_kernel_name,
    rowtile_pays,
    vec_options,
)
from sparsescope.backends.spmm_rowtile_format import (
    entries_array,
    item_counts,
    pack_rowtile,
    tile_x_rows,
)
from sparsescope.matrices.types import Matrix
from sparsescope.model.rowtile import copy_width, rowtile_smem_bytes
from sparsescope.timing.types import TimingConfig

sys.path.insert(0, str(Path(__file__).parent))
from test_spmm_rowgroup_fake_device import _fake_cupy, _Kernel, _rates, _timed  # noqa: E402

QUICK = TimingConfig(warmups=1, repeats=1)


def _canonical(csr) -> sp.csr_matrix:
    csr = sp.csr_matrix(csr, dtype=np.float64)
    csr.sum_duplicates()
    csr.sort_indices()
    csr.data = np.where(csr.data == 0, 0.5, csr.data)
    return csr


def _awkward() -> list[tuple[str, sp.csr_matrix]]:
    """Empty rows, one huge row, n = 1, sizes not a multiple of 32 / R / C, a tile with no
    nonzeros (rows 16-47 empty), a dense block, a single entry, one column."""
    rng = np.random.default_rng(7)
    out = []
    empty = sp.random(100, 70, density=0.2, format="lil", random_state=rng)
    empty[16:48, :] = 0
    out.append(("empty-tiles-100x70", empty.tocsr()))
    heavy = sp.random(45, 300, density=0.02, format="lil", random_state=rng)
    heavy[20, :] = rng.random(300) + 0.5
    out.append(("huge-row-45x300", heavy.tocsr()))
    out.append(("one-by-one", sp.csr_matrix(np.array([[2.0]]))))
    out.append(("one-row-1x77", sp.random(1, 77, density=0.5, format="csr", random_state=rng)))
    out.append(("one-col-53x1", sp.random(53, 1, density=0.6, format="csr", random_state=rng)))
    out.append(("dense-33x41", sp.csr_matrix(rng.random((33, 41)) + 0.5)))
    out.append(("weights-97x131", sp.random(97, 131, density=0.3, format="csr",
                                            random_state=rng)))
    single = sp.lil_matrix((70, 90))
    single[69, 89] = 3.0
    out.append(("single-corner-70x90", single.tocsr()))
    out.append(("no-nonzeros-40x40", sp.csr_matrix((40, 40))))
    return [(name, _canonical(m)) for name, m in out]


AWKWARD = _awkward()


def dense_of(fmt) -> np.ndarray:
    """A rebuilt from the format alone (the reference of what the kernel may read)."""
    a = np.zeros((fmt.rows, fmt.cols))
    r, c = fmt.tile_rows, fmt.chunk_rows
    for t in range(fmt.tiles):
        for i in range(fmt.tile_ptr[t], fmt.tile_ptr[t + 1]):
            seg = fmt.item_seg[i].astype(np.int64)
            base = fmt.item_base[i]
            for row in range(r):
                for q in range(seg[row], seg[row + 1]):
                    a[t * r + row, fmt.item_chunk[i] * c + fmt.entry_j[base + q]] += \
                        fmt.entry_v[base + q]
    return a


# -- the format ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "csr"), AWKWARD, ids=[n for n, _ in AWKWARD])
@pytest.mark.parametrize(("tile_rows", "chunk_rows"), [(8, 16), (32, 32), (64, 64), (16, 32)])
def test_pack_holds_the_matrix_and_only_touched_chunks(name, csr, tile_rows, chunk_rows):
    fmt = pack_rowtile(csr.indptr, csr.indices, csr.data, csr.shape[1], tile_rows, chunk_rows)
    np.testing.assert_array_equal(dense_of(fmt), csr.toarray())
    rows, cols = csr.shape
    assert fmt.tiles == -(-rows // tile_rows) and fmt.tile_ptr[0] == 0
    # the items are exactly the (tile, chunk) pairs with a nonzero, in (tile, chunk) order
    row_of = np.repeat(np.arange(rows), np.diff(csr.indptr))
    want = sorted({(r // tile_rows, c // chunk_rows) for r, c in zip(row_of, csr.indices,
                                                                          strict=True)})
    got = [(t, int(fmt.item_chunk[i])) for t in range(fmt.tiles)
           for i in range(fmt.tile_ptr[t], fmt.tile_ptr[t + 1])]
    assert got == want
    staged = np.diff(fmt.item_base)
    assert (staged % 2 == 0).all() and (staged <= tile_rows * chunk_rows).all()
    seg = fmt.item_seg.astype(np.int64)
    assert seg.shape == (fmt.items, tile_rows + 2)
    assert (np.diff(seg[:, :tile_rows + 1], axis=1) >= 0).all() and (seg[:, 0] == 0).all()
    real = seg[:, tile_rows]
    assert ((staged - real) <= 1).all() and real.sum() == csr.nnz   # at most one pad an item
    pad = np.concatenate([np.arange(fmt.item_base[i] + real[i], fmt.item_base[i + 1])
                          for i in range(fmt.items)]) if fmt.items else np.zeros(0, int)
    assert (fmt.entry_v[pad] == 0).all() and (fmt.entry_j[pad] == 0).all()
    assert (fmt.entry_j < chunk_rows).all()
    # rows past the matrix's (the last tile) have no entries
    last = rows - (fmt.tiles - 1) * tile_rows
    tail = [i for i in range(fmt.tile_ptr[-2], fmt.tile_ptr[-1])] if fmt.tiles else []
    for i in tail:
        assert seg[i, last] == seg[i, tile_rows]


def test_pack_hand_check_and_a_tile_without_nonzeros():
    """The docstring's matrix: rows [c 0, 5, 40], [], [c 33], 50 columns; and with R 8 over
    20 rows whose rows 8-15 are empty: tile 1 has no item."""
    a = sp.csr_matrix((np.array([1.0, 2, 3, 4]), np.array([0, 5, 40, 33]),
                       np.array([0, 3, 3, 4])), shape=(3, 50))
    fmt = pack_rowtile(a.indptr, a.indices, a.data, 50, 8, 32)
    assert fmt.tile_ptr.tolist() == [0, 2] and fmt.item_chunk.tolist() == [0, 1]
    assert fmt.item_base.tolist() == [0, 2, 4]
    assert fmt.item_seg[0].tolist() == [0, 2, 2, 2, 2, 2, 2, 2, 2, 0]
    assert fmt.item_seg[1].tolist() == [0, 1, 1, 2, 2, 2, 2, 2, 2, 0]
    assert fmt.entry_j.tolist() == [0, 5, 8, 1] and fmt.entry_v.tolist() == [1, 2, 3, 4]
    b = sp.vstack([a, sp.csr_matrix((13, 50)), a[0:1], sp.csr_matrix((3, 50))]).tocsr()
    fmt = pack_rowtile(b.indptr, b.indices, b.data, 50, 8, 32)
    assert fmt.tile_ptr.tolist() == [0, 2, 2, 4]   # tile 1 (rows 8-15): no item
    assert fmt.item_base.tolist() == [0, 2, 4, 6, 8]  # row 16's chunk 1: one entry and a pad
    assert fmt.entry_v.tolist() == [1, 2, 3, 4, 1, 2, 3, 0]


def test_pack_rejects_sizes_outside_its_sets():
    with pytest.raises(ValueError, match="R must be one of"):
        pack_rowtile([0, 0], [], [], 4, 12, 32)


def test_tile_x_rows_bounds_the_staged_rows():
    a = sp.csr_matrix((np.ones(3), np.array([0, 5, 40]), np.array([0, 2, 3])), shape=(2, 50))
    assert tile_x_rows(a.indptr, a.indices, 50, 8, 32) == 50     # chunks 0 and 1 (18 rows)
    one = sp.csr_matrix((np.ones(1), np.array([33]), np.array([0, 1])), shape=(1, 50))
    assert tile_x_rows(one.indptr, one.indices, 50, 8, 32) == 18
    for _, csr in AWKWARD:
        for r in (8, 64):
            fmt = pack_rowtile(csr.indptr, csr.indices, csr.data, csr.shape[1], r, 32)
            staged = int(np.minimum(32, csr.shape[1] - fmt.item_chunk * 32).sum())
            assert staged <= tile_x_rows(csr.indptr, csr.indices, csr.shape[1], r, 32)


def test_item_counts_hand_check():
    """Row 0 holds entries 0-2 and row 2 entries 3-6 of an item (R 8): float loads, row 0: a
    pair and a last one alone (2); row 2: an odd first alone, a pair, a last alone (3); double:
    a load an entry. 8 warps (a row each): the busiest has 4; 2 warps (rows 0-3): 7."""
    seg = np.array([[0, 3, 3, 7, 7, 7, 7, 7, 7, 0]], dtype=np.uint16)
    fmt = types.SimpleNamespace(item_seg=seg, tile_rows=8, items=1,
                                item_base=np.array([0, 8]))
    counts = item_counts(fmt, 8, 4)
    assert counts["entries"].tolist() == [7] and counts["staged"].tolist() == [8]
    assert counts["busiest"].tolist() == [4] and counts["reads"].tolist() == [2 + 3]
    assert item_counts(fmt, 8, 8)["reads"].tolist() == [7]
    assert item_counts(fmt, 2, 4)["busiest"].tolist() == [7]


# -- the launch ---------------------------------------------------------------------------------

def test_smem_bytes_stages_and_minb_hand_checks():
    assert rowtile_smem_bytes(4, 32, 2, 32, 2, False) == 32_928
    assert rowtile_smem_bytes(4, 32, 2, 32, 3, False) == 49_392
    assert rowtile_smem_bytes(4, 32, 2, 32, 2, True) == 2 * (8_320 + 8_192 + 80)
    assert rowtile_smem_bytes(8, 32, 2, 32, 2, False) == 65_696
    # KS 128, R 64, C 16: the Y tile (128 x 65 x 4 = 33,280) outgrows two stages (33,184)
    assert rowtile_smem_bytes(4, 64, 4, 16, 2, True) == 33_280
    assert launch_stages(4, 32, 2, 32, 8, False) == (3, 4)     # 4 stages: 3 blocks, not 4
    assert launch_stages(4, 8, 1, 32, 8, False) == (4, 4)
    assert launch_stages(4, 64, 4, 32, 8, False) == (3, 2)     # 98,736 B: 2 blocks, as registers
    assert launch_stages(8, 32, 2, 32, 8, False) == (2, 3)     # 3 stages: 2 blocks, not 3
    assert launch_stages(8, 64, 2, 64, 8, False) == (2, 1)     # 196,896 B: one block
    assert launch_stages(4, 32, 2, 32, 8, False, stages=2, minb=1) == (2, 1)


@pytest.mark.parametrize(("k", "dtype", "layout", "want"), [
    (256, "float32", "row", (4, 2, 1)), (100, "float32", "row", (4, 2, 1)),
    (64, "float32", "row", (2, 1)), (66, "float32", "row", (2, 1)),
    (33, "float32", "row", (1,)), (33, "float32", "col", (2, 1)), (7, "float32", "col", (1,)),
    (256, "float64", "row", (2, 1)), (64, "float64", "col", (2, 1)), (1, "float64", "row", (1,)),
])
def test_vec_options(k, dtype, layout, want):
    assert vec_options(k, dtype, layout) == want
    assert vec_options(k, dtype, layout, ks=64) == ((2,) if 2 in want else ())


def test_copy_width():
    assert [copy_width(k, 4) for k in (256, 6, 7, 33)] == [4, 2, 1, 1]
    assert [copy_width(k, 8) for k in (256, 33)] == [2, 1]


def test_options_are_checked_before_any_case():
    for bad in ({"rows": 12}, {"ks": 96}, {"chunk": 48}, {"warps": 3}, {"minb": 0},
                {"stages": 5}, {"rows": 8, "warps": 16}, {"split": 0}, {"split": 65}):
        with pytest.raises(ValueError):
            check_options(**{"rows": None, "ks": None, "chunk": None, "warps": None,
                             "minb": None, **bad})
        with pytest.raises(ValueError):
            SpmmCudaRowTile(**bad)
    from sparsescope.backends.variants import backend_choice
    from sparsescope.errors import UsageError

    assert backend_choice("spmm-cuda-rowtile[rows=32,ks=64]").create().rows == 32
    assert backend_choice("spmm-cuda-rowtile[split=4]").create().split == 4
    with pytest.raises(UsageError, match="rows must be one of"):
        backend_choice("spmm-cuda-rowtile[rows=24]")


def test_ks_that_does_not_fit_k_is_skipped_with_a_reason():
    from sparsescope.ops.registry import get_op

    csr = AWKWARD[-3][1]
    case = get_op("spmm").make_case(csr, {"k": 33, "layout": "row"}, seed=1)
    assert "ks 64 does not fit k = 33" in SpmmCudaRowTile(ks=64).unsupported_params(case)
    col = get_op("spmm").make_case(csr, {"k": 33, "layout": "col"}, seed=1)
    assert SpmmCudaRowTile(ks=64).unsupported_params(col) == ""
    f64 = get_op("spmm").make_case(csr, {"k": 256, "layout": "row"}, value_dtype="float64",
                                   seed=1)
    assert "ks 128" in SpmmCudaRowTile(ks=128).unsupported_params(f64)


def test_plan_geometry_and_notes():
    csr = AWKWARD[-3][1]   # weights-97x131, 30 %
    plan = plan_rowtile(csr, 100, "float32", 8, "col", 132, rows=16, ks=64)
    assert plan.kernel == rowtile_kernel_name("float32", 8, 16, 2, 32, 8, plan.stages, True,
                                              plan.minb)
    assert (plan.stages, plan.minb) == launch_stages(4, 16, 2, 32, 8, True) == (4, 4)
    assert plan.kernel == "spmm_rowtile<float, long long, 16, 2, 32, 8, 4, 1, 4>"
    assert (plan.tiles, plan.slices) == (7, 2)                 # ceil(97 / 16), ceil(100 / 64)
    # 14 blocks on 528 slots; the busiest tile's 5 items (131 columns: 5 chunks): S 5 -> one
    # wave of runs of 1 item, 1 x (1 + 1) = 2, below S 4 (1 x 3)
    assert plan.splits == 5 and plan.notes["splits"] == "5"
    assert plan.notes["grid_blocks"] == "7 x 2 x 5" and plan.notes["block_threads"] == "256"
    assert plan.notes["launches"] == "2" and plan.notes["zero_fill"].startswith("memset")
    assert plan.smem_bytes == rowtile_smem_bytes(4, 16, 2, 32, 4, True)
    assert int(plan.notes["items"]) == plan.fmt.items <= 7 * 5   # 131 columns: 5 chunks
    assert plan.notes["x_copy_bytes"] == "4" and plan.notes["index_dtype"] == "int64"
    row = plan_rowtile(csr, 100, "float32", 4, "row", 132, rows=16, ks=64)
    assert row.notes["x_copy_bytes"] == "16"   # 100 = 4 x 25: float4 copies


def test_choose_tile_hand_worked():
    """The docstring's case: a 1,024 x 1,024 weight at 80 % sparsity, k 256 / 32, 132 SMs,
    rho 4 (every tile of 8 or more rows spans every column)."""
    w = sp.random(1024, 1024, density=0.2, format="csr", random_state=3)
    w.sort_indices()
    nnz = w.nnz
    r, vec, costs = choose_tile(w.indptr, w.indices, 1024, 256, "float32", "row", 132, 4.0)
    assert (r, vec) == (32, 2)
    assert costs[(32, 2)] == pytest.approx(max(nnz * 4 * 2.5 / 128,
                                               4 * (32 * 1024 * 1024 + 4 * nnz * 8) / 16_896))
    assert costs[(16, 4)] == pytest.approx(4 * (64 * 1024 * 1024 + 2 * nnz * 8) / 16_896)
    assert costs[(64, 1)] == pytest.approx(nnz * 8 * 1.5 / 128)
    r, vec, costs = choose_tile(w.indptr, w.indices, 1024, 32, "float32", "row", 132, 4.0)
    assert (r, vec) == (8, 1) and set(costs) == {(8, 1), (16, 1), (32, 1), (64, 1)}
    assert costs[(8, 1)] == pytest.approx(4 * (128 * 1024 * 32 * 4 + nnz * 8) / 16_896)
    assert costs[(16, 1)] == pytest.approx(nnz * 1.5 / 64)
    # a 4x larger L2 share of the time (rho 16) moves the choice to larger tiles
    assert choose_tile(w.indptr, w.indices, 1024, 32, "float32", "row", 132, 16.0)[0] == 16


def test_choose_splits_hand_worked():
    """The docstring's cases: chain(S) = waves x (longest run + 1), slots 132 x 4 = 528."""
    s, chains = choose_splits(np.full(32, 32), 4, 132, 4)   # 1,024-square, R 32, KS 64
    assert s == 4 and (chains[1], chains[2], chains[4], chains[5]) == (33, 17, 9, 16)
    s, chains = choose_splits(np.full(128, 128), 2, 132, 4)  # 4,096-square, R 32, KS 128
    assert s == 2 and (chains[2], chains[3], chains[4]) == (65, 88, 66)
    assert choose_splits(np.zeros(5, dtype=int), 1, 132, 4) == (1, {1: 1})
    assert choose_splits(np.zeros(0, dtype=int), 1, 132, 4)[0] == 1
    # a grid that already fills the device keeps S = 1 (no memset, no atomics)
    assert choose_splits(np.full(2000, 8), 1, 132, 4)[0] == 1
    # the longest tile bounds S; and so does max_splits
    assert choose_splits(np.array([3, 1]), 1, 132, 4)[0] == 3
    assert choose_splits(np.full(4, 500), 1, 132, 4, max_splits=16)[0] == 16


def test_rowtile_pays_both_ways():
    w = sp.random(1024, 1024, density=0.2, format="csr", random_state=3)
    pays, why = rowtile_pays(w.indptr, w.indices, 1024, 32, 32)
    assert pays and why.startswith("32,768 X rows staged") and f"< {w.nnz:,}" in why
    # density 1 / 64: at R 32 each tile stages every column for 0.5 nonzeros a column
    thin = sp.random(1024, 1024, density=1 / 64, format="csr", random_state=3)
    pays, why = rowtile_pays(thin.indptr, thin.indices, 1024, 32, 32)
    assert not pays and ">=" in why
    assert rowtile_pays(thin.indptr, thin.indices, 1024, 64, 32)[0] == (16 * 1024 < thin.nnz)
    assert not rowtile_pays(np.array([0, 0]), np.array([], int), 5, 8, 32)[0]


# -- the kernel, emulated -----------------------------------------------------------------------

def launch_rowtile(name: str, grid, block, args, shared_mem: int) -> None:
    """``spmm_rowtile<T, I, R, VEC, C, WARPS, STAGES, XCOL, MINB>`` on NumPy, from the arrays as
    uploaded: each block (tile, slice) walks its items; each item's X chunk (only the rows in
    the matrix and the slice's columns below k, copied as the kernel's copy width allows) is
    staged into a NaN-filled buffer, its entries are read from the byte array as the kernel
    reads them ([item_base[i], item_base[i + 1]), whole 16-byte pieces), each tile row walks
    its entries between its two offsets; Y is stored for rows below `rows` and columns below
    k only. grid.z = S splits: block z walks items [n z / S, n (z + 1) / S) of its tile's n
    and, S > 1, adds its tile into Y (which the host zeroed) or, its run empty, returns."""
    params = [p.strip() for p in re.fullmatch(r"spmm_rowtile<(.*)>", name).group(1).split(",")]
    t, _, r, vec, c, warps, stages, xcol, _ = params
    r, vec, c, warps, stages, xcol = (int(v) for v in (r, vec, c, warps, stages, xcol))
    vb = 4 if t == "float" else 8
    ks = 32 * vec
    assert tuple(block) == (32 * warps,) and r % warps == 0
    assert shared_mem == rowtile_smem_bytes(vb, r, vec, c, stages, bool(xcol))
    rows, cols, k, tile_ptr, item_chunk, item_base, item_seg, entries, x, y, splits = args
    rows, cols, k, splits = int(rows), int(cols), int(k), int(splits)
    assert tuple(grid) == (-(-rows // r), -(-k // ks), splits)
    dt = (np.dtype([("j", "<i4"), ("v", "<f4")]) if vb == 4 else
          np.dtype([("j", "<i4"), ("pad", "<i4"), ("v", "<f8")]))
    ent = np.asarray(entries).view(dt)
    seg_all = np.asarray(item_seg).reshape(-1, r + 2).astype(np.int64)
    xv = np.asarray(x)
    cw = 1 if xcol else copy_width(k, vb)
    for tile, sl, z in np.ndindex(*grid):
        k0 = sl * ks
        kk = min(ks, k - k0)
        assert kk % cw == 0   # every copy lies whole in the slice
        acc = np.zeros((r, ks))
        t0, n = int(tile_ptr[tile]), int(tile_ptr[tile + 1]) - int(tile_ptr[tile])
        lo, hi = t0 + n * z // splits, t0 + n * (z + 1) // splits
        if splits > 1 and lo == hi:
            continue
        for i in range(lo, hi):
            c0 = int(item_chunk[i]) * c
            rows_in = min(c, cols - c0)
            xs = np.full((c, ks), np.nan)
            if xcol:   # X stored k x cols
                xs[:rows_in, :kk] = xv[k0:k0 + kk, c0:c0 + rows_in].T
            else:
                xs[:rows_in, :kk] = xv[c0:c0 + rows_in, k0:k0 + kk]
            b, e = int(item_base[i]), int(item_base[i + 1])
            assert (e - b) * dt.itemsize % 16 == 0 and e - b <= r * c
            es = ent[b:e]
            seg = seg_all[i]
            for row in range(r):
                q = slice(seg[row], seg[row + 1])
                acc[row] += es["v"][q].astype(np.float64) @ xs[es["j"][q]]
        for row in range(r):
            g = tile * r + row
            if g < rows:
                out = (y[k0:k0 + kk, g] if xcol else y[g, k0:k0 + kk])
                out[...] = out + acc[row, :kk] if splits > 1 else acc[row, :kk]


def _emulated(csr, k, layout, dtype="float32", **options):
    plan = plan_rowtile(csr, k, dtype, 4, layout, 132, **options)
    fmt = plan.fmt
    rng = np.random.default_rng(k)
    x = rng.random((csr.shape[1], k)) - 0.5
    y = np.full((k, csr.shape[0]) if layout == "col" else (csr.shape[0], k), np.nan)
    if plan.splits > 1:
        y[...] = 0.0   # the host's memset
    name = plan.kernel
    launch_rowtile(name, (plan.tiles, plan.slices, plan.splits), (32 * plan.warps,),
                   (csr.shape[0], csr.shape[1], k, fmt.tile_ptr, fmt.item_chunk, fmt.item_base,
                    fmt.item_seg.reshape(-1), entries_array(fmt, dtype),
                    np.ascontiguousarray(x.T if layout == "col" else x), y, plan.splits),
                   plan.smem_bytes)
    got = y.T if layout == "col" else y
    return got, csr @ x


@pytest.mark.parametrize(("name", "csr"), AWKWARD, ids=[n for n, _ in AWKWARD])
@pytest.mark.parametrize(("k", "layout", "options"), [
    (1, "row", {}), (7, "col", {}), (33, "row", {"rows": 8, "chunk": 16}),
    (33, "col", {"rows": 64, "ks": 64, "chunk": 64}), (70, "row", {"rows": 16, "ks": 64}),
    (130, "col", {"ks": 128, "stages": 2})])
def test_emulated_kernel_matches_the_reference(name, csr, k, layout, options):
    got, want = _emulated(csr, k, layout, **options)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("name", "csr"), AWKWARD, ids=[n for n, _ in AWKWARD])
@pytest.mark.parametrize(("k", "layout", "dtype", "options"), [
    (33, "row", "float32", {"split": 3, "rows": 8}), (70, "col", "float64", {"split": 2}),
    (130, "col", "float32", {"split": 7, "rows": 64, "chunk": 16})])
def test_emulated_splits_add_partial_tiles(name, csr, k, layout, dtype, options):
    """S runs a tile (runs with no item among them on these matrices: a tile of fewer items
    than S, a tile without any), each block adding its partial tile into the zeroed Y."""
    got, want = _emulated(csr, k, layout, dtype, **options)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_emulated_splits_without_the_memset_fail():
    """Y not zeroed before the atomics (NaN left by an earlier call): the sums show it."""
    csr = AWKWARD[-3][1]
    plan = plan_rowtile(csr, 8, "float32", 4, "row", 132, rows=16, split=3)
    fmt = plan.fmt
    y = np.full((csr.shape[0], 8), 1.0)   # stale values, no memset
    x = np.ones((csr.shape[1], 8))
    launch_rowtile(plan.kernel, (plan.tiles, plan.slices, 3), (256,),
                   (csr.shape[0], csr.shape[1], 8, fmt.tile_ptr, fmt.item_chunk, fmt.item_base,
                    fmt.item_seg.reshape(-1), entries_array(fmt, "float32"), x, y, 3),
                   plan.smem_bytes)
    assert not np.allclose(y, csr @ x)
    np.testing.assert_allclose(y - 1.0, csr @ x, rtol=1e-6)


def test_emulated_float64_and_a_dropped_item_shows():
    csr = AWKWARD[-3][1]
    got, want = _emulated(csr, 256, "row", "float64")
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    plan = plan_rowtile(csr, 8, "float32", 4, "row", 132, rows=16)
    fmt = plan.fmt
    tile_ptr = fmt.tile_ptr.copy()
    tile_ptr[1:] -= 1   # tile 0 loses its last item
    y = np.zeros((csr.shape[0], 8))
    x = np.ones((csr.shape[1], 8))
    launch_rowtile(plan.kernel, (plan.tiles, plan.slices, plan.splits), (256,),
                   (csr.shape[0], csr.shape[1], 8, tile_ptr, fmt.item_chunk, fmt.item_base,
                    fmt.item_seg.reshape(-1), entries_array(fmt, "float32"), x, y,
                    plan.splits), plan.smem_bytes)
    assert not np.allclose(y, csr @ x)


# -- the backend end to end, on a fake device ---------------------------------------------------

class _RowTileKernel:
    """The rowtile kernel's emulation; any other kernel goes to the rowgroup tests' fakes."""

    def __init__(self, name: str, launches: list) -> None:
        self.name, self.launches = name, launches
        self.max_dynamic_shared_size_bytes = 48 * 1024

    def __call__(self, grid, block, args, shared_mem: int = 0):
        self.launches.append(("spmm_rowtile", grid, block, shared_mem))
        if shared_mem > 48 * 1024:   # the launch must have raised the kernel's limit first
            assert self.max_dynamic_shared_size_bytes >= shared_mem
        launch_rowtile(self.name, grid, block, args, shared_mem)


@pytest.fixture
def fake_device(monkeypatch):
    launches: list = []
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(_gpu, "cupy_cuda_status", lambda: (True, ""))
    monkeypatch.setattr("sparsescope.hardware.detect.detect_gpu", lambda: None)

    def function(name):
        if name.startswith("spmm_rowtile"):
            return _RowTileKernel(name, launches)
        return _Kernel(name, launches)

    monkeypatch.setattr(_gpu, "raw_module", lambda source, names: types.SimpleNamespace(
        get_function=function))
    return launches


def _run(csr, backend, k, layout, dtype="float32", index_bytes=4, **kw):
    return run_case(Matrix(name="m", csr=csr, source="test"), backend, "spmm",
                    {"k": k, "layout": layout}, config=QUICK, value_dtype=dtype,
                    index_bytes=index_bytes, seed=k, timed=False, **kw)


@pytest.mark.parametrize(("k", "dtype", "index_bytes", "layout"), [
    (1, "float32", 4, "row"), (7, "float64", 8, "col"), (33, "float32", 8, "col"),
    (64, "float64", 4, "row"), (130, "float32", 4, "row")])
def test_backend_passes_the_gate(fake_device, k, dtype, index_bytes, layout):
    csr = AWKWARD[0][1]   # a tile of no nonzeros among others
    case = _run(csr, "spmm-cuda-rowtile", k, layout, dtype, index_bytes)
    assert case.outcome == "ok", case.reason
    assert fake_device and fake_device[0][0] == "spmm_rowtile"
    assert case.notes["layout"] == layout and case.notes["value_dtype"] == dtype
    assert case.traffic.format.startswith("row tiles of ")
    assert case.traffic.values_bytes == int(case.notes["entries"]) * (4 if dtype == "float32"
                                                                      else 8)


def test_large_shared_memory_is_opted_in_and_a_dropped_item_fails_the_gate(fake_device):
    csr = AWKWARD[-3][1]
    case = _run(csr, SpmmCudaRowTile(rows=64, ks=64, chunk=64), 64, "row", "float64")
    assert case.outcome == "ok", case.reason
    assert int(case.notes["smem_bytes"]) > 48 * 1024 and fake_device[-1][3] > 48 * 1024

    class Drops(SpmmCudaRowTile):
        def _launch(self, p):
            p.tile_ptr = p.tile_ptr.copy()
            p.tile_ptr[1:] -= 1
            super()._launch(p)

    assert _run(csr, Drops(rows=16), 8, "row").outcome == "failed"


@pytest.mark.parametrize("layout", ["row", "col"])
def test_split_launch_zeroes_y_every_call(fake_device, layout):
    """S > 1: a memset before each launch, so repeated calls (warm-ups, timing) do not add up;
    the launch grid is (tiles, slices, S) and S reaches the kernel."""
    from sparsescope.ops.registry import get_op

    csr = AWKWARD[-3][1]
    case = get_op("spmm").make_case(csr, {"k": 40, "layout": layout}, seed=2)
    backend = SpmmCudaRowTile(split=4, rows=16)
    prepared = backend.prepare(case, "float32", 4)
    first = backend.run(prepared)
    second = backend.run(prepared)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, csr @ np.asarray(case.inputs), rtol=1e-5, atol=1e-5)
    assert fake_device[-1][1] == (prepared.host.tiles, prepared.host.slices, 4)
    assert backend.notes(prepared)["zero_fill"].startswith("memset")
    assert _run(csr, SpmmCudaRowTile(split=4), 40, layout).outcome == "ok"


def test_runner_predicts_a_rowtile_case_with_its_model(fake_device):
    from sparsescope.context import DeviceContext

    w = _canonical(sp.random(200, 96, density=0.6, format="csr", random_state=8))
    case = _run(w, "spmm-cuda-rowtile", 64, "col", model=DeviceContext(rates=_rates()))
    assert case.outcome == "ok", case.reason
    p = case.prediction
    assert p is not None and not p.not_modelled and p.predicted_ms > 0
    assert {t.name for t in p.terms} >= {"dram", "l2", "smem", "issue", "latency", "memory",
                                         "imbalance", "compute", "overhead"}
    assert p.kernel.startswith("rowtile spmm_rowtile<float, int, ")
    assert p.inputs["x_staged_bytes"] == int(case.notes["x_rows_staged"]) * 64 * 4


# -- auto --------------------------------------------------------------------------------------

def test_auto_plans_rowtile_only_where_it_stages_less_x():
    from sparsescope.backends.spmm_auto_candidates import ROWTILE, planned_candidates
    from sparsescope.ops.registry import get_op

    def labels(csr, k, layout):
        case = get_op("spmm").make_case(csr, {"k": k, "layout": layout}, seed=1)
        return [c for c, _, _ in planned_candidates(case, "float32", 4, 132, 2, _rates())]

    weight = _canonical(sp.random(200, 96, density=0.6, format="csr", random_state=8))
    for layout in ("row", "col"):
        found = [c for c in labels(weight, 64, layout) if c.backend == ROWTILE]
        assert len(found) == 1 and set(found[0].params) == {"rows", "ks"}
    graph = _canonical(sp.random(3000, 3000, density=0.001, format="csr", random_state=1))
    assert ROWTILE not in {c.backend for c in labels(graph, 64, "row")}


def test_auto_times_rowtile_and_keeps_it_when_fastest(fake_device, monkeypatch):
    """Column-major X: rowtile reads it as it is (no transposes around it), is timed beside
    the others and, fastest, is the kernel the gate runs."""
    import json

    from sparsescope.backends import spmm_auto
    from sparsescope.backends.spmm_auto import SpmmCudaAuto
    from sparsescope.backends.spmm_blocktc import SpmmCudaBlockTc
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
    from sparsescope.backends.spmm_ell import SpmmCudaEll
    from sparsescope.backends.spmm_paneltc import SpmmCudaPanelTc
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
    from sparsescope.backends.spmm_transposed import SpmmCudaTransposed
    from sparsescope.context import DeviceContext

    for cls, ms in ((SpmmCudaRowGroup, 0.5), (SpmmCudaRowWarp, 0.4), (SpmmCudaBlockTc, 0.3),
                    (SpmmCudaPanelTc, 0.3), (SpmmCudaColMajor, 0.3), (SpmmCudaRowTile, 0.05),
                    (SpmmCudaEll, 0.6)):
        monkeypatch.setattr(cls, "time", _timed(ms))
    monkeypatch.setattr(SpmmCudaTransposed, "time", lambda self, p, c: self.rowgroup.time(
        p.inner, c))
    monkeypatch.setattr(spmm_auto, "TRIAL_MARGIN", 1e6)
    weight = _canonical(sp.random(200, 96, density=0.6, format="csr", random_state=8))
    auto = SpmmCudaAuto(trial=True)
    auto.use_model(DeviceContext(rates=_rates()))
    case = _run(weight, auto, 64, "col")
    assert case.outcome == "ok", case.reason
    table = {row["backend"]: row for row in json.loads(case.notes["selection_table"])}
    assert table["spmm-cuda-rowtile"]["trial_ms"] == 0.05
    assert table["spmm-cuda-rowtile"]["predicted_ms"] > 0
    assert case.notes["selected"] == "spmm-cuda-rowtile"
    assert fake_device[-1][0] == "spmm_rowtile"   # the gate ran it on column-major X
