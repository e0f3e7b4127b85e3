"""Backends: implementations of an op (SciPy on the CPU; cuSPARSE, CuPy, own kernels on a GPU).

The registry table (:mod:`sparsescope.registry`) names them as lazy ``"module:Class"``
factories keyed by (op, name); ``registry`` here finds them, ``base`` defines what a backend
declares (:class:`Capability`, its :class:`~sparsescope.model.traffic.Traffic`) and implements,
``runner`` runs a case behind the correctness gate. Importing this package imports no backend
module and no GPU library.
"""

from sparsescope.backends.base import Backend, Capability, OpBackend, SpmvBackend
from sparsescope.backends.registry import default_backends, get_backend, list_backends

__all__ = ["Backend", "Capability", "OpBackend", "SpmvBackend", "default_backends",
           "get_backend", "list_backends", "run_case"]


def __getattr__(name: str):
    if name == "run_case":  # the runner pulls in ops and results; load it on use
        from sparsescope.backends.runner import run_case

        return run_case
    raise AttributeError(f"module 'sparsescope.backends' has no attribute {name!r}")
