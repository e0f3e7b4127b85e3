"""Measured GPU ceilings land in plausible H200 ranges; the API picks the GPU and its backends."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def measured():
    from sparsescope.hardware.gpu_ceilings import measure_gpu_ceilings

    start = time.perf_counter()
    ceilings = measure_gpu_ceilings()
    return ceilings, time.perf_counter() - start


def test_ceilings_report_what_they_measured(measured):
    ceilings, seconds = measured
    print(f"\nceilings of {ceilings.device} in {seconds:.2f} s: copy "
          f"{ceilings.copy_bw_gb_s:,.0f} GB/s, read {ceilings.read_bw_gb_s:,.0f} GB/s, L2 "
          f"{ceilings.l2_bw_gb_s:,.0f} GB/s, DRAM {ceilings.dram_latency_ns:.0f} ns, L2 "
          f"{ceilings.l2_latency_ns:.0f} ns, FP32 {ceilings.fp32_gflops:,.0f} GFLOP/s, PDL "
          f"launch {ceilings.pdl_launch_us} us")
    assert ceilings.device and ceilings.copy_bw_gb_s > 0


def test_ceilings_are_plausible_for_the_device(measured):
    ceilings, _ = measured
    assert set(ceilings.method) == {"copy_bw_gb_s", "read_bw_gb_s", "l2_bw_gb_s",
                                    "l2_write_bw_gb_s",
                                    "dram_latency_ns", "l2_latency_ns", "fp32_gflops",
                                    "dram_gather_gsectors_s", "l2_gather_gsectors_s",
                                    "launch_us", "call_us", "next_launch_us",
                                    "pdl_launch_us", "flush_writeback_share"}
    assert ceilings.l2_latency_ns < ceilings.dram_latency_ns
    # random sectors: fewer per second from DRAM than from L2, and fewer bytes per second
    # than a stream (32 B each at most the read bandwidth)
    assert ceilings.dram_gather_gsectors_s < ceilings.l2_gather_gsectors_s
    assert ceilings.dram_gather_gsectors_s * 32 < ceilings.read_bw_gb_s
    assert 0.5 < ceilings.launch_us < 20
    # the protocol's own call of an empty kernel: at least a launch, and a further launch
    # queued behind the first costs something, at most a whole call more
    assert ceilings.launch_us * 0.8 < ceilings.call_us < 30
    assert 0.0 < ceilings.next_launch_us <= ceilings.call_us
    # PDL (cuda.bindings comes with the nvmath extra; sm_90 and later): a call that starts
    # behind the previous one costs less than a further ordinary launch
    from sparsescope.hardware.programmatic_launch import available

    if available()[0]:
        assert 0.0 < ceilings.pdl_launch_us < ceilings.next_launch_us
    else:
        assert ceilings.pdl_launch_us is None
        assert ceilings.method["pdl_launch_us"].startswith("not measured: ")
    # the flush's dirty lines cost the next read at most about as much as reading them again
    assert 0.0 <= ceilings.flush_writeback_share < 1.5
    assert ceilings.l2_bw_gb_s > ceilings.read_bw_gb_s
    # stores kept in the L2: the same order as its reads (a DRAM-bound store would be ~copy)
    assert 0.3 * ceilings.l2_bw_gb_s < ceilings.l2_write_bw_gb_s < 2 * ceilings.l2_bw_gb_s
    if "H200" in ceilings.device:  # HBM3e 4.8 TB/s datasheet; ~4.3 TB/s copies seen here
        assert 3_000 < ceilings.copy_bw_gb_s < 5_000
        assert 3_000 < ceilings.read_bw_gb_s < 5_000
        assert 300 < ceilings.dram_latency_ns < 1_500
        assert 50 < ceilings.l2_latency_ns < 600
        assert 20_000 < ceilings.fp32_gflops < 70_000  # 66.9 TFLOP/s at 1,980 MHz boost
        assert 10 < ceilings.dram_gather_gsectors_s < 140  # 43 G sectors/s seen 2026-11-24


def test_all_means_every_gpu_backend_when_a_gpu_answers():
    from sparsescope.api.runs import _choose_backends

    gpu = ["cuda-csr-scalar", "cuda-csr-vector", "cuda-spmv-adaptive", "cuda-spmv-auto",
           "cuda-spmv-auto-rules", "cuda-spmv-blocked16", "cuda-spmv-delta16",
           "cuda-spmv-delta16-tiles", "cuda-spmv-merge", "cuda-spmv-sell",
           "cupy-cusparse-i32", "nvmath-cusparse-i32", "torch-cusparse-i32",
           "torch-cusparse-i64"]  # SpMV ones only
    assert _choose_backends(["all"]) == gpu
    assert _choose_backends(["torch-cusparse-i64", "all"]) == ["torch-cusparse-i64",
                                                               *gpu[:-1]]
    assert _choose_backends(["all", "scipy-cpu"]) == [*gpu, "scipy-cpu"]
    # no --backend: the GPU defaults, cuSPARSE routes plus our plain and auto-selected kernels
    assert _choose_backends(None) == ["torch-cusparse-i64", "torch-cusparse-i32",
                                      "cupy-cusparse-i32", "cuda-csr-scalar", "cuda-csr-vector",
                                      "cuda-spmv-auto"]


def test_device_of_a_gpu_run():
    from sparsescope.api import device_context

    device = device_context(["cuda-csr-vector"])
    spec, ceilings = device.spec, device.ceilings
    assert spec.kind == "gpu" and spec.sm_count > 0
    assert ceilings.copy_bw_gb_s > 0 and ceilings.dram_latency_ns > 0
    assert device.driver and device.modelled and device.refine is not None
