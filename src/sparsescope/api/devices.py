"""``sparsescope specs`` and ``sparsescope ceilings``: the GPU table and the present device's
measured ceilings, kept per device in the results store."""

from __future__ import annotations

from dataclasses import dataclass


def gpu_specs(name: str | None = None) -> list:
    """The spec table (``hardware.types.DeviceSpec``, every figure with its source): every GPU,
    or the one ``name`` names (an unknown name is an ``UnknownNameError``)."""
    from sparsescope.hardware.specs import get_spec, list_specs

    return [get_spec(name)] if name else list(list_specs())


@dataclass(frozen=True)
class CeilingsOutput:
    """What :func:`measure_ceilings` measured or found, and where it was kept."""

    ceilings: object
    """``hardware.types.MeasuredCeilings``."""
    kind: str
    """``gpu`` or ``cpu``."""
    driver: str = ""
    measured_utc: str | None = None
    stored: str | None = None
    """The store file the figures were appended to (or read from, CPU cache), else None."""
    cached: bool = False
    """CPU: read from this machine's cache, not measured now."""
    saved: bool = False
    """CPU: measured now and cached for this machine."""
    machine_key: str = ""
    store_error: str = ""
    """Why the store could not be used ("" when it could or none was asked for)."""


def measure_ceilings(*, store: bool = True, refresh: bool = False,
                     progress: bool = False) -> CeilingsOutput:
    """The present device's ceilings. A GPU: measured now, appended to the store's ``ceilings``
    table unless ``store`` is False (a store that cannot be written fails before measuring).
    Otherwise the CPU's, from this machine's cache in the store (measured, best of several
    trials, when none are cached, with ``refresh``, or without ``store``); a new measurement is
    one row of the history table too. ``progress``: a status line on stderr."""
    from datetime import UTC, datetime

    from sparsescope.hardware.detect import detect_gpu
    from sparsescope.progress import Status
    from sparsescope.results.ceilings_history import store_ceilings

    gpu = detect_gpu()
    if gpu is None:
        from sparsescope.results.ceilings_cache import lookup_cpu_ceilings

        with Status("measuring the CPU's ceilings (best of several trials, or the cache)",
                    progress):
            found = lookup_cpu_ceilings(refresh=refresh, use_store=store)
        ceilings = found.ceilings
        if found.saved:  # a new measurement: also one row of the history table
            store_ceilings(found.store, ceilings, "cpu",
                           measured_utc=ceilings.measured_utc or None)
        return CeilingsOutput(ceilings, "cpu", measured_utc=ceilings.measured_utc,
                              stored=found.store if found.saved or found.cached else None,
                              cached=found.cached, saved=found.saved,
                              machine_key=found.machine_key, store_error=found.store_error)
    from sparsescope.hardware.gpu_ceilings import measure_gpu_ceilings

    if store:  # before measuring: a store that cannot be written fails first
        from sparsescope._outputs import check_store

        check_store()
    from sparsescope.backends.library_probe import library_call_probes

    with Status("measuring the GPU's ceilings", progress):
        # a library call's fixed cost too: the backends' own calls, made here (hardware
        # imports no backend)
        ceilings = measure_gpu_ceilings(library_probes=library_call_probes())
    measured_utc = datetime.now(UTC).isoformat(timespec="seconds")
    stored = None
    if store:
        from sparsescope.results.store import ResultsStore

        stored = str(ResultsStore().path)
        store_ceilings(stored, ceilings, "gpu", measured_utc=measured_utc)
    return CeilingsOutput(ceilings, "gpu", driver=gpu.driver, measured_utc=measured_utc,
                          stored=stored)
