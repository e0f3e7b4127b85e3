"""The own SpMM kernel without a GPU: its host-side plan, a lane-exact emulation of its index
arithmetic, and its SASS (compiled here with nvcc for sm_90)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends._gpu import kernel_source
from sparsescope.backends.spmm_cuda import (
    choose_slab,
    choose_slice_nnz,
    kernel_name,
    launch_shape,
    pipeline,
    slice_plan,
    warps_per_block,
)


@pytest.mark.parametrize(("k", "dtype", "shape"), [
    (1, "float32", (1, 1, 1)), (8, "float32", (4, 2, 1)), (64, "float32", (4, 16, 1)),
    (256, "float32", (4, 32, 2)), (6, "float32", (2, 4, 1)), (255, "float32", (1, 32, 8)),
    (3, "float32", (1, 4, 1)), (128, "float32", (4, 32, 1)), (8, "float64", (2, 4, 1)),
    (256, "float64", (2, 32, 4)),
])
def test_launch_shape(k, dtype, shape):
    assert launch_shape(k, dtype) == shape


def test_slice_plan_cuts_long_rows_and_keeps_empty_ones():
    plan = slice_plan(np.array([0, 3, 3, 100, 110]), 32)
    assert plan.slice_ptr.tolist() == [0, 3, 3, 35, 67, 99, 100, 110]
    assert plan.slice_row.tolist() == [0, 1, -3, -3, -3, -3, 3]
    assert plan.split_rows == 1 and plan.n_slices == 7
    whole = slice_plan(np.array([0, 3, 3, 10]), 32)
    assert whole.slice_row is None and whole.slice_ptr.tolist() == [0, 3, 3, 10]


def test_choose_slice_nnz():
    assert choose_slice_nnz(157_286, 132) == 1024  # dlmc-512x1024 (rows <= 400): rows whole
    assert choose_slice_nnz(9_830, 132) == 1024
    assert choose_slice_nnz(100_000_000, 132) == 94_720  # 1056 slices' worth per slice
    assert choose_slice_nnz(157_286, 132, min_slice=32) == 160  # without the floor: 2 per row
    assert choose_slice_nnz(9_830, 132, min_slice=0) == 32
    # circuit5M-like: a 1.28 M-entry row is cut into 23 slices of 56,384 nonzeros
    s = choose_slice_nnz(59_524_291, 132)
    assert s == 56_384 and -(-1_278_415 // s) == 23
    assert kernel_name("float32", 4, (4, 2, 1)) == "spmm_rowwarp<float, int, 4, 2, 1, 4, 8>"
    assert (kernel_name("float64", 8, (2, 32, 4), (1, 2))
            == "spmm_rowwarp<double, long long, 2, 32, 4, 1, 2>")


@pytest.mark.parametrize(("shape", "depth", "stages"), [
    ((1, 1, 1), None, (4, 4)), ((4, 2, 1), None, (4, 8)), ((4, 16, 1), None, (4, 8)),
    ((4, 32, 2), None, (1, 4)), ((1, 32, 8), None, (1, 1)), ((2, 32, 4), None, (1, 2)),
    ((4, 2, 1), 1, (1, 2)), ((4, 16, 1), 1, (1, 8)), ((2, 4, 1), 2, (2, 8)),
])
def test_pipeline(shape, depth, stages):
    assert pipeline(shape, depth) == stages
    d, batch = stages
    assert (d * shape[1]) % batch == 0 and batch * shape[2] <= 8 or batch == 1


def test_pipeline_rejects_a_depth_that_is_not_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        pipeline((4, 2, 1), 3)


def test_warps_per_block_spreads_small_layers_over_every_sm():
    assert warps_per_block(512, 132) == 4  # dlmc-512x1024: 128 blocks, not 64 of 8 warps
    assert warps_per_block(256, 132) == 2
    assert warps_per_block(128, 132) == 1
    assert warps_per_block(100_000, 132) == 8
    assert warps_per_block(0, 132) == 1
    assert warps_per_block(512, 132, warps=8) == 8
    with pytest.raises(ValueError):
        warps_per_block(512, 132, warps=16)


def emulate(csr: sp.csr_matrix, x: np.ndarray, k: int, shape, plan, stages,
            slab: int | None = None) -> np.ndarray:
    """The kernel's lane arithmetic in NumPy, lane for lane (32 lanes per warp/slice): stages
    of DEPTH chunks, batches of BATCH entries per group, the warp-uniform tail break; one pass
    per column slab (grid.y), columns [slab0, slab0 + slab)."""
    vec, group, chunks = shape
    depth, batch = stages
    groups = 32 // group
    lanes = np.arange(32)
    g, li = lanes // group, lanes % group
    y = np.full((csr.shape[0], k), np.nan)  # poisoned: an unwritten element stays NaN
    if plan.split_rows:
        y[:] = 0.0  # the host's memset
    slab = k if slab is None else slab
    for slab0, s in ((a, b) for a in range(0, k, slab) for b in range(plan.n_slices)):
        kk = min(slab, k - slab0)
        row, atomic = s, False
        if plan.slice_row is not None:
            r = int(plan.slice_row[s])
            atomic, row = r < 0, (-r - 1 if r < 0 else r)
        begin, end = int(plan.slice_ptr[s]), int(plan.slice_ptr[s + 1])
        acc = np.zeros((32, chunks, vec))
        for base in range(begin, end, 32 * depth):
            my_col, my_val = [], []
            for d in range(depth):
                idx = base + 32 * d + lanes
                have = idx < end
                my_col.append(np.where(have, csr.indices[np.minimum(idx, csr.nnz - 1)], 0))
                my_val.append(np.where(have, csr.data[np.minimum(idx, csr.nnz - 1)], 0.0))
            for i0 in range(0, depth * group, batch):
                if base + 32 * (i0 // group) >= end:
                    break
                a = np.zeros((batch, 32))
                xv = np.zeros((batch, 32, chunks, vec))
                for b in range(batch):
                    i = i0 + b
                    d = 0 if depth == 1 else i // group
                    e = g + groups * (i % group)
                    assert e.max() < 32 and d < depth
                    j, a[b] = my_col[d][e], my_val[d][e]
                    live = base + 32 * d + e < end
                    for c in range(chunks):
                        cc = (li + group * c) * vec
                        m = live & (cc < kk)
                        for v in range(vec):
                            xv[b, m, c, v] = x[j[m], slab0 + cc[m] + v]
                for b in range(batch):
                    acc += a[b][:, None, None] * xv[b]
        off = group
        while off < 32:
            acc = acc + acc[lanes ^ off]
            off <<= 1
        for lane in lanes[g == 0]:
            for c in range(chunks):
                cc = slab0 + (li[lane] + group * c) * vec
                if cc < slab0 + kk:
                    if atomic:
                        y[row, cc:cc + vec] += acc[lane, c]
                    else:
                        y[row, cc:cc + vec] = acc[lane, c]
    return y


@pytest.mark.parametrize("k", [1, 3, 6, 8, 40, 64, 256])
@pytest.mark.parametrize("slice_nnz", [32, 4096])
@pytest.mark.parametrize("depth", [None, 1])
def test_emulated_kernel_matches_the_reference(k, slice_nnz, depth):
    rng = np.random.default_rng(k)
    lengths = rng.integers(0, 90, size=24)
    lengths[[3, 7]] = 0  # empty rows must still be written (zeros)
    cols = 100
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = np.concatenate([np.sort(rng.choice(cols, n, replace=False)) for n in lengths])
    csr = sp.csr_matrix((rng.random(indptr[-1]) * 2 - 1, indices, indptr), shape=(24, cols))
    x = rng.random((cols, k)) * 2 - 1
    plan = slice_plan(csr.indptr, slice_nnz)
    assert (plan.split_rows > 0) == (slice_nnz == 32)
    shape = launch_shape(k, "float32")
    y = emulate(csr, x, k, shape, plan, pipeline(shape, depth))
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k,slab", [(256, 32), (64, 32), (96, 32), (256, 128)])
@pytest.mark.parametrize("slice_nnz", [32, 4096])
def test_emulated_slabs_match_the_reference(k, slab, slice_nnz):
    rng = np.random.default_rng(k + slab)
    cols = 300
    csr = sp.random(24, cols, density=0.2, format="csr", random_state=rng)
    csr.sort_indices()
    x = rng.random((cols, k)) * 2 - 1
    plan = slice_plan(csr.indptr, slice_nnz)
    shape = launch_shape(slab, "float32")
    y = emulate(csr, x, k, shape, plan, pipeline(shape), slab=slab)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


def test_choose_slab_cuts_k_into_32_column_slabs():
    assert choose_slab(256) == 32 and choose_slab(64) == 32
    assert choose_slab(32) == 32 and choose_slab(8) == 8      # one slab: nothing to split
    assert choose_slab(96) == 32 and choose_slab(255) == 255  # 32 must divide k
    assert choose_slab(256, slab=64) == 64 and choose_slab(256, slab=256) == 256
    with pytest.raises(ValueError):
        choose_slab(256, slab=48)


WRAPPER = """
#include "{path}"
template __global__ void spmm_rowwarp<float, int, 4, 2, 1, 4, 8>(long long, int, int, int,
    const int*, const int*, const int*, const float*, const float*, float*);
template __global__ void spmm_rowwarp<float, int, 4, 16, 1, 4, 8>(long long, int, int, int,
    const int*, const int*, const int*, const float*, const float*, float*);
template __global__ void spmm_rowwarp<float, int, 4, 32, 2, 1, 4>(long long, int, int, int,
    const int*, const int*, const int*, const float*, const float*, float*);
template __global__ void spmm_rowwarp<double, long long, 2, 32, 4, 1, 2>(long long, int, int, int,
    const long long*, const long long*, const long long*, const double*, const double*, double*);
"""


@pytest.fixture(scope="module")
def spmm_sass(tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    from sparsescope.sass.analysis import analyse_source

    folder = tmp_path_factory.mktemp("spmm_sass")
    kernel = folder / "spmm_rowwarp.cu"
    kernel.write_text(kernel_source("spmm_rowwarp.cu"))
    wrapper = folder / "instances.cu"
    wrapper.write_text(WRAPPER.format(path=kernel))
    return {a.demangled.split("(")[0]: a for a in analyse_source(wrapper, arch="sm_90")}


def test_sass_uses_k_wide_vector_loads_and_does_not_spill(spmm_sass):
    k8 = spmm_sass["void spmm_rowwarp<float, int, 4, 2, 1, 4, 8>"]
    k64 = spmm_sass["void spmm_rowwarp<float, int, 4, 16, 1, 4, 8>"]
    k256 = spmm_sass["void spmm_rowwarp<float, int, 4, 32, 2, 1, 4>"]
    for analysis in (k8, k64, k256):
        wide = {(i.opcode, i.access_bytes) for i in analysis.instructions}
        assert ("LDG", 16) in wide  # X gathered as float4: k-wide vector loads
        assert ("STG", 16) in wide  # Y stored as float4
        assert any(i.opcode == "SHFL" for i in analysis.instructions)
        res = analysis.resources  # __launch_bounds__(256, 2): at most 128 registers
        assert res.registers <= 128 and not res.local_bytes and not res.spill_store_bytes
    # DEPTH x 2 coalesced (col, val) loads and BATCH float4 gathers issued before the first
    # FMA that needs one: k = 8 stages 4 chunks and gathers 8 X rows a lane
    first_ffma = next(n for n, i in enumerate(k8.instructions) if i.opcode == "FFMA")
    early = [i for i in k8.instructions[:first_ffma] if i.opcode == "LDG"]
    assert sum(i.access_bytes == 16 for i in early) >= 6
    assert sum(i.access_bytes == 4 for i in early) >= 8
    double = spmm_sass["void spmm_rowwarp<double, long long, 2, 32, 4, 1, 2>"]
    assert ("LDG", 16) in {(i.opcode, i.access_bytes) for i in double.instructions}  # double2
    assert any(i.opcode in ("RED", "ATOM", "REDG", "ATOMG") for i in double.instructions)


def test_pow2_at_least_by_hand():
    from sparsescope.backends.spmm_cuda import pow2_at_least

    assert [pow2_at_least(n, cap) for n, cap in ((13, 32), (41, 32), (3, 8), (0, 8), (1, 8),
                                                 (8, 8))] == [16, 32, 4, 1, 1, 8]
