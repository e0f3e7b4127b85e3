"""Stored runs scored against the time model as it is now (``sparsescope model score``).

A run stores each case's prediction as the model of its day made it. This module asks today's
model the same question, on this host, with no GPU: the path "stored results -> suite entry ->
CSR -> predict -> compare", built once.

For each results file (``results.json``, or compressed ``.json.xz`` / ``.json.gz``; a folder
stands for every results file under it):

- the matrix of each case is built again as the run built it: from the source it recorded
  (``generated:KIND(rows=..., seed=...)``, or a file), else from its suite entry (seed 0, the
  run's scale) (:func:`run_csr`);
- the device is the run's own: ``model.predict.device_rates(run.device, run.ceilings)``;
  ``call_costs`` (from ``scripts/call_overhead_probe.py --json``, :func:`probe_call_costs`)
  stand in for ``call_us`` and ``next_launch_us`` in runs measured before ``sparsescope
  ceilings`` had them.

Each case is scored by its backend (:func:`case_basis`), the same for every op, never by its
op's name:

- **own kernels** (an own backend by name, or a variant ``cuda-spmv-sell[sell-u4-m6-h1]`` of
  ``backends.variants.SPMV_OWN``): the op case rebuilt (the run's matrix, parameters and value
  type), the call planned on the host (``backend.host_plan_case``: its format built), its
  kernel shape refined from its SASS where a CUDA compiler is here, and predicted through the
  one prediction entry point (``context.predict.predict_plan``, the op's own ``predict``) in
  the timing mode the case was measured in (``latency`` or ``throughput``, its
  ``TimingConfig``): basis ``"model now"``. A backend that cannot plan without its device keeps
  the prediction the run stored: basis ``"stored"``;
- **a chooser's case** (``cuda-spmv-auto``, ``-auto-rules``: its notes name the kernel it
  ``selected`` and its ``selected_params``): that kernel, planned and predicted as above (its
  own host plan need not pick what it ran, after its trial);
- **a GPU library** (``cupy-cusparse-i32``, ``torch-cusparse-i*``, ``nvmath-cusparse-i32`` and
  its variants ``nvmath-cusparse-i32[alg=2,preprocess=0]``): planned and predicted the same
  way (CSR bytes, cuSPARSE's declared kernel shape, the route's fixed cost); a library that
  cannot plan on the host (most SpMM ones) is left out, as a CPU library is;
- **the block tensor-core kernel** (``spmm-cuda-blocktc``, and ``spmm-cuda-auto`` where it ran
  it, row-major X), which plans only on its device: the launch planned here as the backend
  plans it, registers from ``regs`` (``kernel instance -> registers``, :func:`read_regs`; 128
  otherwise, the backend's assumption), predicted by ``model.blocktc_predict`` with the flush
  the case was timed with: basis ``"model now"``;
- **the kernels of** :data:`KEEP_STORED` (rowgroup, rowwarp, auto otherwise, the block kernel
  on column-major X): the prediction
  the run stored, basis ``"stored"`` (their host plans assume the launch bound's registers, and
  auto's repeats no trial).

Each :class:`ScoredCase` carries the measured median and the prediction; its signed error is
``(measured - predicted) / measured`` (above 0: the model is fast). The SASS comes from this
host's compiler, which may differ from the device's (NVRTC versions): say so when quoting.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, asdict, dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from sparsescope._compressed import JSON_SUFFIXES, read_json, read_text
from sparsescope.errors import ResultsFormatError, UsageError

#: Basis of a prediction: today's model, or the one the run stored.
MODEL_NOW = "model now"
STORED = "stored"
#: Own kernels whose stored prediction is scored, not a host plan's: their host plans assume
#: the launch bound's registers (no compiled kernel here) and auto's repeats no trial, where the
#: run predicted the compiled kernel it ran (the block kernel is planned now: :data:`BLOCKTC`).
KEEP_STORED = ("spmm-cuda-rowgroup", "spmm-cuda-rowwarp", "spmm-cuda-auto", "spmm-cuda-blocktc")
BLOCKTC = "spmm-cuda-blocktc"
#: The end of ``context.predict_plan``'s reason for a backend that plans only on its device.
CANNOT_PLAN = "cannot plan without its device"


@dataclass(frozen=True)
class ScoredCase:
    """One measured case and a prediction of it."""

    gpu: str
    matrix: str
    backend: str
    """The case's backend label (a variant keeps its ``[...]``)."""
    measured_ms: float
    """Median of the run's samples."""
    predicted_ms: float | None
    """None: not modelled (``not_modelled`` says why)."""
    limiter: str = ""
    op: str = "spmv"
    k: int | None = None
    """SpMM: the number of dense columns."""
    layout: str = ""
    """SpMM: X's layout (``row`` / ``col``)."""
    basis: str = MODEL_NOW
    """``"model now"`` (predicted here) or ``"stored"`` (the run's own prediction)."""
    selected: str = ""
    """A chooser's pick (``notes['selected']``)."""
    table: str = ""
    """A chooser's selection table (``notes['selection_table']``, JSON)."""
    not_modelled: str = ""
    timing_mode: str = "latency"
    """The timing protocol's mode the case was measured in (``latency``: each call alone, the
    L2 flushed where the data fits; ``throughput``: calls back to back): the prediction is for
    the same mode (``model.throughput``)."""

    @property
    def error(self) -> float | None:
        """Signed error ``(measured - predicted) / measured``; None without a prediction."""
        if not self.predicted_ms or not self.measured_ms:
            return None
        return (self.measured_ms - self.predicted_ms) / self.measured_ms

    @property
    def variant(self) -> str:
        """``sell-u4-m6-h1`` of ``cuda-spmv-sell[sell-u4-m6-h1]``; the backend when plain."""
        return self.backend.partition("[")[2].rstrip("]") or self.backend

    @property
    def kind(self) -> str:
        """The matrix kind: the generator of a suite entry (``rmat`` of ``rmat-20``)."""
        return self.matrix.split("-")[0]

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict) -> ScoredCase:
        """A row of ``model score --json`` (or of the older offline score files)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in row.items() if k in known})


@dataclass(frozen=True)
class RunsScore:
    """What ``model score`` scored: every case, where they came from, and what stood in."""

    cases: tuple[ScoredCase, ...]
    sources: tuple[str, ...]
    notes: tuple[str, ...] = ()
    """Assumptions said once (call costs from a probe, the SASS source)."""


# -- inputs -------------------------------------------------------------------------------------
def results_files(paths: Iterable[str | Path]) -> list[Path]:
    """Each path as results files: a file as it is; a folder as every ``results.json`` (or
    ``results.json.xz`` / ``results.json.gz``) under it, sorted. A path that holds none is a
    usage error."""
    names = tuple(f"results{suffix}" for suffix in JSON_SUFFIXES)
    out: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(p for p in path.rglob("results.json*") if p.name in names)
            if not found:
                raise UsageError(f"{path}: no results.json (or .json.xz, .json.gz) under it")
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise UsageError(f"{path}: no such results file or folder")
    return out


@lru_cache(maxsize=2)
def suite_csr(suite: str, matrix: str, scale: float = 1.0, seed: int = 0):
    """The canonical float64 CSR of ``matrix``, an entry of ``suite`` (``seed6``,
    ``population-held-out#...``: the part after ``#`` is ignored) at ``scale``, generated with
    ``seed``; the last two kept (a run's cases are scored matrix by matrix, and a seed6 matrix
    at scale 1 holds up to 99 M nonzeros: more would hold gigabytes no case asks for again)."""
    from sparsescope.matrices.suites import build_entry, find_entry, split_suite_name
    from sparsescope.ops.base import canonical_csr

    name, _ = split_suite_name(suite)
    return canonical_csr(build_entry(find_entry(name, matrix, scale), 0 if seed is None
                                     else seed).csr)


_GENERATED = re.compile(r"^generated:(\w+)\((.*)\)$")


@lru_cache(maxsize=2)
def source_csr(source: str):
    """The canonical float64 CSR of a matrix a run recorded as ``generated:KIND(rows=R,
    cols=C, nnz=N, seed=S, PARAM=V, ...)`` (its ``MatrixRecord.source``), generated again with
    the same generator, sizes, seed and parameters; a file path or ``suitesparse:`` name is
    read as ``sparsescope run`` reads it. The last two kept (scoring asks for each matrix once
    per variant, matrix by matrix)."""
    import ast

    from sparsescope.ops.base import canonical_csr

    m = _GENERATED.match(source)
    if m is None:
        from sparsescope.matrices import read_matrix

        return canonical_csr(read_matrix(source).csr)
    from sparsescope.matrices.generators import generate

    params = {}
    for part in m.group(2).split(", "):
        key, _, value = part.partition("=")
        params[key.strip()] = ast.literal_eval(value.strip())
    rows, cols, nnz = params.pop("rows"), params.pop("cols"), params.pop("nnz")
    seed = params.pop("seed", 0)
    return canonical_csr(generate(m.group(1), rows, nnz, cols=cols, seed=seed, **params))


def run_csr(runset, matrix: str):
    """The CSR of ``matrix`` as the run built it: from its recorded source (a generator's
    call, or a file), else from the run's suite entry at the run's scale (seed 0)."""
    record = next((m for m in runset.matrices if m.name == matrix), None)
    if record is not None and record.source:
        return source_csr(record.source)
    return suite_csr(runset.suite, matrix, runset.scale)


def probe_call_costs(path: str | Path) -> dict[str, float]:
    """``call_us`` and ``next_launch_us`` from ``scripts/call_overhead_probe.py --json``: the
    flushed medians of one empty launch, and of two less one (the quantities ``sparsescope
    ceilings`` measures the same way)."""
    try:
        rows = {r["probe"]: r["median_us"] for r in read_json(path) if r["flushed"]}
        return {"call_us": rows["empty"], "next_launch_us": rows["empty x2"] - rows["empty"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a call_overhead_probe.py --json file ({exc})") from exc


def read_regs(path: str | Path) -> dict[str, int]:
    """Kernel instance -> registers, from a ``regs.txt`` of the block tensor-core recipe
    (lines ``spmm_blocktc<3, 1, true, 1, 4>: 96 registers, 0 B local``)."""
    out = {}
    for line in read_text(path).splitlines():
        m = re.match(r"(spmm_blocktc<.*>): (\d+) registers", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def read_scores(path: str | Path) -> tuple[ScoredCase, ...]:
    """The cases of an earlier ``model score --json`` (its ``cases``), or of the older offline
    score files (a list of rows); compressed (xz or gzip) or not."""
    path = Path(path)
    try:
        data = read_json(path)
    except (OSError, ValueError) as exc:
        raise ResultsFormatError(f"{path}: not a score file ({exc})") from exc
    rows = data.get("cases") if isinstance(data, dict) else data
    need = {f.name for f in fields(ScoredCase) if f.default is MISSING
            and f.default_factory is MISSING}
    if not isinstance(rows, list):
        raise ResultsFormatError(f"{path}: not a score file (no list of scored cases; a run's "
                                 f"results file is scored without --from-json)")
    for n, row in enumerate(rows):
        missing = sorted(need - set(row)) if isinstance(row, dict) else ["a JSON object"]
        if missing:
            raise ResultsFormatError(
                f"{path}: not a score file: case {n} lacks {', '.join(missing)} (a run's "
                f"results file is scored without --from-json)")
    return tuple(ScoredCase.from_dict(r) for r in rows)


def _median_ms(case) -> float | None:
    m = case.measurement
    if case.outcome != "ok" or m is None or not m.samples_ms:
        return None
    return float(statistics.median(m.samples_ms))


# -- scoring ------------------------------------------------------------------------------------
def score_runs(paths: Sequence[str | Path], *, matrices: Sequence[str] = (),
               call_costs: dict[str, float] | None = None,
               regs: dict[str, int] | None = None, sass: bool = True,
               progress: Callable[[str], None] | None = None) -> RunsScore:
    """Every scorable case of the runs at ``paths`` (files or folders), predicted by the model
    as it is now (or, for the kernels it cannot plan here, as the run stored it), beside
    its measured median. ``matrices``: only these matrices; ``regs``: the block kernel's
    registers by instance (default: each run folder's ``regs.txt`` where there is one);
    ``sass``: refine kernel shapes from their SASS where a compiler is here."""
    notes = []
    if call_costs:
        notes.append("call costs (for runs whose ceilings predate them): " + ", ".join(
            f"{k} {v:.2f} us" for k, v in call_costs.items()))
    cases: list[ScoredCase] = []
    files = results_files(paths)
    for path in files:
        run_regs = regs
        if run_regs is None:
            found = [p for p in (path.parent / "regs.txt", path.parent / "regs.txt.gz")
                     if p.is_file()]
            run_regs = read_regs(found[0]) if found else None
        cases += score_run(path, matrices=matrices, call_costs=call_costs, regs=run_regs,
                           sass=sass, progress=progress, notes=notes)
    return RunsScore(cases=tuple(cases), sources=tuple(str(p) for p in files),
                     notes=tuple(dict.fromkeys(notes)))


def run_rates(runset, call_costs: dict[str, float] | None = None):
    """``model.predict.DeviceRates`` of the run's device from its own ceilings (the call costs
    stand in where the run has none)."""
    from sparsescope.model.predict import device_rates

    ceilings = runset.ceilings
    if call_costs and ceilings is not None and getattr(ceilings, "call_us", None) is None:
        ceilings = replace(ceilings, **call_costs)
    return device_rates(runset.device, ceilings)


def score_run(path: str | Path, *, matrices: Sequence[str] = (),
              call_costs: dict[str, float] | None = None, regs: dict[str, int] | None = None,
              sass: bool = True, progress: Callable[[str], None] | None = None,
              notes: list[str] | None = None) -> list[ScoredCase]:
    """The scored cases of one results file (see :func:`score_runs`), for every op alike:
    each case's basis decided by :func:`case_basis` from its backend, never its op's name."""
    from sparsescope.backends.format_cache import FORMATS
    from sparsescope.context.device import rates_context, sass_status
    from sparsescope.context.predict import forget_plans
    from sparsescope.results.io import read_runset

    rs = read_runset(path)
    if rs.device.kind != "gpu":
        if notes is not None:
            notes.append(f"{path}: run on a CPU ({rs.device.name}): the time model is the GPU's, "
                         "nothing scored")
        return []
    only = set(matrices)
    picked = [c for c in rs.cases if (not only or c.matrix in only)
              and _median_ms(c) is not None and case_basis(c)]
    if not picked:
        return []
    rates = run_rates(rs, call_costs)
    device = None
    if any(case_basis(c) == PLANNED for c in picked):
        refine, why = sass_status(rs.device, sass)
        if why and notes is not None:
            notes.append(why)
        device = rates_context(rates, refine=refine, spec=rs.device,
                               origin=f"rates: measured by run {rs.run_id}")
    by_matrix: dict[str, list] = {}
    for c in picked:
        by_matrix.setdefault(c.matrix, []).append(c)
    out: list[ScoredCase] = []
    for matrix, mine in by_matrix.items():
        built: dict[tuple, Any] = {}
        for c in mine:
            scored = _score_case(rs, c, rates, device, regs or {}, built)
            if scored is not None:
                out.append(scored)
        # no case asks for this matrix's plans again: drop them, the model's answers and the
        # host formats kept for it before the next (a seed6 matrix at scale 1 packs into
        # gigabytes: two of them at once did not fit a 23 GB host)
        built.clear()
        forget_plans()
        FORMATS.clear()
        if progress:
            progress(f"{rs.device.name} {matrix}: {len(mine)} {op_title(mine[0].op)} cases "
                     "scored")
    return out


#: :func:`case_basis`: planned on the host and predicted through ``context.predict_plan``.
PLANNED = "planned"
#: :func:`case_basis`: the block tensor-core kernel's own plan (:func:`predict_blocktc_case`).
BLOCKTC_PLAN = "blocktc"


def case_basis(case) -> str:
    """How a stored case is scored: :data:`BLOCKTC_PLAN` (it ran the block tensor-core kernel
    on row-major X), :data:`STORED` (a backend of :data:`KEEP_STORED`), :data:`PLANNED` (any
    other own kernel, of any op; a chooser's case, as the own kernel it ``selected``; a GPU
    library), or "" (not scored: a CPU backend, or a chooser that names no own kernel)."""
    if ran_blocktc(case):
        return BLOCKTC_PLAN
    if case.backend in KEEP_STORED:
        return STORED
    if "selected" in case.notes:
        return PLANNED if _own(case.notes["selected"]) else ""
    if _own(case.backend) or _gpu_library(case.backend):
        return PLANNED
    return ""


def op_title(op: str) -> str:
    """How reports name ``op`` (its registry entry's ``title``: ``SpMV``); the name itself
    for an op this checkout does not know (an older score file)."""
    from sparsescope.registry import OPS

    entry = OPS.get(op)
    return entry.title if entry is not None else op


def _score_case(rs, c, rates, device, regs, built) -> ScoredCase | None:
    """One case scored by its :func:`case_basis` (None: a library the host cannot plan);
    ``built``: the op cases of this matrix made so far, by (dtype, index width, parameters)."""
    params = c.params
    common = dict(gpu=rs.device.name, matrix=c.matrix, backend=c.backend,
                  measured_ms=_median_ms(c), op=c.op, k=getattr(params, "k", None),
                  layout=getattr(params, "layout", ""), selected=c.notes.get("selected", ""),
                  table=c.notes.get("selection_table", ""),
                  timing_mode=getattr(c, "timing_mode", None) or "latency")
    basis = case_basis(c)
    if basis == BLOCKTC_PLAN:
        p = predict_blocktc_case(run_csr(rs, c.matrix), int(params.k), rates,
                                 flushed=bool(c.measurement.flushed), regs=regs)
        return ScoredCase(**common, predicted_ms=p.predicted_ms, limiter=p.limiter)
    why = "no stored prediction"
    if basis == PLANNED:
        plan = _planned(rs, c, device, built)
        if not plan.not_modelled.endswith(CANNOT_PLAN):
            p = plan.prediction
            return ScoredCase(**common, predicted_ms=p.predicted_ms if p else None,
                              limiter=p.limiter if p else "", not_modelled=plan.not_modelled)
        if not _own(c.notes.get("selected", c.backend)):
            return None   # a library that plans only on its device: not the model's to score
        why = f"{plan.not_modelled}, and the run stored no prediction"
    p = c.prediction   # kept as the run stored it, or the backend cannot plan on the host
    return ScoredCase(**common, basis=STORED,
                      predicted_ms=p.predicted_ms if p is not None else None,
                      limiter=p.limiter if p is not None else "",
                      not_modelled="" if p is not None else why)


def _planned(rs, c, device, built):
    """``context.predict_plan`` of the case's backend (a chooser's: the kernel it selected) on
    the op case rebuilt as the run built it (the matrix, the parameters, the value type and the
    backend's index width), in the timing mode the case was measured in."""
    from sparsescope.context.predict import predict_plan
    from sparsescope.ops.registry import get_op

    dtype = "float64" if c.value_bytes == 8 else "float32"
    backend = _chosen(c) if "selected" in c.notes else backend_of_label(c.backend)
    index_bytes = int(backend.capability.index_bytes[0])
    key = (c.op, dtype, index_bytes, repr(c.params))
    if key not in built:
        built[key] = get_op(c.op).make_case(run_csr(rs, c.matrix), c.params, value_dtype=dtype,
                                            index_bytes=index_bytes)
    timing = getattr(c.measurement, "config", None)
    return predict_plan(built[key], backend, device, name=c.backend, value_dtype=dtype,
                        index_bytes=index_bytes, timing=timing)


#: Notes an own kernel records under another name than its parameter's (a run made before
#: choosers recorded ``selected_params``: the chosen kernel's notes are all there is).
_NOTE_OF_PARAM = {"tpr": "threads_per_row", "block": "block_width"}


def _recorded_params(name: str, notes: dict) -> dict:
    """The parameters of the kernel ``name`` a chooser ran, from a case's notes: its
    ``selected_params`` (JSON); in a run made before those were recorded, each of the kernel's
    parameters (its class's ``defaults``) that its own notes give as an integer (cant's
    blocked16 in results/h200/model: ``stage`` 4, so the staged ``spmv_sell_dae`` ran, not the
    default launch). A name this checkout does not know: none."""
    if notes.get("selected_params"):
        return json.loads(notes["selected_params"])
    from sparsescope.errors import SparsescopeError

    try:
        defaults = getattr(backend_of_label(name), "defaults", None) or {}
    except (SparsescopeError, KeyError, TypeError, ValueError):
        return {}
    params = {}
    for key in defaults:
        text = str(notes.get(_NOTE_OF_PARAM.get(key, key), ""))
        if text.lstrip("-").isdigit():
            params[key] = int(text)
    return params


def _chosen(case):
    """The backend a chooser's case ran: ``notes['selected']`` with its recorded parameters
    (:func:`_recorded_params`) as its options."""
    from sparsescope.backends.runner import BackendChoice

    name = case.notes["selected"]
    params = _recorded_params(name, case.notes)
    options = tuple(sorted(params.items()))
    label = f"{name}[{','.join(f'{k}={v}' for k, v in options)}]" if options else name
    return BackendChoice(name, options, label).create()


@lru_cache(maxsize=64)
def _gpu_library(label: str) -> bool:
    """A library backend (not ours) that runs on a GPU, by its label (``name[opt=v,...]``
    for a variant); False for a name this checkout does not know."""
    from sparsescope.errors import SparsescopeError
    from sparsescope.registry import is_own

    if is_own(label):
        return False
    try:
        return backend_of_label(label).capability.device == "gpu"
    except (SparsescopeError, KeyError, TypeError, ValueError):
        return False


def _own(label: str) -> bool:
    """An own kernel: a named variant of ``SPMV_OWN``, or an own backend by name."""
    from sparsescope.backends.variants import SPMV_OWN
    from sparsescope.registry import is_own

    name, _, variant = label.partition("[")
    if variant:
        return variant.rstrip("]") in SPMV_OWN
    return is_own(name)


def backend_of_label(label: str):
    """The backend of a case label: a named variant of ``SPMV_OWN`` with its options, a
    ``name[opt=v,...]`` label with those options (``nvmath-cusparse-i32[alg=2,preprocess=0]``),
    or the plain backend."""
    from sparsescope.backends.registry import get_backend
    from sparsescope.backends.runner import BackendChoice
    from sparsescope.backends.variants import SPMV_OWN, parse_variant

    name, _, variant = label.partition("[")
    if not variant:
        return get_backend(name)
    if variant.rstrip("]") in SPMV_OWN:
        options = SPMV_OWN[variant.rstrip("]")][1]
        return BackendChoice(name, tuple(options.items()), label).create()
    return parse_variant(label).create()


def ran_blocktc(case) -> bool:
    """Whether ``case`` ran the block tensor-core kernel on row-major X (itself, or auto's
    pick of it)."""
    ran = case.backend == BLOCKTC or (case.backend == "spmm-cuda-auto"
                                      and case.notes.get("selected") == BLOCKTC)
    return ran and getattr(case.params, "layout", "") == "row"


def predict_blocktc_case(csr, k: int, rates, *, flushed: bool,
                         regs: dict[str, int] | None = None):
    """Today's ``model.blocktc_predict`` of one block tensor-core call on ``csr`` at ``k``
    (3xTF32, the launch planned as ``spmm-cuda-blocktc`` plans it)."""
    from sparsescope.backends.spmm_blocktc import block_format, blocktc_launch, plan_blocktc
    from sparsescope.model.blocktc_predict import predict_blocktc

    fmt = block_format(csr.indptr, csr.indices, csr.data, csr.shape)
    plan = plan_blocktc(fmt.block_rows, fmt.blocks, csr.nnz, k, rates.sm_count)
    launch = blocktc_launch(plan, fmt.block_ptr, csr.shape[0], csr.shape[1], k, 3,
                            (regs or {}).get(plan.kernel))
    return predict_blocktc(launch, rates, flushed=flushed)


def as_jsonable(score: RunsScore, **sections: Any) -> dict:
    """The ``--json`` document: sources, notes, every case, and the summaries given."""
    return {"sources": list(score.sources), "notes": list(score.notes),
            "cases": [c.as_dict() for c in score.cases], **sections}


def blocktc_registers() -> str:
    """``regs.txt`` of the block tensor-core kernel on the present GPU: one line
    ``spmm_blocktc<...>: R registers`` for every instance its host plan can pick (3xTF32 and
    TF32; 1, 2, 4 column groups; whole and split block rows), read from the compiled kernel
    (CuPy's function attribute; ``unknown`` where it cannot be read). :func:`read_regs` reads
    it back for ``model score --regs``. Needs a GPU and CuPy."""
    from sparsescope.backends.spmm_blocktc import SOURCE, choose_batch, kernel_name
    from sparsescope.backends.spmm_cuda import compiled_registers

    lines = []
    for passes in (3, 1):
        for groups in (1, 2, 4):
            splits = (2, 4, 8, 16) if groups == 1 else (2, 4)  # SPLIT > 4 with one group only
            for vec4, split in ((True, 1), (False, 1), *((True, s) for s in splits)):
                name = kernel_name(passes, groups, vec4, split, choose_batch(groups))
                regs = compiled_registers(SOURCE, name)
                lines.append(f"{name}: {regs if regs is not None else 'unknown'} registers")
    return "\n".join(lines) + "\n"
