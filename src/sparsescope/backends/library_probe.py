"""The tiny cuSPARSE calls ``sparsescope ceilings`` times for a library call's fixed cost
(``hardware.gpu_ceilings.library_call_costs``; ``MeasuredCeilings.library_call_us``).

Each library route's own SpMV backend -- the planned ``nvmath-cusparse-i32`` and the wrappers
``cupy-cusparse-i32`` and ``torch-cusparse-i32`` -- prepared once on :func:`probe_matrix` (32 x
32, two nonzeros a row: 64), its output checked against float64, then timed by the backend's
own ``time`` with the configuration the ceilings ask for. The call's kernels do almost nothing
on so small a matrix: what the protocol measures is what any call of that route costs beyond
its work. ``hardware`` imports no backend, so the probes are made here and handed to it
(``api.devices.measure_ceilings``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from sparsescope.timing.types import Measurement, TimingConfig

#: Library route -> the SpMV backend whose call is its probe (``KernelShape.library``).
LIBRARY_PROBES = {"nvmath": "nvmath-cusparse-i32", "cupy": "cupy-cusparse-i32",
                  "torch": "torch-cusparse-i32"}
#: SpMV backend -> the library route whose fixed cost its predictions carry (its kernel
#: shape's ``library``): what a run measures for the backends it runs (:func:`routes_for`).
ROUTE_OF_BACKEND = {"nvmath-cusparse-i32": "nvmath", "cupy-cusparse-i32": "cupy",
                    "torch-cusparse-i32": "torch", "torch-cusparse-i64": "torch"}
PROBE_ROWS = 32
PROBE_NNZ_PER_ROW = 2
PROBE_DTYPE = "float32"


def probe_matrix() -> sp.csr_matrix:
    """32 x 32, row i holding columns i and (i + 7) mod 32 with values 1 + i / 32: every row
    and column used, nothing random, canonical."""
    rows = np.repeat(np.arange(PROBE_ROWS), PROBE_NNZ_PER_ROW)
    cols = np.stack([np.arange(PROBE_ROWS), (np.arange(PROBE_ROWS) + 7) % PROBE_ROWS], axis=1)
    data = 1.0 + rows / PROBE_ROWS
    csr = sp.csr_matrix((data, (rows, cols.ravel())), shape=(PROBE_ROWS, PROBE_ROWS))
    csr.sum_duplicates()
    csr.sort_indices()
    return csr


class ProbeUnavailable(RuntimeError):
    """The route cannot run here (its library is not installed, no GPU)."""


def backend_probe(backend) -> Callable[[TimingConfig], Measurement]:
    """``probe(config)``: ``backend``'s call of :func:`probe_matrix` timed with ``config``
    (prepared and checked against float64 on the first call, reused after). Raises
    :class:`ProbeUnavailable` when the backend cannot run here, ``AssertionError`` when its
    output is wrong."""
    state: dict = {}

    def probe(config: TimingConfig) -> Measurement:
        if "prepared" not in state:
            ok, why = backend.availability()
            if not ok:
                raise ProbeUnavailable(why)
            csr = probe_matrix()
            x = np.linspace(-1.0, 1.0, csr.shape[1]).astype(PROBE_DTYPE)
            prepared = backend.prepare(csr, PROBE_DTYPE, 4)
            y = backend.run(prepared, x)
            want = csr @ x.astype(np.float64)
            if not np.allclose(y, want, rtol=1e-5, atol=1e-6):
                raise AssertionError(f"{backend.name} got the probe matrix's product wrong")
            state["prepared"], state["x"] = prepared, x
        return backend.time(state["prepared"], state["x"], config)

    probe.describes = f"{backend.name} on a {PROBE_ROWS} x {PROBE_ROWS} matrix of " \
                      f"{PROBE_ROWS * PROBE_NNZ_PER_ROW} nonzeros, {PROBE_DTYPE}"
    return probe


def library_call_probes(routes: dict[str, str] | None = None
                        ) -> dict[str, Callable[[TimingConfig], Measurement]]:
    """Library route -> its probe (:func:`backend_probe`), for every route of ``routes``
    (default :data:`LIBRARY_PROBES`); a route whose backend cannot run here raises
    :class:`ProbeUnavailable` when called, and the ceilings say so."""
    from sparsescope.backends.registry import get_backend

    return {library: backend_probe(get_backend(name))
            for library, name in (routes or LIBRARY_PROBES).items()}


def routes_for(backends) -> dict[str, str]:
    """The routes of :data:`LIBRARY_PROBES` that ``backends`` (registry names or variant labels
    ``name[...]``) call through, so that a run measures the fixed cost of the libraries it
    predicts and no other: ``["cupy-cusparse-i32", "nvmath-cusparse-i32[alg=2]",
    "cuda-csr-vector"]`` -> cupy and nvmath."""
    wanted = {ROUTE_OF_BACKEND.get(str(getattr(b, "name", b)).split("[", 1)[0])
              for b in backends}
    return {route: name for route, name in LIBRARY_PROBES.items() if route in wanted}
