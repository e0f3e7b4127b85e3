"""``spmm-cuda-ell``: own SpMM from row-major ELL, a group of G lanes a row, either layout of X
and Y as it is (``kernels/spmm_ell.cu``, whose header argues the design), run through CuPy.

For calls that are a few dependent round trips long: a matrix of a few thousand rows leaves
the grid a fraction of one wave, so nothing hides a lane's round trips, and a CSR kernel makes
three (row pointers, pairs, gathers) before its store. Here every row is padded to one stored
width, a multiple of the group's G lanes (:func:`ell_format`), so a lane's pair is found from
its row and lane alone: two round trips (pairs, gathers), one pair and its gathers in flight a
lane a pass, the group's sums met by shuffles. No row is cut: Y is stored, no zero fill, one
launch a call.

Issue 37 item 3: on the real development set's power-network, mesh and LP matrices (1,000-
10,000 rows, 2-17 nonzeros a row) CSR_ALG3's single kernel took 2.0-2.3 us where colmajor and
rowwarp took 2.1-3.2 us warm, and their calls ran 0.81-0.96x cuSPARSE's with the L2 flushed
(results/h200/real-dev/2026-11-28-spmm-narrow).

Host choices, pure functions tested without a GPU: :func:`ell_format` (the padded pairs),
:func:`ell_declined` (padding bound), :func:`group_lanes` (G), :func:`ell_tile` (C, VEC),
:func:`plan_ell` (the launch and the case's notes), :func:`ell_launch` (the launch as the SpMM
time model reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability
from sparsescope.backends.spmm_colmajor import MAX_TILE_COLS
from sparsescope.backends.spmm_cuda import (
    HostPlannedKernel,
    host_output,
    pow2_at_least,
    upload_dense,
    warps_per_block,
)
from sparsescope.backends.spmm_ell_format import (
    MAX_PADDING,
    ell_declined,
    ell_format_of,
    group_lanes,
    padding,
    stored_width,
)
from sparsescope.backends.spmm_rowgroup import vector_width
from sparsescope.ops.base import OpCase

SOURCE = "spmm_ell.cu"
VECTOR_BYTES = 16
"""Widest load of row-major X a lane issues (float4 / double2)."""


def widest_tile(k: int) -> int:
    """C_k, the widest column tile at k: the smallest power of two >= k, at most
    ``spmm_colmajor.MAX_TILE_COLS`` (8), as colmajor's. k 1 -> 1; 3 -> 4; 8 -> 8; 64 -> 8."""
    return pow2_at_least(k, MAX_TILE_COLS)


def ell_tile(k: int, width: int, layout: str, value_dtype: str, *, rows: int, sm_count: int,
             tile_cols: int | None = None) -> tuple[int, int, int]:
    """(G, C, VEC)::

        G     = group_lanes(W)
        C_k   = smallest power of two >= k, at most MAX_TILE_COLS (8)
        C     = the narrowest power of two from C_min up to C_k whose grid fits one wave:
                ceil(rows x G / 32) x ceil(k / C) <= SMs x 64 warps (an SM's 2,048 threads),
                else C_k;  C_min = 1 column-major, a 16-byte vector row-major (4 float32 /
                2 float64, at most C_k)
        VEC   = column-major 1; row-major the widest of 4, 2, 1 values (16 bytes at most)
                dividing C and k

    Within one wave a narrower tile adds lanes at no cost in round trips; past it, every
    further wave is another round trip of pairs and gathers. Measured on the H200 on the
    power-network, mesh and LP matrices (results/h200/real-dev/2026-11-28-ell, the probes):
    at k = 8 the narrowest tile (C 1, column-major) was the fastest, at k = 64 C = 8 (one
    wave) ran 0.2-1.0 us a call faster than C = 4 (1.4 waves) in 11 of 12 cases. Wider tiles
    also read A fewer times (k / C passes over it). ``tile_cols`` replaces the rule's C (a
    power of two, at most C_k).

    Hand checks on 132 SMs (a wave 8,448 warps): 1,723 rows, W 15 (G 16: 862 warps), k 8,
    col -> (16, 1, 1); row -> C_min 4: (16, 4, 4); k 64 (C 4: 13,792 warps; C 8: 6,896) ->
    (16, 8, 4); a 500,000-row matrix, W 4 (62,500 warps), k 8, col -> C_k: (4, 8, 1); 20,000
    rows, W 4 (2,500 warps) -> (4, 4, 1) (C 2: 10,000 warps); k 6, row, W 3, tile_cols 8 ->
    (4, 8, 2) (VEC 2 divides 6 and 8).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    group = group_lanes(width)
    widest = widest_tile(k)
    values = VECTOR_BYTES // np.dtype(value_dtype).itemsize
    floor = 1 if layout == "col" else min(widest, values)
    if tile_cols is not None:
        if tile_cols < 1 or tile_cols & (tile_cols - 1) or tile_cols > widest:
            raise ValueError(f"tile_cols must be a power of two 1 to {widest} at k = {k}, "
                             f"got {tile_cols}")
        tile = tile_cols
    else:
        warps = -(-max(0, rows) * group // 32)
        wave = sm_count * 64
        tile = floor
        while tile < widest and warps * -(-k // tile) > wave:
            tile *= 2
    # rowgroup's VEC for k, no wider than the tile (both powers of two: it then divides C)
    vec = min(vector_width(k, value_dtype), tile) if layout == "row" else 1
    return group, tile, vec


def ell_kernel_name(value_dtype: str, index_bytes: int, tile: tuple[int, int, int],
                    layout: str) -> str:
    """The template instance, e.g. ``spmm_ell<float, int, 16, 1, 1, false>`` (column-major) or
    ``spmm_ell<float, int, 16, 4, 4, true>`` (row-major)."""
    group, c, vec = tile
    return (f"spmm_ell<{_gpu.CUDA_VALUE_TYPES[value_dtype]}, "
            f"{_gpu.CUDA_INDEX_TYPES[index_bytes]}, {group}, {c}, {vec}, "
            f"{'true' if layout == 'row' else 'false'}>")


@dataclass(frozen=True)
class EllPlan:
    kernel: str
    tile: tuple[int, int, int]
    """(G, C, VEC)."""
    width: int
    """Wp, the stored pairs a row."""
    rows: int
    blocks: int
    tiles: int
    warps: int
    layout: str
    indptr: np.ndarray
    """The CSR row pointers: the model's slices (a group a row) and their real gathers."""
    notes: dict[str, str]


def plan_ell(indptr: np.ndarray, k: int, layout: str, value_dtype: str, index_bytes: int,
             sm_count: int, *, tile_cols: int | None = None,
             warps: int | None = None) -> EllPlan:
    """The whole host plan of one call (pure): the tile (:func:`ell_tile`), then blocks of
    ``spmm_cuda.warps_per_block`` warps over ceil(rows x G / 32) warps, grid.y = ceil(k / C)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = int(indptr.size - 1)
    lengths = np.diff(indptr)
    longest = int(lengths.max()) if lengths.size else 0
    width = stored_width(longest)
    tile = ell_tile(k, longest, layout, value_dtype, rows=rows, sm_count=sm_count,
                    tile_cols=tile_cols)
    need = -(-rows * tile[0] // 32)
    block = warps_per_block(need, sm_count, warps)
    blocks = max(1, -(-need // block))
    tiles = -(-k // tile[1])
    name = ell_kernel_name(value_dtype, index_bytes, tile, layout)
    nnz = int(indptr[-1]) if rows else 0
    notes = {"kernel": name, "ell_longest_row": str(longest), "ell_width": str(width),
             "ell_padding": f"{padding(indptr):.2f}", "lanes_per_row": str(tile[0]),
             "passes": str(width // tile[0]), "tile_cols": str(tile[1]), "vec": str(tile[2]),
             "zero_fill": "no", "block_threads": str(32 * block),
             "grid_blocks": str(blocks), "column_tiles": str(tiles),
             "sm_count": str(sm_count), "nnz": str(nnz),
             "index_dtype": np.dtype(_gpu.INDEX_DTYPES[index_bytes]).name,
             "value_dtype": value_dtype, "layout": layout,
             "tile_rule": (f"C = {tile_cols} (given)" if tile_cols is not None else
                           "C = narrowest power of two whose grid fits one wave, else min(8, k)")}
    return EllPlan(name, tile, width, rows, blocks, tiles, block, layout, indptr, notes)


ASSUMED_REGISTERS = 32
"""Registers a thread where no compiled kernel is at hand (the host-plan what-if): ptxas (CUDA
13, sm_90) gave 32 to each instance compiled while the kernel was written (float32 and
float64, G 2-32, C 1-8, either layout): a lane keeps one pair and C sums. The launch bound's
cap (255) would give the model 8 warps an SM where the kernel runs 64."""


def ell_launch(host: EllPlan, registers: int | None = None):
    """An ELL plan as the SpMM time model's launch (``model.spmm_predict``): 32 / G rows a warp,
    G groups (lanes) a row, each a pair a stage (``stage_pairs`` G) and one X row in flight
    (``batch`` 1), C columns a slab, ceil(k / C) slabs, C / VEC loads a nonzero, every row Wp
    pairs long (``ell_width``), and no row-pointer round (``pointer_rounds`` 0): Wp / G
    passes, a round trip of pairs and one of gathers each. Registers: the compiled kernel's,
    else :data:`ASSUMED_REGISTERS`."""
    from sparsescope.model.spmm_predict import SpmmLaunch

    group, c, vec = host.tile
    return SpmmLaunch(
        kernel=host.kernel, slice_ptr=host.indptr, slices_per_warp=32 // group,
        groups_per_slice=group, slab_cols=c, slabs=host.tiles, vec=vec, chunks=c // vec,
        stage_pairs=group, batch=1, block_warps=host.warps, x_layout=host.layout,
        value_bytes=4 if host.notes["value_dtype"] == "float32" else 8,
        index_bytes=np.dtype(host.notes["index_dtype"]).itemsize,
        max_registers=registers if registers else ASSUMED_REGISTERS,
        registers_source=("the compiled kernel" if registers
                          else f"assumed ({ASSUMED_REGISTERS}, ASSUMED_REGISTERS)"),
        pointer_rounds=0, ell_width=host.width, label=f"ell {host.kernel}")


@dataclass
class PreparedEll:
    rows: int
    cols: int
    k: int
    host: EllPlan
    col: Any
    val: Any
    x: Any
    y: Any
    """Y on the device: k x rows (column-major) or rows x k (row-major), C-ordered."""
    working_set_bytes: int
    function: Any = None
    grid: tuple[int, int] = (1, 1)
    block: tuple[int] = (32,)
    args: tuple = ()


class SpmmCudaEll(HostPlannedKernel):
    name = "spmm-cuda-ell"
    SOURCE = SOURCE
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own SpMM from row-major ELL, a group of lanes a row, no row pointers: "
                    "for latency-bound small matrices, either layout of X as it is (NVRTC)")

    def __init__(self, *, tile_cols: int | None = None, warps: int | None = None,
                 max_padding: float = MAX_PADDING) -> None:
        if tile_cols is not None:   # validated at the widest k: a bad variant fails early
            ell_tile(MAX_TILE_COLS, 1, "col", "float32", rows=1, sm_count=1,
                     tile_cols=tile_cols)
        self.tile_cols = tile_cols
        """C as given, else :func:`ell_tile`'s rule; a k whose C_k is narrower is skipped."""
        self.warps = warps
        self.max_padding = max_padding

    def unsupported_params(self, case: OpCase) -> str:
        if self.tile_cols is not None:
            try:
                ell_tile(case.params.k, 1, case.params.layout, "float32", rows=1,
                         sm_count=1, tile_cols=self.tile_cols)
            except ValueError as exc:
                return str(exc)
        return ell_declined(case.matrix.indptr, self.max_padding)

    def plan(self, case: OpCase, value_dtype: str, index_bytes: int, sm_count: int) -> EllPlan:
        return plan_ell(case.matrix.indptr, case.params.k, case.params.layout, value_dtype,
                        index_bytes, sm_count, tile_cols=self.tile_cols, warps=self.warps)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedEll:
        import cupy

        csr, k, layout = case.matrix, case.params.k, case.params.layout
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        host = self.plan(case, value_dtype, index_bytes, _gpu.device_sm_count())
        fmt = ell_format_of(csr)
        col = cupy.asarray(fmt.col.astype(_gpu.INDEX_DTYPES[index_bytes]))
        val = cupy.asarray(fmt.val.astype(dtype))
        rows, cols = csr.shape
        x, y = upload_dense(case.inputs, value_dtype, layout, rows)
        function = _gpu.raw_module(SOURCE, (host.kernel,)).get_function(host.kernel) \
            if rows else None
        args = (np.int64(rows), np.int64(cols), np.int32(k), np.int32(host.width), col, val,
                x, y)
        return PreparedEll(rows=rows, cols=cols, k=k, host=host, col=col, val=val, x=x, y=y,
                           working_set_bytes=int(col.nbytes + val.nbytes + x.nbytes
                                                 + y.nbytes),
                           function=function, grid=(host.blocks, host.tiles),
                           block=(32 * host.warps,), args=args)

    def _launch(self, p: PreparedEll) -> None:
        """One kernel call, resolved by ``prepare``; every row's Y is stored (no zero fill)."""
        if p.function is not None:
            p.function(p.grid, p.block, p.args)

    def run(self, prepared: PreparedEll) -> np.ndarray:
        self._launch(prepared)
        return host_output(prepared.y, prepared.host.layout)

    def traffic(self, case: OpCase, prepared: PreparedEll | None):
        """The padded pairs' bytes (``model.traffic.ell_spmm_traffic``); plain CSR's before
        the case is prepared."""
        from sparsescope.model.traffic import ell_spmm_traffic

        if prepared is None:
            return super().traffic(case, prepared)
        return ell_spmm_traffic(prepared.rows, prepared.cols, case.matrix.nnz, prepared.k,
                                prepared.host.width, value_bytes=prepared.val.dtype.itemsize,
                                index_bytes=prepared.col.dtype.itemsize)

    def model_launch(self, host: EllPlan, registers: int | None):
        return ell_launch(host, registers)

