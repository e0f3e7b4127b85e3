"""Backends: implementations of an op (SciPy on the CPU; cuSPARSE, CuPy, own kernels on a GPU).

``registry`` names them as lazy ``"module:Class"`` factories, ``base`` defines what a backend
declares (:class:`Capability`) and implements, ``runner`` runs a case behind the correctness
gate. Importing this package imports no backend module and no GPU library.
"""

from sparsescope.backends.base import Backend, Capability
from sparsescope.backends.registry import (
    BACKENDS,
    default_backends,
    get_backend,
    list_backends,
)

__all__ = ["BACKENDS", "Backend", "Capability", "default_backends", "get_backend",
           "list_backends", "run_case"]


def __getattr__(name: str):
    if name == "run_case":  # the runner pulls in ops and results; load it on use
        from sparsescope.backends.runner import run_case

        return run_case
    raise AttributeError(f"module 'sparsescope.backends' has no attribute {name!r}")
