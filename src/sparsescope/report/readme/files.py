"""What a results folder holds: its run files, env.txt, analyses and profile cases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparsescope._compressed import JSON_SUFFIXES, read_json

RUN_NAMES = JSON_SUFFIXES
"""Suffixes of a file that may be a RunSet (``results.json``, ``part1/results.json.xz``,
``A1.json.gz``); :func:`is_runset` decides."""
ANALYSIS_NAMES = tuple(f"analysis{suffix}" for suffix in JSON_SUFFIXES)
"""Names of a ``sparsescope analyze`` run's ``analysis.json``, compressed or not."""


@dataclass(frozen=True)
class FolderFiles:
    """The files of one results folder the README is written from."""

    folder: Path
    """The folder itself."""
    runs: tuple[Path, ...]
    """RunSet files (``results.json``, compressed or not), sorted, below the folder but not in a
    sub-folder that has its own README."""
    env: str
    """The folder's ``env.txt`` (the device, driver and versions of the machine), stripped;
    empty when there is none."""
    analyses: tuple[Path, ...]
    """``analysis.json`` files of ``sparsescope analyze`` runs, compressed or not."""
    others: tuple[Path, ...]
    """Every other file (logs, profiles, scripts' outputs), sorted, README.md left out."""

    @property
    def kind(self) -> str:
        """``runs`` (one or more RunSets), ``analyze`` (analyses), or ``files``."""
        if self.runs:
            return "runs"
        if self.analyses:
            return "analyze"
        return "files"


def is_runset(path: Path) -> bool:
    """Whether ``path`` holds a RunSet (``sparsescope run``'s results): a JSON object with
    ``run_id``, ``provenance`` and ``cases``. A file that is not JSON is not one; a damaged
    compressed file is an error (a ``ResultsFormatError`` naming it), not a file passed by."""
    if not path.name.endswith(RUN_NAMES):
        return False
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and {"run_id", "provenance", "cases"} <= data.keys()


def _own_files(folder: Path) -> list[Path]:
    """Files below ``folder``, sub-folders with their own README.md left out (they are folders
    of their own)."""
    found: list[Path] = []
    for path in sorted(folder.iterdir()):
        if path.is_dir():
            if not (path / "README.md").is_file():
                found += _own_files(path)
        elif path.is_file():
            found.append(path)
    return found


def scan(folder: str | Path) -> FolderFiles:
    """The files of ``folder`` the README is written from."""
    folder = Path(folder)
    files = [p for p in _own_files(folder) if p != folder / "README.md"]
    runs = tuple(p for p in files if is_runset(p))
    analyses = tuple(p for p in files if p.name in ANALYSIS_NAMES)
    env = folder / "env.txt"
    others = tuple(p for p in files if p not in runs and p not in analyses and p != env)
    return FolderFiles(folder, runs, env.read_text().strip() if env.is_file() else "",
                       analyses, others)
