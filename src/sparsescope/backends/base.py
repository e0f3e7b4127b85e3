"""What a backend is: a declared :class:`Capability` and five methods the runner calls.

A backend module imports its library (torch, cupy, ...) inside its methods, never at module
top, so the registry can name it without loading anything.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.timing.types import Measurement, TimingConfig


@dataclass(frozen=True)
class Capability:
    """What a backend supports, as data: a case outside it is skipped with a reason."""

    ops: tuple[str, ...]
    """Operations, e.g. ``("spmv",)``."""
    value_dtypes: tuple[str, ...]
    """Value dtypes by NumPy name, e.g. ``("float32", "float64")``."""
    index_bytes: tuple[int, ...]
    """Index widths in bytes, e.g. ``(4,)`` or ``(4, 8)``; the first is the default."""
    device: str
    """``cpu`` or ``gpu``."""
    y_read: bool = False
    """Whether the kernel reads y before writing it (``y += A x``), which costs y's bytes twice."""
    description: str = ""
    """One line for tables, e.g. ``SciPy CSR @ x (sparsetools, one thread)``."""

    def unsupported_reason(self, op: str, value_dtype: str, index_bytes: int) -> str:
        """Why the case cannot run here, or an empty string when it can."""
        if op not in self.ops:
            return f"op {op!r} not supported (supports {', '.join(self.ops)})"
        if value_dtype not in self.value_dtypes:
            return (f"value dtype {value_dtype} not supported "
                    f"(supports {', '.join(self.value_dtypes)})")
        if index_bytes not in self.index_bytes:
            widths = ", ".join(f"INT{8 * b}" for b in self.index_bytes)
            return f"INT{8 * index_bytes} indices not supported (supports {widths})"
        return ""


class Backend(ABC):
    """One implementation of an op. Subclasses set :attr:`name` and :attr:`capability`."""

    name: str = ""
    capability: Capability

    def availability(self) -> tuple[bool, str]:
        """(True, "") when the backend can run here, else (False, why not)."""
        return True, ""

    @abstractmethod
    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str, index_bytes: int) -> Any:
        """Convert the canonical float64 CSR to the backend's format (on its device)."""

    @abstractmethod
    def run(self, prepared: Any, x: np.ndarray) -> np.ndarray:
        """One call; returns ``y`` as a host array of length ``rows``."""

    @abstractmethod
    def time(self, prepared: Any, x: np.ndarray, config: TimingConfig) -> Measurement:
        """Time the call with the one protocol (``timing.time_host`` or CUDA events)."""

    @abstractmethod
    def library_versions(self) -> dict[str, str]:
        """Library -> version of everything that computed the numbers."""

    def poison_output(self, prepared: Any) -> bool:
        """Fill the output buffer the next :meth:`run` writes with NaN; True if there is one.

        GPU backends own a device ``y`` buffer reused across calls: they fill it with NaN
        (``cupy``: ``y.fill(cupy.nan)``; torch: ``y.fill_(float('nan'))``) before the checked
        run, so a kernel that skips a row leaves NaN and fails the gate instead of passing on
        values left by an earlier call. A backend that returns a freshly allocated array on
        every call (SciPy) has no such buffer and returns False; the runner then checks that
        the array is fresh and full-length instead.
        """
        return False

    def notes(self, prepared: Any) -> dict[str, str]:
        """Backend-specific facts worth keeping with the case (kernel chosen, ...)."""
        return {}
