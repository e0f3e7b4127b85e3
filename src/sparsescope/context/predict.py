"""The one prediction entry point: a call's predicted time through its op's own ``predict``.

:func:`predict_call` predicts one call from the bytes its backend declares and its kernel's
shape, on the device of a :class:`~sparsescope.context.device.DeviceContext`: the shape
refined from its kernel's SASS where the context can, the L2 flushed as the timing protocol
decides from the declared bytes, then ``get_op(case.op).predict(case, traffic, shape, rates,
flushed=...)``. It never raises: a case the model cannot take is "not modelled" with the
reason. The runner calls it with a prepared call's declarations (before timing);
:func:`predict_plan` calls it with a backend's host plan (no device: the what-if and the
auto selectors), for every op.

Every backend of a what-if, and every candidate of an auto choice, plans on one matrix: the
plans and predictions of the last matrix are kept (:class:`_LastMatrix`), so a kernel planned as
a candidate, chosen, and listed again as a backend of its own is planned and predicted once
(:data:`COUNTS`). A backend that packs a host format plans, above the memory budget of
:func:`plan_memory_budget`, on a row sample of the matrix (``model.plan_sample``) and says so.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from sparsescope.model.prediction import ModelPrediction, not_modelled
from sparsescope.model.throughput import rates_for_timing

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
        rates = rates_for_timing(device.rates, timing)  # the timing mode's (model.throughput)
        return get_op(case.op).predict(case, traffic, shape, rates, flushed=flushed)
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
    plan_sample: dict = field(default_factory=dict)
    """The row sample the format was planned on (``model.plan_sample.RowSample.as_dict``);
    empty: planned on the whole matrix."""


def plan_refusal(backend: Any, name: str, case: Any, value_dtype: str, index_bytes: int) -> str:
    """Why the model cannot take ``backend`` on ``case``, or ""."""
    cap = backend.capability
    if cap.device != "gpu":
        return f"{name} is a CPU backend: the time model is the GPU's"
    refused = cap.unsupported_reason(case.op, value_dtype, index_bytes)
    if not refused and hasattr(backend, "unsupported_params"):  # a layout it does not read
        refused = backend.unsupported_params(case)
    csr = case.matrix
    if not refused and index_bytes == 4 and max(csr.nnz, *csr.shape) > _INT32_MAX:
        refused = "32-bit indices cannot address this matrix"
    return f"{name}: {refused}" if refused else ""


def predict_plan(case: Any, backend: Any, device: Any, *, name: str = "",
                 value_dtype: str = "float32", index_bytes: int | None = None,
                 timing: Any = None) -> PlannedPrediction:
    """Plan ``backend``'s call of ``case`` on the host (``backend.host_plan_case``: its
    format's bytes and kernel shape for the device's SM count, nothing uploaded) and predict
    it with :func:`predict_call` on ``device``; never raises for a case the model cannot take
    (its reason instead). A chooser among kernels (an auto backend) is handed ``device`` first,
    so that it chooses by the same rates. The plan and the prediction are kept for the matrix
    (module docstring): asked again, neither is made again. ``timing``: the ``TimingConfig``
    the call is predicted for (its mode and flush; None: the latency mode's defaults)."""
    name = name or backend.name
    index_bytes = int(backend.capability.index_bytes[0]) if index_bytes is None else index_bytes
    if not device.modelled:
        return PlannedPrediction(not_modelled=device.reason or "no device rates")
    refused = plan_refusal(backend, name, case, value_dtype, index_bytes)
    if refused:
        return PlannedPrediction(not_modelled=refused)
    plan = planned_call(case, backend, device, value_dtype, index_bytes)
    if plan.error:
        return PlannedPrediction(not_modelled=f"{name} could not plan the call: {plan.error}")
    traffic, shape, plan_s = plan.traffic, plan.shape, plan.plan_s
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
    work = _work_sample(case.matrix)
    if work is not None:
        extra.append(f"the model's row terms on a stratified row sample (model.work_sample): "
                     f"{work.describe()}; scaled to the whole matrix: "
                     f"{'; '.join(work.as_dict()['terms'])}")
    if plan.sample is not None:
        extra.append(f"format planned on a row sample (memory budget "
                     f"{_gib(_BUDGET[0])}; a plan of the whole matrix holds about "
                     f"{_gib(plan.sample.total_nnz * _plan_bytes_per_nnz())}): "
                     f"{plan.sample.describe()}; its bytes scaled by nonzeros (values, "
                     "indices, padding) and rows (row pointers, y), its grid by its "
                     "decomposition; the time predicted on the whole matrix")
    flushed = flush_assumed(timing, traffic, device)
    mode = getattr(timing, "mode", "latency")
    if not flushed and mode == "latency":
        extra.append(f"L2 not flushed: the working set ({int(traffic.total_bytes):,} B) "
                     f"exceeds the L2 ({device.rates.l2_bytes:,} B), as the timing protocol "
                     "decides")
    kernel = getattr(shape, "kernel", "")
    source = getattr(shape, "source", "")
    start = time.perf_counter()
    prediction = _LAST.prediction(case, traffic, shape, device, (flushed, mode),
                                  lambda: predict_call(case, traffic, shape, device,
                                                       flushed=flushed, timing=timing, who=name,
                                                       refine=False))
    predict_s = time.perf_counter() - start
    if prediction.predicted_ms is None:
        return PlannedPrediction(plan_s=plan_s, kernel=kernel, kernel_source=source,
                                 not_modelled=prediction.not_modelled or "not modelled")
    return PlannedPrediction(prediction, kernel=kernel, kernel_source=source, plan_s=plan_s,
                             predict_s=predict_s,
                             assumptions=tuple(a for a in (device.origin, *extra) if a),
                             plan_sample=plan.sample.as_dict() if plan.sample else {})


def _work_sample(csr: Any):
    """The work sample the model's row terms of ``csr`` run on, or None."""
    from sparsescope.model.work_sample import sample_for

    indptr = getattr(csr, "indptr", None)
    return None if indptr is None else sample_for(indptr)


def _work_key(csr: Any):
    """What a kept plan or prediction of ``csr`` depends on of the work budget."""
    from sparsescope.model.work_sample import sample_key

    indptr = getattr(csr, "indptr", None)
    return None if indptr is None else sample_key(indptr)


def _residency_notes(shape: Any) -> list[str]:
    """Where the resident blocks per SM come from when the shape does not give them."""
    if getattr(shape, "resident_blocks_per_sm", 1) > 0:
        return []
    if getattr(shape, "registers", 0) > 0:
        return [f"resident blocks per SM: from the SASS's {shape.registers} registers a "
                f"thread and {shape.shared_bytes:,} B of shared memory a block"]
    return ["resident blocks per SM: the thread and block limits of the SM (the compiled "
            "kernel's registers and shared memory are not known on the host)"]


# -- plans and predictions kept for the last matrix ---------------------------------------------
COUNTS: Counter = Counter()
"""Work done in this process, for tests that count it: ``plans`` (host plans made),
``plan_hits`` (plans found kept), ``predictions`` (op predictions computed),
``prediction_hits``, ``sampled_plans`` (plans made on a row sample)."""

_BUDGET: list = [None]
"""Bytes host plans may hold (:func:`plan_memory_budget`); None: no limit."""


#: The default memory budget of host plans: a quarter of the memory available when the
#: command starts, at most this (``model.plan_sample``: above it, formats are planned on a
#: row sample).
DEFAULT_BUDGET_CAP_BYTES = 2 * 2**30


def default_memory_budget() -> int:
    """``min(DEFAULT_BUDGET_CAP_BYTES, available memory / 4)`` (``MemAvailable`` of
    /proc/meminfo, else the physical memory; the cap where neither is known)."""
    from sparsescope.hardware.cpuinfo import available_ram_bytes

    available = available_ram_bytes()
    if not available:  # the platform reports neither
        return DEFAULT_BUDGET_CAP_BYTES
    return int(min(DEFAULT_BUDGET_CAP_BYTES, available // 4))


@contextlib.contextmanager
def plan_memory_budget(budget_bytes: int | None):
    """Within the block, a backend that packs a host format plans on a row sample of any
    matrix whose plans would hold more than ``budget_bytes`` (``model.plan_sample``); None:
    every plan on the whole matrix (the default outside the block)."""
    before = _BUDGET[0]
    _BUDGET[0] = budget_bytes
    try:
        yield
    finally:
        _BUDGET[0] = before


def current_plan_budget() -> int | None:
    """The plan memory budget in force (:func:`plan_memory_budget`; None: no limit)."""
    return _BUDGET[0]


def _plan_bytes_per_nnz() -> int:
    from sparsescope.model.plan_sample import PLAN_BYTES_PER_NNZ

    return PLAN_BYTES_PER_NNZ


def _gib(count: float | None) -> str:
    return "none" if count is None else f"{count / 2**30:,.2f} GiB"


@dataclass(frozen=True)
class HostPlan:
    """A backend's host plan of one call: its traffic and kernel shape (scaled to the whole
    matrix when made on a sample), or the error that stopped it."""

    traffic: Any = None
    shape: Any = None
    plan_s: float = 0.0
    error: str = ""
    sample: Any = None
    """``model.plan_sample.RowSample`` the format was packed on; None: the whole matrix."""


def _backend_key(backend: Any) -> tuple:
    """What a backend's host plan depends on besides the case: its class and parameters (its
    ``params`` dict, else its public attributes when all are plain values; an instance with
    anything else is its own key)."""
    params = getattr(backend, "params", None)
    if isinstance(params, dict):
        return (type(backend), tuple(sorted((k, repr(v)) for k, v in params.items())))
    state = {k: v for k, v in vars(backend).items() if not k.startswith("_")}
    if all(v is None or isinstance(v, bool | int | float | str) for v in state.values()):
        return (type(backend), tuple(sorted(state.items())))
    return (type(backend), id(backend))


class _LastMatrix:
    """The plans and predictions of the last matrix planned (recognised by its identity and
    the buffers of its arrays, held by a weak reference), its row sample, and the devices the
    keys name. Planning threads share it; each answer is computed outside the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._identity: tuple = ()
        self._held: tuple = ()
        self._plans: dict = {}
        self._predictions: dict = {}
        self._sample: dict = {}
        self._devices: dict = {}
        """Devices the keys name by identity, held so that no other takes their id."""

    @staticmethod
    def _identity_of(csr: Any) -> tuple:
        arrays = tuple(getattr(csr, k, None) for k in ("indptr", "indices", "data"))
        return (id(csr), getattr(csr, "shape", None),
                *((id(a), a.ctypes.data, a.size) for a in arrays if a is not None))

    def _switch(self, csr: Any) -> None:
        identity = self._identity_of(csr)
        held = self._held[0]() if self._held else None
        if identity != self._identity or held is not csr:
            # held by a weak reference: a matrix no longer used is freed, not kept for this
            self._identity, self._held = identity, (weakref.ref(csr),)
            self._plans, self._predictions, self._sample = {}, {}, {}
            self._devices = {}

    def get(self, table: str, csr: Any, key: tuple, compute, hit: str, made: str,
            device: Any = None):
        with self._lock:
            self._switch(csr)
            if device is not None:
                self._devices[id(device)] = device
            found = getattr(self, table).get(key)
        if found is not None:
            COUNTS[hit] += 1
            return found
        value = compute()
        COUNTS[made] += 1
        with self._lock:
            held = self._held[0]() if self._held else None
            if self._identity_of(csr) == self._identity and held is csr:
                value = getattr(self, table).setdefault(key, value)
        return value

    def prediction(self, case, traffic, shape, device, flushed, compute) -> ModelPrediction:
        try:
            key = (traffic, shape, flushed, id(device), case.op, case.params,
                   getattr(case.inputs, "dtype", None), _work_key(case.matrix))
            hash(key)
        except TypeError:  # an unhashable plan (a plug-in's own shape): not kept
            COUNTS["predictions"] += 1
            return compute()
        return self.get("_predictions", case.matrix, key, compute, "prediction_hits",
                        "predictions", device)

    def clear(self) -> None:
        with self._lock:
            self._identity, self._held = (), ()
            self._plans, self._predictions, self._sample = {}, {}, {}
            self._devices = {}


_LAST = _LastMatrix()


def forget_plans() -> None:
    """Drop the kept plans and predictions, and the model's answers kept for the last matrix
    (x gathers and the format floor's requests, row lengths, warp iterations, the longest
    block's L1 lines): the next prediction is computed afresh."""
    from sparsescope.model import iterations, l1_wavefronts, onchip, work_sample, xgather

    _LAST.clear()
    for kept in (xgather.X_GATHERS, iterations.ROW_LENGTHS, onchip.WARP_ITERATIONS,
                 work_sample.SAMPLES, l1_wavefronts.WAVEFRONTS):
        kept.clear()


def planned_call(case: Any, backend: Any, device: Any, value_dtype: str,
                 index_bytes: int) -> HostPlan:
    """``backend``'s host plan of ``case`` on ``device``'s SM count, made once per matrix
    (module docstring); a backend that packs a host format (``build_format``) plans on a row
    sample above the memory budget. Never raises (the error is in the plan)."""
    budget = _BUDGET[0]
    # keyed by the sample the budget asks for, not the budget: two budgets that both plan the
    # whole matrix (a run's and a chooser's, below 4 M nonzeros) share one plan
    key = (_backend_key(backend), value_dtype, int(index_bytes), id(device),
           _sample_size(case.matrix, budget), _work_key(case.matrix))

    def make() -> HostPlan:
        backend.use_model(device)
        sample = _plan_sample(case.matrix, budget) if hasattr(backend, "build_format") else None
        start = time.perf_counter()
        try:
            if sample is None:
                traffic, shape = backend.host_plan_case(case, value_dtype, index_bytes,
                                                        device.rates.sm_count)
            else:
                from sparsescope.model.plan_sample import scale_plan

                rows, small = sample
                # what the backend derives from the matrix (a row cut) from the whole matrix
                resolve = getattr(backend, "resolved_for", None)
                planner = resolve(case.matrix) if resolve is not None else backend
                traffic, shape = scale_plan(*planner.host_plan_case(
                    replace(case, matrix=small), value_dtype, index_bytes,
                    device.rates.sm_count), rows)
                COUNTS["sampled_plans"] += 1
        except Exception as exc:  # a plan that fails is this case's reason, not the run's end
            return HostPlan(error=_error_text(exc), plan_s=time.perf_counter() - start)
        return HostPlan(traffic, shape, time.perf_counter() - start,
                        sample=sample[0] if sample is not None else None)

    return _LAST.get("_plans", case.matrix, key, make, "plan_hits", "plans", device)


def _sample_size(csr: Any, budget: int | None) -> int | None:
    """Nonzeros plans of ``csr`` are made on under ``budget`` (``model.plan_sample
    .sample_target``); None: the whole matrix."""
    if budget is None:
        return None
    from sparsescope.model.plan_sample import sample_target

    return sample_target(int(csr.nnz), int(budget))


def _plan_sample(csr: Any, budget: int | None):
    """(RowSample, its CSR) when plans of ``csr`` would exceed ``budget``, else None; made
    once per matrix and sample size."""
    target = _sample_size(csr, budget)
    if target is None:
        return None
    from sparsescope.model.plan_sample import row_sample, sample_matrix

    def make():
        rows = row_sample(csr.indptr, target)
        return rows, sample_matrix(csr, rows)

    return _LAST.get("_sample", csr, (target,), make, "sample_hits", "samples")


def plan_case(op: str, csr: Any, params: Any, *, value_dtype: str = "float32",
              index_bytes: int = 4) -> Any:
    """The case a host plan needs of ``csr`` (canonical CSR): the op's ``plan_case`` (for SpMV
    the matrix without the input vector and the float64 reference it never reads)."""
    from sparsescope.ops.registry import get_op

    return get_op(op).plan_case(csr, params, value_dtype=value_dtype, index_bytes=index_bytes)


def prefetch_sass(shapes, device: Any) -> None:
    """Read the SASS of every own kernel among ``shapes`` not yet read, on ``device``'s
    architecture, in as few compiler runs as ``sass.kernel_shape.prefetch_all`` needs (one for
    every source that can share it, cut only for idle cores: ``sass.programs``); nothing when
    the device has no SASS refiner."""
    if device.refine is None or device.spec is None:
        return
    from sparsescope.sass.kernel_shape import prefetch_all

    arch = "sm_" + str(device.spec.compute_capability).replace(".", "")
    by_source: dict[str, list[str]] = {}
    for shape in shapes:
        source = getattr(shape, "cuda_source", "")
        if source and getattr(shape, "kernel", ""):
            by_source.setdefault(source, []).append(shape.kernel)
    if by_source:
        prefetch_all(by_source, arch)
