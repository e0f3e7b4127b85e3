"""Import an optional dependency, or raise an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from sparsescope.errors import MissingDependencyError

#: module name -> pyproject extra that installs it
EXTRA_FOR_MODULE = {
    "cupy": "gpu",
    "cupyx": "gpu",
    "torch": "torch",
    "ncu_report": "profile",
    "nvmath": "nvmath",
}


def import_optional(module: str, purpose: str = "") -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRA_FOR_MODULE.get(top)
        hint = f"pip install 'sparsescope[{extra}]'" if extra else f"pip install {top}"
        why = f" (needed for {purpose})" if purpose else ""
        raise MissingDependencyError(
            f"{module} is not installed{why}; install it with: {hint}") from exc
