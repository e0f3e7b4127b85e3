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
from sparsescope.model.kernel_shape import blocks_per_sm as blocks_per_sm

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


def resident_blocks(kernel, block: int) -> int:
    """Blocks of ``block`` threads of a compiled ``cupy.RawKernel`` one SM holds at once, from
    its registers and static shared memory
    (:func:`sparsescope.model.kernel_shape.blocks_per_sm`)."""
    attrs = kernel.attributes
    return blocks_per_sm(max(1, int(attrs.get("num_regs", 32))), block,
                         int(attrs.get("shared_size_bytes", 0)))


#: cuSPARSE's CSR SpMV (CUDA 13, ``csrmv_v3_kernel`` after ``csr_partition_kernel``) as the H200
#: profiles in tests/fixtures/h200 show it, by index width: nonzeros per 512-thread block,
#: registers per thread and warp instructions per nonzero (ncu: grid 979 for the cant analog's
#: 4,007,383 nonzeros at INT32, 1,305 at INT64; 24,219 and 32,292 for cage15's 99,199,551;
#: ``smsp__inst_executed`` 7,271,885 and 180,795,101 at INT32 -- 1.81 and 1.82 a nonzero --,
#: 9,686,106 and 240,493,097 at INT64 -- 2.42 on both; results/h200/profile/exports and the
#: fixtures). An instruction count is a property of the code, the same sm_90 binary on an H100.
#: Its SASS is not read here.
CSRMV_V3 = {4: (4096, 32, 1.82), 8: (3072, 47, 2.42)}


def cusparse_csrmv_shape(nnz: int, index_bytes: int, launches: int, library: str = "",
                         row_search: bool | None = None, fixup: bool = False):
    """The declared :class:`~sparsescope.model.kernel_shape.KernelShape` of cuSPARSE's CSR SpMV:
    nonzeros split evenly over 512-thread blocks (``CSRMV_V3`` nonzeros per block), each thread
    loading its share at once (one iteration), as many blocks per SM as its registers allow,
    and the warp instructions a nonzero costs (the profile's count). ``library``: the route
    that calls it (``cupy``, ``torch``, ``nvmath``), whose measured fixed cost per call the
    model charges (``KernelShape.library``). ``row_search``: whether the call runs
    ``csr_partition_kernel`` (not preprocessed; None: the wrappers' unplanned
    ``cusparseSpMV``, which always does); ``fixup``: whether it ends in
    ``spmv_fixup_kernel_v2`` (``CSR_ALG2``)."""
    if row_search is None:
        row_search = library in ("cupy", "torch")
    from sparsescope.model.kernel_shape import KernelShape

    per_block, regs, instructions = CSRMV_V3.get(index_bytes, CSRMV_V3[4])
    grid = max(1, -(-nnz // per_block))
    return KernelShape(kernel="cusparse::csrmv_v3_kernel", decomposition="nnz",
                       block_threads=512, grid_blocks=grid, nnz_per_iteration=per_block // 512,
                       rounds_per_iteration=2, setup_rounds=1,
                       resident_blocks_per_sm=blocks_per_sm(regs, 512), launches=launches,
                       library=library, instructions_per_nonzero=instructions,
                       row_search=row_search, fixup=fixup,
                       source="declared from the H200 profile of cuSPARSE's csrmv_v3 "
                              "(grid, block, registers, instructions; SASS not read)")


def device_sm_count() -> int:
    """SMs of the current CUDA device (``cudaDevAttrMultiProcessorCount``, through CuPy)."""
    import cupy

    return int(cupy.cuda.runtime.deviceGetAttribute(_CUDA_ATTR_SM_COUNT, cupy.cuda.Device().id))


_CUDA_ATTR_SM_COUNT = 16  # cudaDevAttrMultiProcessorCount
_CUDA_ATTR_THREADS_PER_SM = 39  # cudaDevAttrMaxThreadsPerMultiProcessor
_CUDA_ATTR_BLOCKS_PER_SM = 106  # cudaDevAttrMaxBlocksPerMultiprocessor


def full_block_warps(max_threads_per_sm: int, max_blocks_per_sm: int) -> int:
    """The fewest warps a block can have and still fill an SM at its block limit, rounded up
    to a power of two: ceil((threads / 32) / blocks). Hopper and A100: 64 warps / 32 blocks ->
    2; Ada: 48 / 24 -> 2; Turing: 32 / 16 -> 2; a limit unknown (0) -> 8 (the largest block
    the kernels use)."""
    if max_threads_per_sm <= 0 or max_blocks_per_sm <= 0:
        return 8
    need = -(-(max_threads_per_sm // 32) // max_blocks_per_sm)
    warps = 1
    while warps < need:
        warps *= 2
    return warps


def device_full_block_warps() -> int:
    """:func:`full_block_warps` of the current CUDA device (its attributes, through CuPy)."""
    import cupy

    device = cupy.cuda.Device().id
    return full_block_warps(
        int(cupy.cuda.runtime.deviceGetAttribute(_CUDA_ATTR_THREADS_PER_SM, device)),
        int(cupy.cuda.runtime.deviceGetAttribute(_CUDA_ATTR_BLOCKS_PER_SM, device)))
