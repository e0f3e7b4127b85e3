"""Run one (matrix, backend, op, params) case behind the correctness gate, for any registered op.

The generalisation of :func:`sparsescope.backends.runner.run_case` (which stays the path for
SpMV's own backends: an ``spmv`` case on a :class:`~sparsescope.backends.base.Backend` is handed
to it unchanged). Same :class:`~sparsescope.results.records.CaseResult` records, same order:

1. the op validates the parameters and builds the case (inputs, float64 reference, tolerance,
   model) -- bad parameters, such as an out-of-range row index, raise a
   :class:`~sparsescope.errors.UsageError` here, before any backend is prepared or launched;
2. skipped: the backend does not support the op, value dtype, index width or parameters, or
   is not available on this machine (its reason kept);
3. prepare; poison the output (backends owning an output buffer fill it with NaN); run once;
4. failed: the run raised, the output is not a fresh array of the reference's shape, or its
   error is above the tolerance -- never timed;
5. ok: timed with the one protocol; the measurement stored next to the error.

The op's parameters and derived counts go into ``CaseResult.notes`` as ``op.<name>``, beside
the backend's own notes. Run as a module, this file is the program ncu profiles for an op case::

    python -m sparsescope.backends.op_runner --op spmm --suite dlmc3 --matrix dlmc-512x1024 \
        --backend spmm-cuda-rowwarp --param k=8

or for a list of cases in one process (one ncu run; ``ncu --profile-from-start off``)::

    python -m sparsescope.backends.op_runner --cases cases.json --record ran.json

where each case's call is preceded by a marker launch whose grid size is the case's position
plus one, so :func:`split_marked_profiles` can label every profiled kernel with its case.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from sparsescope.backends.base import Backend, Capability
from sparsescope.backends.runner import report_case_exit
from sparsescope.errors import SparsescopeError, UnknownNameError, UsageError
from sparsescope.matrices.types import Matrix
from sparsescope.ops.registry import OpCase, get_op, op_backends
from sparsescope.results.records import CaseResult
from sparsescope.timing.types import Measurement, TimingConfig

VALUE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
_INT32_MAX = 2**31 - 1


class OpBackend(ABC):
    """A backend of an op other than the SpMV contract: it receives the whole :class:`OpCase`.

    Subclasses set :attr:`name` and :attr:`capability` and import their library inside their
    methods, never at module top.
    """

    name: str = ""
    capability: Capability

    def availability(self) -> tuple[bool, str]:
        """(True, "") when the backend can run here, else (False, why not)."""
        return True, ""

    def unsupported_params(self, case: OpCase) -> str:
        """Why this backend cannot run these parameters (e.g. a layout), or an empty string."""
        return ""

    @abstractmethod
    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> Any:
        """Convert the case's matrix and inputs to the backend's format (on its device)."""

    @abstractmethod
    def run(self, prepared: Any) -> np.ndarray:
        """One call; the output as a host array of the reference's shape."""

    @abstractmethod
    def time(self, prepared: Any, config: TimingConfig) -> Measurement:
        """Time the call with the one protocol (``timing.time_host`` or ``timing.time_cuda``)."""

    @abstractmethod
    def library_versions(self) -> dict[str, str]:
        """Library -> version of everything that computed the numbers."""

    def poison_output(self, prepared: Any) -> bool:
        """Fill a reused output buffer with NaN before the checked run; False when there is
        none (the runner then checks the output is a fresh array instead)."""
        return False

    def notes(self, prepared: Any) -> dict[str, str]:
        """Backend-specific facts worth keeping with the case (kernel chosen, launch shape)."""
        return {}


class SpmvAdapter(OpBackend):
    """An SpMV :class:`~sparsescope.backends.base.Backend` seen through the op interface."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = backend.name
        self.capability = backend.capability

    def availability(self) -> tuple[bool, str]:
        return self.backend.availability()

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> Any:
        return (self.backend.prepare(case.matrix, value_dtype, index_bytes), case.inputs)

    def run(self, prepared: Any) -> np.ndarray:
        return self.backend.run(prepared[0], prepared[1])

    def time(self, prepared: Any, config: TimingConfig) -> Measurement:
        return self.backend.time(prepared[0], prepared[1], config)

    def library_versions(self) -> dict[str, str]:
        return self.backend.library_versions()

    def poison_output(self, prepared: Any) -> bool:
        return self.backend.poison_output(prepared[0])

    def notes(self, prepared: Any) -> dict[str, str]:
        return self.backend.notes(prepared[0])


def resolve_backend(name: str):
    """A new instance of backend ``name``: from the backend registry, else from the ops'."""
    from sparsescope.backends.registry import BACKENDS, get_backend

    if name in BACKENDS:
        return get_backend(name)
    extra = op_backends()
    if name not in extra:
        raise UnknownNameError("backend", name, sorted({*BACKENDS, *extra}))
    module_name, _, class_name = extra[name].partition(":")
    backend = getattr(importlib.import_module(module_name), class_name)()
    if not backend.name:
        backend.name = name
    return backend


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _inputs_arrays(case: OpCase) -> list[np.ndarray]:
    inputs = case.inputs
    arrays = [case.matrix.data, case.matrix.indices, case.matrix.indptr]
    if isinstance(inputs, np.ndarray):
        arrays.append(inputs)
    elif hasattr(inputs, "rows"):
        arrays.append(inputs.rows)
    return arrays


def output_problem(out: object, case: OpCase, poisoned: bool) -> str:
    """Why ``out`` cannot be checked, or an empty string. Without a poisoned buffer the output
    must be a fresh host array: one aliasing an input could carry values never written."""
    if not isinstance(out, np.ndarray):
        return f"run returned {type(out).__name__}, expected a NumPy array"
    if out.shape != case.output_shape:
        return f"output has shape {out.shape}, expected {case.output_shape}"
    if not poisoned and any(np.shares_memory(out, a) for a in _inputs_arrays(case)):
        return "output aliases an input array"
    return ""


def run_op_case(matrix: Matrix, backend_name: str, op: str = "spmv",
                params: Mapping[str, Any] | None = None, *, config: TimingConfig,
                value_dtype: str = "float32", index_bytes: int | None = None,
                tolerance: float | None = None, seed: int = 0, strict: bool = False,
                backend_factory: Callable[[], Any] | None = None,
                timed: bool = True, case: OpCase | None = None) -> CaseResult:
    """Check ``backend_name`` on ``matrix`` for ``op`` with ``params``, then time it if it
    passed. ``backend_factory`` replaces the registry lookup (tests pass fakes); ``timed=False``
    stops after the check (the profile target: ncu replays the launches itself, and the timing
    protocol's profiler would compete with it for CUPTI). ``case``: the op case already built
    for these arguments (``run_op_matrix`` builds one per parameter set and index width)."""
    op_obj = get_op(op)
    backend = backend_factory() if backend_factory is not None else resolve_backend(backend_name)
    if backend_factory is not None and not backend.name:
        backend.name = backend_name
    cap = backend.capability
    index_bytes = cap.index_bytes[0] if index_bytes is None else index_bytes
    if op == "spmv" and isinstance(backend, Backend):
        op_obj.resolve_params(params)  # spmv has none: an unknown name is an error
        if backend_factory is None and timed:  # a registered SpMV backend: its runner, unchanged
            from sparsescope.backends.runner import run_case

            return run_case(matrix, backend_name, config=config, value_dtype=value_dtype,
                            index_bytes=index_bytes, tolerance=tolerance, x_seed=seed)
        backend = SpmvAdapter(backend)
    if case is None:
        case = op_obj.make_case(matrix.csr, params, value_dtype=value_dtype,
                                index_bytes=index_bytes, seed=seed, tolerance=tolerance,
                                strict=strict)
    base = dict(matrix=matrix.name, backend=backend_name, op=op,
                value_bytes=VALUE_BYTES.get(value_dtype, 0), index_bytes=index_bytes,
                y_read=cap.y_read)
    reason = cap.unsupported_reason(op, value_dtype, index_bytes)
    if not reason and index_bytes == 4 and max(case.matrix.nnz, *case.matrix.shape) > _INT32_MAX:
        reason = f"nnz {case.matrix.nnz} does not fit INT32 indices"
    if not reason and isinstance(backend, OpBackend):
        reason = backend.unsupported_params(case)
    if not reason and not isinstance(backend, OpBackend):
        reason = f"backend implements the SpMV interface only, not op {op!r}"
    if not reason:
        available, why = backend.availability()
        reason = "" if available else f"backend unavailable: {why}"
    if reason:
        return CaseResult(**base, outcome="skipped", reason=reason, notes=dict(case.notes))
    return _checked_and_timed(backend, op_obj, case, base, config=config,
                              value_dtype=value_dtype, index_bytes=index_bytes, timed=timed)


def _checked_and_timed(backend: OpBackend, op_obj, case: OpCase, base: dict, *,
                       config: TimingConfig, value_dtype: str, index_bytes: int,
                       timed: bool = True) -> CaseResult:
    notes = dict(case.notes)
    try:
        prepared = backend.prepare(case, value_dtype, index_bytes)
    except Exception as exc:
        return CaseResult(**base, outcome="failed", reason=f"prepare failed: {_error_text(exc)}",
                          notes=notes)
    notes.update(_backend_notes(backend, prepared))
    try:
        poisoned = backend.poison_output(prepared)
        out = backend.run(prepared)
    except Exception as exc:
        return CaseResult(**base, outcome="failed", reason=f"run failed: {_error_text(exc)}",
                          notes=notes)
    problem = output_problem(out, case, poisoned)
    if problem:
        return CaseResult(**base, outcome="failed", reason=problem, notes=notes)
    correctness = op_obj.check(out, case)
    if not correctness.passed:
        return CaseResult(**base, outcome="failed", correctness=correctness, notes=notes,
                          reason=f"rel_err {correctness.rel_err:.3g} above tolerance "
                                 f"{correctness.tolerance:.3g}; not timed")
    if not timed:
        return CaseResult(**base, outcome="ok", correctness=correctness, notes=notes,
                          reason="checked only, not timed")
    try:
        measurement = backend.time(prepared, config)
    except Exception as exc:
        return CaseResult(**base, outcome="failed", correctness=correctness, notes=notes,
                          reason=f"timing failed: {_error_text(exc)}")
    return CaseResult(**base, outcome="ok", measurement=measurement, correctness=correctness,
                      notes=notes)


def run_op_matrix(matrix: Matrix, backends: Sequence[str], op: str,
                  params_list: Sequence[Mapping[str, Any]], *, config: TimingConfig,
                  value_dtype: str = "float32", seed: int = 0,
                  strict: bool = False) -> list[CaseResult]:
    """Every (parameters, backend) case of one matrix, parameters outermost (what ``run``
    does per matrix for an op; each backend's default index width). The op case (inputs and
    float64 reference) is built once per parameter set and index width, not per backend."""
    op_obj = get_op(op)
    results = []
    for params in params_list:
        built: dict[int, OpCase] = {}
        for name in backends:
            backend = resolve_backend(name)
            index_bytes = backend.capability.index_bytes[0]
            if op != "spmv" and index_bytes not in built:
                built[index_bytes] = op_obj.make_case(
                    matrix.csr, params, value_dtype=value_dtype, index_bytes=index_bytes,
                    seed=seed, strict=strict)
            results.append(run_op_case(matrix, name, op, params, config=config,
                                       value_dtype=value_dtype, seed=seed, strict=strict,
                                       backend_factory=(None if op == "spmv"
                                                        else (lambda b=backend: b)),
                                       case=built.get(index_bytes)))
    return results


def _backend_notes(backend, prepared: object) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in backend.notes(prepared).items()}
    except Exception as exc:  # notes are optional; their failure must not fail the case
        return {"notes_error": _error_text(exc)}


# ----------------------------------------------------------------------------- profile target



def parse_param(text: str) -> tuple[str, str]:
    """``name=value`` -> (name, value); a UsageError otherwise."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"--param wants NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def _params(pairs: Sequence[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for text in pairs:
        name, value = parse_param(text)
        params[name] = [int(v) for v in value.split(",")] if name == "rows" else value
    return params


MARKER_KERNEL = "sparsescope_case_marker"
_MARKER_SOURCE = 'extern "C" __global__ void sparsescope_case_marker() {}'


def case_label(spec: Mapping[str, Any]) -> str:
    """``<backend> <matrix> <name>=<value> ...`` -- the label of a profiled case (the report
    groups instruction-roofline points by its first word, the backend)."""
    params = " ".join(f"{k}={v}" for k, v in sorted(dict(spec.get("params") or {}).items()))
    return " ".join(part for part in (spec["backend"], spec["matrix"], params) if part)


def run_marked_cases(specs: Sequence[Mapping[str, Any]], *, seed: int = 0,
                     value_dtype: str = "float32") -> list[dict]:
    """Run each case ``{"op", "suite", "matrix", "backend", "params"}`` for ncu: build, prepare,
    run once untimed (compilation, handles), poison, then -- inside a profiler range
    (``cudaProfilerStart``/``Stop``) -- a marker launch with ``grid = position + 1`` and one
    call, checked against float64 afterwards. Returns one record per case (label, outcome,
    relative error, the backend's notes)."""
    import cupy

    from sparsescope.matrices.suite_dlmc import build_named_entry

    marker = cupy.RawKernel(_MARKER_SOURCE, MARKER_KERNEL)
    runtime = cupy.cuda.runtime
    records: list[dict] = []
    loaded: dict[tuple[str, str], Matrix] = {}
    for position, spec in enumerate(specs):
        record = {"index": position, "label": case_label(spec), **dict(spec)}
        records.append(record)
        key = (spec["suite"], spec["matrix"])
        if key not in loaded:  # one matrix at a time: the largest holds 10 M nonzeros
            loaded = {key: build_named_entry(*key)}
        op_obj, backend = get_op(spec["op"]), resolve_backend(spec["backend"])
        available, why = backend.availability()
        index_bytes = backend.capability.index_bytes[0]
        case = op_obj.make_case(loaded[key].csr, spec.get("params"), value_dtype=value_dtype,
                                index_bytes=index_bytes, seed=seed)
        reason = backend.unsupported_params(case) if available else f"unavailable: {why}"
        if reason:
            record.update(outcome="skipped", reason=reason)
            continue
        try:
            prepared = backend.prepare(case, value_dtype, index_bytes)
            backend.run(prepared)
            poisoned = backend.poison_output(prepared)
            runtime.deviceSynchronize()
            runtime.profilerStart()
            try:
                marker((position + 1,), (32,), ())
                out = backend.run(prepared)
                runtime.deviceSynchronize()
            finally:
                runtime.profilerStop()
        except Exception as exc:
            record.update(outcome="failed", reason=f"run failed: {_error_text(exc)}")
            continue
        problem = output_problem(out, case, poisoned)
        correctness = None if problem else op_obj.check(out, case)
        passed = correctness is not None and correctness.passed
        record.update(outcome="ok" if passed else "failed", reason=problem,
                      rel_err=correctness.rel_err if correctness is not None else None,
                      notes=_backend_notes(backend, prepared))
    return records


def split_marked_profiles(profiles: Sequence[Any], records: Sequence[Mapping[str, Any]]
                          ) -> tuple[list, list[str]]:
    """(profiles, labels) of the cases' calls from a run of :func:`run_marked_cases`: every
    kernel after the marker of case ``i`` (grid size ``i + 1``) up to the next marker, labelled
    ``"<case label>: <kernel name>"``; the markers themselves are dropped, and so are kernels
    of a case that did not pass its check."""
    by_grid = {int(r["index"]) + 1: r for r in records}
    kept, labels, current = [], [], None
    for p in sorted(profiles, key=lambda p: p.index):
        if p.name == MARKER_KERNEL:
            current = by_grid.get(int(p.grid_size or 0))
            continue
        if current is None or current.get("outcome") != "ok":
            continue
        kept.append(p)
        labels.append(f"{current['label']}: {p.name}")
    return kept, labels


def _main_cases(argv: Sequence[str]) -> int:
    import json

    parser = argparse.ArgumentParser(prog="python -m sparsescope.backends.op_runner --cases",
                                     description="Run a list of op cases once each, marked "
                                                 "for ncu (see run_marked_cases).")
    parser.add_argument("--cases", required=True, help="JSON list of case specs")
    parser.add_argument("--record", required=True, help="where to write what ran (JSON)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        with open(args.cases, encoding="utf-8") as handle:
            specs = json.load(handle)
        records = run_marked_cases(specs, seed=args.seed)
    except SparsescopeError as exc:
        print(f"sparsescope-op-target: error: {exc}", file=sys.stderr)
        return exc.exit_code
    from sparsescope._atomic import write_json_atomic

    write_json_atomic(args.record, records)
    for r in records:
        print(f"sparsescope-op-target: [{r['index']}] {r['label']}: {r['outcome']}"
              + (f" ({r['reason']})" if r.get("reason") else ""))
    return 0  # a failed case is in the record; ncu must still write the others' profiles


def build_parser() -> argparse.ArgumentParser:
    """The one-case target's arguments (what ``sparsescope profile --op`` passes)."""
    parser = argparse.ArgumentParser(prog="python -m sparsescope.backends.op_runner",
                                     description="Run one op case (the program ncu profiles).")
    parser.add_argument("--op", required=True)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--matrix", required=True, help="matrix name within the suite")
    parser.add_argument("--backend", required=True)
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check-only", action="store_true",
                        help="prepare, run and check once; no timing (for ncu)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """One case, to be profiled by ncu: exit 0 ok, 1 failed, 3 skipped, 2 bad arguments."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--cases" in argv:
        return _main_cases(argv)
    args = build_parser().parse_args(argv)
    try:
        from sparsescope.matrices.suite_dlmc import build_named_entry

        matrix = build_named_entry(args.suite, args.matrix, scale=args.scale)
        case = run_op_case(matrix, args.backend, args.op, _params(args.param),
                           config=TimingConfig(warmups=args.warmups, repeats=args.repeats),
                           seed=args.seed, timed=not args.check_only)
    except SparsescopeError as exc:
        print(f"sparsescope-op-target: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return report_case_exit(case, f"sparsescope-op-target: {args.matrix} {args.backend} {args.op}")


if __name__ == "__main__":  # pragma: no cover
    # Run the imported module's main, not this __main__ copy of it: the backends subclass
    # sparsescope.backends.op_runner.OpBackend, and the isinstance checks must see that class.
    from sparsescope.backends import op_runner

    raise SystemExit(op_runner.main())
