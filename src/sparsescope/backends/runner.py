"""The one runner: prepare -> check against float64 -> time -> record, for every op and backend.

Order, each step able to end the case with a recorded reason:

1. the op validates the parameters and builds the case (inputs, float64 reference, tolerance,
   byte model) -- bad parameters, such as an out-of-range row index, raise a
   :class:`~sparsescope.errors.UsageError` here, before any backend is prepared or launched;
2. skipped: the backend does not support the op, value dtype, index width or parameters, or is
   not available on this machine (its reason kept);
3. prepare; the backend declares the bytes its format moves (:class:`~sparsescope.model.
   traffic.Traffic`); poison the output (backends owning an output buffer fill it with NaN);
   run once;
4. failed: the run raised, the output is not a fresh array of the reference's shape, or its
   error is above the tolerance -- never timed;
5. predicted: when the runner is given the device's rates, the op's time model predicts the
   call from the declared traffic and the backend's kernel shape -- before the call is timed;
6. ok: timed with the one protocol; the measurement stored next to the error, and the
   prediction's signed error against it.

A backend exception becomes a ``failed`` case with the exception text, never a crash; a
device out of memory is a ``skipped`` case ("GPU out of memory (stage): ..."), and the memory
the case held is handed back to the device before the next one (:mod:`.gpu_memory`).

Each step is marked as a stage of :mod:`sparsescope.stages` (``reference``, ``prepare``,
``check``, ``sass_plan``, ``prediction``, ``timing``), charged to the caller's stage clock when
one is active (``api.run``, a sweep worker) and free otherwise; the SASS the time model reads
is charged to ``sass_plan`` wherever it is read (an auto backend's choice included), through
the device context's refiner (:func:`sass_timed`).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sparsescope.backends.base import Backend, tell_timing
from sparsescope.backends.gpu_memory import OUT_OF_MEMORY, free_device_memory, is_out_of_memory
from sparsescope.backends.registry import get_backend
from sparsescope.context import CPU_BACKEND, DeviceContext, flush_assumed, predict_call
from sparsescope.matrices.types import Matrix
from sparsescope.model.prediction import ModelPrediction, not_modelled
from sparsescope.ops.base import OpCase
from sparsescope.ops.params import OpParams
from sparsescope.ops.registry import get_op
from sparsescope.results.records import CaseResult
from sparsescope.stages import stage, timed
from sparsescope.timing.types import TimingConfig

#: Bytes per value for dtypes a backend may declare (including ones NumPy lacks).
VALUE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class BackendChoice:
    """A backend to run, with constructor options (a kernel variant) and its label."""

    name: str
    """Registry name, e.g. ``cuda-spmv-sell``."""
    options: tuple[tuple[str, Any], ...] = ()
    """Keyword options for the backend's constructor, e.g. ``(("unroll", 4),)``."""
    label: str = ""
    """How results name it (``CaseResult.backend``); the name when empty."""

    @property
    def result_name(self) -> str:
        return self.label or self.name

    def create(self) -> Backend:
        return get_backend(self.name, **dict(self.options))


def _numpy_dtype(name: str) -> bool:
    try:
        np.dtype(name)
    except TypeError:
        return False
    return True


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _input_arrays(case: OpCase) -> list[np.ndarray]:
    inputs = case.inputs
    arrays = [case.matrix.data, case.matrix.indices, case.matrix.indptr]
    if isinstance(inputs, np.ndarray):
        arrays.append(inputs)
    elif isinstance(getattr(inputs, "rows", None), np.ndarray):
        arrays.append(inputs.rows)
    return arrays


def output_problem(out: object, case: OpCase, poisoned: bool) -> str:
    """Why ``out`` cannot be checked, or an empty string. Without a poisoned buffer the output
    must be a fresh host array: one aliasing an input could carry values never written."""
    if not isinstance(out, np.ndarray):
        return f"run returned {type(out).__name__}, expected a NumPy array"
    if out.shape != case.output_shape:
        return f"output has shape {out.shape}, expected {case.output_shape}"
    if not poisoned and any(np.shares_memory(out, a) for a in _input_arrays(case)):
        return "output aliases an input array"
    return ""


def skip_reason(backend: Backend, case: OpCase, value_dtype: str, index_bytes: int) -> str:
    """Why ``backend`` cannot run ``case`` here, or an empty string."""
    reason = backend.capability.unsupported_reason(case.op, value_dtype, index_bytes)
    if not reason and index_bytes == 4 and max(case.matrix.nnz, *case.matrix.shape) > _INT32_MAX:
        reason = f"nnz {case.matrix.nnz} does not fit INT32 indices"
    if not reason:
        reason = value_range_reason(case.matrix, value_dtype)
    if not reason:
        reason = backend.unsupported_params(case)
    if not reason:
        available, why = backend.availability()
        reason = "" if available else f"backend unavailable: {why}"
    return reason


def value_range_reason(csr, value_dtype: str) -> str:
    """Why the matrix's values cannot be stored in ``value_dtype``, or an empty string.

    A value beyond the type's largest finite number becomes infinite when the backend casts
    the matrix, so every backend would fail its check with an infinite error: the case is
    skipped with the number instead (SuiteSparse's ``temp`` holds 4.8e38, beyond float32's
    3.4e38)."""
    if not _numpy_dtype(value_dtype) or csr.nnz == 0:
        return ""
    dtype = np.dtype(value_dtype)
    if dtype.kind != "f":
        return ""
    largest = _largest_magnitude(csr.data)
    limit = float(np.finfo(dtype).max)
    if largest <= limit:
        return ""
    return (f"the matrix holds values up to {largest:.3g}, beyond {value_dtype}'s largest "
            f"finite value {limit:.3g}; run it in float64")


#: (a weak reference to the data array, its largest |value|) of the last matrix asked: every
#: case of a matrix asks, and a pass over 10^8 values is a tenth of a second.
_LARGEST: list = [None, 0.0]


def _largest_magnitude(data: np.ndarray) -> float:
    """``max |data|`` (data not empty), remembered for the last array while that array lives
    (the runner never changes a case's matrix in place).

    A weak reference, not the array's id and buffer address: once a matrix is freed, the next
    one of the same size can get both again, and would have read the freed one's value (a
    test's 3 x 3 matrix of 1.0 was skipped as holding 1e39, the matrix of the test before)."""
    cached = _LARGEST[0]() if _LARGEST[0] is not None else None
    if cached is not data:
        _LARGEST[:] = [weakref.ref(data), float(np.abs(data).max())]
    return _LARGEST[1]


def run_case(matrix: Matrix, backend: str | BackendChoice | Backend, op: str = "spmv",
             params: Mapping[str, Any] | OpParams | None = None, *, config: TimingConfig,
             value_dtype: str = "float32", index_bytes: int | None = None,
             tolerance: float | None = None, seed: int = 0, strict: bool = False,
             timed: bool = True, case: OpCase | None = None,
             model: DeviceContext | None = None) -> CaseResult:
    """Check ``backend`` on ``matrix`` for ``op`` with ``params``, then time it if it passed.

    ``backend``: a registry name, a :class:`BackendChoice` (a variant), or an instance (tests
    pass fakes). ``timed=False`` stops after the check (the ncu target: ncu replays the
    launches itself). ``case``: the op case already built for these arguments. ``model``:
    the device the time model predicts for (no prediction without one)."""
    if isinstance(backend, Backend):
        instance, label = backend, backend.name
    else:
        choice = backend if isinstance(backend, BackendChoice) else BackendChoice(backend)
        instance, label = choice.create(), choice.result_name
    index_bytes = instance.capability.index_bytes[0] if index_bytes is None else index_bytes
    refused = instance.capability.unsupported_reason(op, value_dtype, index_bytes)
    if case is None and refused and not _numpy_dtype(value_dtype):
        # A value dtype NumPy lacks (bfloat16) cannot build the case's inputs: the backend's
        # refusal is the outcome (the parameters are still validated).
        op_obj = get_op(op)
        return CaseResult(matrix=matrix.name, backend=label, op=op,
                          value_bytes=VALUE_BYTES.get(value_dtype, 0), index_bytes=index_bytes,
                          y_read=instance.capability.y_read,
                          params=op_obj.resolve_params(params), derived=op_obj.derived_type(),
                          timing_mode=config.mode, outcome="skipped", reason=refused)
    if case is None:
        with stage("reference"):
            case = get_op(op).make_case(matrix.csr, params, value_dtype=value_dtype,
                                        index_bytes=index_bytes, seed=seed,
                                        tolerance=tolerance, strict=strict)
    base = dict(matrix=matrix.name, backend=label, op=case.op,
                value_bytes=VALUE_BYTES.get(value_dtype, 0), index_bytes=index_bytes,
                y_read=instance.capability.y_read, params=case.params, derived=case.derived,
                timing_mode=config.mode)
    reason = skip_reason(instance, case, value_dtype, index_bytes)
    if reason:
        return CaseResult(**base, outcome="skipped", reason=reason)
    if model is not None:
        model = sass_timed(model)
        instance.use_model(model)
    tell_timing(instance, config)
    result = _checked_and_timed(instance, case, base, config=config, value_dtype=value_dtype,
                                index_bytes=index_bytes, timed=timed, model=model)
    if result.reason.startswith(OUT_OF_MEMORY):
        del instance, case  # what the backend kept on itself goes too
        free_device_memory()  # the case's arrays are gone now: hand their memory back
    return result


def _error_result(base: dict, stage: str, exc: Exception, **fields) -> CaseResult:
    """A case that raised in ``stage``: ``failed``, or ``skipped`` when the device ran out of
    memory (the input does not fit: nothing is wrong with the backend)."""
    if is_out_of_memory(exc):
        return CaseResult(**base, outcome="skipped", **fields,
                          reason=f"{OUT_OF_MEMORY} ({stage}): {_error_text(exc)}")
    return CaseResult(**base, outcome="failed", **fields,
                      reason=f"{stage} failed: {_error_text(exc)}")


def _checked_and_timed(backend: Backend, case: OpCase, base: dict, *, config: TimingConfig,
                       value_dtype: str, index_bytes: int, timed: bool,
                       model: DeviceContext | None = None) -> CaseResult:
    try:
        with stage("prepare"):
            prepared = backend.prepare_case(case, value_dtype, index_bytes)
    except Exception as exc:
        return _error_result(base, "prepare", exc)
    with stage("prepare"):  # the format's own bytes: a count over the packed format
        notes = _backend_notes(backend, prepared)
        base = {**base, "notes": notes, "traffic": _declared_traffic(backend, case, prepared)}
    with stage("check"):
        try:
            poisoned = backend.poison_case(prepared)
            out = backend.run_case(prepared)
        except Exception as exc:
            return _error_result(base, "run", exc)
        problem = output_problem(out, case, poisoned)
        if problem:
            return CaseResult(**base, outcome="failed", reason=problem)
        declared = backend.check_tolerance(case)  # a coarser arithmetic's own bound (TF32)
        correctness = get_op(case.op).check(
            out, case if declared is None else replace(case, tolerance=declared))
    if not correctness.passed:
        return CaseResult(**base, outcome="failed", correctness=correctness,
                          reason=f"rel_err {correctness.rel_err:.3g} above tolerance "
                                 f"{correctness.tolerance:.3g}; not timed")
    flushed = None
    if model is not None:
        flushed = flush_assumed(config, base["traffic"], model)
        base["prediction"] = predicted(backend, case, prepared, base["traffic"], model, config,
                                       flushed=flushed)
    if not timed:
        return CaseResult(**base, outcome="ok", correctness=correctness,
                          reason="checked only, not timed")
    try:
        with stage("timing"):
            measurement = backend.time_case(prepared, config)
    except Exception as exc:
        return _error_result(base, "timing", exc, correctness=correctness)
    if base.get("prediction") is not None:
        if flushed is not None and measurement.flushed != flushed:
            # the timing decided the flush from the backend's own working set, the prediction
            # from the declared bytes; near the L2 size they can differ: predict what ran
            base["prediction"] = predicted(backend, case, prepared, base["traffic"], model,
                                           config, flushed=measurement.flushed)
        base["prediction"] = base["prediction"].scored(measurement.time_ms)
    # the timing may add to them: how the timed calls were launched (PDL back to back)
    base["notes"] = _backend_notes(backend, prepared)
    return CaseResult(**base, outcome="ok", measurement=measurement, correctness=correctness)


def predicted(backend: Backend, case: OpCase, prepared: Any, traffic: Any,
              model: DeviceContext, config: TimingConfig, *,
              flushed: bool | None = None) -> ModelPrediction:
    """The op's prediction of this prepared call (:func:`~sparsescope.context.predict_call`,
    never raises: a model error is its reason); ``flushed``: whether the L2 is flushed before
    the call (default: as the declared bytes tell the timing protocol). Charged to the
    ``prediction`` stage, the kernel's plan (its shape) and SASS to ``sass_plan``."""
    if model.rates is not None and backend.capability.device != "gpu":
        return not_modelled(CPU_BACKEND)
    with stage("prediction"):
        try:
            with stage("sass_plan"):
                shape = backend.kernel_shape(case, prepared) if model.rates is not None else None
        except Exception as exc:  # the model must never fail a case
            return not_modelled(f"the model failed: {_error_text(exc)}")
        return predict_call(case, traffic, shape, sass_timed(model), flushed=flushed,
                            timing=config, who=backend.name)


def sass_timed(model: DeviceContext) -> DeviceContext:
    """``model`` whose SASS refiner is charged to the ``sass_plan`` stage wherever it is
    called (the prediction, an auto backend's choice of kernel); ``model`` itself when it
    has no refiner or its refiner already is."""
    if model.refine is None or getattr(model.refine, "stage", None) == "sass_plan":
        return model
    return replace(model, refine=timed(model.refine, "sass_plan"))


def _declared_traffic(backend: Backend, case: OpCase, prepared: Any):
    try:
        return backend.traffic(case, prepared)
    except Exception:  # a declaration that fails must not fail the case: CSR's bytes stand in
        return case.csr_traffic


def _backend_notes(backend: Backend, prepared: object) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in backend.case_notes(prepared).items()}
    except Exception as exc:  # notes are optional; their failure must not fail the case
        return {"notes_error": _error_text(exc)}


def run_matrix(matrix: Matrix, backends: Sequence[str | BackendChoice], op: str,
               params_list: Sequence[Mapping[str, Any] | OpParams], *, config: TimingConfig,
               value_dtype: str = "float32", seed: int = 0, strict: bool = False,
               on_case: Callable[[CaseResult], None] | None = None,
               model: DeviceContext | None = None, ahead: bool = False) -> list[CaseResult]:
    """Every (parameters, backend) case of one matrix, parameters outermost (what ``run`` does
    per matrix; each backend's default index width). The op case (inputs and float64
    reference) is built once per parameter set and index width, not per backend. ``on_case``
    is called with each result as it finishes (progress lines). ``ahead``: every backend's
    host preparation starts in the background first (``Backend.prefetch_case``), for a GPU
    run whose host would otherwise pack while the GPU waits."""
    op_obj = get_op(op)
    choices = [b if isinstance(b, BackendChoice) else BackendChoice(b) for b in backends]
    results = []
    for params in params_list:
        built: dict[int, OpCase] = {}
        instances = [choice.create() for choice in choices]
        for backend in instances:
            index_bytes = backend.capability.index_bytes[0]
            if index_bytes not in built:
                with stage("reference"):
                    built[index_bytes] = _case_at_width(op_obj, matrix, params, built,
                                                        value_dtype=value_dtype,
                                                        index_bytes=index_bytes, seed=seed,
                                                        strict=strict)
        if ahead:
            for backend in instances:
                index_bytes = backend.capability.index_bytes[0]
                if not skip_reason(backend, built[index_bytes], value_dtype, index_bytes):
                    backend.prefetch_case(built[index_bytes], value_dtype, index_bytes)
        for choice, backend in zip(choices, instances, strict=True):
            index_bytes = backend.capability.index_bytes[0]
            backend.name = choice.result_name
            result = run_case(matrix, backend, op, config=config, value_dtype=value_dtype,
                              seed=seed, strict=strict, case=built[index_bytes], model=model)
            results.append(result)
            if on_case is not None:
                on_case(result)
    return results


def _case_at_width(op_obj, matrix: Matrix, params, built: dict[int, OpCase], *,
                   value_dtype: str, index_bytes: int, seed: int, strict: bool) -> OpCase:
    """The op case at ``index_bytes``: from a case already ``built`` at another width when
    the op can recount its byte models alone (``Op.at_index_width``: one float64 reference
    per matrix), else built."""
    for case in built.values():
        derived = op_obj.at_index_width(case, index_bytes, value_dtype)
        if derived is not None:
            return derived
    return op_obj.make_case(matrix.csr, params, value_dtype=value_dtype,
                            index_bytes=index_bytes, seed=seed, strict=strict)


EXIT_FAILED = 1
"""Exit code of a one-case program (an ncu target) whose case failed its check."""
EXIT_SKIPPED = 3
"""Exit code of a one-case program whose backend skipped the case."""


def report_case_exit(case: CaseResult, label: str) -> int:
    """Print ``label: outcome (reason)`` and return a one-case program's exit code: 0 for ok,
    :data:`EXIT_SKIPPED`, else :data:`EXIT_FAILED` (ncu reports a non-zero exit as "The
    application returned an error code")."""
    line = f"{label}: {case.outcome}"
    if case.reason:
        line += f" ({case.reason})"
    print(line, file=sys.stderr if case.outcome != "ok" else sys.stdout)
    return {"ok": 0, "skipped": EXIT_SKIPPED}.get(case.outcome, EXIT_FAILED)
