"""``sparsescope sweep``: a whole collection case by case, resumable through the store.

Each case runs on a worker (:mod:`sparsescope.sweep`); this module plans the tasks, appends
each finished case to the store, and writes one RunSet with its reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
                "client_max_rss_mb": round(max_rss_mb(), 1), "left": e.left}


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
    ``Group/Name.tar.gz`` archives, ``suite:NAME[@SCALE]``), resumably.

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
    """
    from sparsescope.ops.registry import get_op, params_for
    from sparsescope.results.store import ResultsStore
    from sparsescope.sweep.sources import expand_sources
    from sparsescope.sweep.tasks import plan_tasks

    reset_peak_rss()
    get_op(op)
    params_list = params_for(op, op_params)
    chosen = _backends_and_variants(backends, variants, op)
    store = ResultsStore(store_path)
    out = _checked_outputs(out_dir, store)
    tasks = plan_tasks(expand_sources(list(sources)), chosen, op, params_list)
    timing = timing or TimingConfig()
    created = datetime.now(UTC).isoformat(timespec="seconds")
    context = device_context([getattr(b, "name", b) for b in chosen], True)
    if context.kind == "gpu":
        timing = replace(timing, clock="cuda-events")
    device = context.device_name
    keys, ran, stored, engine = _sweep_cases(store, tasks, device, timing, retry_failed,
                                             progress, on_case, dict(
        cluster=cluster, scheduler=scheduler, workers=workers, case_timeout_s=case_timeout_s,
        seed=seed, quiet=quiet, time_limit_s=time_limit_s))
    start = time.perf_counter()
    runset = _sweep_runset(store, keys, device, context, timing, chosen, command, created)
    written = _write_outputs(runset, out, False, progress)
    collection = _collection_report(written.runset, out)
    return SweepOutput(runset=written.runset, results_path=written.results_path,
                       report_paths=written.report_paths, store_path=store.path,
                       ran=ran, stored=stored, collection_report=collection, engine=engine,
                       report_s=time.perf_counter() - start)


def _sweep_cases(store, tasks, device: str, timing, retry_failed: bool, progress: bool,
                 on_case, options: dict) -> tuple[list[tuple], int, int, object]:
    """Run the tasks not stored yet, appending each case to the store as it finishes: (the
    sweep's keys in plan order, cases run now, cases found stored, the engine's stats)."""
    import json

    from sparsescope import __version__
    from sparsescope.progress import CaseProgress
    from sparsescope.results.io import record_to_dict
    from sparsescope.sweep.engine import execute
    from sparsescope.sweep.tasks import task_key

    outcomes = ("ok", "skipped") if retry_failed else ("ok", "skipped", "failed")
    done = store.done_keys(device, __version__, outcomes)
    order = {id(task): i for i, task in enumerate(tasks)}
    keys: dict[tuple, int] = {}
    counts = {"ran": 0, "stored": 0, "failed": 0}
    with CaseProgress(len(tasks), progress) as bar:
        report = bar.wrap(on_case)

        def record(result) -> None:
            key = task_key(result.task, result.matrix_hash)
            keys.setdefault(key, order[id(result.task)])
            if result.stored:
                counts["stored"] += 1
                bar.advance(f"{result.task.source.name} {result.task.backend} (stored)")
                return
            case = result.case
            data = {"matrix": record_to_dict(result.matrix) if result.matrix else None,
                    "case": record_to_dict(case)}
            store.append_sweep_case(*key[:1], case.matrix, *key[1:], device, __version__,
                                    case.outcome, json.dumps(data, allow_nan=False))
            counts["ran"] += 1
            counts["failed"] += case.outcome == "failed"
            report(case)
            if counts["failed"]:
                bar.note(f"{case.matrix} {case.backend}; {counts['failed']} failed")

        bar.note("probing the first matrix")
        try:
            engine = execute(tasks, timing=timing, on_result=record, done=done, **options)
        except KeyboardInterrupt:
            from sparsescope.errors import Interrupted

            raise Interrupted(
                f"interrupted: {counts['ran']} case(s) run and stored in {store.path} "
                f"({counts['stored']} found there before), {len(tasks) - len(keys)} not run; "
                "run the same command again to resume") from None
    return sorted(keys, key=keys.__getitem__), counts["ran"], counts["stored"], engine


def _sweep_runset(store, keys, device: str, context, timing, backends, command,
                  created: str) -> RunSet:
    """One RunSet of the sweep's cases, each read back from the store (the ones of earlier
    calls included), its matrices once each."""
    import json

    from sparsescope import __version__
    from sparsescope.results.io import record_from_dict

    rows = store.sweep_cases(device, __version__)
    matrices: dict[str, MatrixRecord] = {}
    cases: list[CaseResult] = []
    for i, key in enumerate(keys):
        data = json.loads(rows[key])
        cases.append(record_from_dict(data["case"], CaseResult, f"sweep case {i}"))
        if data["matrix"] is not None:
            record = record_from_dict(data["matrix"], MatrixRecord, f"sweep matrix {i}")
            matrices.setdefault(record.name, record)
    return _assemble_runset("sweep", 1.0, matrices.values(), cases, backends=backends,
                            device=context, timing=timing, command=command,
                            created=created)


def _collection_report(runset: RunSet, out: Path) -> object:
    """The collection report of a sweep (``report.collection``)."""
    from sparsescope.report.collection import write_collection_report

    return write_collection_report(runset, out)
