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

from sparsescope.model.iterations import _cut, _sorted_in_windows
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.last_matrix import LastMatrixAnswers

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


def _walked_lengths(indptr: np.ndarray, shape: KernelShape) -> np.ndarray:
    """Entries of each row the kernel walks: ``ceil(L x entries_per_nonzero)``, as
    ``iterations.kernel_row_lengths`` counts them, before the cut and the sort."""
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    if shape.entries_per_nonzero != 1.0:
        lengths = np.ceil(lengths * shape.entries_per_nonzero).astype(np.int64)
    return lengths


def _lane_lengths(walked: np.ndarray, shape: KernelShape) -> np.ndarray:
    """Entries of each row the kernel's lanes walk, in lane order: ``walked`` cut at
    ``split_long_rows`` and sorted longest first within ``sort_window`` windows
    (``iterations``' own cut and sort, so both count the same lanes)."""
    lengths = walked
    if shape.split_long_rows > 0:
        lengths = _cut(lengths, int(shape.split_long_rows))
    if shape.sort_window > 1 and lengths.size:
        lengths = _sorted_in_windows(lengths, int(shape.sort_window))
    return lengths


def _piece_ends(walked: np.ndarray, piece: int) -> np.ndarray | None:
    """Where each row's pieces end in cut order (the cumulative count of pieces, a row of
    ``L`` entries ``max(1, ceil(L / piece))`` of them); None without a cut."""
    return np.cumsum(np.maximum(1, -(-walked // piece))) if piece > 0 else None


def _virtual_rows(walked: np.ndarray, ends: np.ndarray | None, shape: KernelShape, lo: int,
                  hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source row, first entry of the piece within its row, entries) of the lanes ``lo`` to
    ``hi`` in lane order: the rows' entries ``walked`` cut at ``split_long_rows`` into pieces
    (a row's pieces in order, in place of the row; ``ends``: :func:`_piece_ends`), then sorted
    longest first within ``sort_window`` windows, stable (as ``spmv_sell_format.sell_order``
    packs them).

    Only the windows holding lanes ``lo`` to ``hi`` are sorted: a stable sort of one window
    orders its lanes as a stable sort of the whole by (window, -entries) does."""
    piece = int(shape.split_long_rows)
    total = walked.size if ends is None else (int(ends[-1]) if ends.size else 0)

    def cut(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, first, entries) of the pieces at ``positions`` in cut order."""
        if ends is None:
            return positions, np.zeros(positions.size, dtype=np.int64), walked[positions]
        row = np.searchsorted(ends, positions, side="right")
        pieces = ends[row] - np.where(row > 0, ends[row - 1], 0)
        first = (positions - (ends[row] - pieces)) * piece
        return row, first, np.minimum(walked[row] - first, piece)

    window = int(shape.sort_window)
    if window <= 1:
        return cut(np.arange(lo, hi, dtype=np.int64))
    start = (lo // window) * window
    stop = min(total, -(-hi // window) * window)
    row, first, entries = cut(np.arange(start, stop, dtype=np.int64))
    order = np.concatenate([w + np.argsort(-entries[w:w + window], kind="stable")
                            for w in range(0, stop - start, window)])
    take = order[lo - start:hi - start]
    return row[take], first[take], entries[take]


def block_columns(columns: np.ndarray, width: int) -> np.ndarray:
    """The columns a row's 1 x ``width`` blocks gather, in the loop's order: blocks greedy (one
    starts at the first column no earlier block covers and covers ``[c, c + width)``, as
    ``cuda-spmv-blocked16`` packs them), each block's ``width`` columns after one another.
    Hand check: columns [0, 1, 5], width 2 -> blocks at 0 and 5 -> [0, 1, 5, 6]."""
    columns = np.asarray(columns, dtype=np.int64)
    if width <= 1:
        return columns
    # one search for every column (where a block starting there would end), then a walk over
    # Python ints from one block's start to the next: a search a block was 147,000 calls,
    # 0.5 s, on cant's longest blocks of 1 x 3 blocks
    following = np.searchsorted(columns, columns + width, side="left").tolist()
    starts = []
    i = 0
    while i < columns.size:
        starts.append(i)
        i = following[i]
    return (columns[starts][:, None] + np.arange(width)).reshape(-1)


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


WAVEFRONTS = LastMatrixAnswers()
"""The :class:`BlockWavefronts` of the last matrix, by the shape's lane layout (every
candidate and backend of one matrix with the same cut, window, block and step shares one)."""


def longest_block_wavefronts(indptr: np.ndarray, indices: np.ndarray, shape: KernelShape,
                             value_bytes: int = 4) -> BlockWavefronts | None:
    """The :class:`BlockWavefronts` of the kernel's longest block (module docstring), or None
    for a kernel this module does not follow or an empty matrix. Kept for the last matrix
    (:data:`WAVEFRONTS`), by what of the shape it reads."""
    if not counted(shape) or len(indptr) < 2 or int(indptr[-1]) == 0:
        return None
    key = (float(shape.entries_per_nonzero), int(shape.split_long_rows),
           int(shape.sort_window), int(shape.block_width), int(shape.block_threads),
           int(shape.nnz_per_iteration), int(value_bytes))
    return WAVEFRONTS.get((indptr, indices), key,
                          lambda: _longest_block(indptr, indices, shape, value_bytes))


def _warp_maxima(indptr: np.ndarray, indices: np.ndarray, shape: KernelShape
                 ) -> tuple[int, np.ndarray]:
    """(lanes, the most entries a lane of each warp walks): the lanes of
    :func:`_lane_lengths` in groups of 32, the last padded with empty lanes. Kept for the
    matrix by the cut and window (:data:`WAVEFRONTS`): kernels that differ in their block or
    step walk the same lanes."""
    def make() -> tuple[int, np.ndarray]:
        lengths = _lane_lengths(_walked_lengths(indptr, shape), shape)
        padded = np.zeros(-(-lengths.size // 32) * 32, dtype=np.int64)
        padded[:lengths.size] = lengths
        most = padded.reshape(-1, 32).max(axis=1)
        most.flags.writeable = False
        return int(lengths.size), most

    key = ("warps", float(shape.entries_per_nonzero), int(shape.split_long_rows),
           int(shape.sort_window))
    return WAVEFRONTS.get((indptr, indices), key, make)


def _longest_block(indptr: np.ndarray, indices: np.ndarray, shape: KernelShape,
                   value_bytes: int) -> BlockWavefronts | None:
    lanes, most = _warp_maxima(indptr, indices, shape)
    width = max(1, int(shape.block_width))
    warps = max(1, shape.block_threads // 32)
    per_block = 32 * warps
    blocks = -(-lanes // per_block)
    padded = np.zeros(blocks * warps, dtype=np.int64)
    padded[:most.size] = most
    steps = -(-padded.reshape(blocks, warps) // shape.nnz_per_iteration)
    longest = steps.max(axis=1)
    best = None
    rows_seen: dict[int, np.ndarray] = {}
    walked = _walked_lengths(indptr, shape)
    ends = _piece_ends(walked, int(shape.split_long_rows))
    for b in np.flatnonzero(longest == longest.max())[:MAX_BLOCKS]:
        lo, hi = int(b) * per_block, min(lanes, (int(b) + 1) * per_block)
        row, first, entries = _virtual_rows(walked, ends, shape, lo, hi)
        total, gathers, busy = 0.0, 0, 0
        for w in range(0, hi - lo, 32):
            cols = [_lane_columns(indptr, indices, int(row[v]), int(first[v]),
                                  int(entries[v]), width, rows_seen)
                    for v in range(w, min(hi - lo, w + 32))]
            lines, n = _warp_lines(cols, value_bytes)
            total, gathers, busy = total + lines, gathers + n, busy + (n > 0)
        if best is None or total > best.wavefronts:
            best = BlockWavefronts(block=int(b), wavefronts=total, gathers=gathers,
                                   warps=max(1, busy))
    return best
