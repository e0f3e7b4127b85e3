"""The one prediction entry point: a call's predicted time through its op's own ``predict``.

:func:`predict_call` predicts one call from the bytes its backend declares and its kernel's
shape, on the device of a :class:`~sparsescope.context.device.DeviceContext`: the shape
refined from its kernel's SASS where the context can, the L2 flushed as the timing protocol
decides from the declared bytes, then ``get_op(case.op).predict(case, traffic, shape, rates,
flushed=...)``. It never raises: a case the model cannot take is "not modelled" with the
reason. The runner calls it with a prepared call's declarations (before timing);
:func:`predict_plan` calls it with a backend's host plan (no device: the what-if and the
auto selectors), for every op.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sparsescope.model.prediction import ModelPrediction, not_modelled

_INT32_MAX = 2**31 - 1


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def flush_assumed(timing: Any, traffic: Any, device: Any) -> bool | None:
    """Whether the timing protocol (``timing``: a ``TimingConfig``; None: its defaults) will
    flush the L2 before each call, as far as the declared bytes tell (None: no rates or no
    declaration)."""
    from sparsescope.timing.host import should_flush
    from sparsescope.timing.types import TimingConfig

    if device.rates is None or traffic is None:
        return None
    return should_flush(timing or TimingConfig(), int(traffic.total_bytes),
                        device.rates.l2_bytes)


def refined_shape(shape: Any, device: Any) -> tuple[Any, list[str]]:
    """(``shape`` with its SASS figures where the context can read them, what the assumptions
    say about where the shape came from)."""
    if not getattr(shape, "cuda_source", ""):
        return shape, []
    if device.refine is None:
        return shape, [device.refine_reason] if device.refine_reason else []
    refined = device.refine(shape)
    if refined.source == shape.source:
        return refined, [f"kernel shape declared by the backend: no SASS of {shape.kernel}"]
    return refined, []


def predict_call(case: Any, traffic: Any, shape: Any, device: Any, *,
                 flushed: bool | None = None, timing: Any = None, who: str = "the backend",
                 refine: bool = True) -> ModelPrediction:
    """``case``'s op's prediction of one call on ``device`` (a ``DeviceContext``) from the
    declared ``traffic`` and kernel ``shape``; never raises (a model error is its reason).

    ``flushed``: whether the L2 is flushed before the call (default: as the declared bytes
    tell the timing protocol ``timing``); ``who`` names the backend in a reason; ``refine``
    False: ``shape`` is already refined (or must stay declared)."""
    from sparsescope.ops.registry import get_op

    if device.rates is None:
        return not_modelled(device.reason or "no device rates for the time model")
    if traffic is None:
        return not_modelled(f"{who} declared no traffic")
    if shape is None:
        return not_modelled(f"{who} declares no kernel shape")
    try:
        if refine and device.refine is not None and getattr(shape, "cuda_source", ""):
            shape = device.refine(shape)
        if flushed is None:
            flushed = flush_assumed(timing, traffic, device)
        return get_op(case.op).predict(case, traffic, shape, device.rates, flushed=flushed)
    except Exception as exc:  # the model must never fail a case
        return not_modelled(f"the model failed: {_error_text(exc)}")


@dataclass(frozen=True)
class PlannedPrediction:
    """A call planned on the host and predicted, or why it is not modelled."""

    prediction: ModelPrediction | None = None
    """None when not modelled."""
    not_modelled: str = ""
    kernel: str = ""
    """The kernel's name (a template instance of an own kernel, or the library's kernel)."""
    kernel_source: str = ""
    """Where the kernel's shape came from (its SASS, or the backend's declaration)."""
    plan_s: float = 0.0
    """Seconds the host plan took (format packing included)."""
    predict_s: float = 0.0
    assumptions: tuple[str, ...] = ()
    """What the plan assumed beyond the prediction's own (the rates' origin, the shape's
    source, the flush)."""


def plan_refusal(backend: Any, name: str, case: Any, value_dtype: str, index_bytes: int) -> str:
    """Why the model cannot take ``backend`` on ``case``, or ""."""
    cap = backend.capability
    if cap.device != "gpu":
        return f"{name} is a CPU backend: the time model is the GPU's"
    refused = cap.unsupported_reason(case.op, value_dtype, index_bytes)
    csr = case.matrix
    if not refused and index_bytes == 4 and max(csr.nnz, *csr.shape) > _INT32_MAX:
        refused = "32-bit indices cannot address this matrix"
    return f"{name}: {refused}" if refused else ""


def predict_plan(case: Any, backend: Any, device: Any, *, name: str = "",
                 value_dtype: str = "float32", index_bytes: int | None = None
                 ) -> PlannedPrediction:
    """Plan ``backend``'s call of ``case`` on the host (``backend.host_plan_case``: its
    format's bytes and kernel shape for the device's SM count, nothing uploaded) and predict
    it with :func:`predict_call` on ``device``; never raises for a case the model cannot take
    (its reason instead). A chooser among kernels (an auto backend) is handed ``device`` first,
    so that it chooses by the same rates."""
    name = name or backend.name
    index_bytes = int(backend.capability.index_bytes[0]) if index_bytes is None else index_bytes
    if not device.modelled:
        return PlannedPrediction(not_modelled=device.reason or "no device rates")
    refused = plan_refusal(backend, name, case, value_dtype, index_bytes)
    if refused:
        return PlannedPrediction(not_modelled=refused)
    backend.use_model(device)
    start = time.perf_counter()
    try:
        traffic, shape = backend.host_plan_case(case, value_dtype, index_bytes,
                                                device.rates.sm_count)
    except Exception as exc:  # a plan that fails is this case's reason, not the run's end
        return PlannedPrediction(not_modelled=f"{name} could not plan the call: "
                                              f"{_error_text(exc)}")
    plan_s = time.perf_counter() - start
    if traffic is None and shape is None:
        return PlannedPrediction(plan_s=plan_s,
                                 not_modelled=f"{name} cannot plan without its device")
    if traffic is None or shape is None:
        csr = case.matrix
        missing = "traffic" if traffic is None else "kernel shape"
        return PlannedPrediction(plan_s=plan_s, not_modelled=(
            f"{name} declares no {missing} for this matrix ({csr.shape[0]:,} x "
            f"{csr.shape[1]:,}, {csr.nnz:,} nonzeros)"))
    shape, extra = refined_shape(shape, device)
    extra += _residency_notes(shape)
    flushed = flush_assumed(None, traffic, device)
    if not flushed:
        extra.append(f"L2 not flushed: the working set ({int(traffic.total_bytes):,} B) "
                     f"exceeds the L2 ({device.rates.l2_bytes:,} B), as the timing protocol "
                     "decides")
    kernel = getattr(shape, "kernel", "")
    source = getattr(shape, "source", "")
    start = time.perf_counter()
    prediction = predict_call(case, traffic, shape, device, flushed=flushed, who=name,
                              refine=False)
    predict_s = time.perf_counter() - start
    if prediction.predicted_ms is None:
        return PlannedPrediction(plan_s=plan_s, kernel=kernel, kernel_source=source,
                                 not_modelled=prediction.not_modelled or "not modelled")
    return PlannedPrediction(prediction, kernel=kernel, kernel_source=source, plan_s=plan_s,
                             predict_s=predict_s,
                             assumptions=tuple(a for a in (device.origin, *extra) if a))


def _residency_notes(shape: Any) -> list[str]:
    """Where the resident blocks per SM come from when the shape does not give them."""
    if getattr(shape, "resident_blocks_per_sm", 1) > 0:
        return []
    if getattr(shape, "registers", 0) > 0:
        return [f"resident blocks per SM: from the SASS's {shape.registers} registers a "
                f"thread and {shape.shared_bytes:,} B of shared memory a block"]
    return ["resident blocks per SM: the thread and block limits of the SM (the compiled "
            "kernel's registers and shared memory are not known on the host)"]
