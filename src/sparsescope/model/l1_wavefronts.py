"""The longest block's x gathers through its SM's L1: one 128-byte line a cycle.

A warp's load instruction passes the L1TEX tag stage once per distinct 128-byte line its lanes
ask for (a *wavefront*: NVIDIA's Nsight Compute guide, "L1TEX": one wavefront a cycle), however
few bytes each lane takes. A warp whose 32 lanes walk 32 different rows in lock step -- one
thread a row, entry k of every lane's row gathered by the same instruction -- asks for as many
lines as the lanes' columns fall in. The rows of a SELL slice that are pieces of one long row
cut at ``split_long_rows`` (``model.iterations._cut``) start ``split_long_rows`` columns apart:
each gather touches 32 lines, 32 cycles of the SM's L1 for one instruction. The round-trip
model of a block (``predict.longest_block``: iterations x t_iter) charges a gather its latency
once, whatever its lines; the block that holds a long row's pieces queues for its SM's L1
instead (``predict.l1_bound_block``: its warps through the round trips and the L1, by MVA)::

    W     = sum over the block's warps, over their steps k, of
            distinct 128-byte lines of {x[col(lane, k)] : lanes whose row has an entry k}
    D     = W / (warps x iterations) / SM clock      (the L1's time per warp-iteration)
    block = setup + warps x iterations / X,   X = mva({l1: D}, t_iter, warps)

Why it is missing elsewhere: the x-gather model (``model.xgather``) counts the matrix's sector
requests on average, for the L2, not the one block's lines an SM must pass in order. The block
is the kernel's longest (most iterations: ``iterations.block_iterations``); where several tie,
the one with the most lines. Lines come from the kernel's own layout: rows cut into pieces and
sorted longest first within ``sort_window`` windows (stable, as ``spmv_sell_format.sell_order``
packs them), ``32`` rows a warp; a 1 x B block format (``KernelShape.block_width``) gathers
``x[c .. c + B)`` of each block, one instruction a column (:func:`block_columns`). Only a
row-split kernel with one thread a row is counted (``threads_per_row`` 1); others get None.
The clock is the spec's: no rate is fitted.

Measured (results/h200/real-dev/2026-11-27-latency-throughput, H200): ``cuda-spmv-sell`` on
``arrow`` (one row of 46,500 columns cut into 727 pieces of 64) took 15.0 us back to back where
the round trips alone predicted 6.8 us; its longest block passes 16,384 lines (32 a gather),
8.3 us at 1,980 MHz.

Hand check: a block of one warp whose 32 lanes are pieces of 64 columns of one row (lane l:
columns 64 l .. 64 l + 63, 4-byte x): each step's lanes are 256 B apart, 32 lines a step, 64
steps: W = 2,048 cycles, 1.03 us at 1,980 MHz.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsescope.model.kernel_shape import KernelShape

#: Bytes of one L1 line (one tag-stage wavefront), Volta to Hopper.
LINE_BYTES = 128
#: Blocks of the longest iteration count whose lines are counted (the one with the most lines
#: is taken): ties are many only for regular matrices, whose lines are few.
MAX_BLOCKS = 8
#: Lane steps counted in one block at most; above it an even subset of its steps stands for
#: the rest (scaled up), so that a block of very long rows costs the host bounded work.
MAX_STEPS = 1 << 14


@dataclass(frozen=True)
class BlockWavefronts:
    """The L1 lines of the kernel's longest block's gathers."""

    block: int
    """The block's index in launch order."""
    wavefronts: float
    """W: its warps' distinct 128-byte lines, summed over their steps."""
    gathers: int
    """Its warps' gather instructions (steps), summed."""
    warps: int = 1
    """Its warps that walk at least one entry."""

    @property
    def lines_per_gather(self) -> float:
        return self.wavefronts / self.gathers if self.gathers else 0.0

    def time_ns(self, sm_clock_mhz: float) -> float:
        """W / SM clock, in ns."""
        return self.wavefronts * 1e3 / sm_clock_mhz


def counted(shape: KernelShape) -> bool:
    """Whether ``shape`` is a kernel whose lanes this module follows (module docstring)."""
    return (shape.decomposition == "rows" and shape.threads_per_row == 1
            and shape.nnz_per_iteration > 0
            and (shape.entries_per_nonzero == 1.0 or shape.block_width > 1))


def _virtual_rows(indptr: np.ndarray, shape: KernelShape
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source row, first entry of the piece within its row, entries) of each row the kernel's
    lanes walk, in lane order: a row's entries (``ceil(L x entries_per_nonzero)``, as
    ``iterations.kernel_row_lengths`` counts them) cut at ``split_long_rows``, sorted longest
    first within ``sort_window`` windows (stable)."""
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    if shape.entries_per_nonzero != 1.0:
        lengths = np.ceil(lengths * shape.entries_per_nonzero).astype(np.int64)
    row = np.arange(lengths.size, dtype=np.int64)
    first = np.zeros(lengths.size, dtype=np.int64)
    piece = int(shape.split_long_rows)
    if piece > 0:
        pieces = np.maximum(1, -(-lengths // piece))
        row = np.repeat(row, pieces)
        k = np.arange(row.size, dtype=np.int64) - (np.cumsum(pieces) - pieces)[row]
        first, lengths = k * piece, np.minimum(lengths[row] - k * piece, piece)
    if shape.sort_window > 1 and lengths.size:
        window = np.arange(lengths.size, dtype=np.int64) // shape.sort_window
        order = np.lexsort((-lengths, window))
        row, first, lengths = row[order], first[order], lengths[order]
    return row, first, lengths


def block_columns(columns: np.ndarray, width: int) -> np.ndarray:
    """The columns a row's 1 x ``width`` blocks gather, in the loop's order: blocks greedy (one
    starts at the first column no earlier block covers and covers ``[c, c + width)``, as
    ``cuda-spmv-blocked16`` packs them), each block's ``width`` columns after one another.
    Hand check: columns [0, 1, 5], width 2 -> blocks at 0 and 5 -> [0, 1, 5, 6]."""
    columns = np.asarray(columns, dtype=np.int64)
    if width <= 1:
        return columns
    starts = []
    i = 0
    while i < columns.size:
        starts.append(columns[i])
        i = int(np.searchsorted(columns, columns[i] + width, side="left"))
    return (np.asarray(starts, dtype=np.int64)[:, None] + np.arange(width)).reshape(-1)


def _lane_columns(indptr, indices, row: int, first: int, entries: int, width: int,
                  rows_seen: dict[int, np.ndarray]) -> np.ndarray:
    """The columns one lane gathers: its piece of its row's entries (a row's blocks made once
    for all its pieces, ``rows_seen``)."""
    cols = rows_seen.get(row)
    if cols is None:
        cols = np.asarray(indices[int(indptr[row]):int(indptr[row + 1])])
        if width > 1:
            cols = block_columns(np.sort(cols), width)
        rows_seen[row] = cols
    return cols[first:first + entries]


def _warp_lines(lanes: list[np.ndarray], value_bytes: int) -> tuple[float, int]:
    """(distinct lines summed over the warp's steps, its steps) of one warp's lanes' columns."""
    steps = max((c.size for c in lanes), default=0)
    if steps == 0:
        return 0.0, 0
    k = np.arange(steps, dtype=np.int64)
    scale = 1.0
    if steps > MAX_STEPS:
        k = np.unique(np.linspace(0, steps - 1, MAX_STEPS).astype(np.int64))
        scale = steps / k.size
    lines = np.full((k.size, len(lanes)), -1, dtype=np.int64)
    for lane, cols in enumerate(lanes):
        take = k < cols.size
        lines[take, lane] = cols[k[take]] * value_bytes // LINE_BYTES
    lines.sort(axis=1)
    new = (lines[:, 1:] != lines[:, :-1]) & (lines[:, 1:] >= 0)
    return float(new.sum() + (lines[:, 0] >= 0).sum()) * scale, steps


def longest_block_wavefronts(indptr: np.ndarray, indices: np.ndarray, shape: KernelShape,
                             value_bytes: int = 4) -> BlockWavefronts | None:
    """The :class:`BlockWavefronts` of the kernel's longest block (module docstring), or None
    for a kernel this module does not follow or an empty matrix."""
    if not counted(shape) or len(indptr) < 2 or int(indptr[-1]) == 0:
        return None
    row, first, lengths = _virtual_rows(indptr, shape)
    width = max(1, int(shape.block_width))
    warps = max(1, shape.block_threads // 32)
    per_block = 32 * warps
    blocks = -(-lengths.size // per_block)
    padded = np.zeros(blocks * per_block, dtype=np.int64)
    padded[:lengths.size] = lengths
    steps = -(-padded.reshape(blocks, warps, 32).max(axis=2) // shape.nnz_per_iteration)
    longest = steps.max(axis=1)
    best = None
    rows_seen: dict[int, np.ndarray] = {}
    for b in np.flatnonzero(longest == longest.max())[:MAX_BLOCKS]:
        lo, hi = int(b) * per_block, min(lengths.size, (int(b) + 1) * per_block)
        total, gathers, busy = 0.0, 0, 0
        for w in range(lo, hi, 32):
            lanes = [_lane_columns(indptr, indices, int(row[v]), int(first[v]),
                                   int(lengths[v]), width, rows_seen)
                     for v in range(w, min(hi, w + 32))]
            lines, n = _warp_lines(lanes, value_bytes)
            total, gathers, busy = total + lines, gathers + n, busy + (n > 0)
        if best is None or total > best.wavefronts:
            best = BlockWavefronts(block=int(b), wavefronts=total, gathers=gathers,
                                   warps=max(1, busy))
    return best
