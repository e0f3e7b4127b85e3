"""``spmm-cuda-blocktc``: own block-sparse SpMM on tensor cores (``kernels/spmm_blocktc.cu``),
row-major float32 X and Y, run through CuPy. Issue 18's path for dense-ish pruned weights.

A is converted on the host to 16 x 8 blocks (:func:`block_format`), the operand shape of the
``mma.sync.m16n8k8`` TF32 instruction: every block that holds a nonzero is stored whole, its
128 values in the A fragment's lane order. The tensor cores then multiply each block by an
8-row tile of X, so the work grows with the **fill**, the stored values over A's nonzeros::

    fill = 128 x blocks / nnz            (1 for a matrix of full 16 x 8 blocks)

An unstructured pruned weight of density d has ``1 - (1 - d)^128`` of its blocks occupied:
at d = 0.5, 0.3, 0.1, 0.02 the fill is 2.0, 3.3, 10.0, 46. A block costs the tensor cores
3 (3xTF32) or 1 (TF32) ``mma`` of 16 x 8 x 8 per 8 columns of X, where a CUDA-core kernel
spends 128 FMAs; where the CUDA-core kernels are held back by their X gathers, as at
k >= 64, a block of 16 rows also reads each X tile once for 16 rows instead of once a row.
Cases whose fill is above :data:`MAX_FILL` are skipped with the fill as the reason.

Precision (``passes``): 3 (default) splits every float into two TF32 parts and sums three
products (float32-level error, within the SpMM tolerance); 1 is plain TF32 (10-bit
mantissas, ~1e-4 relative error), which the float64 gate rejects at the default tolerance:
an option for a sweep, labelled ``precision`` in the case's notes.

Host choices, pure functions tested without a GPU: :func:`block_format`, :func:`count_blocks`,
:func:`sampled_fill` (a cheap screen), :func:`choose_groups` (column groups a warp),
:func:`choose_batch` (blocks in flight), :func:`choose_split` (warps a block row) and
:func:`plan_blocktc` (the launch).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability
from sparsescope.backends.spmm_cuda import OwnSpmmKernel
from sparsescope.ops.base import OpCase

SOURCE = "spmm_blocktc.cu"
BLOCK_ROWS = 16
"""Rows of A a block holds (the mma's M)."""
BLOCK_COLS = 8
"""Columns of A a block holds (the mma's K for TF32)."""
GROUP_COLS = 32
"""Columns of Y one group of four n8 fragments covers (the kernel's header)."""
MAX_GROUPS = 4
"""Most 32-column groups a warp: 16 float accumulators a group plus 8 X values a group for
each block in flight; at 4 groups (one block a batch) the compiled kernel takes 122 to 128
registers (results/h200/spmm-tuning/2026-11-25-blocktc-final/regs.txt)."""
WARPS_PER_SM_AIM = 16
"""Warps per SM the grid aims at before it widens a warp's columns (:func:`choose_groups`) and
after which it stops splitting block rows (:func:`choose_split`): each warp keeps a batch of
blocks in flight, so 16 warps -- four for each of the SM's schedulers -- cover a DRAM round
trip with several batches."""
MAX_FILL = 8.0
"""Stored values per nonzero above which the backend declines. Per block and 8 columns of X
the tensor cores run 3 mma of 16 x 8 x 8 (3xTF32), about 3 SM clocks on Hopper (one mma
m16n8k8 a clock an SM is its dense TF32 peak); the block's nonzeros need 128 / fill x 8 FMAs,
8 / fill clocks of an SM's 128 FP32 lanes at their peak. So the tensor path breaks even at
fill 8 / 3 against a CUDA-core kernel at FMA peak, and at fill 8 against one at a third of it;
the CUDA-core SpMM kernels gather X and run below that, so fill 8 is the bound past which the
tensor path cannot win. Measured on the H200 with the limit lifted (the variant
``spmm-cuda-blocktc[max_fill=64]`` in results/h200/spmm-tuning/2026-11-25-blocktc-final): at
fill 10 (unstructured weights 90 % sparse) the CSR kernels auto picked were faster in every
case measured. Below the limit, the choice is the time model's (``spmm-cuda-auto``)."""
PRECISION = {3: "3xTF32 (float32 split into two TF32 parts, three tensor-core products)",
             1: "TF32 (10-bit mantissa inputs, float32 accumulation)"}


def _row_of(indptr: np.ndarray) -> np.ndarray:
    """The row of each nonzero (int64)."""
    return np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))


def _block_keys(row_of: np.ndarray, indices: np.ndarray, cols: int) -> np.ndarray:
    """One int64 key per nonzero: block row x block columns + block column."""
    block_cols = -(-cols // BLOCK_COLS)
    return (row_of // BLOCK_ROWS) * block_cols + indices.astype(np.int64) // BLOCK_COLS


def count_blocks(indptr: np.ndarray, indices: np.ndarray, cols: int) -> int:
    """Occupied 16 x 8 blocks of a CSR pattern (duplicates and order within rows do not matter).

    The 3 x 3 identity -> 1; one nonzero at (0, 0) and one at (16, 8) -> 2."""
    if len(indices) == 0:
        return 0
    keys = np.sort(_block_keys(_row_of(indptr), indices, cols))
    return int(1 + np.count_nonzero(keys[1:] != keys[:-1]))


def block_fill(blocks: int, nnz: int) -> float:
    """Stored values per nonzero, ``128 x blocks / nnz`` (1.0 for an empty matrix)."""
    return BLOCK_ROWS * BLOCK_COLS * blocks / nnz if nnz else 1.0


def fragment_order() -> np.ndarray:
    """Position in the 16 x 8 block (row-major, 0..127) of each stored value, in the
    m16n8k8 A fragment's order: lane l = 4g + t holds A[g][t], A[g+8][t], A[g][t+4],
    A[g+8][t+4] at positions 4l .. 4l + 3. Lane 0 -> (0, 64, 4, 68); lane 5 -> (9, 73, 13, 77).
    """
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    slots = np.stack([g * 8 + t, (g + 8) * 8 + t, g * 8 + t + 4, (g + 8) * 8 + t + 4], axis=1)
    return slots.reshape(-1)


@dataclass(frozen=True)
class BlockFormat:
    """A in 16 x 8 blocks: ``block_ptr`` over block rows, ``block_col`` (8-column index) and
    ``block_val`` (blocks x 128, fragment order, float32) per block."""

    shape: tuple[int, int]
    block_ptr: np.ndarray
    block_col: np.ndarray
    block_val: np.ndarray

    @property
    def blocks(self) -> int:
        return len(self.block_col)

    @property
    def block_rows(self) -> int:
        return len(self.block_ptr) - 1

    def dense_blocks(self) -> np.ndarray:
        """blocks x 16 x 8, row-major within a block (the inverse of the fragment order)."""
        out = np.zeros((self.blocks, BLOCK_ROWS * BLOCK_COLS), self.block_val.dtype)
        out[:, fragment_order()] = self.block_val
        return out.reshape(self.blocks, BLOCK_ROWS, BLOCK_COLS)


def block_format(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                 shape: tuple[int, int]) -> BlockFormat:
    """CSR -> 16 x 8 blocks (duplicates summed, as CSR's own product sums them)."""
    rows, cols = shape
    block_rows = -(-rows // BLOCK_ROWS)
    block_cols = -(-cols // BLOCK_COLS)
    row_of = _row_of(indptr)
    uniq, which = np.unique(_block_keys(row_of, indices, cols), return_inverse=True)
    slot = (row_of % BLOCK_ROWS) * BLOCK_COLS + indices.astype(np.int64) % BLOCK_COLS
    dense = np.zeros(len(uniq) * BLOCK_ROWS * BLOCK_COLS, np.float64)
    np.add.at(dense, which.reshape(-1) * (BLOCK_ROWS * BLOCK_COLS) + slot, data)
    dense = dense.reshape(len(uniq), BLOCK_ROWS * BLOCK_COLS)
    per_row = np.bincount(uniq // block_cols, minlength=block_rows)
    block_ptr = np.concatenate(([0], np.cumsum(per_row))).astype(np.int32)
    return BlockFormat(shape=(rows, cols), block_ptr=block_ptr,
                       block_col=(uniq % block_cols).astype(np.int32),
                       block_val=np.ascontiguousarray(dense[:, fragment_order()],
                                                      dtype=np.float32))


_LAST_FORMAT: tuple[weakref.ref, BlockFormat] | None = None


def block_format_of(csr: Any) -> BlockFormat:
    """:func:`block_format` of a CSR matrix, kept for the last matrix asked (by identity, held
    weakly): the fill check, ``spmm-cuda-auto``'s prediction and ``prepare`` of one case ask
    for the same blocks, and building them sorts every nonzero."""
    global _LAST_FORMAT
    if _LAST_FORMAT is not None and _LAST_FORMAT[0]() is csr:
        return _LAST_FORMAT[1]
    fmt = block_format(csr.indptr, csr.indices, csr.data, csr.shape)
    _LAST_FORMAT = (weakref.ref(csr), fmt)
    return fmt


def fill_declined(blocks: int, nnz: int, limit: float = MAX_FILL) -> str:
    """Why the block kernel declines a matrix of ``blocks`` 16 x 8 blocks and ``nnz`` nonzeros
    (its fill above ``limit``), or "" when it takes it."""
    fill = block_fill(blocks, nnz)
    if fill <= limit:
        return ""
    return (f"16x8 block fill {fill:.1f} stored values per nonzero > {limit:g}: the tensor "
            f"cores would multiply mostly zeros")


def choose_groups(block_rows: int, k: int, sm_count: int) -> int:
    """NG, 32-column groups a warp (grid.y = ceil(k / (32 NG)) slabs)::

        NG = the largest of 4, 2, 1 with NG x 32 <= round_up(k, 32) and
             block_rows x ceil(k / (32 NG)) >= sm_count x WARPS_PER_SM_AIM   (else 1)

    Wider warps read each A block once for more columns; narrower ones give more warps.
    4,096 rows (256 block rows), k = 512, 132 SMs: 4 -> 1,024 warps < 2,112, 2 -> 2,048 <
    2,112, 1 -> 1. 65,536 rows, k = 512 -> 4. k = 40 -> at most 2 (64 columns cover 40)."""
    need = sm_count * WARPS_PER_SM_AIM
    span = -(-k // GROUP_COLS)
    groups = MAX_GROUPS
    while groups > 1:
        if groups <= span and block_rows * -(-k // (GROUP_COLS * groups)) >= need:
            return groups
        groups //= 2
    return 1


def choose_batch(groups: int) -> int:
    """BATCH, blocks a warp loads before it multiplies them: ``max(1, 4 / NG)``, so that the
    blocks in flight hold about 4 x (4 + 8) values a lane whatever NG (the kernel's registers:
    NG 1 -> 4, 2 -> 2, 4 -> 1)."""
    return max(1, 4 // groups)


MAX_SPLIT = 16
"""Most warps on one block row (a CUDA block of 16 warps; one 32-column group a warp)."""


def choose_split(block_rows: int, slabs: int, blocks: int, batch: int, sm_count: int,
                 groups: int = 1) -> int:
    """SPLIT, warps sharing one block row (summed through shared memory)::

        SPLIT = the smallest power of two <= MAX_SPLIT (4 when NG > 1) with
                block_rows x slabs x SPLIT >= sm_count x WARPS_PER_SM_AIM, else that most;
                at most the largest power of two <= the mean blocks a row / BATCH (a warp
                gets at least a batch), at least 1

    A 512 x 512 weight at density 0.5 (32 block rows of 64 blocks), k = 32, 132 SMs:
    32 x 1 x 16 = 512 < 2,112 -> 16, capped at 64 / 4 = 16 -> 16. 1,024 x 4,096 (64 rows of
    512), k = 32: 64 x 32 >= 2,112 fails, 16 -> 16. 4,096 x 1,024 (256 rows of 128), k = 512,
    16 slabs: 4,096 >= 2,112 -> 1. Rows of 3 blocks (BATCH 4): 1."""
    need = sm_count * WARPS_PER_SM_AIM
    most = MAX_SPLIT if groups == 1 else 4
    options = [s for s in (1, 2, 4, 8, 16) if s <= most]
    split = next((s for s in options if block_rows * slabs * s >= need), most)
    per_row = blocks / block_rows if block_rows else 0.0
    cap = 1
    while cap * 2 <= min(most, per_row / batch):
        cap *= 2
    return min(split, cap)


def block_threads(split: int) -> int:
    """Threads a CUDA block: 4 warps, or SPLIT warps when a row takes more than 4."""
    return 32 * max(4, split)


def kernel_name(passes: int, groups: int, vec4: bool, split: int = 1, batch: int = 4) -> str:
    """The template instance, e.g. ``spmm_blocktc<3, 1, true, 2, 4>``."""
    return f"spmm_blocktc<{passes}, {groups}, {'true' if vec4 else 'false'}, {split}, {batch}>"


@dataclass(frozen=True)
class BlockTcPlan:
    kernel: str
    groups: int
    slabs: int
    split: int
    batch: int
    grid_blocks: int
    notes: dict[str, str]


def plan_blocktc(block_rows: int, blocks: int, nnz: int, k: int, sm_count: int,
                 passes: int = 3) -> BlockTcPlan:
    """The launch of one call (pure): kernel instance, slabs and grid, and the case's notes."""
    if passes not in PRECISION:
        raise ValueError(f"passes must be 3 (3xTF32) or 1 (TF32), got {passes}")
    groups = choose_groups(block_rows, k, sm_count)
    slabs = -(-k // (GROUP_COLS * groups))
    batch = choose_batch(groups)
    split = choose_split(block_rows, slabs, blocks, batch, sm_count, groups)
    threads = block_threads(split)
    rows_per_block = threads // 32 // split
    grid_blocks = max(1, -(-block_rows // rows_per_block))
    name = kernel_name(passes, groups, k % 4 == 0, split, batch)
    notes = {"kernel": name, "precision": PRECISION[passes], "block_shape": "16x8",
             "blocks": str(blocks), "block_rows": str(block_rows),
             "fill": f"{block_fill(blocks, nnz):.2f}",
             "groups_per_warp": str(groups), "slab_cols": str(GROUP_COLS * groups),
             "warps_per_block_row": str(split), "blocks_per_batch": str(batch),
             "slabs": str(slabs), "block_threads": str(threads),
             "grid_blocks": str(grid_blocks), "sm_count": str(sm_count),
             "value_dtype": "float32", "index_dtype": "int32 (block indices)"}
    return BlockTcPlan(name, groups, slabs, split, batch, grid_blocks, notes)


def sampled_fill(indptr: np.ndarray, indices: np.ndarray, cols: int,
                 sample_rows: int = 256) -> float:
    """The fill of up to ``sample_rows`` block rows spread evenly over A (a screen that costs
    no sort of all nonzeros): ``128 x blocks / nnz`` over the sampled block rows (1.0 when
    they hold no nonzero). Every block row sampled when A has no more: the exact fill."""
    indptr = np.asarray(indptr, dtype=np.int64)
    block_rows = -(-(len(indptr) - 1) // BLOCK_ROWS)
    picks = np.unique(np.linspace(0, block_rows - 1, min(sample_rows, block_rows)).astype(int)) \
        if block_rows else np.zeros(0, int)
    blocks = nnz = 0
    for br in picks:
        lo, hi = indptr[br * BLOCK_ROWS], indptr[min(len(indptr) - 1, (br + 1) * BLOCK_ROWS)]
        if hi > lo:
            nnz += int(hi - lo)
            blocks += len(np.unique(indices[lo:hi] // BLOCK_COLS))
    return block_fill(blocks, nnz)


def blocktc_launch(host: BlockTcPlan, block_ptr: np.ndarray, rows: int, cols: int, k: int,
                   passes: int, registers: int | None = None):
    """A plan as the time model's launch (``model.blocktc_predict``); registers: the compiled
    kernel's, else 128, about what the accumulators and a batch of blocks in flight take
    (the compiled instances of 1 to 4 SPLIT: 87 to 128 registers,
    results/h200/spmm-tuning/2026-11-25-blocktc-final/regs.txt)."""
    from sparsescope.model.blocktc_predict import BlockTcLaunch

    return BlockTcLaunch(
        kernel=host.kernel, rows=rows, cols=cols, k=k, block_ptr=np.asarray(block_ptr),
        groups=host.groups, slabs=host.slabs, passes=passes, split=host.split,
        batch=host.batch,
        max_registers=registers or 128,
        registers_source="the compiled kernel" if registers else "assumed 128",
        block_warps=block_threads(host.split) // 32, label=f"blocktc {host.kernel}")


@dataclass
class PreparedBlockTc:
    rows: int
    cols: int
    k: int
    host: BlockTcPlan
    block_rows: int
    host_block_ptr: np.ndarray
    """The block-row offsets on the host (for the time model)."""
    block_ptr: Any
    block_col: Any
    block_val: Any
    x: Any
    y: Any
    working_set_bytes: int


class SpmmCudaBlockTc(OwnSpmmKernel):
    name = "spmm-cuda-blocktc"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32",), index_bytes=(4,), device="gpu",
        description="own block-sparse SpMM: 16x8 blocks on tensor cores (mma.sync TF32, "
                    "3xTF32 for float32 accuracy), row-major X (NVRTC, sm_80+)")

    def __init__(self, *, passes: int = 3, max_fill: float = MAX_FILL) -> None:
        if passes not in PRECISION:
            raise ValueError(f"passes must be 3 (3xTF32) or 1 (TF32), got {passes}")
        self.passes = passes
        """3: 3xTF32 (float32-level error); 1: TF32 (labelled, rejected by the default gate)."""
        self.max_fill = max_fill
        """Fill above which the case is skipped (:data:`MAX_FILL`)."""

    def unsupported_params(self, case: OpCase) -> str:
        if case.params.layout != "row":
            return "the block tensor-core SpMM kernel reads row-major X only"
        csr = case.matrix
        return fill_declined(block_format_of(csr).blocks, csr.nnz, self.max_fill)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedBlockTc:
        import cupy

        csr, k = case.matrix, case.params.k
        fmt = block_format_of(csr)
        host = plan_blocktc(fmt.block_rows, fmt.blocks, csr.nnz, k, _gpu.device_sm_count(),
                            self.passes)
        return PreparedBlockTc(
            rows=csr.shape[0], cols=csr.shape[1], k=k, host=host, block_rows=fmt.block_rows,
            host_block_ptr=fmt.block_ptr, block_ptr=cupy.asarray(fmt.block_ptr),
            block_col=cupy.asarray(fmt.block_col),
            block_val=cupy.asarray(fmt.block_val),
            x=cupy.asarray(np.ascontiguousarray(case.inputs, dtype=np.float32)),
            y=cupy.zeros((csr.shape[0], k), dtype=np.float32),
            # what a call touches: the blocks (fill x A's values), X and Y
            working_set_bytes=int(fmt.block_val.nbytes + fmt.block_col.nbytes
                                  + fmt.block_ptr.nbytes + 4 * k * (csr.shape[0] + csr.shape[1])))

    def _launch(self, p: PreparedBlockTc) -> None:
        if p.rows == 0 or p.k == 0:
            return
        h = p.host
        kernel = _gpu.raw_module(SOURCE, (h.kernel,)).get_function(h.kernel)
        kernel((h.grid_blocks, h.slabs), (block_threads(h.split),),
               (np.int32(p.block_rows), np.int32(p.rows), np.int32(p.cols), np.int32(p.k),
                p.block_ptr, p.block_col, p.block_val, p.x, p.y))

    def traffic(self, case: OpCase, prepared: PreparedBlockTc | None):
        """The block format's bytes (``model.traffic.block_spmm_traffic``: the stored zeros
        counted as padding); plain CSR's before the case is prepared."""
        from sparsescope.model.traffic import block_spmm_traffic

        if prepared is None:
            return super().traffic(case, prepared)
        csr = case.matrix
        return block_spmm_traffic(prepared.rows, prepared.cols, csr.nnz, prepared.k,
                                  blocks=int(prepared.host_block_ptr[-1]),
                                  block_rows=prepared.block_rows)

    def kernel_shape(self, case: OpCase, prepared: PreparedBlockTc | None):
        """The launch for the time model (``model.blocktc_predict``), with the compiled
        kernel's registers."""
        from sparsescope.backends.spmm_cuda import compiled_registers

        if prepared is None:
            return None
        return blocktc_launch(prepared.host, prepared.host_block_ptr, prepared.rows,
                              prepared.cols, prepared.k, self.passes,
                              compiled_registers(SOURCE, prepared.host.kernel))

    def notes(self, prepared: PreparedBlockTc) -> dict[str, str]:
        return dict(prepared.host.notes)
