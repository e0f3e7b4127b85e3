"""Helpers shared by the GPU backends: probes, kernel sources, sizes.

The probes and the kernel loader (``torch_cuda_status``, ``cupy_cuda_status``,
``kernel_source``, ``raw_module``) live in :mod:`sparsescope.hardware._gpu_runtime`, where the
GPU ceilings can use them without ``hardware`` importing ``backends``; they are re-exported
here for the backends. Nothing here imports torch or CuPy at module import; the probes import
them on first call and cache the answer for the process.
"""

from __future__ import annotations

import numpy as np

# Re-exported for the backends (redundant aliases mark them as re-exports).
from sparsescope.hardware._gpu_runtime import cupy_cuda_status as cupy_cuda_status
from sparsescope.hardware._gpu_runtime import kernel_source as kernel_source
from sparsescope.hardware._gpu_runtime import raw_module as raw_module
from sparsescope.hardware._gpu_runtime import torch_cuda_status as torch_cuda_status

#: CUDA C++ spelling of the value and index types a kernel is instantiated for.
CUDA_VALUE_TYPES = {"float32": "float", "float64": "double"}
CUDA_INDEX_TYPES = {4: "int", 8: "long long"}
INDEX_DTYPES = {4: np.int32, 8: np.int64}
VALUE_DTYPES = {"float32": np.float32, "float64": np.float64}

#: Threads per row the vector kernel can use (a power of two dividing a warp).
VECTOR_WIDTHS = (2, 4, 8, 16, 32)


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
