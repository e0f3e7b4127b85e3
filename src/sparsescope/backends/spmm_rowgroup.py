"""``spmm-cuda-rowgroup``: own CSR SpMM, row-major X and Y, G lanes per row slice
(``backends/kernels/spmm_rowgroup.cu``), run through CuPy.

Where ``spmm-cuda-rowwarp`` puts a whole warp on a row and GROUP lanes on each nonzero (the
groups summed by shuffles at the end), this kernel puts a group of G lanes on a row slice and
lets each lane own VEC-wide columns of Y outright: 32 / G rows per warp when k is small, no
reduction, A's (col, val) pairs read once per slab (not once per 32-column slab as rowwarp's
rule gives at k = 256). It is meant for the regimes issue 18 measured rowwarp losing in: short
rows (3-50 nonzeros) and k >= 64.

Host choices, all pure functions tested without a GPU and recorded in the case's notes:

* :func:`vector_width`: VEC = 4, 2 or 1 values dividing k (2 at most for float64);
* :func:`choose_slab_cols`: kslab, the columns of one grid.y slab: at most what one warp
  covers with one 16-byte load a lane (:func:`warp_slab_cols`: 128 floats, 64 doubles), in
  slabs of equal width. Blocks run slab by slab (grid.x fastest), so the X a slab gathers,
  ``cols x kslab`` values, is what must stay in the L2, not all of X: at k = 256 on a graph of
  100,000 nodes, 51 MB instead of 102 MB against a 60 MB L2 (H200). A's pairs are read once
  per slab, 12 B a nonzero against the 512 B its X row slab costs;
* :func:`rowgroup_shape`: (VEC, G, CHUNKS) for a slab;
* :func:`rowgroup_pipeline`: (DEPTH, BATCH), pairs loaded per stage and X rows in flight;
* :func:`rowgroup_grid`: warps per block and blocks, from the slices and the SM count;
* the row slices: :func:`~sparsescope.backends.spmm_cuda.slice_plan` with
  :func:`~sparsescope.backends.spmm_cuda.choose_slice_nnz` at SLICES_PER_SM slices aimed at
  per SM (rowwarp: 8): a warp walks its slice one nonzero (G lanes) or one batch at a time, so
  a slice much longer than the average warp's share (nnz / (SMs x resident warps)) ends last
  alone; 32 per SM keeps the longest slice near a resident warp's share.

``ell``: A as row-major ELL (``spmm_ell_format``), a group a row at s x width: no slice
pointers, one dependent round trip fewer a call; a pad gathers X's row 0 rather than a load
predicated on its loaded column, which ptxas serialized (H200: 0.8-1.1 us a call slower on the
small power networks at k = 64 before; after, a geomean 0.979 of the plain plan's time over the
45 row-major cases that take it, results/h200/real-dev/2026-11-28-ell-rows).

Column-major X goes through ``spmm-cuda-transposed`` (:mod:`.spmm_transposed`: this kernel
between two device transposes) or ``spmm-cuda-colmajor``; this backend skips layout ``col``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability
from sparsescope.backends.spmm_cuda import (
    MAX_WARPS_PER_BLOCK,
    MIN_SLICE_NNZ,
    HostPlannedKernel,
    SlicePlan,
    choose_slice_nnz,
    pow2_at_least,
    slice_plan,
    warp_aligned_slices,
    warps_per_block,
    zero_fill_async,
)
from sparsescope.backends.spmm_ell_format import (
    EllRowsTraffic,
    ell_declined,
    ell_rows,
    refuse_row_cuts,
    stored_width,
    upload_pairs,
)
from sparsescope.ops.base import OpCase

SOURCE = "spmm_rowgroup.cu"
MAX_SLAB_COLS = 512
"""Most columns a slab override may ask for: 512 floats are 4 float4 accumulators a lane of a
32-lane group (16 registers), 512 doubles 8 double2 (32 registers)."""
WARP_LOAD_BYTES = 32 * 16
"""One 16-byte load by each of a warp's 32 lanes: the default slab's width in bytes."""
SLICES_PER_SM = 32
"""Row slices aimed at per SM (module docstring)."""
DEFAULT_MINB = {"float32": 4, "float64": 2}
"""Blocks of 256 threads per SM the kernel's registers must allow (``__launch_bounds__(256,
MINB)``), by value type, on a grid larger than :func:`wave_minb`'s one wave. float32: 4, at
most 64 registers a thread, so 32 warps an SM, where MINB 2 lets the compiler take 72-80
registers (24 warps). Under that cap the float32 instances with a batch of 8 X vectors spill
8-48 bytes a thread (CuPy's NVRTC on the H200, and nvrtc 13.5 here), which a grid of many
waves repays with occupancy: on the real development set (H200, 2026-11-28,
results/h200/real-dev/2026-11-28-minb) MINB 4 was 13-14 % faster on NotreDame_www and mdual
at k = 64 and 256 (over 900 warps an SM), and 3-8 % on 4elt, bayer10 and Pd at 30-240.
float64: 2: the compiler wants 90-95 registers there, and a cap of 64 was not measured."""
WAVE_MINB = 2
"""MINB of a float32 grid that fits one wave at that MINB (:func:`wave_minb`)."""


def wave_minb(value_dtype: str, grid_warps: int, sm_count: int) -> int:
    """MINB of a plain (not block-summed) instance, by how many warps the grid has::

        MINB = WAVE_MINB           when grid_warps <= sm_count x 256 x WAVE_MINB / 32
             = DEFAULT_MINB[dtype] otherwise

    i.e. when the grid fits the 16 warps an SM that ``__launch_bounds__(256, 2)`` guarantees,
    every warp is resident at either MINB, so MINB 4's extra occupancy buys nothing and its
    spills (a store and a load to local memory in the gather loop, missed in a cold call)
    only cost: on the real development set (H200, 2026-11-28, k = 8 / 64 / 256 row-major) MINB 2
    was faster in all 54 such cases, by a median 5.4 % (up to 15 %: Franz6_id1959_aug at
    k = 8). Over a wave it was still faster up to 28 warps an SM (its 76-80 registers leave
    24-25 resident), and mixed beyond (0.83-1.14x, 1.13-1.14x on the four cases of over 900):
    the threshold is the guarantee of the launch bounds, not a register count one compiler
    version gives. float64 is MINB 2 already.

    132 SMs: 2,112 warps -> 2 (float32), 2,113 -> 4; float64 -> 2.
    """
    resident = 256 * WAVE_MINB // 32  # warps an SM that MINB 2 guarantees: 16
    if value_dtype == "float32" and grid_warps <= sm_count * resident:
        return WAVE_MINB
    return DEFAULT_MINB[value_dtype]


ELL_MINB = WAVE_MINB
"""MINB of the instances on ELL rows (``ell``) on any grid: under MINB 4's 64 registers the
float32 ones spill 12-148 bytes a thread (nvrtc 13.5, sm_90; the sliced instances 0-50), and
the ELL rows are for calls of a few round trips, whose grids are small."""

SPILL_FREE_BATCH = 4
"""BATCH that fits MINB 4's 64 registers without spilling: 4 float4 X vectors a lane in
flight (16 registers) where the rule's 8 take 32 (nvrtc 13.5, sm_90: none of the float32
MINB 4 instances at BATCH 4 with int32 indices spills, and one with int64 does, k = 16's
``<float, long long, 4, 4, 1, 4, 4, 4>``; checked on the device by
tests/gpu/test_spmm_rowgroup_spills.py)."""
MIN_DEPTH = 2
"""Fewest (col, val) pairs a lane loads per stage. With DEPTH 1 the kernel keeps a stage's
batches a loop; from 2 they are unrolled, so the next batch's X loads can issue before the
current batch's FMAs. At G = 32 (float32 k >= 128) DEPTH went 1 -> 2 on the H200 sweep above:
graph-08 k = 128 from 0.90x to 1.06x of cuSPARSE (2-warp blocks, MINB 2)."""
MAX_DEPTH = 4
"""Most (col, val) pairs a lane loads per stage (the stage is DEPTH x G pairs, at most 32
with G <= 8, 64 with G = 32)."""
X_LOADS_IN_FLIGHT = 8
"""BATCH x CHUNKS vector loads of X in flight per lane (as rowwarp's)."""
BLOCK_SUM_MINB = 2
"""MINB of the instance that sums cut rows in shared memory (``block_sum``): under MINB 4's
cap of 64 registers its float32 instances spill (12-32 bytes a thread, nvcc 13.0 for sm_90);
under 2's they take 63-76 registers and spill nothing."""


def vector_width(k: int, value_dtype: str, vec: int | None = None) -> int:
    """VEC: the largest of (4, 2, 1) dividing k, at most 16 bytes a load (2 for float64).

    k = 256 -> 4; k = 6 -> 2; k = 3 -> 1; k = 600 -> 4; float64 k = 256 -> 2; float64 k = 33 -> 1.
    ``vec`` replaces the rule where it is one of those widths and divides k (float32 k = 64,
    vec 2 -> 2: G 32, one row slice a warp); otherwise ValueError.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    widest = 4 if value_dtype == "float32" else 2
    if vec is not None:
        if vec not in (1, 2, 4) or vec > widest or k % vec:
            raise ValueError(f"vec must be 1, 2 or 4 (at most {widest} for {value_dtype}) "
                             f"and divide k = {k}, got {vec}")
        return vec
    return next(v for v in (4, 2, 1) if v <= widest and k % v == 0)


def warp_slab_cols(value_dtype: str) -> int:
    """Values one warp covers with one 16-byte load a lane: 128 float32, 64 float64."""
    return WARP_LOAD_BYTES // (4 if value_dtype == "float32" else 8)


def choose_slab_cols(k: int, value_dtype: str, slab: int | None = None,
                     vec: int | None = None) -> int:
    """Columns per slab (grid.y is ``ceil(k / kslab)``), W = :func:`warp_slab_cols`::

        n     = ceil(k / W)
        kslab = round_up(ceil(k / n), VEC)          (k itself when k <= W)

    Equal slabs rather than W and a remainder: float32 k = 600 -> 120 (five slabs of 120, not
    four of 128 and one of 88); k = 256 -> 128; k = 512 -> 128; k = 128 -> 128; k = 64 -> 64;
    k = 129 (VEC 1) -> 65 (65 + 64); float64 k = 256 -> 64; k = 1030 (VEC 2) -> 62 (17
    slabs, the last of 38). ``slab`` overrides (a sweep): a positive multiple of VEC, at most
    MAX_SLAB_COLS. ``vec``: VEC as given (:func:`vector_width`).
    """
    vec = vector_width(k, value_dtype, vec)
    if slab is not None:
        if slab < 1 or slab % vec or slab > MAX_SLAB_COLS:
            raise ValueError(f"slab must be a multiple of VEC = {vec} in [1, {MAX_SLAB_COLS}], "
                             f"got {slab}")
        return min(slab, k)
    n = -(-k // warp_slab_cols(value_dtype))
    per = -(-k // n)
    return -(-per // vec) * vec


def rowgroup_shape(kslab: int, vec: int) -> tuple[int, int, int]:
    """(VEC, G, CHUNKS) for a slab of kslab columns::

        G      = smallest power of two >= ceil(kslab / VEC), at most 32
        CHUNKS = ceil(kslab / (G x VEC))

    kslab = 1, VEC 1 -> (1, 1, 1): a lane per row; 8, VEC 4 -> (4, 2, 1); 6, VEC 2 -> (2, 4, 1);
    3, VEC 1 -> (1, 4, 1); 64, VEC 4 -> (4, 16, 1); 256, VEC 4 -> (4, 32, 2);
    512, VEC 2 -> (2, 32, 8); 300, VEC 4 -> (4, 32, 3); 33, VEC 1 -> (1, 32, 2).
    """
    if kslab < 1 or vec not in (1, 2, 4) or kslab % vec:
        raise ValueError(f"kslab {kslab} must be a positive multiple of VEC {vec} in (1, 2, 4)")
    lanes = -(-kslab // vec)
    group = pow2_at_least(lanes, 32)
    return vec, group, -(-kslab // (group * vec))


def rowgroup_pipeline(shape: tuple[int, int, int], depth: int | None = None,
                      batch: int | None = None) -> tuple[int, int]:
    """(DEPTH, BATCH) for a shape (VEC, G, CHUNKS)::

        DEPTH = min(MAX_DEPTH, max(MIN_DEPTH, 32 / G))        (``depth`` overrides)
        BATCH = largest power of two <= min(DEPTH x G, X_LOADS_IN_FLIGHT / CHUNKS), >= 1

    So a stage is DEPTH x G pairs (4 for G = 1, 32 for G = 8 or 16, 64 for G = 32), and
    BATCH x CHUNKS <= 8 vector loads of X are in flight a lane. G 1 -> (4, 4); G 2 -> (4, 8);
    G 16, CHUNKS 1 -> (2, 8); G 32, CHUNKS 1 -> (2, 8); CHUNKS 2 -> (2, 4); CHUNKS 3 -> (2, 2);
    CHUNKS 8 -> (2, 1); CHUNKS 16 -> (2, 1).
    BATCH divides DEPTH x G (both powers of two), as the kernel asserts. ``batch`` overrides
    the rule: a power of two dividing DEPTH x G.
    """
    _, group, chunks = shape
    if depth is None:
        depth = min(MAX_DEPTH, max(MIN_DEPTH, 32 // group))
    if depth < 1 or depth & (depth - 1):
        raise ValueError(f"depth must be a power of two >= 1, got {depth}")
    if batch is not None:
        if batch < 1 or batch & (batch - 1) or (depth * group) % batch:
            raise ValueError(f"batch must be a power of two dividing DEPTH x G = "
                             f"{depth * group}, got {batch}")
        return depth, batch
    cap = min(depth * group, max(1, X_LOADS_IN_FLIGHT // chunks))
    batch = 1
    while batch * 2 <= cap:
        batch *= 2
    return depth, batch


def rowgroup_layout(k: int, value_dtype: str, *, slab: int | None = None,
                    vec: int | None = None, depth: int | None = None,
                    batch: int | None = None) -> tuple[int, tuple[int, int, int], tuple[int, int]]:
    """(kslab, (VEC, G, CHUNKS), (DEPTH, BATCH)) of a call, by the rules and the overrides
    given (:func:`choose_slab_cols`, :func:`rowgroup_shape`, :func:`rowgroup_pipeline`); a
    ``ValueError`` where an override does not fit k."""
    kslab = choose_slab_cols(k, value_dtype, slab, vec)
    shape = rowgroup_shape(kslab, vector_width(k, value_dtype, vec))
    return kslab, shape, rowgroup_pipeline(shape, depth, batch)


def rowgroup_grid(n_slices: int, group: int, sm_count: int, warps: int | None = None,
                  full_warps: int = MAX_WARPS_PER_BLOCK) -> tuple[int, int]:
    """(blocks, warps per block) over the slices, 32 / G slices a warp::

        warps  = ceil(n_slices / (32 / G))
        block  = min(spmm_cuda.warps_per_block(warps, sm_count), full_warps)
                                                               (``warps`` overrides)
        blocks = max(1, ceil(warps / block))

    ``full_warps``: the fewest warps a block needs to fill an SM at the device's block limit
    (:func:`_gpu.full_block_warps`, 2 on Hopper). A block keeps its SM slot until its last warp
    ends, and the slices of one block differ in length (power-law rows), so a smaller block
    frees its warps' slots sooner; this kernel shares nothing between a block's warps, and a
    block of ``full_warps`` still lets an SM hold its 64 warps. Measured on the H200
    (results/h200/spmm-tuning/2026-11-25-rowgroup-blocks): 2-warp blocks against 8 on graph-08
    (100,000 rows), k = 128, 0.90x against 0.79x of cuSPARSE.

    100,000 slices, G 2 (16 a warp), 132 SMs -> 6,250 warps -> (782, 8), (3125, 2) with
    full_warps 2; 512 slices, G 32 -> (128, 4); 512 slices, G 2 -> 32 warps -> (32, 1); 0
    slices -> (1, 1).
    """
    per_warp = 32 // group
    need = -(-max(0, n_slices) // per_warp)
    block = warps_per_block(need, sm_count, warps)
    if warps is None:
        block = min(block, full_warps)
    return max(1, -(-need // block)), block


def rowgroup_kernel_name(value_dtype: str, index_bytes: int, shape: tuple[int, int, int],
                         stages: tuple[int, int], minb: int | None = None,
                         block_sum: bool = False, ell: bool = False) -> str:
    """The template instance, e.g. ``spmm_rowgroup<float, int, 4, 2, 1, 4, 8, 2>``; with
    ``block_sum`` (cut rows summed in shared memory) ``spmm_rowgroup<float, int, 4, 2, 1, 4,
    8, 2, true>``, MINB :data:`BLOCK_SUM_MINB` unless given; with ``ell`` (A as row-major
    ELL, no slice pointers) ``spmm_rowgroup<float, int, 4, 2, 1, 4, 8, 2, false, true>``."""
    if block_sum and ell:
        raise ValueError("block_sum and ell exclude each other: ELL rows are never cut")
    vec, group, chunks = shape
    depth, batch = stages
    if minb is None:
        minb = BLOCK_SUM_MINB if block_sum else DEFAULT_MINB[value_dtype]
    flags = ", true" if block_sum else ", false, true" if ell else ""
    return (f"spmm_rowgroup<{_gpu.CUDA_VALUE_TYPES[value_dtype]}, "
            f"{_gpu.CUDA_INDEX_TYPES[index_bytes]}, {vec}, {group}, {chunks}, {depth}, {batch}, "
            f"{minb}{flags}>")


def kernel_minb(kernel: str) -> int:
    """MINB of a rowgroup instance's name: ``spmm_rowgroup<float, int, 4, 2, 1, 4, 8, 2>`` ->
    2; ``<..., 8, 2, true>`` -> 2."""
    return int(kernel.rstrip(">").split("<", 1)[1].split(",")[7])



@dataclass(frozen=True)
class BlockSlices:
    """The slices of a ``block_sum`` plan: every cut row inside one block."""

    plan: SlicePlan
    """slice_row: a whole row's index, a cut row's ``-(row + 1)``, a pad's the index type's
    least value; split_rows 0 (no row across blocks: no zero fill)."""
    warps: int
    """Warps a block: enough groups for the most slices a row has, at least the rule's."""
    cut_rows: int
    pads: int


def block_sum_slices(indptr: np.ndarray, slice_nnz: int, group: int, rule_warps: int,
                     index_bytes: int, warps: int | None = None) -> BlockSlices | None:
    """Slices for the instance that sums a cut row's groups in shared memory::

        per warp = 32 / G groups;  need = most slices of a row at S
        warps    = max(rule's warps, smallest power of two >= ceil(need / per warp)), <= 8
                                                                        (``warps`` overrides)
        capacity = warps x per warp groups a block

    then :func:`~sparsescope.backends.spmm_cuda.warp_aligned_slices` at that capacity (a row
    that would straddle two blocks starts the next one, after empty pads; a row of more than
    ``capacity`` slices is cut into ``capacity`` longer ones, in whole groups of G pairs).
    None where no row is cut (nothing to sum) or more rows are cut than the aligned layout
    takes (``spmm_cuda.MAX_ALIGNED_CUT_ROWS``).

    reorientation_1 at k = 8 (G 2, 16 groups a warp), S 32: its 632-nonzero row has 20
    slices -> 2 warps (32 groups); S 8: 79 slices -> 8 warps (128 groups)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    per_warp = 32 // group
    lengths = np.diff(indptr)
    need = int(np.maximum(1, -(-lengths // slice_nnz)).max()) if lengths.size else 1
    if warps is None:
        warps = max(rule_warps, pow2_at_least(-(-need // per_warp), MAX_WARPS_PER_BLOCK))
    aligned = warp_aligned_slices(indptr, slice_nnz, group, warps * per_warp)
    if aligned is None or not aligned.cut_rows:
        return None
    rows = np.asarray(aligned.plan.slice_row, dtype=np.int64)
    pad = rows == -(lengths.size + 1)
    counts = np.bincount(rows[~pad], minlength=lengths.size)
    marked = np.where(counts[np.where(pad, 0, rows)] > 1, -(rows + 1), rows)
    least = np.iinfo(_gpu.INDEX_DTYPES[index_bytes]).min
    plan = SlicePlan(slice_nnz, aligned.plan.slice_ptr, np.where(pad, least, marked), 0)
    return BlockSlices(plan, warps, aligned.cut_rows, aligned.pads)


@dataclass(frozen=True)
class RowGroupPlan:
    """Everything the launch needs, planned on the host (no device)."""

    kernel: str
    shape: tuple[int, int, int]
    stages: tuple[int, int]
    slab: int
    slabs: int
    plan: SlicePlan
    blocks: int
    warps: int
    notes: dict[str, str]
    shared_bytes: int = 0
    """Dynamic shared memory a block (``block_sum``: the cut rows' sums and the groups' row
    keys); 0 otherwise."""
    ell: bool = False
    """A as row-major ELL (``ell``): a row a group or lane, no slice pointers."""
    ell_width: int = 0
    """Stored pairs a row where A is row-major ELL (``ell``: ``spmm_ell_format.stored_width`` of the
    longest row); 0 for slices."""

    @property
    def block_summed(self) -> bool:
        """The BLOCKSUM instance: cut rows summed by their block in shared memory."""
        return self.shared_bytes > 0


def plan_rowgroup(indptr: np.ndarray, nnz: int, k: int, value_dtype: str, index_bytes: int,
                  sm_count: int, *, depth: int | None = None, warps: int | None = None,
                  min_slice: int | None = None, slab: int | None = None,
                  minb: int | None = None, full_warps: int = MAX_WARPS_PER_BLOCK,
                  vec: int | None = None, block_sum: bool = False,
                  slice_nnz: int | None = None, batch: int | None = None,
                  ell: bool = False) -> RowGroupPlan:
    """The whole host plan of one call (pure: row pointers in, launch and notes out).
    ``block_sum``: where rows are cut, each cut row's slices kept inside one block and summed
    there in shared memory (:func:`block_sum_slices`; one launch, no zero fill, no atomics).
    ``slice_nnz``: S as given (no floor; e.g. one stage of pairs, so that no group walks more
    than one), instead of the slice rule's. ``ell``: A as row-major ELL of
    ``spmm_ell_format.stored_width(longest row)`` pairs a row, a group a row (:func:`ell_rows`): no
    slice pointers to load, so one dependent round trip fewer a call; it cuts no row, so it
    takes neither ``block_sum`` nor the slice sizes."""
    kslab, shape, stages = rowgroup_layout(k, value_dtype, slab=slab, vec=vec, depth=depth,
                                           batch=batch)
    floor = MIN_SLICE_NNZ if min_slice is None else min_slice
    if slice_nnz is not None and slice_nnz < 1:
        raise ValueError(f"slice_nnz must be >= 1, got {slice_nnz}")
    if ell:
        refuse_row_cuts(block_sum=bool(block_sum), slice_nnz=slice_nnz, min_slice=min_slice)
    size = slice_nnz or choose_slice_nnz(nnz, sm_count, floor, SLICES_PER_SM)
    plan = ell_rows(indptr) if ell else slice_plan(indptr, size)
    ell_width = 0
    if ell:
        ell_width = stored_width(plan.slice_nnz)
    blocks, block_warps = rowgroup_grid(plan.n_slices, shape[1], sm_count, warps, full_warps)
    if minb is not None and minb not in (1, 2, 3, 4, 6, 8):
        raise ValueError(f"minb must be one of 1, 2, 3, 4, 6, 8 blocks of 256, got {minb}")
    summed = (block_sum_slices(indptr, size, shape[1], block_warps, index_bytes, warps)
              if block_sum and plan.split_rows else None)
    shared = 0
    if summed is not None:
        plan, block_warps = summed.plan, summed.warps
        blocks = max(1, -(-plan.n_slices // (32 // shape[1] * block_warps)))
        threads = 32 * block_warps
        shared = (threads * shape[0] * shape[2] * (4 if value_dtype == "float32" else 8)
                  + threads // shape[1] * 8)
    slabs = -(-k // kslab)
    if minb is None and ell:
        minb = ELL_MINB
    elif minb is None and summed is None:
        minb = wave_minb(value_dtype, blocks * block_warps * slabs, sm_count)
    name = rowgroup_kernel_name(value_dtype, index_bytes, shape, stages, minb,
                                summed is not None, ell)
    if ell:
        cut_row_sum = "none (ELL: no row cut)"
    elif summed is not None:
        cut_row_sum = (f"{summed.cut_rows} row(s) summed in shared memory by their block "
                       f"({summed.pads} pad slices)")
    elif plan.split_rows:
        cut_row_sum = "an atomic a slice into a zero-filled Y"
    else:
        cut_row_sum = "none"
    notes = {"kernel": name, "vec": str(shape[0]), "lanes_per_slice": str(shape[1]),
             "slices_per_warp": str(32 // shape[1]), "loads_per_lane": str(shape[2]),
             "prefetch_pairs": str(stages[0] * shape[1]), "x_rows_per_batch": str(stages[1]),
             "slice_nnz": str(plan.slice_nnz), "slices": str(plan.n_slices),
             "split_rows": str(plan.split_rows),
             "zero_fill": "yes" if plan.split_rows else "no",
             "block_threads": str(32 * block_warps), "grid_blocks": str(blocks),
             "slab_cols": str(kslab), "slabs": str(slabs), "sm_count": str(sm_count),
             "index_dtype": np.dtype(_gpu.INDEX_DTYPES[index_bytes]).name,
             "value_dtype": value_dtype,
             "slice_rule": ("a row a group (ELL)" if ell else
                            f"S = {slice_nnz} (given)" if slice_nnz else
                            f"S = max({floor}, round_up(nnz / ({sm_count} SMs x "
                            f"{SLICES_PER_SM} slices), 32))"),
             "cut_row_sum": cut_row_sum, "minb": str(kernel_minb(name))}
    if summed is not None:
        notes["split_rows"] = str(summed.cut_rows)
    if ell:
        notes.update(ell_width=str(ell_width), pointer_rounds="0")
    return RowGroupPlan(name, shape, stages, kslab, slabs, plan, blocks, block_warps, notes,
                        shared, ell, ell_width)


def rowgroup_launch(host: RowGroupPlan, registers: int | None = None):
    """A rowgroup plan as the SpMM time model's launch: 32 / G slices a warp, one group a
    slice, DEPTH x G pairs a stage; registers: the compiled kernel's, else the cap of its
    ``__launch_bounds__(256, MINB)`` (65,536 / (256 MINB))."""
    from sparsescope.model.spmm_predict import SpmmLaunch, plan_fields

    vec, group, chunks = host.shape
    depth, batch = host.stages
    minb = kernel_minb(host.kernel)
    return SpmmLaunch(
        kernel=host.kernel, slices_per_warp=32 // group, groups_per_slice=1,
        slab_cols=host.slab, slabs=host.slabs, vec=vec, chunks=chunks,
        stage_pairs=depth * group, batch=batch, block_warps=host.warps,
        pointer_rounds=0 if host.ell else 1, ell_width=host.ell_width,
        walks_padding=False,
        label=f"rowgroup {host.kernel}", **plan_fields(host.plan, host.notes, registers, minb))


@dataclass
class PreparedRowGroup:
    rows: int
    k: int
    host: RowGroupPlan
    slice_ptr: Any
    slice_row: Any
    """Device slice rows, or the slice pointers again when no row is cut (never read then)."""
    indices: Any
    data: Any
    x: Any
    y: Any
    working_set_bytes: int
    function: Any = None
    """The compiled kernel, resolved once by ``prepare`` (not looked up on every timed call);
    None for a matrix without rows (nothing launched)."""
    grid: tuple[int, int] = (1, 1)
    block: tuple[int] = (32,)
    args: tuple = ()
    """The kernel's arguments, built once by ``prepare`` (the NumPy scalars too)."""


class SpmmCudaRowGroup(EllRowsTraffic, HostPlannedKernel):
    name = "spmm-cuda-rowgroup"
    SOURCE = SOURCE
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own CSR SpMM: row-major X, G lanes per row slice owning its columns, "
                    "warp-wide column slabs (NVRTC)")

    def __init__(self, *, depth: int | None = None, warps: int | None = None,
                 min_slice: int | None = None, slab: int | None = None,
                 minb: int | None = None, vec: int | None = None, block_sum: int = 0,
                 slice_nnz: int | None = None, batch: int | None = None,
                 ell: int = 0, max_padding: float | None = None) -> None:
        self.ell = bool(ell)
        """A as row-major ELL, a group a row, no slice pointers (:func:`plan_rowgroup`);
        declined above ``max_padding`` stored pairs a nonzero."""
        self.max_padding = max_padding
        """With ``ell``: the most stored pairs a nonzero taken (None:
        ``spmm_ell_format.MAX_PADDING``, as the ELL kernel's)."""
        if self.ell:   # a bad variant fails before any case
            refuse_row_cuts(block_sum=bool(block_sum), slice_nnz=slice_nnz, min_slice=min_slice)
        self.batch = batch
        """BATCH override (None: :func:`rowgroup_pipeline`'s rule): pairs whose X loads a lane
        issues before their FMAs."""
        self.slice_nnz = slice_nnz
        """S as given (None: the slice rule's, floored at ``min_slice``)."""
        self.block_sum = bool(block_sum)
        """Cut rows summed in shared memory by their block (:func:`block_sum_slices`): one
        launch, no zero fill."""
        self.minb = minb
        """Blocks per SM the registers must allow (None: :func:`wave_minb`, or
        :data:`BLOCK_SUM_MINB` for the block-summed instance)."""
        self.depth = depth
        """DEPTH override (None: :func:`rowgroup_pipeline`'s rule)."""
        self.warps = warps
        """Warps per block override (None: :func:`rowgroup_grid`'s rule)."""
        self.min_slice = min_slice
        """Floor of S override (None: spmm_cuda.MIN_SLICE_NNZ)."""
        self.slab = slab
        """Columns per slab override (None: :func:`choose_slab_cols`'s rule)."""
        self.vec = vec
        """VEC override (None: :func:`vector_width`'s rule): a narrower VEC gives a row slice
        more lanes, so fewer slices share a warp and the grid has more warps."""

    def unsupported_params(self, case: OpCase) -> str:
        if case.params.layout != "row":
            return ("the rowgroup SpMM kernel reads row-major X only (layout=col: "
                    "spmm-cuda-colmajor)")
        if (self.slab, self.vec, self.depth, self.batch) != (None,) * 4:
            value_dtype = "float32" if case.traffic.value_bytes == 4 else "float64"
            try:
                rowgroup_layout(case.params.k, value_dtype, slab=self.slab, vec=self.vec,
                                depth=self.depth, batch=self.batch)
            except ValueError as exc:
                return str(exc)
        return ell_declined(case.matrix.indptr, self.max_padding) if self.ell else ""

    def plan(self, case: OpCase, value_dtype: str, index_bytes: int, sm_count: int,
             full_warps: int = MAX_WARPS_PER_BLOCK) -> RowGroupPlan:
        csr = case.matrix
        return plan_rowgroup(csr.indptr, csr.nnz, case.params.k, value_dtype, index_bytes,
                             sm_count, depth=self.depth, warps=self.warps,
                             min_slice=self.min_slice, slab=self.slab, minb=self.minb,
                             full_warps=full_warps, vec=self.vec, block_sum=self.block_sum,
                             slice_nnz=self.slice_nnz, batch=self.batch, ell=self.ell)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedRowGroup:
        import cupy

        csr, k = case.matrix, case.params.k
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        host = self.plan(case, value_dtype, index_bytes, _gpu.device_sm_count(),
                         _gpu.device_full_block_warps())
        slice_ptr, slice_row, indices, data = upload_pairs(host, csr, value_dtype, index_bytes)
        rows = csr.shape[0]
        x = cupy.asarray(np.ascontiguousarray(case.inputs, dtype=dtype))
        y = cupy.zeros((rows, k), dtype=dtype)
        function = _gpu.raw_module(SOURCE, (host.kernel,)).get_function(host.kernel) \
            if rows else None
        args = (np.int64(host.plan.n_slices), np.int32(k), np.int32(host.slab),
                np.int32(host.plan.slice_row is not None),
                slice_ptr, slice_row, indices, data, x, y, np.int32(host.ell_width))
        return PreparedRowGroup(
            rows=rows, k=k, host=host, slice_ptr=slice_ptr, slice_row=slice_row,
            indices=indices, data=data, x=x, y=y,
            working_set_bytes=case.traffic.compulsory_bytes, function=function,
            grid=(host.blocks, host.slabs), block=(32 * host.warps,), args=args)

    def _launch(self, p: PreparedRowGroup) -> None:
        """The optional zero fill and one kernel call: the function and its arguments were
        resolved by ``prepare`` (X and Y are written in place -- the transposes of
        ``spmm-cuda-transposed``, the poison --, so the arguments stay valid)."""
        if p.host.plan.split_rows:
            zero_fill_async(p.y)
        if p.function is not None:
            p.function(p.grid, p.block, p.args, shared_mem=p.host.shared_bytes)

    def model_launch(self, host: RowGroupPlan, registers: int | None):
        return rowgroup_launch(host, registers)

    def host_launch(self, case: OpCase, value_dtype: str, index_bytes: int, sms: int,
                    rates: Any) -> Any:
        """Blocks of the fewest warps that fill an SM of the device of ``rates``."""
        full = (_gpu.full_block_warps(rates.max_threads_per_sm, rates.max_blocks_per_sm)
                if rates is not None else MAX_WARPS_PER_BLOCK)
        return self.model_launch(self.plan(case, value_dtype, index_bytes, sms, full), None)
