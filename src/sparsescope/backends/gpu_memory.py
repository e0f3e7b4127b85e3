"""A GPU out of memory: recognise it, and give the memory back before the next case.

A matrix too large for the device raises in whichever library allocated first: PyTorch's
``torch.OutOfMemoryError``, CuPy's ``cupy.cuda.memory.OutOfMemoryError``, or a CUDA driver /
runtime error (``CUDA_ERROR_OUT_OF_MEMORY``, ``cudaErrorMemoryAllocation``) from a raw kernel
launch or cuSPARSE. The case is then *skipped* (the input does not fit; nothing is wrong with
the backend), and the memory the case held is released to the device so the next case starts
from an empty pool: the caching allocators of PyTorch and CuPy keep freed blocks otherwise.
"""

from __future__ import annotations

import gc
import sys

#: Reason prefix of a case skipped because the device ran out of memory.
OUT_OF_MEMORY = "GPU out of memory"

_MESSAGES = ("out of memory", "cuda_error_out_of_memory", "cudaerrormemoryallocation",
             "cusparse_status_alloc_failed", "failed to allocate")


def is_out_of_memory(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a device allocation failure:
    an ``OutOfMemoryError`` class of any library, or an error whose text says so."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError) and type(exc) is not MemoryError:
            return True  # a library's subclass (host MemoryError itself is not the GPU's)
        if "OutOfMemory" in type(exc).__name__:
            return True
        text = str(exc).lower()
        if any(m in text for m in _MESSAGES):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def free_device_memory() -> dict[str, int]:
    """Collect garbage, then empty the caching allocators of the GPU libraries already
    imported (none is imported here). Returns the bytes each pool held before, for the log."""
    gc.collect()
    held: dict[str, int] = {}
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            pool = cupy.get_default_memory_pool()
            held["cupy"] = int(pool.total_bytes())
            pool.free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
        except Exception:  # a broken CUDA context: nothing more to free here
            pass
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                held["torch"] = int(torch.cuda.memory_reserved())
                torch.cuda.empty_cache()
        except Exception:
            pass
    return held
