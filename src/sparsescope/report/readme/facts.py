"""One run's provenance and outcome counts, read from its RunSet file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparsescope.report.readme.files import read_json


@dataclass(frozen=True)
class RunFacts:
    """What the README says of one RunSet file."""

    path: str
    """The file, relative to the folder."""
    run_id: str
    created_utc: str
    """When the run was made (its provenance)."""
    command: str
    """The command line that made it."""
    git_commit: str
    device: str
    driver: str
    versions: str
    """sparsescope's version, then each library's, ``name version`` joined by commas."""
    ok: int
    """Cases timed and checked."""
    skipped: int
    failed: int
    matrices: int
    """Distinct matrices among the cases."""
    backends: tuple[str, ...]
    """Backends (with variant labels) in first-seen order."""


def run_facts(path: Path, folder: Path) -> RunFacts:
    """The facts of the RunSet at ``path`` (a file of ``folder``)."""
    data = read_json(path)
    prov = data.get("provenance") or {}
    cases = data.get("cases") or []
    backends: list[str] = []
    for c in cases:
        if c["backend"] not in backends:
            backends.append(c["backend"])
    libraries = prov.get("libraries") or {}
    versions = ", ".join([f"sparsescope {prov.get('sparsescope_version', '?')}",
                          *(f"{k} {v}" for k, v in sorted(libraries.items()))])
    count = {o: sum(c.get("outcome") == o for c in cases) for o in ("ok", "skipped", "failed")}
    return RunFacts(str(path.relative_to(folder)), str(data.get("run_id", "")),
                    str(prov.get("created_utc", "")), str(prov.get("command", "")),
                    str(prov.get("git_commit", "")), str(prov.get("device", "")),
                    str(prov.get("driver", "")), versions, count["ok"], count["skipped"],
                    count["failed"], len({c["matrix"] for c in cases}), tuple(backends))
