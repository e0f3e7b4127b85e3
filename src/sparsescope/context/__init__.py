"""The device and prediction context: which device a case is predicted for, and the one
prediction entry point.

:class:`~sparsescope.context.device.DeviceContext` (a frozen record) is built once, for the
present device (:func:`present_device`, measured now; :func:`present_gpu_stored`, its stored
ceilings) or for a GPU named by the user (:func:`named_gpu`, the what-if): spec, measured
ceilings, driver, the time model's rates, the SASS refiner, where the rates came from, or the
reason the device is not modelled. :func:`~sparsescope.context.predict.predict_call` is the one
way a call is predicted, through its op's own ``predict``: the runner, the what-if and the auto
selectors go through it.

This stage sits below ``backends``, ``sweep``, ``analyze`` and the what-if (they receive a
context as a parameter); it imports ``hardware``, ``model``, ``ops``, ``sass``, ``timing`` and
``results`` (stored ceilings) only, and no GPU library at import time.
"""

from __future__ import annotations

from sparsescope.context.device import (
    CPU_BACKEND,
    CPU_RUN,
    DeviceContext,
    cpu_context,
    named_gpu,
    not_modelled_context,
    present_device,
    present_gpu,
    present_gpu_stored,
    rates_context,
    sass_refiner,
    sass_status,
    stored_gpu_ceilings,
)
from sparsescope.context.predict import (
    PlannedPrediction,
    flush_assumed,
    predict_call,
    predict_plan,
)

__all__ = [
    "CPU_BACKEND", "CPU_RUN", "DeviceContext", "PlannedPrediction", "cpu_context",
    "flush_assumed", "named_gpu", "not_modelled_context", "predict_call", "predict_plan",
    "present_device", "present_gpu", "present_gpu_stored", "rates_context", "sass_refiner",
    "sass_status", "stored_gpu_ceilings",
]
