"""``spmm-cuda-auto``: pick an own SpMM kernel by its predicted time on the present device, run
it; ``spmm-cuda-auto-rules``: pick it by the rules below instead.

By prediction (:func:`predict_candidates`): each candidate kernel (``spmm-cuda-rowgroup``,
``spmm-cuda-rowwarp`` where it takes the case, ``spmm-cuda-blocktc`` -- 16 x 8 blocks on tensor
cores, 3xTF32 -- where the block fill is at most its limit, float32) is planned on the host and
its launch predicted by :func:`~sparsescope.model.own_spmm.predict_own_spmm` (the CSR kernels'
model, or the block kernel's) with the device's rates (the run's,
handed over by :meth:`SpmmCudaAuto.use_model`, else the present GPU's stored ceilings over its
datasheet), its registers read from the compiled kernel. Candidates predicted within
:data:`TRIAL_MARGIN` of the fastest are timed on the device (:data:`TRIAL_TIMING`) and the
fastest measured is kept, as ``cuda-spmv-auto`` does (and a family whose model is not
scored yet, :data:`UNSCORED`, is timed against the best scored one); the reason kept is the
prediction table (``selection_table``: every candidate's prediction and trial time, as JSON).
Column-major X
runs the chosen row-major kernel between two device transposes (rule 1 below); the transposes
cost every candidate the same, so the row-major case decides. Without device rates the rules
decide, and the reason says so.

The rules (``spmm-cuda-auto-rules``; :func:`choose_spmm_kernel`, a pure function of numbers),
first match wins (``G`` is the rowgroup kernel's lanes per row slice for this k,
:func:`~sparsescope.backends.spmm_rowgroup.rowgroup_shape`; ``mean`` and ``max`` are the row
lengths; the thresholds are widths of the machine and the kernels, none fitted to a matrix):

1. layout ``col`` -> ``spmm-cuda-transposed``: X transposed to row-major on the device, the
   kernel these rules pick for row-major X, Y transposed back (all timed). Column-major
   gathers take a sector per value; on the H200 every column-major kernel (cuSPARSE's,
   ``spmm-cuda-colmajor``) ran 5-10x slower than rowgroup on row-major X, far more than two
   transposes cost.
2. no nonzeros -> ``spmm-cuda-rowgroup``: it only stores zero rows, with the fewest warps.
3. ``mean >= 32`` and rowgroup would launch fewer than ``sm_count x TARGET_WARPS_PER_SM``
   warps (few long-ish rows: the DLMC layers) -> ``spmm-cuda-rowwarp``: it puts a warp on
   every row and 32-column slabs on grid.y, the parallelism a small matrix needs; a row of
   >= 32 nonzeros fills a warp's nonzero slots.
4. ``G >= 16`` (more than 8 VEC-wide loads per X row: k > 32 in float32 when 4 divides k,
   k > 16 in float64 when 2 does, k > 8 when k is odd) -> ``spmm-cuda-rowgroup``:
   each nonzero's gather already spans half a warp or more, and one pass over A per
   warp-wide slab (128 floats) replaces rowwarp's pass per 32-column slab (what issue 18
   measured losing at k = 256).
5. ``mean < 32`` -> ``spmm-cuda-rowgroup``: rowwarp would leave most of a warp's nonzero slots
   empty on every row; rowgroup packs 32 / G rows into a warp (and cuts long rows into slices
   itself, so a power-law row no longer sends the matrix to rowwarp).
6. otherwise -> ``spmm-cuda-rowwarp`` (its existing defaults).

These rules were written from the kernels' layouts; measurement has corrected them once
(``v3``): v2's rule "a row of >= 1,024 nonzeros -> rowwarp" ran 2.2-2.3x slower than rowgroup
on the tuning part's power-law graphs graph-12 and graph-15 (mean degree 4, 1-2 M rows) at
k = 8 and 32 on an H100 (results/h100/spmm-tuning), and was dropped. They are to be replaced
by the time model's prediction (above). Rowwarp is never chosen where it would refuse the case
(``k`` needing more than its ``MAX_CHUNKS`` loads a lane).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sparsescope.backends import _gpu, spmm_blocktc, spmm_cuda, spmm_rowgroup
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.select_predicted import (
    Candidate,
    CandidatePrediction,
    prediction_context,
    prediction_table,
    ranked,
    selection_notes,
    shortlist,
    time_shortlist,
)
from sparsescope.backends.spmm_blocktc import (
    SpmmCudaBlockTc,
    block_format_of,
    blocktc_launch,
    fill_declined,
    plan_blocktc,
    sampled_fill,
)
from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
from sparsescope.backends.spmm_cuda import (
    MAX_CHUNKS,
    SLICE_UNIT,
    TARGET_WARPS_PER_SM,
    SpmmCudaRowWarp,
    choose_slab,
    compiled_registers,
    launch_shape,
    plan_rowwarp,
    rowwarp_launch,
)
from sparsescope.backends.spmm_rowgroup import (
    SpmmCudaRowGroup,
    choose_slab_cols,
    plan_rowgroup,
    rowgroup_launch,
    rowgroup_shape,
    vector_width,
)
from sparsescope.backends.spmm_transposed import SpmmCudaTransposed
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig

ROWWARP = "spmm-cuda-rowwarp"
ROWGROUP = "spmm-cuda-rowgroup"
COLMAJOR = "spmm-cuda-colmajor"
TRANSPOSED = "spmm-cuda-transposed"
BLOCKTC = "spmm-cuda-blocktc"
#: Backend name -> class, for the names the rule or the prediction may return.
CHOICES: dict[str, type[OpBackend]] = {
    ROWWARP: SpmmCudaRowWarp, ROWGROUP: SpmmCudaRowGroup, COLMAJOR: SpmmCudaColMajor,
    TRANSPOSED: SpmmCudaTransposed, BLOCKTC: SpmmCudaBlockTc}
WARP_SLOTS = 32
"""A warp's lanes: the row length below which rowwarp leaves nonzero slots idle."""
WIDE_GROUP = 16
"""G at or above which a rowgroup group is half a warp or more."""
RULE = "spmm-auto-rules-v3"
#: The SpMM model's error taken for ranking: its median |error| on the H200 tuning-part run of
#: 2026-11-25 (results/h200/spmm-tuning/2026-11-25-auto-predicted: 48.8 % over 116 rowgroup and
#: rowwarp cases, rescored offline after the slice-pointer round and the loaded imbalance were
#: added; 50.9 % as run). The model ranked the faster kernel right in 48 of 58 cases there.
MODEL_ERROR = 0.49
#: Candidates predicted within this share of the fastest are timed before the choice: with
#: errors of +-e, a candidate predicted r times the fastest may still be faster while
#: r < (1 + e) / (1 - e) (2.92 for e = 0.49).
TRIAL_MARGIN = (1 + MODEL_ERROR) / (1 - MODEL_ERROR) - 1
BALANCED_MIN_SLICE = SLICE_UNIT
"""rowgroup's balanced candidate: slices cut at the slice rule's own target (nnz / (SMs x 32)),
floored at a warp's width instead of MIN_SLICE_NNZ (1,024). On a power-law graph of 30,000
rows (graph-04 of the tuning part) the default floor leaves slices of 1,024 nonzeros that one
group walks 8 at a time while the other warps are done: the model's imbalance term (and the
H200: rowgroup 140 us against cuSPARSE's 57 us at k = 32). Cutting costs a zero fill of Y and
atomics for the cut rows, which the model leaves out, so the trial decides."""
UNSCORED = (BLOCKTC,)
"""Candidate families whose model has not been scored over a population yet: when one of them
is the fastest prediction, the best-predicted other candidate is timed beside it whatever the
margin. The block tensor-core model's first run put it 4x ahead of rowgroup on a 1,024 x 4,096
weight at k = 32 where it ran 1.4x slower (results/h200/spmm-tuning/2026-11-25-blocktc-batched,
weights-06): MODEL_ERROR was measured on the CSR kernels only."""


def with_challenger(short: list, table: list) -> tuple[list, str]:
    """``short`` with the best-predicted candidate of a scored family added when the fastest
    prediction is of an :data:`UNSCORED` family and no scored one is in it; and the words."""
    if not short or short[0].candidate.backend not in UNSCORED or any(
            p.candidate.backend not in UNSCORED for p in short):
        return short, ""
    scored = [p for p in ranked(table)
              if p.predicted_ms is not None and p.candidate.backend not in UNSCORED]
    if not scored:
        return short, ""
    return short + scored[:1], (f"; {scored[0].candidate.label} timed beside it: the "
                                f"{short[0].candidate.backend} model is not scored yet")


#: Environment variable that turns the trial off ("0"), as for cuda-spmv-auto (the ncu target).
AUTO_TRIAL_ENV = "SPARSESCOPE_AUTO_TRIAL"
TRIAL_TIMING = TimingConfig(warmups=3, repeats=10)
PREDICTED_RULE = "spmm-predicted"


def rowwarp_supports(k: int, value_dtype: str) -> bool:
    """Whether rowwarp's default slab gives at most MAX_CHUNKS loads a lane (k = 255: 8, yes;
    k = 4095: 128, no)."""
    return launch_shape(choose_slab(k), value_dtype)[2] <= MAX_CHUNKS


def row_lengths(indptr: np.ndarray) -> tuple[float, int]:
    """(mean, max) nonzeros per row; (0.0, 0) for a matrix without rows."""
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    if lengths.size == 0:
        return 0.0, 0
    return float(lengths.mean()), int(lengths.max())


def choose_spmm_kernel(k: int, layout: str, value_dtype: str, nnz: int, rows: int,
                       mean_row: float, max_row: int, sm_count: int) -> tuple[str, str]:
    """(backend name, one-line reason) by the module's rules 1-6 (first match wins).

    Hand-worked: a DLMC layer, 512 rows, mean 300, k = 8, 132 SMs: rowgroup G = 2 gives
    32 warps < 1,056 -> rowwarp (rule 3). A web graph, 326,000 rows, mean 4.6, max 10,000,
    k = 256 -> rowgroup (rule 4, G = 32); the same at k = 8 -> rowgroup (rule 5, mean < 32);
    a FEM matrix, 100,000 rows, mean 20, max 40, k = 8 -> rowgroup (rule 5).
    To be re-checked by measurement (see the module docstring).
    """
    if layout == "col":
        return TRANSPOSED, ("layout col: X transposed on the device for the rowgroup kernel, "
                            "Y transposed back (column-major gathers waste a sector a value)")
    if nnz == 0:
        return ROWGROUP, "no nonzeros: rowgroup stores the zero rows with the fewest warps"
    _, group, _ = rowgroup_shape(choose_slab_cols(k, value_dtype), vector_width(k, value_dtype))
    per_warp = WARP_SLOTS // group
    rg_warps = -(-rows // per_warp)
    enough = sm_count * TARGET_WARPS_PER_SM
    rowwarp_ok = rowwarp_supports(k, value_dtype)
    if rowwarp_ok and mean_row >= WARP_SLOTS and rg_warps < enough:
        return ROWWARP, (f"rows average {mean_row:.1f} >= {WARP_SLOTS} nonzeros and rowgroup "
                         f"would launch {rg_warps} warps < {sm_count} SMs x "
                         f"{TARGET_WARPS_PER_SM}: a warp per row and 32-column slabs")
    if group >= WIDE_GROUP:
        return ROWGROUP, (f"k = {k}: {group} lanes per row slice (>= {WIDE_GROUP}), one pass "
                          f"over A per warp-wide slab instead of one per 32-column slab")
    if mean_row < WARP_SLOTS:
        return ROWGROUP, (f"rows average {mean_row:.1f} < {WARP_SLOTS} nonzeros: {per_warp} "
                          f"rows a warp instead of one")
    if not rowwarp_ok:
        return ROWGROUP, f"k = {k} needs more than {MAX_CHUNKS} rowwarp loads a lane"
    return ROWWARP, (f"rows average {mean_row:.1f} >= {WARP_SLOTS} nonzeros, k = {k}: "
                     f"rowwarp's defaults")


def candidate_plans(indptr: np.ndarray, nnz: int, k: int, value_dtype: str, index_bytes: int,
                    sm_count: int, full_warps: int) -> list[tuple[Candidate, Any]]:
    """(candidate, host plan) of each CSR candidate: rowgroup at its default launch;
    rowgroup with balanced slices (``min_slice`` = :data:`BALANCED_MIN_SLICE`) when that cuts
    more than the default does; rowwarp where it takes k (:func:`rowwarp_supports`)."""
    plans: list[tuple[Candidate, Any]] = [(Candidate(ROWGROUP), plan_rowgroup(
        indptr, nnz, k, value_dtype, index_bytes, sm_count, full_warps=full_warps))]
    balanced = plan_rowgroup(indptr, nnz, k, value_dtype, index_bytes, sm_count,
                             full_warps=full_warps, min_slice=BALANCED_MIN_SLICE)
    if balanced.plan.n_slices > plans[0][1].plan.n_slices:
        plans.append((Candidate(ROWGROUP, {"min_slice": BALANCED_MIN_SLICE}), balanced))
    if rowwarp_supports(k, value_dtype):
        plans.append((Candidate(ROWWARP), plan_rowwarp(indptr, nnz, k, value_dtype, index_bytes,
                                                      sm_count)))
    return plans


def blocktc_candidate(csr: Any, k: int, value_dtype: str, sm_count: int):
    """``(launch, "")`` of the block tensor-core kernel for the time model, or ``(None,
    reason)`` where it is not a candidate: float64, or a 16 x 8 block fill above
    ``spmm_blocktc.MAX_FILL`` -- screened on sampled block rows first
    (:func:`~sparsescope.backends.spmm_blocktc.sampled_fill`, above twice the limit: out),
    then counted exactly while the blocks are built."""
    limit = spmm_blocktc.MAX_FILL
    if value_dtype != "float32":
        return None, "tensor-core path: float32 only"
    if csr.nnz == 0:
        return None, "no nonzeros"
    screen = sampled_fill(csr.indptr, csr.indices, int(csr.shape[1]))
    if screen > 2 * limit:
        return None, f"16x8 block fill ~{screen:.1f} on sampled block rows > 2 x {limit:g}"
    fmt = block_format_of(csr)   # the blocks prepare builds too: built once
    declined = fill_declined(fmt.blocks, csr.nnz, limit)
    if declined:
        return None, declined
    plan = plan_blocktc(fmt.block_rows, fmt.blocks, csr.nnz, k, sm_count)
    return (fmt, plan), ""


def candidate_launch(name: str, plan: Any, registers=None, shape: tuple[int, int, int] = (0, 0, 0)):
    """The time model's launch of one candidate plan; ``registers(source, kernel)`` reads the
    compiled kernel's registers (None: the launch bound's cap); ``shape`` (rows, cols, k) for
    the block kernel."""
    if name == BLOCKTC:
        fmt, host = plan
        regs = registers(spmm_blocktc.SOURCE, host.kernel) if registers else None
        return blocktc_launch(host, fmt.block_ptr, *shape, passes=3, registers=regs)
    if name == ROWGROUP:
        regs = registers(spmm_rowgroup.SOURCE, plan.kernel) if registers else None
        return rowgroup_launch(plan, regs)
    regs = registers(spmm_cuda.SOURCE, plan.kernel) if registers else None
    return rowwarp_launch(plan, regs)


def predict_candidates(case: OpCase, value_dtype: str, index_bytes: int, device: Any, *,
                       sm_count: int, full_warps: int, flushed: bool,
                       registers=None) -> list[CandidatePrediction]:
    """Every row-major candidate of the row-major SpMM ``case`` predicted on ``device`` (a
    ``context.DeviceContext``) through the one entry point (``context.predict_call``: the
    SpMM op's ``predict``, ``model.own_spmm.predict_own_spmm``), in :func:`candidate_plans`'
    order, then the block tensor-core kernel (:func:`blocktc_candidate`); a candidate the model
    fails on, or that declines the case, is listed with the reason."""
    from sparsescope.context import predict_call

    csr, k = case.matrix, case.params.k
    shape = (int(csr.shape[0]), int(csr.shape[1]), k)
    out = []

    def predict(cand, plan, start):
        try:
            launch = candidate_launch(cand.backend, plan, registers, shape)
        except Exception as exc:  # a candidate the model cannot take is never chosen
            out.append(CandidatePrediction(cand, None, not_modelled=f"{type(exc).__name__}: "
                                                                    f"{exc}"))
            return
        p = predict_call(case, case.csr_traffic, launch, device, flushed=flushed,
                         who=cand.label, refine=False)
        out.append(CandidatePrediction(cand, p.predicted_ms, p.limiter,
                                       not_modelled=p.not_modelled,
                                       plan_s=time.perf_counter() - start))

    for cand, plan in candidate_plans(csr.indptr, csr.nnz, k, value_dtype, index_bytes,
                                      sm_count, full_warps):
        predict(cand, plan, time.perf_counter())
    start = time.perf_counter()
    plan, declined = blocktc_candidate(csr, k, value_dtype, sm_count)
    if plan is None:
        out.append(CandidatePrediction(Candidate(BLOCKTC), None, not_modelled=declined))
    else:
        predict(Candidate(BLOCKTC), plan, start)
    return out


@dataclass
class PreparedSpmmAuto:
    chosen: str
    reason: str
    backend: OpBackend
    prepared: Any
    stats: dict[str, str]
    rule: str = RULE
    table: list = field(default_factory=list)
    """Every candidate's prediction (``CandidatePrediction``); empty when the rules chose."""
    selection_s: float = 0.0
    params: dict = field(default_factory=dict)
    """The chosen row-major kernel's options (e.g. ``{"min_slice": 32}``)."""


class SpmmCudaAuto(OpBackend):
    name = "spmm-cuda-auto"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own SpMM kernel chosen by its predicted time on this device (rowgroup / "
                    "rowwarp / blocktc tensor cores; column-major X through device transposes), "
                    "prediction table kept")
    #: "prediction" (the SpMM time model on the present device) or "rules" (the module's).
    by = "prediction"

    def __init__(self, *, trial: bool | None = None) -> None:
        self.trial = trial if trial is not None else os.environ.get(AUTO_TRIAL_ENV, "1") != "0"
        """Time the candidates within :data:`TRIAL_MARGIN` before choosing (default: on,
        unless the environment sets :data:`AUTO_TRIAL_ENV` to 0)."""
        self._model = None

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    def use_model(self, model: Any) -> None:
        """Predict with ``model`` (a ``context.DeviceContext``: the run's rates) instead of
        the present GPU's stored ones."""
        self._model = model

    def choose(self, case: OpCase, value_dtype: str, sm_count: int) -> tuple[str, str]:
        csr = case.matrix
        mean, longest = row_lengths(csr.indptr)
        return choose_spmm_kernel(case.params.k, case.params.layout, value_dtype, csr.nnz,
                                  csr.shape[0], mean, longest, sm_count)

    def _rules(self, case: OpCase, value_dtype: str, sm_count: int,
               why: str = "") -> tuple[str, str]:
        """(row-major backend, reason) by the rules, for the row-major case; ``why`` says
        why the rules decide."""
        row_case = replace(case, params=replace(case.params, layout="row"))
        chosen, reason = self.choose(row_case, value_dtype, sm_count)
        return chosen, f"{why}{reason}"

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedSpmmAuto:
        start = time.perf_counter()
        sm_count = _gpu.device_sm_count()
        row_case = replace(case, params=replace(case.params, layout="row"))
        table: list = []
        rule = RULE
        device = prediction_context(self._model) if self.by == "prediction" else None
        if device is None:
            why = "" if self.by == "rules" else "no device rates to predict with; by the rules: "
            inner, reason = self._rules(case, value_dtype, sm_count, why)
            backend, prepared, params = CHOICES[inner](), None, {}
        else:
            cand, reason, table, backend, prepared = self._by_prediction(
                row_case, value_dtype, index_bytes, sm_count, device)
            inner, params = cand.backend, dict(cand.params)
            rule = PREDICTED_RULE if not any(p.trial_ms for p in table) else \
                "spmm-predicted-then-timed"
        chosen = inner
        if case.params.layout == "col":   # transposes around the row-major pick
            layout_reason = ("layout col: X transposed on the device for the row-major kernel, "
                             "Y transposed back (column-major gathers waste a sector a value)")
            backend = SpmmCudaTransposed(inner=backend)
            prepared = None   # the transposed backend prepares its inner kernel itself
            chosen = TRANSPOSED
            reason = f"{layout_reason}; row-major kernel {inner}: {reason}"
        if prepared is None:
            prepared = backend.prepare(case, value_dtype, index_bytes)
        mean, longest = row_lengths(case.matrix.indptr)
        stats = {"row_mean": f"{mean:.2f}", "row_max": str(longest)}
        return PreparedSpmmAuto(chosen, reason, backend, prepared, stats, rule, table,
                                time.perf_counter() - start, params)

    def _by_prediction(self, row_case: OpCase, value_dtype: str, index_bytes: int,
                       sm_count: int, device: Any):
        """(candidate, reason, table, backend, its prepared row case or None): the fastest
        prediction, or the fastest of the trial when several lie within the margin."""
        from sparsescope.timing.host import should_flush

        rates = device.rates
        flushed = should_flush(TRIAL_TIMING, int(row_case.traffic.compulsory_bytes),
                               rates.l2_bytes)
        table = predict_candidates(row_case, value_dtype, index_bytes, device,
                                   sm_count=sm_count,
                                   full_warps=_gpu.device_full_block_warps(), flushed=flushed,
                                   registers=compiled_registers)
        order = [p for p in ranked(table) if p.predicted_ms is not None]
        if not order:
            inner, reason = self._rules(row_case, value_dtype, sm_count,
                                        "no candidate could be predicted; by the rules: ")
            return Candidate(inner), reason, table, CHOICES[inner](), None
        reason = f"predicted on {rates.name}: {prediction_table(table)}"
        short = shortlist(table, margin=TRIAL_MARGIN) if self.trial else []
        short, challenger = with_challenger(short, table) if self.trial else (short, "")
        if len(short) < 2:
            best = order[0].candidate
            return best, reason, table, CHOICES[best.backend](**best.params), None
        def prepare_and_time(cand):
            backend = CHOICES[cand.backend](**cand.params)
            prepared = backend.prepare(row_case, value_dtype, index_bytes)
            return backend, prepared, backend.time(prepared, TRIAL_TIMING).time_ms

        trial = time_shortlist(short, table, TRIAL_MARGIN, TRIAL_TIMING.repeats,
                               prepare_and_time)
        return (trial.candidate, f"{reason}. {trial.words}{challenger}", trial.table,
                trial.backend, trial.prepared)

    def poison_output(self, prepared: PreparedSpmmAuto) -> bool:
        return prepared.backend.poison_output(prepared.prepared)

    def run(self, prepared: PreparedSpmmAuto) -> np.ndarray:
        return prepared.backend.run(prepared.prepared)

    def time(self, prepared: PreparedSpmmAuto, config: TimingConfig) -> Measurement:
        return prepared.backend.time(prepared.prepared, config)

    def library_versions(self) -> dict[str, str]:
        return _gpu.cupy_kernel_versions()

    def traffic(self, case: Any, prepared: Any):
        """The chosen kernel's bytes (each declares plain CSR's, as OpBackend does)."""
        if prepared is None:
            return super().traffic(case, prepared)
        return prepared.backend.traffic(case, prepared.prepared)

    def host_plan_case(self, case: Any, value_dtype: str, index_bytes: int, sms: int):
        """(the CSR bytes, the launch of the candidate predicted fastest on the device of
        :meth:`use_model`, or of the rules' pick for ``spmm-cuda-auto-rules``), planned on the
        host for ``sms`` SMs (the cross-GPU what-if): the registers of each launch bound's cap
        (no compiled kernel here), no trial. Column-major X, or no device rates: (None,
        None)."""
        from sparsescope.timing.host import should_flush

        device = self._model
        if device is None or device.rates is None or case.params.layout != "row":
            return None, None
        if self.by == "rules":
            inner, _ = self._rules(case, value_dtype, sms)
            chosen = CHOICES[inner]()
            chosen.use_model(device)
            return chosen.host_plan_case(case, value_dtype, index_bytes, sms)
        rates = device.rates
        full_warps = _gpu.full_block_warps(rates.max_threads_per_sm, rates.max_blocks_per_sm)
        flushed = should_flush(TRIAL_TIMING, int(case.traffic.compulsory_bytes), rates.l2_bytes)
        table = predict_candidates(case, value_dtype, index_bytes, device, sm_count=sms,
                                   full_warps=full_warps, flushed=flushed)
        order = [p for p in ranked(table) if p.predicted_ms is not None]
        if not order:
            return None, None
        best, csr = order[0].candidate, case.matrix
        if best.backend == BLOCKTC:
            plan, _ = blocktc_candidate(csr, case.params.k, value_dtype, sms)
        else:
            plan = next(plan for cand, plan in candidate_plans(
                csr.indptr, csr.nnz, case.params.k, value_dtype, index_bytes, sms, full_warps)
                if cand == best)
        launch = candidate_launch(best.backend, plan, None,
                                  (int(csr.shape[0]), int(csr.shape[1]), case.params.k))
        return case.csr_traffic, launch

    def kernel_shape(self, case: Any, prepared: Any):
        """The chosen kernel's launch, for the time model."""
        if prepared is None:
            return None
        return prepared.backend.kernel_shape(case, prepared.prepared)

    def notes(self, prepared: PreparedSpmmAuto) -> dict[str, str]:
        own = {**prepared.backend.notes(prepared.prepared), **prepared.stats}
        return selection_notes(own, prepared.chosen, prepared.params, prepared.rule,
                               prepared.reason, prepared.selection_s, prepared.table)


class SpmmCudaAutoRules(SpmmCudaAuto):
    name = "spmm-cuda-auto-rules"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own SpMM kernel chosen by the rules of k, layout and row lengths "
                    "(rowwarp / rowgroup), reason kept")
    by = "rules"
