"""Predict the block tensor-core SpMM kernel's time (``spmm-cuda-blocktc``: 16 x 8 blocks of A,
``mma.sync.m16n8k8`` TF32, one or three products) from its launch and the device's rates.

A warp walks one block row for one column slab of ``32 NG`` columns; per block and 32-column
group it loads 8 X row segments of 128 bytes (two 16-byte loads a lane), splits them into
TF32 parts and runs ``4 x passes`` mma. Terms (each a lower bound on the time)::

    dram    = (A x passes_dram + X + Y + around + flush write-back) / DRAM bw
              A = blocks x (128 x 4 + 4) + (block rows + 1) x 4 bytes
              passes_dram = 1 when A and one X slab fit the L2 together, else slabs
              around = the device transposes' bytes when X is column-major
    l2      = (A x slabs + Y + around) / L2 bw
              + segments / L2 random-gather rate + segments x 3 sectors x 32 B / L2 bw
              segments = blocks x slabs x NG x 8 (X row segments of 128 B: the first sector
              of each at the random-gather rate, the other three streamed)
    tensor  = blocks x slabs x NG x 4 x passes x 2,048 flops / dense TF32 tensor peak
    issue   = blocks x slabs x (PER_BLOCK + NG x per group) warp instructions
              / (SMs x schedulers x SM clock)
              per group = 2 loads + 8 values x (3 with passes 3: two cvt, one subtraction;
              1 with one pass) + 4 x passes mma
    latency = sum over warps of t_warp / min(warps, SMs x resident warps)
              t_warp = (windows + rounds) x DRAM latency
              rounds = ceil(blocks of its row / (SPLIT x BATCH)): a warp takes every SPLIT-th
              block of its row, BATCH at a time, each batch's A fragments streamed from DRAM
              with its X tiles (from the L2) beside them; windows = ceil(blocks of its row /
              (32 SPLIT)): the block columns, read 32 at a time before the batches they
              address; warps = block rows x slabs x SPLIT
    imbalance = the longest block row's t_warp
    predicted = overhead (launch) + max(dram, l2, tensor, issue, latency, imbalance)

What it leaves out, named so its error can be read: L1 hits on X tiles that the warps of one
SM share (a dense weight's block rows walk the same block columns), and ``mma.sync`` below the
datasheet tensor peak on Hopper (the peak is ``wgmma``'s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.model.kernel_shape import REGISTERS_PER_SM
from sparsescope.model.prediction import ModelPrediction, PredictionTerm
from sparsescope.model.spmm_predict import resident_warps

#: Bytes a stored block takes: 128 float32 values and its int32 block column.
BLOCK_BYTES = 16 * 8 * 4 + 4
#: Flops of one mma.m16n8k8 (16 x 8 x 8 multiply-adds).
MMA_FLOPS = 2 * 16 * 8 * 8
#: Warp instructions of one block besides its groups: the A fragment load, the block column
#: load, the X row address, the loop, and the split of the four A values.
PER_BLOCK_BASE = 6
BINDING = ("dram", "l2", "tensor", "issue", "latency", "imbalance")


@dataclass(frozen=True)
class BlockTcLaunch:
    """The block tensor-core kernel's launch as the model reads it."""

    kernel: str
    rows: int
    cols: int
    k: int
    block_ptr: np.ndarray
    """Block-row offsets into the blocks (block rows + 1)."""
    groups: int
    """32-column groups a warp (NG)."""
    slabs: int
    passes: int
    max_registers: int
    registers_source: str
    block_warps: int = 4
    split: int = 1
    """Warps sharing one block row (SPLIT)."""
    batch: int = 1
    """Blocks a warp loads before multiplying them (BATCH)."""
    launches: int = 1
    around_bytes: int = 0
    """Bytes moved outside the kernel in the call (device transposes of X and Y)."""
    value_bytes: int = 4
    cuda_source: str = ""
    """Empty: the launch is not refined from SASS by the SpMV refiner (as ``SpmmLaunch``)."""
    label: str = ""

    @property
    def blocks(self) -> int:
        return int(self.block_ptr[-1]) if self.block_ptr.size else 0

    @property
    def block_rows(self) -> int:
        return int(self.block_ptr.size - 1)


def per_group_instructions(passes: int) -> int:
    """Warp instructions of one block and 32-column group: 2 loads, the split of 8 X values,
    4 x passes mma. passes 3 -> 2 + 24 + 12 = 38; passes 1 -> 2 + 8 + 4 = 14."""
    return 2 + 8 * (3 if passes == 3 else 1) + 4 * passes


def predict_blocktc(launch: BlockTcLaunch, rates, *, flushed: bool) -> ModelPrediction:
    """The predicted time of one ``spmm_blocktc`` call with every term (module docstring).
    ``rates``: ``model.predict.DeviceRates``."""
    blocks, slabs, groups = launch.blocks, launch.slabs, launch.groups
    slab_cols = 32 * groups
    a_bytes = blocks * BLOCK_BYTES + (launch.block_rows + 1) * 4
    x_bytes = launch.cols * launch.k * 4
    y_bytes = launch.rows * launch.k * 4
    x_slab = launch.cols * min(slab_cols, launch.k) * 4
    a_dram = a_bytes * (1 if a_bytes + x_slab <= rates.l2_bytes else slabs)
    fetched = a_dram + x_bytes + launch.around_bytes
    writeback = min(rates.l2_bytes, fetched) if flushed else 0.0
    dram_bytes = fetched + y_bytes + writeback
    terms = [PredictionTerm("dram", dram_bytes / (rates.dram_bw_gb_s * 1e6),
                            f"(A {a_dram:,.0f} B + X {x_bytes:,} B + Y {y_bytes:,} B + "
                            f"around {launch.around_bytes:,} B + write-back {writeback:,.0f} B)"
                            f" / {rates.dram_bw_gb_s:,.0f} GB/s")]
    segments = float(blocks) * slabs * groups * 8
    if rates.l2_bw_gb_s:
        first = (segments / (rates.l2_gather_gsectors_s * 1e6) if rates.l2_gather_gsectors_s
                 else segments * 32 / (rates.l2_bw_gb_s * 1e6))
        rest = segments * 3 * 32 / (rates.l2_bw_gb_s * 1e6)
        streams = (a_bytes * slabs + y_bytes + launch.around_bytes) / (rates.l2_bw_gb_s * 1e6)
        terms.append(PredictionTerm(
            "l2", streams + first + rest,
            f"(A x {slabs} slab(s) + Y) / {rates.l2_bw_gb_s:,.0f} GB/s + {segments:,.0f} X row "
            f"segments' first sectors at the random-gather rate + 3 sectors each streamed"))
    mma = float(blocks) * slabs * groups * 4 * launch.passes
    if rates.tf32_tensor_gflops:
        terms.append(PredictionTerm("tensor", mma * MMA_FLOPS / (rates.tf32_tensor_gflops * 1e6),
                                    f"{mma:,.0f} mma.m16n8k8 x {MMA_FLOPS:,} flops / "
                                    f"{rates.tf32_tensor_gflops:,.0f} GFLOP/s dense TF32"))
    per_block = PER_BLOCK_BASE + 4 * (3 if launch.passes == 3 else 1)
    instructions = float(blocks) * slabs * (per_block + groups *
                                            per_group_instructions(launch.passes))
    if rates.sm_clock_mhz:
        issue_rate = rates.sm_count * rates.schedulers_per_sm * rates.sm_clock_mhz * 1e6
        terms.append(PredictionTerm("issue", instructions / issue_rate * 1e3,
                                    f"{instructions:,.0f} warp instructions / ({rates.sm_count} "
                                    f"SMs x {rates.schedulers_per_sm} x "
                                    f"{rates.sm_clock_mhz:,.0f} MHz)"))
    per_row = np.diff(np.asarray(launch.block_ptr, dtype=np.int64))
    dram_ns = rates.dram_latency_ns
    per_sm = resident_warps(launch, max_threads_per_sm=rates.max_threads_per_sm,
                            max_blocks_per_sm=rates.max_blocks_per_sm,
                            registers_per_sm=rates.registers_per_sm or REGISTERS_PER_SM)
    n_warps = launch.block_rows * slabs * launch.split
    per_round = launch.split * launch.batch
    rounds = -(-per_row // per_round) + -(-per_row // (32 * launch.split))
    total_ns = float(rounds.sum()) * launch.split * slabs * dram_ns
    terms.append(PredictionTerm(
        "latency", total_ns / max(1, min(n_warps, rates.sm_count * per_sm)) * 1e-6,
        f"{n_warps:,} warps x (windows of 32 + rounds of {per_round} blocks) x {dram_ns:,.0f} "
        f"ns / min(warps, {rates.sm_count} SMs x {per_sm} resident)"))
    longest = int(rounds.max()) if rounds.size else 0
    terms.append(PredictionTerm("imbalance", longest * dram_ns * 1e-6,
                                f"longest block row: {longest} rounds x {dram_ns:,.0f} ns"))
    overhead = (rates.launch_us or 0.0) * launch.launches * 1e-3
    terms.append(PredictionTerm("overhead", overhead,
                                f"{launch.launches} launch(es) x {rates.launch_us:.1f} us"
                                if rates.launch_us else "no measured launch time: 0"))
    bound = max((t for t in terms if t.name in BINDING), key=lambda t: t.time_ms)
    inputs = {"dram_bytes": float(dram_bytes), "blocks": float(blocks), "mma": mma,
              "x_row_segments": segments, "warp_instructions": instructions,
              "warps": float(n_warps), "resident_warps_per_sm": float(per_sm),
              "registers": float(launch.max_registers), "flush_writeback_bytes": writeback}
    return ModelPrediction(
        predicted_ms=overhead + bound.time_ms, limiter=bound.name, terms=tuple(terms),
        inputs=inputs, kernel=launch.label or launch.kernel,
        assumptions=(f"registers: {launch.registers_source}",
                     "X tiles: every block's 8 X row segments from the L2 (no L1 hits)",
                     f"tensor peak: {rates.sources.get('tf32_tensor', 'unknown')} (wgmma's; "
                     "mma.sync may run below it)"))
