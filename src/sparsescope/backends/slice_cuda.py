"""sparsescope's own CSR row-slice kernels (``backends/kernels/slice_rows.cu``), through CuPy.

* ``slice-cuda-scatter``: seed 003's formulation -- zero-fill the dense output (a memset),
  then one warp per selected row stores each nonzero at ``out[p, col]``. Its kernel time
  (the breakdown's ``slice_scatter`` row, memset excluded) is what seed 003 timed and what
  the scatter bounds (32-byte sectors or the seed's 128-byte lines) are judged against.
* ``slice-cuda-gather``: the sorted-by-column gather seed 003 proposes instead of the
  scatter -- each block assembles a tile of one output row in shared memory from the row's
  column-sorted run and writes it once, coalesced: one kernel, no memset, every output byte
  written once (its floor is the dense-output bound).

A CSC formulation (a binary search of row ``rows[p]`` in every column) was not chosen: it
costs ``selected_rows x cols x log2(nnz per column)`` dependent loads -- 5,000 x 10,000 x 10
= 500 M for seed 003's large workload, against its 10 M reads -- while CSR's own column order
already gives each output row as one sorted run.

Both kernels are launched in full for the scalar weight (``SCALAR``: the one value is passed
as an argument and ``val`` is never read) and per-nonzero weights. The output buffer is
allocated once per prepared case and reused: :meth:`poison_output` fills it with NaN, so a
row a kernel skipped fails the check.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.ops.base import OpCase
from sparsescope.ops.slice_rows import SCALAR_WEIGHT
from sparsescope.timing.types import Measurement, TimingConfig

SOURCE = "slice_rows.cu"
BLOCK_THREADS = 256
TILE_BYTES = 48 * 1024
"""Shared memory per gather block: the default limit, no opt-in attribute needed."""
MIN_TILE = 32


def gather_tiles(cols: int, value_bytes: int, tile_bytes: int = TILE_BYTES) -> tuple[int, int]:
    """(tiles per output row, columns per tile) of the gather kernel::

        tiles = ceil(cols x value_bytes / tile_bytes)
        tile  = round_up(ceil(cols / tiles), 32)      (balanced tiles, whole warps)

    10,000 float32 columns: 1 tile of 10,016 columns (40 KB); 100,000: 9 tiles of 11,136.
    """
    per_tile = max(MIN_TILE, tile_bytes // value_bytes)
    tiles = max(1, -(-cols // per_tile))
    tile = -(-cols // tiles)
    return tiles, min(per_tile, -(-tile // 32) * 32)



@dataclass
class PreparedSliceCuda:
    n_sel: int
    cols: int
    n_rows: int
    scalar: bool
    kernel: str
    rows: Any
    indptr: Any
    indices: Any
    data: Any
    """Device values, or one value when the weight is a scalar (never read then)."""
    weight: Any
    out: Any
    working_set_bytes: int
    notes: dict[str, str]


class _SliceCuda(OpBackend):
    capability: Capability
    kernel_base = ""

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedSliceCuda:
        import cupy

        csr, inputs = case.matrix, case.inputs
        index_dtype = _gpu.INDEX_DTYPES[index_bytes]
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        scalar = inputs.weights == "scalar"
        name = (f"{self.kernel_base}<{_gpu.CUDA_VALUE_TYPES[value_dtype]}, "
                f"{_gpu.CUDA_INDEX_TYPES[index_bytes]}, {'true' if scalar else 'false'}>")
        values = csr.data[:1] if scalar else csr.data
        notes = {"kernel": name, "block_threads": str(BLOCK_THREADS),
                 "index_dtype": np.dtype(index_dtype).name, "value_dtype": value_dtype,
                 "weights": inputs.weights}
        prepared = PreparedSliceCuda(
            n_sel=int(inputs.rows.size), cols=int(csr.shape[1]), n_rows=int(csr.shape[0]),
            scalar=scalar, kernel=name,
            rows=cupy.asarray(inputs.rows.astype(index_dtype)),
            indptr=cupy.asarray(csr.indptr.astype(index_dtype)),
            indices=cupy.asarray(csr.indices.astype(index_dtype)),
            data=cupy.asarray(values.astype(dtype)), weight=dtype(SCALAR_WEIGHT),
            out=cupy.zeros((int(inputs.rows.size), int(csr.shape[1])), dtype=dtype),
            working_set_bytes=case.traffic.dense_bytes, notes=notes)
        self._plan(prepared)
        return prepared

    @abstractmethod
    def _plan(self, p: PreparedSliceCuda) -> None:
        """Record the launch shape in the notes."""

    def _kernel(self, p: PreparedSliceCuda):
        return _gpu.raw_module(SOURCE, (p.kernel,)).get_function(p.kernel)

    @abstractmethod
    def _launch(self, p: PreparedSliceCuda) -> None:
        """One call: every launch that produces the output, on the current stream."""

    def poison_output(self, prepared: PreparedSliceCuda) -> bool:
        prepared.out.fill(np.nan)
        return True

    def run(self, prepared: PreparedSliceCuda) -> np.ndarray:
        self._launch(prepared)
        return prepared.out.get()

    def time(self, prepared: PreparedSliceCuda, config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        return time_cuda(lambda: self._launch(prepared), config, library="cupy",
                         working_set_bytes=prepared.working_set_bytes)

    def library_versions(self) -> dict[str, str]:
        return _gpu.cupy_kernel_versions()

    def notes(self, prepared: PreparedSliceCuda) -> dict[str, str]:
        return dict(prepared.notes)


_CAPABILITY = dict(ops=("slice",), value_dtypes=("float32", "float64"), index_bytes=(4, 8),
                   device="gpu")


class SliceCudaScatter(_SliceCuda):
    name = "slice-cuda-scatter"
    kernel_base = "slice_scatter"
    capability = Capability(**_CAPABILITY, description="own slice kernel: memset, then a warp "
                            "per selected row scatters its nonzeros (seed 003's form, NVRTC)")

    def _plan(self, p: PreparedSliceCuda) -> None:
        p.notes.update(grid_blocks=str(max(1, -(-p.n_sel * 32 // BLOCK_THREADS))),
                       zero_fill="cudaMemsetAsync of the whole output before the kernel")

    def _launch(self, p: PreparedSliceCuda) -> None:
        import cupy

        stream = cupy.cuda.get_current_stream()
        cupy.cuda.runtime.memsetAsync(p.out.data.ptr, 0, p.out.nbytes, stream.ptr)
        grid = max(1, -(-p.n_sel * 32 // BLOCK_THREADS))
        self._kernel(p)((grid,), (BLOCK_THREADS,),
                        (np.int64(p.n_sel), np.int64(p.cols), np.int64(p.n_rows), p.rows,
                         p.indptr, p.indices, p.data, p.weight, p.out))


class SliceCudaGather(_SliceCuda):
    name = "slice-cuda-gather"
    kernel_base = "slice_gather"
    capability = Capability(**_CAPABILITY, description="own slice kernel: sorted-by-column "
                            "gather, output tiles assembled in shared memory and written once "
                            "(no memset, NVRTC)")

    def _plan(self, p: PreparedSliceCuda) -> None:
        tiles, tile = gather_tiles(p.cols, p.out.itemsize)
        p.notes.update(tiles_per_row=str(tiles), tile_cols=str(tile),
                       shared_bytes=str(tile * p.out.itemsize),
                       grid_blocks=f"{p.n_sel} x {tiles}", zero_fill="none (tiles zeroed on chip)")

    def _launch(self, p: PreparedSliceCuda) -> None:
        tiles, tile = gather_tiles(p.cols, p.out.itemsize)
        self._kernel(p)((p.n_sel, tiles), (BLOCK_THREADS,),
                        (np.int64(p.n_sel), np.int64(p.cols), np.int64(p.n_rows),
                         np.int32(tile), p.rows, p.indptr, p.indices, p.data, p.weight, p.out),
                        shared_mem=tile * p.out.itemsize)
