"""What the sweep tests build: tiny generated collections, a complex .mtx, the fast timing."""

from __future__ import annotations

from pathlib import Path

from sparsescope.timing.types import TimingConfig

TIMING = TimingConfig(warmups=0, repeats=2, flush_l2=False)
KINDS = ("banded", "powerlaw", "scattered", "uniform", "rmat")
COMPLEX_MTX = "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n"


def write_collection(folder: Path, count: int) -> Path:
    """``count`` small matrices of several kinds and formats under ``folder`` (some nested)."""
    from sparsescope import matrices

    suffixes = (".mtx", ".npz", ".mtx.gz")
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        sub = folder / ("nested" if i % 3 == 0 else "")
        sub.mkdir(parents=True, exist_ok=True)
        csr = matrices.generate(kind, 40 + i, 200 + 7 * i, seed=i)
        matrices.write_matrix(csr, sub / f"m{i:02d}_{kind}{suffixes[i % 3]}")
    return folder


def stored_rows(store: Path) -> int:
    """How many cases the sweep store holds (0 before it exists)."""
    import sqlite3

    if not store.exists():
        return 0
    with sqlite3.connect(store) as con:
        return con.execute("SELECT COUNT(*) FROM sweep_cases").fetchone()[0]


def signal_mid_sweep(script: str, store: Path, sig: int, *, after: int = 2,
                     group: bool = False):
    """Run ``script`` (a sweep of slow cases) in a subprocess, send it ``sig`` once ``after``
    cases are stored, and return ``(returncode, stderr)``. ``group``: the script runs in a
    process group of its own and the signal goes to the whole group, as Ctrl-C at a terminal
    reaches the command and every worker process it started."""
    import os
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=group)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        if stored_rows(store) >= after:
            break
        time.sleep(0.05)
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err
