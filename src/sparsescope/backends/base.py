"""What a backend is: a declared :class:`Capability`, the bytes its format moves, and the
methods the one runner (:mod:`sparsescope.backends.runner`) calls.

The runner sees every backend through :class:`Backend`'s ``*_case`` methods, whatever the op.
Two bases implement them for the two ways a backend is written:

* :class:`SpmvBackend`: ``prepare(csr, value_dtype, index_bytes)``, ``run(prepared, x)``,
  ``time(prepared, x, config)`` -- the SpMV contract every SpMV backend is written to;
* :class:`OpBackend`: ``prepare(case, value_dtype, index_bytes)``, ``run(prepared)``,
  ``time(prepared, config)`` -- any op, the whole :class:`~sparsescope.ops.base.OpCase` given.

A backend module imports its library (torch, cupy, ...) inside its methods, never at module
top, so the registry can name it without loading anything.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.traffic import Traffic
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
    """One implementation of an op, as the runner calls it. Subclasses set :attr:`name` and
    :attr:`capability` (and derive from :class:`SpmvBackend` or :class:`OpBackend`)."""

    name: str = ""
    capability: Capability

    def availability(self) -> tuple[bool, str]:
        """(True, "") when the backend can run here, else (False, why not)."""
        return True, ""

    def use_model(self, model: Any) -> None:  # noqa: B027  (optional hook, no-op by default)
        """Told, before it prepares, the device the time model predicts for (a
        ``context.DeviceContext``); a backend that chooses its kernel by prediction keeps it.
        Nothing by default."""

    def use_timing(self, config: Any) -> None:  # noqa: B027  (optional hook, no-op by default)
        """Told, before it prepares, the run's timing protocol (a ``timing.types.TimingConfig``:
        its ``mode``, latency or throughput); a backend that times candidates before it chooses
        times them as the run will time it. Nothing by default."""

    def unsupported_params(self, case: Any) -> str:
        """Why this backend cannot run the case's parameters (e.g. a layout), or ``""``."""
        return ""

    def check_tolerance(self, case: Any) -> float | None:
        """The tolerance this backend's output is checked at when its arithmetic is declared
        coarser than the case's value type (TF32 products of float32 data), derived from that
        arithmetic's unit roundoff; None (the default): the case's own tolerance."""
        return None

    def prefetch_case(self, case: Any, value_dtype: str, index_bytes: int) -> None:  # noqa: B027
        """Start, in the background, the host work :meth:`prepare_case` will need (packing the
        matrix into the backend's format), so that it runs while earlier cases are timed.
        The runner calls it at the start of a matrix on a GPU run. Nothing by default."""

    @abstractmethod
    def prepare_case(self, case: Any, value_dtype: str, index_bytes: int) -> Any:
        """Convert the case's matrix and inputs to the backend's format (on its device)."""

    @abstractmethod
    def run_case(self, prepared: Any) -> np.ndarray:
        """One call; the output as a host array of the reference's shape."""

    @abstractmethod
    def time_case(self, prepared: Any, config: TimingConfig) -> Measurement:
        """Time the call with the one protocol (``timing.time_host`` or CUDA events)."""

    @abstractmethod
    def poison_case(self, prepared: Any) -> bool:
        """Fill the reused output buffer with NaN before the checked run; False when the
        backend returns a fresh array on every call (the runner then checks it is fresh)."""

    @abstractmethod
    def case_notes(self, prepared: Any) -> dict[str, str]:
        """Free-text facts worth keeping with the case (kernel chosen, launch shape)."""

    @abstractmethod
    def library_versions(self) -> dict[str, str]:
        """Library -> version of everything that computed the numbers."""

    def kernel_shape(self, case: Any, prepared: Any) -> KernelShape | None:
        """How the prepared call's kernel lays its work out (``model.kernel_shape``), for the
        time model; None when the backend does not declare one (its cases are then "not
        modelled", with that reason)."""
        return None

    def host_plan_case(self, case: Any, value_dtype: str, index_bytes: int,
                       sms: int) -> tuple[Traffic | None, Any]:
        """(traffic, kernel shape) of ``case``'s call on a device of ``sms`` SMs, planned on
        the host without a device (the cross-GPU what-if, the auto selectors; predicted by
        ``context.predict_plan``). (None, None) for a backend that cannot plan without its
        device (the default)."""
        return None, None

    def traffic(self, case: Any, prepared: Any) -> Traffic:
        """The bytes one call moves at least, array by array, in this backend's own format.

        The default: plain CSR at the case's index width (``case.csr_traffic``), with the
        output read as well when the backend computes ``y += A x`` (``capability.y_read``). A
        backend with a format of its own overrides this with the bytes of its packed arrays.
        """
        base = case.csr_traffic
        if base is None or not self.capability.y_read:
            return base
        return replace(base, y_read_bytes=base.y_written_bytes)


def tell_timing(backend: Any, config: Any) -> None:
    """Hand ``backend`` the run's timing protocol (:meth:`Backend.use_timing`) where it takes
    one: a plug-in need not subclass :class:`Backend`. Called, never kept as a bound method:
    that would keep the backend, and the device memory it holds, alive."""
    if hasattr(backend, "use_timing"):
        backend.use_timing(config)


class SpmvBackend(Backend):
    """A backend of ``y = A x`` written to the SpMV contract (the matrix and x, not the case)."""

    @abstractmethod
    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str, index_bytes: int) -> Any:
        """Convert the canonical float64 CSR to the backend's format (on its device)."""

    @abstractmethod
    def run(self, prepared: Any, x: np.ndarray) -> np.ndarray:
        """One call; returns ``y`` as a host array of length ``rows``."""

    @abstractmethod
    def time(self, prepared: Any, x: np.ndarray, config: TimingConfig) -> Measurement:
        """Time the call with the one protocol (``timing.time_host`` or CUDA events)."""

    def poison_output(self, prepared: Any) -> bool:
        """Fill the output buffer the next :meth:`run` writes with NaN; True if there is one.

        GPU backends own a device ``y`` buffer reused across calls: they fill it with NaN
        before the checked run, so a kernel that skips a row leaves NaN and fails the gate
        instead of passing on values left by an earlier call. A backend that returns a freshly
        allocated array on every call (SciPy) has no such buffer and returns False.
        """
        return False

    def notes(self, prepared: Any) -> dict[str, str]:
        """Backend-specific facts worth keeping with the case (kernel chosen, ...)."""
        return {}

    def own_traffic(self, prepared: Any) -> Traffic | None:
        """The bytes of the backend's own format once prepared, or None for plain CSR."""
        return None

    def shape(self, prepared: Any) -> KernelShape | None:
        """The prepared kernel's shape (:meth:`Backend.kernel_shape`), or None."""
        return None

    def host_plan(self, csr: sp.csr_matrix, value_dtype: str, index_bytes: int,
                  sms: int) -> tuple[Traffic | None, KernelShape | None]:
        """(traffic, kernel shape) of a call on a device of ``sms`` SMs, planned on the host
        without a device (``sparsescope model``'s cross-GPU what-if): the format is built,
        nothing is uploaded, resources the compiled kernel would fix are left unknown.
        (None, None) for a backend that cannot plan without its device."""
        return None, None

    def host_plan_case(self, case: Any, value_dtype: str, index_bytes: int,
                       sms: int) -> tuple[Traffic | None, KernelShape | None]:
        return self.host_plan(case.matrix, value_dtype, index_bytes, sms)

    def kernel_shape(self, case: Any, prepared: Any) -> KernelShape | None:
        return self.shape(prepared.prepared) if prepared is not None else None

    # -- the runner's view: the case's x travels with the prepared format ---------------------
    def prepare_case(self, case: Any, value_dtype: str, index_bytes: int) -> Any:
        return _SpmvPrepared(self.prepare(case.matrix, value_dtype, index_bytes), case.inputs)

    def run_case(self, prepared: Any) -> np.ndarray:
        return self.run(prepared.prepared, prepared.x)

    def time_case(self, prepared: Any, config: TimingConfig) -> Measurement:
        return self.time(prepared.prepared, prepared.x, config)

    def poison_case(self, prepared: Any) -> bool:
        return self.poison_output(prepared.prepared)

    def case_notes(self, prepared: Any) -> dict[str, str]:
        return self.notes(prepared.prepared)

    def traffic(self, case: Any, prepared: Any) -> Traffic:
        own = self.own_traffic(prepared.prepared) if prepared is not None else None
        return own if own is not None else super().traffic(case, prepared)


@dataclass(frozen=True)
class _SpmvPrepared:
    prepared: Any
    x: np.ndarray


class OpBackend(Backend):
    """A backend given the whole :class:`~sparsescope.ops.base.OpCase` (any op)."""

    @abstractmethod
    def prepare(self, case: Any, value_dtype: str, index_bytes: int) -> Any:
        """Convert the case's matrix and inputs to the backend's format (on its device)."""

    @abstractmethod
    def run(self, prepared: Any) -> np.ndarray:
        """One call; the output as a host array of the reference's shape."""

    @abstractmethod
    def time(self, prepared: Any, config: TimingConfig) -> Measurement:
        """Time the call with the one protocol (``timing.time_host`` or ``timing.time_cuda``)."""

    def poison_output(self, prepared: Any) -> bool:
        """Fill a reused output buffer with NaN before the checked run; False when there is
        none (the runner then checks the output is a fresh array instead)."""
        return False

    def notes(self, prepared: Any) -> dict[str, str]:
        """Backend-specific facts worth keeping with the case (kernel chosen, launch shape)."""
        return {}

    def prepare_case(self, case: Any, value_dtype: str, index_bytes: int) -> Any:
        return self.prepare(case, value_dtype, index_bytes)

    def run_case(self, prepared: Any) -> np.ndarray:
        return self.run(prepared)

    def time_case(self, prepared: Any, config: TimingConfig) -> Measurement:
        return self.time(prepared, config)

    def poison_case(self, prepared: Any) -> bool:
        return self.poison_output(prepared)

    def case_notes(self, prepared: Any) -> dict[str, str]:
        return self.notes(prepared)
