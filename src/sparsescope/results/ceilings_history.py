"""The ``ceilings`` history table of the results store's SQLite file: every measurement
``sparsescope ceilings`` made, one row per device and time (not the per-machine CPU cache of
:mod:`sparsescope.results.ceilings_cache`). The latest figures of a device are one query away:
:func:`latest_ceilings` by exact device name, :func:`latest_matching` by any test of the name
(the what-if's GPU by its spec entry), read only.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sparsescope.hardware.types import MeasuredCeilings

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ceilings (
    device TEXT NOT NULL, kind TEXT NOT NULL, measured_utc TEXT NOT NULL,
    sparsescope_version TEXT NOT NULL, json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ceilings_by_device ON ceilings(device, measured_utc);
"""


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


def latest_matching(path: str | Path, kind: str, accept: Callable[[str], bool]
                    ) -> tuple[MeasuredCeilings, str, str] | None:
    """(ceilings, device name, measured UTC) of the newest row of ``kind`` whose device name
    ``accept`` takes, or None: no file, no table, no such row. Read only: the file is neither
    created nor changed; a row of another version's fields is passed over for an older one."""
    target = Path(path)
    if not target.is_file():
        return None
    try:
        con = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT device, measured_utc, json FROM ceilings WHERE kind = ? "
                               "ORDER BY measured_utc DESC, rowid DESC", (kind,)).fetchall()
        finally:
            con.close()
    except sqlite3.Error:  # not a store, or one without a ceilings table
        return None
    for device, measured_utc, text in rows:
        if not accept(device):
            continue
        try:
            return MeasuredCeilings(**json.loads(text)), device, measured_utc
        except (TypeError, ValueError):
            continue
    return None
