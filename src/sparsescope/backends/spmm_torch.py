"""cuSPARSE SpMM through PyTorch: ``torch.sparse.mm(A_csr, X)``, INT64 or INT32 indices.

* ``spmm-torch-i64``: CSR with INT64 ``crow_indices`` / ``col_indices`` (PyTorch's default);
* ``spmm-torch-i32``: the same call with INT32 indices.

One call allocates Y and runs cuSPARSE SpMM (``at::_sparse_csr_mm`` -> ``addmm`` with beta 0);
X is passed with the strides of the case's layout (row-major, or column-major as a transposed
contiguous tensor) and PyTorch hands it to cuSPARSE as it is or copies it, as its dispatch
decides -- part of the timed call, as a user would see it. Y is fresh on every call (nothing
to poison; the runner checks the output is a fresh array).

The backends take a ``device`` so their CPU path (PyTorch's own CSR SpMM) runs in the
correctness suites without a GPU; registered instances use ``cuda``.
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig

CALL = "torch.sparse.mm(A_csr, X)"


def torch_status(device: str) -> tuple[bool, str]:
    """(True, "") when PyTorch can run on ``device`` (``cuda`` or ``cpu``)."""
    if device == "cuda":
        return _gpu.torch_cuda_status()
    if importlib.util.find_spec("torch") is None:
        return False, "torch is not installed (pip install 'sparsescope[torch]')"
    return True, ""


def torch_csr(csr, value_dtype: str, index_bytes: int, device: str, *,
              requires_grad: bool = False):
    """A ``torch.sparse_csr`` tensor of ``csr`` on ``device`` (invariants already checked by
    the op, so PyTorch's own check and its beta warnings are skipped)."""
    import torch

    index_dtype = _gpu.INDEX_DTYPES[index_bytes]

    def tensor(array: np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(array)).to(device)

    values = tensor(csr.data.astype(_gpu.VALUE_DTYPES[value_dtype]))
    if requires_grad:
        values.requires_grad_(True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support")
        warnings.filterwarnings("ignore", message=".*[Ss]parse invariant checks")
        matrix = torch.sparse_csr_tensor(tensor(csr.indptr.astype(index_dtype)),
                                         tensor(csr.indices.astype(index_dtype)), values,
                                         size=tuple(int(n) for n in csr.shape),
                                         check_invariants=False)
    return matrix, values


def torch_dense_x(x: np.ndarray, value_dtype: str, device: str):
    """X on ``device`` with the layout of ``x``: C-ordered stays row-major; F-ordered becomes
    the transpose of a contiguous ``k x cols`` tensor (strides (1, cols))."""
    import torch

    dtype = _gpu.VALUE_DTYPES[value_dtype]
    if x.flags.c_contiguous:
        return torch.from_numpy(np.ascontiguousarray(x, dtype=dtype)).to(device)
    return torch.from_numpy(np.ascontiguousarray(x.T, dtype=dtype)).to(device).t()


@dataclass
class PreparedTorchSpmm:
    matrix: Any
    x: Any
    device: str
    working_set_bytes: int


class _SpmmTorch(OpBackend):
    capability: Capability

    def __init__(self, device: str = "cuda") -> None:
        self.device = device

    def availability(self) -> tuple[bool, str]:
        return torch_status(self.device)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedTorchSpmm:
        matrix, _ = torch_csr(case.matrix, value_dtype, index_bytes, self.device)
        return PreparedTorchSpmm(matrix, torch_dense_x(case.inputs, value_dtype, self.device),
                                 self.device, case.traffic.compulsory_bytes)

    def run(self, prepared: PreparedTorchSpmm) -> np.ndarray:
        import torch

        y = torch.sparse.mm(prepared.matrix, prepared.x)
        return y.cpu().contiguous().numpy()

    def time(self, prepared: PreparedTorchSpmm, config: TimingConfig) -> Measurement:
        import torch

        matrix, x = prepared.matrix, prepared.x
        if prepared.device == "cpu":
            from sparsescope.timing.host import time_host

            return time_host(lambda: torch.sparse.mm(matrix, x), config,
                             working_set_bytes=prepared.working_set_bytes)
        from sparsescope.timing.cuda import time_cuda

        return time_cuda(lambda: torch.sparse.mm(matrix, x), config, library="torch",
                         working_set_bytes=prepared.working_set_bytes)

    def library_versions(self) -> dict[str, str]:
        return _gpu.torch_versions()

    def notes(self, prepared: PreparedTorchSpmm) -> dict[str, str]:
        return {"call": CALL, "device": prepared.device,
                "index_dtype": str(prepared.matrix.crow_indices().dtype),
                "value_dtype": str(prepared.matrix.values().dtype),
                "x_strides": str(tuple(prepared.x.stride())),
                "output": "allocated by PyTorch on every call"}


_CAPABILITY = dict(ops=("spmm",), value_dtypes=("float32", "float64"), device="gpu")


class SpmmTorchI64(_SpmmTorch):
    name = "spmm-torch-i64"
    capability = Capability(**_CAPABILITY, index_bytes=(8,),
                            description="cuSPARSE SpMM via torch.sparse.mm, INT64 indices")


class SpmmTorchI32(_SpmmTorch):
    name = "spmm-torch-i32"
    capability = Capability(**_CAPABILITY, index_bytes=(4,),
                            description="cuSPARSE SpMM via torch.sparse.mm, INT32 indices")
