"""The host CPU's ceilings, measured once per machine and cached in the results store.

Measured on every run, the CPU's ceilings wandered (copy 16-24 GB/s, FP32 41-197 GFLOP/s
between identical runs on a shared machine), and with them every % of peak and the roofline.
So a run takes them from the ``ceilings_cache`` table of the results store
(:meth:`ResultsStore.load_ceilings`), keyed by
:func:`sparsescope.hardware.cpu_ceilings.machine_key` (protocol version, hostname, CPU model,
logical cores, RAM); the first run on a machine measures them
(:func:`sparsescope.hardware.cpu_ceilings.measure_cpu_ceilings`: best of 3 to 7 trials, with
their spread) and caches them. ``sparsescope ceilings --refresh`` measures them again and replaces
the cached figures. The cache never expires on its own: refresh after a hardware, BIOS or BLAS
change.

A store that cannot be opened or read (or a cached row that no longer decodes) never stops a
run: the ceilings are measured now and the run goes on; ``CeilingsLookup.store_error`` says why.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

from sparsescope.errors import SparsescopeError
from sparsescope.hardware import cpu_ceilings
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.results.store import ResultsStore

#: What can go wrong with the store; each is caught, and the ceilings are measured instead.
_STORE_ERRORS = (SparsescopeError, OSError, sqlite3.Error)


@dataclass(frozen=True)
class CeilingsLookup:
    """The CPU ceilings and where they came from."""

    ceilings: MeasuredCeilings
    cached: bool
    """True when read from the cache, False when measured by this call."""
    machine_key: str
    store: str | None
    """Path of the results store used for the cache; None when no store was used."""
    saved: bool = False
    """True when this call wrote the (freshly measured) ceilings to the cache."""
    store_error: str = ""
    """Why the store could not be read or written ("" when it could, or was not used)."""

    @property
    def measured_utc(self) -> str:
        return self.ceilings.measured_utc


def _as_store(store: ResultsStore | str | os.PathLike | None) -> ResultsStore:
    return store if isinstance(store, ResultsStore) else ResultsStore(store)


def lookup_cpu_ceilings(store: ResultsStore | str | os.PathLike | None = None, *,
                        refresh: bool = False, use_store: bool = True) -> CeilingsLookup:
    """This machine's CPU ceilings: cached ones from ``store`` unless ``refresh``, else measured
    now (and cached).

    ``store``: a :class:`ResultsStore` or its path; None: the default store
    (``$SPARSESCOPE_STORE``, else the user cache dir). ``use_store=False`` neither reads nor
    writes any store (measures every time). Store errors are caught (see the module docstring).
    """
    key = cpu_ceilings.machine_key()
    if not use_store:
        return CeilingsLookup(cpu_ceilings.measure_cpu_ceilings(), cached=False,
                              machine_key=key, store=None)
    results = _as_store(store)
    errors: list[str] = []
    if not refresh:
        try:
            cached = results.load_ceilings(key)
        except _STORE_ERRORS as exc:
            cached = None
            errors.append(f"reading the cached ceilings failed ({exc})")
        if cached is not None:
            return CeilingsLookup(cached, cached=True, machine_key=key, store=str(results.path))
    ceilings = cpu_ceilings.measure_cpu_ceilings()
    saved = False
    try:
        results.save_ceilings(key, ceilings)
        saved = True
    except _STORE_ERRORS as exc:
        errors.append(f"caching the measured ceilings failed ({exc})")
    return CeilingsLookup(ceilings, cached=False, machine_key=key, store=str(results.path),
                          saved=saved, store_error="; ".join(errors))


def cached_cpu_ceilings(store: ResultsStore | str | os.PathLike | None = None,
                        refresh: bool = False) -> MeasuredCeilings:
    """This machine's CPU ceilings, from the per-machine cache in the results store when they
    are there (no measuring), else measured now and cached; ``refresh=True`` always measures
    and replaces the cached figures. Never raises for a store problem (it measures instead).

    ``store``: a :class:`ResultsStore` or its path; None: the default store. See
    :func:`lookup_cpu_ceilings` for where the figures came from.
    """
    return lookup_cpu_ceilings(store, refresh=refresh).ceilings
