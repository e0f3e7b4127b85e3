"""The cross-GPU what-if: a kernel's predicted time on a GPU this machine need not have, for
every op (SpMV, SpMM; an op without a time model answers "not modelled" with the reason).

For each (matrix, parameters, backend) the op builds its case, the backend plans its call on
the host (:meth:`~sparsescope.backends.base.Backend.host_plan_case`: its format's bytes and its
kernel's shape for the GPU's SM count, nothing uploaded), and the one prediction entry point
(:func:`sparsescope.context.predict_plan`: the shape refined from the kernel's own SASS where a
CUDA compiler and cuobjdump are present, then the op's own ``predict``) predicts the time with
every term from the GPU's rates (:func:`sparsescope.context.named_gpu`: the latest ceilings
measured on that GPU in the results store, ``sparsescope ceilings`` on a machine that has one,
over its datasheet, ``sparsescope specs``).

A case is *not modelled*, with the reason, when the backend runs on the CPU (the model is the
GPU's), cannot plan without its device, declares no kernel shape for the matrix, or refuses the
value type or index width. The CLI (``sparsescope model MATRIX --backend B --gpu G``) is a thin
layer over :func:`what_if`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparsescope.context import DeviceContext, named_gpu, predict_plan, sass_status
from sparsescope.errors import UsageError

#: Value types the what-if plans for, with their bytes.
VALUE_DTYPES = {"float32": 4, "float64": 8}


@dataclass(frozen=True)
class WhatIfCase:
    """One (matrix, backend) prediction, or why there is none."""

    matrix: str
    backend: str
    gpu: str
    op: str = "spmv"
    params: dict = field(default_factory=dict)
    """The op's parameters of the case (e.g. ``{"k": 64, "layout": "row"}``)."""
    prediction: Any = None
    """``model.prediction.ModelPrediction``; None when not modelled."""
    not_modelled: str = ""
    kernel: str = ""
    """The kernel's name (a template instance of an own kernel, or the library's kernel)."""
    kernel_source: str = ""
    """Where the kernel's shape came from (its SASS, or the backend's declaration)."""
    index_bytes: int = 0
    value_dtype: str = "float32"
    plan_s: float = 0.0
    """Seconds the host plan took (format packing included)."""
    predict_s: float = 0.0
    """Seconds the op's prediction took."""
    extra_assumptions: tuple[str, ...] = ()

    @property
    def assumptions(self) -> tuple[str, ...]:
        own = self.prediction.assumptions if self.prediction is not None else ()
        return (*own, *self.extra_assumptions)

    def as_dict(self) -> dict:
        """The JSON record: matrix, backend, gpu, predicted_ms, limiter, terms, inputs,
        assumptions, not_modelled (and the kernel, index width, value type, timings)."""
        p = self.prediction
        return {
            "matrix": self.matrix, "backend": self.backend, "gpu": self.gpu,
            "op": self.op, "params": dict(self.params),
            "predicted_ms": p.predicted_ms if p is not None else None,
            "limiter": p.limiter if p is not None else "",
            "terms": [{"name": t.name, "time_ms": t.time_ms, "formula": t.formula}
                      for t in (p.terms if p is not None else ())],
            "inputs": dict(p.inputs) if p is not None else {},
            "assumptions": list(self.assumptions) if p is not None else [],
            "not_modelled": self.not_modelled,
            "kernel": self.kernel, "kernel_source": self.kernel_source,
            "index_bytes": self.index_bytes, "value_dtype": self.value_dtype,
            "plan_s": self.plan_s, "predict_s": self.predict_s,
        }


@dataclass(frozen=True)
class WhatIf:
    """Every case of a what-if and the GPU they were predicted for."""

    gpu: DeviceContext
    cases: tuple[WhatIfCase, ...] = field(default_factory=tuple)


def gpu_rates(gpu: str, *, use_store: bool = True, store_path=None,
              latency_ns: float | None = None, bw_gb_s: float | None = None,
              sass: bool = True) -> DeviceContext:
    """The context of GPU ``gpu`` (a name ``sparsescope specs`` knows):
    :func:`sparsescope.context.named_gpu`."""
    return named_gpu(gpu, use_store=use_store, store_path=store_path, latency_ns=latency_ns,
                     bw_gb_s=bw_gb_s, sass=sass)


def expand_backends(names: Sequence[str], op: str = "spmv") -> list[str]:
    """The backends named, ``all`` standing for every GPU backend of ``op``; a name of another
    op's backend is a :class:`UsageError`, an unknown name an ``UnknownNameError``."""
    from sparsescope import registry
    from sparsescope.backends.registry import device_backends

    chosen: list[str] = []
    for name in names:
        if name == "all":
            found = device_backends("gpu", op)
        else:
            if registry.backend_op(name) != op:
                raise UsageError(f"backend {name!r} implements op {registry.backend_op(name)!r},"
                                 f" not {op!r}: {', '.join(registry.backend_names(op))}")
            found = [name]
        chosen += [n for n in found if n not in chosen]
    if not chosen:
        raise UsageError("no backend to model")
    return chosen


def _checked_dtype(value_dtype: str) -> None:
    if value_dtype not in VALUE_DTYPES:
        raise UsageError(f"value dtype must be one of {', '.join(VALUE_DTYPES)}, got "
                         f"{value_dtype!r}")


def predict_case(matrix_name: str, csr, backend_name: str | Any, gpu: DeviceContext, *,
                 value_dtype: str = "float32", label: str = "", op: str = "spmv",
                 params: Any = None, case: Any = None, timing: Any = None) -> WhatIfCase:
    """Plan the call of ``backend_name`` (a registered name, or a backend instance with its
    own parameters, recorded as ``label``) on ``csr`` (canonical float64 CSR) for ``op`` with
    ``params`` on the host and predict its time on ``gpu`` (a ``DeviceContext``); never raises
    for a case the model cannot take (its reason instead). ``case``: the op's case of ``csr``
    already built at the backend's index width (the what-if builds it once per width).
    ``timing``: the ``TimingConfig`` whose mode the call is predicted in (None: latency); the
    backend is told it first (``Backend.use_timing``), so an auto backend chooses in it."""
    from sparsescope.backends.registry import get_backend
    from sparsescope.ops.registry import get_op

    _checked_dtype(value_dtype)
    if isinstance(backend_name, str):
        backend = get_backend(backend_name)
    else:
        backend, backend_name = backend_name, label or backend_name.name
    index_bytes = int(backend.capability.index_bytes[0])
    if case is None:
        case = get_op(op).make_case(csr, params, value_dtype=value_dtype,
                                    index_bytes=index_bytes)
    if timing is not None:
        from sparsescope.backends.base import tell_timing

        tell_timing(backend, timing)
    plan = predict_plan(case, backend, gpu, name=backend_name, value_dtype=value_dtype,
                        index_bytes=index_bytes, timing=timing)
    return WhatIfCase(matrix=matrix_name, backend=backend_name, gpu=gpu.name, op=case.op,
                      params=case.params.as_dict(), prediction=plan.prediction,
                      not_modelled=plan.not_modelled, kernel=plan.kernel,
                      kernel_source=plan.kernel_source, index_bytes=index_bytes,
                      value_dtype=value_dtype, plan_s=plan.plan_s, predict_s=plan.predict_s,
                      extra_assumptions=plan.assumptions)


def load_matrices(files: Sequence[str] = (), suite: str | None = None, *, scale: float = 1.0,
                  names: Sequence[str] = (), seed: int = 0):
    """(count, iterator of Matrix): the files (read with the project's readers; a missing or
    bad file raises its error naming the file) or the entries of ``suite`` (only those named
    in ``names`` when given), generated one at a time."""
    from sparsescope import matrices
    from sparsescope.matrices.suites import build_entry, find_entry

    if files and suite:
        raise UsageError("give matrix files or --suite, not both")
    if files:
        if names:
            raise UsageError("--matrix picks entries of a --suite; give files as arguments")
        return len(files), (matrices.read_matrix(f) for f in files)
    if not suite:
        raise UsageError("give a matrix file or --suite")
    if names:
        entries = [find_entry(suite, n, scale) for n in dict.fromkeys(names)]
    else:
        entries = matrices.suite_entries(suite, scale=scale)
    return len(entries), (build_entry(e, seed) for e in entries)


def what_if(matrix_list: Iterable, backends: Sequence[str], gpu: str | DeviceContext, *,
            value_dtype: str = "float32", use_store: bool = True, sass: bool = True,
            op: str = "spmv", op_params: dict[str, Sequence] | None = None,
            on_case: Callable[[WhatIfCase], None] | None = None,
            timing: Any = None) -> WhatIf:
    """Predict every backend of ``op`` on every matrix (``matrices.Matrix`` records, loaded
    lazily) for every parameter set of ``op_params`` (as ``sparsescope run`` expands them) on
    GPU ``gpu`` (a name, or the :class:`~sparsescope.context.DeviceContext` of
    :func:`gpu_rates`). ``backends`` may say ``all``; ``on_case`` is called with each case as
    it is predicted (progress); ``timing``: the ``TimingConfig`` whose mode every case is
    predicted in (None: latency)."""
    from sparsescope.backends.registry import get_backend
    from sparsescope.context.predict import plan_case
    from sparsescope.ops.registry import params_for

    names = expand_backends(backends, op)
    _checked_dtype(value_dtype)
    params_list = params_for(op, op_params)
    device = gpu if isinstance(gpu, DeviceContext) else gpu_rates(gpu, use_store=use_store,
                                                                    sass=sass)
    if not sass and device.refine is not None:
        device = device.without_sass(sass_status(device.spec, False)[1])
    widths = {name: int(get_backend(name).capability.index_bytes[0]) for name in names}
    cases: list[WhatIfCase] = []
    for matrix in matrix_list:
        csr = matrix.csr  # the op's case holds it canonical
        for params in params_list:
            built: dict[int, Any] = {}
            for name in names:
                width = widths[name]
                if width not in built:  # no input vector or reference: nothing runs
                    built[width] = plan_case(op, csr, params, value_dtype=value_dtype,
                                             index_bytes=width)
                case = predict_case(matrix.name, csr, name, device, value_dtype=value_dtype,
                                    case=built[width], timing=timing)
                cases.append(case)
                if on_case is not None:
                    on_case(case)
    return WhatIf(gpu=device, cases=tuple(cases))
