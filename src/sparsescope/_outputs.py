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
from pathlib import Path

from sparsescope.errors import OutputError

_REASONS = {errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
            errno.EROFS: "the file system is read-only", errno.ENOSPC: "no space left",
            errno.ENOTDIR: "a part of the path is a file, not a folder",
            errno.EEXIST: "a file of that name exists"}


def _why(exc: OSError) -> str:
    return _REASONS.get(exc.errno, exc.strerror or type(exc).__name__)


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
