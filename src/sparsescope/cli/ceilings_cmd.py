"""``sparsescope ceilings``: measure the present device's ceilings and keep them per device.

On a machine with a GPU: :func:`sparsescope.hardware.gpu_ceilings.measure_gpu_ceilings`,
measured every time. Otherwise the host CPU's, from the per-machine cache of the results store
(:func:`sparsescope.results.ceilings_cache.lookup_cpu_ceilings`, the figures runs use): measured
(best of 7 trials, with their spread) only when none are cached or with ``--refresh``, which
replaces the cached figures. ``--no-store`` measures the CPU now and touches no store.
Unless ``--no-store``, each new measurement is appended to a ``ceilings`` table in the results
store's SQLite file (``sparsescope.results.store.ResultsStore().path``), one row per device
and time (:mod:`sparsescope.results.ceilings_history`), so the latest figures of a device are
one query away; a CPU figure read from the cache adds no row.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from sparsescope.cli import add_json_flag
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.results.ceilings_history import store_ceilings

#: (field, label, unit) of the figures, in the order printed.
FIGURES = (
    ("copy_bw_gb_s", "copy bandwidth", "GB/s"),
    ("read_bw_gb_s", "read bandwidth", "GB/s"),
    ("l2_bw_gb_s", "L2 bandwidth", "GB/s"),
    ("l2_write_bw_gb_s", "L2 write bandwidth", "GB/s"),
    ("dram_latency_ns", "DRAM latency", "ns"),
    ("l2_latency_ns", "L2 latency", "ns"),
    ("fp32_gflops", "FP32 FMA", "GFLOP/s"),
    ("dram_gather_gsectors_s", "DRAM random gathers", "G sectors/s"),
    ("l2_gather_gsectors_s", "L2 random gathers", "G sectors/s"),
    ("launch_us", "empty launch", "us"),
    ("call_us", "timed call of one empty launch", "us"),
    ("next_launch_us", "each further launch of a call", "us"),
    ("flush_writeback_share", "flush write-back", "share"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ceilings", help="measure this device's bandwidth, latency and FP32 ceilings",
        description="Measure the ceilings of the GPU (copy, read and L2 bandwidth, DRAM and "
                    "L2 latency, FP32 FMA) or, without a GPU, of the CPU (copy and read "
                    "bandwidth, FP32), and store them per device in the results store.")
    p.add_argument("--no-store", action="store_true",
                   help="do not store the measurement (on a CPU: measure now, ignore the cache)")
    p.add_argument("--refresh", action="store_true",
                   help="CPU: measure again and replace this machine's cached ceilings (a GPU "
                        "is measured every time)")
    add_json_flag(p)
    p.set_defaults(handler=handle)


def _spreads(ceilings: MeasuredCeilings) -> dict[str, float | None]:
    return {f: ceilings.spread_pct(f) for f, _, _ in FIGURES}


def _text(ceilings: MeasuredCeilings, kind: str, stored: str | None, origin: str = "",
          not_stored: str = "not stored (--no-store)") -> str:
    lines = [f"ceilings of {ceilings.device} ({kind})"]
    spreads = _spreads(ceilings)
    width = 14 if any(v is not None for v in spreads.values()) else 0
    for field, label, unit in FIGURES:
        value = getattr(ceilings, field)
        if value is None:
            continue
        spread = spreads[field]
        spread_text = f"spread {spread:.1f} %" if spread is not None else ""
        lines.append(f"  {label:<15} {value:>12,.1f} {unit:<8} {spread_text:<{width}}"
                     f"{' ' if width else ''}{ceilings.method.get(field, '')}")
    if origin:
        lines.append(origin)
    lines.append(f"stored in {stored}" if stored else not_stored)
    return "\n".join(lines)


def _cpu(args: argparse.Namespace) -> tuple[dict, str]:
    """The CPU path: cached ceilings unless ``--refresh`` (or ``--no-store``: measured now)."""
    from sparsescope.progress import Status
    from sparsescope.results.ceilings_cache import lookup_cpu_ceilings

    with Status("measuring the CPU's ceilings (best of several trials, or the cache)",
                not args.json):
        found = lookup_cpu_ceilings(refresh=args.refresh, use_store=not args.no_store)
    ceilings = found.ceilings
    stored = None
    if found.saved:  # a new measurement: also one row of the history table
        stored = found.store
        store_ceilings(stored, ceilings, "cpu", measured_utc=ceilings.measured_utc or None)
    elif found.cached:
        stored = found.store
    trials = f"best of {ceilings.trials} trials" if ceilings.trials else "measured"
    if found.cached:
        origin = (f"cached: measured {ceilings.measured_utc or '(time not recorded)'} on this "
                  f"machine ({trials}); `sparsescope ceilings --refresh` measures again")
    else:
        origin = f"measured now ({trials})" + (
            f", cached for this machine in {found.store}" if found.saved else "")
    if found.store_error:
        origin += f"\nthe results store could not be used: {found.store_error}"
    result = {"device": ceilings.device, "kind": "cpu", "driver": "",
              "ceilings": {f: getattr(ceilings, f) for f, _, _ in FIGURES},
              "units": {f: unit for f, _, unit in FIGURES},
              "spread_pct": _spreads(ceilings), "trials": ceilings.trials,
              "cached": found.cached, "measured_utc": ceilings.measured_utc,
              "machine_key": found.machine_key, "method": dict(ceilings.method),
              "store": stored, "store_error": found.store_error}
    return result, _text(ceilings, "cpu", stored, origin,
                         "not stored (--no-store)" if args.no_store else "not stored")


def handle(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope.hardware.detect import detect_gpu

    gpu = detect_gpu()
    if gpu is None:
        return _cpu(args)
    from sparsescope.hardware.gpu_ceilings import measure_gpu_ceilings
    from sparsescope.progress import Status

    if not args.no_store:  # before measuring: a store that cannot be written fails first
        from sparsescope._outputs import check_store

        check_store()
    with Status("measuring the GPU's ceilings", not args.json):
        kind, ceilings = "gpu", measure_gpu_ceilings()
    measured_utc = datetime.now(UTC).isoformat(timespec="seconds")
    stored = None
    if not args.no_store:
        from sparsescope.results.store import ResultsStore

        stored = str(ResultsStore().path)
        store_ceilings(stored, ceilings, kind, measured_utc=measured_utc)
    result = {"device": ceilings.device, "kind": kind, "driver": gpu.driver,
              "ceilings": {f: getattr(ceilings, f) for f, _, _ in FIGURES},
              "units": {f: unit for f, _, unit in FIGURES},
              "spread_pct": _spreads(ceilings), "trials": ceilings.trials,
              "cached": False, "measured_utc": measured_utc,
              "method": dict(ceilings.method), "store": stored}
    return result, _text(ceilings, kind, stored)
