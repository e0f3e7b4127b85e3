"""The progress of ``sparsescope run`` on a terminal: a bar over the cases at once, case lines as
they finish (not all at the end); and no bar when stderr is not a terminal."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time

import pytest

pty = pytest.importorskip("pty", reason="no pseudo-terminals on this platform")
if not hasattr(os, "openpty"):  # pragma: no cover
    pytest.skip("no os.openpty on this platform", allow_module_level=True)

FAST = ["--warmups", "1", "--repeats", "3", "--flush", "off"]
DEADLINE_S = 180.0
# A case line, after a newline or after the bar was cleared with a carriage return.
CASE_LINE = re.compile(rb"[\r\n] +cant +scipy-cpu +ok ")
BAR = re.compile(rb"cases:\s*\d+%\|")


def _command(out) -> list[str]:
    """A CPU run of the six seed matrices, small (what is checked is the terminal, not the
    cases), into the test process's store, where the CPU ceilings are already cached
    (``store_with_cpu_ceilings``: measuring them is a second and more in every fresh run)."""
    return [sys.executable, "-m", "sparsescope", "run", "--suite", "seed6", "--scale", "0.005",
            "--out", str(out), *FAST]


def _set_size(fd: int, rows: int = 24, cols: int = 120) -> None:
    try:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    except (ImportError, OSError):  # the bar then falls back to its default width
        pass


def _read_pty(master: int, proc: subprocess.Popen, start: float) -> list[tuple[float, bytes]]:
    """Every chunk read from the terminal, with its arrival time (seconds since ``start``),
    until the process ends and the terminal is drained, or the deadline passes."""
    chunks: list[tuple[float, bytes]] = []
    while time.monotonic() - start < DEADLINE_S:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every slave end closed (Linux)
                break
            if not data:
                break
            chunks.append((time.monotonic() - start, data))
        elif proc.poll() is not None:
            break
    return chunks


def _first(chunks, pattern) -> float | None:
    """Arrival time of the chunk where ``pattern`` is first complete in the stream."""
    seen = b""
    for t, data in chunks:
        seen += data
        if pattern.search(seen):
            return t
    return None


def test_bar_and_case_lines_arrive_while_running(tmp_path, store_with_cpu_ceilings):
    master, slave = os.openpty()
    _set_size(slave)
    env = dict(os.environ, TERM="xterm", COLUMNS="120")
    env.pop("NO_COLOR", None)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(_command(tmp_path / "out"), stdin=slave, stdout=slave,
                                stderr=slave, env=env, close_fds=True)
    finally:
        os.close(slave)
    try:
        chunks = _read_pty(master, proc, start)
        rc = proc.wait(timeout=max(1.0, DEADLINE_S - (time.monotonic() - start)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = b"".join(data for _, data in chunks)
    shown = text.decode(errors="replace")
    assert rc == 0, shown[-3000:]
    assert chunks, "nothing on the terminal"
    assert b"Traceback" not in text, shown[-3000:]
    # the bar appears at once: before the first case line (an order, not a wall time: no
    # test asserts a wall time)
    bar_at = _first(chunks, BAR)
    assert bar_at is not None, f"no tqdm bar with 'cases' on the terminal: {shown[:1500]!r}"
    assert re.search(rb"\r(?!\n)", text), "no carriage return redrawing a bar"
    # case lines come as the cases finish, before the run writes its results and report
    case_at = _first(chunks, CASE_LINE)
    results_at = _first(chunks, re.compile(rb"^results: ", re.MULTILINE))
    assert case_at is not None, f"no case line for cant: {shown[-3000:]!r}"
    assert results_at is not None, f"no 'results:' line: {shown[-3000:]!r}"
    assert case_at < results_at, \
        f"the case line arrived with the results line ({case_at:.2f} s vs {results_at:.2f} s)"
    assert bar_at <= case_at
    # every case line was printed; the bar's last state does not linger (leave=False)
    for name in (b"webbase-1M", b"cant", b"pwtk", b"ldoor", b"circuit5M", b"cage15"):
        assert re.search(rb"[\r\n] +" + re.escape(name) + rb" +scipy-cpu +ok ", text), name


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path, store_with_cpu_ceilings):
    """stdout on a terminal (case lines), stderr a pipe: no bar, no carriage return."""
    master, slave = os.openpty()
    _set_size(slave)
    try:
        proc = subprocess.Popen(_command(tmp_path / "out"), stdin=slave, stdout=slave,
                                stderr=subprocess.PIPE, close_fds=True)
    finally:
        os.close(slave)
    start = time.monotonic()
    try:
        chunks = _read_pty(master, proc, start)
        _, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    out = b"".join(data for _, data in chunks)
    assert proc.returncode == 0, err.decode(errors="replace")
    assert b"Traceback" not in err
    assert b"\r" not in err and b"%|" not in err and b"cases:" not in err, err[-500:]
    assert CASE_LINE.search(out), out[-2000:]
