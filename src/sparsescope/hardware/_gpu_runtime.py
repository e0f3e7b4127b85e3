"""GPU runtime probes and the CuPy kernel loader, shared by the GPU ceilings and the backends.

It sits in ``hardware`` because :mod:`sparsescope.hardware.gpu_ceilings` needs it and
``hardware`` must not import ``backends``; :mod:`sparsescope.backends._gpu` re-exports every
name here for the GPU backends. The kernel sources are package data under
``sparsescope/backends/kernels/``; they are read as files of the ``sparsescope`` package, so
reading one does not import ``sparsescope.backends``.

Nothing here imports torch or CuPy at module import; the probes import them on first call and
cache the answer for the process.
"""

from __future__ import annotations

import functools
import importlib.util
from importlib import resources

KERNELS_DIR = ("backends", "kernels")
"""Where the CUDA sources live inside the ``sparsescope`` package (see pyproject package-data)."""


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
    return resources.files("sparsescope").joinpath(*KERNELS_DIR, name).read_text("utf-8")


@functools.lru_cache(maxsize=8)
def raw_module(source_name: str, name_expressions: tuple[str, ...] = ()):
    """``cupy.RawModule`` of a kernel source, compiled once per process by NVRTC.

    ``-std=c++17`` for the templates; NVRTC targets the present device's architecture
    (CuPy passes ``-arch=sm_XY`` itself), so Hopper code is built on an H200.
    """
    import cupy

    return cupy.RawModule(code=kernel_source(source_name), options=("-std=c++17",),
                          name_expressions=name_expressions or None)
