"""The device transposes around a row-major SpMM kernel (``spmm-cuda-transposed``: column-major
X re-laid row-major before the kernel, its row-major Y re-laid column-major after it; kernel
``backends/kernels/transpose.cu``) as a time of their own.

The transposes are kernels of their own, launched before and after the SpMM kernel on one
stream: their time adds to the kernel's, it does not overlap with it. Each is a grid of 32 x 32
tiles, a block of 32 x 8 threads a tile (every tile a block, partial tiles at the edges)::

    tiles(R, C) = ceil(R / 32) x ceil(C / 32)          (an R x C row-major input)

A tile's block costs the same instructions however few of its values lie inside the input:
its loads and stores are guarded one by one, the index arithmetic (the tile's row and column
band from the block number: a division; 64-bit addresses) is done whatever the tile holds.
At small k (X is k x cols, Y rows x k) a tile holds k of its 32 rows or columns, so the
transposes cost the instructions of ``2 (rows + cols) / 32`` full tiles for a quarter of their
bytes (k = 8). Each tile is a customer of a closed network per SM (``model.predict.per_sm_mva``,
as the SpMM kernels' warps are), its block resident with ``blocks_per_sm`` others::

    issue  = TILE_WARPS x WARP_INSTRUCTIONS_PER_TILE / (SMs x schedulers x SM clock)
             (per tile; the SM's own schedulers)
    dram   = 2 x tile values x value bytes / DRAM bandwidth     (read and write; shared)
    delay  = one DRAM round trip (the tile's loads are issued together, then a barrier)
    blocks_per_sm = min(max blocks per SM, max threads per SM / 256)
    time(R, C) = tiles / X(per_sm_mva)       X: tiles a second through the network

On the H200 and the H100 of the committed SpMM runs (results/*/spmm-population/
2026-11-25-auto-predicted: auto's column-major call less its row-major call with the same
kernel) the two transposes of a k = 8 call took 2.2 us a 1,000 tiles on graph-14 (62,500
tiles, 143 us on the H200: 0.9 TB/s; the issue bound at 2,096 warp instructions a tile is
2.0 us), while at k >= 64 they moved 3.1 TB/s (H200) and 2.7 TB/s (H100), near both bounds.
The bytes alone, in the kernel's DRAM term (the model before this one), predicted 7.2 us for
graph-08's 16.9 us at k = 8 (launches included); this model 18.0 us, and 131 us for
graph-14's 143 us (``benchmarks/results/spmm_colmajor_auto.md``, section 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.model.prediction import PredictionTerm

TILE = 32
"""Values on a side of a tile (``transpose.cu``'s TILE)."""
TILE_THREADS = 256
"""A tile's block: 32 x 8 threads (``__launch_bounds__(256)``)."""
TILE_WARPS = TILE_THREADS // 32
WARP_INSTRUCTIONS_PER_TILE = 262
"""Instructions one warp issues for a tile, counted on the SASS of ``transpose_tile<float>``
(nvcc 13.0, sm_90) along a full tile's path: set-up 12, the tile number's 32-bit division 23,
the bands and bounds 12 + 7 + 2 + 24, the four guarded loads to shared memory 66 (one pass of
the loop unrolled 4x; the one-row remainder loop is skipped), the barrier 5, the store set-up
11 + 3 + 24, the four guarded stores 72, exit 1. The remainder loops and the 64-bit division
path (tile counts of 2^32 or more) are not on it. ``transpose_tile<double>`` has the same
structure. ``tests/model/test_transpose.py`` recounts it from the compiled kernel where nvcc
is present."""


def transpose_tiles(rows: int, cols: int) -> int:
    """ceil(rows / 32) x ceil(cols / 32); 0 for an empty input. 8 x 1,000,000 -> 31,250;
    33 x 33 -> 4."""
    if rows <= 0 or cols <= 0:
        return 0
    return -(-rows // TILE) * -(-cols // TILE)


def blocks_per_sm(rates) -> int:
    """Tile blocks one SM holds: min(max blocks per SM, max threads per SM / 256) (Hopper: 8;
    the kernel's 32 registers and 4-8 KB of shared memory a block do not bind)."""
    return max(1, min(rates.max_blocks_per_sm, rates.max_threads_per_sm // TILE_THREADS))


@dataclass(frozen=True)
class TransposeTime:
    """One transpose's predicted time and what it comes from."""

    rows: int
    cols: int
    tiles: int
    bytes_moved: int
    """2 x rows x cols x value bytes: every value read once and written once."""
    time_ms: float
    binding: str
    """``issue``, ``dram`` or ``latency``: the network's longest residence."""

    def words(self) -> str:
        return (f"{self.rows:,} x {self.cols:,}: {self.tiles:,} tiles, "
                f"{self.bytes_moved / 1e6:,.1f} MB, {1e3 * self.time_ms:,.1f} us ({self.binding})")


def transpose_time(rows: int, cols: int, value_bytes: int, rates) -> TransposeTime:
    """The module's time of one ``rows x cols`` transpose on ``rates`` (a ``DeviceRates``;
    without an SM clock the issue station is left out).

    Hand check (tests): 8 x 1,000,000 float32 on 132 SMs, 4 schedulers at 1,980 MHz, 8
    blocks a SM, 4,000 GB/s, 300 ns: 31,250 tiles; per tile issue 2,096 / (132 x 4 x 1.98e9)
    = 2.005 ns, DRAM 2,048 B / 4e12 = 0.512 ns; the issue station binds, about 31,250 x
    2.005 ns = 62.7 us.
    """
    from sparsescope.model.predict import per_sm_mva

    tiles = transpose_tiles(rows, cols)
    moved = 2 * rows * cols * value_bytes if tiles else 0
    if tiles == 0:
        return TransposeTime(rows, cols, 0, 0, 0.0, "none")
    demands = {"dram": moved / tiles / (rates.dram_bw_gb_s * 1e9)}
    if rates.sm_clock_mhz:
        demands["issue"] = (TILE_WARPS * WARP_INSTRUCTIONS_PER_TILE
                            / (rates.sm_count * rates.schedulers_per_sm
                               * rates.sm_clock_mhz * 1e6))
    queue = per_sm_mva(demands, rates.dram_latency_ns * 1e-9, rates.sm_count,
                       blocks_per_sm(rates), tiles)
    return TransposeTime(rows, cols, tiles, moved, tiles / queue.throughput_per_s * 1e3,
                         queue.dominant)


def transposes_term(shapes, value_bytes: int, rates) -> tuple[PredictionTerm, list]:
    """(the ``transposes`` term, each :class:`TransposeTime`): the sum of the transposes of
    ``shapes`` (``(rows, cols)`` of each input), run one after another around the kernel."""
    times = [transpose_time(r, c, value_bytes, rates) for r, c in shapes]
    total = sum(t.time_ms for t in times)
    return PredictionTerm("transposes", total,
                          " + ".join(t.words() for t in times) + " (32 x 32 tiles: issue "
                          f"{WARP_INSTRUCTIONS_PER_TILE} x {TILE_WARPS} warp instructions, "
                          "read + write bytes, one DRAM round trip a tile; MVA per SM)"), times
