"""What the throughput timing mode changes in a prediction (``timing.modes``; the rates say the
mode: ``DeviceRates.timing_mode``).

Calls timed back to back differ from a call timed alone in two ways:

* **launches overlap**: a call's kernels are queued while the previous call's still run, so
  its fixed cost is the back-to-back launch interval, not a lone call's
  (``model.call_overhead``)::

      overhead (own)     = launches x next_launch_us
      overhead (library) = the library call's back-to-back cost, measured on a tiny matrix
                           (``library_call_throughput_us``), else launches x next_launch_us

* **the L2 stays warm**: the previous call left its data in the L2, nothing flushes it, so the
  bytes of a call's data that fit in the L2 come from there and only the rest from DRAM::

      fetched   = the bytes the call brings from DRAM when timed alone (streams, x misses, ...)
      warm DRAM = max(0, fetched - L2)
      share     = warm DRAM / fetched           (0 when everything fits, -> 1 for data >> L2)
      dram term (throughput) = dram term (latency, unflushed) x share

  The L2 is taken to keep any ``L2`` bytes of the previous call's data (an ideal
  replacement; an LRU sweeping cyclically through more than its size would keep none), and
  no flush write-back is charged (nothing flushes).

* **the round trips shorten**: a stream load finds what the L2 kept, so the loop's dependent
  loads wait ``L2 latency + share x (DRAM latency - L2 latency)`` and the x gathers miss
  ``share`` times as often (``model.residency``, used by ``model.predict.iteration_ns``).

The L2 requests and the compute are the same in both modes.
"""

from __future__ import annotations

from dataclasses import replace

from sparsescope.model.prediction import PredictionTerm

THROUGHPUT = "throughput"


def is_throughput(rates) -> bool:
    """Whether ``rates`` (a ``DeviceRates``) predict the throughput mode."""
    return getattr(rates, "timing_mode", "latency") == THROUGHPUT


def warm_dram_share(fetched_bytes: float, l2_bytes: float) -> float:
    """The share of a call's DRAM bytes still read from DRAM when the call repeats back to back
    (module docstring)::

        share = max(0, fetched - L2) / fetched

    Hand check: 30 MB fetched, 50 MB L2 -> 0; 200 MB fetched, 50 MB L2 -> 0.75; nothing
    fetched -> 0."""
    if fetched_bytes <= 0:
        return 0.0
    return max(0.0, float(fetched_bytes) - float(l2_bytes)) / float(fetched_bytes)


def warm_dram_term(term: PredictionTerm, fetched_bytes: float, rates) -> PredictionTerm:
    """``term`` (the ``dram`` term of a call timed alone) as the throughput mode sees it:
    its time x :func:`warm_dram_share`, the formula saying so; ``term`` unchanged in the
    latency mode. Hand check: a 10 us term, 200 MB fetched, 50 MB L2 -> 7.5 us."""
    if not is_throughput(rates):
        return term
    share = warm_dram_share(fetched_bytes, rates.l2_bytes)
    return replace(term, time_ms=term.time_ms * share,
                   formula=f"({term.formula}) x {share:.3f}: throughput, L2 warm, only "
                           f"max(0, {fetched_bytes:,.0f} B - {rates.l2_bytes:,} B L2) of the "
                           f"call's data from DRAM")


def throughput_assumption(rates) -> tuple[str, ...]:
    """The assumption a throughput prediction states (none in the latency mode)."""
    if not is_throughput(rates):
        return ()
    return ("throughput mode: calls back to back, the L2 warm (it keeps what fits of the "
            "previous call's data, ideal replacement) and each call's launches queued behind "
            "the previous call's (model.throughput)",)


def rates_for_timing(rates, timing) -> object:
    """``rates`` (a ``DeviceRates``) predicting the mode of ``timing`` (a ``TimingConfig``;
    None: the latency mode), the same object when the mode is already theirs."""
    mode = getattr(timing, "mode", "latency") if timing is not None else "latency"
    if rates is None or getattr(rates, "timing_mode", "latency") == mode:
        return rates
    return replace(rates, timing_mode=mode)
