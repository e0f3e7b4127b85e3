"""Datasheet spec table of the GPUs sparsescope models, each figure with its source.

Per-SM limits come from the compute-capability table of the CUDA C++ Programming Guide; counts,
clocks, bandwidths and cache sizes from NVIDIA datasheets and architecture whitepapers; the FP32
peak is derived as ``SMs x FP32 lanes/SM x 2 flops/FMA x boost clock``. DRAM latency has no
datasheet figure: the values are estimates (stated as such in ``sources``) and are the model's
Little's-law input, overridable per run.

Cache sizes use binary megabytes (``50 MB`` = 50 x 2^20 bytes), as ``cudaDeviceProp.l2CacheSize``
reports them (52,428,800 on an H100).
"""

from __future__ import annotations

import re

from sparsescope.errors import UnknownNameError
from sparsescope.hardware.types import DeviceSpec

MiB = 1024 * 1024
KiB = 1024

_GUIDE = "CUDA C++ Programming Guide, compute capability {cc} table"

#: Per-SM limits by compute capability (CUDA C++ Programming Guide, "Compute Capabilities").
SM_LIMITS: dict[str, dict[str, int]] = {
    "8.0": dict(max_warps_per_sm=64, max_threads_per_sm=2048, max_blocks_per_sm=32,
                registers_per_sm=65536, shared_mem_per_sm_bytes=164 * KiB,
                warp_schedulers_per_sm=4),
    "8.9": dict(max_warps_per_sm=48, max_threads_per_sm=1536, max_blocks_per_sm=24,
                registers_per_sm=65536, shared_mem_per_sm_bytes=100 * KiB,
                warp_schedulers_per_sm=4),
    "9.0": dict(max_warps_per_sm=64, max_threads_per_sm=2048, max_blocks_per_sm=32,
                registers_per_sm=65536, shared_mem_per_sm_bytes=228 * KiB,
                warp_schedulers_per_sm=4),
    "10.0": dict(max_warps_per_sm=64, max_threads_per_sm=2048, max_blocks_per_sm=32,
                 registers_per_sm=65536, shared_mem_per_sm_bytes=228 * KiB,
                 warp_schedulers_per_sm=4),
}

#: One SM's unified data cache, shared by its L1 and its shared memory, in KiB, and the
#: shared-memory carveouts the driver can set at a launch (CUDA C++ Programming Guide,
#: compute capability tables; the Ampere and Hopper tuning guides): the L1 keeps the rest.
UNIFIED_L1_SHARED_KIB = {"8.0": 192, "8.6": 128, "8.9": 128, "9.0": 256, "10.0": 256}
SHARED_CARVEOUTS_KIB = {
    "8.0": (0, 8, 16, 32, 64, 100, 132, 164),
    "8.6": (0, 8, 16, 32, 64, 100),
    "8.9": (0, 8, 16, 32, 64, 100),
    "9.0": (0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
    "10.0": (0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
}

#: FP32 lanes per SM (whitepapers: GA100 64; AD10x, GH100 and GB100 128).
FP32_LANES_PER_SM = {"7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128,
                     "9.0": 128, "10.0": 128, "10.3": 128, "12.0": 128}


def fp32_peak_gflops(sm_count: int, compute_capability: str, clock_mhz: float) -> float:
    """Peak non-tensor FP32: ``SMs x lanes/SM x 2 flops per FMA x clock`` in GFLOP/s."""
    return sm_count * FP32_LANES_PER_SM.get(compute_capability, 128) * 2 * clock_mhz / 1000.0


#: Dense TF32 tensor-core FMAs per SM per clock (datasheet peak / (SMs x boost clock x 2)):
#: A100 156 TFLOPS = 108 x 1.41 GHz x 512 x 2; H100 SXM 495 TFLOPS = 132 x 1.83 GHz x 1,024 x 2
#: (the sparsity figures, 312 and 989, are twice these); GA10x and AD10x 128 (RTX 3090 35.6
#: TFLOPS = 82 x 1.695 GHz x 128 x 2; RTX 4090 82.6 = 128 x 2.52 GHz x 128 x 2). Others: not
#: known here (no tensor term in a prediction).
TF32_TENSOR_FMA_PER_SM_CLOCK = {"8.0": 512, "8.6": 128, "8.9": 128, "9.0": 1024}


def tf32_tensor_gflops(sm_count: int, compute_capability: str, clock_mhz: float) -> float | None:
    """Dense TF32 tensor peak, ``SMs x FMAs/SM/clock x 2 x clock`` in GFLOP/s; None when the
    architecture's figure is not known. H200 at 1,980 MHz: 132 x 1,024 x 2 x 1.98 = 535,265."""
    per = TF32_TENSOR_FMA_PER_SM_CLOCK.get(compute_capability)
    return sm_count * per * 2 * clock_mhz / 1000.0 if per else None


def _sm_sources(cc: str, **extra: str) -> dict[str, str]:
    guide = _GUIDE.format(cc=cc)
    base = {f: guide for f in SM_LIMITS[cc]}
    base["compute_capability"] = guide
    base["warp_schedulers_per_sm"] = "NVIDIA architecture whitepaper: 4 SM sub-partitions"
    base.update(extra)
    return base


def _gpu(name: str, vendor_name: str, cc: str, *, sm_count: int, l2_mb: float, bw_gb_s: float,
         fp32_gflops: float, clock_mhz: float, latency_ns: float, memory: str,
         sources: dict[str, str]) -> DeviceSpec:
    return DeviceSpec(name=name, vendor_name=vendor_name, kind="gpu", compute_capability=cc,
                      sm_count=sm_count, l2_bytes=int(l2_mb * MiB), peak_bw_gb_s=bw_gb_s,
                      fp32_peak_gflops=fp32_gflops, sm_clock_mhz=clock_mhz,
                      dram_latency_ns=latency_ns, memory=memory,
                      sources=_sm_sources(cc, **sources), **SM_LIMITS[cc])


_HOPPER_LATENCY = ("estimate, not a datasheet figure: same Hopper HBM memory system as the H200, "
                   "whose seed estimate is 300 ns (seed 000 sec. 2.1; sensitivity 200-400 ns)")
_ADA_LATENCY = ("estimate, not a datasheet figure: GDDR6X behind a large L2; GeForce pointer-"
                "chase microbenchmarks put VRAM latency above HBM Hopper's; 400 ns assumed, "
                "override with the run's latency setting")

_SPECS: tuple[DeviceSpec, ...] = (
    _gpu("H200", "NVIDIA H200 SXM 141GB", "9.0", sm_count=132, l2_mb=50, bw_gb_s=4800.0,
         fp32_gflops=66900.0, clock_mhz=1980.0, latency_ns=300.0, memory="141 GB HBM3e",
         sources={
             "sm_count": "seed 000 sec. 2.1; NVIDIA Hopper whitepaper (132 SMs on SXM)",
             "max_warps_per_sm": "seed 000 sec. 2.1 (2,048 threads / 32); CUDA guide CC 9.0",
             "max_threads_per_sm": "seed 000 sec. 2.1; CUDA guide CC 9.0",
             "registers_per_sm": "seed 000 sec. 2.1; CUDA guide CC 9.0",
             "warp_schedulers_per_sm": "seed 000 sec. 2.1; Hopper whitepaper",
             "l2_bytes": "seed 000 sec. 2.1 (~50 MB); NVIDIA Hopper whitepaper (50 MB on H100); "
                         "a real H200 (driver 580.159.04) reports l2CacheSize 62,914,560 "
                         "(60 MiB)",
             "peak_bw_gb_s": "NVIDIA H200 datasheet: 4.8 TB/s (seed 000 sec. 2.1)",
             "fp32_peak_gflops": "derived: 132 SMs x 128 lanes x 2 x 1.98 GHz = 66,908, "
                                 "seed 000 sec. 2.1 rounds to 66.9 TFLOPS (datasheet: 67)",
             "sm_clock_mhz": "seed 000 sec. 2.1: 1,980 MHz boost",
             "dram_latency_ns": "estimate: seed 000 sec. 2.1 (~300 ns; NVIDIA GH200 material "
                                "cites under 300 ns for HBM3e; sensitivity 200-400 ns)",
             "memory": "NVIDIA H200 datasheet",
         }),
    _gpu("H100-SXM", "NVIDIA H100 SXM5 80GB", "9.0", sm_count=132, l2_mb=50, bw_gb_s=3350.0,
         fp32_gflops=66900.0, clock_mhz=1980.0, latency_ns=300.0, memory="80 GB HBM3",
         sources={
             "sm_count": "NVIDIA Hopper whitepaper: 132 SMs on H100 SXM5",
             "l2_bytes": "NVIDIA Hopper whitepaper: 50 MB",
             "peak_bw_gb_s": "NVIDIA H100 datasheet: 3.35 TB/s (seed 000 sec. 7.11)",
             "fp32_peak_gflops": "derived: 132 x 128 x 2 x 1.98 GHz = 66,908 (as H200, seed "
                                 "rounding; datasheet: 67 TFLOPS)",
             "sm_clock_mhz": "NVIDIA Hopper whitepaper: 1,980 MHz boost (SXM5)",
             "dram_latency_ns": _HOPPER_LATENCY,
             "memory": "NVIDIA H100 datasheet",
         }),
    _gpu("H100-PCIe", "NVIDIA H100 PCIe 80GB", "9.0", sm_count=114, l2_mb=50, bw_gb_s=2000.0,
         fp32_gflops=51200.0, clock_mhz=1755.0, latency_ns=300.0, memory="80 GB HBM2e",
         sources={
             "sm_count": "NVIDIA Hopper whitepaper: 114 SMs on H100 PCIe",
             "l2_bytes": "NVIDIA Hopper whitepaper: 50 MB",
             "peak_bw_gb_s": "NVIDIA H100 datasheet: 2 TB/s (PCIe)",
             "fp32_peak_gflops": "derived: 114 x 128 x 2 x 1.755 GHz = 51,217 "
                                 "(datasheet: 51 TFLOPS)",
             "sm_clock_mhz": "NVIDIA H100 PCIe boost clock 1,755 MHz",
             "dram_latency_ns": _HOPPER_LATENCY,
             "memory": "NVIDIA H100 datasheet",
         }),
    _gpu("B200", "NVIDIA B200", "10.0", sm_count=148, l2_mb=126, bw_gb_s=8000.0,
         fp32_gflops=75000.0, clock_mhz=1980.0, latency_ns=200.0, memory="180 GB HBM3e",
         sources={
             "sm_count": "seed 000 sec. 7.10 (148, 'estimated from published specs'); 2 dies x "
                         "74 enabled SMs",
             "max_warps_per_sm": "seed 000 sec. 7.10; CUDA guide CC 10.0",
             "l2_bytes": "Chips and Cheese B200 microbenchmarks: 126 MB across both dies",
             "peak_bw_gb_s": "seed 000 sec. 7.10: 8 TB/s (NVIDIA Blackwell announcement; the "
                             "HGX B200 180 GB table lists 7.7 TB/s)",
             "fp32_peak_gflops": "NVIDIA HGX B200 datasheet: 75 TFLOPS per GPU (= 148 x 128 x 2 "
                                 "x 1.98 GHz = 75,018; early Blackwell sheets said 80)",
             "sm_clock_mhz": "derived from the datasheet FP32: 75,000 / (148 x 128 x 2) "
                             "= 1,980 MHz",
             "dram_latency_ns": "estimate: seed 000 sec. 7.10 (~200 ns)",
             "memory": "NVIDIA HGX B200 datasheet (180 GB usable per GPU)",
         }),
    _gpu("A100-40GB", "NVIDIA A100-SXM4-40GB", "8.0", sm_count=108, l2_mb=40, bw_gb_s=1555.0,
         fp32_gflops=19500.0, clock_mhz=1410.0, latency_ns=284.0, memory="40 GB HBM2",
         sources={
             "sm_count": "NVIDIA Ampere GA100 whitepaper: 108 SMs on A100",
             "l2_bytes": "NVIDIA Ampere GA100 whitepaper: 40 MB",
             "peak_bw_gb_s": "NVIDIA A100 datasheet: 1,555 GB/s (SXM4 and PCIe 40GB)",
             "fp32_peak_gflops": "derived: 108 x 64 lanes x 2 x 1.41 GHz = 19,492 "
                                 "(datasheet: 19.5 TFLOPS)",
             "sm_clock_mhz": "NVIDIA GA100 whitepaper: 1,410 MHz boost",
             "dram_latency_ns": "estimate, not a datasheet figure: ~400 SM cycles global-memory "
                                "latency / 1.41 GHz = 284 ns",
             "memory": "NVIDIA A100 datasheet",
         }),
    _gpu("A100-80GB", "NVIDIA A100-SXM4-80GB", "8.0", sm_count=108, l2_mb=40, bw_gb_s=2039.0,
         fp32_gflops=19500.0, clock_mhz=1410.0, latency_ns=284.0, memory="80 GB HBM2e",
         sources={
             "sm_count": "NVIDIA Ampere GA100 whitepaper: 108 SMs on A100",
             "l2_bytes": "NVIDIA Ampere GA100 whitepaper: 40 MB",
             "peak_bw_gb_s": "NVIDIA A100 datasheet: 2,039 GB/s (SXM4 80GB; PCIe 80GB: 1,935)",
             "fp32_peak_gflops": "derived: 108 x 64 lanes x 2 x 1.41 GHz = 19,492 "
                                 "(datasheet: 19.5 TFLOPS)",
             "sm_clock_mhz": "NVIDIA GA100 whitepaper: 1,410 MHz boost",
             "dram_latency_ns": "estimate, not a datasheet figure: ~400 SM cycles global-memory "
                                "latency / 1.41 GHz = 284 ns",
             "memory": "NVIDIA A100 datasheet",
         }),
    _gpu("RTX-4090", "NVIDIA GeForce RTX 4090", "8.9", sm_count=128, l2_mb=72, bw_gb_s=1008.0,
         fp32_gflops=82600.0, clock_mhz=2520.0, latency_ns=400.0, memory="24 GB GDDR6X",
         sources={
             "sm_count": "NVIDIA Ada Lovelace whitepaper: 128 SMs on RTX 4090",
             "max_warps_per_sm": "CUDA guide CC 8.9: 48 warps (1,536 threads) per SM",
             "l2_bytes": "NVIDIA Ada Lovelace whitepaper: 72 MB",
             "peak_bw_gb_s": "NVIDIA spec: 21 Gbps x 384 bit / 8 = 1,008 GB/s "
                             "(seed 004: 1,008 GB/s official spec)",
             "fp32_peak_gflops": "derived: 128 x 128 x 2 x 2.52 GHz = 82,575 (Ada whitepaper: "
                                 "82.6 TFLOPS)",
             "sm_clock_mhz": "NVIDIA spec: 2,520 MHz boost",
             "dram_latency_ns": _ADA_LATENCY,
             "memory": "NVIDIA RTX 4090 spec",
         }),
    _gpu("RTX-4070-Ti-SUPER", "NVIDIA GeForce RTX 4070 Ti SUPER", "8.9", sm_count=66, l2_mb=48,
         bw_gb_s=672.0, fp32_gflops=44100.0, clock_mhz=2610.0, latency_ns=400.0,
         memory="16 GB GDDR6X",
         sources={
             "sm_count": "NVIDIA spec: 8,448 CUDA cores / 128 per SM = 66 SMs (AD103)",
             "max_warps_per_sm": "CUDA guide CC 8.9: 48 warps (1,536 threads) per SM; seed 000 "
                                 "sec. 7.11 says 64 warps, which is the Hopper figure",
             "max_threads_per_sm": "CUDA guide CC 8.9: 1,536 (seed 000 sec. 7.11 implies 2,048)",
             "l2_bytes": "NVIDIA spec: 48 MB",
             "peak_bw_gb_s": "NVIDIA spec: 21 Gbps x 256 bit / 8 = 672 GB/s (seed 000 sec. 7.11)",
             "fp32_peak_gflops": "derived: 66 x 128 x 2 x 2.61 GHz = 44,098 (NVIDIA: 44 TFLOPS)",
             "sm_clock_mhz": "NVIDIA spec: 2,610 MHz boost",
             "dram_latency_ns": _ADA_LATENCY,
             "memory": "NVIDIA RTX 4070 Ti SUPER spec",
         }),
)

_BY_NAME = {spec.name: spec for spec in _SPECS}

#: Driver / marketing words that carry no identity.
_NOISE = re.compile(r"\b(nvidia|geforce|tesla|graphics|gpu)\b")


def _normalise(name: str) -> str:
    """Lower case, vendor words dropped, separators as single spaces: ``a100 sxm4 80gb``."""
    text = _NOISE.sub(" ", name.lower())
    text = re.sub(r"(\d+)\s*gb\b", r"\1gb", text)  # "80 GB" -> "80gb"
    return " ".join(re.split(r"[\s\-_/(),]+", text)).strip()


def _lookup(name: str) -> tuple[DeviceSpec | None, tuple[str, ...]]:
    """(spec, ()) on a unique match, else (None, candidate names: empty when none fits)."""
    words = set(_normalise(name).split())
    if "nvl" in words:  # H100 NVL / H200 NVL are different boards (clocks, memory, power)
        return None, ()
    if words & {"h200"}:
        return _BY_NAME["H200"], ()
    if words & {"h100"}:
        return _BY_NAME["H100-PCIe" if "pcie" in words else "H100-SXM"], ()
    if words & {"b200"}:
        return _BY_NAME["B200"], ()
    if words & {"a100"}:
        if "80gb" in words:
            # The PCIe 80GB board has 1,935 GB/s, not the SXM4's 2,039: not in the table.
            return (None, ()) if "pcie" in words else (_BY_NAME["A100-80GB"], ())
        if "40gb" in words:
            return _BY_NAME["A100-40GB"], ()
        return None, ("A100-40GB", "A100-80GB")
    if words & {"4090", "rtx4090"}:
        return _BY_NAME["RTX-4090"], ()
    if words & {"4070", "rtx4070"} and {"ti", "super"} <= words:
        return _BY_NAME["RTX-4070-Ti-SUPER"], ()
    return None, ()


def list_specs() -> tuple[DeviceSpec, ...]:
    """Every GPU in the table, in table order."""
    return _SPECS


def spec_names() -> tuple[str, ...]:
    """Canonical names, in table order."""
    return tuple(_BY_NAME)


def get_spec(name: str) -> DeviceSpec:
    """Spec of a GPU by canonical, marketing or driver name (case and vendor words ignored).

    ``"h200"``, ``"NVIDIA H200 SXM 141GB"``, ``"H100 80GB HBM3"`` (the SXM5 driver name),
    ``"NVIDIA A100-SXM4-80GB"`` all resolve. Raises :class:`UnknownNameError` listing the known
    names (or, for an ambiguous name such as bare ``A100``, the candidates).
    """
    spec, candidates = _lookup(name)
    if spec is None:
        raise UnknownNameError("GPU", name, candidates or spec_names())
    return spec


def match_device_name(driver_name: str) -> DeviceSpec | None:
    """The table entry for a name reported by the driver, or None when it is not in the table."""
    spec, _ = _lookup(driver_name)
    return spec
