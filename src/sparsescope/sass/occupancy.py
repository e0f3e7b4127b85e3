"""Theoretical occupancy: resident blocks and warps per SM for a block size, registers per thread
and shared memory per block, the way the CUDA Occupancy Calculator and Nsight Compute's
``launch__occupancy_limit_*`` metrics compute it.

With ``W = ceil(block_threads / 32)`` warps per block:

* registers: ``regs_per_warp = ceil(regs_per_thread * 32 / reg_unit) * reg_unit``,
  ``blocks_regs = floor(floor(regs_per_sm / regs_per_warp) / W)``  (``reg_unit`` = 256);
* shared memory: ``smem_block = ceil(static + dynamic + reserved, smem_unit)``,
  ``blocks_smem = floor(smem_config / smem_block)``, where ``reserved`` is the 1 KB the runtime
  keeps per block on sm_80+ and ``smem_config`` the shared-memory carve-out the driver picked
  (ncu's ``launch__shared_mem_config_size``; the architecture maximum by default);
* warps: ``blocks_warps = floor(max_warps_per_sm / W)``;  blocks: ``max_blocks_per_sm``;
* ``active_blocks = min(the four)``, ``occupancy = active_blocks * W / max_warps_per_sm``.

Example (seed 001 / fixture): csrmv_v3_kernel, 47 registers, 512 threads, 12,672 B static shared on
H200 with a 64 KB carve-out: registers 2 blocks (47*32 = 1504 -> 1536 per warp, 65536/1536 = 42
warps, /16), shared 4, warps 4, blocks 32 -> 2 blocks, 32 warps, 50 %.

The per-architecture limits are architecture facts (CUDA C++ Programming Guide, "Features and
Technical Specifications", compute-capability table), kept here by compute capability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparsescope.errors import UnknownNameError, UsageError


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability."""

    compute_capability: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    register_alloc_unit: int
    """Registers are allocated per warp in multiples of this many."""
    max_registers_per_thread: int
    max_shared_per_sm_bytes: int
    max_shared_per_block_bytes: int
    """Opt-in maximum per block."""
    shared_alloc_unit_bytes: int
    reserved_shared_per_block_bytes: int
    """Shared memory the CUDA runtime reserves per block (sm_80+)."""


_K = 1024
ARCH_LIMITS: dict[str, ArchLimits] = {cc: ArchLimits(cc, *vals) for cc, vals in {
    "7.0": (64, 32, 65536, 256, 255, 96 * _K, 96 * _K, 256, 0),
    "7.2": (64, 32, 65536, 256, 255, 96 * _K, 96 * _K, 256, 0),
    "7.5": (32, 16, 65536, 256, 255, 64 * _K, 64 * _K, 256, 0),
    "8.0": (64, 32, 65536, 256, 255, 164 * _K, 163 * _K, 128, _K),
    "8.6": (48, 16, 65536, 256, 255, 100 * _K, 99 * _K, 128, _K),
    "8.7": (48, 16, 65536, 256, 255, 164 * _K, 163 * _K, 128, _K),
    "8.9": (48, 24, 65536, 256, 255, 100 * _K, 99 * _K, 128, _K),
    "9.0": (64, 32, 65536, 256, 255, 228 * _K, 227 * _K, 128, _K),
    "10.0": (64, 32, 65536, 256, 255, 228 * _K, 227 * _K, 128, _K),
    "10.3": (64, 32, 65536, 256, 255, 228 * _K, 227 * _K, 128, _K),
    "12.0": (48, 32, 65536, 256, 255, 100 * _K, 99 * _K, 128, _K),
}.items()}


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy of one launch configuration, with every limiter."""

    compute_capability: str
    block_threads: int
    registers_per_thread: int
    shared_per_block_bytes: int
    """Static + dynamic shared memory asked for, bytes (before the runtime reserve)."""
    shared_config_bytes: int
    """Shared-memory carve-out per SM used for the shared-memory limit."""
    warps_per_block: int
    limit_registers_blocks: int
    limit_shared_blocks: int
    limit_warps_blocks: int
    limit_blocks: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    occupancy_pct: float
    """``active_warps / max_warps * 100`` (ncu's ``sm__maximum_warps_per_active_cycle_pct``)."""
    limiter: str
    """``registers``, ``shared``, ``warps`` or ``blocks``: the smallest limit (first on ties)."""


def limits_for(arch: str | None = None, *, gpu: str | None = None) -> ArchLimits:
    """Limits for ``arch`` (``sm_90``, ``90``, ``9.0``) or a GPU name resolved through
    :func:`sparsescope.hardware.specs.get_spec`."""
    if gpu:
        from sparsescope.hardware.specs import get_spec  # the spec table loads on use

        cc = get_spec(gpu).compute_capability
    elif arch:
        text = arch.strip().lower().removeprefix("sm_").removeprefix("compute_").rstrip("af")
        cc = text if "." in text else f"{text[:-1]}.{text[-1]}" if text.isdigit() else text
    else:
        raise UsageError("give an architecture (sm_90) or a GPU name for the occupancy")
    if cc not in ARCH_LIMITS:
        raise UnknownNameError("compute capability", cc, list(ARCH_LIMITS))
    return ARCH_LIMITS[cc]


def occupancy(registers_per_thread: int, block_threads: int, *, arch: str | None = None,
              gpu: str | None = None, static_shared_bytes: int = 0,
              dynamic_shared_bytes: int = 0, shared_config_bytes: int | None = None) -> Occupancy:
    """Theoretical occupancy (formulas in the module docstring)."""
    lim = limits_for(arch, gpu=gpu)
    if block_threads <= 0 or block_threads > 1024:
        raise UsageError(f"block size must be 1..1024 threads, got {block_threads}")
    if registers_per_thread > lim.max_registers_per_thread:
        raise UsageError(f"{registers_per_thread} registers per thread exceeds "
                         f"{lim.max_registers_per_thread}")
    shared = static_shared_bytes + dynamic_shared_bytes
    if shared > lim.max_shared_per_block_bytes:
        raise UsageError(f"{shared} bytes of shared memory per block exceeds "
                         f"{lim.max_shared_per_block_bytes} on compute capability "
                         f"{lim.compute_capability}")
    config = lim.max_shared_per_sm_bytes if shared_config_bytes is None else shared_config_bytes
    warps = math.ceil(block_threads / 32)
    if registers_per_thread > 0:
        unit = lim.register_alloc_unit
        regs_warp = math.ceil(registers_per_thread * 32 / unit) * unit
        by_regs = (lim.registers_per_sm // regs_warp) // warps
    else:
        by_regs = lim.max_blocks_per_sm
    smem_block = shared + lim.reserved_shared_per_block_bytes
    smem_block = math.ceil(smem_block / lim.shared_alloc_unit_bytes) * lim.shared_alloc_unit_bytes
    by_smem = config // smem_block if smem_block else lim.max_blocks_per_sm
    by_warps = lim.max_warps_per_sm // warps
    limits = {"registers": by_regs, "shared": by_smem, "warps": by_warps,
              "blocks": lim.max_blocks_per_sm}
    active = min(limits.values())
    limiter = min(limits, key=lambda k: limits[k])
    return Occupancy(lim.compute_capability, block_threads, registers_per_thread, shared, config,
                     warps, by_regs, by_smem, by_warps, lim.max_blocks_per_sm, active,
                     active * warps, 100.0 * active * warps / lim.max_warps_per_sm, limiter)


def missing_occupancy_reason(resources, block_threads: int) -> str:
    """Why no occupancy is computed at ``block_threads`` for a kernel whose ``resources``
    (``sass.resources.KernelResources``) are None: the registers per thread are not known, and
    the register limit (often the binding one) cannot be guessed. "" when there is no block
    size or the resources are known."""
    if not block_threads or resources is not None:
        return ""
    return (f"Theoretical occupancy at {block_threads} threads/block: not computed -- the "
            f"input carries no register count per thread (a saved SASS listing without "
            f"resource usage), and the register limit cannot be guessed. Give the cubin or "
            f"the .cu file, or save the listing with `cuobjdump -res-usage -sass`.")
