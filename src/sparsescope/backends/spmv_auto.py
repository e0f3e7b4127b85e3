"""``cuda-spmv-auto``: pick an own SpMV kernel by its predicted time on the present device,
then run it; ``cuda-spmv-auto-rules``: pick it by the rules of matrix statistics instead.

``cuda-spmv-auto`` predicts every candidate kernel (:mod:`sparsescope.backends.select_predicted`)
with the time model and the device's rates: those of the run it is part of (the runner hands
them over through :meth:`use_model`), else the present GPU's latest stored ceilings over its
datasheet. ``cuda-spmv-auto-rules`` applies the thresholds of
:mod:`sparsescope.backends.select`, fitted to H200 sweeps; it is kept to compare the two.

The choice and its reason are kept in the case's notes (``selected``, ``selection_rule``,
``selection_reason``; ``selection_table``: every candidate's prediction, as JSON), so every
report says why.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.backends.choice_samples import packed_apart, trial_matrix
from sparsescope.backends.format_cache import FORMATS
from sparsescope.backends.select import Selection, select_for, select_kernel
from sparsescope.backends.select_predicted import (
    TRIAL_MARGIN,
    chosen_plan,
    kernel_classes,
    prediction_context,
    selection_notes,
    shortlist,
    statistics_of,
)
from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
from sparsescope.backends.spmv_device import CAPABILITY, OwnSpmvBackend
from sparsescope.backends.trial import time_shortlist
from sparsescope.timing.types import Measurement, TimingConfig

#: Environment variable that turns the trial off ("0") for a process: the ncu target sets it,
#: so that a profile holds the chosen kernel's launch, not the trial's.
AUTO_TRIAL_ENV = "SPARSESCOPE_AUTO_TRIAL"
#: How the shortlisted candidates are timed before the choice (the L2 flushed as the timing
#: protocol decides by the working set, as in the measurement that follows), in the run's
#: timing mode (:meth:`CudaSpmvAuto.use_timing`): back to back in a throughput run, where a
#: kernel in one launch can win that loses a latency run (the tile kernels' finish=1 on the
#: real development set, results/h100/real-dev/2026-11-28-finish-warp).
TRIAL_TIMING = TimingConfig(warmups=3, repeats=10, breakdown=False)

#: Backend name -> class, for the names the selection may return: the kernels of
#: ``select_predicted.AUTO_KERNELS`` (declared there, with the ones auto leaves out and why).
CHOICES: dict[str, type[OwnSpmvBackend]] = kernel_classes()


@dataclass
class PreparedAuto:
    selection: Selection
    backend: OwnSpmvBackend
    prepared: Any
    table: list = field(default_factory=list)
    """Every candidate's prediction (``select_predicted.CandidatePrediction``); empty when the
    rules chose."""
    selection_s: float = 0.0
    """Seconds the choice took: statistics, every candidate's plan and prediction, the trial,
    and the chosen kernel's upload."""
    predict_s: float = 0.0
    """Of which the statistics, the candidates' plans and predictions."""
    trial_s: float = 0.0
    """Of which the trial and the chosen kernel's preparation on the whole matrix."""
    trial_nnz: int | None = None
    """Nonzeros of the matrix the trial timed on (a row sample of a large matrix); None: no
    trial."""


class CudaSpmvAuto(SpmvBackend):
    name = "cuda-spmv-auto"
    capability = Capability(**CAPABILITY, description=(
        "own kernel chosen by its predicted time on this device (blocked16 / delta16 / sell / "
        "merge / adaptive and their launches), prediction table kept"))
    #: "prediction" (the time model on the present device) or "rules" (matrix statistics).
    by = "prediction"

    def __init__(self, *, breakdown: bool = True, trial: bool | None = None) -> None:
        self.breakdown = breakdown
        self.trial = trial if trial is not None else os.environ.get(AUTO_TRIAL_ENV, "1") != "0"
        """Time the candidates the model cannot rank apart (``select_predicted.shortlist``)
        before choosing; False: the fastest prediction alone (default: on, unless the
        environment sets :data:`AUTO_TRIAL_ENV` to 0, as the ncu target does)."""
        self._model = None
        self.timing_mode = TRIAL_TIMING.mode
        """The run's timing mode (:meth:`use_timing`): the candidates are predicted and timed
        in it. Public, so that a plan kept for the matrix (``context.predict``) is one per
        mode."""

    def use_timing(self, config: TimingConfig) -> None:
        """The trial times in the run's timing mode (:data:`TRIAL_TIMING`'s until told)."""
        self.timing_mode = config.mode

    def trial_timing(self) -> TimingConfig:
        """:data:`TRIAL_TIMING` in the mode the run told (:meth:`use_timing`)."""
        from dataclasses import replace

        return replace(TRIAL_TIMING, mode=self.timing_mode)

    def availability(self) -> tuple[bool, str]:
        return CudaSpmvAdaptive().availability()

    def use_model(self, model: Any) -> None:
        """Predict with ``model`` (a ``context.DeviceContext``: the run's rates and SASS
        refiner) instead of the present GPU's stored rates."""
        self._model = model

    def select(self, csr: sp.csr_matrix, value_dtype: str, sms: int) -> tuple[Selection, list]:
        """(the selection, the candidates' predictions) for ``csr`` on a device of ``sms``
        SMs: by prediction (rates of :meth:`use_model`'s device, else the present GPU's),
        or by the rules."""
        if self.by == "rules":  # the statistics kept for the matrix (auto asks for them too)
            return select_kernel(statistics_of(csr), sms), []
        from sparsescope.backends.select_predicted import select_by_prediction

        device = prediction_context(self._model)
        if device is None:
            selection = select_for(csr, sms)
            return Selection(selection.backend, selection.params, selection.rule,
                             f"no device rates to predict with; by the rules: "
                             f"{selection.reason}", selection.statistics), []
        return select_by_prediction(csr, device, value_dtype=value_dtype, classes=CHOICES,
                                    timing=self.trial_timing())

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str,
                index_bytes: int) -> PreparedAuto:
        from sparsescope.backends._gpu import device_sm_count

        start = time.perf_counter()
        selection, table = self.select(matrix_csr, value_dtype, device_sm_count())
        predicted = time.perf_counter()
        short = shortlist(table) if self.trial else []
        if len(short) > 1:  # one candidate or none within the margin: it is the selection
            chosen = self._timed_choice(matrix_csr, value_dtype, index_bytes, selection, table,
                                        short)
        else:
            backend = CHOICES[selection.backend](breakdown=self.breakdown, **selection.params)
            chosen = PreparedAuto(selection, backend,
                                  backend.prepare(matrix_csr, value_dtype, index_bytes), table)
        chosen.selection_s = time.perf_counter() - start
        chosen.predict_s = predicted - start
        chosen.trial_s = chosen.selection_s - chosen.predict_s
        return chosen

    def _timed_choice(self, csr: sp.csr_matrix, value_dtype: str, index_bytes: int,
                      selection: Selection, table: list, short: list) -> PreparedAuto:
        """Each candidate of the shortlist ``short`` prepared and timed (:data:`TRIAL_TIMING`)
        on a random x, on the whole matrix or a row sample of it
        (``choice_samples.trial_matrix``); the fastest measured is kept and prepared on the
        whole matrix, the others' device memory is freed."""
        from sparsescope.backends._gpu import VALUE_DTYPES, device_l2_bytes
        from sparsescope.ops.spmv import make_x

        value_bytes = np.dtype(VALUE_DTYPES[value_dtype]).itemsize
        trial_on = trial_matrix(csr, device_l2_bytes("cupy"), value_bytes)
        backends = {e.candidate.label: CHOICES[e.candidate.backend](breakdown=False,
                                                                    **e.candidate.params)
                    for e in short}
        first = backends[short[0].candidate.label]
        if trial_on.sampled:
            # the likeliest winner packed whole while the others are timed on the sample
            if hasattr(first, "build_format"):
                FORMATS.prefetch(csr, first.format_key(), first.build_format)
            formats = packed_apart(list(backends.values()), trial_on.csr)
        else:
            for later in list(backends.values())[1:]:  # packed beside the first's timing
                if hasattr(later, "build_format"):
                    FORMATS.prefetch(csr, later.format_key(), later.build_format)
            formats = {}
        x = make_x(csr.shape[1], seed=1, dtype=value_dtype)

        def prepare_and_time(cand):
            backend = backends[cand.label]
            fmt = formats.get(backend.format_key()) if hasattr(backend, "format_key") else None
            if fmt is not None and index_bytes == 4:  # prepare's own checks: INT32 only
                prepared = backend.upload(fmt, trial_on.csr, value_dtype)
            else:
                prepared = backend.prepare(trial_on.csr, value_dtype, index_bytes)
            return backend, prepared, backend.time(prepared, x, timing).time_ms

        timing = self.trial_timing()
        trial = time_shortlist(short, table, TRIAL_MARGIN, timing.repeats, prepare_and_time)
        cand, backend, prepared, table = (trial.candidate, trial.backend, trial.prepared,
                                          trial.table)
        if trial_on.sampled:  # the sample's device arrays freed before the whole is uploaded
            trial.prepared = prepared = None  # the last references to them
            formats.clear()
            prepared = backend.prepare(csr, value_dtype, index_bytes)
        backend.breakdown = self.breakdown
        mode = ", back to back (throughput mode)" if timing.mode != "latency" else ""
        chosen = Selection(cand.backend, dict(cand.params), "predicted-then-timed",
                           f"{selection.reason}. {trial.words}{mode}, {trial_on.describe()}",
                           selection.statistics)
        return PreparedAuto(chosen, backend, prepared, table, trial_nnz=int(trial_on.csr.nnz))

    def poison_output(self, prepared: PreparedAuto) -> bool:
        return prepared.backend.poison_output(prepared.prepared)

    def run(self, prepared: PreparedAuto, x: np.ndarray) -> np.ndarray:
        return prepared.backend.run(prepared.prepared, x)

    def time(self, prepared: PreparedAuto, x: np.ndarray, config: TimingConfig) -> Measurement:
        return prepared.backend.time(prepared.prepared, x, config)

    def library_versions(self) -> dict[str, str]:
        return CudaSpmvAdaptive().library_versions()

    def own_traffic(self, prepared: PreparedAuto):
        """The chosen kernel's format bytes."""
        return prepared.backend.own_traffic(prepared.prepared)

    def shape(self, prepared: PreparedAuto):
        """The chosen kernel's shape."""
        return prepared.backend.shape(prepared.prepared)

    def host_plan(self, csr, value_dtype, index_bytes, sms):
        """The plan of the kernel the selection picks for ``sms`` SMs (by prediction on the
        device of :meth:`use_model`, which the what-if sets)."""
        selection, _ = self.select(csr, value_dtype, sms)
        chosen = CHOICES[selection.backend](breakdown=self.breakdown, **selection.params)
        return chosen_plan(chosen, csr, value_dtype, index_bytes, sms, self._model)

    def notes(self, prepared: PreparedAuto) -> dict[str, str]:
        s = prepared.selection
        notes = selection_notes(prepared.backend.notes(prepared.prepared), s.backend, s.params,
                                s.rule, s.reason, prepared.selection_s, prepared.table)
        notes["selection_predict_s"] = f"{prepared.predict_s:.2f}"
        notes["selection_trial_s"] = f"{prepared.trial_s:.2f}"
        if prepared.trial_nnz is not None:
            notes["selection_trial_nnz"] = str(prepared.trial_nnz)
        return notes


class CudaSpmvAutoRules(CudaSpmvAuto):
    name = "cuda-spmv-auto-rules"
    capability = Capability(**CAPABILITY, description=(
        "own kernel chosen by the rules of matrix statistics (thresholds from H200 sweeps), "
        "reason kept"))
    by = "rules"
