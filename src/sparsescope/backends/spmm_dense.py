"""The dense peer of SpMM: ``spmm-cublas-dense``, the case's matrix stored dense (float32,
zeros included) once in ``prepare``, each call one cuBLAS GEMM through PyTorch.

Why PyTorch rather than CuPy: ``torch.mm`` hands cuBLAS a transposed operand as a flag, not a
copy, and writes into an output we own (``out=``), so both layouts are one GEMM with nothing
else in the timed call; and TF32 is one documented switch
(``torch.backends.cuda.matmul.fp32_precision``, ``allow_tf32`` before PyTorch 2.9) that this
module sets around its own calls and restores after (:func:`math_scope`), where CuPy's is a
process-wide compute type read from ``CUPY_TF32`` at import.

* ``math=fp32`` (the default): TF32 forbidden, IEEE float32 products on the CUDA cores; checked
  at the op's float32 tolerance.
* ``math=tf32`` (``spmm-cublas-dense[math=tf32]``): tensor cores on TF32 inputs; checked at the
  tolerance that follows from TF32's 10-bit mantissa (``ops.spmm_dense.tf32_tolerance``).

Layouts, as the case lays X out:

* ``row``: ``Y (rows x k) = A X``, X row-major -- ``torch.mm(A, X, out=Y)``;
* ``col``: X and Y column-major, computed as their transposes, which are row-major:
  ``Y^T (k x rows) = X^T A^T`` -- ``torch.mm(X^T, A.t(), out=Y^T)``, A^T a view (cuBLAS's
  transpose flag).

The dense matrix is built on the device from the CSR (values scattered at ``row x cols + col``,
:func:`flat_indices`); before anything is allocated, a case whose dense matrix, X, Y, the
scatter's staging and cuBLAS's workspace would not fit the device's free memory is skipped
with the numbers (:func:`dense_fit_reason`): the run is never taken out of memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.model.traffic import Traffic
from sparsescope.ops.base import OpCase
from sparsescope.ops.spmm_dense import MATHS, DenseGemmShape, dense_gemm_traffic, tf32_tolerance
from sparsescope.timing.types import Measurement, TimingConfig

MiB = 1024 * 1024
GiB = 1024 * MiB

#: cuBLAS's workspace PyTorch allocates for a handle by default: 4,096 KiB x 8 on compute
#: capability 9.0 and later (``CUBLAS_WORKSPACE_CONFIG`` ``:4096:8``), less on older GPUs;
#: counted whole, so the fit check errs towards refusing.
CUBLAS_WORKSPACE_BYTES = 32 * MiB

#: Bytes per nonzero the scatter stages on the device while A is built: its value (float32)
#: and its flat position (int64).
STAGING_BYTES_PER_NNZ = 4 + 8

PRECISION = {"fp32": "float32 (IEEE products on CUDA cores; TF32 forbidden for the call)",
             "tf32": "TF32 (tensor cores: 10-bit mantissa inputs, float32 accumulation)"}


def dense_device_bytes(rows: int, cols: int, nnz: int, k: int, value_bytes: int = 4) -> int:
    """Device bytes the dense call needs at once::

        A rows cols v + X cols k v + Y rows k v + staging nnz (v + 8) + cuBLAS workspace

    Hand check: 1,000 x 2,000, 10,000 nonzeros, k 8, float32: 8,000,000 + 64,000 + 32,000 +
    120,000 + 33,554,432 = 41,770,432 B."""
    return (rows * cols * value_bytes + cols * k * value_bytes + rows * k * value_bytes
            + nnz * (value_bytes + 8) + CUBLAS_WORKSPACE_BYTES)


def dense_fit_reason(rows: int, cols: int, nnz: int, k: int, free_bytes: int,
                     value_bytes: int = 4) -> str:
    """Why the dense call does not fit ``free_bytes`` of device memory
    (:func:`dense_device_bytes` above it), or ``""`` when it fits."""
    need = dense_device_bytes(rows, cols, nnz, k, value_bytes)
    if need <= free_bytes:
        return ""
    return (f"the dense matrix does not fit: A {rows:,} x {cols:,} float{8 * value_bytes} "
            f"({rows * cols * value_bytes / GiB:.2f} GiB) with X, Y, the build's staging and "
            f"cuBLAS's workspace needs {need / GiB:.2f} GiB, {free_bytes / GiB:.2f} GiB free "
            "on the device; not run")


def flat_indices(indptr: np.ndarray, indices: np.ndarray, cols: int) -> np.ndarray:
    """Each nonzero's position in the row-major dense matrix, ``row x cols + col`` (int64).

    Hand check: [[0, 5, 0], [0, 0, 0], [7, 0, 8]] (indptr 0, 1, 1, 3; indices 1, 0, 2) ->
    1, 6, 8."""
    rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    return rows * np.int64(cols) + np.asarray(indices, dtype=np.int64)


@contextmanager
def math_scope(matmul: Any, math: str) -> Iterator[None]:
    """TF32 allowed (``tf32``) or forbidden (``fp32``) for cuBLAS matmuls inside the block,
    the setting there before restored after, even when the block raises.

    ``matmul``: ``torch.backends.cuda.matmul``. PyTorch 2.9 and later read
    ``fp32_precision`` (``"tf32"`` / ``"ieee"``; the older switch is deprecated there);
    earlier ones ``allow_tf32``."""
    if math not in MATHS:
        raise ValueError(f"math must be one of {', '.join(MATHS)}, got {math!r}")
    if hasattr(matmul, "fp32_precision"):
        attr, value = "fp32_precision", "tf32" if math == "tf32" else "ieee"
    else:
        attr, value = "allow_tf32", math == "tf32"
    before = getattr(matmul, attr)
    setattr(matmul, attr, value)
    try:
        yield
    finally:
        setattr(matmul, attr, before)


def torch_free_bytes() -> int:
    """Device memory a new allocation can have: the driver's free bytes plus what PyTorch's
    caching allocator holds reserved but unused."""
    import torch

    free, _ = torch.cuda.mem_get_info()
    return int(free) + int(torch.cuda.memory_reserved() - torch.cuda.memory_allocated())


@dataclass
class PreparedDense:
    """The dense operands on the device, and the GEMM's operands in its layout."""

    dense: Any
    """A, ``rows x cols`` float32, row-major."""
    left: Any
    right: Any
    out: Any
    """The GEMM writes ``out = left @ right``: (A, X, Y) row-major, (X^T, A^T, Y^T) col."""
    y: Any
    """Y as ``rows x k`` (a view of ``out``)."""
    math: str
    layout: str
    working_set_bytes: int

    def call(self) -> None:
        import torch

        torch.mm(self.left, self.right, out=self.out)


class SpmmCublasDense(OpBackend):
    name = "spmm-cublas-dense"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32",), index_bytes=(4, 8), device="gpu",
        description="dense cuBLAS GEMM via torch.mm on the matrix stored dense (float32, "
                    "built once): FP32, or TF32 tensor cores with math=tf32")
    #: Options a variant may give as words (``backends.variants.parse_variant``).
    TEXT_OPTIONS = {"math": MATHS}

    def __init__(self, math: str = "fp32",
                 free_bytes: Callable[[], int] | None = None) -> None:
        if math not in MATHS:
            raise ValueError(f"math must be one of {', '.join(MATHS)}, got {math!r}")
        self.math = math
        self.free_bytes = free_bytes
        """Device memory probe (tests pass a fake); None: :func:`torch_free_bytes`."""

    def availability(self) -> tuple[bool, str]:
        return _gpu.torch_cuda_status()

    def unsupported_params(self, case: OpCase) -> str:
        probe = self.free_bytes
        if probe is None:
            if not self.availability()[0]:  # availability says why
                return ""
            probe = torch_free_bytes
            if self.math == "tf32":
                import torch

                major, minor = torch.cuda.get_device_capability()
                if major < 8:
                    return (f"TF32 needs tensor cores of compute capability 8.0 or later; this "
                            f"device is {major}.{minor}")
        rows, cols = (int(n) for n in case.matrix.shape)
        return dense_fit_reason(rows, cols, int(case.matrix.nnz), int(case.params.k),
                                int(probe()), _value_bytes(case))

    def check_tolerance(self, case: OpCase) -> float | None:
        """fp32: the case's tolerance; tf32: ``ops.spmm_dense.tf32_tolerance`` of it and the
        case's cancellation factor."""
        if self.math != "tf32":
            return None
        return tf32_tolerance(case.tolerance, float(case.derived.condition))

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedDense:
        import torch

        from sparsescope.backends.spmm_torch import torch_dense_x

        csr = case.matrix
        rows, cols = (int(n) for n in csr.shape)
        k, layout = int(case.params.k), case.params.layout
        dtype = torch.float32
        dense = torch.zeros((rows, cols), dtype=dtype, device="cuda")
        if csr.nnz:
            where = torch.from_numpy(flat_indices(csr.indptr, csr.indices, cols)).to("cuda")
            values = torch.from_numpy(csr.data.astype(np.float32)).to("cuda")
            dense.view(-1).index_put_((where,), values)
            del where, values  # the staging goes before the timed calls
        x = torch_dense_x(case.inputs, value_dtype, "cuda")
        working_set = int(self.traffic(case, None).total_bytes)
        if layout == "row":
            y = torch.empty((rows, k), dtype=dtype, device="cuda")
            return PreparedDense(dense, dense, x, y, y, self.math, layout, working_set)
        # X is the transpose of a contiguous k x cols tensor: X^T is that tensor itself
        out = torch.empty((k, rows), dtype=dtype, device="cuda")
        return PreparedDense(dense, x.t(), dense.t(), out, out.t(), self.math, layout,
                             working_set)

    def poison_output(self, prepared: PreparedDense) -> bool:
        prepared.out.fill_(float("nan"))
        return True

    def run(self, prepared: PreparedDense) -> np.ndarray:
        import torch

        with math_scope(torch.backends.cuda.matmul, prepared.math):
            prepared.call()
        return np.ascontiguousarray(prepared.y.cpu().numpy())

    def time(self, prepared: PreparedDense, config: TimingConfig) -> Measurement:
        import torch

        from sparsescope.timing.cuda import time_cuda

        # the switch is read when cuBLAS is called (and when a graph is captured): set for the
        # whole timing, so no sample pays for setting it
        with math_scope(torch.backends.cuda.matmul, prepared.math):
            return time_cuda(prepared.call, config, library="torch",
                             working_set_bytes=prepared.working_set_bytes)

    def traffic(self, case: OpCase, prepared: Any) -> Traffic:
        """The dense GEMM's bytes (``ops.spmm_dense.dense_gemm_traffic``): A with its zeros,
        X once, Y written."""
        rows, cols = (int(n) for n in case.matrix.shape)
        return dense_gemm_traffic(rows, cols, int(case.matrix.nnz), int(case.params.k),
                                  value_bytes=_value_bytes(case))

    def kernel_shape(self, case: OpCase, prepared: Any) -> DenseGemmShape:
        return DenseGemmShape(math=self.math)

    def host_plan_case(self, case: OpCase, value_dtype: str, index_bytes: int,
                       sms: int) -> tuple[Traffic, DenseGemmShape]:
        """The dense call needs no device to plan: its bytes follow the shape."""
        return self.traffic(case, None), DenseGemmShape(math=self.math)

    def library_versions(self) -> dict[str, str]:
        versions = _gpu.torch_versions()
        cublas = _gpu.package_version("nvidia-cublas", "nvidia-cublas-cu13",
                                      "nvidia-cublas-cu12")
        if cublas:
            versions["cublas (torch wheel)"] = cublas
        return versions

    def notes(self, prepared: PreparedDense) -> dict[str, str]:
        call = ("torch.mm(A, X, out=Y)" if prepared.layout == "row" else
                "torch.mm(X^T, A.t(), out=Y^T) (column-major X and Y as row-major transposes)")
        return {"call": f"{call}, cuBLAS GEMM on A stored dense (built once in prepare)",
                "math": prepared.math, "precision": PRECISION[prepared.math],
                "x_order": prepared.layout, "dense_bytes": str(int(prepared.dense.nbytes)),
                "value_dtype": str(prepared.dense.dtype),
                "output": "the backend's own Y, written by every call"}


def _value_bytes(case: OpCase) -> int:
    return int(np.asarray(case.inputs).dtype.itemsize)
