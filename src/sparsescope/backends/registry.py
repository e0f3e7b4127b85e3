"""Finding backends: by name from the registry table (:mod:`sparsescope.registry`), keyed there
by (op, name), loaded on use -- importing this module loads no backend and no GPU library.

A factory is a ``"module:Class"`` string or a callable returning a
:class:`~sparsescope.backends.base.Backend` (tests register fakes with
``sparsescope.registry.register_backend``). Keyword options of :func:`get_backend` go to the
backend's constructor: a kernel variant (``unroll=4``) of an own backend.
"""

from __future__ import annotations

from typing import Any

from sparsescope import registry
from sparsescope.backends.base import Backend
from sparsescope.errors import UsageError


def list_backends(op: str | None = None) -> list[str]:
    """Registered backend names (of ``op``, or of every op), sorted."""
    return registry.backend_names(op)


def get_backend(name: str, **options: Any) -> Backend:
    """A new instance of the backend registered as ``name``, built with ``options``."""
    factory = registry.load_backend_factory(name)
    try:
        backend = factory(**options)
    except TypeError as exc:
        if not options:
            raise
        raise UsageError(f"backend {name!r} does not take these options: {exc}") from None
    if not backend.name:
        backend.name = name
    return backend


def default_backends(device_kind: str, op: str = "spmv") -> list[str]:
    """Backends run by default for ``op`` on a ``cpu`` or ``gpu`` machine."""
    defaults = registry.op_entry(op).defaults
    if device_kind not in defaults:
        raise UsageError(f"device kind must be one of {', '.join(defaults)}, got "
                         f"{device_kind!r}")
    return list(defaults[device_kind])


def device_backends(device_kind: str, op: str) -> list[str]:
    """Every backend of ``op`` for a ``cpu`` or ``gpu`` machine (what ``--backend all`` runs)."""
    return [name for name in list_backends(op)
            if get_backend(name).capability.device == device_kind]
