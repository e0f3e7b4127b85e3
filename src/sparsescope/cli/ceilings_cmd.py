"""``sparsescope ceilings``: measure the present device's ceilings and keep them per device.

On a machine with a GPU: :func:`sparsescope.hardware.gpu_ceilings.measure_gpu_ceilings`;
otherwise the host CPU's (:func:`sparsescope.hardware.cpu_ceilings.measure_cpu_ceilings`).
Unless ``--no-store``, each measurement is appended to a ``ceilings`` table in the results
store's SQLite file (``sparsescope.results.store.ResultsStore().path``), one row per device
and time, so the latest figures of a device are one query away (:func:`latest_ceilings`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from sparsescope.cli import add_json_flag
from sparsescope.hardware.types import MeasuredCeilings

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ceilings (
    device TEXT NOT NULL, kind TEXT NOT NULL, measured_utc TEXT NOT NULL,
    sparsescope_version TEXT NOT NULL, json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ceilings_by_device ON ceilings(device, measured_utc);
"""

#: (field, label, unit) of the figures, in the order printed.
FIGURES = (
    ("copy_bw_gb_s", "copy bandwidth", "GB/s"),
    ("read_bw_gb_s", "read bandwidth", "GB/s"),
    ("l2_bw_gb_s", "L2 bandwidth", "GB/s"),
    ("dram_latency_ns", "DRAM latency", "ns"),
    ("l2_latency_ns", "L2 latency", "ns"),
    ("fp32_gflops", "FP32 FMA", "GFLOP/s"),
)


def store_ceilings(path: str | Path, ceilings: MeasuredCeilings, kind: str,
                   measured_utc: str | None = None) -> None:
    """Append ``ceilings`` of a ``gpu`` or ``cpu`` device to the ``ceilings`` table at ``path``."""
    from sparsescope import __version__

    measured_utc = measured_utc or datetime.now(UTC).isoformat(timespec="seconds")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(target)
    try:
        con.executescript(_SCHEMA)
        with con:
            con.execute("INSERT INTO ceilings VALUES (?, ?, ?, ?, ?)",
                        (ceilings.device, kind, measured_utc, __version__,
                         json.dumps(dataclasses.asdict(ceilings), sort_keys=True)))
    finally:
        con.close()


def latest_ceilings(path: str | Path, device: str) -> MeasuredCeilings | None:
    """The most recently stored ceilings of ``device``, or None when there are none."""
    target = Path(path)
    if not target.exists():
        return None
    con = sqlite3.connect(target)
    try:
        con.executescript(_SCHEMA)
        row = con.execute("SELECT json FROM ceilings WHERE device = ? "
                          "ORDER BY measured_utc DESC, rowid DESC LIMIT 1", (device,)).fetchone()
    finally:
        con.close()
    return MeasuredCeilings(**json.loads(row[0])) if row else None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ceilings", help="measure this device's bandwidth, latency and FP32 ceilings",
        description="Measure the ceilings of the GPU (copy, read and L2 bandwidth, DRAM and "
                    "L2 latency, FP32 FMA) or, without a GPU, of the CPU (copy and read "
                    "bandwidth, FP32), and store them per device in the results store.")
    p.add_argument("--no-store", action="store_true", help="do not store the measurement")
    add_json_flag(p)
    p.set_defaults(handler=handle)


def _text(ceilings: MeasuredCeilings, kind: str, stored: str | None) -> str:
    lines = [f"ceilings of {ceilings.device} ({kind})"]
    for field, label, unit in FIGURES:
        value = getattr(ceilings, field)
        if value is None:
            continue
        lines.append(f"  {label:<15} {value:>12,.1f} {unit:<8} {ceilings.method.get(field, '')}")
    lines.append(f"stored in {stored}" if stored else "not stored (--no-store)")
    return "\n".join(lines)


def handle(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope.hardware.detect import detect_gpu

    gpu = detect_gpu()
    if gpu is not None:
        from sparsescope.hardware.gpu_ceilings import measure_gpu_ceilings

        kind, ceilings = "gpu", measure_gpu_ceilings()
    else:
        from sparsescope.hardware.cpu_ceilings import measure_cpu_ceilings

        kind, ceilings = "cpu", measure_cpu_ceilings()
    stored = None
    if not args.no_store:
        from sparsescope.results.store import ResultsStore

        stored = str(ResultsStore().path)
        store_ceilings(stored, ceilings, kind)
    result = {"device": ceilings.device, "kind": kind, "driver": gpu.driver if gpu else "",
              "ceilings": {f: getattr(ceilings, f) for f, _, _ in FIGURES},
              "units": {f: unit for f, _, unit in FIGURES},
              "method": dict(ceilings.method), "store": stored}
    return result, _text(ceilings, kind, stored)
