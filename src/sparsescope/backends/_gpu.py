"""Helpers shared by the GPU backends and the GPU ceilings: probes, kernel sources, sizes.

Nothing here imports torch or CuPy at module import; the probes import them on first call and
cache the answer for the process.
"""

from __future__ import annotations

import functools
import importlib.util
from importlib import resources

import numpy as np

#: CUDA C++ spelling of the value and index types a kernel is instantiated for.
CUDA_VALUE_TYPES = {"float32": "float", "float64": "double"}
CUDA_INDEX_TYPES = {4: "int", 8: "long long"}
INDEX_DTYPES = {4: np.int32, 8: np.int64}
VALUE_DTYPES = {"float32": np.float32, "float64": np.float64}

#: Threads per row the vector kernel can use (a power of two dividing a warp).
VECTOR_WIDTHS = (2, 4, 8, 16, 32)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@functools.lru_cache(maxsize=1)
def torch_cuda_status() -> tuple[bool, str]:
    """(True, "") when PyTorch imports and opens a CUDA device, else (False, why not)."""
    if not _has_module("torch"):
        return False, "torch is not installed (pip install 'sparsescope[torch]')"
    try:
        import torch

        if not torch.cuda.is_available():
            return False, f"torch {torch.__version__} sees no CUDA device"
        torch.cuda.get_device_properties(0)
    except Exception as exc:  # a broken driver or install: report it, do not crash the run
        return False, f"torch cannot open a CUDA device: {type(exc).__name__}: {exc}"
    return True, ""


@functools.lru_cache(maxsize=1)
def cupy_cuda_status() -> tuple[bool, str]:
    """(True, "") when CuPy imports and opens a CUDA device, else (False, why not)."""
    if not _has_module("cupy"):
        return False, "cupy is not installed (pip install 'sparsescope[gpu]')"
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return False, "cupy sees no CUDA device"
        cupy.cuda.runtime.getDeviceProperties(0)
    except Exception as exc:
        return False, f"cupy cannot open a CUDA device: {type(exc).__name__}: {exc}"
    return True, ""


def kernel_source(name: str) -> str:
    """Text of ``sparsescope/backends/kernels/<name>`` (shipped as package data)."""
    return resources.files("sparsescope.backends").joinpath("kernels", name).read_text("utf-8")


@functools.lru_cache(maxsize=8)
def raw_module(source_name: str, name_expressions: tuple[str, ...] = ()):
    """``cupy.RawModule`` of a kernel source, compiled once per process by NVRTC.

    ``-std=c++17`` for the templates; NVRTC targets the present device's architecture
    (CuPy passes ``-arch=sm_XY`` itself), so Hopper code is built on an H200.
    """
    import cupy

    return cupy.RawModule(code=kernel_source(source_name), options=("-std=c++17",),
                          name_expressions=name_expressions or None)


def device_l2_bytes(library: str) -> int:
    """L2 size of device 0 as ``library`` (``torch`` or ``cupy``) reports it, bytes."""
    if library == "torch":
        import torch

        return int(torch.cuda.get_device_properties(0).L2_cache_size)
    import cupy

    return int(cupy.cuda.runtime.deviceGetAttribute(38, 0))  # cudaDevAttrL2CacheSize


def csr_working_set_bytes(rows: int, cols: int, nnz: int, value_bytes: int,
                          index_bytes: int) -> int:
    """Bytes one SpMV touches at least: values + column indices + row pointers + x + y.

    ``nnz*(v+i) + (rows+1)*i + cols*v + rows*v`` -- what decides whether it fits in L2 (and so
    whether the timing protocol flushes between repeats).
    """
    return (nnz * (value_bytes + index_bytes) + (rows + 1) * index_bytes
            + (cols + rows) * value_bytes)


#: Nonzeros of a mean row per lane, and of the longest row per lane, the vector width aims at.
NNZ_PER_LANE_MEAN = 16
NNZ_PER_LANE_LONGEST = 1024


def threads_per_row(mean_nnz_per_row: float, max_nnz_per_row: int = 0) -> int:
    """Threads per row of the CSR-vector kernel, from the row-length statistics::

        TPR = smallest power of two >= max(mean / 16, longest / 1024), clamped to [2, 32]

    Few lanes per row suit regular rows: each lane walks a longer run of independent loads
    and fewer lanes idle or shuffle. A long row, though, is walked by its TPR lanes alone
    while the rest of the device finishes, so the longest row asks for enough lanes that
    none walks more than ~1,024 of its nonzeros. Measured on an H200 (seed6 analogs, every
    width timed): this picks the fastest or near-fastest width on all six, where CUSP's
    smallest power of two >= the mean picks 32 for cage15 (2.8x slower than 2) and 4 for
    webbase-1M (1.4x slower than 8).
    """
    want = max(mean_nnz_per_row / NNZ_PER_LANE_MEAN, max_nnz_per_row / NNZ_PER_LANE_LONGEST)
    for width in VECTOR_WIDTHS:
        if width >= want:
            return width
    return VECTOR_WIDTHS[-1]


def package_version(*names: str) -> str:
    """Version of the first installed distribution among ``names``, or an empty string."""
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return ""


def torch_versions() -> dict[str, str]:
    """PyTorch, the CUDA it was built for, and the cuSPARSE wheel it loads (provenance)."""
    import torch

    versions = {"torch": torch.__version__, "torch_cuda": str(torch.version.cuda or "")}
    cusparse = package_version("nvidia-cusparse", "nvidia-cusparse-cu13", "nvidia-cusparse-cu12")
    if cusparse:
        versions["cusparse (torch wheel)"] = cusparse
    return versions


def cupy_cusparse_versions() -> dict[str, str]:
    """CuPy and the cuSPARSE it calls (provenance)."""
    import cupy

    versions = {"cupy": cupy.__version__}
    try:
        from cupyx import cusparse

        versions["cusparse (cupy)"] = str(cusparse.getVersion())
    except Exception:  # the version query is informative only
        pass
    return versions


def cupy_kernel_versions() -> dict[str, str]:
    """CuPy, the CUDA runtime and the NVRTC that compile and run our own kernels."""
    import cupy

    runtime = cupy.cuda.runtime.runtimeGetVersion()
    return {"cupy": cupy.__version__,
            "cuda_runtime": f"{runtime // 1000}.{runtime % 1000 // 10}",
            "nvrtc": ".".join(str(v) for v in cupy.cuda.nvrtc.getVersion())}
