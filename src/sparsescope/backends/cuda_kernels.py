"""sparsescope's own CSR SpMV kernels (``backends/kernels/spmv_csr.cu``), run through CuPy.

Compiled at run time by NVRTC (``cupy.RawModule`` with name expressions), for float32 or
float64 values and INT32 or INT64 indices:

* ``cuda-csr-scalar``: one thread per row (``csr_scalar<T, I>``); 256-thread blocks.
* ``cuda-csr-vector``: ``TPR`` threads per row reduced by warp shuffles
  (``csr_vector<T, I, TPR>``), ``TPR`` chosen from the mean and the longest row length
  (:func:`sparsescope.backends._gpu.threads_per_row`); the choice and the rule are kept in
  the case's notes.

Both write every y element once and never read y (``Capability.y_read=False``). The device
``y`` is allocated once per prepared case and reused, so :meth:`poison_output` can fill it with
NaN: a launch that skips a row leaves NaN there and fails the correctness gate.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.timing.types import Measurement, TimingConfig

SOURCE = "spmv_csr.cu"
BLOCK_THREADS = 256


def _name_expressions() -> tuple[str, ...]:
    """Every instantiation the backends launch (compiled together, once per process)."""
    names = []
    for value in _gpu.CUDA_VALUE_TYPES.values():
        for index in _gpu.CUDA_INDEX_TYPES.values():
            names.append(f"csr_scalar<{value}, {index}>")
            names += [f"csr_vector<{value}, {index}, {w}>" for w in _gpu.VECTOR_WIDTHS]
    return tuple(names)


@dataclass
class PreparedCsr:
    """Device arrays of one case plus the launch configuration chosen for it."""

    rows: int
    cols: int
    nnz: int
    value_dtype: str
    index_bytes: int
    indptr: Any
    """cupy.ndarray, rows + 1 entries."""
    indices: Any
    data: Any
    x: Any
    """Device x, cols entries (filled by run/time)."""
    y: Any
    """Device y, rows entries, reused by every call (poisoned before the checked run)."""
    kernel_name: str
    threads_per_row: int
    grid: int
    notes: dict[str, str]


class _CudaCsrKernel(SpmvBackend):
    """A CSR kernel from ``spmv_csr.cu``; subclasses choose the threads per row."""

    capability: Capability

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    @abstractmethod
    def _threads_per_row(self, csr: sp.csr_matrix) -> tuple[int, dict[str, str]]:
        """Threads cooperating on one row, and notes saying why."""

    @abstractmethod
    def _kernel_name(self, value_dtype: str, index_bytes: int, tpr: int) -> str:
        """The templated kernel's name expression in ``spmv_csr.cu``."""

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str,
                index_bytes: int) -> PreparedCsr:
        import cupy

        rows, cols = (int(n) for n in matrix_csr.shape)
        index_dtype = _gpu.INDEX_DTYPES[index_bytes]
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        tpr, notes = self._threads_per_row(matrix_csr)
        name = self._kernel_name(value_dtype, index_bytes, tpr)
        grid = max(1, -(-rows * tpr // BLOCK_THREADS))
        notes.update(kernel=name, block_threads=str(BLOCK_THREADS), grid_blocks=str(grid),
                     index_dtype=np.dtype(index_dtype).name, value_dtype=value_dtype)
        return PreparedCsr(
            rows=rows, cols=cols, nnz=int(matrix_csr.nnz), value_dtype=value_dtype,
            index_bytes=index_bytes,
            indptr=cupy.asarray(matrix_csr.indptr.astype(index_dtype, copy=False)),
            indices=cupy.asarray(matrix_csr.indices.astype(index_dtype, copy=False)),
            data=cupy.asarray(matrix_csr.data.astype(dtype, copy=False)),
            x=cupy.zeros(cols, dtype=dtype), y=cupy.zeros(rows, dtype=dtype),
            kernel_name=name, threads_per_row=tpr, grid=grid, notes=notes)

    def _launch(self, p: PreparedCsr, rows: int) -> None:
        """Launch the kernel over the first ``rows`` rows (all of them outside tests)."""
        kernel = _gpu.raw_module(SOURCE, _name_expressions()).get_function(p.kernel_name)
        kernel((p.grid,), (BLOCK_THREADS,),
               (np.int64(rows), p.indptr, p.indices, p.data, p.x, p.y))

    def _set_x(self, p: PreparedCsr, x: np.ndarray) -> None:
        p.x.set(np.ascontiguousarray(x, dtype=p.x.dtype))

    def poison_output(self, prepared: PreparedCsr) -> bool:
        prepared.y.fill(np.nan)
        return True

    def run(self, prepared: PreparedCsr, x: np.ndarray) -> np.ndarray:
        self._set_x(prepared, x)
        self._launch(prepared, prepared.rows)
        return prepared.y.get()

    def time(self, prepared: PreparedCsr, x: np.ndarray, config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        self._set_x(prepared, x)
        p = prepared
        working_set = _gpu.csr_working_set_bytes(p.rows, p.cols, p.nnz, p.x.itemsize,
                                                 p.index_bytes)
        return time_cuda(lambda: self._launch(p, p.rows), config, library="cupy",
                         working_set_bytes=working_set)

    def library_versions(self) -> dict[str, str]:
        return _gpu.cupy_kernel_versions()

    def notes(self, prepared: PreparedCsr) -> dict[str, str]:
        return dict(prepared.notes)

    def shape(self, prepared: PreparedCsr) -> KernelShape:
        kernel = _gpu.raw_module(SOURCE, _name_expressions()).get_function(prepared.kernel_name)
        return replace(_csr_shape(prepared.kernel_name, prepared.threads_per_row, prepared.rows),
                       resident_blocks_per_sm=_gpu.resident_blocks(kernel, BLOCK_THREADS))

    def host_plan(self, csr, value_dtype, index_bytes, sms):
        tpr, _ = self._threads_per_row(csr)
        name = self._kernel_name(value_dtype, index_bytes, tpr)
        value_bytes = int(np.dtype(_gpu.VALUE_DTYPES[value_dtype]).itemsize)
        return (csr_spmv_traffic(*csr.shape, csr.nnz, value_bytes=value_bytes,
                                 index_bytes=index_bytes), _csr_shape(name, tpr, csr.shape[0]))


#: How NVRTC's code for the CSR loop reads a lane's n entries (sm_90, every TPR, float or
#: double; ``sass.kernel_shape``): n mod 4 one at a time, then 16 at a time, then a peeled
#: copy of 8 and one of 4.
CSR_WINDOWS = (4, 16, 8, 4)


def _csr_shape(name: str, tpr: int, rows: int) -> KernelShape:
    """``tpr`` threads per row, one nonzero each per iteration (the plain loop ``for j in row:
    sum += val[j] * x[col[j]]``), after the row pointers, each row's entries read in windows
    (``row_windows``); resources unknown."""
    return KernelShape(kernel=name, decomposition="rows", block_threads=BLOCK_THREADS,
                       grid_blocks=max(1, -(-rows * tpr // BLOCK_THREADS)),
                       threads_per_row=tpr, nnz_per_iteration=1, rounds_per_iteration=2,
                       setup_rounds=1, row_windows=CSR_WINDOWS, cuda_source=SOURCE,
                       source="declared by the backend (its CUDA source)")


_CAPABILITY = dict(ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(4, 8),
                   device="gpu", y_read=False)


class CudaCsrScalar(_CudaCsrKernel):
    name = "cuda-csr-scalar"
    capability = Capability(**_CAPABILITY,
                            description="own CSR-scalar kernel, one thread per row (NVRTC)")

    def _threads_per_row(self, csr: sp.csr_matrix) -> tuple[int, dict[str, str]]:
        return 1, {"threads_per_row": "1"}

    def _kernel_name(self, value_dtype: str, index_bytes: int, tpr: int) -> str:
        return (f"csr_scalar<{_gpu.CUDA_VALUE_TYPES[value_dtype]}, "
                f"{_gpu.CUDA_INDEX_TYPES[index_bytes]}>")


class CudaCsrVector(_CudaCsrKernel):
    name = "cuda-csr-vector"
    capability = Capability(**_CAPABILITY,
                            description="own CSR-vector kernel, 2-32 threads per row chosen "
                                        "from the mean and longest row (NVRTC)")

    def _threads_per_row(self, csr: sp.csr_matrix) -> tuple[int, dict[str, str]]:
        rows = max(1, csr.shape[0])
        mean = csr.nnz / rows
        longest = int(np.diff(csr.indptr).max()) if csr.shape[0] else 0
        tpr = _gpu.threads_per_row(mean, longest)
        return tpr, {"threads_per_row": str(tpr),
                     "threads_per_row_rule": (
                         f"smallest power of two >= max(mean nnz/row {mean:.2f} / "
                         f"{_gpu.NNZ_PER_LANE_MEAN}, longest row {longest} / "
                         f"{_gpu.NNZ_PER_LANE_LONGEST}), clamped to [2, 32]")}

    def _kernel_name(self, value_dtype: str, index_bytes: int, tpr: int) -> str:
        return (f"csr_vector<{_gpu.CUDA_VALUE_TYPES[value_dtype]}, "
                f"{_gpu.CUDA_INDEX_TYPES[index_bytes]}, {tpr}>")
