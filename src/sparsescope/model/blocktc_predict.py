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
    latency = CTA rounds x DRAM latency / min(CTAs, SMs x resident CTAs)
              rounds(row) = ceil(blocks / (SPLIT x BATCH)) + ceil(blocks / (32 SPLIT)):
              a warp takes every SPLIT-th block of its row, BATCH at a time, each batch's A
              fragments streamed from DRAM with its X tiles (from the L2) beside them, and
              the block columns 32 at a time before the batches they address; a CTA's
              rounds are its slowest row's (it keeps its SM slot until that row ends)
    memory  = the CTA rounds through a closed network of DRAM, L2, issue and the tensor
              cores per SM (``predict.per_sm_mva``, each a demand a round, the round trip
              its delay): at least each of dram, l2, issue, tensor and latency
    imbalance = the slowest CTA's rounds x DRAM latency x max(1, loaded round / bare round)
    predicted = overhead (model.call_overhead) + max(memory, imbalance)

What it leaves out, named so its error can be read: L1 hits on X tiles that the warps of one
SM share (a dense weight's block rows walk the same block columns), and ``mma.sync`` below the
datasheet tensor peak on Hopper (the peak is ``wgmma``'s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.model.call_overhead import overhead_term
from sparsescope.model.kernel_shape import REGISTERS_PER_SM
from sparsescope.model.predict import flush_writeback, per_sm_mva
from sparsescope.model.prediction import ModelPrediction, PredictionTerm
from sparsescope.model.spmm_predict import OwnLaunch, issue_term, resident_warps
from sparsescope.model.throughput import warm_dram_term

#: Bytes a stored block takes: 128 float32 values and its int32 block column.
BLOCK_BYTES = 16 * 8 * 4 + 4
#: Flops of one mma.m16n8k8 (16 x 8 x 8 multiply-adds).
MMA_FLOPS = 2 * 16 * 8 * 8
#: Warp instructions of one block besides its groups: the A fragment load, the block column
#: load, the X row address, the loop, and the split of the four A values.
PER_BLOCK_BASE = 6
BINDING = ("memory", "imbalance")
"""The terms the prediction takes the largest of: the MVA of the CTAs' rounds through every
station (at least each of dram, l2, issue, tensor and latency) and the slowest CTA."""


@dataclass(frozen=True)
class BlockTcLaunch(OwnLaunch):
    """The block tensor-core kernel's launch as the model reads it (its registers, block
    size, launches and bytes around the kernel: :class:`~.spmm_predict.OwnLaunch`)."""

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
    split: int = 1
    """Warps sharing one block row (SPLIT)."""
    batch: int = 1
    """Blocks a warp loads before multiplying them (BATCH)."""

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


def launch_rounds(launch: BlockTcLaunch) -> tuple[np.ndarray, np.ndarray]:
    """(rounds of each block row's warps, rounds of each CTA of one slab)::

        rounds(row) = ceil(blocks / (SPLIT x BATCH)) + ceil(blocks / (32 SPLIT))
        CTA rounds  = the largest of its block_warps / SPLIT rows' rounds

    A CTA keeps its SM slot until its slowest row ends. Hand check: rows of 3 and 2 blocks,
    SPLIT 1, BATCH 1, 4 warps a CTA -> rows (4, 3), one CTA of 4 rounds."""
    per_row = np.diff(np.asarray(launch.block_ptr, dtype=np.int64))
    rounds = (-(-per_row // (launch.split * launch.batch))
              + -(-per_row // (32 * launch.split)))
    rows_per_cta = max(1, launch.block_warps // launch.split)
    pad = (-rounds.size) % rows_per_cta
    padded = np.concatenate([rounds, np.zeros(pad, dtype=rounds.dtype)])
    return rounds, (padded.reshape(-1, rows_per_cta).max(axis=1) if padded.size
                    else np.zeros(0, dtype=np.int64))


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
    writeback = flush_writeback(rates, fetched) if flushed else 0.0
    dram_bytes = fetched + y_bytes + writeback
    terms = [warm_dram_term(PredictionTerm(
        "dram", dram_bytes / (rates.dram_bw_gb_s * 1e6),
        f"(A {a_dram:,.0f} B + X {x_bytes:,} B + Y {y_bytes:,} B + around "
        f"{launch.around_bytes:,} B + write-back {writeback:,.0f} B) / "
        f"{rates.dram_bw_gb_s:,.0f} GB/s"), fetched + y_bytes, rates)]  # model.throughput
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
        terms.append(issue_term(instructions, rates))
    dram_ns = rates.dram_latency_ns
    _, cta_rounds = launch_rounds(launch)
    per_sm = resident_warps(launch, max_threads_per_sm=rates.max_threads_per_sm,
                            max_blocks_per_sm=rates.max_blocks_per_sm,
                            registers_per_sm=rates.registers_per_sm or REGISTERS_PER_SM)
    ctas_per_sm = max(1, per_sm // max(1, launch.block_warps))
    ctas = int(cta_rounds.size) * slabs
    n_warps = launch.block_rows * slabs * launch.split
    cycles = max(1.0, float(cta_rounds.sum()) * slabs)
    slots = min(ctas, rates.sm_count * ctas_per_sm)
    terms.append(PredictionTerm(
        "latency", cycles * dram_ns / max(1, slots) * 1e-6,
        f"{ctas:,} CTAs' rounds ({cycles:,.0f}: windows of 32 + batches of "
        f"{launch.split * launch.batch} blocks, the slowest row of each CTA) x {dram_ns:,.0f} "
        f"ns / min(CTAs, {rates.sm_count} SMs x {ctas_per_sm} resident)"))
    local = ("issue", "tensor")
    demands = {t.name: t.time_ms * 1e-3 / cycles for t in terms
               if t.name in ("dram", "l2", *local)}
    queue = per_sm_mva(demands, dram_ns * 1e-9, rates.sm_count, ctas_per_sm, max(1, ctas),
                       local=local)
    terms.append(PredictionTerm("memory", cycles / queue.throughput_per_s * 1e3,
                                f"{cycles:,.0f} CTA rounds through DRAM, L2, issue and tensor "
                                f"cores (MVA per SM, {queue.customers:,} resident CTAs, "
                                f"{dram_ns:,.0f} ns a round)"))
    longest = int(cta_rounds.max()) if cta_rounds.size else 0
    loaded = max(1.0, queue.cycle_s / (dram_ns * 1e-9)) if dram_ns > 0 else 1.0
    terms.append(PredictionTerm("imbalance", longest * dram_ns * loaded * 1e-6,
                                f"slowest CTA: {longest} rounds x {dram_ns:,.0f} ns, x "
                                f"{loaded:.2f} for the queues under load"))
    terms.append(overhead_term(rates, launch.launches))
    overhead = terms[-1].time_ms
    bound = max((t for t in terms if t.name in BINDING), key=lambda t: t.time_ms)
    limiter = queue.dominant if bound.name == "memory" else bound.name
    inputs = {"dram_bytes": float(dram_bytes), "blocks": float(blocks), "mma": mma,
              "x_row_segments": segments, "warp_instructions": instructions,
              "warps": float(n_warps), "resident_warps_per_sm": float(per_sm),
              "registers": float(launch.max_registers), "flush_writeback_bytes": writeback}
    return ModelPrediction(
        predicted_ms=overhead + bound.time_ms, limiter=limiter, terms=tuple(terms),
        inputs=inputs, kernel=launch.label or launch.kernel,
        assumptions=(f"registers: {launch.registers_source}",
                     "X tiles: every block's 8 X row segments from the L2 (no L1 hits)",
                     f"tensor peak: {rates.sources.get('tf32_tensor', 'unknown')} (wgmma's; "
                     "mma.sync may run below it)"))
