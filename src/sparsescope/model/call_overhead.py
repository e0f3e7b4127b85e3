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
matrix, issue 36). Not measured on the device::

    overhead (library) = launches x call_us      (each of the library's launches paid as a
                                                  lone call: its kernels wait for each other
                                                  and for the library's host work between
                                                  them, so none hides behind the one before)
                       = launches x launch_us    (without call_us), else 0

and the prediction's assumptions say so (:func:`overhead_assumptions`).

The throughput mode (calls back to back, ``model.throughput``) replaces each by the
back-to-back cost: ``launches x next_launch_us`` (else ``launches x launch_us``) for our
kernels, the library's measured ``library_call_throughput_us`` (else ``launches x
next_launch_us``) for a library's. No term is fitted to a matrix.
"""

from __future__ import annotations

from sparsescope.model.prediction import PredictionTerm
from sparsescope.model.throughput import is_throughput


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


def call_overhead_us(rates, launches: int, library: str = "") -> tuple[float, str]:
    """(microseconds, how) of a call of ``launches`` kernel launches on the device of ``rates``
    (a ``DeviceRates``), in the rates' timing mode; ``library``: the library route the call
    goes through ("" for our own kernels). Hand checks: call 3.7 us, next launch 1.5 us,
    2 launches -> 5.2 us (latency), 3.0 us (throughput); a library measured at 12.0 us ->
    12.0 us whatever its launches; not measured, 3 launches -> 3 x 3.7 = 11.1 us."""
    launches = max(1, int(launches))
    throughput = is_throughput(rates)
    if library:
        measured = _measured_library(rates, library, throughput)
        if measured is not None:
            mode = "back to back" if throughput else "alone"
            return measured, (f"the {library} cuSPARSE call's fixed cost, timed {mode} on a tiny "
                              f"matrix through the timing protocol: {measured:.1f} us "
                              "(sparsescope ceilings: library_call_us)")
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
