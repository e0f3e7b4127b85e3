"""``spmm-cuda-auto``: pick an own SpMM kernel by its predicted time on the present device, run
it; ``spmm-cuda-auto-rules``: pick it by the rules below instead.

By prediction (:func:`predict_candidates`, :mod:`.spmm_auto_candidates`): each candidate
kernel (``spmm-cuda-rowgroup``, ``spmm-cuda-rowwarp`` where it takes the case,
``spmm-cuda-blocktc`` -- 16 x 8 blocks on tensor cores, 3xTF32 -- where the block fill is at
most its limit, float32) is planned on the host and its launch predicted by
:func:`~sparsescope.model.own_spmm.predict_own_spmm` (the CSR kernels' model, or the block
kernel's) with the device's rates (the run's, handed over by :meth:`SpmmCudaAuto.use_model`,
else the present GPU's stored ceilings over its datasheet), its registers read from the
compiled kernel. Column-major X has two strategies, both candidates: each row-major kernel
between two device transposes (``spmm-cuda-transposed``; the transposes' own time,
``model.transpose``, added to the kernel's), and ``spmm-cuda-colmajor`` on X as it is (its
sector-per-value gathers in the same model). Candidates predicted within
:data:`TRIAL_MARGIN` of the fastest are timed on the device (:data:`TRIAL_TIMING`), each as
the whole call of the case's layout (transposes included), and the fastest measured is kept,
as ``cuda-spmv-auto`` does (and a family whose model is not scored yet, :data:`UNSCORED`, is
timed against the best scored one); the reason kept is the prediction table
(``selection_table``: every candidate's prediction and trial time, as JSON). Without device
rates the rules decide, and the reason says so.

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

Rule 1 is the rule the prediction no longer follows: the transposes cost about 2,000 warp
instructions a 32 x 32 tile whatever k, so at k = 8 they cost 4x what their bytes do, and a
graph of a few nonzeros a row ran 95.8 us through them against 49.5 us in
``spmm-cuda-colmajor`` (issue 37). These rules were written from the kernels' layouts;
measurement has corrected them once
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

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.select_predicted import (
    Candidate,
    prediction_context,
    prediction_table,
    ranked,
    selection_notes,
    shortlist,
)
from sparsescope.backends.spmm_auto_candidates import (  # noqa: F401  (re-exported)
    BALANCED_MIN_SLICE,
    BLOCKTC,
    COLMAJOR,
    ELL,
    PANELTC,
    READS_COLUMN_MAJOR,
    ROWGROUP,
    ROWTILE,
    ROWWARP,
    TRANSPOSED,
    blocktc_candidate,
    candidate_launch,
    candidate_names,
    candidate_plans,
    case_launch,
    planned_candidates,
    predict_candidates,
    rowwarp_supports,
)
from sparsescope.backends.spmm_blocktc import SpmmCudaBlockTc
from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
from sparsescope.backends.spmm_cuda import (
    MAX_CHUNKS,
    TARGET_WARPS_PER_SM,
    SpmmCudaRowWarp,
    compiled_registers,
)
from sparsescope.backends.spmm_ell import SpmmCudaEll
from sparsescope.backends.spmm_paneltc import SpmmCudaPanelTc
from sparsescope.backends.spmm_rowgroup import (
    SpmmCudaRowGroup,
    choose_slab_cols,
    rowgroup_shape,
    vector_width,
)
from sparsescope.backends.spmm_rowtile import SpmmCudaRowTile
from sparsescope.backends.spmm_transposed import SpmmCudaTransposed
from sparsescope.backends.trial import time_shortlist
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig

#: Backend name -> class, for the names the rule or the prediction may return.
CHOICES: dict[str, type[OpBackend]] = {
    ROWWARP: SpmmCudaRowWarp, ROWGROUP: SpmmCudaRowGroup, COLMAJOR: SpmmCudaColMajor,
    TRANSPOSED: SpmmCudaTransposed, BLOCKTC: SpmmCudaBlockTc, PANELTC: SpmmCudaPanelTc,
    ROWTILE: SpmmCudaRowTile, ELL: SpmmCudaEll}
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
#: Most candidates timed (``select_predicted.shortlist``; SpMV's auto keeps its TRIAL_MAX of
#: 6). A column-major case plans up to 10 predicted candidates (rowgroup in three widths,
#: rowwarp, colmajor in five slicings and tiles, ELL), and the colmajor family is not scored:
#: with 6 places, 4elt at k = 64 left out the plain colmajor kernel (predicted 11.2 us, timed
#: alone 12.3) and kept 8-pair slices (predicted 8.9, timed 12.9; H200,
#: results/h200/real-dev/2026-11-28-round-slices). Rowgroup on ELL rows (no slice pointers) adds
#: up to three more under a wave, each predicted a round trip ahead of its sliced sibling: with
#: 8 places they would push the sliced plans out of a trial that must judge the two.
TRIAL_MOST = 10
UNSCORED = (BLOCKTC, PANELTC, COLMAJOR, ROWTILE, ELL)
"""Candidate families whose model has not been scored over a population yet: when one of them
is the fastest prediction, the scored candidates are shortlisted against the fastest scored
prediction and timed beside it (:func:`with_challenger`). The block tensor-core model's first
run put it 4x ahead of rowgroup on a 1,024 x 4,096 weight at k = 32 where it ran 1.4x slower
(results/h200/spmm-tuning/2026-11-25-blocktc-batched, weights-06): MODEL_ERROR was measured on
the CSR kernels only. The colmajor kernel (column-major X read as it is) has no committed
timing yet, nor has the row-tile kernel (X staged in shared memory). The panel kernel's model
leaves out its issue efficiency and predicts it 2 to 4x too fast
(results/h200/spmm-break-even/2026-11-28-paneltc). The ELL kernel is new (issue 37 item 3)."""


def with_challenger(short: list, table: list) -> tuple[list, str]:
    """``short`` and, when its fastest prediction is of an :data:`UNSCORED` family, the scored
    candidates the model cannot rank apart among themselves (``shortlist`` of the scored
    predictions: within the margin of the fastest scored one); and the words.

    An unscored model that predicts too fast would otherwise narrow the trial to itself: on a
    512 x 2,048 weight at k = 256 (H200, results/h200/spmm-break-even/2026-11-28-paneltc) the
    panel kernel was predicted 9.1 us and ran 40.7 us, and its margin left out rowgroup with
    balanced slices (predicted 33.6 us) that had run 29.9 us."""
    if not short or short[0].candidate.backend not in UNSCORED:
        return short, ""
    scored = [p for p in table
              if p.predicted_ms is not None and p.candidate.backend not in UNSCORED]
    added = [p for p in shortlist(scored, margin=TRIAL_MARGIN)
             if all(p is not s for s in short)]
    if not added:
        return short, ""
    names = ", ".join(p.candidate.label for p in added)
    return short + added, (f"; {names} timed beside it: the {short[0].candidate.backend} model "
                           f"is not scored yet")


#: Environment variable that turns the trial off ("0"), as for cuda-spmv-auto (the ncu target).
AUTO_TRIAL_ENV = "SPARSESCOPE_AUTO_TRIAL"
TRIAL_TIMING = TimingConfig(warmups=3, repeats=10, breakdown=False)
PREDICTED_RULE = "spmm-predicted"


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
        self.timing_mode = TRIAL_TIMING.mode
        """The run's timing mode (:meth:`use_timing`): the candidates are predicted and timed
        in it. Public, so that a plan kept for the matrix (``context.predict``) is one per
        mode."""

    def use_timing(self, config: TimingConfig) -> None:
        """The candidates are predicted and timed in the run's timing mode (back to back in a
        throughput run; :data:`TRIAL_TIMING`'s until told)."""
        self.timing_mode = config.mode

    def trial_timing(self) -> TimingConfig:
        """:data:`TRIAL_TIMING` in the mode the run told (:meth:`use_timing`)."""
        return replace(TRIAL_TIMING, mode=self.timing_mode)

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
        table: list = []
        rule = RULE
        device = prediction_context(self._model) if self.by == "prediction" else None
        col = case.params.layout == "col"
        if device is None:
            why = "" if self.by == "rules" else "no device rates to predict with; by the rules: "
            inner, reason = self._rules(case, value_dtype, sm_count, why)
            backend, prepared, params = self._backend(Candidate(inner), case.params.layout), \
                None, {}
            if col:   # rule 1: transposes around the row-major pick
                reason = (f"layout col: X transposed on the device for the row-major kernel, Y "
                          f"transposed back; row-major kernel {inner}: {reason}")
        else:
            cand, reason, table, backend, prepared = self._by_prediction(
                case, value_dtype, index_bytes, sm_count, device)
            inner, params = cand.backend, dict(cand.params)
            rule = PREDICTED_RULE if not any(p.trial_ms for p in table) else \
                "spmm-predicted-then-timed"
            if col:
                reason = (f"layout col: each row-major kernel predicted between device "
                          f"transposes (X before, Y after), {COLMAJOR} on column-major X as it "
                          f"is; {reason}")
        chosen = backend.name
        if prepared is None:
            prepared = backend.prepare(case, value_dtype, index_bytes)
        mean, longest = row_lengths(case.matrix.indptr)
        stats = {"row_mean": f"{mean:.2f}", "row_max": str(longest)}
        return PreparedSpmmAuto(chosen, reason, backend, prepared, stats, rule, table,
                                time.perf_counter() - start, params)

    @staticmethod
    def _backend(cand: Candidate, layout: str) -> OpBackend:
        """The backend that runs ``cand`` on X of ``layout``: the kernel itself, or for
        column-major X a row-major kernel between the device transposes."""
        backend = CHOICES[cand.backend](**cand.params)
        if layout == "col" and cand.backend not in READS_COLUMN_MAJOR:
            return SpmmCudaTransposed(inner=backend)
        return backend

    def _by_prediction(self, case: OpCase, value_dtype: str, index_bytes: int,
                       sm_count: int, device: Any):
        """(candidate, reason, table, backend, its prepared case or None): the fastest
        prediction, or the fastest of the trial when several lie within the margin, each
        timed as the whole call of the case's layout."""
        from sparsescope.timing.host import should_flush

        rates, layout, timing = device.rates, case.params.layout, self.trial_timing()
        flushed = should_flush(timing, int(case.traffic.compulsory_bytes), rates.l2_bytes)
        table = predict_candidates(case, value_dtype, index_bytes, device,
                                   sm_count=sm_count,
                                   full_warps=_gpu.device_full_block_warps(), flushed=flushed,
                                   registers=compiled_registers, timing=timing)
        order = [p for p in ranked(table) if p.predicted_ms is not None]
        if not order:
            inner, reason = self._rules(case, value_dtype, sm_count,
                                        "no candidate could be predicted; by the rules: ")
            return Candidate(inner), reason, table, self._backend(Candidate(inner), layout), None
        reason = f"predicted on {rates.name}: {prediction_table(table)}"
        short = shortlist(table, margin=TRIAL_MARGIN, most=TRIAL_MOST) if self.trial else []
        short, challenger = with_challenger(short, table) if self.trial else (short, "")
        if len(short) < 2:
            best = order[0].candidate
            return best, reason, table, self._backend(best, layout), None

        def prepare_and_time(cand):
            backend = self._backend(cand, layout)
            prepared = backend.prepare(case, value_dtype, index_bytes)
            return backend, prepared, backend.time(prepared, timing).time_ms

        def retime(backend, prepared):
            return backend.time(prepared, timing).time_ms

        trial = time_shortlist(short, table, TRIAL_MARGIN, timing.repeats, prepare_and_time,
                               retime)
        mode = ", back to back (throughput mode)" if timing.mode != "latency" else ""
        return (trial.candidate, f"{reason}. {trial.words}{mode}{challenger}", trial.table,
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
        :meth:`use_model` -- for column-major X a row-major kernel with its transposes, or
        colmajor's -- or of the rules' pick for ``spmm-cuda-auto-rules`` on row-major X),
        planned on the host for ``sms`` SMs (the cross-GPU what-if): the registers of each
        launch bound's cap (no compiled kernel here), no trial. No device rates, or the rules
        on column-major X: (None, None)."""
        from sparsescope.timing.host import should_flush

        device = self._model
        if device is None or device.rates is None:
            return None, None
        if self.by == "rules":
            if case.params.layout != "row":
                return None, None
            inner, _ = self._rules(case, value_dtype, sms)
            chosen = CHOICES[inner]()
            chosen.use_model(device)
            return chosen.host_plan_case(case, value_dtype, index_bytes, sms)
        rates = device.rates
        full_warps = _gpu.full_block_warps(rates.max_threads_per_sm, rates.max_blocks_per_sm)
        timing = self.trial_timing()
        flushed = should_flush(timing, int(case.traffic.compulsory_bytes), rates.l2_bytes)
        table = predict_candidates(case, value_dtype, index_bytes, device, sm_count=sms,
                                   full_warps=full_warps, flushed=flushed, timing=timing)
        order = [p for p in ranked(table) if p.predicted_ms is not None]
        if not order:
            return None, None
        best = order[0].candidate
        plan = next(plan for cand, plan, _ in planned_candidates(
            case, value_dtype, index_bytes, sms, full_warps, rates) if cand == best)
        return case.csr_traffic, case_launch(case, best, plan)

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
