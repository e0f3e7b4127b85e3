"""Checks of every path a command will write, made before anything is measured.

A run that measures for minutes and then finds ``--out`` unwritable loses everything; so each
command checks its outputs first: the folder exists or can be made, it is a folder, a file can
be created in it (a real probe: root passes every permission test, a read-only file system
does not show in ``os.access``), and the results store opens. Each failure is an
:class:`~sparsescope.errors.OutputError` naming the path and the fix.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparsescope.errors import OutputError

_REASONS = {errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
            errno.EROFS: "the file system is read-only", errno.ENOSPC: "no space left",
            errno.ENOTDIR: "a part of the path is a file, not a folder",
            errno.EEXIST: "a file of that name exists"}


def why(exc: OSError) -> str:
    """An OS error's reason in a few words (``no space left``, ``permission denied``)."""
    return _REASONS.get(exc.errno, exc.strerror or type(exc).__name__)


_why = why


def check_out_dir(path: str | os.PathLike, flag: str = "--out") -> Path:
    """``path`` as a folder the command can write into, made if missing (its parents too)."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder; give {flag} a folder path "
                          f"(or remove the file)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".sparsescope-write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputError(f"{out}: cannot write there ({_why(exc)}); give {flag} a folder you "
                          f"can write") from None
    return out


def check_out_file(path: str | os.PathLike, flag: str = "--out") -> Path:
    """``path`` as a file the command can create or replace (its folder made if missing)."""
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{target}: is a folder; give {flag} a file path")
    check_out_dir(target.parent if str(target.parent) else Path("."), flag)
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"{target}: exists and is not writable; give {flag} another path")
    return target


def check_store(path: str | os.PathLike | None = None) -> Path:
    """Open the results store (``$SPARSESCOPE_STORE`` or the default) and return its path;
    an :class:`OutputError` naming it and the fix when it cannot be opened or written."""
    from sparsescope.errors import ResultsFormatError
    from sparsescope.results.store import ResultsStore

    store = ResultsStore(path)
    try:
        store.check_writable()
    except (OSError, ResultsFormatError) as exc:
        why = _why(exc) if isinstance(exc, OSError) else str(exc).replace(f"{store.path}: ", "")
        raise OutputError(f"results store {store.path}: cannot be opened for writing ({why}); "
                          f"set SPARSESCOPE_STORE to a writable file, or pass --no-store") from None
    return store.path


LOCK_NAME = ".sparsescope.lock"
"""The lock file a command holds in its output folder while it measures and writes there."""


@contextmanager
def out_dir_lock(path: str | os.PathLike, flag: str = "--out") -> Iterator[Path]:
    """Hold ``path/.sparsescope.lock`` (an exclusive ``flock``) for the block: one writer per
    output folder. A second command into the same folder gets an :class:`OutputError` at once
    (naming the folder and the holder's pid), before it measures anything. The lock goes with
    the process (a ``kill -9`` leaves no stale lock); the file is removed on a normal exit.
    Where ``fcntl`` is missing (Windows) nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield Path(path)
        return
    lock = Path(path) / LOCK_NAME
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputError(f"{lock}: cannot create the lock file ({_why(exc)}); give {flag} "
                              f"a folder you can write") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _holder(fd)
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise OutputError(f"{lock}: cannot lock ({_why(exc)})") from None
            raise OutputError(f"{path}: another sparsescope command{holder} is writing into "
                              f"this folder; wait for it to end, or give {flag} another "
                              f"folder") from None
        # The holder before us may have removed the file between our open and our lock: then
        # we hold a lock on a file no one else sees; open it again.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError:
        pass  # the pid is a courtesy for the message; the flock is the lock
    try:
        yield Path(path)
    finally:
        try:
            lock.unlink()  # while still held: a waiting opener sees a new file, not this one
        except OSError:
            pass
        os.close(fd)


def _holder(fd: int) -> str:
    """`` (pid N)`` from a held lock file, or ""."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""
