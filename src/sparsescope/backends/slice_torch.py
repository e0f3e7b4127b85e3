"""Row slicing with PyTorch tensor ops: expand the selected CSR ranges, ``index_put`` them.

PyTorch has no row indexing of a ``sparse_csr`` tensor (``index_select`` is not implemented
for SparseCsr; the COO ``index_select`` has no backward), so ``slice-torch`` is the slice a
PyTorch user writes, differentiable with respect to the values::

    start = crow[rows]; length = crow[rows + 1] - start
    pos   = repeat_interleave(start - exclusive_cumsum(length), length) + arange(nnz_sel)
    out   = zeros(n_sel, cols).index_put((repeat_interleave(arange(n_sel), length), col[pos]),
                                         values[pos])          # values: a 0-d tensor if scalar

All of it runs on the device, in one timed call; only ``nnz_sel`` (the output's entry count,
which ``repeat_interleave`` needs to avoid a device sync) is computed on the host when the case
is prepared. INT64 indices (PyTorch's index type). The output is fresh on every call.
:func:`slice_values` is the same computation as a function of the values, for gradient checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends.base import Capability, OpBackend
from sparsescope.backends.spmm_torch import torch_status
from sparsescope.ops.base import OpCase
from sparsescope.ops.slice_rows import SCALAR_WEIGHT
from sparsescope.timing.types import Measurement, TimingConfig


def slice_values(crow, col, values, rows, n_sel: int, cols: int, nnz_selected: int):
    """Dense ``out[p, :] = A[rows[p], :]`` from CSR tensors; differentiable in ``values``
    (a 0-d ``values`` is the scalar weight of every nonzero)."""
    import torch

    start = crow[rows]
    length = crow[rows + 1] - start
    first = torch.cumsum(length, 0) - length
    pos = (torch.repeat_interleave(start - first, length, output_size=nnz_selected)
           + torch.arange(nnz_selected, device=crow.device))
    out_row = torch.repeat_interleave(torch.arange(n_sel, device=crow.device), length,
                                      output_size=nnz_selected)
    picked = values if values.dim() == 0 else values[pos]
    out = torch.zeros((n_sel, cols), dtype=values.dtype, device=values.device)
    return out.index_put((out_row, col[pos]), picked)


@dataclass
class PreparedTorchSlice:
    crow: Any
    col: Any
    values: Any
    rows: Any
    n_sel: int
    cols: int
    nnz_selected: int
    device: str
    working_set_bytes: int

    def call(self):
        return slice_values(self.crow, self.col, self.values, self.rows, self.n_sel, self.cols,
                            self.nnz_selected)


class SliceTorch(OpBackend):
    name = "slice-torch"
    capability = Capability(
        ops=("slice",), value_dtypes=("float32", "float64"), index_bytes=(8,), device="gpu",
        description="PyTorch ops: repeat_interleave over the CSR ranges + index_put "
                    "(differentiable in the values)")

    def __init__(self, device: str = "cuda") -> None:
        self.device = device

    def availability(self) -> tuple[bool, str]:
        return torch_status(self.device)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedTorchSlice:
        import torch

        csr, inputs = case.matrix, case.inputs

        def tensor(array: np.ndarray, dtype):
            return torch.from_numpy(np.ascontiguousarray(array, dtype=dtype)).to(self.device)

        dtype = np.dtype(value_dtype)
        if inputs.weights == "scalar":  # a 0-d tensor: index_put broadcasts the one value
            values = torch.tensor(SCALAR_WEIGHT, dtype=getattr(torch, value_dtype),
                                  device=self.device)
        else:
            values = tensor(csr.data, dtype)
        return PreparedTorchSlice(
            crow=tensor(csr.indptr, np.int64), col=tensor(csr.indices, np.int64),
            values=values, rows=tensor(inputs.rows, np.int64), n_sel=int(inputs.rows.size),
            cols=int(csr.shape[1]), nnz_selected=int(case.traffic.nnz_selected),
            device=self.device, working_set_bytes=case.traffic.dense_bytes)

    def run(self, prepared: PreparedTorchSlice) -> np.ndarray:
        return prepared.call().cpu().numpy()

    def time(self, prepared: PreparedTorchSlice, config: TimingConfig) -> Measurement:
        if prepared.device == "cpu":
            from sparsescope.timing.host import time_host

            return time_host(prepared.call, config,
                             working_set_bytes=prepared.working_set_bytes)
        from sparsescope.timing.cuda import time_cuda

        return time_cuda(prepared.call, config, library="torch",
                         working_set_bytes=prepared.working_set_bytes)

    def library_versions(self) -> dict[str, str]:
        import torch

        return {"torch": torch.__version__, "torch_cuda": str(torch.version.cuda or "")}

    def notes(self, prepared: PreparedTorchSlice) -> dict[str, str]:
        return {"call": "repeat_interleave + index_put (slice_torch.slice_values)",
                "device": prepared.device, "index_dtype": "int64",
                "value_dtype": str(prepared.values.dtype),
                "output": "allocated and zero-filled by PyTorch on every call"}
