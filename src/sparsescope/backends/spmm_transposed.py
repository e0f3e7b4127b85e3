"""``spmm-cuda-transposed``: column-major X and Y through the row-major rowgroup kernel.

Column-major X is the worst layout for a CSR SpMM: a nonzero's X row ``X[j, :]`` is ``k``
values ``cols`` apart, one 32-byte sector each, where row-major X gives them side by side
(``k x 4 / 32`` sectors). Measured on the H200 (results/h200/spmm), every column-major kernel,
cuSPARSE's and ``spmm-cuda-colmajor``, ran 5-10x slower than the row-major rowgroup kernel on
the same matrix and k there. So this backend transposes instead, on the device and inside the
timed call (the transposes cost a fixed ~2,100 warp instructions a 32 x 32 tile, which at small
k on short rows can outweigh the product: ``spmm-cuda-auto`` then times ``spmm-cuda-colmajor``
beside it, ``backends.spmm_auto_candidates``, ``model.transpose``)::

    X_row = transpose(X_col)          (kernels/transpose.cu: 32 x 32 tiles through shared memory)
    Y_row = inner(A, X_row)           (a row-major kernel: rowgroup by default; spmm-cuda-auto
                                       passes the one its rules pick for row-major X)
    Y_col = transpose(Y_row)

The two transposes move ``2 x (cols + rows) x k`` values more than the product itself, which
the declared traffic counts (X read and written once more, Y written and read once more): a
win whenever the nonzeros gather more than that, i.e. about ``nnz > 2 (rows + cols)`` times
the sector waste of column-major gathers. The scratch X_row and Y_row (``(cols + rows) x k``
values) are allocated once per prepared case.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.spmm_cuda import OwnSpmmKernel
from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
from sparsescope.model.traffic import Traffic
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig

SOURCE = "transpose.cu"
TILE = 32
"""Tile side of the transpose kernel; its blocks are TILE x 8 threads."""


def transpose_grid(rows: int, cols: int) -> tuple[int, int]:
    """Blocks of a ``rows x cols`` input, one a 32 x 32 tile, all in grid.x (grid.y stops at
    65,535 row bands, 2,097,120 rows): 1000 x 33 -> (64, 1); 1 x 1 -> (1, 1); 5,000,000 x 8 ->
    (156,250, 1)."""
    return max(1, -(-cols // TILE) * -(-rows // TILE)), 1


def transposed_traffic(base: Traffic, rows: int, cols: int, k: int, value_bytes: int) -> Traffic:
    """``base`` plus the transposes: X read and written once more (``2 cols k`` values), Y
    written and read once more (``2 rows k``). Hand check: rows 10, cols 20, k 8, 4 B:
    x + 1,280 B, y + 640 B."""
    return replace(base, format=f"{base.format} + device transposes",
                   x_bytes=base.x_bytes + 2 * cols * k * value_bytes,
                   y_written_bytes=base.y_written_bytes + 2 * rows * k * value_bytes)


@dataclass
class PreparedTransposed:
    inner: Any
    """The row-major kernel's prepared case (rows, k, x and y on the device)."""
    x_col: Any
    """X as the caller holds it: column-major, i.e. k x cols row-major."""
    y_col: Any
    """Y column-major: k x rows row-major."""
    cols: int
    kernel: str
    transposes: tuple = ()
    """(function, grid, block, arguments) of X's transpose before the kernel and Y's after,
    resolved by ``prepare`` (none for an empty side): no module lookup inside the timed
    call."""


class SpmmCudaTransposed(OwnSpmmKernel):
    name = "spmm-cuda-transposed"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own SpMM for column-major X and Y: device transposes around the "
                    "row-major rowgroup kernel, inside the timed call (NVRTC)")

    def __init__(self, inner: OpBackend | None = None, **rowgroup_options) -> None:
        self.rowgroup = inner if inner is not None else SpmmCudaRowGroup(**rowgroup_options)
        """The row-major kernel between the transposes (its ``prepare`` gives ``rows``, ``k``,
        ``x`` and ``y`` on the device and ``_launch`` runs it)."""

    def unsupported_params(self, case: OpCase) -> str:
        if case.params.layout != "col":
            return "spmm-cuda-transposed is for column-major X (layout=row: spmm-cuda-rowgroup)"
        return ""

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedTransposed:
        import cupy

        row_case = replace(case, params=replace(case.params, layout="row"))
        inner = self.rowgroup.prepare(row_case, value_dtype, index_bytes)
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        x_col = cupy.asarray(np.ascontiguousarray(np.asarray(case.inputs).T, dtype=dtype))
        y_col = cupy.zeros((case.params.k, case.matrix.shape[0]), dtype=dtype)
        kernel = f"transpose_tile<{_gpu.CUDA_VALUE_TYPES[value_dtype]}>"
        fn = _gpu.raw_module(SOURCE, (kernel,)).get_function(kernel)
        k, rows, cols = case.params.k, case.matrix.shape[0], case.matrix.shape[1]

        def transpose(src, dst, n_rows: int, n_cols: int) -> tuple:
            if n_rows == 0 or n_cols == 0:
                return ()
            return ((fn, transpose_grid(n_rows, n_cols), (TILE, 8),
                     (src, dst, np.int64(n_rows), np.int64(n_cols))),)

        return PreparedTransposed(inner, x_col, y_col, cols, kernel,
                                  (transpose(x_col, inner.x, k, cols),
                                   transpose(inner.y, y_col, rows, k)))

    def _launch(self, p: PreparedTransposed) -> None:
        before, after = p.transposes
        for fn, grid, block, args in before:
            fn(grid, block, args)
        self.rowgroup._launch(p.inner)
        for fn, grid, block, args in after:
            fn(grid, block, args)

    def poison_output(self, prepared: PreparedTransposed) -> bool:
        prepared.y_col.fill(np.nan)
        prepared.inner.y.fill(np.nan)
        prepared.inner.x.fill(np.nan)   # the transpose must write every X value it reads
        return True

    def run(self, prepared: PreparedTransposed) -> np.ndarray:
        self._launch(prepared)
        return np.ascontiguousarray(prepared.y_col.get().T)

    def time(self, prepared: PreparedTransposed, config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        inner = prepared.inner
        scratch = inner.x.nbytes + inner.y.nbytes
        return time_cuda(lambda: self._launch(prepared), config, library="cupy",
                         working_set_bytes=inner.working_set_bytes + scratch)

    def traffic(self, case: Any, prepared: Any) -> Traffic:
        base = super().traffic(case, prepared)
        if base is None:
            return base
        csr, k = case.matrix, case.params.k
        return transposed_traffic(base, csr.shape[0], csr.shape[1], k,
                                  case.traffic.value_bytes)

    def kernel_shape(self, case: OpCase, prepared: PreparedTransposed | None):
        """The row-major kernel's launch with the two transposes around it
        (``model.spmm_predict.with_transposes``); None when the inner kernel declares none."""
        from sparsescope.model.spmm_predict import with_transposes

        if prepared is None:
            return None
        row_case = replace(case, params=replace(case.params, layout="row"))
        inner = self.rowgroup.kernel_shape(row_case, prepared.inner)
        if inner is None:
            return None
        csr = case.matrix
        return with_transposes(inner, csr.shape[0], csr.shape[1], case.params.k)

    def host_launch(self, case: OpCase, value_dtype: str, index_bytes: int, sms: int,
                    rates: Any) -> Any:
        """The inner kernel's host launch on the row-major case, between the two transposes
        (the cross-GPU what-if); None when the inner kernel cannot plan without its device."""
        from sparsescope.model.spmm_predict import with_transposes

        row_case = replace(case, params=replace(case.params, layout="row"))
        inner = self.rowgroup.host_launch(row_case, value_dtype, index_bytes, sms, rates)
        if inner is None:
            return None
        csr = case.matrix
        return with_transposes(inner, csr.shape[0], csr.shape[1], case.params.k)

    def notes(self, prepared: PreparedTransposed) -> dict[str, str]:
        return {**self.rowgroup.notes(prepared.inner), "transpose_kernel": prepared.kernel,
                "row_major_kernel": self.rowgroup.name,
                "transposes": "X col->row before, Y row->col after, both timed"}
