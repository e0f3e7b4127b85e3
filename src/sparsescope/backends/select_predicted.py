"""Choose an own SpMV kernel by the time model's prediction on the present device.

Every candidate of :func:`candidates` (each own kernel family, with the launch parameters worth
trying) is planned on the host (its format built, its kernel shape read from its SASS where a
compiler is at hand) and predicted through the one entry point (``context.predict_plan``:
the SpMV op's ``predict``, :func:`~sparsescope.model.predict.predict_spmv`) from the device's
rates (its measured ceilings over its datasheet). The smallest predicted time wins::

    chosen = argmin over candidates c of predicted_ms(c, matrix, device)

Candidates predicted within :data:`TRIAL_MARGIN` of the fastest (at most :data:`TRIAL_MAX`,
each kernel family's fastest first: :func:`shortlist`) are closer than the model can rank:
``cuda-spmv-auto`` times them on the device (a few calls each, :mod:`.trial`) and keeps the
fastest measured. No threshold tuned on one GPU decides. The matrix statistics of :mod:`select`
only name the 1 x B blocking width worth planning (the one whose estimated bytes are
fewest); the model tells whether those bytes win on this device. The reason kept with the
case is the prediction table, fastest first (:func:`prediction_table`).

A candidate the model cannot take (no shape, a failed plan) is listed with its reason and never
chosen. When no candidate can be predicted, the rules of :mod:`select` decide, and the reason
says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import scipy.sparse as sp

from sparsescope import registry
from sparsescope.backends.choice_samples import chooser_plans
from sparsescope.backends.select import (
    BLOCKED_PARAMS,
    MatrixStatistics,
    Selection,
    matrix_statistics,
    select_kernel,
)
from sparsescope.backends.spmv_device import BLOCK
from sparsescope.backends.spmv_tiled import ITERS as ADAPTIVE_ITERS
from sparsescope.model.last_matrix import LastMatrixAnswers
from sparsescope.model.work_sample import sample_key

#: The own SpMV kernels ``cuda-spmv-auto`` chooses among: every candidate of :func:`candidates`
#: is one of them, with its launch parameters. The one declaration: ``spmv_auto.CHOICES``
#: (name -> class), the ``auto-candidates`` variant set (``variants.AUTO_CANDIDATES``) and the
#: README's list follow from it; ``tests/backends/test_auto_choices.py`` checks that every own
#: SpMV kernel is here or in :data:`NOT_CHOSEN`.
AUTO_KERNELS = ("cuda-spmv-adaptive", "cuda-spmv-merge", "cuda-spmv-sell", "cuda-spmv-delta16",
                "cuda-spmv-blocked16")
#: The own SpMV kernels auto leaves out, and why.
NOT_CHOSEN = {
    "cuda-csr-scalar": "the textbook CSR kernel (a thread a row), kept as a reference",
    "cuda-csr-vector": "the textbook CSR kernel (a warp a row), kept as a reference",
    "cuda-spmv-delta16-tiles": (
        "its 16-bit offsets are what cuda-spmv-delta16 moves, in SELL slices that stream "
        "better; as a tile kernel it lacks the warp-per-long-row path of the INT32 tiles "
        "(the tiles list long rows for a warp with INT32 columns only), so the irregular "
        "matrices that want tiles go to cuda-spmv-adaptive. On the six seed6 analogs on the H200 "
        "(results/h200/kernels) it was slower than adaptive (iters=2) and than auto's pick on "
        "every one; planning it would add a third format build to every choice"),
}


#: Why auto leaves out a backend that is not an own kernel, by what it is.
LIBRARY_LEFT_OUT = ("a library kernel (cuSPARSE): auto chooses among sparsescope's own kernels, "
                    "whose formats it plans and whose launches it predicts and times alike")
RULES_LEFT_OUT = "auto by the rules of matrix statistics, kept to compare: not a kernel itself"


def left_out_reason(backend: str, params: dict[str, Any], found: list[Candidate],
                    stats: MatrixStatistics | None = None) -> str:
    """Why ``cuda-spmv-auto`` does not choose ``backend`` with ``params`` (its launch as a
    backend of its own) on a matrix whose candidates are ``found`` (:func:`candidates` of
    ``stats``); "" when it is one of them."""
    labels = [c.label for c in found if c.backend == backend]
    if any(c.backend == backend and all(params.get(k) == v for k, v in c.params.items())
           for c in found):
        return ""
    if backend in NOT_CHOSEN:
        return f"not one of auto's kernels: {NOT_CHOSEN[backend]}"
    if backend == "cuda-spmv-auto-rules":
        return RULES_LEFT_OUT
    if backend in AUTO_KERNELS:
        if backend == "cuda-spmv-blocked16" and not labels:
            width = stats.block_width if stats is not None else 1
            return ("auto plans 1 x B blocks only where the matrix statistics find a width B > 1"
                    f" that moves fewer bytes than 16-bit offsets (here B = {width})")
        return (f"auto plans {backend} with other launches: "
                f"{', '.join(labels) or 'none on this matrix'}")
    if any(name == backend for _, name in registry.LIBRARY_BACKENDS):
        return LIBRARY_LEFT_OUT
    return "not one of the kernels auto chooses among (a plug-in's, or another op's)"


def kernel_classes() -> dict[str, type]:
    """Backend name -> class of each of :data:`AUTO_KERNELS` (from the registry table)."""
    return {name: registry.load_backend_factory(name) for name in AUTO_KERNELS}


#: Register-pipelined launches of the SELL kernels: (unroll, minimum blocks per SM).
SELL_LAUNCHES = ((4, 6), (2, 8))
#: Threads per row of the SELL kernels (2: more warps and shorter slices for few rows).
SELL_TPRS = (1, 2)
#: Short SELL pieces: rows cut into pieces of at most this many steps of each of their lanes
#: (``long_row = steps x tpr``), planned at :data:`SHORT_PIECE_TPRS` threads per row with the
#: (2, 8) launch. A warp walks its slice's widest lane, one dependent step after another; the
#: default cut (as long as the 99th-percentile row) leaves the warps of a skewed matrix's
#: long rows walking many times their neighbours' steps, and the kernel waits for them (the
#: model's imbalance term). A shorter piece costs one partial sum more. The model weighs the
#: two on the present device; the trial times the close ones.
SHORT_PIECE_STEPS = (16, 32)
SHORT_PIECE_TPRS = (2, 4)
SHORT_PIECE_LAUNCH = {"unroll": 2, "minb": 8}
#: Every (threads per row, long_row = steps x tpr) of the short pieces.
SHORT_PIECE_CUTS = tuple((tpr, steps * tpr) for tpr in SHORT_PIECE_TPRS
                         for steps in SHORT_PIECE_STEPS)
#: Register-pipelined launch of the blocked kernel besides the staged one (BLOCKED_PARAMS).
BLOCKED_PIPELINED = {"unroll": 2, "minb": 8}
#: The model's error taken for ranking: a case's |error| lies between the median (10.9 % on the
#: H200, 9.0 % on the H100) and the 90th percentile (30.7 %, 30.9 %) on the seed6 analogs
#: (results/*/model).
MODEL_ERROR = 0.15
#: Candidates predicted within this share of the fastest are timed before the choice: with
#: errors of +-e, a candidate predicted r times the fastest may still be faster while
#: r < (1 + e) / (1 - e) (1.35 for e = 0.15).
TRIAL_MARGIN = (1 + MODEL_ERROR) / (1 - MODEL_ERROR) - 1
#: At most this many candidates are timed (each is uploaded and run a few times; its format is
#: already built by the plan).
TRIAL_MAX = 6
#: Rows of the table the reason quotes (the rest are in the case's ``selection_table``).
REASON_ROWS = 5


@dataclass(frozen=True)
class Candidate:
    """One own kernel with its launch parameters."""

    backend: str
    params: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.backend}[{inner}]" if inner else self.backend


@dataclass(frozen=True)
class CandidatePrediction:
    """A candidate's predicted time (ms) and limiter, or why it has none."""

    candidate: Candidate
    predicted_ms: float | None
    limiter: str = ""
    not_modelled: str = ""
    plan_s: float = 0.0
    trial_ms: float | None = None
    """Its median time in the trial on the device (``cuda-spmv-auto``), or None: not timed."""
    floor_ms: float | None = None
    """Its format's memory floor (``model.predict.format_floor``), or None."""
    limiter_label: str = ""
    """The binding term in words (``model.term_labels.limiter_label``); "" when none."""

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.candidate.backend, "params": dict(self.candidate.params),
                "label": self.candidate.label, "predicted_ms": self.predicted_ms,
                "limiter": self.limiter, "limiter_label": self.limiter_label,
                "not_modelled": self.not_modelled, "plan_s": self.plan_s,
                "trial_ms": self.trial_ms, "floor_ms": self.floor_ms}


def candidates(stats: MatrixStatistics) -> list[Candidate]:
    """The kernels the prediction chooses among, for a matrix with ``stats``:

    - whole-row tiles (``cuda-spmv-adaptive``) of 1,024 and 2,048 nonzeros, and merge-path
      tiles (``cuda-spmv-merge``); where a row may be longer than a whole-row tile
      (:func:`rows_may_split`), the whole-row tiles in one launch too (``finish=1``: the tile
      that stores a split row's last partial sums the row, no ``spmv_fixup`` launch; it won
      in the throughput mode where a few rows thousands long cut the matrix, and lost
      elsewhere, results/h100/real-dev/2026-11-28-finish-warp, so the model and the
      trial choose);
    - SELL-32-256 slices with INT32 columns (``cuda-spmv-sell``) and with 16-bit offsets
      (``cuda-spmv-delta16``), each at :data:`SELL_TPRS` threads per row and
      :data:`SELL_LAUNCHES`;
    - INT32 SELL slices with short pieces (:func:`short_piece_long_rows`) where a row is longer
      than a short piece and the short piece is shorter than the default cut;
    - 1 x B blocks (``cuda-spmv-blocked16``, staged by cp.async) when the statistics find a
      width B > 1 that moves fewer bytes than 16-bit offsets, at 1 and 2 threads per row, and
      register-pipelined (:data:`BLOCKED_PIPELINED`) at 1.

    An empty matrix has one candidate (whole-row tiles)."""
    out = [Candidate("cuda-spmv-adaptive", {"iters": 1})]
    if stats.nnz == 0:
        return out
    out += [Candidate("cuda-spmv-adaptive", {"iters": 2}), Candidate("cuda-spmv-merge")]
    out += [Candidate("cuda-spmv-adaptive", {"iters": iters, "finish": 1})
            for iters in ADAPTIVE_ITERS if rows_may_split(stats, iters)]
    for backend in ("cuda-spmv-sell", "cuda-spmv-delta16"):
        out += [Candidate(backend, {"tpr": tpr, "unroll": unroll, "minb": minb})
                for tpr in SELL_TPRS for unroll, minb in SELL_LAUNCHES]
    out += [Candidate("cuda-spmv-sell", {"tpr": tpr, **SHORT_PIECE_LAUNCH, "long_row": cut})
            for tpr, cut in short_piece_long_rows(stats)]
    if stats.block_width > 1:
        out += [Candidate("cuda-spmv-blocked16",
                          {**BLOCKED_PARAMS, "tpr": tpr, "block": stats.block_width})
                for tpr in SELL_TPRS]
        out.append(Candidate("cuda-spmv-blocked16",
                             {**BLOCKED_PIPELINED, "block": stats.block_width}))
    return out


def rows_may_split(stats: MatrixStatistics, iters: int) -> bool:
    """Whether a row may be cut by whole-row tiles of ``iters`` chunks a thread: a tile holds
    ``BLOCK x iters`` aligned 4-nonzero chunks, and a row starting ``s mod 4`` entries into its
    first chunk fits alone while ``nnz <= 4 x BLOCK x iters - s mod 4``; so a row of more than
    ``4 x BLOCK x iters - 3`` nonzeros may be cut (``spmv_tiling.row_tiles``)."""
    return stats.max_nnz_per_row > 4 * BLOCK * iters - 3


def short_piece_long_rows(stats: MatrixStatistics) -> list[tuple[int, int]]:
    """The (threads per row, long_row) of :data:`SHORT_PIECE_CUTS` that cut some row
    (``max_nnz_per_row > long_row``) shorter than the default cut (``long_row <
    sell_long_row``)."""
    return [(tpr, cut) for tpr, cut in SHORT_PIECE_CUTS
            if cut < stats.max_nnz_per_row and cut < stats.sell_long_row]


def prediction_context(model: Any):
    """The device a chooser predicts with: ``model`` (the run's ``context.DeviceContext``,
    handed over by ``use_model``) when it has rates, else the present GPU's latest stored
    ceilings over its datasheet (``context.present_gpu_stored``); None without a GPU."""
    if model is not None and getattr(model, "rates", None) is not None:
        return model
    from sparsescope.context import present_gpu_stored

    return present_gpu_stored()


def spmv_plan_case(csr: sp.csr_matrix, value_dtype: str = "float32"):
    """The SpMV case the candidates are planned and predicted for: the (canonical) matrix and
    the value type, no x and no reference (nothing runs; building them, and checking the
    matrix again, would cost a pass over a 100 M-nonzero matrix per choice):
    ``context.plan_case``."""
    from sparsescope.context.predict import plan_case

    return plan_case("spmv", csr, None, value_dtype=value_dtype)


def predict_candidates(csr: sp.csr_matrix, device: Any, found: list[Candidate], *,
                       value_dtype: str = "float32", case: Any = None,
                       classes: dict[str, type] | None = None,
                       timing: Any = None) -> list[CandidatePrediction]:
    """Each candidate planned and predicted on ``device`` (a ``context.DeviceContext``)
    through the one entry point (``context.predict_plan``), in the order given, in three
    steps: every candidate planned (``context.planned_call``, kept for the matrix: a kernel
    planned here and asked for again, as auto's choice or as a backend of a what-if, is not
    planned again), the SASS of every planned kernel read in one compile per source
    (``context.prefetch_sass``), then each predicted. Candidates that share a host format
    (``format_key``) are planned one after the other, so the format is built once; different
    formats are planned on :func:`plan_workers` threads (the packers and the model spend
    their time in NumPy, which releases the GIL). ``case``: the SpMV case of ``csr``
    (:func:`spmv_plan_case`, built here when not given); ``classes``: name -> class (default
    :func:`kernel_classes`); ``timing``: the ``TimingConfig`` predicted for (its mode: a
    throughput run's candidates are ranked by their back-to-back times; None: latency)."""
    from concurrent.futures import ThreadPoolExecutor

    from sparsescope.context.predict import planned_call, predict_plan, prefetch_sass
    from sparsescope.model.term_labels import limiter_label

    classes = classes or kernel_classes()
    case = case if case is not None else spmv_plan_case(csr, value_dtype)
    backends = [classes[c.backend](breakdown=False, **c.params) for c in found]
    seconds = [0.0] * len(found)

    def plan(i: int) -> Any:
        start = time.perf_counter()
        planned = planned_call(case, backends[i], device, value_dtype,
                               int(backends[i].capability.index_bytes[0]))
        seconds[i] += time.perf_counter() - start
        return planned

    def one(i: int) -> CandidatePrediction:
        cand, backend = found[i], backends[i]
        start = time.perf_counter()
        planned = predict_plan(case, backend, device, name=cand.label, value_dtype=value_dtype,
                               timing=timing)
        p = planned.prediction
        floor = p.inputs.get("gather_floor_ms") if p is not None else None
        return CandidatePrediction(cand, p.predicted_ms if p is not None else None,
                                   p.limiter if p is not None else "", planned.not_modelled,
                                   seconds[i] + time.perf_counter() - start, floor_ms=floor,
                                   limiter_label=limiter_label(p) if p is not None else "")

    groups: dict[tuple, list[int]] = {}
    for i, backend in enumerate(backends):
        groups.setdefault(backend.format_key(), []).append(i)
    out: list[CandidatePrediction | None] = [None] * len(found)
    shapes: list[Any] = []

    def plan_group(indices: list[int]) -> None:
        for i in indices:
            shapes.append(plan(i).shape)

    def predict_group(indices: list[int]) -> None:
        for i in indices:
            out[i] = one(i)

    with ThreadPoolExecutor(max_workers=plan_workers(len(groups))) as pool:
        list(pool.map(plan_group, groups.values()))
        prefetch_sass([s for s in shapes if s is not None], device)
        list(pool.map(predict_group, groups.values()))
    return [p for p in out if p is not None]


def chosen_plan(chosen: Any, csr: sp.csr_matrix, value_dtype: str, index_bytes: int,
                sms: int, model: Any = None):
    """(traffic, shape) of the kernel an auto backend chose, planned once for the matrix
    (``context.planned_call``: the candidate's own plan, and its row sample above the memory
    budget) on the device it chose by (:func:`prediction_context` of ``model``); the kernel's
    own ``host_plan`` when there is no such device."""
    from sparsescope.context.predict import planned_call

    device = prediction_context(model)
    if device is None or device.rates is None or device.rates.sm_count != sms:
        return chosen.host_plan(csr, value_dtype, index_bytes, sms)
    plan = planned_call(spmv_plan_case(csr, value_dtype), chosen, device, value_dtype,
                        index_bytes)
    if plan.error:
        raise ValueError(plan.error)
    return plan.traffic, plan.shape


def plan_workers(groups: int) -> int:
    """Threads that plan candidates: one per format, at most the CPU's cores and 8 (each
    format of a 100 M-nonzero matrix holds about a gigabyte while it is built)."""
    from sparsescope.hardware.cpuinfo import logical_cores

    return max(1, min(groups, logical_cores() or 1, 8))


def ranked(predictions: list[CandidatePrediction]) -> list[CandidatePrediction]:
    """Predicted candidates fastest first (ties keep the candidates' order), then the ones
    the model could not take."""
    done = [p for p in predictions if p.predicted_ms is not None]
    return (sorted(done, key=lambda p: p.predicted_ms)
            + [p for p in predictions if p.predicted_ms is None])


def shortlist(predictions: list[CandidatePrediction], margin: float = TRIAL_MARGIN,
              most: int = TRIAL_MAX) -> list[CandidatePrediction]:
    """The predicted candidates within ``margin`` of the fastest prediction (``predicted <=
    fastest x (1 + margin)``): those the model cannot rank apart. At most ``most``: first the
    fastest of each kernel family (backend) in the margin, then the rest by prediction, so
    that a family the model misjudges as a whole (its errors are family-wide: the blocked
    kernels ran 19-27 % faster than predicted on the H200) is still timed."""
    done = [p for p in ranked(predictions) if p.predicted_ms is not None]
    if not done:
        return []
    limit = done[0].predicted_ms * (1 + margin)
    near = [p for p in done if p.predicted_ms <= limit]
    families: dict[str, CandidatePrediction] = {}
    for p in near:
        families.setdefault(p.candidate.backend, p)
    heads = list(families.values())[:most]
    rest = [p for p in near if all(p is not h for h in heads)]
    picked = heads + rest[:most - len(heads)]
    return sorted(picked, key=near.index)


def selection_notes(kernel_notes: dict[str, str], selected: str, params: dict, rule: str,
                    reason: str, selection_s: float,
                    table: list[CandidatePrediction]) -> dict[str, str]:
    """What an auto backend writes into its case's notes: the chosen kernel's own notes, the
    choice (``selected``, ``selected_params``), how (``selection_rule``, ``selection_reason``,
    ``selection_s``) and, when it predicted, every candidate's row (``selection_table``)."""
    import json

    notes = {**kernel_notes, "selected": selected,
             "selected_params": json.dumps(params, sort_keys=True), "selection_rule": rule,
             "selection_reason": reason, "selection_s": f"{selection_s:.2f}"}
    if table:
        notes["selection_table"] = json.dumps([p.as_dict() for p in table])
    return notes


def prediction_table(predictions: list[CandidatePrediction], rows: int = REASON_ROWS) -> str:
    """The first ``rows`` of the ranking in words: ``label predicted us (limiter in words,
    +x % over the fastest)``, the fastest with its format's memory floor; ``; ...`` and the
    count when more were predicted."""
    from sparsescope.model.term_labels import term_label

    order = ranked(predictions)
    done = [p for p in order if p.predicted_ms is not None]
    if not done:
        return "no candidate could be predicted"
    best = done[0].predicted_ms
    parts = []
    for p in done[:rows]:
        over = f", +{100 * (p.predicted_ms / best - 1):.1f} %" if p is not done[0] else ""
        if p is done[0] and p.floor_ms:
            over = f"; its format's memory floor {1e3 * p.floor_ms:,.1f} us"
        words = p.limiter_label or term_label(p.limiter)
        parts.append(f"{p.candidate.label} {1e3 * p.predicted_ms:,.1f} us ({words}{over})")
    more = len(order) - min(rows, len(done))
    return "; ".join(parts) + (f"; {more} more in the case's candidate table" if more > 0
                               else "")


_STATISTICS = LastMatrixAnswers()


def statistics_of(csr: sp.csr_matrix) -> MatrixStatistics:
    """``select.matrix_statistics`` of ``csr``, kept for the last matrix (three passes over
    10^8 nonzeros took 14 s: auto's choice, and the what-if's account of it, ask again)."""
    return _STATISTICS.get((csr.indptr, csr.indices), (csr.shape, sample_key(csr.indptr)),
                           lambda: matrix_statistics(csr))


def select_by_prediction(csr: sp.csr_matrix, device: Any, *, value_dtype: str = "float32",
                         stats: MatrixStatistics | None = None,
                         classes: dict[str, type] | None = None, timing: Any = None
                         ) -> tuple[Selection, list[CandidatePrediction]]:
    """(the selection, every candidate's prediction): the fastest predicted candidate on
    ``device`` (a ``context.DeviceContext``) in ``timing``'s mode (None: latency), the
    prediction table as its reason; the rules of :mod:`select` when none could be predicted.
    The candidates are planned under ``choice_samples.chooser_plans`` (on a row sample above 4
    M nonzeros)."""
    stats = stats or statistics_of(csr)
    with chooser_plans():  # a large matrix's candidates planned on a row sample
        table = predict_candidates(csr, device, candidates(stats), value_dtype=value_dtype,
                                   classes=classes, timing=timing)
    order = ranked(table)
    if not order or order[0].predicted_ms is None:
        fallback = select_kernel(stats, device.rates.sm_count)
        why = "; ".join(sorted({p.not_modelled for p in table})) or "no candidates"
        return Selection(fallback.backend, fallback.params, fallback.rule,
                         f"no candidate could be predicted ({why}); by the rules: "
                         f"{fallback.reason}", stats), table
    best = order[0]
    mode = getattr(timing, "mode", "latency")
    where = f"{device.rates.name}, {mode} mode" if mode != "latency" else device.rates.name
    return Selection(best.candidate.backend, dict(best.candidate.params), "predicted-fastest",
                     f"fastest predicted of {len(table)} candidates on {where} "
                     f"({device.origin}): {prediction_table(table)}", stats), table
