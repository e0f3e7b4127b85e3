"""The fixed cost of a timed call: what the timing protocol measures around a call's kernels
beyond their own work, from the device's measured ceilings (``hardware.gpu_ceilings``)::

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
"""

from __future__ import annotations

from sparsescope.model.prediction import PredictionTerm


def call_overhead_us(rates, launches: int) -> tuple[float, str]:
    """(microseconds, how) of a call of ``launches`` kernel launches on the device of ``rates``
    (a ``DeviceRates``). Hand check: call 3.7 us, next launch 1.5 us, 2 launches -> 5.2 us."""
    launches = max(1, int(launches))
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


def overhead_term(rates, launches: int) -> PredictionTerm:
    """The ``overhead`` term of a prediction: :func:`call_overhead_us` in ms."""
    us, how = call_overhead_us(rates, launches)
    return PredictionTerm("overhead", us * 1e-3, how)
