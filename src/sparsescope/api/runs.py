"""``sparsescope run``: a suite end to end.

``run`` is the main job: matrices in, every backend run and checked against float64, timed with
the one protocol, results written atomically as versioned JSON, appended to the results store,
and the report written. The helpers here (backends chosen and checked, the device context,
the RunSet assembled and written) serve :mod:`sparsescope.api.sweeps` too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from sparsescope.errors import UsageError
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet
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
    from sparsescope.backends.registry import get_backend
    from sparsescope.context import present_device

    kinds = {get_backend(name).capability.device for name in backends}
    return present_device("gpu" if "gpu" in kinds else "cpu", store=store)


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
        device = device_context([getattr(b, "name", b) for b in backends], store)
        if device.kind == "gpu":
            timing = replace(timing, clock="cuda-events")  # GPU backends time with CUDA events
        bar.note("loading the first matrix")
        records, cases = _run_matrices(suite, files, scale, seed, strict, backends, op,
                                       op_params, timing, bar.wrap(on_case), device)
    runset = _assemble_runset(
        suite if not files else "files", scale, records, cases, backends=backends,
        device=device, timing=timing, command=command, created=created,
        latency_ns=latency_ns, reference_gpu=reference_gpu)
    return _write_outputs(runset, out, store, progress)


def _assemble_runset(suite: str, scale: float, records, cases, *, backends, device, timing,
                     command: str, created: str, latency_ns: float | None = None,
                     reference_gpu: str = "H200") -> RunSet:
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
