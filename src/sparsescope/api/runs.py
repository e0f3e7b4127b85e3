"""``sparsescope run``: a suite end to end.

``run`` is the main job: matrices in, every backend run and checked against float64, timed with
the one protocol, results written atomically as versioned JSON, appended to the results store,
and the report written. A stage clock (:mod:`sparsescope.stages`) records where the time
went, per case and in total (``CaseResult.stages``, ``RunSet.stages``). The helpers here
(backends chosen and checked, the device context, the RunSet assembled and written) serve
:mod:`sparsescope.api.sweeps` too.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from sparsescope.errors import SparsescopeError, StoreWriteError, UsageError
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet
from sparsescope.stages import StageClock, stage
from sparsescope.timing.types import TimingConfig


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
    report_error: str = ""
    """Why writing the report failed after the results were written ("" when it worked;
    ``report_paths`` is then None); the results are safe in ``results_path``."""
    stages_line: str = ""
    """Where the run's time went, in one line (``stages.where_time_went``); "" without stage
    times (a sweep)."""


class LateWriteError(StoreWriteError):
    """Measuring finished and ``results.json`` was written, but a later write (the report)
    failed: the message names the results file, which is safe (exit 10)."""


class RunStoppedError(SparsescopeError):
    """An input failed after other cases were measured (a reader error, no memory to set up a
    case, Ctrl-C): the cases measured before it are in ``results.json``, which the message
    names with the input that failed. Its exit code is the cause's (3 a matrix format error,
    4 a matrix not available, 1 out of memory, 130 Ctrl-C)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class _Progress:
    """What a run has done so far, for a run stopped part-way (:class:`RunStoppedError`)."""

    records: list[MatrixRecord] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    current: str = ""
    """The input being loaded or run (a file, or a suite's matrix name)."""
    device: object = None
    timing: TimingConfig | None = None
    clock: StageClock | None = None
    """The run's stage clock: each case's stages are split off it as the case ends."""


def _matrices(suite: str | None, files: Sequence[str], scale: float, seed: int, strict: bool):
    """(count, iterator of Matrix) for a suite or a list of files, loaded one at a time."""
    from sparsescope import matrices

    if files:
        return len(files), (matrices.read_matrix(f, strict=strict) for f in files)
    entries = matrices.suite_entries(suite, scale=scale)
    return len(entries), matrices.load_suite(suite, scale=scale, seed=seed)


def device_context(backends: Sequence[str], store: bool = True):
    """The :class:`~sparsescope.context.DeviceContext` of the device that will run the
    backends (``context.present_device``): a GPU with ceilings measured now when one of them
    is a GPU backend and a GPU answers, else the host CPU (its ceilings cached per machine in
    the store unless ``store`` is False; GPU backends then skip as unavailable)."""
    from sparsescope.backends.library_probe import library_call_probes, routes_for
    from sparsescope.backends.registry import get_backend
    from sparsescope.context import present_device

    kinds = {get_backend(name).capability.device for name in backends}
    routes = routes_for(backends)  # the libraries whose call's fixed cost the model charges
    probes = {"library_probes": library_call_probes(routes)} if routes else {}
    return present_device("gpu" if "gpu" in kinds else "cpu", store=store, **probes)


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
        reference_gpu: str | None = None, seed: int = 0, strict: bool = False,
        store: bool = True, command: str = "sparsescope.api.run", op: str = "spmv",
        op_params: dict[str, Sequence] | None = None,
        on_case: Callable[[CaseResult], None] | None = None,
        variants: Sequence = (), progress: bool = False) -> RunOutput:
    """Run every backend on every matrix of ``suite`` (or ``files``) and write results + report.

    ``on_case`` is called with each case as it finishes (progress lines). ``variants``:
    :class:`~sparsescope.backends.runner.BackendChoice` kernel variants run after the backends
    (``backends=[]`` with variants runs the variants alone). ``progress``: a bar over the
    cases on stderr when it is a terminal. ``reference_gpu``: the GPU whose warp model (Little's
    law, DAE FIFO) a CPU run's report computes from its spec; None: none (the report says why).

    Every argument, output and input is checked before anything is measured: an
    unwritable ``out_dir`` or store, or an ``out_dir`` another command is writing into (a
    lock file there, :func:`sparsescope._outputs.out_dir_lock`), is an
    :class:`~sparsescope.errors.OutputError`; a matrix file that is missing or whose header
    does not parse is refused. Nothing measured is lost after that: an input that fails
    later (a reader error, no memory to set up a case, Ctrl-C) raises
    :class:`RunStoppedError` with the cases measured before it in ``out_dir/results.json``;
    a report or store that fails after the results are written leaves
    ``RunOutput.report_error`` / ``store_error`` set; results.json that cannot be written
    (a full disk) is kept in the temporary folder and the store, and named.
    Results go to ``out_dir/results.json`` (atomic), the report to ``out_dir/report.*``,
    ``out_dir/figures`` and ``out_dir/tables``; the run is appended to the results store.
    Where the time went is in each case's ``stages`` and the run's (until its report was
    written: results.json is written again, atomically, with the report's time).
    """
    clock = StageClock()
    with clock.active():
        return _run(clock, suite=suite, files=files, scale=scale, backends=backends,
                    out_dir=out_dir, timing=timing, latency_ns=latency_ns,
                    reference_gpu=reference_gpu, seed=seed, strict=strict, store=store,
                    command=command, op=op, op_params=op_params, on_case=on_case,
                    variants=variants, progress=progress)


def _run(clock: StageClock, *, suite, files, scale, backends, out_dir, timing, latency_ns,
         reference_gpu, seed, strict, store, command, op, op_params, on_case, variants,
         progress) -> RunOutput:
    """:func:`run`, its stages charged to ``clock`` (active)."""
    from sparsescope._outputs import out_dir_lock
    from sparsescope.context.predict import default_memory_budget, plan_memory_budget
    from sparsescope.progress import CaseProgress

    backends = _checked_arguments(suite, files, scale, reference_gpu, op, op_params, backends,
                                  variants, seed=seed, latency_ns=latency_ns)
    timing = (timing or TimingConfig()).checked()
    out = _checked_outputs(out_dir, store)
    with out_dir_lock(out):  # one writer per folder, from before measuring to the last write
        _checked_inputs(files)
        created = datetime.now(UTC).isoformat(timespec="seconds")
        done = _Progress(timing=timing, clock=clock)
        what = dict(suite=suite if not files else "files", scale=scale, backends=backends,
                    command=command, created=created, latency_ns=latency_ns,
                    reference_gpu=reference_gpu)
        try:
            with CaseProgress(_case_count(suite, files, scale, op, op_params, backends),
                              progress) as bar:
                bar.note("measuring the device's ceilings")
                with stage("device"):
                    device = device_context([getattr(b, "name", b) for b in backends], store)
                if device.kind == "gpu":  # GPU backends time with CUDA events
                    timing = replace(timing, clock="cuda-events")
                done.device, done.timing = device, timing
                bar.note("loading the first matrix")
                clock.split()  # the first case's time starts here, not with the run's
                # auto's candidates are planned as `sparsescope model` plans them: on a row
                # sample above the memory budget (the case itself runs the whole matrix)
                with plan_memory_budget(default_memory_budget()):
                    records, cases = _run_matrices(suite, files, scale, seed, strict, backends,
                                                   op, op_params, timing, bar.wrap(on_case),
                                                   device, done=done)
        except (Exception, KeyboardInterrupt) as exc:
            stopped = _keep_measured(exc, done, out, what)
            if stopped is None:
                raise
            raise stopped from None
        runset = _assemble_runset(what["suite"], scale, records, cases, backends=backends,
                                  device=device, timing=timing, command=command,
                                  created=created, latency_ns=latency_ns,
                                  reference_gpu=reference_gpu)
        return _write_outputs(runset, out, store, progress, keep_report_errors=True,
                              clock=clock)


def _keep_measured(exc: BaseException, done: _Progress, out: Path, what: dict
                   ) -> RunStoppedError | None:
    """A run stopped part-way by ``exc``: the cases measured before it written to
    ``out/results.json`` (atomically; the report is left for ``sparsescope report``, the
    store untouched), and the :class:`RunStoppedError` to raise, naming the input that
    failed and the results. None when there is nothing to keep (nothing measured yet), or
    for an unexpected exception (a bug: raised as it is, with a note naming the results)."""
    from sparsescope.errors import Interrupted

    if not done.cases or done.device is None:
        return None
    measured = {c.matrix for c in done.cases}
    n, k = len(done.cases), len(measured)
    try:
        runset = _assemble_runset(
            what["suite"], what["scale"], [r for r in done.records if r.name in measured],
            done.cases, backends=what["backends"], device=done.device, timing=done.timing,
            command=what["command"], created=what["created"], latency_ns=what["latency_ns"],
            reference_gpu=what["reference_gpu"])
        if done.clock is not None:
            runset = replace(runset, stages=done.clock.total())
        results = _write_results(runset, out, store=False)
        kept = (f"the {n} case(s) of {k} matrix(es) measured before it are kept in {results} "
                f"(`sparsescope report {results} --out {out}` writes their report; nothing "
                f"was added to the results store)")
    except SparsescopeError as late:  # results.json could not be written: kept elsewhere
        kept = str(late)
    except (Exception, KeyboardInterrupt) as late:  # keeping them failed too: say so
        if isinstance(exc, Exception):
            exc.add_note(f"the {n} case(s) measured before it could not be kept "
                         f"({type(late).__name__}: {late})")
        return None
    if isinstance(exc, KeyboardInterrupt | Interrupted):
        return RunStoppedError(f"interrupted while running {done.current}; {kept}",
                               Interrupted.exit_code)
    if isinstance(exc, MemoryError):
        return RunStoppedError(f"{done.current}: not enough memory to set up its cases "
                               f"({str(exc) or 'MemoryError'}); {kept}", 1)
    if isinstance(exc, SparsescopeError):
        cause = str(exc)
        if done.current and done.current not in cause and Path(done.current).name not in cause:
            cause = f"{done.current}: {cause}"
        return RunStoppedError(f"{cause}; {kept}", exc.exit_code)
    exc.add_note(kept)
    return None


def _assemble_runset(suite: str, scale: float, records, cases, *, backends, device, timing,
                     command: str, created: str, latency_ns: float | None = None,
                     reference_gpu: str | None = None) -> RunSet:
    """The RunSet of a run or a sweep: provenance (the backends' library versions), the
    device (a ``context.DeviceContext``), and every timed case's model values."""
    from sparsescope.results.case_models import with_case_models
    from sparsescope.results.provenance import collect_provenance

    spec, ceilings, driver = device.spec, device.ceilings, device.driver
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
        reference_gpu=reference_gpu or "")  # "": none named, no warp model on a CPU run
    return with_case_models(runset)


#: The largest DRAM latency the model takes (ns): a millisecond is no memory's latency.
MAX_LATENCY_NS = 1e6


def _checked_arguments(suite, files, scale, reference_gpu, op, op_params, backends,
                       variants, *, seed: int = 0, latency_ns: float | None = None) -> list:
    """Every argument checked before anything is written or measured; the backends to run."""
    import math

    from sparsescope.hardware.specs import get_spec
    from sparsescope.ops.registry import get_op, params_for

    if not files and not suite:
        raise UsageError("give a suite (--suite) or matrix files")
    if not 0 < scale <= 1:
        raise UsageError(f"--scale must be in (0, 1] (a fraction of the suite), got {scale}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"--seed must be a whole number >= 0, got {seed!r}")
    if latency_ns is not None and not (isinstance(latency_ns, int | float)
                                       and math.isfinite(latency_ns)
                                       and 0 < latency_ns <= MAX_LATENCY_NS):
        raise UsageError(f"--latency-ns must be a number of nanoseconds > 0 and <= "
                         f"{MAX_LATENCY_NS:g}, got {latency_ns!r}")
    if reference_gpu:
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


def _run_matrices(suite, files, scale, seed, strict, backends, op, op_params, timing,
                  on_case, model=None, *, done: _Progress | None = None
                  ) -> tuple[list[MatrixRecord], list[CaseResult]]:
    """Every matrix loaded one at a time, its statistics, and every case of it. ``done``
    (filled as the run goes: the matrices, each case as it finishes, the input at hand) is
    what a run stopped part-way keeps."""
    from sparsescope import matrices
    from sparsescope.backends.runner import run_matrix
    from sparsescope.matrices.ahead import one_ahead
    from sparsescope.ops.registry import params_for

    done = done if done is not None else _Progress()
    _, loaded = _matrices(suite, files, scale, seed, strict)
    names = ([str(f) for f in files] if files
             else [e.name for e in matrices.suite_entries(suite, scale=scale)])

    def finished(case: CaseResult) -> None:
        if done.clock is not None:  # the case's share of the run: since the case before it
            case = replace(case, stages=done.clock.split())
        done.cases.append(case)
        if on_case is not None:
            on_case(case)

    ahead = _load_ahead(backends, model)
    with_stats = one_ahead(loaded, lambda m: (m, matrices.compute_stats(m.csr)), ahead=ahead)
    for matrix, stats in _tracked(with_stats, names, done):
        done.records.append(MatrixRecord(name=matrix.name, source=matrix.source,
                                         kind=matrix.kind, analog_of=matrix.analog_of,
                                         stats=stats))
        params = params_for(op, op_params, suite=None if files else suite, matrix=matrix.name)
        run_matrix(matrix, backends, op, params, config=timing, seed=seed, strict=strict,
                   on_case=finished, model=model, ahead=ahead)
    return done.records, done.cases


def _load_ahead(backends, model) -> bool:
    """Whether the next matrix loads while the current one's cases run
    (``matrices.ahead.one_ahead``): on a GPU run that times nothing on the CPU."""
    from sparsescope.backends.registry import get_backend

    if model is None or getattr(model, "kind", "") != "gpu":
        return False
    try:
        return all(get_backend(getattr(b, "name", b)).capability.device == "gpu"
                   for b in backends)
    except SparsescopeError:  # a name the registry does not know as such: load in turn
        return False


def _tracked(loaded, names: list[str], done: _Progress):
    """``loaded``'s matrices, ``done.current`` naming each input before it is loaded (so a
    reader error is attributed to its input)."""
    it = iter(loaded)
    for index in itertools.count():
        if index < len(names):
            done.current = names[index]
        try:
            with stage("load"):
                matrix = next(it)
        except StopIteration:
            return
        yield matrix


def _checked_inputs(files: Sequence[str]) -> None:
    """Every matrix file checked before anything is measured, cheaply: a known file type, a
    regular file that exists and can be opened, and (Matrix Market) a banner and size line
    that parse. A defect found later (in a file's body) still stops the run, keeping what was
    measured before it (:class:`RunStoppedError`)."""
    import os

    from sparsescope.errors import MatrixFormatError, MatrixNotAvailableError
    from sparsescope.matrices.io import READERS, SUITESPARSE_PREFIX, matrix_suffix
    from sparsescope.matrices.mtx_header import read_header

    for given in files:
        text = os.fspath(given)
        if isinstance(text, str) and text.startswith(SUITESPARSE_PREFIX):
            continue  # fetched (or found in the cache) when its turn comes
        file = Path(text)
        suffix = matrix_suffix(file)
        if suffix not in READERS:
            raise MatrixFormatError(
                str(file), f"unknown matrix file type ({suffix or 'no extension'}): expected "
                           f"one of {', '.join(READERS)} or suitesparse:Group/Name")
        if file.is_dir():
            raise MatrixFormatError(str(file), "is a directory, not a matrix file")
        if not file.exists():
            raise MatrixNotAvailableError(f"{file}: no such file")
        if not file.is_file():
            raise MatrixFormatError(str(file), "is not a regular file (a device, pipe or "
                                               "socket)")
        try:
            with open(file, "rb") as handle:
                handle.read(1)
        except OSError as exc:
            raise MatrixFormatError(str(file), f"cannot read file: {exc.strerror or exc}"
                                    ) from None
        if suffix in (".mtx", ".mtx.gz"):
            read_header(file)


def _case_count(suite, files, scale, op, op_params, backends) -> int:
    """How many cases the run will have (the progress bar's total), without loading a matrix."""
    from sparsescope import matrices
    from sparsescope.ops.registry import params_for

    if files:
        return len(files) * len(params_for(op, op_params)) * len(backends)
    names = [e.name for e in matrices.suite_entries(suite, scale=scale)]
    return sum(len(params_for(op, op_params, suite=suite, matrix=n)) for n in names) \
        * len(backends)


def _write_outputs(runset: RunSet, out: Path, store: bool, progress: bool = False, *,
                   keep_report_errors: bool = False, clock: StageClock | None = None
                   ) -> RunOutput:
    """results.json (atomic), the report, then the store. Nothing measured is lost by a
    failure here: results.json that cannot be written is kept elsewhere and named
    (:func:`_write_results`); a report that fails after it is reported in ``report_error``
    (``keep_report_errors``: ``run``; the store is still appended) or raised as a
    :class:`LateWriteError` naming the results (exit 10); a store failure after the results
    are safe is reported in ``store_error``, not raised.

    The report of an earlier run in ``out`` is removed before its results.json is replaced,
    so the folder never shows one run's report beside another's results (a ``kill -9``
    between the two writes leaves results.json with no report; ``sparsescope report``
    writes it). Each report names the run id it was made from.

    ``clock``: the run's stage clock. Its total so far goes into the results and the report;
    once the report is written, results.json is written again (atomically) with the total
    that includes the report's own time, and the store gets that one."""
    from sparsescope.report.write import write_report
    from sparsescope.results.store import ResultsStore
    from sparsescope.stages import where_time_went

    if clock is not None:
        runset = replace(runset, stages=clock.total())
    results_path = _write_results(runset, out, store)
    report_paths, report_error = None, ""
    try:
        with stage("report"):
            report_paths = write_report(runset, out, progress=progress)
    except Exception as exc:
        report_error = (f"writing the report into {out} failed ({_reason(exc)}); the "
                        f"results are safe in {results_path} (`sparsescope report "
                        f"{results_path} --out {out}` writes the report again)")
        if not keep_report_errors:
            raise LateWriteError(report_error) from exc
    if clock is not None:
        runset = _with_report_time(runset, clock, results_path)
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
                     store_path=store_path, store_error=store_error, report_error=report_error,
                     stages_line=where_time_went(runset.stages))


def _with_report_time(runset: RunSet, clock: StageClock, results_path) -> RunSet:
    """``runset`` with the run's stages until now (its report included), written again to
    ``results_path``. The file written before the report stays when this write fails: it
    lacks only the report's time, and the run goes on."""
    from sparsescope.results.io import write_runset

    final = replace(runset, stages=clock.total())
    try:
        write_runset(results_path, final)
    except OSError:
        return runset
    return final


REPORT_DOCUMENTS = ("report.md", "report.html")
"""The report's documents: removed before a new results.json replaces an earlier one."""


def _write_results(runset: RunSet, out: Path, store: bool = False) -> Path:
    """``out/results.json``, written atomically after the earlier run's report documents are
    removed. When it cannot be written (a full disk), the results are kept in the temporary
    folder (and, ``store``, appended to the results store) and an
    :class:`~sparsescope.errors.OutputError` (exit 9) names where."""
    import tempfile

    from sparsescope.errors import OutputError
    from sparsescope.results.io import write_runset

    target = out / "results.json"
    for name in REPORT_DOCUMENTS:
        try:
            (out / name).unlink(missing_ok=True)
        except OSError:
            pass  # not ours to remove (permissions): results.json still goes in
    try:
        return Path(write_runset(target, runset))
    except OSError as exc:
        why = _reason(exc)
    kept: list[str] = []
    spare = Path(tempfile.gettempdir()) / f"sparsescope-results-{runset.run_id}.json"
    try:
        kept.append(str(write_runset(spare, runset)))
    except OSError:
        pass
    if store:
        from sparsescope.results.store import ResultsStore

        results_store = ResultsStore()
        try:
            results_store.append(runset)
            kept.append(f"the results store {results_store.path}")
        except (SparsescopeError, OSError):
            pass
    where = (f"the {len(runset.cases)} case(s) measured are kept in {' and in '.join(kept)}"
             if kept else "they could not be kept anywhere else either")
    raise OutputError(f"{target}: cannot be written after measuring ({why}); {where}")


def _reason(exc: BaseException) -> str:
    """A failure in a few words: an OS error's reason (``no space left``), else the type and
    message."""
    from sparsescope._outputs import why

    if isinstance(exc, OSError):
        return f"{why(exc)}: {exc.filename}" if exc.filename else why(exc)
    return f"{type(exc).__name__}: {exc}"


def _model_latency_ns(given: float | None, spec, ceilings, reference_gpu: str | None) -> float:
    """DRAM latency for the model: the user's, else the one measured on this GPU by pointer
    chasing, else the spec table's estimate (the reference GPU's on a CPU run)."""
    from sparsescope.hardware.specs import get_spec

    if given is not None:
        return given
    if spec.kind != "gpu":
        return (get_spec(reference_gpu).dram_latency_ns if reference_gpu
                else spec.dram_latency_ns)
    return ceilings.dram_latency_ns or spec.dram_latency_ns


def _library_versions(backend: str) -> dict[str, str]:
    from sparsescope.backends.registry import get_backend

    try:
        return dict(get_backend(backend).library_versions())
    except Exception as exc:  # a missing optional library must not sink the run's provenance
        return {backend: f"unavailable ({exc})"}


def _with_created(provenance, created: str):
    return replace(provenance, created_utc=created)
