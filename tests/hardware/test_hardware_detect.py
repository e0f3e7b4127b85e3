"""Device detection: no GPU here, probes parsed from fake torch/cupy modules, the CPU spec."""

from __future__ import annotations

import sys
import types

import pytest

from sparsescope.hardware import cpuinfo, detect
from sparsescope.hardware.types import MeasuredCeilings


@pytest.fixture(autouse=True)
def _fresh_probe_cache():
    detect.gpu_available.cache_clear()
    yield
    detect.gpu_available.cache_clear()


def _no_gpu_libraries() -> bool:
    return not (detect._has_module("torch") or detect._has_module("cupy"))


@pytest.mark.skipif(not _no_gpu_libraries(), reason="torch or cupy installed here")
def test_no_gpu_on_this_machine():
    assert detect.detect_gpu() is None
    assert detect.gpu_available() is False


def test_none_when_neither_library_is_installed(monkeypatch):
    monkeypatch.setattr(detect, "_has_module", lambda name: False)
    assert detect.detect_gpu() is None
    assert detect.gpu_available() is False


def fake_torch(*, available: bool, name: str = "NVIDIA H200") -> types.ModuleType:
    """The properties PyTorch 2.11 (CUDA 13.0) reported on a real H200, driver 580.159.04."""
    props = types.SimpleNamespace(
        name=name, major=9, minor=0, multi_processor_count=132,
        total_memory=150_109_880_320, L2_cache_size=62_914_560,
        max_threads_per_multi_processor=2048, regs_per_multiprocessor=65_536,
        shared_memory_per_multiprocessor=233_472, clock_rate=1_980_000,
        memory_clock_rate=3_201_000, memory_bus_width=6016, warp_size=32)
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: available,
                                       get_device_properties=lambda index: props)
    torch.version = types.SimpleNamespace(cuda="12.8")
    return torch


@pytest.fixture
def only(monkeypatch):
    """Make exactly the given fake libraries importable (and nvidia-smi absent)."""
    def install(**modules):
        monkeypatch.setattr(detect, "_has_module", lambda name: name in modules)
        monkeypatch.setattr(detect.shutil, "which", lambda name: None)
        for name, module in modules.items():
            monkeypatch.setitem(sys.modules, name, module)
    return install


def test_torch_probe_reads_the_device_properties(only):
    only(torch=fake_torch(available=True))
    det = detect.detect_gpu()
    assert det == detect.DetectedGpu(
        name="NVIDIA H200", compute_capability="9.0", sm_count=132,
        total_memory_bytes=150_109_880_320, l2_bytes=62_914_560, driver="", runtime="12.8",
        library="torch", max_threads_per_sm=2048, registers_per_sm=65_536,
        shared_mem_per_sm_bytes=233_472, sm_clock_mhz=1980.0, memory_clock_mhz=3201.0,
        memory_bus_bits=6016)
    assert detect.gpu_available() is True


def test_unknown_gpu_through_torch_takes_missing_limits_from_the_cuda_guide(only):
    only(torch=fake_torch(available=True, name="NVIDIA GH100 Engineering Sample"))
    spec = detect.spec_for_detected(detect.detect_gpu())
    assert spec.name == "NVIDIA GH100 Engineering Sample"
    # 2 x 3,201 MHz x 6,016 bit / 8 = 4,814.304 GB/s; 132 x 128 x 2 x 1.98 GHz = 66,908.16
    assert spec.peak_bw_gb_s == pytest.approx(4814.304)
    assert spec.fp32_peak_gflops == pytest.approx(66_908.16)
    assert (spec.l2_bytes, spec.max_warps_per_sm, spec.memory) == (62_914_560, 64, "150 GB")
    assert spec.max_blocks_per_sm == 32  # PyTorch does not report it
    assert spec.sources["max_blocks_per_sm"] == "CUDA C++ Programming Guide, CC 9.0 (not queried)"
    assert spec.sources["registers_per_sm"] == "queried from device (torch)"


def test_torch_without_cuda_means_no_gpu(only):
    only(torch=fake_torch(available=False))
    assert detect.detect_gpu() is None


def fake_cupy(attributes: dict[int, int], *, devices: int = 1) -> types.ModuleType:
    class CUDARuntimeError(RuntimeError):
        pass

    def get_count():
        if devices < 0:
            raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
        return devices

    runtime = types.SimpleNamespace(
        getDeviceCount=get_count,
        deviceGetAttribute=lambda attr, dev: attributes[attr],
        getDeviceProperties=lambda dev: {"name": b"NVIDIA L40S", "totalGlobalMem": 48 * 10**9},
        runtimeGetVersion=lambda: 12080)
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(runtime=runtime)
    return cupy


L40S_ATTRIBUTES = {13: 2_520_000, 16: 142, 36: 9_001_000, 37: 384, 38: 100_663_296, 39: 1536,
                   75: 8, 76: 9, 81: 102_400, 82: 65_536, 106: 24}


def test_cupy_probe_reads_attributes_and_builds_a_spec_for_an_unknown_gpu(only):
    only(cupy=fake_cupy(L40S_ATTRIBUTES))
    det = detect.detect_gpu()
    assert (det.name, det.library, det.runtime, det.compute_capability) == (
        "NVIDIA L40S", "cupy", "12.8", "8.9")
    assert (det.sm_count, det.l2_bytes, det.max_blocks_per_sm) == (142, 100_663_296, 24)
    spec = detect.spec_for_detected(det)
    assert spec.name == "NVIDIA L40S"
    assert (spec.max_warps_per_sm, spec.max_threads_per_sm) == (48, 1536)
    # 2 x 9,001 MHz x 384 bit / 8 = 864.096 GB/s; 142 x 128 x 2 x 2.52 GHz = 91,607.04 GFLOP/s
    assert spec.peak_bw_gb_s == pytest.approx(864.096)
    assert spec.fp32_peak_gflops == pytest.approx(91_607.04)
    assert spec.dram_latency_ns == detect.DEFAULT_GPU_LATENCY_NS
    assert spec.sources["sm_count"] == "queried from device (cupy)"
    assert "derived" in spec.sources["peak_bw_gb_s"]


def test_cupy_without_a_device_means_no_gpu(only):
    only(cupy=fake_cupy(L40S_ATTRIBUTES, devices=-1))
    assert detect.detect_gpu() is None
    only(cupy=fake_cupy(L40S_ATTRIBUTES, devices=0))
    assert detect.detect_gpu() is None


def test_torch_is_preferred_and_cupy_is_the_fallback(only):
    only(torch=fake_torch(available=False), cupy=fake_cupy(L40S_ATTRIBUTES))
    assert detect.detect_gpu().library == "cupy"
    only(torch=fake_torch(available=True), cupy=fake_cupy(L40S_ATTRIBUTES))
    assert detect.detect_gpu().library == "torch"


def test_a_known_gpu_gets_its_table_entry(only):
    only(torch=fake_torch(available=True, name="NVIDIA H100 80GB HBM3"))
    spec = detect.spec_for_detected(detect.detect_gpu())
    assert spec.name == "H100-SXM"
    assert spec.peak_bw_gb_s == 3350.0


def test_driver_version_is_empty_without_nvml_or_nvidia_smi(only):
    only()
    assert detect.driver_version() == ""


def test_cpu_spec_uses_measured_ceilings_and_os_facts():
    ceilings = MeasuredCeilings(device="test cpu", copy_bw_gb_s=23.5, read_bw_gb_s=16.0,
                                fp32_gflops=310.0,
                                method={"copy_bw_gb_s": "np.copyto, 2 x 256 MiB"})
    spec = detect.cpu_spec(ceilings)
    assert spec.kind == "cpu"
    assert spec.compute_capability == ""
    assert spec.sm_count == cpuinfo.logical_cores()
    assert spec.peak_bw_gb_s == 23.5
    assert spec.fp32_peak_gflops == 310.0
    assert spec.l2_bytes == cpuinfo.last_level_cache_bytes()
    assert spec.vendor_name == cpuinfo.cpu_model_name()
    assert spec.sources["peak_bw_gb_s"] == "measured: np.copyto, 2 x 256 MiB"
    assert spec.sources["l2_bytes"].startswith(("os:", "estimate:"))
    assert spec.sources["l2_bytes"] == cpuinfo.evictable_cache().reading
    assert cpuinfo.evictable_cache().name in spec.sources["l2_bytes"]
    assert spec.sources["sm_count"].startswith("os:")


def test_cpu_spec_names_a_vm_cache_and_its_bound(monkeypatch, tmp_path):
    """A VM reporting a 480 MiB L3 on two vCPUs: the spec keeps the report and its source says
    what the timer flushes."""
    levels = (cpuinfo.CacheLevel(2, "Unified", 2 << 20, 1),
              cpuinfo.CacheLevel(3, "Unified", 480 << 20, 2))
    cache = cpuinfo.choose_evictable(levels, virtual=True)
    monkeypatch.setattr(cpuinfo, "evictable_cache", lambda: cache)
    spec = detect.cpu_spec(MeasuredCeilings(device="vm", copy_bw_gb_s=20.0, fp32_gflops=60.0))
    assert spec.l2_bytes == 480 << 20
    assert spec.sources["l2_bytes"] == (
        "os: /sys/devices/system/cpu/cpu0/cache: LLC (L3, as the VM reports it), 480.0 MiB "
        "shared by 2 CPUs; more than 16 MiB a CPU is the host's cache, so the timer flushes "
        "as if it held 32 MiB (2 x 16 MiB)")
