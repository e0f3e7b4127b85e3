"""``spmm-cuda-auto``: pick an own SpMM kernel from (k, layout, dtype, matrix shape, SMs), run it.

The choice is :func:`choose_spmm_kernel`, a pure function of numbers (no GPU); its name and
one-line reason are kept in the case's notes (``selected``, ``selection_rule``,
``selection_reason``), as ``cuda-spmv-auto`` does, so every report says why.

The rules, first match wins (``G`` is the rowgroup kernel's lanes per row slice for this k,
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
by the time model's prediction once SpMM is modelled. Rowwarp is never chosen where it would
refuse the case (``k`` needing more than its ``MAX_CHUNKS`` loads a lane).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
from sparsescope.backends.spmm_cuda import (
    MAX_CHUNKS,
    TARGET_WARPS_PER_SM,
    SpmmCudaRowWarp,
    choose_slab,
    launch_shape,
)
from sparsescope.backends.spmm_rowgroup import (
    SpmmCudaRowGroup,
    choose_slab_cols,
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
#: Backend name -> class, for the names the rule may return.
CHOICES: dict[str, type[OpBackend]] = {
    ROWWARP: SpmmCudaRowWarp, ROWGROUP: SpmmCudaRowGroup, COLMAJOR: SpmmCudaColMajor,
    TRANSPOSED: SpmmCudaTransposed}
WARP_SLOTS = 32
"""A warp's lanes: the row length below which rowwarp leaves nonzero slots idle."""
WIDE_GROUP = 16
"""G at or above which a rowgroup group is half a warp or more."""
RULE = "spmm-auto-rules-v3"


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


@dataclass
class PreparedSpmmAuto:
    chosen: str
    reason: str
    backend: OpBackend
    prepared: Any
    stats: dict[str, str]


class SpmmCudaAuto(OpBackend):
    name = "spmm-cuda-auto"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own SpMM kernel chosen by rules (rowwarp / rowgroup / colmajor), "
                    "reason kept")

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    def choose(self, case: OpCase, value_dtype: str, sm_count: int) -> tuple[str, str]:
        csr = case.matrix
        mean, longest = row_lengths(csr.indptr)
        return choose_spmm_kernel(case.params.k, case.params.layout, value_dtype, csr.nnz,
                                  csr.shape[0], mean, longest, sm_count)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedSpmmAuto:
        from dataclasses import replace

        sm_count = _gpu.device_sm_count()
        chosen, reason = self.choose(case, value_dtype, sm_count)
        if chosen == TRANSPOSED:   # the transposes around the row-major rules' own pick
            row_case = replace(case, params=replace(case.params, layout="row"))
            inner, why = self.choose(row_case, value_dtype, sm_count)
            backend = SpmmCudaTransposed(inner=CHOICES[inner]())
            reason = f"{reason}; row-major kernel {inner}: {why}"
        else:
            backend = CHOICES[chosen]()
        mean, longest = row_lengths(case.matrix.indptr)
        stats = {"row_mean": f"{mean:.2f}", "row_max": str(longest)}
        return PreparedSpmmAuto(chosen, reason, backend,
                                backend.prepare(case, value_dtype, index_bytes), stats)

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

    def notes(self, prepared: PreparedSpmmAuto) -> dict[str, str]:
        return {**prepared.backend.notes(prepared.prepared), **prepared.stats,
                "selected": prepared.chosen, "selection_rule": RULE,
                "selection_reason": prepared.reason}
