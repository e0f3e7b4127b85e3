"""``sparsescope sass``: a kernel's SASS read and analysed (resources, occupancy, instruction
mix, loops, dependent-load chains, stall mapping)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def list_kernels(file: str, *, arch: str | None = None, kernel: str | None = None) -> list:
    """The kernels in ``file`` (cubin, library, listing, ``.cu``): name, demangled name,
    arch and resources (``sass.extract.list_kernels``)."""
    from sparsescope.sass.extract import list_kernels as listed

    return list(listed(file, arch=arch, kernel=kernel))


@dataclass(frozen=True)
class KernelSass:
    """One kernel's SASS analysis and, when a block size was given, its occupancy."""

    analysis: object
    """``sass.analysis.KernelAnalysis``."""
    occupancy: object = None
    """``sass.occupancy.Occupancy``, or None."""
    occupancy_reason: str = ""
    """Why a block size was given and no occupancy computed ("" otherwise)."""


def sass_analysis(file: str, *, kernel: str | None = None, arch: str | None = None,
                  source: str | None = None, param_names: Sequence[str] | None = None,
                  stalls: str | None = None, block_size: int = 0, dynamic_shared: int = 0,
                  gpu: str | None = None) -> list[KernelSass]:
    """Every kernel of ``file`` that ``kernel`` (a regex) matches, analysed; with
    ``block_size``, its occupancy at that block size on ``gpu`` (a spec name; default: the
    kernel's arch) with ``dynamic_shared`` bytes of dynamic shared memory. No kernel matching
    is a ``UsageError`` naming the file."""
    from sparsescope.errors import UsageError
    from sparsescope.sass.analysis import analyse_file
    from sparsescope.sass.occupancy import missing_occupancy_reason, occupancy

    kernels = analyse_file(file, kernel=kernel, arch=arch, source=source,
                           param_names=list(param_names) if param_names else None,
                           stalls=stalls)
    if not kernels:
        which = f" matching {kernel!r}" if kernel else ""
        raise UsageError(f"{file}: no kernel{which}")
    out = []
    for k in kernels:
        occ = None
        if block_size and k.resources is not None:
            occ = occupancy(k.resources.registers, block_size,
                            arch=None if gpu else (k.arch or arch), gpu=gpu,
                            static_shared_bytes=k.resources.shared_bytes,
                            dynamic_shared_bytes=dynamic_shared)
        out.append(KernelSass(k, occ, missing_occupancy_reason(k.resources, block_size)))
    return out
