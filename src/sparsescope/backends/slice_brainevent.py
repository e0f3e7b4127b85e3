"""brainevent's ``csr_slice_rows`` (seed 003's system), on JAX's GPU backend.

The call (brainevent ``_csr/slice.py``)::

    brainevent.csr_slice_rows(data, indices, indptr, row_indices, shape=(rows, cols))

``data`` holds one value per nonzero, or a single value for homogeneous weights (seed 003's
two weight modes); ``row_indices`` is int32; out-of-range indices give zero rows there, but the
op has validated (or mapped) them before this backend sees them. The call is jitted once with
the shape static, then timed from the host around ``block_until_ready()``: JAX launches on its
own streams, which CUDA events recorded on another library's stream would not bracket. The
host clock adds the dispatch overhead (a few microseconds) to every sample; the notes say so.
float32 only (JAX runs in 32 bits unless x64 is enabled globally).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.ops.base import OpCase
from sparsescope.ops.slice_rows import SCALAR_WEIGHT
from sparsescope.timing.types import Measurement, TimingConfig


def brainevent_status() -> tuple[bool, str]:
    """(True, "") when brainevent imports and JAX sees a GPU, else (False, why not)."""
    for module in ("jax", "brainevent"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return False, f"{module} is not installed (pip install brainevent 'jax[cuda12]')"
    try:
        import jax

        gpus = jax.devices("gpu")
    except Exception as exc:  # a CPU-only jaxlib raises here
        return False, f"JAX sees no GPU: {type(exc).__name__}: {exc}"
    if not gpus:
        return False, "JAX sees no GPU"
    return True, ""


@dataclass
class PreparedBrainevent:
    fn: Any
    """The jitted call, arguments bound."""
    args: tuple
    working_set_bytes: int
    backends: str

    def call(self):
        return self.fn(*self.args)


class SliceBrainevent(OpBackend):
    name = "slice-brainevent"
    capability = Capability(
        ops=("slice",), value_dtypes=("float32",), index_bytes=(4,), device="gpu",
        description="brainevent.csr_slice_rows on JAX (seed 003's system)")

    def availability(self) -> tuple[bool, str]:
        return brainevent_status()

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedBrainevent:
        import brainevent
        import jax
        import jax.numpy as jnp

        csr, inputs = case.matrix, case.inputs
        gpu = jax.devices("gpu")[0]
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        data = (np.array([SCALAR_WEIGHT], dtype=dtype) if inputs.weights == "scalar"
                else csr.data.astype(dtype))
        shape = (int(csr.shape[0]), int(csr.shape[1]))

        def call(d, i, p, r):
            return brainevent.csr_slice_rows(d, i, p, r, shape=shape)

        args = tuple(jax.device_put(jnp.asarray(a), gpu) for a in (
            data, csr.indices.astype(np.int32), csr.indptr.astype(np.int32),
            inputs.rows.astype(np.int32)))
        try:
            backends = ", ".join(brainevent.csr_slice_rows_p.available_backends("gpu"))
        except Exception:  # informative only; older releases name platforms differently
            backends = "unknown"
        return PreparedBrainevent(jax.jit(call), args, case.traffic.dense_bytes, backends)

    def run(self, prepared: PreparedBrainevent) -> np.ndarray:
        return np.array(prepared.call())

    def time(self, prepared: PreparedBrainevent, config: TimingConfig) -> Measurement:
        from sparsescope.timing.host import time_host

        return time_host(lambda: prepared.call().block_until_ready(), config,
                         working_set_bytes=prepared.working_set_bytes, llc_bytes=0)

    def library_versions(self) -> dict[str, str]:
        import brainevent
        import jax

        return {"brainevent": getattr(brainevent, "__version__", "unknown"),
                "jax": jax.__version__}

    def notes(self, prepared: PreparedBrainevent) -> dict[str, str]:
        return {"call": "jax.jit(brainevent.csr_slice_rows)", "clock": "host "
                "(block_until_ready; includes JAX dispatch)", "gpu_backends": prepared.backends,
                "output": "allocated by XLA on every call"}
