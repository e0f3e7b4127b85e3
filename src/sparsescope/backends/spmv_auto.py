"""``cuda-spmv-auto``: pick an own SpMV kernel from the matrix statistics, then run it.

The choice and its reason (:mod:`sparsescope.backends.select`) are kept in the case's notes
(``selected``, ``selection_rule``, ``selection_reason``), so every report says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.backends.select import Selection, select_for
from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
from sparsescope.backends.spmv_device import CAPABILITY, OwnSpmvBackend
from sparsescope.backends.spmv_merge import CudaSpmvMerge
from sparsescope.backends.spmv_sell import CudaSpmvBlocked16, CudaSpmvDelta16, CudaSpmvSell
from sparsescope.timing.types import Measurement, TimingConfig

#: Backend name -> class, for the names the selection may return.
CHOICES: dict[str, type[OwnSpmvBackend]] = {
    "cuda-spmv-adaptive": CudaSpmvAdaptive,
    "cuda-spmv-merge": CudaSpmvMerge,
    "cuda-spmv-delta16": CudaSpmvDelta16,
    "cuda-spmv-blocked16": CudaSpmvBlocked16,
    "cuda-spmv-sell": CudaSpmvSell,
}


@dataclass
class PreparedAuto:
    selection: Selection
    backend: OwnSpmvBackend
    prepared: Any


class CudaSpmvAuto(SpmvBackend):
    name = "cuda-spmv-auto"
    capability = Capability(**CAPABILITY, description=(
        "own kernel chosen from matrix statistics (blocked16 / delta16 / sell / merge / "
        "adaptive), "
        "reason kept"))

    def __init__(self, *, breakdown: bool = True) -> None:
        self.breakdown = breakdown

    def availability(self) -> tuple[bool, str]:
        return CudaSpmvAdaptive().availability()

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str,
                index_bytes: int) -> PreparedAuto:
        from sparsescope.backends.spmv_device import sm_count

        selection = select_for(matrix_csr, sm_count())
        backend = CHOICES[selection.backend](breakdown=self.breakdown, **selection.params)
        return PreparedAuto(selection, backend,
                            backend.prepare(matrix_csr, value_dtype, index_bytes))

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
        """The plan of the kernel the selection picks for ``sms`` SMs."""
        selection = select_for(csr, sms)
        chosen = CHOICES[selection.backend](breakdown=self.breakdown, **selection.params)
        return chosen.host_plan(csr, value_dtype, index_bytes, sms)

    def notes(self, prepared: PreparedAuto) -> dict[str, str]:
        s = prepared.selection
        return {**prepared.backend.notes(prepared.prepared), "selected": s.backend,
                "selection_rule": s.rule, "selection_reason": s.reason}
