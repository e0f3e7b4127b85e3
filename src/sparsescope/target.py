"""The one program Nsight Compute profiles, for every op and for ``analyze``.

    python -m sparsescope.target case --op spmm --suite dlmc3 --matrix dlmc-512x1024 \
        --backend spmm-cuda-rowwarp --param k=8 [--check-only]
    python -m sparsescope.target cases CASES.json --record RAN.json
    python -m sparsescope.target workload WORKLOAD.json [--warmups N]

``case``: one (suite matrix, backend, op, parameters) case through the one runner (few repeats:
ncu replays each launch anyway; ``--check-only`` stops after the float64 check;
``--profile-call`` opens a profiler range around the checked call alone, for ncu's
``--profile-from-start off``: :class:`FirstCallRange`). Exit 0 ok, 1 failed, 3 skipped, 2 bad
arguments; ncu reports a non-zero exit as "The application returned an error code".

``cases``: many cases in one process (one ncu run with ``--profile-from-start off``); each
case's call is preceded by a marker launch whose grid size is the case's position plus one, so
:func:`split_marked_profiles` can label every profiled kernel with its case.

``workload``: one call of an ``analyze`` workload (warm-ups first, then exactly one call
between ``cudaProfilerStart`` and ``cudaProfilerStop``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparsescope.backends.spmv_auto import AUTO_TRIAL_ENV
from sparsescope.errors import SparsescopeError, UsageError
from sparsescope.profile.collect import target_argv as target_argv  # (re-export)

PROGRAM = "sparsescope-target"
MARKER_KERNEL = "sparsescope_case_marker"
_MARKER_SOURCE = 'extern "C" __global__ void sparsescope_case_marker() {}'


def parse_param(text: str) -> tuple[str, str]:
    """``name=value`` -> (name, value); a UsageError otherwise."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"--param wants NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    """``--param`` values as a parameter mapping of text; the op converts and checks each
    (a comma list becomes slice's ``rows``)."""
    return dict(parse_param(text) for text in pairs)


def case_label(spec: Mapping[str, Any]) -> str:
    """``<backend> <matrix> <name>=<value> ...`` -- the label of a profiled case (the report
    groups instruction-roofline points by its first word, the backend)."""
    params = " ".join(f"{k}={v}" for k, v in sorted(dict(spec.get("params") or {}).items()))
    return " ".join(part for part in (spec["backend"], spec["matrix"], params) if part)


# ----------------------------------------------------------------------------- one case

class FirstCallRange:
    """A backend's ``run_case`` whose first call runs inside a profiler range: the runner's
    first call after ``prepare_case`` and the poisoning is the checked one, so ncu (with
    ``--profile-from-start off``) sees that call's launches and none of the preparation's,
    the poisoning fill's or a later call's. The device is synchronized before the range opens
    (what was queued before stays out) and before it closes (every launch of the call is in).
    ``profiler()`` gives (start, stop, synchronize), asked for at the first call, when the
    backend has loaded its library."""

    def __init__(self, run_case: Callable[[Any], Any],
                 profiler: Callable[[], tuple[Callable, Callable, Callable]]) -> None:
        self._run_case = run_case
        self._profiler = profiler
        self.calls = 0
        """Calls so far; only the first ran inside the range."""

    def __call__(self, prepared: Any) -> Any:
        self.calls += 1
        if self.calls > 1:
            return self._run_case(prepared)
        start, stop, synchronize = self._profiler()
        synchronize()
        start()
        try:
            out = self._run_case(prepared)
            synchronize()
        finally:
            stop()
        return out


def loaded_profiler() -> tuple[Callable, Callable, Callable]:
    """(start, stop, synchronize) through the CUDA library the case loaded: CuPy when it is
    imported (our kernels, CuPy, nvmath) or neither is, else PyTorch. Both call
    ``cudaProfilerStart``/``Stop`` on the device's primary context, which the libraries share."""
    if "cupy" in sys.modules or "torch" not in sys.modules:
        return _profiler("cupy")
    return _profiler("torch")


def profile_first_call(backend: Any, profiler: Callable | None = None) -> Any:
    """``backend`` with its first ``run_case`` in a profiler range (:class:`FirstCallRange`);
    a CPU backend unchanged (it launches nothing to profile)."""
    if getattr(backend.capability, "device", "gpu") == "gpu":
        backend.run_case = FirstCallRange(backend.run_case, profiler or loaded_profiler)
    return backend


def run_one(args: argparse.Namespace) -> int:
    from sparsescope.backends.runner import report_case_exit, run_case
    from sparsescope.backends.variants import backend_choice
    from sparsescope.matrices.suite_dlmc import build_named_entry
    from sparsescope.timing.types import TimingConfig

    matrix = build_named_entry(args.suite, args.matrix, scale=args.scale)
    # cuda-spmv-auto's trial would time a few hundred launches of other kernels under ncu
    # (profiled ones without --profile-call, each ncu-intercepted either way); it chooses by
    # prediction alone here (its notes say so), the chosen kernel being the one profiled
    before = os.environ.get(AUTO_TRIAL_ENV)
    if args.check_only and before is None:
        os.environ[AUTO_TRIAL_ENV] = "0"
    backend = backend_choice(args.backend)
    if args.profile_call:
        backend = profile_first_call(backend.create())
    try:
        case = run_case(matrix, backend, args.op, parse_params(args.param),
                        config=TimingConfig(warmups=args.warmups, repeats=args.repeats),
                        seed=args.seed, timed=not args.check_only)
    finally:
        if before is None:
            os.environ.pop(AUTO_TRIAL_ENV, None)
    return report_case_exit(case, f"{PROGRAM}: {args.matrix} {args.backend} {args.op}")


# ----------------------------------------------------------------------------- marked cases

def run_marked_cases(specs: Sequence[Mapping[str, Any]], *, seed: int = 0,
                     value_dtype: str = "float32") -> list[dict]:
    """Run each case ``{"op", "suite", "matrix", "backend", "params"}`` for ncu: build, prepare,
    run once untimed (compilation, handles), poison, then -- inside a profiler range -- a
    marker launch with ``grid = position + 1`` and one call, checked against float64
    afterwards. Returns one record per case (label, outcome, relative error, notes)."""
    import cupy

    from sparsescope.backends.registry import get_backend
    from sparsescope.backends.runner import output_problem, skip_reason
    from sparsescope.matrices.suite_dlmc import build_named_entry
    from sparsescope.ops.registry import get_op

    marker = cupy.RawKernel(_MARKER_SOURCE, MARKER_KERNEL)
    runtime = cupy.cuda.runtime
    records: list[dict] = []
    loaded: dict[tuple[str, str], Any] = {}
    for position, spec in enumerate(specs):
        record = {"index": position, "label": case_label(spec), **dict(spec)}
        records.append(record)
        key = (spec["suite"], spec["matrix"])
        if key not in loaded:  # one matrix at a time: the largest holds 10 M nonzeros
            loaded = {key: build_named_entry(*key)}
        op_obj, backend = get_op(spec["op"]), get_backend(spec["backend"])
        index_bytes = backend.capability.index_bytes[0]
        case = op_obj.make_case(loaded[key].csr, spec.get("params"), value_dtype=value_dtype,
                                index_bytes=index_bytes, seed=seed)
        reason = skip_reason(backend, case, value_dtype, index_bytes)
        if reason:
            record.update(outcome="skipped", reason=reason)
            continue
        try:
            prepared = backend.prepare_case(case, value_dtype, index_bytes)
            backend.run_case(prepared)
            poisoned = backend.poison_case(prepared)
            runtime.deviceSynchronize()
            runtime.profilerStart()
            try:
                marker((position + 1,), (32,), ())
                out = backend.run_case(prepared)
                runtime.deviceSynchronize()
            finally:
                runtime.profilerStop()
        except Exception as exc:
            record.update(outcome="failed", reason=f"run failed: {type(exc).__name__}: {exc}")
            continue
        problem = output_problem(out, case, poisoned)
        correctness = None if problem else op_obj.check(out, case)
        passed = correctness is not None and correctness.passed
        record.update(outcome="ok" if passed else "failed", reason=problem,
                      rel_err=correctness.rel_err if correctness is not None else None,
                      notes={str(k): str(v) for k, v in backend.case_notes(prepared).items()})
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


def run_cases(args: argparse.Namespace) -> int:
    from sparsescope._atomic import write_json_atomic

    with open(args.cases, encoding="utf-8") as handle:
        specs = json.load(handle)
    records = run_marked_cases(specs, seed=args.seed)
    write_json_atomic(args.record, records)
    for r in records:
        print(f"{PROGRAM}: [{r['index']}] {r['label']}: {r['outcome']}"
              + (f" ({r['reason']})" if r.get("reason") else ""))
    return 0  # a failed case is in the record; ncu must still write the others' profiles


# ----------------------------------------------------------------------------- workload

def _profiler(library: str):
    """(start, stop, synchronize) of the library the workload runs on."""
    if library == "torch":
        import torch

        return torch.cuda.profiler.start, torch.cuda.profiler.stop, torch.cuda.synchronize
    import cupy

    return (cupy.cuda.runtime.profilerStart, cupy.cuda.runtime.profilerStop,
            cupy.cuda.Device().synchronize)


def run_workload(args: argparse.Namespace) -> int:
    from sparsescope.analyze.measure import instantiate
    from sparsescope.analyze.workload import Workload

    with open(args.workload) as fh:
        workload = Workload.from_dict(json.load(fh))
    inst = instantiate(workload)
    start, stop, sync = _profiler(inst.library)
    for _ in range(args.warmups):
        inst.timed()
    sync()
    start()
    inst.timed()
    sync()
    stop()
    print(f"{PROGRAM}: {workload.name} {workload.version}: one call profiled")
    return 0


# ----------------------------------------------------------------------------- entry

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sparsescope.target",
                                     description="The program ncu profiles.")
    sub = parser.add_subparsers(dest="mode", required=True)
    one = sub.add_parser("case", help="one op case")
    one.add_argument("--op", default="spmv")
    one.add_argument("--suite", required=True)
    one.add_argument("--matrix", required=True, help="matrix name within the suite")
    one.add_argument("--backend", required=True)
    one.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    one.add_argument("--scale", type=float, default=1.0)
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--warmups", type=int, default=1)
    one.add_argument("--repeats", type=int, default=3)
    one.add_argument("--check-only", action="store_true",
                     help="prepare, run and check once; no timing")
    one.add_argument("--profile-call", action="store_true",
                     help="open a profiler range (cudaProfilerStart/Stop) around the checked "
                     "call alone, for ncu --profile-from-start off")
    one.set_defaults(run=run_one)
    many = sub.add_parser("cases", help="a list of cases, each marked for ncu")
    many.add_argument("cases", help="JSON list of case specs")
    many.add_argument("--record", required=True, help="where to write what ran (JSON)")
    many.add_argument("--seed", type=int, default=0)
    many.set_defaults(run=run_cases)
    work = sub.add_parser("workload", help="one call of an analyze workload")
    work.add_argument("workload", help="workload JSON written by sparsescope analyze")
    work.add_argument("--warmups", type=int, default=2)
    work.set_defaults(run=run_workload)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except SparsescopeError as exc:
        print(f"{PROGRAM}: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":  # pragma: no cover
    # Run the imported module's main, not this __main__ copy of it (one set of classes).
    from sparsescope import target

    raise SystemExit(target.main())
