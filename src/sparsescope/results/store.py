"""SQLite store of every run: provenance columns, one row per case, and the full JSON.

Default location: ``$SPARSESCOPE_STORE`` if set, else ``<user cache dir>/sparsescope/
results.sqlite`` (platformdirs). ``runs`` has one row per run (the columns a query filters on
plus the whole RunSet as validated JSON); ``cases`` one row per case with its time and error,
so "every time of backend B on matrix M across runs" is one query. ``ceilings_cache`` holds the
CPU ceilings measured once per machine (:meth:`ResultsStore.save_ceilings`, used by
:mod:`sparsescope.results.ceilings_cache`); it is not the ``ceilings`` history table that
``sparsescope ceilings`` appends to in the same file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sparsescope.errors import ResultsFormatError, UnknownNameError, UsageError
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.results.io import (
    record_from_dict,
    record_to_dict,
    runset_from_dict,
    runset_to_dict,
)
from sparsescope.results.records import RunSet

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL,
    libraries TEXT NOT NULL, sparsescope_version TEXT NOT NULL, git_commit TEXT NOT NULL,
    command TEXT NOT NULL, suite TEXT NOT NULL, scale REAL NOT NULL,
    schema_version INTEGER NOT NULL, json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cases (
    run_id TEXT NOT NULL REFERENCES runs(run_id), idx INTEGER NOT NULL, matrix TEXT NOT NULL,
    backend TEXT NOT NULL, op TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL,
    time_ms REAL, rel_err REAL, PRIMARY KEY (run_id, idx)
);
CREATE INDEX IF NOT EXISTS cases_by_matrix_backend ON cases(matrix, backend);
CREATE TABLE IF NOT EXISTS ceilings_cache (
    machine_key TEXT PRIMARY KEY, device TEXT NOT NULL, measured_utc TEXT NOT NULL,
    json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sweep_sources (
    ref TEXT PRIMARY KEY, identity TEXT NOT NULL, matrix_hash TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class StoredRun:
    """One row of ``runs`` (without the JSON)."""

    run_id: str
    created: str
    device: str
    driver: str
    sparsescope_version: str
    git_commit: str
    command: str
    suite: str
    scale: float
    case_count: int


@dataclass(frozen=True)
class StoredCase:
    """One row of ``cases``, with its run's time and device."""

    run_id: str
    created: str
    device: str
    matrix: str
    backend: str
    op: str
    outcome: str
    reason: str
    time_ms: float | None
    rel_err: float | None
    """Relative error against float64; None when the backend produced no output."""


def default_store_path() -> Path:
    """``$SPARSESCOPE_STORE``, else the user cache dir's ``sparsescope/results.sqlite``."""
    env = os.environ.get("SPARSESCOPE_STORE")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("sparsescope")) / "results.sqlite"


def _finite_or_none(value: float | None) -> float | None:
    # SQLite stores inf but not NaN (it becomes NULL anyway); keep inf, say NULL for NaN.
    return None if value is None or value != value else value


class StoreBusyError(ResultsFormatError):
    """The store is usable but could not be written or read just now: locked by another
    writer past the busy timeout, a full disk, an I/O error. Waiting, or writing later, may
    succeed (a sweep keeps its cases in memory meanwhile); exit code 5 when it is not."""


#: SQLite's result codes (``sqlite3.Error.sqlite_errorname``, first part) that say "not now"
#: rather than "not a results store".
_TRANSIENT = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR")


def _store_error(path: Path, exc: sqlite3.Error) -> ResultsFormatError:
    name = getattr(exc, "sqlite_errorname", "") or ""
    transient = name.startswith(_TRANSIENT) or (
        not name and any(w in str(exc) for w in ("locked", "busy", "disk is full", "disk I/O")))
    if transient:
        return StoreBusyError(f"{path}: results store not writable now ({exc})")
    return ResultsFormatError(f"{path}: not a usable results store ({exc})")


class ResultsStore:
    """Append-only store of RunSets in one SQLite file.

    ``timeout_s``: how long one call waits for another connection's lock (SQLite's busy
    timeout) before :class:`StoreBusyError`.
    """

    def __init__(self, path: str | os.PathLike | None = None, *,
                 timeout_s: float = 5.0) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.timeout_s = timeout_s

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=self.timeout_s)
        except (OSError, sqlite3.Error) as exc:
            raise ResultsFormatError(f"{self.path}: cannot open the results store ({exc})"
                                     ) from None
        try:
            _check_format(con, self.path)  # sweep cases (issue 15)
            con.executescript(_SCHEMA)
            _migrate(con)
            with con:  # one transaction: commit on success, roll back on error
                yield con
        except sqlite3.DatabaseError as exc:
            raise _store_error(self.path, exc) from None
        finally:
            con.close()

    def check_writable(self) -> None:
        """Open the store and write to it: what ``append`` will need, proved before a run
        measures anything.

        One transaction under the write lock (``BEGIN IMMEDIATE``) makes a table named for
        this process and call, writes a row, drops the table and commits, so the file and its
        journal are really written, and nothing is left behind. Concurrent starts each wait
        for the lock in turn (the connection's busy timeout) and never see each other's
        table: the shared ``write_probe`` made and dropped in autocommit raced ("no such
        table: write_probe" when another start dropped it first; issue 33).
        """
        name = f"write_probe_{os.getpid()}_{uuid.uuid4().hex}"
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            con.execute(f"CREATE TABLE {name} (x INTEGER)")
            con.execute(f"INSERT INTO {name} VALUES (1)")
            con.execute(f"DROP TABLE {name}")

    def append(self, runset: RunSet) -> None:
        """Store ``runset``: its provenance row, one row per case, and its full JSON."""
        prov = runset.provenance
        data = json.dumps(runset_to_dict(runset), allow_nan=False)
        with self._connect() as con:
            if con.execute("SELECT 1 FROM runs WHERE run_id = ?", (runset.run_id,)).fetchone():
                raise UsageError(f"run {runset.run_id!r} is already in {self.path}")
            con.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (runset.run_id, prov.created_utc, prov.device, prov.driver,
                 json.dumps(prov.libraries, sort_keys=True), prov.sparsescope_version,
                 prov.git_commit, prov.command, runset.suite, runset.scale,
                 runset.schema_version, data))
            con.executemany(
                "INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(runset.run_id, i, c.matrix, c.backend, c.op, c.outcome, c.reason,
                  _finite_or_none(c.time_ms),
                  _finite_or_none(c.correctness.rel_err if c.correctness else None))
                 for i, c in enumerate(runset.cases)])

    def runs(self) -> list[StoredRun]:
        """Every stored run, oldest first."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT r.run_id, r.created, r.device, r.driver, r.sparsescope_version, "
                "r.git_commit, r.command, r.suite, r.scale, "
                "(SELECT COUNT(*) FROM cases c WHERE c.run_id = r.run_id) "
                "FROM runs r ORDER BY r.created, r.rowid").fetchall()
        return [StoredRun(*row) for row in rows]

    def load(self, run_id: str) -> RunSet:
        """The stored RunSet, validated as a results file is."""
        with self._connect() as con:
            row = con.execute("SELECT json FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            known = [] if row else [r[0] for r in con.execute("SELECT run_id FROM runs")]
        if row is None:
            raise UnknownNameError("run", run_id, known)
        try:
            return runset_from_dict(json.loads(row[0]))
        except (ResultsFormatError, json.JSONDecodeError) as exc:
            raise ResultsFormatError(f"{self.path}, run {run_id}: {exc}") from None

    def cases(self, matrix: str | None = None, backend: str | None = None) -> list[StoredCase]:
        """Stored cases, optionally of one matrix and/or one backend, oldest run first."""
        where, params = [], []
        for column, value in (("c.matrix", matrix), ("c.backend", backend)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = ("SELECT c.run_id, r.created, r.device, c.matrix, c.backend, c.op, c.outcome, "
               "c.reason, c.time_ms, c.rel_err FROM cases c JOIN runs r USING (run_id)"
               + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY r.created, r.rowid, c.idx")
        with self._connect() as con:
            rows = con.execute(sql, params).fetchall()
        return [StoredCase(*row) for row in rows]

    def save_ceilings(self, key: str, ceilings: MeasuredCeilings) -> None:
        """Cache ``ceilings`` as the figures of machine ``key`` (see
        :func:`sparsescope.hardware.cpu_ceilings.machine_key`), replacing earlier ones."""
        data = json.dumps(record_to_dict(ceilings), sort_keys=True, allow_nan=False)
        with self._connect() as con:
            con.execute("INSERT OR REPLACE INTO ceilings_cache VALUES (?, ?, ?, ?)",
                        (key, ceilings.device, ceilings.measured_utc, data))

    def load_ceilings(self, key: str) -> MeasuredCeilings | None:
        """The cached ceilings of machine ``key``; None when none are cached. A row that no
        longer reads as a :class:`MeasuredCeilings` is a :class:`ResultsFormatError`."""
        with self._connect() as con:
            row = con.execute("SELECT json FROM ceilings_cache WHERE machine_key = ?",
                              (key,)).fetchone()
        if row is None:
            return None
        try:
            return record_from_dict(json.loads(row[0]), MeasuredCeilings, "ceilings")
        except (ResultsFormatError, json.JSONDecodeError) as exc:
            raise ResultsFormatError(f"{self.path}, cached ceilings of {key!r}: {exc}"
                                     ) from None

    # ------------------------------------------------------------ sweep cases (issue 15)

    def done_keys(self, device: str, version: str,
                  outcomes: tuple[str, ...] = ("ok", "skipped", "failed")) -> set[tuple]:
        """Keys ``(matrix_hash, backend, op, params)`` of the sweep cases stored for
        ``device`` and sparsescope ``version`` whose outcome is one of ``outcomes``."""
        marks = ", ".join("?" * len(outcomes))
        with self._connect() as con:
            rows = con.execute(
                "SELECT matrix_hash, backend, op, params FROM sweep_cases WHERE device = ? "
                f"AND version = ? AND outcome IN ({marks})",
                (device, version, *outcomes)).fetchall()
        return {tuple(row) for row in rows}

    def append_sweep_case(self, matrix_hash: str, matrix: str, backend: str, op: str,
                          params: str, device: str, version: str, outcome: str,
                          case_json: str, replaces: str | None = None) -> None:
        """Store one finished sweep case at once (its own transaction), replacing an earlier
        row of the same key (a failed case run again with ``--retry-failed``); ``replaces``:
        another matrix hash whose row of the same backend, op, parameters, device and version
        this case supersedes (see :meth:`append_sweep_cases`)."""
        self.append_sweep_cases([((matrix_hash, matrix, backend, op, params, device, version,
                                   outcome, case_json), replaces)])

    def append_sweep_cases(self, rows: Sequence[tuple[tuple, str | None]]) -> None:
        """Store finished sweep cases in one transaction: each ``(row, replaces)``, ``row`` as
        :meth:`append_sweep_case` takes it, ``replaces`` a matrix hash (or None) whose row of
        the same backend, op, parameters, device and version is deleted: the case of a matrix
        whose probe failed (its worker died) was stored under the file's hash
        (``sweep.sources.source_hash``); once it runs under its content hash, the failed row
        goes (it was kept beside the new one: 47 rows for 30 cases; issue 33)."""
        with self._connect() as con:
            for row, replaces in rows:
                if replaces and replaces != row[0]:
                    con.execute("DELETE FROM sweep_cases WHERE matrix_hash = ? AND backend = ? "
                                "AND op = ? AND params = ? AND device = ? AND version = ?",
                                (replaces, *row[2:7]))
                con.execute("INSERT OR REPLACE INTO sweep_cases "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def failed_probe_keys(self, device: str, version: str) -> set[tuple]:
        """``(matrix name, backend, op, params)`` of the sweep cases of ``device`` and
        ``version`` stored under a file's hash (``file-...``: their matrix could not be
        probed), which a case run later under the content hash replaces."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT matrix, backend, op, params FROM sweep_cases WHERE device = ? "
                "AND version = ? AND matrix_hash LIKE 'file-%'", (device, version)).fetchall()
        return {tuple(row) for row in rows}

    def sweep_cases(self, device: str, version: str) -> dict[tuple, str]:
        """Key ``(matrix_hash, backend, op, params)`` -> the stored JSON of every sweep case
        of ``device`` and ``version``."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT matrix_hash, backend, op, params, json FROM sweep_cases "
                "WHERE device = ? AND version = ?", (device, version)).fetchall()
        return {tuple(row[:4]): row[4] for row in rows}

    def source_hashes(self) -> dict[str, tuple[str, str]]:
        """Sweep source reference -> ``(identity, matrix content hash)`` remembered by
        :meth:`remember_sources`."""
        with self._connect() as con:
            rows = con.execute("SELECT ref, identity, matrix_hash FROM sweep_sources").fetchall()
        return {ref: (identity, digest) for ref, identity, digest in rows}

    def remember_sources(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Remember each ``(ref, identity, matrix_hash)`` of a sweep source that was loaded
        (one row per reference, the latest): a sweep resumed while the source has the same
        identity (its file unchanged, ``sweep.source_facts``) knows its content hash, and so
        its stored cases, without loading it (issue 35)."""
        with self._connect() as con:
            con.executemany("INSERT OR REPLACE INTO sweep_sources VALUES (?, ?, ?)", rows)


#: ``PRAGMA user_version`` of the store: 0 = runs, cases and ceilings_cache only; 2 = with
#: ``sweep_cases`` (issue 15). An older file is migrated in place when opened.
STORE_VERSION = 2

_SWEEP_SCHEMA = """
CREATE TABLE IF NOT EXISTS sweep_cases (
    matrix_hash TEXT NOT NULL, matrix TEXT NOT NULL, backend TEXT NOT NULL, op TEXT NOT NULL,
    params TEXT NOT NULL, device TEXT NOT NULL, version TEXT NOT NULL, outcome TEXT NOT NULL,
    json TEXT NOT NULL, PRIMARY KEY (matrix_hash, backend, op, params, device, version)
);
"""


def _check_format(con: sqlite3.Connection, path: Path) -> None:
    """Refuse a store written by a newer sparsescope (its tables may mean something else)."""
    version = con.execute("PRAGMA user_version").fetchone()[0]
    if version > STORE_VERSION:
        raise ResultsFormatError(
            f"{path}: results store format {version} is newer than this sparsescope reads "
            f"(format {STORE_VERSION}); upgrade sparsescope, or set SPARSESCOPE_STORE to "
            f"another file")


def _migrate(con: sqlite3.Connection) -> None:
    """Bring an older store to :data:`STORE_VERSION` in place (its runs kept)."""
    if con.execute("PRAGMA user_version").fetchone()[0] < STORE_VERSION:
        con.executescript(_SWEEP_SCHEMA + f"PRAGMA user_version = {STORE_VERSION};")
