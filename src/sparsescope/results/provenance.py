"""Where and how a run happened: time, command, versions, commit, host, device."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import scipy

import sparsescope
from sparsescope.results.records import Provenance

_PACKAGE_DIR = Path(sparsescope.__file__).resolve().parent


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_commit(package_dir: Path = _PACKAGE_DIR) -> str:
    """Commit of the sparsescope checkout the package runs from, ``-dirty`` when tracked files
    changed; ``unknown`` for an installed copy, a checkout without commits, or no git.
    ``$SPARSESCOPE_GIT_COMMIT`` overrides it (set by scripts that ship the tree without .git).

    The checkout must be sparsescope's own (``<top>/src/sparsescope`` is the package), so a
    package installed inside some other repository does not report that repository's commit.
    """
    override = os.environ.get("SPARSESCOPE_GIT_COMMIT")
    if override:  # a copy without .git (e.g. a tree sent to a GPU machine) names its commit
        return override
    top = _git(["rev-parse", "--show-toplevel"], package_dir)
    if not top or (Path(top) / "src" / "sparsescope").resolve() != package_dir.resolve():
        return "unknown"
    commit = _git(["rev-parse", "HEAD"], package_dir)
    if not commit:
        return "unknown"
    dirty = _git(["status", "--porcelain", "--untracked-files=no"], package_dir)
    return f"{commit}-dirty" if dirty else commit


def collect_provenance(command: str, *, device: str, driver: str = "",
                       libraries: dict[str, str] | None = None) -> Provenance:
    """Provenance of a run starting now; numpy and scipy versions are always included."""
    libs = {"numpy": np.__version__, "scipy": scipy.__version__}
    libs.update(libraries or {})
    return Provenance(
        created_utc=datetime.now(UTC).isoformat(timespec="seconds"),
        command=command,
        sparsescope_version=sparsescope.__version__,
        git_commit=git_commit(),
        hostname=socket.gethostname(),
        platform=platform.platform(),
        python=platform.python_version(),
        device=device,
        driver=driver,
        libraries=libs,
    )
