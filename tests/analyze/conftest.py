"""Fixtures of the analyze tests: small kernels with one planted defect each, compiled once per
session with nvcc; the H200 recordings read once."""

from __future__ import annotations

from pathlib import Path

import pytest
from _analyze_helpers import SCALAR_IDEAL_BYTES

from sparsescope._tools import find_tool

#: One defect per kernel (and one clean kernel): a strided load (lane stride 17 floats), register
#: spills (__launch_bounds__ caps registers at 32 for 40 live values), a branch on threadIdx & 1,
#: and a dependent load a[idx[i]].
PLANTED_CU = r"""
extern "C" __global__ void clean_copy(const float* __restrict__ a, float* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
extern "C" __global__ void strided_load(const float* __restrict__ a, float* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i * 17];
}
extern "C" __global__ void __launch_bounds__(256, 8)
spill_regs(const float* __restrict__ a, float* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[40];
#pragma unroll
    for (int k = 0; k < 40; ++k) v[k] = a[i + k * n];
    float s = 0.f;
#pragma unroll
    for (int r = 0; r < 3; ++r) {
#pragma unroll
        for (int k = 0; k < 40; ++k) s += v[k] * v[(k * 7 + r) % 40];
    }
    b[i] = s;
}
extern "C" __global__ void divergent_branch(const float* __restrict__ a, float* __restrict__ b,
                                            int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    if (threadIdx.x & 1) {
#pragma unroll 1
        for (int k = 0; k < 64; ++k) x = __sinf(x) * 1.5f + 0.25f;
    } else {
#pragma unroll 1
        for (int k = 0; k < 64; ++k) x = __cosf(x) * 0.5f - 0.75f;
    }
    b[i] = x;
}
extern "C" __global__ void dependent_chain(const int* __restrict__ idx,
                                           const float* __restrict__ a, float* __restrict__ b,
                                           int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[idx[i]];
}
extern "C" __global__ void conflicted_shared(float* __restrict__ out) {
    __shared__ float tile[32 * 32];
    tile[threadIdx.x * 32] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x * 32 + 1];
}
"""


@pytest.fixture(scope="session")
def planted_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("planted")


@pytest.fixture(scope="session")
def planted(planted_dir):
    """name -> KernelAnalysis of :data:`PLANTED_CU` for sm_90 (one nvcc call for all; the cubin
    stays in the session's temporary folder)."""
    if find_tool("nvcc") is None or find_tool("cuobjdump") is None:
        pytest.skip("nvcc/cuobjdump not found: the planted-defect tests compile kernels")
    from sparsescope.sass.analysis import analyse_source

    src = planted_dir / "planted.cu"
    src.write_text(PLANTED_CU)
    return {a.name: a for a in analyse_source(src, arch="sm_90", out_dir=planted_dir)}


@pytest.fixture(scope="session")
def scalar_evidence(h200_fixtures):
    """The scalar_device profile: raw page, source page and cuobjdump SASS."""
    from sparsescope.analyze.sources import evidence_from_profile_file

    return evidence_from_profile_file(
        h200_fixtures / "scalar_raw.csv", source_csv=h200_fixtures / "scalar_source_sass.csv",
        sass=h200_fixtures / "scalar_device_cuobjdump.sass", ideal_bytes=SCALAR_IDEAL_BYTES)


@pytest.fixture(scope="session")
def cant_csv(h200_fixtures) -> Path:
    return h200_fixtures / "ncu_metrics_cant_analog.csv"
