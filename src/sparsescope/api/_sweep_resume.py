"""What makes a resumed sweep cheap: the store's memory of each source's content, and the
outputs of the last sweep into the same folder when nothing changed (issue 35: a sweep
resumed with every case stored took 38 s on a 2-GPU cluster; its report alone takes seconds).

* :class:`SourceMemo`: ``(ref, identity) -> content hash`` of every source a worker loaded,
  kept in the store (``ResultsStore.remember_sources``); a resumed sweep hands the engine the
  hashes still valid (``sweep.source_facts``), so a matrix whose every case is stored is not
  loaded, and no cluster starts when none is left. Reads and writes are best-effort: a store
  that is busy only costs the next resume its loads.
* :func:`current_outputs` / :func:`mark_outputs`: a sweep that ran nothing, into a folder
  whose ``results.json`` and reports were written from exactly the same cases (names, sources
  and stored JSON), by this sparsescope and this report code, keeps them as they are.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from sparsescope.errors import ResultsFormatError

#: The hidden file in a sweep's folder naming the cases its results and reports were written
#: from (their fingerprint), the run id and the files.
STATE_FILE = ".sweep-state.json"


class SourceMemo:
    """The content hashes the store remembers for ``sources``, and those learnt now."""

    def __init__(self, store, sources: Sequence) -> None:
        from sparsescope.sweep.source_facts import known_hashes

        self.store = store
        try:
            remembered = store.source_hashes()
        except ResultsFormatError:  # busy, or unusable: the sweep reports that itself
            remembered = {}
        self.known, self.identities = known_hashes(sources, remembered)
        self.new: list[tuple[str, str, str]] = []

    def learnt(self, src, digest: str) -> None:
        """A worker loaded ``src`` (or found it unreadable): remember its hash when it has
        an identity and the store does not hold this one (a short try; see :meth:`flush`)."""
        identity = self.identities.get(src)
        if identity is None or self.known.get(src) == digest:
            return
        self.known[src] = digest
        self.new.append((src.ref, identity, digest))
        self.flush(0.05)

    def flush(self, wait_s: float = 2.0) -> bool:
        """Write what was learnt (waiting up to ``wait_s`` for a locked store); True when
        nothing is left unwritten."""
        from sparsescope.results.store import ResultsStore

        if not self.new:
            return True
        try:
            ResultsStore(self.store.path, timeout_s=wait_s).remember_sources(self.new)
        except ResultsFormatError:
            return False
        self.new.clear()
        return True


@functools.lru_cache(maxsize=1)
def _report_code() -> str:
    """SHA-256 (hex) over every ``report/*.py`` file, found without importing the report
    (matplotlib): a change to the report code writes the reports again."""
    import importlib.util

    spec = importlib.util.find_spec("sparsescope.report")
    digest = hashlib.sha256()
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(Path(folder).rglob("*.py")):
            digest.update(path.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def outputs_fingerprint(rows: Iterable[tuple[str, str, str]], device: str) -> str:
    """SHA-256 (hex) of what a sweep's outputs are written from: each case's ``(matrix name,
    matrix source, stored JSON)`` in order, the device, sparsescope's version and the report
    code."""
    from sparsescope import __version__

    digest = hashlib.sha256(f"{__version__}\0{device}\0{_report_code()}\0".encode())
    for row in rows:
        digest.update(json.dumps(row).encode() + b"\n")
    return digest.hexdigest()


def mark_outputs(out: Path, fingerprint: str, run_id: str, report_paths, collection) -> None:
    """Record in ``out`` what its results and reports were written from (best-effort: a
    failure only makes the next resume write them again)."""
    from sparsescope._atomic import write_json_atomic

    state = {"fingerprint": fingerprint, "run_id": run_id,
             "report": report_paths.to_dict() if report_paths is not None else None,
             "collection": collection.to_dict() if collection is not None else None}
    try:
        write_json_atomic(out / STATE_FILE, state)
    except OSError:
        pass


def current_outputs(out: Path, fingerprint: str):
    """``(runset, results path, report paths, collection paths)`` of the outputs in ``out``
    when they were written from ``fingerprint`` and every file is still there; else None."""
    from sparsescope.report.collection import CollectionPaths
    from sparsescope.report.write import ReportPaths
    from sparsescope.results.io import read_runset

    try:
        state = json.loads((out / STATE_FILE).read_text())
        if state.get("fingerprint") != fingerprint or not state.get("report"):
            return None
        report = _paths(ReportPaths, state["report"])
        collection = _paths(CollectionPaths, state["collection"]) if state["collection"] else None
        results = out / "results.json"
        runset = read_runset(results)
    except (OSError, ValueError, TypeError, KeyError, ResultsFormatError):
        return None
    files = [results, *_files(report), *(_files(collection) if collection else [])]
    if runset.run_id != state["run_id"] or not all(path.is_file() for path in files):
        return None
    return runset, results, report, collection


def _paths(kind, data: dict):
    """A ``ReportPaths`` or ``CollectionPaths`` from its ``to_dict()``."""
    fields = {}
    for name, value in data.items():
        if name == "skipped_figures":
            fields[name] = tuple((item["name"], item["reason"]) for item in value)
        elif name == "readings":
            fields[name] = dict(value)
        elif isinstance(value, list):
            fields[name] = tuple(Path(v) for v in value)
        else:
            fields[name] = Path(value)
    return kind(**fields)


def _files(paths) -> list[Path]:
    """Every file a report's paths name."""
    found = [paths.markdown, paths.html]
    for name in ("figures", "tables", "pages"):
        found += list(getattr(paths, name, ()))
    return found
