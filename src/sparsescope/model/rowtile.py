"""Predict the X-reusing SpMM kernel's time (``spmm-cuda-rowtile``: a block a tile of R rows and
a slice of KS = 32 VEC columns, X staged in shared memory a chunk of C rows at a time, only the
chunks the tile's rows touch) from its launch and the device's rates.

Every other own SpMM kernel gathers a nonzero's X row slice from the L2; this one stages each
(tile, chunk) ITEM's X rows once and reads them from shared memory per nonzero. Per call, with
``x_rows(i) = min(C, cols - chunk(i) C)`` the X rows of item i::

    X staged (L2 -> SM) = sum over items of x_rows(i) x k x value bytes          (row-major X)
                          sum over items of k x sectors(x_rows(i)) x 32 B      (column-major X:
                          a column's run of x_rows values, whole sectors, one more where the
                          columns do not start on a sector: cols x value bytes % 32 != 0)
    gathers' X          = nnz x k x value bytes (each nonzero's X row slice from the L2)

so it moves less X where ``sum x_rows < nnz`` -- the mean nonzeros per staged X row above one
(at most ``rows / R x cols`` X rows, all chunks touched). The price is shared memory: each
nonzero's X values are read from it (and each staged value written once), a ``wavefront`` (a
warp's access of up to 128 distinct bytes, one a clock per SM) at a time (:func:`item_work`)::

    item wavefronts = entries x KS x vb / 128 (X reads) + entry loads (float: a 16-byte
                      broadcast a pair of a row's entries, an odd first or last one alone;
                      double: one an entry) + R + WARPS (row offsets)
                      + (X, entries and offsets staged) / 128
    smem wavefronts = slices x sum over items + blocks x 2 R KS vb / 128 (column-major Y
                      through shared memory)

Terms (each a lower bound on the time)::

    dram    = (A x passes + X from DRAM + Y + flush write-back) / DRAM bw
              A = the format: staged entries x (8 | 16 B) + items x (R + 2) x 2 B (row offsets)
                  + (2 items + 1 + tiles + 1) x index bytes (item chunks, entry bounds, tile
                  pointers); passes = 1 when A and one slice of X fit the L2 together, else
                  slices; X from DRAM = cols x k x value bytes when one slice of X
                  (cols x KS values) fits the L2 beside A, else every stage from DRAM
    l2      = (A x slices + X staged + Y out) / L2 bw
              Y out = Y (S = 1), else Y's memset + the blocks' partial tiles added atomically
                      (a read and a write a value: 2 x blocks with items x R x KS x vb)
    smem    = smem wavefronts / (SMs with a block x clock)
    issue   = warp instructions / (SMs with a block x schedulers x clock)
              per entry: X loads (1 vector load; VEC scalar ones column-major) + VEC FMAs
              + ENTRY_INSTRUCTIONS; per item and row ROW_INSTRUCTIONS; per item and warp
              ITEM_INSTRUCTIONS + the stage's copies (X, entries) a thread x COPY_INSTRUCTIONS
    latency = sum over blocks of t_block / min(blocks, SMs x resident blocks)
              blocks  = tiles x slices x S: each tile's items cut into S runs (the splits)
              t_block = round + sum over its run's items of max(round + busiest warp's
                        chain, item wavefronts / clock, item instructions / (schedulers x
                        clock))        (:func:`block_times_ns`: the serial chain of a block)
              round   = DRAM latency where the stage's entries come from DRAM (flushed L2,
                        or the format larger than the L2), else L2 latency + (X's DRAM share)
                        x (DRAM latency - L2 latency)
              chain   = rows x SMEM_LATENCY (a row's offsets) + entries x (2 SMEM_LATENCY +
                        FMA_LATENCY) / 4 (an entry's load, then its X load, then its FMA; the
                        pair loop unrolled twice keeps four entries in flight)
              An item's round trip is charged whole, not / (STAGES - 1): on the H200 (commit
              7a68737, L2 flushed) the time an item of one-block-an-SM grids did not fall with
              the stages (R 64: 2 stages 1,133 ns, 3 stages 1,197 ns an item, weights-05; 4
              stages 600-900 ns for items of 10-130 entries), so the item chain is serial; only
              the other resident blocks of the SM overlap it (the latency term's slots)
    memory  = the largest of dram, l2, smem, issue and latency: a block's stages overlap its
              work and the SM's pipes work side by side, so the slowest station binds (no
              queueing sum as for the gather kernels' rounds)
    imbalance = the slowest block's t_block x max(1, memory / latency): it keeps its SM slot
              until its last item, slowed as every block is when a station binds
    compute = 2 x entries x KS x slices / FP32 (FP64: half) rate   (lanes past k included)
    predicted = overhead (model.call_overhead, 2 launches where S > 1: the memset)
                + max(memory, imbalance, compute)

Resident blocks per SM: the fewest the shared memory (the block's dynamic bytes plus the 1 KB
the driver reserves), the registers, the threads and the block limit allow. What the model
leaves out, named so its error can be read: the barrier an item (a warp that finishes its rows
early waits: only the busiest warp and the whole block's work are charged), bank conflicts
(the layouts have none by construction) and L1 hits of the scalar item loads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.model.call_overhead import overhead_term
from sparsescope.model.kernel_shape import (
    REGISTERS_PER_SM,
    SMEM_PER_SM,
    SMEM_RESERVED_PER_BLOCK,
)
from sparsescope.model.prediction import ModelPrediction, PredictionTerm
from sparsescope.model.spmm_predict import OwnLaunch
from sparsescope.model.throughput import warm_dram_term
from sparsescope.model.traffic import Traffic

SMEM_BYTES_PER_CLOCK = 128
"""Shared memory an SM serves a clock: 32 banks x 4 bytes (Volta to Hopper), one wavefront."""
L2_BYTES_PER_CLOCK_PER_SM = 32
"""Without a measured L2 bandwidth: a 32-byte sector a clock per SM, the L2's rate on Volta to
Hopper (the H200's measured 7.96 TB/s is 30.5 bytes a clock on each of its 132 SMs at 1.98
GHz). With it, :func:`smem_per_l2` uses the measurement."""
FP32_LANES_PER_SM = 128
"""FP32 FMA lanes an SM (Volta to Hopper): a clock from the FP32 rate where no clock is given."""
ENTRY_INSTRUCTIONS = 4
"""Warp instructions an entry costs besides its X loads and FMAs: the X address (one
multiply-add), its share of the 16-byte entry loads, and the loop's counter, compare and branch
(the compiled float instance, nvcc 13.0 sm_90: 28 instructions for 4 entries, 4 of them X loads
and 8 FMAs)."""
ROW_INSTRUCTIONS = 16
"""Warp instructions of one row of an item besides its entries: its two offsets, the odd first
entry's test, the tail's test and the branches around them."""
ITEM_INSTRUCTIONS = 30
"""Warp instructions of one item besides its copies: the wait and the barrier, the three
scalars of the next item to stage, the stage's addresses and the loops' bounds."""
COPY_INSTRUCTIONS = 8
"""Warp instructions a cp.async of the stage costs: its global and shared addresses, the
bounds test, the copy."""
SMEM_LATENCY_CYCLES = 30
"""Clocks from a shared-memory load's issue to its value (Volta to Hopper: 28-33 in published
microbenchmarks; the architecture's, not a fit to a case)."""
FMA_LATENCY_CYCLES = 4
"""Clocks of a dependent FP32/FP64 FMA (Volta to Hopper)."""
BINDING = ("memory", "imbalance", "compute")


def entry_bytes(value_bytes: int) -> int:
    """Bytes of a stored entry: (int j, float v) = 8; (int j, int pad, double v) = 16."""
    return 8 if value_bytes == 4 else 16


def rowtile_smem_bytes(value_bytes: int, tile_rows: int, vec: int, chunk_rows: int, stages: int,
                       col_major: bool) -> int:
    """Dynamic shared memory of a block (``RowTileSmem::BYTES`` of the kernel)::

        KS = 32 VEC;  stride = KS (+ 1 column-major)
        stage = round16(C x stride x value bytes) + R x C x entry bytes + round16((R + 2) x 2)
        bytes = max(STAGES x stage, KS x (R + 1) x value bytes column-major)

    float32, R 32, VEC 2, C 32, row-major: 8,192 + 8,192 + 80 = 16,464 a stage -> 32,928 with
    2 stages, 49,392 with 3; column-major: round16(32 x 65 x 4) = 8,320 -> 33,184 with 2;
    float64 R 32 VEC 2 C 32 row-major: 16,384 + 16,384 + 80 -> 65,696 with 2."""
    ks = 32 * vec
    stride = ks + 1 if col_major else ks

    def round16(n: int) -> int:
        return -(-n // 16) * 16

    stage = (round16(chunk_rows * stride * value_bytes)
             + tile_rows * chunk_rows * entry_bytes(value_bytes) + round16((tile_rows + 2) * 2))
    y_tile = ks * (tile_rows + 1) * value_bytes if col_major else 0
    return max(stages * stage, y_tile)


def copy_width(k: int, value_bytes: int) -> int:
    """Values a copy of row-major X moves: the widest of 16, 8 and 4 bytes whose values divide
    k (every copy aligned and inside the slice), as the kernel picks. float32: k 256 -> 4,
    k 6 -> 2, k 7 -> 1; float64: k 256 -> 2, k 33 -> 1."""
    return next(w for w in (16 // value_bytes, 8 // value_bytes, 1) if w and k % w == 0)


def clock_mhz(rates) -> float:
    """The SM clock: the rates' (spec), else the FP32 rate over ``SMs x 128 lanes x 2 flops``."""
    if getattr(rates, "sm_clock_mhz", None):
        return float(rates.sm_clock_mhz)
    return rates.fp32_gflops * 1e3 / (rates.sm_count * FP32_LANES_PER_SM * 2)


def smem_per_l2(rates=None) -> float:
    """rho = shared-memory bandwidth of the device / its L2 bandwidth::

        rho = SMs x 128 B x clock / L2 bw     (measured L2 bandwidth and the spec's clock)
            = 128 / 32 = 4                    (without them: :data:`L2_BYTES_PER_CLOCK_PER_SM`)

    H200 (132 SMs, 1,980 MHz, 7,964 GB/s): 4.20."""
    if rates is None or not getattr(rates, "l2_bw_gb_s", None):
        return SMEM_BYTES_PER_CLOCK / L2_BYTES_PER_CLOCK_PER_SM
    return (SMEM_BYTES_PER_CLOCK * rates.sm_count * clock_mhz(rates) * 1e6
            / (rates.l2_bw_gb_s * 1e9))


def rowtile_traffic(rows: int, cols: int, nnz: int, k: int, *, tiles: int, items: int,
                    entries: int, tile_rows: int, value_bytes: int,
                    index_bytes: int) -> Traffic:
    """The row-tile format's bytes: values and column offsets of the staged entries (the pad
    entries that make each item even are padding), the row offsets of each item and the item
    and tile pointers as row metadata::

        values   = entries x value bytes         indices = entries x (entry bytes - value bytes)
        row meta = items x (R + 2) x 2 + (2 items + 1 + tiles + 1) x index bytes
        padding  = (entries - nnz) x entry bytes + float64: nnz x 4 (the pad word of an entry)
        x = cols k vb;  y = rows k vb;  flops = 2 nnz k

    Hand check: 10 x 12, 7 nonzeros, k 3, float32, INT32, R 8, 2 tiles, 3 items, 8 entries:
    values 32, indices 32, row meta 3 x 10 x 2 + 10 x 4 = 100, padding 8, x 144, y 120, flops
    42.
    """
    eb = entry_bytes(value_bytes)
    pad_word = 4 * nnz if value_bytes == 8 else 0
    return Traffic(format=f"row tiles of {tile_rows} (X staged)",
                   values_bytes=entries * value_bytes, indices_bytes=entries * (eb - value_bytes),
                   row_meta_bytes=items * (tile_rows + 2) * 2
                   + (2 * items + 1 + tiles + 1) * index_bytes,
                   x_bytes=cols * k * value_bytes, y_read_bytes=0,
                   y_written_bytes=rows * k * value_bytes,
                   padding_bytes=(entries - nnz) * eb + pad_word, flops=2 * nnz * k)


@dataclass(frozen=True)
class RowTileLaunch(OwnLaunch):
    """The row-tile kernel's launch as the model reads it (its registers, block size and
    launches: :class:`~.spmm_predict.OwnLaunch`), every per-item count from the packed
    format."""

    kernel: str
    rows: int
    cols: int
    k: int
    tile_rows: int
    """R."""
    chunk_rows: int
    """C."""
    vec: int
    """Values of a slice a lane owns: KS = 32 VEC."""
    slices: int
    tile_items: np.ndarray
    """Items of each tile (tiles)."""
    item_x_rows: np.ndarray
    """X rows each item stages: min(C, cols - chunk C)."""
    item_entries: np.ndarray
    """Nonzeros of each item."""
    item_staged: np.ndarray
    """Entries each item copies (its nonzeros, and a pad entry where they are odd)."""
    item_warp_entries: np.ndarray
    """Nonzeros of the item's busiest warp (its RPW rows)."""
    item_entry_reads: np.ndarray
    """Shared-memory loads of the item's entries (float: pairs, odd ends alone)."""
    smem_bytes: int
    index_bytes: int = 4
    x_layout: str = "row"
    stages: int = 2
    """Items staged at once: STAGES - 1 on their way while one is multiplied."""
    splits: int = 1
    """S: runs each tile's items are cut into, a block each (grid.z); above 1 Y is zeroed by a
    memset and the partial tiles added atomically."""

    @property
    def slice_cols(self) -> int:
        return 32 * self.vec

    @property
    def tiles(self) -> int:
        return int(self.tile_items.size)

    @property
    def items(self) -> int:
        return int(self.item_x_rows.size)

    @property
    def blocks(self) -> int:
        return self.tiles * self.slices * self.splits


def split_runs(tile_items, splits: int) -> np.ndarray:
    """Items of each block's run, tiles x S (the kernel's cut: split z of a tile's n items
    owns [n z / S, n (z + 1) / S)). Items [5, 0, 2], S 2 -> [[2, 3], [0, 0], [1, 1]]."""
    n = np.asarray(tile_items, dtype=np.int64)[:, None]
    z = np.arange(splits + 1, dtype=np.int64)[None, :]
    return np.diff(n * z // splits, axis=1)


def atomic_bytes(launch: RowTileLaunch) -> float:
    """L2 bytes of the partial tiles where S > 1: each block with items adds R x KS values
    (a read and a write each), the memset writes Y once more::

        2 x blocks with items x R x KS x vb x slices' share + rows x k x vb   (S > 1; else 0)

    (the last slice's KS past k counted at k: KS x slices -> k)."""
    if launch.splits <= 1:
        return 0.0
    busy = int((split_runs(launch.tile_items, launch.splits) > 0).sum())
    vb = launch.value_bytes
    return 2.0 * busy * launch.tile_rows * launch.k * vb + launch.rows * launch.k * vb


def x_staged_bytes(launch: RowTileLaunch) -> float:
    """X bytes the stages copy from the L2 in one call (module docstring). Hand check: items
    of 32, 32 and 8 X rows, k 3, float32 row-major -> 72 x 3 x 4 = 864 B; column-major, cols
    72 (288 B a column: on sectors) -> 3 x (4 + 4 + 1) sectors x 32 = 864 B."""
    vb = launch.value_bytes
    rows = np.asarray(launch.item_x_rows, dtype=np.int64)
    if launch.x_layout != "col":
        return float(rows.sum()) * launch.k * vb
    sectors = -(-rows * vb // 32) + (1 if (launch.cols * vb) % 32 else 0)
    return float(sectors.sum()) * launch.k * 32


def format_bytes(launch: RowTileLaunch) -> int:
    """The packed format's bytes a slice reads (A of the module docstring)."""
    ib = launch.index_bytes
    staged = int(np.asarray(launch.item_staged).sum())
    return (staged * entry_bytes(launch.value_bytes) + launch.items * (launch.tile_rows + 2) * 2
            + (2 * launch.items + 1 + launch.tiles + 1) * ib)


def entry_cost(launch: RowTileLaunch) -> tuple[float, float]:
    """(warp instructions, shared-memory wavefronts) of one entry of one slice::

        instructions = (1 | VEC X loads) + VEC FMAs + ENTRY_INSTRUCTIONS
        wavefronts   = KS x value bytes / 128 (its X reads; the entry loads are counted apart)

    float32 VEC 2 row-major: (1 + 2 + 4, 2); column-major (2 + 2 + 4, 2); float64 VEC 2: 4."""
    loads = launch.vec if launch.x_layout == "col" else 1
    return (float(loads + launch.vec + ENTRY_INSTRUCTIONS),
            launch.slice_cols * launch.value_bytes / SMEM_BYTES_PER_CLOCK)


def item_work(launch: RowTileLaunch) -> tuple[np.ndarray, np.ndarray]:
    """(shared-memory wavefronts, warp instructions) of each item in one slice::

        wavefronts   = entries x KS x vb / 128 + entry loads + R + WARPS (row offsets)
                       + (x_rows x (k / slices) x vb + staged x entry bytes + (R + 2) x 2) / 128
        instructions = entries x (entry_cost) + R x ROW_INSTRUCTIONS
                       + WARPS x (ITEM_INSTRUCTIONS + COPY_INSTRUCTIONS x copies a thread)

    (k / slices: a slice's columns on average; the stage writes X's in full 128-byte rows).
    Hand check, float32 R 8, VEC 1, C 32, 8 warps, k 32, one item of 3 entries (2 loads), 32
    X rows, 4 staged: wavefronts 3 + 2 + 16 + (4,096 + 32 + 20) / 128 = 53.4; instructions
    3 x 6 + 8 x 16 + 8 x (30 + 8 x (1 + 1)) = 514 (a copy each of X and entries a thread)."""
    vb, ks, r, warps = launch.value_bytes, launch.slice_cols, launch.tile_rows, launch.block_warps
    per_entry, x_waves = entry_cost(launch)
    entries = np.asarray(launch.item_entries, dtype=np.float64)
    staged = np.asarray(launch.item_staged, dtype=np.float64)
    x_rows = np.asarray(launch.item_x_rows, dtype=np.float64)
    waves = (entries * x_waves + np.asarray(launch.item_entry_reads, dtype=np.float64) + r + warps
             + (x_rows * (launch.k / launch.slices) * vb + staged * entry_bytes(vb) + (r + 2) * 2)
             / SMEM_BYTES_PER_CLOCK)
    threads = 32 * warps
    width = 1 if launch.x_layout == "col" else copy_width(launch.k, vb)
    x_copies = -(-launch.chunk_rows * ks // width // threads)
    entry_copies = np.ceil(staged * entry_bytes(vb) / 16 / threads)
    instructions = (entries * per_entry + r * ROW_INSTRUCTIONS
                    + warps * (ITEM_INSTRUCTIONS + COPY_INSTRUCTIONS * (x_copies + entry_copies)))
    return waves, instructions


def smem_wavefronts(launch: RowTileLaunch) -> float:
    """Shared-memory wavefronts of one call: every slice's items (:func:`item_work`), and for
    column-major Y each block's tile written to and read from shared memory (2 R KS vb / 128)."""
    waves, _ = item_work(launch)
    y_tile = (launch.blocks * 2 * launch.tile_rows * launch.slice_cols * launch.value_bytes
              / SMEM_BYTES_PER_CLOCK if launch.x_layout == "col" else 0.0)
    return launch.slices * float(waves.sum()) + y_tile


def warp_instructions(launch: RowTileLaunch) -> float:
    """Warp instructions of one call: every slice's items (:func:`item_work`)."""
    _, instructions = item_work(launch)
    return launch.slices * float(instructions.sum())


def resident_blocks(launch: RowTileLaunch, rates) -> int:
    """Blocks an SM holds: the fewest its shared memory, registers, threads and block limit
    allow::

        smem      = floor(shared memory per SM / (block's bytes + 1,024))
        registers = floor(registers per SM / (round_up(registers x 32, 256) x warps))

    Hand check: 32,928 B and 56 registers, 8 warps, 228 KB and 65,536 registers, 2,048
    threads, 32 blocks: smem 6, registers 4, threads 8 -> 4."""
    per_warp = -(-launch.max_registers * 32 // 256) * 256
    smem = int(getattr(rates, "shared_mem_per_sm_bytes", 0) or SMEM_PER_SM)
    regs = int(getattr(rates, "registers_per_sm", 0) or REGISTERS_PER_SM)
    warps = max(1, launch.block_warps)
    by_smem = smem // (launch.smem_bytes + SMEM_RESERVED_PER_BLOCK)
    return max(1, min(rates.max_blocks_per_sm, by_smem, regs // (per_warp * warps),
                      rates.max_threads_per_sm // (32 * warps)))


def warp_chain_cycles(launch: RowTileLaunch) -> np.ndarray:
    """Clocks of each item's busiest warp walking its rows at latency (a warp alone; module
    docstring)::

        chain = RPW x SMEM_LATENCY + busiest entries x max(t_entry, (2 SMEM_LATENCY +
                FMA_LATENCY) / 4)

    t_entry = max(instructions, wavefronts + entry-load share) of an entry (one warp issues an
    instruction and is served a wavefront a clock). float32 VEC 1, R 8, 8 warps, 3 entries:
    30 + 3 x max(6, 16) = 78."""
    per_entry, x_waves = entry_cost(launch)
    share = 0.5 if launch.value_bytes == 4 else 1.0
    latency = (2 * SMEM_LATENCY_CYCLES + FMA_LATENCY_CYCLES) / 4
    rpw = launch.tile_rows // max(1, launch.block_warps)
    return (rpw * SMEM_LATENCY_CYCLES + np.asarray(launch.item_warp_entries, dtype=np.float64)
            * max(per_entry, x_waves + share, latency))


def block_times_ns(launch: RowTileLaunch, x_round_ns: float, clock_mhz_: float,
                   schedulers: int) -> np.ndarray:
    """t_block of each block (tile-major: tile t's S runs at t S .. t S + S - 1) alone on an
    SM, ns -- the serial chain of its items::

        t_block = round + sum over its run's items of max(round + warp chain, item wavefronts
                  / clock, item instructions / (schedulers x clock))

    Each item waits its stage's whole round trip (module docstring: the stages were not seen
    to hide it), then its busiest warp's chain (:func:`warp_chain_cycles`); the block's
    wavefronts and instructions on the SM's one shared-memory pipe and its schedulers bound it
    from below. A run without items: the round trip of its first scalars alone."""
    ns = 1e3 / clock_mhz_
    waves, instructions = item_work(launch)
    work = np.maximum.reduce([x_round_ns + warp_chain_cycles(launch) * ns, waves * ns,
                              instructions * ns / schedulers]) if waves.size else waves
    runs = split_runs(launch.tile_items, launch.splits).reshape(-1)
    ends = np.cumsum(runs)
    summed = np.concatenate(([0.0], np.cumsum(work)))
    return x_round_ns + summed[ends] - summed[ends - runs]


def predict_rowtile(launch: RowTileLaunch, rates, *, flushed: bool) -> ModelPrediction:
    """The predicted time of one ``spmm_rowtile`` call with every term (module docstring).
    ``rates``: ``model.predict.DeviceRates``."""
    from sparsescope.model.predict import flush_writeback

    vb, k, slices = launch.value_bytes, launch.k, launch.slices
    fp64 = vb == 8
    a_bytes = format_bytes(launch)
    x_once = float(launch.cols * k * vb)
    x_slice = float(launch.cols * min(launch.slice_cols, k) * vb)
    staged = x_staged_bytes(launch)
    y_bytes = float(launch.rows * k * vb)
    fits = a_bytes + x_slice <= rates.l2_bytes
    a_dram = a_bytes * (1 if fits else slices)
    x_dram = min(x_once, staged) if fits else staged
    fetched = a_dram + x_dram
    writeback = flush_writeback(rates, fetched) if flushed else 0.0
    y_bytes *= 2 if launch.splits > 1 else 1   # the memset's Y, then the sums' Y
    dram_bytes = fetched + y_bytes + writeback
    atomics = atomic_bytes(launch)
    terms = [warm_dram_term(PredictionTerm(
        "dram", dram_bytes / (rates.dram_bw_gb_s * 1e6),
        f"(A {a_dram:,.0f} B + X {x_dram:,.0f} B + Y {y_bytes:,.0f} B + write-back "
        f"{writeback:,.0f} B) / {rates.dram_bw_gb_s:,.0f} GB/s"), fetched + y_bytes, rates)]
    if rates.l2_bw_gb_s:
        y_out = atomics or y_bytes
        terms.append(PredictionTerm(
            "l2", (a_bytes * slices + staged + y_out) / (rates.l2_bw_gb_s * 1e6),
            f"(A x {slices} slice(s) + {staged:,.0f} B of X staged + Y {y_out:,.0f} B"
            f"{' (memset and atomics)' if atomics else ''}) / {rates.l2_bw_gb_s:,.0f} GB/s"))
    clock = clock_mhz(rates)
    blocks = launch.blocks
    active = max(1, min(rates.sm_count, blocks))
    waves = smem_wavefronts(launch)
    terms.append(PredictionTerm("smem", waves / (active * clock * 1e6) * 1e3,
                                f"{waves:,.0f} shared-memory wavefronts / ({active} SMs with a "
                                f"block x {clock:,.0f} MHz)"))
    instructions = warp_instructions(launch)
    issue_rate = active * rates.schedulers_per_sm * clock * 1e6
    terms.append(PredictionTerm("issue", instructions / issue_rate * 1e3,
                                f"{instructions:,.0f} warp instructions / ({active} SMs x "
                                f"{rates.schedulers_per_sm} x {clock:,.0f} MHz)"))
    dram_ns = rates.dram_latency_ns
    l2_ns = min(rates.l2_latency_ns, dram_ns) if rates.l2_latency_ns else dram_ns
    hit = 1.0 - min(1.0, x_dram / staged) if staged else 1.0
    # an item's entries are read by no earlier item: from DRAM where the L2 was flushed or
    # cannot hold the format, and the item waits its slowest copy
    x_round = dram_ns if (flushed or not fits) else l2_ns + (1.0 - hit) * (dram_ns - l2_ns)
    t_block = block_times_ns(launch, x_round, clock, rates.schedulers_per_sm)
    per_sm = resident_blocks(launch, rates)
    slots = rates.sm_count * per_sm
    total_ns = float(t_block.sum()) * slices
    latency = PredictionTerm("latency", total_ns / max(1, min(slots, blocks)) * 1e-6,
                             f"{blocks:,} blocks' item chains ({total_ns / 1e6:,.3f} ms in all, "
                             f"S {launch.splits}) / min({rates.sm_count} SMs x {per_sm} blocks, "
                             f"blocks)")
    terms.append(latency)
    stations = [t for t in terms if t.name in ("dram", "l2", "smem", "issue", "latency")]
    slowest = max(stations, key=lambda t: t.time_ms)
    terms.append(PredictionTerm("memory", slowest.time_ms,
                                f"the slowest of DRAM, L2, shared memory, issue and the blocks' "
                                f"items ({slowest.name}): a block's stages overlap its work"))
    longest = float(t_block.max()) if t_block.size else 0.0
    loaded = max(1.0, slowest.time_ms / latency.time_ms) if latency.time_ms > 0 else 1.0
    terms.append(PredictionTerm("imbalance", longest * loaded * 1e-6,
                                f"slowest block: {longest:,.0f} ns of items, x {loaded:.2f} for "
                                f"the stations under load"))
    entries = float(np.asarray(launch.item_entries).sum())
    flops = 2.0 * entries * launch.slice_cols * slices
    rate = rates.fp32_gflops / (2 if fp64 else 1)   # FP64 at half rate (Hopper, A100)
    terms.append(PredictionTerm("compute", flops / (rate * 1e6),
                                f"{flops:,.0f} flops (lanes past k included) / {rate:,.0f} "
                                f"GFLOP/s"))
    terms.append(overhead_term(rates, launch.launches))
    overhead = terms[-1].time_ms
    bound = max((t for t in terms if t.name in BINDING), key=lambda t: t.time_ms)
    limiter = slowest.name if bound.name == "memory" else bound.name
    inputs = {"dram_bytes": float(dram_bytes), "x_staged_bytes": staged,
              "x_dram_bytes": float(x_dram), "format_bytes": float(a_bytes),
              "smem_wavefronts": waves, "warp_instructions": instructions,
              "items": float(launch.items), "blocks": float(blocks),
              "splits": float(launch.splits), "atomic_bytes": atomics,
              "resident_blocks_per_sm": float(per_sm), "x_round_ns": x_round,
              "registers": float(launch.max_registers), "loaded_round_factor": loaded,
              "flush_writeback_bytes": float(writeback)}
    return ModelPrediction(
        predicted_ms=overhead + bound.time_ms, limiter=limiter, terms=tuple(terms),
        inputs=inputs, kernel=launch.label or launch.kernel,
        assumptions=(f"registers: {launch.registers_source}",
                     f"shared memory: {launch.smem_bytes:,} B a block, {per_sm} blocks an SM",
                     "X staged a (tile, chunk) at a time, read from shared memory per nonzero",
                     f"clock: {clock:,.0f} MHz ({rates.sources.get('sm_clock', 'from FP32')})"))
