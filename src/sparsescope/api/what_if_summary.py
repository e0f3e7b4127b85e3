"""The what-if's account of itself (``sparsescope model MATRIX --backend ...``): a summary row
per backend (predicted time, the limiter in words, a confidence), ``cuda-spmv-auto``'s choice
from its one candidate list with why it leaves out a backend predicted faster, the memory budget
of the host plans and the refusal of a matrix the model cannot hold, and the planning of every
backend ahead of the predictions (one SASS compile per source). Used by
:func:`sparsescope.api.models.what_if_matrices`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sparsescope.errors import UsageError


@dataclass(frozen=True)
class SummaryRow:
    """One backend on one matrix, as the summary table shows it."""

    matrix: str
    backend: str
    predicted_ms: float | None
    limiter: str = ""
    """The binding term (``model.term_labels.binding_term``): the largest term shown."""
    limiter_label: str = ""
    """The limiter in words, with the memory system's leading part where it binds."""
    confidence: str = ""
    """``high``, ``medium`` or ``low`` (:func:`confidence`); "" when not modelled."""
    confidence_reason: str = ""
    note: str = ""
    """auto: its choice; a backend predicted faster than auto's choice: why auto leaves it out;
    not modelled: why."""
    params: dict = field(default_factory=dict)
    """The op's parameters of the case (SpMM: ``k``, ``layout``); empty for SpMV. The summary
    has a table per matrix and parameter set."""

    @property
    def group(self) -> str:
        """The table the row belongs to: the matrix, with the parameters where there are any
        (``pl  k=8 layout=row``)."""
        return params_group(self.matrix, self.params)

    def as_dict(self) -> dict:
        return asdict(self)


def params_group(matrix: str, params: dict) -> str:
    """``matrix`` and the op's parameters as one table's title (``OpParams.label``'s form)."""
    label = " ".join(f"{k}={v}" for k, v in params.items())
    return f"{matrix}  {label}" if label else matrix


@dataclass(frozen=True)
class AutoChoice:
    """``cuda-spmv-auto``'s choice on one matrix, from its one candidate list."""

    matrix: str
    chosen: str
    """The chosen candidate's label (``cuda-spmv-adaptive[iters=1]``)."""
    predicted_ms: float | None
    rule: str
    """How it chose: ``predicted-fastest``, or the rules' name when nothing was predicted."""
    reason: str
    """The selection's reason: its rule and the prediction table, fastest first."""
    candidates: tuple[dict, ...] = ()
    """Every candidate's prediction (``select_predicted.CandidatePrediction.as_dict``)."""
    left_out: tuple[dict, ...] = ()
    """Backends of this what-if predicted faster than the choice: ``backend``,
    ``predicted_ms`` and ``why`` auto leaves it out."""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ModelWhatIf:
    """A what-if with its summary: every case (``whatif.WhatIfCase``), a summary row for each
    (fastest first per matrix), auto's choice per matrix, and the memory plan."""

    gpu: Any
    """The ``context.DeviceContext`` predicted on."""
    cases: tuple
    summary: tuple[SummaryRow, ...] = ()
    auto: tuple[AutoChoice, ...] = ()
    memory_budget_bytes: int | None = None
    plan_samples: dict = field(default_factory=dict)
    """Matrix -> the row sample its formats were planned on (``RowSample.as_dict``), for the
    matrices above the budget."""
    work_samples: dict = field(default_factory=dict)
    """Matrix -> the stratified row sample the model's row terms ran on
    (``model.work_sample.WorkSample.as_dict``: its size and the terms), for the matrices above
    the work budget."""
    timing_mode: str = "latency"
    """The timing mode every case was predicted in (``timing.types.TIMING_MODES``): latency,
    each call on its own with the L2 flushed where the working set fits; throughput, calls
    back to back with the L2 warm (``model.throughput``). auto chose in it too."""

    @property
    def plan_bytes_per_nnz(self) -> int:
        """What a plan of every backend holds a nonzero (``model.plan_sample``)."""
        from sparsescope.model.plan_sample import PLAN_BYTES_PER_NNZ

        return PLAN_BYTES_PER_NNZ

    @staticmethod
    def term_label(name: str) -> str:
        """A term's words (``model.term_labels.term_label``)."""
        from sparsescope.model.term_labels import term_label

        return term_label(name)

    @staticmethod
    def queue_shares(prediction) -> dict[str, float]:
        """Where one loaded iteration of the memory system goes
        (``model.term_labels.queue_shares``)."""
        from sparsescope.model.term_labels import queue_shares

        return queue_shares(prediction)

    def case_docs(self) -> list[dict]:
        """The ``--json`` records: each case's own (``WhatIfCase.as_dict``) with the
        ``timing_mode`` it was predicted in, its ``summary`` row, its ``plan_sample`` (or None)
        and, for auto, ``auto_choice``."""
        rows = {(r.group, r.backend): r for r in self.summary}
        choices = {a.matrix: a for a in self.auto}
        out = []
        for case in self.cases:
            doc = case.as_dict()
            doc["timing_mode"] = self.timing_mode
            row = rows.get((params_group(case.matrix, case.params), case.backend))
            doc["summary"] = row.as_dict() if row is not None else None
            doc["plan_sample"] = (self.plan_samples.get(case.matrix)
                                  if _packs_format(case.backend) else None)
            doc["memory_budget_bytes"] = self.memory_budget_bytes
            if case.matrix in self.work_samples:  # absent at or below the work budget
                doc["work_sample"] = self.work_samples[case.matrix]
            if case.backend == AUTO_BACKEND and case.matrix in choices:
                doc["auto_choice"] = choices[case.matrix].as_dict()
            out.append(doc)
        return out


AUTO_BACKEND = "cuda-spmv-auto"


def chooses_by(backend: str) -> str:
    """How ``backend`` chooses its kernel (an auto backend's ``by``: ``prediction`` or
    ``rules``; its case's kernel is the one it chose), or "" for a backend of one kernel."""
    from sparsescope.backends.registry import get_backend

    try:
        return getattr(get_backend(backend), "by", None) or ""
    except Exception:  # noqa: BLE001 - a backend that cannot be built chooses nothing here
        return ""


def _packs_format(backend: str) -> bool:
    """Whether ``backend`` packs a host format (and so plans on a sample above the budget)."""
    from sparsescope.backends.registry import get_backend

    try:
        found = get_backend(backend)
    except Exception:  # noqa: BLE001 - a backend that cannot be built packs nothing here
        return False
    # an auto backend's plan is its chosen kernel's
    return hasattr(found, "build_format") or getattr(found, "by", "") == "prediction"


def confidence(case, device) -> tuple[str, str]:
    """(level, why) of a prediction: ``high`` with every input of the model measured or read
    (the device's ceilings measured, the kernel's shape read from its SASS, the whole matrix
    planned and modelled), ``medium`` with one of them assumed, ``low`` with two or more; why
    names what was assumed. On measured runs the model's |error| is 9-11 % at the median and
    31 % at the 90th percentile (H100, H200; ``select_predicted.MODEL_ERROR``)."""
    if case.prediction is None:
        return "", ""
    weaker = []
    if device.ceilings is None:
        weaker.append(f"datasheet rates (no ceilings measured on {device.name})")
    if not case.kernel_source.startswith("SASS of"):
        weaker.append("kernel shape declared, not read from its SASS")
    assumptions = " ".join(case.assumptions)
    if "format planned on a row sample" in assumptions:
        weaker.append("format planned on a row sample")
    if "; sampled (seed" in assumptions:
        weaker.append("x gathers sampled")
    level = "high" if not weaker else "medium" if len(weaker) == 1 else "low"
    return level, "; ".join(weaker) or "measured rates, SASS shape, whole matrix"


def _summary_rows(cases, device, auto: dict[str, AutoChoice]) -> list[SummaryRow]:
    """A row per case, fastest first per matrix (not modelled last), each note filled."""
    from sparsescope.model.term_labels import binding_term, limiter_label

    rows = []
    for case in cases:
        p = case.prediction
        level, why = confidence(case, device)
        note = case.not_modelled if p is None else ""
        choice = auto.get(case.matrix)
        if p is not None and case.backend == AUTO_BACKEND and choice is not None:
            note = f"chose {choice.chosen}"
        elif p is not None and case.kernel and (by := chooses_by(case.backend)):
            # a chooser without a candidate table here (spmm-cuda-auto, the rules): its host
            # plan's kernel, chosen in the what-if's timing mode (SpMV's auto accounts for its
            # choice with its table: AutoChoice, above)
            note = (f"chose {case.kernel}, the fastest predicted of its candidates"
                    if by == "prediction" else f"chose {case.kernel} by its rules")
        elif p is not None and choice is not None:
            for left in choice.left_out:
                if left["backend"] == case.backend:
                    note = f"faster than auto's choice; auto leaves it out: {left['why']}"
        rows.append(SummaryRow(
            matrix=case.matrix, backend=case.backend,
            predicted_ms=p.predicted_ms if p is not None else None,
            limiter=binding_term(p) if p is not None else "",
            limiter_label=limiter_label(p) if p is not None else "",
            confidence=level, confidence_reason=why, note=note, params=dict(case.params)))
    order = {g: i for i, g in enumerate(dict.fromkeys(r.group for r in rows))}
    return sorted(rows, key=lambda r: (order[r.group], r.predicted_ms is None,
                                       r.predicted_ms or 0.0))


def _auto_choice(matrix, device, value_dtype: str,
                 timing: Any = None) -> tuple[AutoChoice, list, Any]:
    """(auto's choice on ``matrix``, its candidates, the matrix statistics) from the same
    candidate list its plan used, in ``timing``'s mode (a ``TimingConfig``; None: latency),
    the mode its plan was told: the predictions are kept for the matrix
    (``context.predict``, keyed by the mode), so asking again finds them and plans
    nothing."""
    from sparsescope.backends.select_predicted import (
        Candidate,
        candidates,
        select_by_prediction,
        statistics_of,
    )
    from sparsescope.backends.spmv_auto import CHOICES

    stats = statistics_of(matrix.csr)
    selection, table = select_by_prediction(matrix.csr, device, value_dtype=value_dtype,
                                            stats=stats, classes=CHOICES, timing=timing)
    chosen = Candidate(selection.backend, dict(selection.params))
    found = [p for p in table if p.candidate == chosen]
    return AutoChoice(matrix=matrix.name, chosen=chosen.label,
                      predicted_ms=found[0].predicted_ms if found else None,
                      rule=selection.rule, reason=selection.reason,
                      candidates=tuple(p.as_dict() for p in table)), candidates(stats), stats


def _left_out(choice: AutoChoice, cases, found, stats) -> AutoChoice:
    """``choice`` with the backends of ``cases`` (its matrix's) predicted faster, and why."""
    from sparsescope.backends.registry import get_backend
    from sparsescope.backends.select_predicted import left_out_reason

    if choice.predicted_ms is None:
        return choice
    left = []
    for case in cases:
        p = case.prediction
        if (case.matrix != choice.matrix or case.backend == AUTO_BACKEND or p is None
                or p.predicted_ms >= choice.predicted_ms):
            continue
        params = dict(getattr(get_backend(case.backend), "params", None) or {})
        why = left_out_reason(case.backend, params, found, stats)
        left.append({"backend": case.backend, "predicted_ms": p.predicted_ms,
                     "why": why or "one of auto's candidates (see its table)"})
    return replace(choice, left_out=tuple(left))


def parse_bytes(text: str | int | None) -> int | None:
    """``2GiB``, ``500MB``, ``1.5G`` or a plain count of bytes -> bytes; None for None. Bad
    text is a :class:`UsageError`."""
    if text is None or isinstance(text, int):
        return text
    units = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6,
             "mib": 2**20, "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12,
             "tib": 2**40}
    raw = str(text).strip().lower().replace(" ", "")
    number = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(number):]
    try:
        value = float(number) * units[unit]
    except (KeyError, ValueError):
        raise UsageError(f"--memory-budget: {text!r} is not a size (e.g. 2GiB, 500MB, "
                         "1073741824)") from None
    if not 0 < value < math.inf:
        raise UsageError(f"--memory-budget must be > 0, got {text!r}")
    return int(value)


def _check_fits(name: str, rows: int, cols: int, nnz: int, budget: int) -> None:
    """Refuse a matrix whose arrays and the model's own (``model.plan_sample.model_bytes``)
    exceed this machine's memory, before anything of it is built or planned."""
    from sparsescope.errors import MatrixTooLargeError
    from sparsescope.matrices._csr import csr_memory_parts, physical_memory_bytes
    from sparsescope.model.plan_sample import model_bytes

    memory = physical_memory_bytes()
    matrix = sum(b for _, b in csr_memory_parts(rows, cols, nnz))
    model = model_bytes(rows, cols, nnz, budget)
    if memory is None or matrix + model <= memory:
        return
    raise MatrixTooLargeError(
        name, f"{rows:,} x {cols:,} with {nnz:,} nonzeros: the matrix needs {matrix:,} bytes "
              f"and the model {model:,} more (plans within the {budget:,}-byte budget, its "
              f"per-row and per-column arrays), more than this machine's {memory:,} bytes",
        needed_bytes=matrix + model, memory_bytes=memory)


def _check_suite(suite: str, scale: float, names: Sequence[str], budget: int) -> None:
    """Refuse, before generating any, an entry the model cannot hold (:func:`_check_fits`)."""
    from sparsescope import matrices
    from sparsescope.matrices.suites import find_entry

    try:
        entries = ([find_entry(suite, n, scale) for n in dict.fromkeys(names)] if names
                   else matrices.suite_entries(suite, scale=scale))
    except Exception:  # noqa: BLE001 - load_matrices raises the same error, named
        return
    for entry in entries:
        _check_fits(f"{suite}#{entry.name}", entry.rows, entry.cols, entry.nnz, budget)


class _Matrices:
    """The matrices as the what-if takes them: each checked against memory, and, once its
    cases are predicted (the plans still kept), auto's choice and the plan sample read."""

    def __init__(self, device, value_dtype: str, budget: int, auto: bool,
                 names: Sequence[str] = (), timing: Any = None, op: str = "spmv",
                 params_list: Sequence[Any] = (None,)) -> None:
        self.device, self.value_dtype, self.budget, self.want_auto = (device, value_dtype,
                                                                       budget, auto)
        self.names = tuple(names)
        self.timing = timing
        """The ``TimingConfig`` the what-if predicts in: auto's choice is read in its mode."""
        self.op, self.params_list = op, tuple(params_list)
        """The op and its parameter sets the backends are planned for ahead."""
        self.auto: dict[str, AutoChoice] = {}
        self.found: dict[str, tuple] = {}
        self.samples: dict[str, dict] = {}
        self.work_samples: dict[str, dict] = {}

    def noted(self, loaded, bar):
        """The matrices, the bar saying which one is being planned."""
        from sparsescope.model.plan_sample import row_sample, sample_target
        from sparsescope.model.work_sample import sample_for

        for matrix in loaded:
            csr = matrix.csr
            _check_fits(matrix.name, *csr.shape, int(csr.nnz), self.budget)
            bar.note(f"planning {matrix.name}")
            _plan_ahead(csr, self.names, self.device, self.value_dtype, self.want_auto,
                        self.op, self.params_list)
            yield matrix
            target = sample_target(int(csr.nnz), self.budget)
            if target is not None:
                self.samples[matrix.name] = row_sample(csr.indptr, target).as_dict()
            work = sample_for(csr.indptr)
            if work is not None:
                self.work_samples[matrix.name] = work.as_dict()
            if self.want_auto and self.device.modelled:
                choice, found, stats = _auto_choice(matrix, self.device, self.value_dtype,
                                                    self.timing)
                self.auto[matrix.name] = choice
                self.found[matrix.name] = (found, stats)
            bar.note("loading the next matrix")


def _plan_ahead(csr, names: Sequence[str], device, value_dtype: str, auto: bool,
                op: str = "spmv", params_list: Sequence[Any] = (None,)) -> None:
    """Plan every backend of the what-if (for ``op`` with each of ``params_list``), and
    auto's candidates, before any is predicted, so that their kernels' SASS is read in one
    compile per source (``context.prefetch_sass``): with the SASS cache empty, 2 compiles for
    ``--backend all`` instead of one a kernel. The plans are kept for the matrix
    (``context.planned_call``): the what-if finds them. Nothing without a SASS refiner
    (``--no-sass``, no compiler)."""
    if device.refine is None or not device.modelled:
        return
    from sparsescope.backends.registry import get_backend
    from sparsescope.backends.select_predicted import candidates, statistics_of
    from sparsescope.backends.spmv_auto import CHOICES
    from sparsescope.context.predict import plan_case, planned_call, prefetch_sass

    backends = []
    for name in names:
        backend = get_backend(name)
        # a chooser's plan predicts its candidates: planned below (SpMV) or when predicted
        # (SpMM), it comes after them
        if backend.capability.device == "gpu" and getattr(backend, "by", None) is None:
            backends.append(backend)
    if auto:
        backends += [CHOICES[c.backend](breakdown=False, **c.params)
                     for c in candidates(statistics_of(csr))]
    cases: dict[tuple, Any] = {}
    shapes = []
    for backend in backends:
        width = int(backend.capability.index_bytes[0])
        # auto's candidates are SpMV kernels: planned for the SpMV case
        plan_op = op if op in backend.capability.ops else "spmv"
        for params in (params_list if plan_op == op else (None,)):
            key = (plan_op, width, params)
            if key not in cases:
                cases[key] = plan_case(key[0], csr, params, value_dtype=value_dtype,
                                       index_bytes=width)
            shapes.append(planned_call(cases[key], backend, device, value_dtype,
                                       width).shape)
    prefetch_sass([s for s in shapes if s is not None], device)
