"""``sparsescope ceilings``: measure the present device's ceilings and keep them per device.

Parses and prints around :func:`sparsescope.api.measure_ceilings`. On a machine with a GPU:
:func:`sparsescope.hardware.gpu_ceilings.measure_gpu_ceilings`,
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
from typing import TYPE_CHECKING

from sparsescope.cli import add_json_flag

if TYPE_CHECKING:
    from sparsescope.api import MeasuredCeilings

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
    ("pdl_launch_us", "PDL launch back to back", "us"),
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
    for library, us in sorted(getattr(ceilings, "library_call_us", {}).items()):
        back = getattr(ceilings, "library_call_throughput_us", {}).get(library)
        more = f", back to back {back:,.1f} us" if back is not None else ""
        lines.append(f"  library call ({library}) {us:>8,.1f} us{more}")
    if "library_call_us" in ceilings.method:
        lines.append(f"    {ceilings.method['library_call_us']}")
    if origin:
        lines.append(origin)
    lines.append(f"stored in {stored}" if stored else not_stored)
    return "\n".join(lines)


def _cpu_origin(found) -> str:
    ceilings = found.ceilings
    trials = f"best of {ceilings.trials} trials" if ceilings.trials else "measured"
    if found.cached:
        origin = (f"cached: measured {ceilings.measured_utc or '(time not recorded)'} on this "
                  f"machine ({trials}); `sparsescope ceilings --refresh` measures again")
    else:
        origin = f"measured now ({trials})" + (
            f", cached for this machine in {found.stored}" if found.saved else "")
    if found.store_error:
        origin += f"\nthe results store could not be used: {found.store_error}"
    return origin


def handle(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    found = api.measure_ceilings(store=not args.no_store, refresh=args.refresh,
                                 progress=not args.json)
    ceilings = found.ceilings
    result = {"device": ceilings.device, "kind": found.kind, "driver": found.driver,
              "ceilings": {f: getattr(ceilings, f) for f, _, _ in FIGURES},
              "units": {f: unit for f, _, unit in FIGURES},
              "library_call_us": dict(ceilings.library_call_us),
              "library_call_throughput_us": dict(ceilings.library_call_throughput_us),
              "spread_pct": _spreads(ceilings), "trials": ceilings.trials,
              "cached": found.cached, "measured_utc": found.measured_utc,
              "method": dict(ceilings.method), "store": found.stored}
    if found.kind == "gpu":
        return result, _text(ceilings, "gpu", found.stored)
    result.update(machine_key=found.machine_key, store_error=found.store_error)
    return result, _text(ceilings, "cpu", found.stored, _cpu_origin(found),
                         "not stored (--no-store)" if args.no_store else "not stored")
