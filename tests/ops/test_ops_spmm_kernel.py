"""The own SpMM kernel without a GPU: its host-side plan, a lane-exact emulation of its index
arithmetic, and its SASS (compiled here with nvcc for sm_90)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends._gpu import kernel_source
from sparsescope.backends.spmm_cuda import (
    choose_slice_nnz,
    kernel_name,
    launch_shape,
    slice_plan,
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
    assert kernel_name("float32", 4, (4, 2, 1)) == "spmm_rowwarp<float, int, 4, 2, 1>"


def emulate(csr: sp.csr_matrix, x: np.ndarray, k: int, shape, plan) -> np.ndarray:
    """The kernel's lane arithmetic in NumPy, lane for lane (32 lanes per warp/slice)."""
    vec, group, chunks = shape
    groups = 32 // group
    lanes = np.arange(32)
    g, li = lanes // group, lanes % group
    y = np.full((csr.shape[0], k), np.nan)  # poisoned: an unwritten element stays NaN
    if plan.split_rows:
        y[:] = 0.0  # the host's memset
    for s in range(plan.n_slices):
        row, atomic = s, False
        if plan.slice_row is not None:
            r = int(plan.slice_row[s])
            atomic, row = r < 0, (-r - 1 if r < 0 else r)
        begin, end = int(plan.slice_ptr[s]), int(plan.slice_ptr[s + 1])
        acc = np.zeros((32, chunks, vec))
        for base in range(begin, end, 32):
            idx = base + lanes
            have = idx < end
            my_col = np.where(have, csr.indices[np.minimum(idx, csr.nnz - 1)], 0)
            my_val = np.where(have, csr.data[np.minimum(idx, csr.nnz - 1)], 0.0)
            for i in range(group):
                e = g + groups * i
                assert e.max() < 32
                j, a, ok = my_col[e], my_val[e], base + e < end
                for c in range(chunks):
                    cc = (li + group * c) * vec
                    m = ok & (cc < k)
                    for v in range(vec):
                        acc[m, c, v] += a[m] * x[j[m], cc[m] + v]
        off = group
        while off < 32:
            acc = acc + acc[lanes ^ off]
            off <<= 1
        for lane in lanes[g == 0]:
            for c in range(chunks):
                cc = (li[lane] + group * c) * vec
                if cc < k:
                    if atomic:
                        y[row, cc:cc + vec] += acc[lane, c]
                    else:
                        y[row, cc:cc + vec] = acc[lane, c]
    return y


@pytest.mark.parametrize("k", [1, 3, 6, 8, 40, 64, 256])
@pytest.mark.parametrize("slice_nnz", [32, 4096])
def test_emulated_kernel_matches_the_reference(k, slice_nnz):
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
    y = emulate(csr, x, k, launch_shape(k, "float32"), plan)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


WRAPPER = """
#include "{path}"
template __global__ void spmm_rowwarp<float, int, 4, 2, 1>(long long, int, int, const int*,
    const int*, const int*, const float*, const float*, float*);
template __global__ void spmm_rowwarp<float, int, 4, 16, 1>(long long, int, int, const int*,
    const int*, const int*, const float*, const float*, float*);
template __global__ void spmm_rowwarp<double, long long, 2, 32, 4>(long long, int, int,
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
    k8 = spmm_sass["void spmm_rowwarp<float, int, 4, 2, 1>"]
    k64 = spmm_sass["void spmm_rowwarp<float, int, 4, 16, 1>"]
    for analysis in (k8, k64):
        wide = {(i.opcode, i.access_bytes) for i in analysis.instructions}
        assert ("LDG", 16) in wide  # X gathered as float4: k-wide vector loads
        assert ("STG", 16) in wide  # Y stored as float4
        assert any(i.opcode == "SHFL" for i in analysis.instructions)
        res = analysis.resources
        assert res.registers <= 64 and not res.local_bytes and not res.spill_store_bytes
    double = spmm_sass["void spmm_rowwarp<double, long long, 2, 32, 4>"]
    assert ("LDG", 16) in {(i.opcode, i.access_bytes) for i in double.instructions}  # double2
    assert any(i.opcode in ("RED", "ATOM", "REDG", "ATOMG") for i in double.instructions)
