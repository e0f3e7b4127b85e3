"""Predict the panel tensor-core SpMM kernel's time (``spmm-cuda-paneltc``: panels of MB block
rows, each item's X rows staged in shared memory once for the panel, ``mma.sync.m16n8k8``
TF32, one or three products) from its launch and the device's rates.

A CTA walks one panel's items (a split's run of them) for one tile of ``8 NF`` Y columns, KB
items a stage. Terms (each a lower bound on the time)::

    A       = items x (MB x 128 x 4 + 4) + (panels + 1) x 4 bytes
    dram    = (A x passes_dram + X + Y x (2 with splits: the memset) + flush write-back)
              / DRAM bw;  passes_dram = 1 when A and X fit the L2 together, else tiles
    l2      = (A x tiles + staged X + Y x (3 with splits: memset, atomic read and write))
              / L2 bw;  staged X = items x 8 rows x k x 4 bytes (each item's X rows once a
              panel and tile; columns past k are zero-filled, not read)
    tensor  = items x MB x tiles x NF x passes mma x 2,048 flops / dense TF32 tensor peak
    issue   = items x tiles x (MB x WN x per warp + staging) warp instructions
              / (SMs x schedulers x SM clock)
              per warp = 1 A load + 4 values' split + F / 2 X loads + 2 F values' split
                         (5 with passes 3: hi's add and AND, the subtraction, lo's add and
                         AND; 2 with one pass) + F x passes mma + 4 (loop), F = NF / WN the
                         warp's fragments
              staging  = (8 x NC / 4 x 8 + MB x 32 x 4) / 32: an X copy's index, column
                         choice, guard and address (8), an A copy's address (4)
    smem    = items x tiles x (MB x (WN x 512 + NF / 4 x 1,024) + 8 x NC x 4 + MB x 512)
              bytes / (SMs x 128 B a clock x SM clock)
    latency = the CTAs' groups x DRAM latency / (STAGES - 1) / min(CTAs, SMs x resident)
              (a group waits out its stage's round trip, STAGES - 1 groups in flight)
    imbalance = the longest CTA's groups x DRAM latency / (STAGES - 1)
    predicted = overhead (model.call_overhead) + the largest of them

What it leaves out, named so its error can be read: ``mma.sync`` below the datasheet tensor
peak on Hopper (the peak is ``wgmma``'s), issue below one instruction a cycle (ncu on the H200,
the 4,096 x 4,096 weight at k = 256: 0.47 a scheduler-cycle, 8.6 warp instructions an mma
against this count's 5.4, 218 us against the 48 us predicted:
results/h200/spmm-break-even/2026-11-28-paneltc), bank conflicts (the kernel's padding avoids
them), and the atomics' own cost beyond their bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.model.call_overhead import overhead_term
from sparsescope.model.predict import flush_writeback
from sparsescope.model.prediction import ModelPrediction, PredictionTerm
from sparsescope.model.rowtile import SMEM_BYTES_PER_CLOCK, resident_blocks
from sparsescope.model.spmm_predict import OwnLaunch, issue_term
from sparsescope.model.throughput import warm_dram_term

#: Flops of one mma.m16n8k8 (16 x 8 x 8 multiply-adds).
MMA_FLOPS = 2 * 16 * 8 * 8
#: Loop and address instructions a warp spends on one item besides its loads, splits and mma.
PER_ITEM_BASE = 4


@dataclass(frozen=True)
class PanelTcLaunch(OwnLaunch):
    """The panel kernel's launch as the model reads it (its registers, block size, launches:
    :class:`~.spmm_predict.OwnLaunch`)."""

    kernel: str
    rows: int
    cols: int
    k: int
    panel_ptr: np.ndarray
    """Panel offsets into the items (panels + 1)."""
    block_rows_per_panel: int
    """MB: block rows a panel, one warp each."""
    fragments: int
    """NF: n8 fragments a tile (8 NF Y columns), NF / WN a warp (WN = block_warps / MB)."""
    tiles: int
    splits: int
    passes: int
    smem_bytes: int
    items_per_stage: int
    stages: int

    @property
    def items(self) -> int:
        return int(self.panel_ptr[-1]) if self.panel_ptr.size else 0

    @property
    def panels(self) -> int:
        return int(self.panel_ptr.size - 1)


def per_warp_instructions(fragments: int, passes: int) -> int:
    """Warp instructions of one warp on one item (module docstring). F 16, passes 3:
    1 + 20 + 8 + 160 + 48 + 4 = 241; F 4, passes 1: 1 + 8 + 2 + 16 + 4 + 4 = 35."""
    split = 5 if passes == 3 else 2
    return (1 + 4 * split + fragments // 2 + 2 * fragments * split + fragments * passes
            + PER_ITEM_BASE)


def cta_groups(launch: PanelTcLaunch) -> np.ndarray:
    """Groups of items each CTA of one tile walks: panel p's n items cut into S runs
    (``n z / S`` .. ``n (z + 1) / S``, the kernel's integer split), each ``ceil(run / KB)``.
    Hand check: panels of 10 and 3 items, S 2, KB 4 -> runs (5, 5) and (1, 2) -> groups
    (2, 2, 1, 1)."""
    n = np.diff(np.asarray(launch.panel_ptr, dtype=np.int64))
    s = launch.splits
    z = np.arange(s + 1, dtype=np.int64)
    bounds = (n[:, None] * z[None, :]) // s
    runs = np.diff(bounds, axis=1).reshape(-1)
    return -(-runs // launch.items_per_stage)


def predict_paneltc(launch: PanelTcLaunch, rates, *, flushed: bool) -> ModelPrediction:
    """The predicted time of one ``spmm_paneltc`` call with every term (module docstring).
    ``rates``: ``model.predict.DeviceRates``."""
    items, tiles, mb, nf = launch.items, launch.tiles, launch.block_rows_per_panel, \
        launch.fragments
    wn = max(1, launch.block_warps // mb)
    nc = 8 * nf
    a_bytes = items * (mb * 128 * 4 + 4) + (launch.panels + 1) * 4
    x_bytes = launch.cols * launch.k * 4
    y_bytes = launch.rows * launch.k * 4
    a_dram = a_bytes * (1 if a_bytes + x_bytes <= rates.l2_bytes else tiles)
    fetched = a_dram + x_bytes
    writeback = flush_writeback(rates, fetched) if flushed else 0.0
    y_dram = y_bytes * (2 if launch.splits > 1 else 1)
    dram_bytes = fetched + y_dram + writeback
    terms = [warm_dram_term(PredictionTerm(
        "dram", dram_bytes / (rates.dram_bw_gb_s * 1e6),
        f"(A {a_dram:,.0f} B + X {x_bytes:,} B + Y {y_dram:,} B + write-back "
        f"{writeback:,.0f} B) / {rates.dram_bw_gb_s:,.0f} GB/s"), fetched + y_dram, rates)]
    staged_x = float(items) * 8 * launch.k * 4
    if rates.l2_bw_gb_s:
        l2_bytes = a_bytes * tiles + staged_x + y_bytes * (3 if launch.splits > 1 else 1)
        terms.append(PredictionTerm(
            "l2", l2_bytes / (rates.l2_bw_gb_s * 1e6),
            f"(A x {tiles} tile(s) + staged X {staged_x:,.0f} B + Y) / "
            f"{rates.l2_bw_gb_s:,.0f} GB/s"))
    mma = float(items) * mb * tiles * nf * launch.passes
    if rates.tf32_tensor_gflops:
        terms.append(PredictionTerm("tensor", mma * MMA_FLOPS / (rates.tf32_tensor_gflops * 1e6),
                                    f"{mma:,.0f} mma.m16n8k8 x {MMA_FLOPS:,} flops / "
                                    f"{rates.tf32_tensor_gflops:,.0f} GFLOP/s dense TF32"))
    staging = (8 * nc / 4 * 8 + mb * 32 * 4) / 32
    instructions = float(items) * tiles * (mb * wn * per_warp_instructions(nf // wn,
                                                                            launch.passes)
                                           + staging)
    clock = rates.sm_clock_mhz
    if clock:
        terms.append(issue_term(instructions, rates))
        smem = float(items) * tiles * (mb * (wn * 512 + nf // 4 * 1024) + 8 * nc * 4
                                       + mb * 512)
        terms.append(PredictionTerm(
            "smem", smem / (rates.sm_count * SMEM_BYTES_PER_CLOCK * clock * 1e6) * 1e3,
            f"{smem:,.0f} shared-memory bytes / ({rates.sm_count} SMs x "
            f"{SMEM_BYTES_PER_CLOCK} B x {clock:,.0f} MHz)"))
    groups = np.tile(cta_groups(launch), tiles)
    per_sm = resident_blocks(launch, rates)   # the row-tile model's: the same limits
    slots = min(int(groups.size), rates.sm_count * per_sm) or 1
    round_ns = rates.dram_latency_ns / max(1, launch.stages - 1)
    terms.append(PredictionTerm(
        "latency", float(groups.sum()) * round_ns / slots * 1e-6,
        f"{int(groups.sum()):,} groups of {launch.items_per_stage} items x "
        f"{rates.dram_latency_ns:,.0f} ns / {launch.stages - 1} in flight / {slots:,} CTA "
        f"slots ({per_sm} an SM)"))
    longest = int(groups.max(initial=0))
    terms.append(PredictionTerm("imbalance", longest * round_ns * 1e-6,
                                f"the longest CTA: {longest} groups x {round_ns:,.0f} ns"))
    terms.append(overhead_term(rates, launch.launches))
    overhead = terms[-1].time_ms
    bound = max(terms[:-1], key=lambda t: t.time_ms)
    inputs = {"dram_bytes": float(dram_bytes), "items": float(items), "mma": mma,
              "staged_x_bytes": staged_x, "warp_instructions": instructions,
              "ctas": float(groups.size), "resident_ctas_per_sm": float(per_sm),
              "registers": float(launch.max_registers), "flush_writeback_bytes": writeback}
    return ModelPrediction(
        predicted_ms=overhead + bound.time_ms, limiter=bound.name, terms=tuple(terms),
        inputs=inputs, kernel=launch.label or launch.kernel,
        assumptions=(f"registers: {launch.registers_source}",
                     f"tensor peak: {rates.sources.get('tf32_tensor', 'unknown')} (wgmma's; "
                     "mma.sync may run below it)",
                     "staged X read once a panel and tile from the L2; no bank conflicts"))
