"""One record of the device a case is predicted for, built in one place.

Three ways to build it, each once per run, sweep worker, what-if or auto choice:

- :func:`present_device`: the device that will run the backends (a GPU's spec with the L2 it
  reports, ceilings measured on it now, its driver; else the host CPU with its ceilings, cached
  per machine in the store, not modelled);
- :func:`present_gpu_stored`: the present GPU with its latest stored ceilings over its
  datasheet (an auto backend used outside a run);
- :func:`named_gpu`: a GPU this machine need not have, by name (the what-if): its latest stored
  ceilings over its datasheet, or the datasheet alone.

Every GPU context carries the time model's rates (``model.predict.device_rates``: measured
ceilings over the datasheet), the SASS refiner (kernel shape -> the shape read from the
compiled kernel) or why the declared shapes stand, and where the rates came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

#: Why a CPU run has no prediction (the time model is the GPU's).
CPU_RUN = "the run is on a CPU: the time model is the GPU's"
#: Why a CPU backend's case has no prediction.
CPU_BACKEND = "a CPU backend: the time model is the GPU's"


@dataclass(frozen=True)
class DeviceContext:
    """The device the time model predicts for, or why its cases are not modelled."""

    spec: Any = None
    """``hardware.types.DeviceSpec``; None when only rates were given (a test, a script)."""
    ceilings: Any = None
    """``hardware.types.MeasuredCeilings`` the rates were built from (measured now or stored);
    None for the datasheet alone."""
    driver: str = ""
    """The driver version of the present device ("" for a named GPU or a CPU)."""
    detected: str = ""
    """The name the driver reports for the present GPU ("" for a named GPU or a CPU)."""
    rates: Any = None
    """``model.predict.DeviceRates``; None when the device has no time model."""
    refine: Callable[[Any], Any] | None = None
    """Kernel shape -> the same shape with figures read from its kernel's SASS for this
    device's architecture; None: the backends' declared shapes stand (:attr:`refine_reason`)."""
    origin: str = ""
    """Where the rates came from: ``rates: measured on <device> at <utc> ...``, ``rates: the
    run's measured ceilings ...`` or ``rates: datasheet of <gpu> (...)``."""
    reason: str = ""
    """Why there is no model for this device (e.g. a CPU), shown as "not modelled"."""
    refine_reason: str = ""
    """Why :attr:`refine` is None (no compiler or cuobjdump here, ``--no-sass``); "" when it
    is set or nothing was asked of it."""
    measured_device: str = ""
    """The driver name of the device whose stored ceilings the rates use ("" otherwise)."""
    measured_utc: str = ""

    @property
    def modelled(self) -> bool:
        """Whether cases on this device get a prediction."""
        return self.rates is not None

    @property
    def kind(self) -> str:
        """``gpu`` or ``cpu`` (the spec's kind; ``gpu`` for rates without a spec)."""
        if self.spec is not None:
            return self.spec.kind
        return "gpu" if self.rates is not None else "cpu"

    @property
    def name(self) -> str:
        """The device's name in the rates (the spec's where there are none)."""
        if self.rates is not None:
            return self.rates.name
        return self.spec.name if self.spec is not None else ""

    @property
    def device_name(self) -> str:
        """The name results record the device by: the driver's name of the measured device,
        else the spec's vendor name."""
        if self.ceilings is not None and self.ceilings.device:
            return self.ceilings.device
        return self.spec.vendor_name if self.spec is not None else ""

    def without_sass(self, why: str) -> DeviceContext:
        """The same context predicting from the backends' declared shapes."""
        return replace(self, refine=None, refine_reason=why)


def not_modelled_context(reason: str) -> DeviceContext:
    """A context whose cases are "not modelled" with ``reason``."""
    return DeviceContext(reason=reason)


def rates_context(rates: Any, *, refine: Callable | None = None, origin: str = "",
                  spec: Any = None) -> DeviceContext:
    """A context of given rates (a test, a script scoring stored runs, a chooser handed the
    run's rates)."""
    return DeviceContext(spec=spec, rates=rates, refine=refine, origin=origin)


def sass_refiner(spec) -> Callable[[Any], Any]:
    """Kernel shape -> the shape with its own kernel's SASS figures for ``spec``'s
    architecture (the declared shape where no compiler or disassembler is present)."""
    from sparsescope.sass.kernel_shape import refine

    arch = "sm_" + spec.compute_capability.replace(".", "")
    return lambda shape: refine(shape, shape.cuda_source, arch)


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
    return sass_refiner(spec), ""


def _gpu_context(spec, ceilings, *, driver: str = "", origin: str, sass: bool = True,
                 measured_device: str = "", measured_utc: str = "",
                 check_tools: bool = True) -> DeviceContext:
    """A GPU's context: rates from ``ceilings`` over the datasheet, its SASS refiner."""
    from sparsescope.model.predict import device_rates

    if check_tools:
        refine, why = sass_status(spec, sass)
    else:  # the device runs kernels: NVRTC is there, and refine falls back by itself
        refine, why = sass_refiner(spec), ""
    return DeviceContext(spec=spec, ceilings=ceilings, driver=driver,
                         rates=device_rates(spec, ceilings), refine=refine, origin=origin,
                         refine_reason=why, measured_device=measured_device,
                         measured_utc=measured_utc)


def cpu_context(*, store: bool = True, ceilings: Any = None) -> DeviceContext:
    """The host CPU: its spec and ceilings (best of several trials, cached per machine in the
    store; measured afresh when ``store`` is False; ``ceilings`` given: these, measured on
    this machine by another process of the same sweep), not modelled."""
    from sparsescope.hardware import detect
    from sparsescope.results.ceilings_cache import lookup_cpu_ceilings

    if ceilings is None:
        ceilings = lookup_cpu_ceilings(use_store=store).ceilings
    return DeviceContext(spec=detect.cpu_spec(ceilings), ceilings=ceilings, reason=CPU_RUN)


def present_device(kind: str = "gpu", *, store: bool = True,
                   library_probes: Any = None, ceilings: Any = None) -> DeviceContext:
    """The device that will run backends of ``kind`` (``gpu`` or ``cpu``).

    ``gpu`` on a machine with a GPU: the spec table's entry for the detected GPU (or a spec
    built from the device query) with the L2 the device reports, ceilings measured on it now,
    the driver version, the rates and the SASS refiner. When the ceilings cannot be measured
    (no CuPy) the context goes on with an empty ceilings record whose ``method`` says why.
    Otherwise the host CPU (:func:`cpu_context`; GPU backends then skip as unavailable).
    ``library_probes``: library route -> probe of its call, whose fixed cost the ceilings
    measure too (``hardware.gpu_ceilings.library_call_costs``; made by
    ``backends.library_probe``, which this stage cannot import). ``ceilings``: the device's
    ceilings as another process measured them on an identical device (a sweep's workers share
    one measurement per GPU model and driver, ``sweep.first_use``): used, not measured again.
    """
    from sparsescope.errors import SparsescopeError
    from sparsescope.hardware import detect
    from sparsescope.hardware.types import MeasuredCeilings

    gpu = detect.detect_gpu() if kind == "gpu" else None
    if gpu is None:
        return cpu_context(store=store, ceilings=ceilings)
    from sparsescope.hardware.gpu_ceilings import measure_gpu_ceilings

    spec = _reported_l2(detect.spec_for_detected(gpu), gpu)
    try:
        if ceilings is None:
            ceilings = (measure_gpu_ceilings(library_probes=library_probes) if library_probes
                        else measure_gpu_ceilings())
    except SparsescopeError as exc:
        ceilings = MeasuredCeilings(device=gpu.name, method={"not_measured": str(exc)})
    return replace(_gpu_context(spec, ceilings, driver=gpu.driver, check_tools=False,
                                origin="rates: the run's measured ceilings over the datasheet"),
                   detected=gpu.name)


def _reported_l2(spec, gpu):
    """``spec`` with the L2 the device reports (the model and the flush decision use it)."""
    if not gpu.l2_bytes or gpu.l2_bytes == spec.l2_bytes:
        return spec
    return replace(spec, l2_bytes=gpu.l2_bytes, sources={
        **spec.sources, "l2_bytes": f"queried from the device ({gpu.library}); "
                                    f"the table says {spec.l2_bytes:,} B"})


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


def _stored_context(spec, *, use_store: bool = True, store_path=None, sass: bool = True,
                    driver: str = "") -> DeviceContext:
    """``spec``'s latest stored ceilings over its datasheet, or the datasheet alone."""
    found = stored_gpu_ceilings(spec, store_path) if use_store else None
    if found is not None:
        ceilings, device, utc = found
        return _gpu_context(spec, ceilings, driver=driver, sass=sass, measured_device=device,
                            measured_utc=utc, origin=f"rates: measured on {device} at {utc} "
                                                     "(datasheet where not measured)")
    why = "--no-store" if not use_store else "no measured ceilings"
    return _gpu_context(spec, None, driver=driver, sass=sass,
                        origin=f"rates: datasheet of {spec.name} ({why}; L2 and gather rates "
                               "unknown)")


def present_gpu(ceilings: str = "stored") -> DeviceContext | None:
    """The present GPU (its spec with the L2 it reports, its driver), None without one; its
    rates from ``ceilings``: ``stored`` (its latest stored ceilings over its datasheet),
    ``measured`` (measured now, as :func:`present_device`) or ``none`` (the datasheet alone,
    no store read: the analysis of a workload)."""
    from sparsescope.errors import UsageError
    from sparsescope.hardware.detect import detect_gpu, spec_for_detected

    if ceilings not in ("stored", "measured", "none"):
        raise UsageError(f"ceilings must be stored, measured or none, got {ceilings!r}")
    if ceilings == "measured":
        found = present_device("gpu", store=False)
        return found if found.kind == "gpu" else None
    gpu = detect_gpu()
    if gpu is None:
        return None
    spec = _reported_l2(spec_for_detected(gpu), gpu)
    if ceilings == "stored":
        context = _stored_context(spec, driver=gpu.driver)
    else:
        context = _gpu_context(spec, None, driver=gpu.driver, check_tools=False,
                               origin=f"rates: datasheet of {spec.name} (not measured)")
    return replace(context, detected=gpu.name)


def present_gpu_stored() -> DeviceContext | None:
    """The present GPU with its latest stored ceilings over its datasheet (what an auto
    backend predicts with outside a run); None without a GPU."""
    return present_gpu("stored")


def named_gpu(gpu: str, *, use_store: bool = True, store_path=None,
              latency_ns: float | None = None, bw_gb_s: float | None = None,
              sass: bool = True) -> DeviceContext:
    """GPU ``gpu`` (a name ``sparsescope specs`` knows): its latest stored ceilings over the
    datasheet, or the datasheet alone (``use_store`` False or none stored). ``latency_ns`` /
    ``bw_gb_s`` replace the DRAM latency / bandwidth (a what-if of its own); ``sass`` False:
    the backends' declared kernel shapes, not their SASS."""
    from sparsescope.hardware.specs import get_spec

    context = _stored_context(get_spec(gpu), use_store=use_store, store_path=store_path,
                              sass=sass)
    rates, sources = context.rates, dict(context.rates.sources)
    if latency_ns is not None:
        rates = replace(rates, dram_latency_ns=float(latency_ns))
        sources["dram_latency"] = f"given (--latency-ns {latency_ns:g})"
    if bw_gb_s is not None:
        rates = replace(rates, dram_bw_gb_s=float(bw_gb_s))
        sources["dram_bw"] = f"given (--bw-gb-s {bw_gb_s:g})"
    return replace(context, rates=replace(rates, sources=sources))
