"""Hardware: datasheet spec table, live device detection, measured ceilings.

Modules: ``types`` (records), ``specs`` (the GPU table), ``cpuinfo`` (what the OS reports),
``detect`` (real GPU via PyTorch or CuPy, else the CPU), ``cpu_ceilings`` (measured RAM
bandwidth and FP32). Names below are loaded on first use; nothing here imports a GPU library.
"""

from __future__ import annotations

import importlib

from sparsescope.hardware.types import DeviceSpec, MeasuredCeilings

_LAZY = {
    "get_spec": "specs", "list_specs": "specs", "match_device_name": "specs",
    "spec_names": "specs",
    "DetectedGpu": "detect", "detect_gpu": "detect", "gpu_available": "detect",
    "spec_for_detected": "detect", "cpu_spec": "detect",
    "measure_cpu_ceilings": "cpu_ceilings",
}

__all__ = ["DeviceSpec", "MeasuredCeilings", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"sparsescope.hardware.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'sparsescope.hardware' has no attribute {name!r}")
