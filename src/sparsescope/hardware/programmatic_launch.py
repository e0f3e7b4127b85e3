"""Kernel launches with programmatic dependent launch (PDL): the driver's extensible launch,
``cuLaunchKernelEx`` with ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION``.

Back to back on one stream, a kernel normally starts only after the one before it has
finished and its writes are flushed: the gap, the new grid's launch and its first dependent
loads (a tile descriptor, then the tile's columns) are paid on every call. With the attribute
the next call may start as soon as every block of the previous one has executed
``griddepcontrol.launch_dependents``; it then loads what no call writes (the matrix) and waits
(``griddepcontrol.wait``) before it reads x or writes y (``backends/kernels/spmv_own.cu``'s
``pdl_wait``). Only a kernel with that wait may be launched so: without it the next call would
race the previous one's writes.

CuPy's ``RawKernel`` has no launch attributes, so the call goes through NVIDIA's
``cuda.bindings`` (a dependency of nvmath-python, the ``nvmath`` extra); :func:`available`
says whether it is importable. Stream capture (``TimingConfig.graph_capture``) records such
launches as programmatic edges (CUDA 12.3 and later). On the H200's real development set the
calls gained what the launch saves (1.5 against 0.54 us) and no more: the loads before the
wait did not shorten a call further (``results/h200/real-dev/2026-11-28-pdl``).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

#: ctypes type of each NumPy scalar type a launch may pass by value.
_BY_VALUE = {np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
             np.dtype(np.uint32): ctypes.c_uint32, np.dtype(np.float32): ctypes.c_float,
             np.dtype(np.float64): ctypes.c_double}


@functools.cache
def available() -> tuple[bool, str]:
    """(whether PDL launches can be made here, why not): ``cuda.bindings.driver`` importable
    and the current device of compute capability 9.0 or later."""
    try:
        from cuda.bindings import driver  # noqa: F401
    except ImportError as exc:
        return False, (f"cuda.bindings is not installed ({exc}); "
                       "pip install 'sparsescope[nvmath]'")
    import cupy

    major = cupy.cuda.Device().compute_capability[:-1] or "0"
    if int(major) < 9:
        return False, f"compute capability {cupy.cuda.Device().compute_capability} < 9.0"
    return True, ""


def kernel_parameters(args: tuple) -> tuple[tuple, tuple]:
    """``(values, ctypes types)`` of a launch's arguments, the form ``cuLaunchKernelEx`` takes:
    a device array by its address (``void*``), a NumPy scalar by value in its own width. A
    Python int or float is refused: its width on the device is not known."""
    values: list[Any] = []
    types: list[Any] = []
    for i, arg in enumerate(args):
        if hasattr(arg, "data") and hasattr(arg.data, "ptr"):  # cupy.ndarray
            values.append(int(arg.data.ptr))
            types.append(ctypes.c_void_p)
        elif isinstance(arg, np.generic) and arg.dtype in _BY_VALUE:
            values.append(arg.item())
            types.append(_BY_VALUE[arg.dtype])
        else:
            raise TypeError(f"argument {i} of a PDL launch is a {type(arg).__name__}; pass a "
                            f"device array or a NumPy scalar of {sorted(map(str, _BY_VALUE))}")
    return tuple(values), tuple(types)


def function_handle(kernel: Any) -> int:
    """The ``CUfunction`` address of a CuPy ``RawKernel`` (compiled on first use)."""
    return int(getattr(kernel, "kernel", kernel).ptr)


def launch_programmatic(kernel: Any, grid: int, block: int, args: tuple,
                        stream_ptr: int | None = None) -> None:
    """Launch ``kernel`` (a CuPy ``RawKernel`` whose code waits with ``griddepcontrol.wait``
    before touching what earlier calls write) on ``stream_ptr`` (default: CuPy's current
    stream, where the timing protocol records its events) with PDL allowed."""
    from cuda.bindings import driver

    if stream_ptr is None:
        import cupy

        stream_ptr = cupy.cuda.get_current_stream().ptr

    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = int(grid), 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = int(block), 1, 1
    config.sharedMemBytes = 0
    config.hStream = driver.CUstream(int(stream_ptr))
    attribute = driver.CUlaunchAttribute()
    attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attribute.value.programmaticStreamSerializationAllowed = 1
    config.attrs = [attribute]
    config.numAttrs = 1
    (status,) = driver.cuLaunchKernelEx(config, driver.CUfunction(function_handle(kernel)),
                                        kernel_parameters(args), 0)
    if status != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuLaunchKernelEx with programmatic stream serialization failed: "
                           f"{status.name}")
