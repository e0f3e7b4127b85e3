"""The cross-GPU what-if: an SpMV kernel's predicted time on a GPU this machine need not have.

For each (matrix, backend) the backend plans its call on the host
(:meth:`~sparsescope.backends.base.SpmvBackend.host_plan`: its format's bytes and its kernel's
shape for the GPU's SM count, nothing uploaded), the shape is refined from the kernel's own SASS
where a CUDA compiler and cuobjdump are present (:func:`sparsescope.api.sass_refiner`), and
:func:`sparsescope.model.predict.predict_spmv` predicts the time with every term from the GPU's
rates: the latest ceilings measured on that GPU in the results store (``sparsescope ceilings``
on a machine that has one) over its datasheet (``sparsescope specs``).

A case is *not modelled*, with the reason, when the backend runs on the CPU (the model is the
GPU's), cannot plan without its device, declares no kernel shape for the matrix, or refuses the
value type or index width. The CLI (``sparsescope model MATRIX --backend B --gpu G``) is a thin
layer over :func:`what_if`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sparsescope.errors import UsageError

#: Value types the what-if plans for, with their bytes.
VALUE_DTYPES = {"float32": 4, "float64": 8}
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class GpuRates:
    """The GPU a what-if predicts for: its spec, its rates and where they came from."""

    spec: Any
    """``hardware.types.DeviceSpec``."""
    rates: Any
    """``model.predict.DeviceRates``."""
    origin: str
    """``rates: measured on <device> at <utc>`` or ``rates: datasheet of <gpu> (...)``."""
    measured_device: str = ""
    """The driver name of the device whose stored ceilings were used ("" for the datasheet)."""
    measured_utc: str = ""


@dataclass(frozen=True)
class WhatIfCase:
    """One (matrix, backend) prediction, or why there is none."""

    matrix: str
    backend: str
    gpu: str
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
    """Seconds :func:`predict_spmv` took."""
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

    gpu: GpuRates
    cases: tuple[WhatIfCase, ...] = field(default_factory=tuple)


def stored_gpu_ceilings(spec, store_path=None):
    """(ceilings, driver name, measured UTC) of the latest ceilings stored for the GPU ``spec``
    names (any driver name that resolves to it), or None; read only."""
    from sparsescope.hardware.specs import match_device_name
    from sparsescope.results.ceilings_history import latest_matching
    from sparsescope.results.store import default_store_path

    def same_gpu(device: str) -> bool:
        found = match_device_name(device)
        return found is not None and found.name == spec.name

    path = store_path if store_path is not None else default_store_path()
    return latest_matching(path, "gpu", same_gpu)


def gpu_rates(gpu: str, *, use_store: bool = True, store_path=None,
              latency_ns: float | None = None, bw_gb_s: float | None = None) -> GpuRates:
    """The rates of GPU ``gpu`` (a name ``sparsescope specs`` knows): its latest stored
    ceilings over the datasheet, or the datasheet alone (``use_store`` False or none stored).
    ``latency_ns`` / ``bw_gb_s`` replace the DRAM latency / bandwidth (a what-if of its own)."""
    from sparsescope.hardware.specs import get_spec
    from sparsescope.model.predict import device_rates

    spec = get_spec(gpu)
    found = stored_gpu_ceilings(spec, store_path) if use_store else None
    if found is not None:
        ceilings, device, utc = found
        rates = device_rates(spec, ceilings)
        origin = f"rates: measured on {device} at {utc} (datasheet where not measured)"
    else:
        rates = device_rates(spec, None)
        why = "--no-store" if not use_store else "no measured ceilings"
        origin = (f"rates: datasheet of {spec.name} ({why}; L2 and gather rates unknown)")
        device = utc = ""
    sources = dict(rates.sources)
    if latency_ns is not None:
        rates = replace(rates, dram_latency_ns=float(latency_ns))
        sources["dram_latency"] = f"given (--latency-ns {latency_ns:g})"
    if bw_gb_s is not None:
        rates = replace(rates, dram_bw_gb_s=float(bw_gb_s))
        sources["dram_bw"] = f"given (--bw-gb-s {bw_gb_s:g})"
    rates = replace(rates, sources=sources)
    return GpuRates(spec=spec, rates=rates, origin=origin, measured_device=device,
                    measured_utc=utc)


def expand_backends(names: Sequence[str]) -> list[str]:
    """The backends named, ``all`` standing for every SpMV backend of a GPU; a name of another
    op's backend is a :class:`UsageError`, an unknown name an ``UnknownNameError``."""
    from sparsescope import registry
    from sparsescope.backends.base import SpmvBackend
    from sparsescope.backends.registry import device_backends, get_backend

    chosen: list[str] = []
    for name in names:
        if name == "all":
            found = device_backends("gpu", "spmv")
        else:
            # the what-if plans a call on the host: an SpMV-contract backend's host_plan
            if not isinstance(get_backend(name), SpmvBackend):
                raise UsageError(f"backend {name!r} implements op {registry.backend_op(name)!r};"
                                 f" the what-if models SpMV: "
                                 f"{', '.join(registry.backend_names('spmv'))}")
            found = [name]
        chosen += [n for n in found if n not in chosen]
    if not chosen:
        raise UsageError("no backend to model")
    return chosen


def sass_status(spec, sass: bool = True) -> tuple[Callable | None, str]:
    """(refiner or None, why the declared shapes stand when None)."""
    if not sass:
        return None, "kernel shape declared by the backend, not read from its SASS (--no-sass)"
    try:
        from sparsescope.sass.kernel_shape import sass_tools_available
    except ImportError as exc:  # pragma: no cover - the package ships sass
        return None, f"kernel shape declared by the backend: no SASS reader ({exc})"
    if not sass_tools_available():
        return None, ("kernel shape declared by the backend: no CUDA compiler (NVRTC or nvcc) "
                      "and cuobjdump here to read its SASS")
    from sparsescope.api import sass_refiner

    return sass_refiner(spec), ""


def _refined(shape, refine: Callable | None, no_refine_reason: str):
    """(the shape with its SASS figures where they can be read, what the assumptions say)."""
    if not shape.cuda_source:
        return shape, []
    if refine is None:
        return shape, [no_refine_reason] if no_refine_reason else []
    refined = refine(shape)
    if refined.source == shape.source:
        return refined, [f"kernel shape declared by the backend: no SASS of {shape.kernel}"]
    return refined, []


def _refusal(backend, name: str, csr, value_dtype: str, index_bytes: int) -> str:
    """Why the model cannot take this backend on this matrix, or ""."""
    cap = backend.capability
    if cap.device != "gpu":
        return f"{name} is a CPU backend: the time model is the GPU's"
    refused = cap.unsupported_reason("spmv", value_dtype, index_bytes)
    if not refused and index_bytes == 4 and max(csr.nnz, *csr.shape) > _INT32_MAX:
        refused = "32-bit indices cannot address this matrix"
    return f"{name}: {refused}" if refused else ""


def predict_case(matrix_name: str, csr, backend_name: str | Any, gpu: GpuRates, *,
                 value_dtype: str = "float32", refine: Callable | None = None,
                 no_refine_reason: str = "", label: str = "") -> WhatIfCase:
    """Plan the call of ``backend_name`` (a registered name, or a backend instance with its
    own parameters, recorded as ``label``) on ``csr`` (canonical float64 CSR) on the host and
    predict its time on ``gpu``; never raises for a case the model cannot take (its reason
    instead)."""
    from sparsescope.backends.registry import get_backend
    from sparsescope.model.predict import predict_spmv
    from sparsescope.timing.host import should_flush
    from sparsescope.timing.types import TimingConfig

    if value_dtype not in VALUE_DTYPES:
        raise UsageError(f"value dtype must be one of {', '.join(VALUE_DTYPES)}, got "
                         f"{value_dtype!r}")
    if isinstance(backend_name, str):
        backend = get_backend(backend_name)
    else:
        backend, backend_name = backend_name, label or backend_name.name
    base = {"matrix": matrix_name, "backend": backend_name, "gpu": gpu.rates.name,
            "value_dtype": value_dtype}
    base["index_bytes"] = index_bytes = int(backend.capability.index_bytes[0])
    refused = _refusal(backend, backend_name, csr, value_dtype, index_bytes)
    if refused:
        return WhatIfCase(**base, not_modelled=refused)
    from sparsescope.backends.runner import ModelDevice

    backend.use_model(ModelDevice(rates=gpu.rates, refine=refine))  # a chooser predicts on gpu
    start = time.perf_counter()
    try:
        traffic, shape = backend.host_plan(csr, value_dtype, index_bytes, gpu.rates.sm_count)
    except Exception as exc:  # a plan that fails is this case's reason, not the run's end
        return WhatIfCase(**base, not_modelled=f"{backend_name} could not plan the call: "
                                               f"{type(exc).__name__}: {exc}")
    plan_s = time.perf_counter() - start
    if traffic is None and shape is None:
        return WhatIfCase(**base, plan_s=plan_s,
                          not_modelled=f"{backend_name} cannot plan without its device")
    if traffic is None or shape is None:
        missing = "traffic" if traffic is None else "kernel shape"
        return WhatIfCase(**base, plan_s=plan_s,
                          not_modelled=f"{backend_name} declares no {missing} for this matrix "
                                       f"({csr.shape[0]:,} x {csr.shape[1]:,}, "
                                       f"{csr.nnz:,} nonzeros)")
    shape, extra = _refined(shape, refine, no_refine_reason)
    if shape.resident_blocks_per_sm <= 0 and shape.registers > 0:
        extra.append(f"resident blocks per SM: from the SASS's {shape.registers} registers a "
                     f"thread and {shape.shared_bytes:,} B of shared memory a block")
    elif shape.resident_blocks_per_sm <= 0:
        extra.append("resident blocks per SM: the thread and block limits of the SM (the "
                     "compiled kernel's registers and shared memory are not known on the host)")
    working_set = int(traffic.total_bytes)
    flushed = should_flush(TimingConfig(), working_set, gpu.rates.l2_bytes)
    if not flushed:
        extra.append(f"L2 not flushed: the working set ({working_set:,} B) exceeds the L2 "
                     f"({gpu.rates.l2_bytes:,} B), as the timing protocol decides")
    start = time.perf_counter()
    try:
        prediction = predict_spmv(csr.indptr, csr.indices, int(csr.shape[1]), traffic, shape,
                                  gpu.rates, flushed=flushed,
                                  value_bytes=VALUE_DTYPES[value_dtype])
    except Exception as exc:  # the model must not end the what-if over one case
        return WhatIfCase(**base, plan_s=plan_s, kernel=shape.kernel,
                          kernel_source=shape.source,
                          not_modelled=f"the model failed: {type(exc).__name__}: {exc}")
    predict_s = time.perf_counter() - start
    return WhatIfCase(**base, prediction=prediction, kernel=shape.kernel,
                      kernel_source=shape.source, plan_s=plan_s, predict_s=predict_s,
                      extra_assumptions=(gpu.origin, *extra))


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


def what_if(matrix_list: Iterable, backends: Sequence[str], gpu: str | GpuRates, *,
            value_dtype: str = "float32", use_store: bool = True, sass: bool = True,
            on_case: Callable[[WhatIfCase], None] | None = None) -> WhatIf:
    """Predict every backend on every matrix (``matrices.Matrix`` records, loaded lazily) on
    GPU ``gpu`` (a name, or the :class:`GpuRates` of :func:`gpu_rates`). ``backends`` may say
    ``all``; ``on_case`` is called with each case as it is predicted (progress)."""
    from sparsescope.ops.base import canonical_csr

    names = expand_backends(backends)
    if value_dtype not in VALUE_DTYPES:
        raise UsageError(f"value dtype must be one of {', '.join(VALUE_DTYPES)}, got "
                         f"{value_dtype!r}")
    rates = gpu if isinstance(gpu, GpuRates) else gpu_rates(gpu, use_store=use_store)
    refine, why = sass_status(rates.spec, sass)
    cases: list[WhatIfCase] = []
    for matrix in matrix_list:
        csr = canonical_csr(matrix.csr)
        for name in names:
            case = predict_case(matrix.name, csr, name, rates, value_dtype=value_dtype,
                                refine=refine, no_refine_reason=why)
            cases.append(case)
            if on_case is not None:
                on_case(case)
    return WhatIf(gpu=rates, cases=tuple(cases))
