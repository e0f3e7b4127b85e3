"""``sparsescope sweep``: a whole collection case by case, resumable through the store.

Each case runs on a worker (:mod:`sparsescope.sweep`); this module plans the tasks, appends
each finished case to the store, and writes one RunSet with its reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from sparsescope.api._rss import max_rss_mb, reset_peak_rss
from sparsescope.api.runs import (
    _assemble_runset,
    _backends_and_variants,
    _checked_outputs,
    _write_outputs,
    device_context,
)
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet
from sparsescope.timing.types import TimingConfig


@dataclass(frozen=True)
class SweepOutput:
    """What :func:`sweep` produced."""

    runset: RunSet
    """Every case of the sweep: run now or read back from the store."""
    results_path: Path
    report_paths: object
    """``sparsescope.report.write.ReportPaths``."""
    store_path: Path
    ran: int
    """Cases run (or found unreadable) by this call."""
    stored: int
    """Cases already in the store, not run again."""
    collection_report: object = None
    """What ``report.collection.write_collection_report`` returned; None without it."""
    engine: object = None
    """``sweep.engine.EngineStats``: workers, their busy time, wall time, overhead, and the
    tasks left when the time limit was reached."""
    report_s: float = 0.0
    """Seconds spent reading the cases back and writing results and reports."""
    outputs_kept: bool = False
    """Nothing ran and ``out_dir`` already held the results and reports of exactly these
    cases: they were kept, not written again (``api._sweep_resume``)."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """What may make this sweep's numbers less trustworthy (CPU timings sharing cores)."""
        shared = getattr(self.engine, "shared_cores", "")
        return (shared,) if shared else ()

    def throughput(self) -> dict:
        """Cases per minute of wall time and where the time went (the ``--json`` fields)."""
        e = self.engine
        if e is None:
            return {}
        return {"workers": e.workers, "wall_s": round(e.wall_s, 6),
                "busy_s": round(e.busy_s, 6), "client_s": round(e.client_s, 6),
                "report_s": round(self.report_s, 6),
                "cases_per_min": (round(60 * self.ran / e.wall_s, 2)
                                  if self.ran and e.wall_s > 0 else None),
                "overhead_pct": round(100 * e.overhead, 2),
                "client_max_rss_mb": round(max_rss_mb(), 1), "left": e.left,
                "aborted": e.aborted, "cluster": e.cluster, "matrices_loaded": e.probes,
                "matrices_prefetched": e.prefetched, "shared_cores": e.shared_cores,
                "outputs_rewritten": not self.outputs_kept,
                "first_use_s": round(e.first_use_s, 6),
                "first_use_max_s": round(max((float(r.get("seconds", 0.0))
                                              for r in e.first_use), default=0.0), 6),
                "first_use": e.first_use, "batched_tasks": e.batched}


def sweep(sources: Sequence[str], *, out_dir: str | Path, backends: Sequence[str] | None = None,
          op: str = "spmv", op_params: dict[str, Sequence] | None = None,
          cluster: str | None = None, scheduler: str | None = None, workers: int | None = None,
          timing: TimingConfig | None = None, retry_failed: bool = False,
          progress: bool = False, case_timeout_s: float | None = None,
          on_case: Callable[[CaseResult], None] | None = None, seed: int = 0,
          command: str = "sparsescope.api.sweep", quiet: bool = False,
          variants: Sequence = (), store_path: str | Path | None = None,
          time_limit_s: float | None = None) -> SweepOutput:
    """Run every backend on every matrix of ``sources`` (folders, globs, files, SuiteSparse
    ``Group/Name.tar.gz`` archives, ``suite:NAME[#ENTRY][@SCALE]``), resumably.

    Each finished case is appended at once to the store's ``sweep_cases`` table, keyed by
    (matrix content hash, backend, op, parameters, device, sparsescope version); a re-run skips
    the keys stored (``retry_failed``: runs the failed ones again). ``cluster`` / ``scheduler``
    / ``workers``: see :mod:`sparsescope.sweep.engine` (in process by default, no Dask).
    ``out_dir/results.json`` holds one RunSet of every case of the sweep (stored ones
    included), with the normal report beside it; the sweep is not appended to the ``runs``
    table (its cases are in ``sweep_cases``). When ``sparsescope.report.collection`` is
    installed, its ``write_collection_report(runset, out_dir)`` writes the collection report.
    ``on_case``: called with each case run now, as it finishes (progress lines).
    ``variants``: kernel variants (:class:`~sparsescope.backends.runner.BackendChoice`) run
    after the backends (``backends=[]`` with variants runs them alone). ``store_path``: the
    store holding the sweep's cases (default: ``SPARSESCOPE_STORE`` or the user's store).
    ``time_limit_s``: stop submitting cases after this long (a batch job's limit); the results
    and reports hold what is done, ``SweepOutput.left`` counts the rest, a re-run resumes.

    Two sources with the same content are measured once: each keeps its own cases under its
    own name and path in the results and reports (the store holds one row per content). A
    resumed sweep loads no matrix whose cases are all stored (the store remembers each file's
    content hash while the file is unchanged), starts no cluster when nothing is left, and
    keeps the results and reports of ``out_dir`` when they hold exactly these cases.
    """
    from sparsescope.api._sweep_resume import SourceMemo
    from sparsescope.ops.registry import get_op, params_for
    from sparsescope.results.store import ResultsStore
    from sparsescope.sweep.cluster import check_arguments
    from sparsescope.sweep.first_use import plan_for as first_use_plan
    from sparsescope.sweep.sources import expand_sources
    from sparsescope.sweep.tasks import plan_tasks

    reset_peak_rss()
    check_arguments(cluster, scheduler, workers)  # before anything is planned or written
    get_op(op)
    params_list = params_for(op, op_params)
    chosen = _backends_and_variants(backends, variants, op)
    store = ResultsStore(store_path)
    out = _checked_outputs(out_dir, store)
    from sparsescope._outputs import out_dir_lock

    with out_dir_lock(out):  # one writer per folder, from before sweeping to the last write
        matrix_sources = expand_sources(list(sources))
        tasks = plan_tasks(matrix_sources, chosen, op, params_list)
        timing = timing or TimingConfig()
        created = datetime.now(UTC).isoformat(timespec="seconds")
        context = device_context([getattr(b, "name", b) for b in chosen], True)
        if context.kind == "gpu":
            timing = replace(timing, clock="cuda-events")
        # the store keys a case by device: a throughput case is another measurement than a
        # latency one of the same matrix and backend, so a resume in one mode never reuses
        # the other's (latency keeps the plain name: stores written before the modes still
        # resume)
        device = (context.device_name if timing.mode == "latency"
                  else f"{context.device_name} ({timing.mode})")
        writer = _CaseWriter(store)
        memo = SourceMemo(store, matrix_sources)
        plan = first_use_plan(context, chosen)
        with _sigterm_as_interrupt():
            entries, ran, stored, engine, stop = _sweep_cases(
                store, writer, tasks, device, timing, retry_failed, progress, on_case, dict(
                    cluster=cluster, scheduler=scheduler, workers=workers,
                    case_timeout_s=case_timeout_s, seed=seed, quiet=quiet,
                    time_limit_s=time_limit_s, known=memo.known, on_probe=memo.learnt,
                    first_use_plan=plan))
        start = time.perf_counter()
        # cases kept in memory while the store was locked (a stopped sweep waits less)
        writer.flush(STORE_WAIT_S if stop is None else min(STORE_WAIT_S, 2.0))
        memo.flush()
        rows = _case_rows(store, entries, device, writer.pending_json())
        fingerprint = _outputs_fingerprint(rows, device)
        if stop is None and not ran and not writer.pending:
            kept = _kept_outputs(out, fingerprint, store, ran, stored, engine, start)
            if kept is not None:
                return kept
        runset = _sweep_runset(rows, context, timing, chosen, command, created)
        if stop is not None:
            _stopped(stop, runset, out, store, writer, ran, len(tasks) - len(entries))
        written = _write_outputs(runset, out, False, progress)
        collection = _collection_report(written.runset, out)
        if not writer.pending:
            from sparsescope.api._sweep_resume import mark_outputs

            mark_outputs(out, fingerprint, written.runset.run_id, written.report_paths,
                         collection)
        if writer.pending:
            from sparsescope.errors import StoreWriteError

            raise StoreWriteError(
                f"{len(writer.pending)} case(s) could not be stored in {store.path} "
                f"({writer.error}); every case of the sweep is in {written.results_path} and its "
                "report; run the same command again (the store writable) to store them")
        return SweepOutput(runset=written.runset, results_path=written.results_path,
                           report_paths=written.report_paths, store_path=store.path,
                           ran=ran, stored=stored, collection_report=collection, engine=engine,
                           report_s=time.perf_counter() - start)


#: How long one finished case waits, with back-off, for a store another writer has locked
#: (or a full disk) before it is kept in memory; later cases try it again at once, and the
#: end of the sweep waits this long again before writing ``results.json`` with every case
#: and reporting those it could not store (exit 10).
STORE_WAIT_S = 30.0


class Terminated(KeyboardInterrupt):
    """SIGTERM (what a batch scheduler sends before it kills a job), raised where Ctrl-C's
    ``KeyboardInterrupt`` would be, so that a sweep stops the same way."""


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in the main thread while the sweep runs (not
    installed from another thread, where Python cannot set a handler)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame) -> None:
        signal.signal(signal.SIGTERM, previous)  # a second SIGTERM is not intercepted
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, previous)


def _stopped(stop: KeyboardInterrupt, runset: RunSet, out: Path, store, writer, ran: int,
             left: int) -> None:
    """Ctrl-C or SIGTERM stopped the sweep: ``results.json`` of what finished, then the
    :class:`~sparsescope.errors.Interrupted` error (exit 130, or 143 for SIGTERM) saying
    what was stored and how to resume."""
    from sparsescope.errors import Interrupted
    from sparsescope.results.io import write_runset

    try:
        results = f"the cases finished are in {write_runset(out / 'results.json', runset)}"
    except OSError as exc:
        results = f"results.json could not be written ({exc.strerror or exc})"
    what = "terminated (SIGTERM)" if isinstance(stop, Terminated) else "interrupted"
    unstored = (f"; {len(writer.pending)} of them could not be stored ({writer.error}) and "
                "will run again" if writer.pending else "")
    error = Interrupted(
        f"{what}: {ran} case(s) run now{unstored}, stored in {store.path}; {left} not run; "
        f"{results} (the report is written when the sweep completes); run the same command "
        "again to resume")
    if isinstance(stop, Terminated):
        error.exit_code = 143  # 128 + SIGTERM, what the batch scheduler expects
    raise error from None


class _CaseWriter:
    """Appends each finished case to the store; a store locked by another writer (or full)
    is waited for with back-off (:data:`STORE_WAIT_S`), then the case is kept in memory and
    written with the next one, or at the end (issue 33: a store locked past SQLite's 5 s
    busy timeout aborted the sweep with exit 5 and lost the case in flight)."""

    def __init__(self, store) -> None:
        self.store = store
        self.pending: list[tuple[tuple, str | None]] = []
        self.error = ""

    def put(self, row: tuple, replaces: str | None) -> None:
        backlog = bool(self.pending)
        self.pending.append((row, replaces))
        # with a backlog the store was locked a moment ago: one short try, the sweep goes on
        self.flush(0.0 if backlog else STORE_WAIT_S)

    def flush(self, wait_s: float) -> bool:
        """Write every pending case in one transaction, retrying for up to ``wait_s`` (at
        least one try); True when nothing is left pending."""
        from sparsescope.results.store import ResultsStore, StoreBusyError

        deadline = time.monotonic() + wait_s
        pause = 0.05
        while self.pending:
            left = deadline - time.monotonic()
            store = ResultsStore(self.store.path, timeout_s=max(0.05, min(5.0, left)))
            try:
                store.append_sweep_cases(self.pending)
            except StoreBusyError as exc:
                self.error = str(exc).replace(f"{self.store.path}: ", "")
                if time.monotonic() + pause > deadline:
                    return False
                time.sleep(pause)
                pause = min(2 * pause, 2.0)
                continue
            self.pending.clear()
        return True

    def pending_json(self) -> dict[tuple, str]:
        """Key ``(matrix_hash, backend, op, params)`` -> JSON of every case not stored yet."""
        return {(row[0], *row[2:5]): row[8] for row, _ in self.pending}


def _sweep_cases(store, writer: _CaseWriter, tasks, device: str, timing, retry_failed: bool,
                 progress: bool, on_case, options: dict
                 ) -> tuple[list[tuple], int, int, object, KeyboardInterrupt | None]:
    """Run the tasks not stored yet, appending each case to the store as it finishes
    (through ``writer``): (the sweep's ``(key, task)`` in plan order, one per task reported,
    cases run now, cases found stored, the engine's stats, the Ctrl-C or SIGTERM that stopped
    it, or None)."""
    import json

    from sparsescope import __version__
    from sparsescope.progress import CaseProgress
    from sparsescope.results.io import record_to_dict
    from sparsescope.sweep.engine import execute
    from sparsescope.sweep.sources import source_hash
    from sparsescope.sweep.tasks import task_key

    outcomes = ("ok", "skipped") if retry_failed else ("ok", "skipped", "failed")
    done = store.done_keys(device, __version__, outcomes)
    # cases stored under a file's hash (its probe failed): replaced once they run under the
    # matrix's content hash; a file is hashed again only when its name has such a row
    by_file = store.failed_probe_keys(device, __version__)
    file_hashes: dict[object, str] = {}

    def replaced(task, key: tuple) -> str | None:
        if key[0].startswith("file-") or (task.source.name, *key[1:]) not in by_file:
            return None
        if task.source not in file_hashes:
            file_hashes[task.source] = source_hash(task.source)
        return file_hashes[task.source]

    order = {id(task): i for i, task in enumerate(tasks)}
    entries: dict[int, tuple[tuple, object]] = {}  # plan index -> (key, task)
    counts = {"ran": 0, "stored": 0, "failed": 0}
    with CaseProgress(len(tasks), progress) as bar:
        report = bar.wrap(on_case)

        def record(result) -> None:
            key = task_key(result.task, result.matrix_hash)
            if result.stored:  # stored earlier, or now for another file of the same content
                entries[order[id(result.task)]] = (key, result.task)
                counts["stored"] += 1
                bar.advance(f"{result.task.source.name} {result.task.backend} (stored)")
                return
            case = result.case
            data = {"matrix": record_to_dict(result.matrix) if result.matrix else None,
                    "case": record_to_dict(case)}
            writer.put((*key[:1], case.matrix, *key[1:], device, __version__, case.outcome,
                        json.dumps(data, allow_nan=False)), replaced(result.task, key))
            # counted once written (or kept by the writer): a Ctrl-C inside the write leaves it
            # to the re-run, never in results.json without its row
            entries[order[id(result.task)]] = (key, result.task)
            counts["ran"] += 1
            counts["failed"] += case.outcome == "failed"
            report(case)
            if counts["failed"]:
                bar.note(f"{case.matrix} {case.backend}; {counts['failed']} failed")

        bar.note("probing the first matrix")
        engine, stop = None, None
        try:
            engine = execute(tasks, timing=timing, on_result=record, done=done, **options)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
            stop = exc
    return ([entries[i] for i in sorted(entries)], counts["ran"], counts["stored"], engine,
            stop)


def _case_rows(store, entries, device: str, pending: dict[tuple, str] | None = None
               ) -> list[tuple[str, str, str]]:
    """``(matrix name, matrix source, stored JSON)`` of each ``(key, task)`` of the sweep, in
    order: read back from the store (the cases of earlier calls included) or, for ``pending``
    ones (key -> JSON, not stored yet), from memory. The name and source are the task's own:
    a case stored for another file of the same content, or for this file under an earlier
    name, is reported under this one (issue 33)."""
    from sparsescope import __version__

    rows = {**_read_with_backoff(lambda: store.sweep_cases(device, __version__)),
            **(pending or {})}
    return [(task.source.name, _own_source(task.source), rows[key]) for key, task in entries]


def _own_source(src) -> str:
    """What a worker records as the source of ``src``'s matrix (``Matrix.source``): the path
    of a file (as ``read_matrix`` writes it), the reference of an archive or a SuiteSparse
    matrix; empty for a generated one (its record's own source is kept)."""
    if src.kind in ("file", "dlmc"):
        return str(Path(src.ref))
    return "" if src.kind == "suite" else src.ref


def _sweep_runset(rows: list[tuple[str, str, str]], context, timing, backends, command,
                  created: str) -> RunSet:
    """One RunSet of the sweep's cases (:func:`_case_rows`), each under its own matrix name,
    its matrices once each, with their own name and source."""
    import json

    from sparsescope.results.io import record_from_dict

    matrices: dict[str, MatrixRecord] = {}
    cases: list[CaseResult] = []
    for i, (name, source, text) in enumerate(rows):
        data = json.loads(text)
        case = record_from_dict(data["case"], CaseResult, f"sweep case {i}")
        cases.append(case if case.matrix == name else replace(case, matrix=name))
        if data["matrix"] is not None and name not in matrices:
            record = record_from_dict(data["matrix"], MatrixRecord, f"sweep matrix {i}")
            matrices[name] = replace(record, name=name, source=source or record.source)
    return _assemble_runset("sweep", 1.0, matrices.values(), cases, backends=backends,
                            device=context, timing=timing, command=command,
                            created=created)


def _outputs_fingerprint(rows: list[tuple[str, str, str]], device: str) -> str:
    from sparsescope.api._sweep_resume import outputs_fingerprint

    return outputs_fingerprint(rows, device)


def _kept_outputs(out: Path, fingerprint: str, store, ran: int, stored: int, engine,
                  start: float) -> SweepOutput | None:
    """The sweep's output when nothing ran and ``out`` already holds the results and reports
    of exactly these cases (kept as they are), else None."""
    from sparsescope.api._sweep_resume import current_outputs

    current = current_outputs(out, fingerprint)
    if current is None:
        return None
    runset, results_path, report_paths, collection = current
    return SweepOutput(runset=runset, results_path=results_path, report_paths=report_paths,
                       store_path=store.path, ran=ran, stored=stored,
                       collection_report=collection, engine=engine,
                       report_s=time.perf_counter() - start, outputs_kept=True)


def _read_with_backoff(read: Callable[[], dict]) -> dict:
    """``read()``, tried again with back-off for up to :data:`STORE_WAIT_S` while the store
    is busy (another writer committing)."""
    from sparsescope.results.store import StoreBusyError

    deadline = time.monotonic() + STORE_WAIT_S
    pause = 0.05
    while True:
        try:
            return read()
        except StoreBusyError:
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(2 * pause, 2.0)


def _collection_report(runset: RunSet, out: Path) -> object:
    """The collection report of a sweep (``report.collection``)."""
    from sparsescope.report.collection import write_collection_report

    return write_collection_report(runset, out)
