"""Kernels compiled once per session with nvcc (skipped with a reason when nvcc is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsescope._tools import find_tool, run_tool

#: CSR SpMV with int32, uint32 and int64 column indices; a streaming copy (no chain); a CSR
#: kernel unrolled 176 times (about 1,200 instructions) for the speed test.
KERNELS_CU = r"""
template <typename I>
__global__ void spmv_csr(int n, const I* __restrict__ row_ptr, const I* __restrict__ col,
                         const float* __restrict__ val, const float* __restrict__ x,
                         float* __restrict__ y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float sum = 0.f;
    for (I j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += val[j] * x[col[j]];
    y[row] = sum;
}
template __global__ void spmv_csr<int>(int, const int*, const int*, const float*, const float*,
                                       float*);
template __global__ void spmv_csr<unsigned>(int, const unsigned*, const unsigned*, const float*,
                                            const float*, float*);
template __global__ void spmv_csr<long long>(int, const long long*, const long long*, const float*,
                                             const float*, float*);

extern "C" __global__ void stream_copy(int n, const float* __restrict__ a, float* __restrict__ b) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        b[i] = a[i];
}

extern "C" __global__ void spmv_big(int n, const long long* __restrict__ row_ptr,
                                    const long long* __restrict__ col,
                                    const float* __restrict__ val, const float* __restrict__ x,
                                    float* __restrict__ y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float sum = 0.f;
    #pragma unroll 176
    for (long long j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += val[j] * x[col[j]];
    y[row] = sum;
}
"""


def _need_nvcc() -> None:
    if find_tool("nvcc") is None:
        pytest.skip("nvcc not found (CUDA toolkit absent): compiled-kernel tests need it")
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not found: install sparsescope[profile] or a CUDA toolkit")


@pytest.fixture(scope="session")
def kernels_cu(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sass_src") / "kernels.cu"
    path.write_text(KERNELS_CU)
    return path


@pytest.fixture(scope="session")
def fatbin_80_90(kernels_cu: Path) -> Path:
    """One nvcc call: a fatbin holding sm_80 and sm_90 code of :data:`KERNELS_CU`."""
    _need_nvcc()
    out = kernels_cu.with_suffix(".fatbin")
    run_tool("nvcc", ["-fatbin", "-lineinfo", "-gencode=arch=compute_80,code=sm_80",
                      "-gencode=arch=compute_90,code=sm_90", "-o", str(out), str(kernels_cu)])
    return out
