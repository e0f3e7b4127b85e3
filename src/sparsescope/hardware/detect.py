"""Find the device that will run the cases: a real GPU through PyTorch or CuPy, else the CPU.

GPU libraries are imported inside the functions, never at module import. A GPU is "present"
only when a library can open it and read its properties, not merely when a library imports.
"""

from __future__ import annotations

import functools
import importlib.util
import shutil
import subprocess
from dataclasses import dataclass

from sparsescope.hardware import cpuinfo
from sparsescope.hardware.specs import (
    FP32_LANES_PER_SM,
    SM_LIMITS,
    fp32_peak_gflops,
    match_device_name,
)
from sparsescope.hardware.types import DeviceSpec, MeasuredCeilings

#: DRAM latency assumed for a GPU that is not in the spec table (no device query reports one).
DEFAULT_GPU_LATENCY_NS = 300.0
#: DRAM latency assumed for the host CPU (not measured: NumPy cannot pointer-chase).
DEFAULT_CPU_LATENCY_NS = 100.0

# cudaDeviceAttr numbers (CUDA runtime API, driver_types.h); the cudaDeviceProp clock fields
# were removed in CUDA 13, so clocks are read as attributes.
_ATTR = {"clock_khz": 13, "sm_count": 16, "mem_clock_khz": 36, "bus_bits": 37, "l2_bytes": 38,
         "threads_per_sm": 39, "cc_major": 75, "cc_minor": 76, "smem_per_sm": 81,
         "regs_per_sm": 82, "blocks_per_sm": 106}


@dataclass(frozen=True)
class DetectedGpu:
    """Properties read from a real device (0 where the library does not report a figure)."""

    name: str
    """Name as the driver reports it, e.g. ``NVIDIA H200``."""
    compute_capability: str
    """e.g. ``9.0``."""
    sm_count: int
    total_memory_bytes: int
    l2_bytes: int
    driver: str
    """Driver version (e.g. ``570.86.15``), empty when NVML and nvidia-smi are both missing."""
    runtime: str
    """CUDA runtime version the library uses, e.g. ``12.8``."""
    library: str
    """``torch`` or ``cupy``: which library opened the device."""
    max_threads_per_sm: int = 0
    max_blocks_per_sm: int = 0
    registers_per_sm: int = 0
    shared_mem_per_sm_bytes: int = 0
    sm_clock_mhz: float = 0.0
    """Maximum SM clock."""
    memory_clock_mhz: float = 0.0
    """Memory clock as CUDA reports it (data moves twice per clock)."""
    memory_bus_bits: int = 0


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def driver_version() -> str:
    """Driver version through NVML (nvidia-ml-py), else ``nvidia-smi``; empty when neither works."""
    if _has_module("pynvml"):
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                version = pynvml.nvmlSystemGetDriverVersion()
                return version.decode() if isinstance(version, bytes) else str(version)
            finally:
                pynvml.nvmlShutdown()
        except Exception:  # NVML present but no driver: fall through to nvidia-smi
            pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20)
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip().splitlines()[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return ""


def _probe_torch() -> DetectedGpu | None:
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)

    def prop(name: str, default=0):
        return getattr(props, name, default) or default

    return DetectedGpu(
        name=str(props.name), compute_capability=f"{props.major}.{props.minor}",
        sm_count=int(props.multi_processor_count), total_memory_bytes=int(props.total_memory),
        l2_bytes=int(prop("L2_cache_size")), driver=driver_version(),
        runtime=str(torch.version.cuda or ""), library="torch",
        max_threads_per_sm=int(prop("max_threads_per_multi_processor")),
        registers_per_sm=int(prop("regs_per_multiprocessor")),
        shared_mem_per_sm_bytes=int(prop("shared_memory_per_multiprocessor")),
        sm_clock_mhz=prop("clock_rate") / 1000.0,
        memory_clock_mhz=prop("memory_clock_rate") / 1000.0,
        memory_bus_bits=int(prop("memory_bus_width")),
    )


def _probe_cupy() -> DetectedGpu | None:
    import cupy

    runtime = cupy.cuda.runtime
    try:
        if runtime.getDeviceCount() < 1:
            return None
    except Exception:  # CUDARuntimeError: no driver or no device
        return None

    def attr(key: str) -> int:
        try:
            return int(runtime.deviceGetAttribute(_ATTR[key], 0))
        except Exception:
            return 0

    props = runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    version = runtime.runtimeGetVersion()  # e.g. 12080 -> "12.8"
    return DetectedGpu(
        name=name, compute_capability=f"{attr('cc_major')}.{attr('cc_minor')}",
        sm_count=attr("sm_count"), total_memory_bytes=int(props["totalGlobalMem"]),
        l2_bytes=attr("l2_bytes"), driver=driver_version(),
        runtime=f"{version // 1000}.{version % 1000 // 10}", library="cupy",
        max_threads_per_sm=attr("threads_per_sm"), max_blocks_per_sm=attr("blocks_per_sm"),
        registers_per_sm=attr("regs_per_sm"), shared_mem_per_sm_bytes=attr("smem_per_sm"),
        sm_clock_mhz=attr("clock_khz") / 1000.0, memory_clock_mhz=attr("mem_clock_khz") / 1000.0,
        memory_bus_bits=attr("bus_bits"),
    )


def detect_gpu() -> DetectedGpu | None:
    """Probe device 0 through PyTorch (when it sees CUDA), else CuPy; None when no GPU opens."""
    for module, probe in (("torch", _probe_torch), ("cupy", _probe_cupy)):
        if not _has_module(module):
            continue
        try:
            found = probe()
        except Exception:  # a broken install or driver means "no usable GPU through it"
            found = None
        if found is not None:
            return found
    return None


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """Whether a real GPU can be opened (probed once per process)."""
    return detect_gpu() is not None


def spec_for_detected(det: DetectedGpu) -> DeviceSpec:
    """The table entry when the driver name matches one, else a spec built from the probe.

    Built from the probe: ``peak_bw = 2 x memory clock x bus width / 8`` (double data rate),
    ``fp32 = SMs x FP32 lanes x 2 x SM clock``; DRAM latency is the 300 ns default estimate.
    A per-SM limit the library does not report (PyTorch has no max blocks per SM) comes from
    the CUDA guide's table for the compute capability, when it is known.
    """
    spec = match_device_name(det.name)
    if spec is not None:
        return spec
    queried = f"queried from device ({det.library})"
    guide = SM_LIMITS.get(det.compute_capability, {})
    sources: dict[str, str] = {}

    def limit(field: str, value: int) -> int:
        if value or field not in guide:
            sources[field] = queried
            return value
        sources[field] = f"CUDA C++ Programming Guide, CC {det.compute_capability} (not queried)"
        return guide[field]

    threads = limit("max_threads_per_sm", det.max_threads_per_sm)
    blocks = limit("max_blocks_per_sm", det.max_blocks_per_sm)
    registers = limit("registers_per_sm", det.registers_per_sm)
    shared = limit("shared_mem_per_sm_bytes", det.shared_mem_per_sm_bytes)
    bw = 2 * det.memory_clock_mhz * 1e6 * det.memory_bus_bits / 8 / 1e9
    lanes = FP32_LANES_PER_SM.get(det.compute_capability, 128)
    sources.update({key: queried for key in (
        "compute_capability", "sm_count", "l2_bytes", "sm_clock_mhz")})
    sources.update({
        "max_warps_per_sm": f"{sources['max_threads_per_sm']}: max threads per SM / 32",
        "warp_schedulers_per_sm": "assumed: 4 per SM on every architecture since Volta",
        "peak_bw_gb_s": f"derived from the device query: 2 x {det.memory_clock_mhz:g} MHz x "
                        f"{det.memory_bus_bits} bit / 8",
        "fp32_peak_gflops": f"derived: {det.sm_count} SMs x {lanes} lanes x 2 x "
                            f"{det.sm_clock_mhz:g} MHz",
        "dram_latency_ns": f"default estimate {DEFAULT_GPU_LATENCY_NS:g} ns (no query exists)",
        "memory": queried,
    })
    return DeviceSpec(
        name=det.name, vendor_name=det.name, kind="gpu",
        compute_capability=det.compute_capability, sm_count=det.sm_count,
        max_warps_per_sm=threads // 32, max_threads_per_sm=threads,
        max_blocks_per_sm=blocks, registers_per_sm=registers,
        shared_mem_per_sm_bytes=shared, warp_schedulers_per_sm=4,
        l2_bytes=det.l2_bytes, peak_bw_gb_s=bw,
        fp32_peak_gflops=fp32_peak_gflops(det.sm_count, det.compute_capability,
                                          det.sm_clock_mhz),
        sm_clock_mhz=det.sm_clock_mhz, dram_latency_ns=DEFAULT_GPU_LATENCY_NS,
        memory=f"{det.total_memory_bytes / 1e9:.0f} GB", sources=sources,
    )


def cpu_spec(ceilings: MeasuredCeilings) -> DeviceSpec:
    """The host CPU as a :class:`DeviceSpec`: OS facts plus the measured bandwidth and FP32.

    ``sm_count`` is the number of logical cores (one thread each); ``peak_bw_gb_s`` is the
    measured copy bandwidth, ``l2_bytes`` the last-level cache as the OS reports it, its source
    naming it as the machine does (``LLC (L3, as the VM reports it)``) and saying what the
    host timer flushes (:func:`sparsescope.hardware.cpuinfo.evictable_cache`: a VM's report of
    its host's L3 is bounded).
    """
    cache = cpuinfo.evictable_cache()
    mhz, mhz_source = cpuinfo.cpu_max_mhz()
    os_cores = "os: logical cores available to this process"
    return DeviceSpec(
        name="cpu", vendor_name=cpuinfo.cpu_model_name(), kind="cpu", compute_capability="",
        sm_count=cpuinfo.logical_cores(), max_warps_per_sm=1, max_threads_per_sm=1,
        max_blocks_per_sm=1, registers_per_sm=0, shared_mem_per_sm_bytes=0,
        warp_schedulers_per_sm=1, l2_bytes=cache.reported_bytes,
        peak_bw_gb_s=ceilings.copy_bw_gb_s or 0.0,
        fp32_peak_gflops=ceilings.fp32_gflops or 0.0, sm_clock_mhz=mhz,
        dram_latency_ns=DEFAULT_CPU_LATENCY_NS,
        memory=f"{cpuinfo.total_ram_bytes() / 1e9:.0f} GB RAM",
        sources={
            "vendor_name": "os: /proc/cpuinfo model name (or platform.processor)",
            "sm_count": os_cores,
            "max_warps_per_sm": "convention: one thread per logical core",
            "max_threads_per_sm": "convention: one thread per logical core",
            "l2_bytes": cache.reading,
            "peak_bw_gb_s": "measured: " + ceilings.method.get("copy_bw_gb_s", "RAM copy"),
            "fp32_peak_gflops": "measured: " + ceilings.method.get("fp32_gflops", "sgemm"),
            "sm_clock_mhz": mhz_source,
            "dram_latency_ns": f"estimate {DEFAULT_CPU_LATENCY_NS:g} ns: typical DRAM load "
                               "latency, not measured",
            "memory": "os: physical pages x page size",
        },
    )
