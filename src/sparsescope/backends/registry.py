"""Registry of backends: name -> lazy factory, never an if/elif over names.

A factory is a ``"module:Class"`` string (the module is imported only when the backend is asked
for, so importing the registry loads no backend and no GPU library) or a callable returning a
:class:`~sparsescope.backends.base.Backend` (tests register fakes this way).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from sparsescope.backends.base import Backend
from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.ops.registry import get_op, op_backends

BACKENDS: dict[str, str | Callable[[], Backend]] = {
    "scipy-cpu": "sparsescope.backends.scipy_cpu:ScipyCpuBackend",
    "torch-cusparse-i64": "sparsescope.backends.torch_cusparse:TorchCusparseI64",
    "torch-cusparse-i32": "sparsescope.backends.torch_cusparse:TorchCusparseI32",
    "cupy-cusparse-i32": "sparsescope.backends.cupy_cusparse:CupyCusparseI32",
    "cuda-csr-scalar": "sparsescope.backends.cuda_kernels:CudaCsrScalar",
    "cuda-csr-vector": "sparsescope.backends.cuda_kernels:CudaCsrVector",
    # Our own SpMV kernels (issue 5), selected by matrix statistics in cuda-spmv-auto.
    "cuda-spmv-adaptive": "sparsescope.backends.spmv_adaptive:CudaSpmvAdaptive",
    "cuda-spmv-merge": "sparsescope.backends.spmv_merge:CudaSpmvMerge",
    "cuda-spmv-sell": "sparsescope.backends.spmv_sell:CudaSpmvSell",
    "cuda-spmv-delta16": "sparsescope.backends.spmv_sell:CudaSpmvDelta16",
    "cuda-spmv-blocked16": "sparsescope.backends.spmv_sell:CudaSpmvBlocked16",
    "cuda-spmv-delta16-tiles": "sparsescope.backends.spmv_compressed:CudaSpmvTileDelta16",
    "cuda-spmv-auto": "sparsescope.backends.spmv_auto:CudaSpmvAuto",
}
BACKENDS.update(op_backends())  # SpMM and slice backends, named by sparsescope.ops.registry

#: Backends a run uses when none are named, per device kind.
DEFAULTS: dict[str, tuple[str, ...]] = {
    "cpu": ("scipy-cpu",),
    "gpu": ("torch-cusparse-i64", "torch-cusparse-i32", "cupy-cusparse-i32", "cuda-csr-scalar",
            "cuda-csr-vector", "cuda-spmv-auto"),
}


def list_backends() -> list[str]:
    """Registered backend names, sorted."""
    return sorted(BACKENDS)


def get_backend(name: str) -> Backend:
    """A new instance of the backend registered as ``name``."""
    try:
        factory = BACKENDS[name]
    except KeyError:
        raise UnknownNameError("backend", name, list(BACKENDS)) from None
    if isinstance(factory, str):
        module_name, _, class_name = factory.partition(":")
        factory = getattr(importlib.import_module(module_name), class_name)
    backend = factory()
    if not backend.name:
        backend.name = name
    return backend


def default_backends(device_kind: str, op: str = "spmv") -> list[str]:
    """Backends run by default for ``op`` on a ``cpu`` or ``gpu`` machine."""
    if device_kind not in DEFAULTS:
        raise UsageError(f"device kind must be one of {', '.join(DEFAULTS)}, got {device_kind!r}")
    if op == "spmv":
        return list(DEFAULTS[device_kind])
    return list(get_op(op).defaults[device_kind])
