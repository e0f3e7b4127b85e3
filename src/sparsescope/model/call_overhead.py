"""The fixed cost of a timed call: what the timing protocol measures around a call's kernels
beyond their own work, from the device's measured ceilings (``hardware.gpu_ceilings``).

Our own kernels, timed alone (the latency mode)::

    overhead = call_us + (launches - 1) x next_launch_us     (measured through the protocol)
             = launches x launch_us                          (ceilings without them: the best
                                                              empty launch behind busy work)
             = 0                                             (nothing measured)

``call_us`` is the protocol's median for a call of one empty kernel with the L2 flushed first,
``next_launch_us`` what a second launch in the same call adds. A further launch costs less than
the first: it is queued while the one before still runs. On an H200 (2026-11-25) a call costs
3.7 us and a further launch 1.5 us, against 2.7 us for the best empty launch: the older
``launches x launch_us`` under-charged one-launch calls by 1 us and over-charged two-launch
calls (``results/h200/kernels/followups/2026-11-25-call-overhead-probe``).

A library's call (``KernelShape.library``: cuSPARSE through ``cupy``, ``torch`` or ``nvmath``)
costs what that route costs on a tiny matrix, measured with the same protocol by
``sparsescope ceilings`` (``library_call_us``): its descriptors, workspace and output, its
kernels (memset, partition, product) and the waits between them -- a cost no count of empty
launches reproduces (cuSPARSE took about 15 us on a 5,300-nonzero matrix where our kernel took
5 us; without this term the model predicted cuSPARSE 47-53 % too fast on every real
matrix, issue 36). What the call does beyond that probe is added (:func:`library_extra_us`)::

    overhead (library) = probe + (launches - probe launches) x next_launch_us
                         + (levels(rows) x search - levels(32) x probe search) x level
    levels(n) = ceil(log2(n + 1))          (a binary search over the n + 1 row offsets)
    level     = DRAM latency (timed alone: the flush left the offsets in DRAM), the L2
                latency back to back (the previous call's search left them there)

The probe (``backends.library_probe``: the route's own backend on a 32 x 32 matrix) has
:data:`PROBE_CALLS`' launches and search: CuPy's ``csr @ x`` and PyTorch's ``sparse.mm`` call
``cusparseSpMV`` unplanned, so every call runs ``csr_partition_kernel`` -- a binary search of
the row offsets for each block's first row, one dependent load per level, deeper for more rows
-- while the planned ``nvmath`` probe was preprocessed once and searches nothing. A planned call
without the preprocessing (``nvmath-cusparse-i32[preprocess=0]``) adds the partition's launch
and its whole search; ``CSR_ALG2`` adds the fix-up's launch (its dependent loads are the
``fixup`` chain of ``model.predict``). On the H200's real development set the partitioned
calls were measured 20-50 % slower than the probe-only prediction, and their excess grew with
log2(rows), not with the nonzeros. Not measured on the device::

    overhead (library) = launches x call_us      (each of the library's launches paid as a
                                                  lone call: its kernels wait for each other
                                                  and for the library's host work between
                                                  them, so none hides behind the one before)
                       = launches x launch_us    (without call_us), else 0

and the prediction's assumptions say so (:func:`overhead_assumptions`).

The throughput mode (calls back to back, ``model.throughput``) replaces each by the
back-to-back cost: ``launches x next_launch_us`` (else ``launches x launch_us``) for our
kernels, the library's measured ``library_call_throughput_us`` (else ``launches x
next_launch_us``) for a library's. A kernel that waits before it touches what the previous call
writes (``KernelShape.programmatic_launch``: the tile kernels and their fix-up) is launched
there with programmatic dependent launch (``hardware.programmatic_launch``): each launch starts
while the one before it still runs, so it costs what a PDL launch of an empty kernel behind
another costs, measured (``pdl_launch_us``; :func:`overlaps_previous_call`)::

    overhead (own, throughput, PDL) = launches x pdl_launch_us

Only the launch: the loads a block makes before its wait (its tile descriptor, the tile's
columns and values) are charged as before. On the H200's real development set (2026-11-28,
``results/h200/real-dev/2026-11-28-pdl``) the one-launch tile calls gained 0.9-1.0 us a call,
the launch difference (1.5 - 0.54 us), and no more; charging the setup round and the first
stream round as hidden too put the model further from them (our kernels' median error 11.3 %
against 10.9 %).

Where ``pdl_launch_us`` was not measured (no ``cuda.bindings``, a device before sm_90), the
backend launches as usual and the model charges the usual cost. No term is fitted to a matrix.
"""

from __future__ import annotations

import math

from sparsescope.model.prediction import PredictionTerm
from sparsescope.model.throughput import is_throughput

#: Rows of the probe matrix the library routes' fixed costs are measured on
#: (``backends.library_probe.PROBE_ROWS``).
PROBE_ROWS = 32
#: Library route -> (kernel launches, whether it searches the row offsets) of its probe's call,
#: as the probe's backend declares them (``backends.library_probe.LIBRARY_PROBES``: CuPy's
#: memset, partition and csrmv; PyTorch's output fill, memset, partition and csrmv; nvmath's
#: preprocessed memset and csrmv).
PROBE_CALLS = {"cupy": (3, True), "torch": (4, True), "nvmath": (2, False)}


def _launches_x(rates, launches: int, per: str) -> tuple[float, str] | None:
    """``launches x rates.<per>`` with its description, or None when ``per`` is not measured."""
    value = getattr(rates, per, None)
    if value is None:
        return None
    return launches * value, f"{launches} launch(es) x {value:.1f} us ({per})"


def _own_latency(rates, launches: int) -> tuple[float, str]:
    call = getattr(rates, "call_us", None)
    if call is not None:
        further = getattr(rates, "next_launch_us", None) or 0.0
        us = call + (launches - 1) * further
        more = (f" + {launches - 1} further launch(es) x {further:.1f} us" if launches > 1
                else "")
        return us, f"one call {call:.1f} us{more} (measured through the timing protocol)"
    launch = getattr(rates, "launch_us", None)
    if launch is not None:
        return launch * launches, f"{launches} launch(es) x {launch:.1f} us (measured empty kernel)"
    return 0.0, "not known on this device (no measured launch time): 0"


def _measured_library(rates, library: str, throughput: bool) -> float | None:
    table = getattr(rates, "library_call_throughput_us" if throughput else "library_call_us",
                    None) or {}
    value = table.get(library)
    return float(value) if value is not None else None


def search_levels(rows: int) -> int:
    """Levels of a binary search over ``rows + 1`` row offsets: ceil(log2(rows + 1)). Hand
    check: 32 rows -> 6; 1,000 -> 10; 325,729 -> 19."""
    return max(0, math.ceil(math.log2(max(1, int(rows)) + 1)))


def search_level_ns(rates) -> float:
    """One level of the row search: a dependent load of the row offsets, from DRAM after the
    latency mode's flush, from the L2 back to back (module docstring)."""
    dram = rates.dram_latency_ns
    if is_throughput(rates) and getattr(rates, "l2_latency_ns", None):
        return min(rates.l2_latency_ns, dram)
    return dram


def library_extra_us(rates, library: str, launches: int, rows: int,
                     row_search: bool) -> tuple[float, str]:
    """(microseconds, how) a library call costs beyond its route's probe (module docstring):
    its launches beyond the probe's at ``next_launch_us`` (``launch_us`` without it) and its
    row search's levels beyond the probe's at :func:`search_level_ns`; (0, "") for a route
    whose probe is not known. Hand check (DRAM 336 ns, next launch 1.6 us): nvmath not
    preprocessed, 3 launches, 1,000 rows -> 1.6 + 10 x 0.336 = 4.96 us; cupy, 3 launches,
    1,000 rows -> (10 - 6) x 0.336 = 1.34 us."""
    if library not in PROBE_CALLS:
        return 0.0, ""
    probe_launches, probe_search = PROBE_CALLS[library]
    further = getattr(rates, "next_launch_us", None) or getattr(rates, "launch_us", None) or 0.0
    extra_launches = max(0, int(launches) - probe_launches)
    levels = search_levels(rows) if row_search else 0
    probe_levels = search_levels(PROBE_ROWS) if probe_search else 0
    level_ns = search_level_ns(rates)
    us = extra_launches * further + (levels - probe_levels) * level_ns * 1e-3
    parts = []
    if extra_launches:
        parts.append(f"{extra_launches} launch(es) beyond the probe's x {further:.1f} us")
    if levels != probe_levels:
        parts.append(f"row search {levels} levels (probe {probe_levels}) x {level_ns:,.0f} ns")
    return us, "; ".join(parts)


def overlaps_previous_call(rates, programmatic: bool) -> bool:
    """Whether a call of a kernel that may be launched programmatically (``programmatic``:
    ``KernelShape.programmatic_launch``) overlaps the previous call in the rates' mode: the
    throughput mode, with a measured ``pdl_launch_us`` (the ceilings could launch so)."""
    return (bool(programmatic) and is_throughput(rates)
            and getattr(rates, "pdl_launch_us", None) is not None)


def call_overhead_us(rates, launches: int, library: str = "", rows: int = 0,
                     row_search: bool = False, programmatic: bool = False
                     ) -> tuple[float, str]:
    """(microseconds, how) of a call of ``launches`` kernel launches on the device of ``rates``
    (a ``DeviceRates``), in the rates' timing mode; ``library``: the library route the call
    goes through ("" for our own kernels), on a matrix of ``rows`` rows, searching its row
    offsets (``row_search``) or not; ``programmatic``: its first kernel may be launched with
    PDL (:func:`overlaps_previous_call`). Hand checks: call 3.7 us, next launch 1.5 us,
    2 launches -> 5.2 us (latency), 3.0 us (throughput); the same with PDL measured at
    0.4 us -> 2 x 0.4 = 0.8 us (throughput); a library measured at 12.0 us, a call like its
    probe -> 12.0 us; not measured, 3 launches -> 3 x 3.7 = 11.1 us."""
    launches = max(1, int(launches))
    throughput = is_throughput(rates)
    if not library and overlaps_previous_call(rates, programmatic):
        return launches * rates.pdl_launch_us, (
            f"{launches} programmatic launch(es) (PDL), each started behind the one before it: "
            f"{launches} x {rates.pdl_launch_us:.1f} us (measured: pdl_launch_us), back to back "
            f"(throughput)")
    if library:
        measured = _measured_library(rates, library, throughput)
        if measured is not None:
            mode = "back to back" if throughput else "alone"
            extra, how = (library_extra_us(rates, library, launches, rows, row_search)
                          if rows else (0.0, ""))
            return measured + extra, (
                f"the {library} cuSPARSE call's fixed cost, timed {mode} on a tiny matrix "
                f"through the timing protocol: {measured:.1f} us (sparsescope ceilings: "
                f"library_call_us)" + (f" + {extra:.1f} us ({how})" if how else ""))
        for per in (("next_launch_us", "launch_us") if throughput else ("call_us", "launch_us")):
            found = _launches_x(rates, launches, per)
            if found is not None:
                return found[0], (f"{found[1]}, each of the library's launches paid as a call "
                                  f"of its own: the {library} call's fixed cost is not measured "
                                  "on this device (sparsescope ceilings measures "
                                  "library_call_us)")
        return 0.0, (f"the {library} call's fixed cost is not measured on this device, nor a "
                     "launch time: 0")
    if throughput:
        for per in ("next_launch_us", "launch_us"):
            found = _launches_x(rates, launches, per)
            if found is not None:
                return found[0], f"{found[1]}, back to back (throughput)"
        return 0.0, "not known on this device (no measured launch time): 0"
    return _own_latency(rates, launches)


def overhead_assumptions(rates, library: str = "", launches: int = 1) -> tuple[str, ...]:
    """What a prediction assumes of its fixed cost: for a library call whose cost was not
    measured on the device, the default it fell back to (none otherwise)."""
    if not library or _measured_library(rates, library, is_throughput(rates)) is not None:
        return ()
    us, how = call_overhead_us(rates, launches, library)
    return (f"the {library} cuSPARSE call's fixed cost, not measured: {us:.1f} us = {how}",)


def overhead_term(rates, launches: int, library: str = "") -> PredictionTerm:
    """The ``overhead`` term of a prediction: :func:`call_overhead_us` in ms."""
    us, how = call_overhead_us(rates, launches, library)
    return PredictionTerm("overhead", us * 1e-3, how)
