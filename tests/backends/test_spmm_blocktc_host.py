"""spmm-cuda-blocktc without a GPU: the 16 x 8 block format, its fill, the fragment order, the
launch plan, and a NumPy emulator of the kernel's arithmetic (TF32 rounding as ``cvt.rna``,
one or three products) used by the fake-device tests."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.spmm_blocktc import (
    MAX_FILL,
    block_fill,
    block_format,
    choose_groups,
    count_blocks,
    fragment_order,
    plan_blocktc,
)


def tf32(v: np.ndarray) -> np.ndarray:
    """float32 -> TF32 as ``cvt.rna.tf32.f32``: 10 mantissa bits, nearest, ties away from 0."""
    bits = np.asarray(v, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def block_product(a: np.ndarray, t: np.ndarray, passes: int) -> np.ndarray:
    """A 16 x 8 block times an 8-row X tile as the tensor cores do it: TF32 parts, the small
    products first (lo*hi + hi*lo + hi*hi) with 3 passes, hi*hi alone with 1."""
    a_hi, t_hi = tf32(a), tf32(t)
    acc = a_hi @ t_hi
    if passes == 3:
        acc = tf32(a - a_hi) @ t_hi + a_hi @ tf32(t - t_hi) + acc
    return acc


def launch_blocktc(params: tuple, grid, block, args) -> None:
    """What ``spmm_blocktc<PASSES, NG, VEC4, SPLIT, BATCH>`` computes, block by block, float32
    sums; it checks that the grid covers every block row (4 / SPLIT a CUDA block of 128
    threads) and every column of Y."""
    passes, groups, _, split, _ = params
    block_rows, rows, cols, k, ptr, bcol, bval, x, y = (np.asarray(a) if hasattr(a, "shape")
                                                        else int(a) for a in args)
    warps = max(4, split)
    assert block == (32 * warps,) and grid[0] * (warps // split) >= block_rows
    assert grid[1] * 32 * groups >= k
    dense = np.zeros((len(bcol), 128), np.float32)
    dense[:, fragment_order()] = bval.reshape(len(bcol), 128)
    dense = dense.reshape(-1, 16, 8)
    xpad = np.zeros((-(-cols // 8) * 8, k), np.float32)
    xpad[:cols] = x
    out = np.zeros((block_rows * 16, k), np.float32)
    for br in range(block_rows):
        for b in range(ptr[br], ptr[br + 1]):
            t = xpad[bcol[b] * 8: bcol[b] * 8 + 8]
            out[br * 16: br * 16 + 16] += block_product(dense[b], t, passes)
    y[...] = out[:rows]


def _csr(rows, cols, entries):
    r, c = zip(*entries, strict=True) if entries else ((), ())
    return sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(rows, cols))


def test_tf32_rounds_to_ten_mantissa_bits_away_from_zero():
    assert tf32(np.float32(1 + 2**-11)) == np.float32(1 + 2**-10)    # tie: away from zero
    assert tf32(np.float32(-(1 + 2**-11))) == np.float32(-(1 + 2**-10))
    assert tf32(np.float32(1 + 2**-12)) == np.float32(1.0)
    assert tf32(np.float32(3.0)) == np.float32(3.0)


def test_count_blocks_and_fill_by_hand():
    eye = _csr(3, 3, [(0, 0), (1, 1), (2, 2)])
    assert count_blocks(eye.indptr, eye.indices, 3) == 1
    two = _csr(17, 9, [(0, 0), (16, 8)])
    assert count_blocks(two.indptr, two.indices, 9) == 2
    same = _csr(16, 8, [(0, 0), (15, 7), (3, 4)])       # one block, three entries
    assert count_blocks(same.indptr, same.indices, 8) == 1
    assert block_fill(1, 3) == pytest.approx(128 / 3)
    assert block_fill(2, 256) == 1.0 and block_fill(0, 0) == 1.0
    empty = _csr(5, 5, [])
    assert count_blocks(empty.indptr, empty.indices, 5) == 0


def test_fragment_order_is_the_m16n8k8_a_fragment():
    order = fragment_order()
    assert sorted(order) == list(range(128))      # a permutation of the block
    assert list(order[:4]) == [0, 64, 4, 68]      # lane 0: A[0][0], A[8][0], A[0][4], A[8][4]
    assert list(order[20:24]) == [9, 73, 13, 77]  # lane 5 (g 1, t 1)


def test_block_format_round_trips_an_awkward_matrix():
    rng = np.random.default_rng(3)
    a = sp.random(37, 21, density=0.2, format="csr", random_state=rng)
    a.data[a.indptr[5]:a.indptr[6]] = 0   # an empty row
    a.eliminate_zeros()
    fmt = block_format(a.indptr, a.indices, a.data, a.shape)
    assert fmt.block_rows == 3 and fmt.blocks == count_blocks(a.indptr, a.indices, 21)
    assert fmt.block_val.dtype == np.float32 and fmt.block_val.shape == (fmt.blocks, 128)
    back = np.zeros((48, 24))
    for br in range(fmt.block_rows):
        for b in range(fmt.block_ptr[br], fmt.block_ptr[br + 1]):
            c = fmt.block_col[b] * 8
            back[br * 16: br * 16 + 16, c: c + 8] = fmt.dense_blocks()[b]
    np.testing.assert_allclose(back[:37, :21], a.toarray(), rtol=1e-7)
    assert not back[37:].any() and not back[:, 21:].any()
    assert list(np.diff(fmt.block_col[fmt.block_ptr[0]:fmt.block_ptr[1]]) > 0) == \
        [True] * (fmt.block_ptr[1] - fmt.block_ptr[0] - 1)   # columns ascending in a row


def test_block_format_sums_duplicates():
    a = sp.csr_matrix((np.array([1.0, 2.0]), np.array([3, 3]), np.array([0, 2])),
                      shape=(1, 5))
    fmt = block_format(a.indptr, a.indices, a.data, a.shape)
    assert fmt.blocks == 1 and fmt.dense_blocks()[0, 0, 3] == 3.0


def test_choose_split_and_batch_follow_their_docstrings():
    from sparsescope.backends.spmm_blocktc import choose_batch, choose_split

    assert [choose_batch(g) for g in (1, 2, 4)] == [4, 2, 1]
    assert choose_split(32, 1, 32 * 64, 4, 132) == 16
    assert choose_split(64, 1, 64 * 512, 4, 132) == 16
    assert choose_split(32, 1, 32 * 64, 4, 132, groups=2) == 4   # 4 at most with NG > 1
    assert choose_split(256, 16, 256 * 128, 4, 132) == 1
    assert choose_split(100, 1, 300, 4, 132) == 1        # rows of 3 blocks
    assert choose_split(100, 1, 100 * 9, 4, 132) == 2    # 9 / 4 -> at most 2
    assert choose_split(0, 1, 0, 4, 132) == 1


def test_choose_groups_follows_its_docstring():
    assert choose_groups(256, 512, 132) == 1        # 4,096 rows: too few warps to widen
    assert choose_groups(4096, 512, 132) == 4       # 65,536 rows
    assert choose_groups(4096, 40, 132) == 2        # 64 columns cover 40: not 4
    assert choose_groups(4096, 8, 132) == 1
    assert choose_groups(1, 4096, 1) == 4           # one SM: wide warps


def test_plan_names_the_instance_and_labels_the_precision():
    plan = plan_blocktc(block_rows=5, blocks=9, nnz=300, k=70, sm_count=132)
    # 9 blocks over 5 rows: under a batch of 4 a row, so one warp a row
    assert plan.kernel == "spmm_blocktc<3, 1, false, 1, 4>" and plan.slabs == 3
    assert plan.grid_blocks == 2 and plan.notes["fill"] == "3.84"
    assert plan.notes["precision"].startswith("3xTF32")
    one = plan_blocktc(5, 9, 300, 64, 132, passes=1)
    assert one.kernel == "spmm_blocktc<1, 1, true, 1, 4>"
    assert one.notes["precision"].startswith("TF32")
    long_rows = plan_blocktc(block_rows=32, blocks=2048, nnz=131072, k=32, sm_count=132)
    assert long_rows.kernel == "spmm_blocktc<3, 1, true, 16, 4>" and long_rows.grid_blocks == 32
    assert long_rows.notes["block_threads"] == "512"
    with pytest.raises(ValueError, match="passes"):
        plan_blocktc(5, 9, 300, 64, 132, passes=2)


def test_emulator_is_float32_exact_with_three_passes_and_not_with_one():
    rng = np.random.default_rng(0)
    a = sp.random(40, 30, density=0.5, format="csr", random_state=rng, dtype=np.float64)
    x = rng.uniform(-1, 1, (30, 24)).astype(np.float32)
    ref = a.toarray() @ x.astype(np.float64)
    fmt = block_format(a.indptr, a.indices, a.data, a.shape)
    errors = {}
    for passes in (1, 3):
        y = np.empty((40, 24), np.float32)
        launch_blocktc((passes, 1, True, 1, 4), (1, 1), (128,),
                       (3, 40, 30, 24, fmt.block_ptr, fmt.block_col, fmt.block_val, x, y))
        errors[passes] = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    assert errors[3] < 1e-6 < 1e-5 < errors[1] < 2e-3
    assert MAX_FILL == 8.0


def test_sampled_fill_is_exact_when_every_block_row_is_sampled():
    from sparsescope.backends.spmm_blocktc import sampled_fill

    rng = np.random.default_rng(4)
    a = sp.random(100, 70, density=0.1, format="csr", random_state=rng)
    exact = block_fill(count_blocks(a.indptr, a.indices, 70), a.nnz)
    assert sampled_fill(a.indptr, a.indices, 70) == pytest.approx(exact)
    assert sampled_fill(a.indptr, a.indices, 70, sample_rows=3) > 1.0
    empty = _csr(20, 20, [])
    assert sampled_fill(empty.indptr, empty.indices, 20) == 1.0


def test_block_format_of_builds_once_for_the_same_matrix():
    from sparsescope.backends.spmm_blocktc import block_format_of, fill_declined

    a = sp.random(40, 30, density=0.3, format="csr", random_state=1)
    first = block_format_of(a)
    assert block_format_of(a) is first                  # the fill check, auto, prepare
    b = a.copy()
    assert block_format_of(b) is not first and block_format_of(b).blocks == first.blocks
    assert fill_declined(first.blocks, a.nnz, limit=1e9) == ""
    assert "fill" in fill_declined(10, 10, limit=8.0)   # 128 stored per nonzero


def launch_paneltc(name: str, grid, block, args, shared_mem: int) -> None:
    """What ``spmm_paneltc<PASSES, MB, WN, NF, KB, STAGES, ISPLIT, XSPLIT>`` computes, CTA by
    CTA: each (panel, tile, split) multiplies its run of the panel's items (``n z / S`` ..
    ``n (z + 1) / S``) by the staged X rows (zero past ``cols`` and past k), TF32-rounded as
    the kernel, and stores its tile (S = 1) or adds it into Y (S > 1, Y zeroed by the host).
    It checks the launch: MB x WN warps, a grid of every panel and enough tiles of 8 NF
    columns, the shared memory of the host's formula, and that Y is zero before any split
    adds into it."""
    from sparsescope.backends.spmm_paneltc import smem_bytes

    params = [p.strip() for p in name[name.index("<") + 1:-1].split(",")]
    passes, mb, wn, nf, kb, stages = (int(p) for p in params[:6])
    xsplit = params[7] == "true"
    rows, cols, k, ptr, icol, ival, x, y, splits = (np.asarray(a) if hasattr(a, "shape")
                                                    else int(a) for a in args)
    nc = 8 * nf
    panels = len(ptr) - 1
    assert block == (32 * mb * wn,) and grid == (max(1, panels), -(-k // nc), splits)
    assert shared_mem == smem_bytes(nf, mb, kb, stages, xsplit)
    if splits > 1:
        assert not y.any(), "Y must be zeroed before the splits add into it"
    dense = np.zeros((len(icol), mb, 128), np.float32)
    dense[:, :, fragment_order()] = ival.reshape(len(icol), mb, 128)
    dense = dense.reshape(len(icol), mb, 16, 8)
    xpad = np.zeros((-(-cols // 8) * 8 + 8, grid[1] * nc), np.float32)
    xpad[:cols, :k] = x
    out = np.zeros((max(1, panels) * mb * 16, grid[1] * nc), np.float32)
    for p in range(panels):
        n = int(ptr[p + 1] - ptr[p])
        for z in range(splits):
            lo, hi = int(ptr[p]) + n * z // splits, int(ptr[p]) + n * (z + 1) // splits
            part = np.zeros((mb * 16, grid[1] * nc), np.float32)
            for i in range(lo, hi):
                t = xpad[icol[i] * 8: icol[i] * 8 + 8]
                for m in range(mb):
                    part[m * 16: m * 16 + 16] += block_product(dense[i, m], t, passes)
            out[p * mb * 16: (p + 1) * mb * 16] += part
    y[...] = (y + out[:rows, :k]) if splits > 1 else out[:rows, :k]
