"""The Python API behind the CLI: run a suite end to end, re-render a report.

``run`` is the main job: matrices in, every backend run and checked against float64, timed with
the one protocol, results written atomically as versioned JSON, appended to the results store,
and the report written.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from sparsescope.errors import UsageError
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet
from sparsescope.timing.types import TimingConfig
from sparsescope.whatif import what_if as what_if  # the cross-GPU what-if (re-export)


@dataclass(frozen=True)
class RunOutput:
    """What :func:`run` produced."""

    runset: RunSet
    results_path: Path
    report_paths: object
    """``sparsescope.report.write.ReportPaths``."""
    store_path: Path | None
    store_error: str = ""
    """Why appending to the store failed after the results were written ("" when it worked
    or no store was asked for); the results and report are safe in their folder."""


def _matrices(suite: str | None, files: Sequence[str], scale: float, seed: int, strict: bool):
    """(count, iterator of Matrix) for a suite or a list of files, loaded one at a time."""
    from sparsescope import matrices

    if files:
        return len(files), (matrices.read_matrix(f, strict=strict) for f in files)
    entries = matrices.suite_entries(suite, scale=scale)
    return len(entries), matrices.load_suite(suite, scale=scale, seed=seed)


def _device(backends: Sequence[str], store: bool = True):
    """(DeviceSpec, MeasuredCeilings, driver) of the device that will run the backends.

    A GPU backend on a machine with a GPU: the spec table's entry for the detected GPU (or a
    spec built from the device query), ceilings measured on it now, the driver version.
    Otherwise the host CPU with its ceilings, cached per machine in the store unless ``store``
    is False (GPU backends then skip as unavailable).
    When the GPU ceilings cannot be measured (no CuPy), the run goes on with an empty
    ceilings record whose ``method`` says why.
    """
    from sparsescope.backends.registry import get_backend
    from sparsescope.errors import SparsescopeError
    from sparsescope.hardware import detect
    from sparsescope.hardware.types import MeasuredCeilings
    from sparsescope.results.ceilings_cache import lookup_cpu_ceilings

    kinds = {get_backend(name).capability.device for name in backends}
    if "gpu" in kinds:
        gpu = detect.detect_gpu()
        if gpu is not None:
            from sparsescope.hardware.gpu_ceilings import measure_gpu_ceilings

            spec = detect.spec_for_detected(gpu)
            if gpu.l2_bytes and gpu.l2_bytes != spec.l2_bytes:
                # the model and the flush decision use the L2 the device reports
                spec = replace(spec, l2_bytes=gpu.l2_bytes, sources={
                    **spec.sources, "l2_bytes": f"queried from the device ({gpu.library}); "
                                                f"the table says {spec.l2_bytes:,} B"})
            try:
                ceilings = measure_gpu_ceilings()
            except SparsescopeError as exc:
                ceilings = MeasuredCeilings(device=gpu.name,
                                            method={"not_measured": str(exc)})
            return spec, ceilings, gpu.driver
    # best of several trials, cached per machine in the store (stable % of peak across runs);
    # measured afresh when the run keeps away from the store
    ceilings = lookup_cpu_ceilings(use_store=store).ceilings
    return detect.cpu_spec(ceilings), ceilings, ""


def _choose_backends(backends: Sequence[str] | None, op: str = "spmv") -> list[str]:
    """The backends to run: the given names; ``all`` (alone or among them) expands to every
    backend of ``op`` for the present device (GPU backends when a GPU answers, else CPU
    ones); None means the op's defaults for the present device. A name of another op's
    backend is a :class:`UsageError` here, before anything is measured."""
    from sparsescope import registry
    from sparsescope.backends.registry import default_backends, device_backends
    from sparsescope.hardware.detect import gpu_available

    kind = "gpu" if gpu_available() else "cpu"
    if backends is None:
        return default_backends(kind, op)
    chosen: list[str] = []
    for name in backends:
        names = device_backends(kind, op) if name == "all" else [name]
        if name != "all" and registry.backend_op(name) != op:
            raise UsageError(f"backend {name!r} implements op {registry.backend_op(name)!r}, "
                             f"not {op!r}; backends for {op}: "
                             f"{', '.join(registry.backend_names(op))}")
        chosen += [n for n in names if n not in chosen]
    if not chosen:
        raise UsageError("no backend to run")
    return chosen


def _backends_and_variants(backends: Sequence[str] | None, variants: Sequence, op: str) -> list:
    """The backends (default: all that suit the machine, unless only variants are given),
    then the variants."""
    return [*(_choose_backends(backends, op) if backends or not variants else []),
            *_checked_variants(variants, op)]


def _checked_variants(variants: Sequence, op: str) -> list:
    """The variants, each of a backend of ``op`` (a :class:`UsageError` before measuring)."""
    from sparsescope import registry

    for choice in variants:
        if registry.backend_op(choice.name) != op:
            raise UsageError(f"variant {choice.result_name!r} is a backend of op "
                             f"{registry.backend_op(choice.name)!r}, not {op!r}")
    return list(variants)


def run(*, suite: str | None = "seed6", files: Sequence[str] = (), scale: float = 1.0,
        backends: Sequence[str] | None = None, out_dir: str | Path = "out",
        timing: TimingConfig | None = None, latency_ns: float | None = None,
        reference_gpu: str = "H200", seed: int = 0, strict: bool = False,
        store: bool = True, command: str = "sparsescope.api.run", op: str = "spmv",
        op_params: dict[str, Sequence] | None = None,
        on_case: Callable[[CaseResult], None] | None = None,
        variants: Sequence = (), progress: bool = False) -> RunOutput:
    """Run every backend on every matrix of ``suite`` (or ``files``) and write results + report.

    ``on_case`` is called with each case as it finishes (progress lines). ``variants``:
    :class:`~sparsescope.backends.runner.BackendChoice` kernel variants run after the backends
    (``backends=[]`` with variants runs the variants alone). ``progress``: a bar over the
    cases on stderr when it is a terminal.

    Every output is checked before anything is measured (:mod:`sparsescope._outputs`): an
    unwritable ``out_dir`` or store is an :class:`~sparsescope.errors.OutputError`. A store
    that fails after the results are written leaves ``RunOutput.store_error`` set.
    Results go to ``out_dir/results.json`` (atomic), the report to ``out_dir/report.*``,
    ``out_dir/figures`` and ``out_dir/tables``; the run is appended to the results store.
    """
    from sparsescope.progress import CaseProgress

    backends = _checked_arguments(suite, files, scale, reference_gpu, op, op_params, backends,
                                  variants)
    out = _checked_outputs(out_dir, store)
    timing = timing or TimingConfig()
    created = datetime.now(UTC).isoformat(timespec="seconds")
    with CaseProgress(_case_count(suite, files, scale, op, op_params, backends),
                      progress) as bar:
        bar.note("measuring the device's ceilings")
        spec, ceilings, driver = _device([getattr(b, "name", b) for b in backends], store)
        if spec.kind == "gpu":
            timing = replace(timing, clock="cuda-events")  # GPU backends time with CUDA events
        bar.note("loading the first matrix")
        records, cases = _run_matrices(suite, files, scale, seed, strict, backends, op,
                                       op_params, timing, bar.wrap(on_case),
                                       model_device(spec, ceilings))
    runset = _assemble_runset(
        suite if not files else "files", scale, records, cases, backends=backends,
        device=(spec, ceilings, driver), timing=timing, command=command, created=created,
        latency_ns=latency_ns, reference_gpu=reference_gpu)
    return _write_outputs(runset, out, store, progress)


def _assemble_runset(suite: str, scale: float, records, cases, *, backends, device, timing,
                     command: str, created: str, latency_ns: float | None = None,
                     reference_gpu: str = "H200") -> RunSet:
    """The RunSet of a run or a sweep: provenance (the backends' library versions), the
    device ``(spec, ceilings, driver)``, and every timed case's model values."""
    from sparsescope.results.case_models import with_case_models
    from sparsescope.results.provenance import collect_provenance

    spec, ceilings, driver = device
    libraries: dict[str, str] = {}
    for name in dict.fromkeys(getattr(b, "name", b) for b in backends):
        libraries.update(_library_versions(name))
    provenance = collect_provenance(command, device=ceilings.device or spec.vendor_name,
                                    driver=driver, libraries=libraries)
    runset = RunSet(
        run_id=uuid.uuid4().hex[:12], suite=suite, scale=scale,
        provenance=_with_created(provenance, created), device=spec, ceilings=ceilings,
        timing=timing, matrices=tuple(records), cases=tuple(cases),
        latency_ns=_model_latency_ns(latency_ns, spec, ceilings, reference_gpu),
        reference_gpu=reference_gpu)
    return with_case_models(runset)


def _checked_arguments(suite, files, scale, reference_gpu, op, op_params, backends,
                       variants) -> list:
    """Every argument checked before anything is written or measured; the backends to run."""
    from sparsescope.hardware.specs import get_spec
    from sparsescope.ops.registry import get_op, params_for

    if not files and not suite:
        raise UsageError("give a suite (--suite) or matrix files")
    if not 0 < scale <= 1:
        raise UsageError(f"--scale must be in (0, 1] (a fraction of the suite), got {scale}")
    get_spec(reference_gpu)  # an unknown name
    get_op(op)  # an unknown op
    params_for(op, op_params)  # parameters the op does not take
    return _backends_and_variants(backends, variants, op)


def _checked_outputs(out_dir, store) -> Path:
    """The output folder and the store (True: the default one; a ``ResultsStore``: that one;
    False: none), proved writable before measuring."""
    from sparsescope._outputs import check_out_dir, check_store

    out = check_out_dir(out_dir)
    if store:
        check_store(None if store is True else store.path)
    return out


def model_device(spec, ceilings):
    """The device the time model predicts each case for: a GPU's rates (measured ceilings
    over the spec), or the reason a CPU run is not modelled."""
    from sparsescope.backends.runner import ModelDevice
    from sparsescope.model.predict import device_rates

    if spec.kind != "gpu":
        return ModelDevice(reason="the run is on a CPU: the time model is the GPU's")
    return ModelDevice(rates=device_rates(spec, ceilings), refine=sass_refiner(spec))


def sass_refiner(spec):
    """Kernel shape -> the shape with its own kernel's SASS figures for ``spec``'s
    architecture (the declared shape where no compiler or disassembler is present)."""
    from sparsescope.sass.kernel_shape import refine

    arch = "sm_" + spec.compute_capability.replace(".", "")
    return lambda shape: refine(shape, shape.cuda_source, arch)


def _run_matrices(suite, files, scale, seed, strict, backends, op, op_params, timing,
                  on_case, model=None) -> tuple[list[MatrixRecord], list[CaseResult]]:
    """Every matrix loaded one at a time, its statistics, and every case of it."""
    from sparsescope import matrices
    from sparsescope.backends.runner import run_matrix
    from sparsescope.ops.registry import params_for

    _, loaded = _matrices(suite, files, scale, seed, strict)
    records: list[MatrixRecord] = []
    cases: list[CaseResult] = []
    for matrix in loaded:
        stats = matrices.compute_stats(matrix.csr)
        records.append(MatrixRecord(name=matrix.name, source=matrix.source, kind=matrix.kind,
                                    analog_of=matrix.analog_of, stats=stats))
        params = params_for(op, op_params, suite=None if files else suite, matrix=matrix.name)
        cases += run_matrix(matrix, backends, op, params, config=timing, seed=seed,
                            strict=strict, on_case=on_case, model=model)
    return records, cases


def _case_count(suite, files, scale, op, op_params, backends) -> int:
    """How many cases the run will have (the progress bar's total), without loading a matrix."""
    from sparsescope import matrices
    from sparsescope.ops.registry import params_for

    if files:
        return len(files) * len(params_for(op, op_params)) * len(backends)
    names = [e.name for e in matrices.suite_entries(suite, scale=scale)]
    return sum(len(params_for(op, op_params, suite=suite, matrix=n)) for n in names) \
        * len(backends)


def _write_outputs(runset: RunSet, out: Path, store: bool, progress: bool = False
                   ) -> RunOutput:
    """results.json (atomic), the report, then the store; a store failure after the results
    are safe is reported in ``store_error``, not raised (nothing measured is lost)."""
    from sparsescope.errors import SparsescopeError
    from sparsescope.report.write import write_report
    from sparsescope.results.io import write_runset
    from sparsescope.results.store import ResultsStore

    results_path = write_runset(out / "results.json", runset)
    report_paths = write_report(runset, out, progress=progress)
    store_path, store_error = None, ""
    if store:
        results_store = ResultsStore()
        try:
            results_store.append(runset)
            store_path = results_store.path
        except (SparsescopeError, OSError) as exc:
            store_error = (f"appending to the results store {results_store.path} failed "
                           f"({exc}); the results are safe in {results_path}")
    return RunOutput(runset=runset, results_path=Path(results_path), report_paths=report_paths,
                     store_path=store_path, store_error=store_error)


def _model_latency_ns(given: float | None, spec, ceilings, reference_gpu: str) -> float:
    """DRAM latency for the model: the user's, else the one measured on this GPU by pointer
    chasing, else the spec table's estimate (the reference GPU's on a CPU run)."""
    from sparsescope.hardware.specs import get_spec

    if given is not None:
        return given
    if spec.kind != "gpu":
        return get_spec(reference_gpu).dram_latency_ns
    return ceilings.dram_latency_ns or spec.dram_latency_ns


def _library_versions(backend: str) -> dict[str, str]:
    from sparsescope.backends.registry import get_backend

    try:
        return dict(get_backend(backend).library_versions())
    except Exception as exc:  # a missing optional library must not sink the run's provenance
        return {backend: f"unavailable ({exc})"}


def _with_created(provenance, created: str):
    return replace(provenance, created_utc=created)


def report(results_json: str | Path, out_dir: str | Path):
    """Re-render the report of a saved run (each op's sections for its cases)."""
    from sparsescope.report.write import write_report
    from sparsescope.results.io import read_runset

    return write_report(read_runset(results_json), Path(out_dir))


# ----------------------------------------------------------------------------- sweep (issue 15)

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
                "client_max_rss_mb": round(_max_rss_mb(), 1), "left": e.left}


def _reset_peak_rss() -> bool:
    """Start this process's peak-memory count afresh (Linux: ``5`` to ``/proc/self/
    clear_refs`` resets ``VmHWM``), so the sweep reports its own peak, not an earlier one."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _max_rss_mb() -> float:
    """This process's peak resident memory since :func:`_reset_peak_rss`, MiB (``VmHWM``;
    where /proc is not there, ``ru_maxrss``: the peak since the process started)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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

    _reset_peak_rss()
    get_op(op)
    params_list = params_for(op, op_params)
    chosen = _backends_and_variants(backends, variants, op)
    store = ResultsStore(store_path)
    out = _checked_outputs(out_dir, store)
    tasks = plan_tasks(expand_sources(list(sources)), chosen, op, params_list)
    timing = timing or TimingConfig()
    created = datetime.now(UTC).isoformat(timespec="seconds")
    spec, ceilings, driver = _device([getattr(b, "name", b) for b in chosen], True)
    if spec.kind == "gpu":
        timing = replace(timing, clock="cuda-events")
    device = ceilings.device or spec.vendor_name
    keys, ran, stored, engine = _sweep_cases(store, tasks, device, timing, retry_failed,
                                             progress, on_case, dict(
        cluster=cluster, scheduler=scheduler, workers=workers, case_timeout_s=case_timeout_s,
        seed=seed, quiet=quiet, time_limit_s=time_limit_s))
    start = time.perf_counter()
    runset = _sweep_runset(store, keys, device, driver, spec, ceilings, timing, chosen, command,
                           created)
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


def _sweep_runset(store, keys, device: str, driver: str, spec, ceilings, timing, backends,
                  command, created: str) -> RunSet:
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
                            device=(spec, ceilings, driver), timing=timing, command=command,
                            created=created)


def _collection_report(runset: RunSet, out: Path) -> object:
    """The collection report of a sweep (``report.collection``)."""
    from sparsescope.report.collection import write_collection_report

    return write_collection_report(runset, out)
