"""Vectorised building blocks of the generators: exact row lengths, sorted distinct columns.

No global sort is ever done. Each row is built already sorted and duplicate-free by a
"stars and bars" bijection: for a row of length L drawing from a window of W columns starting at
``lo``, draw G sorted uniforms y_0 <= ... <= y_{G-1} in [0, 1) (order statistics obtained from
normalised cumulative sums of exponential spacings, one segmented ``cumsum`` for a whole block of
rows), map each to a slot ``v = floor(y * (W - L + 1))`` (nondecreasing, in [0, W-L]) and give the
k-th entry the column ``lo + v_{k // group} + k``: strictly increasing, inside [lo, lo + W - 1].
``group > 1`` makes entries share a draw, so columns come in runs of ``group`` consecutive columns
(the dof blocks of FEM matrices). A monotone ``transform`` of y (power law, R-MAT decoding)
skews where columns land without breaking the ordering.

Work is done in blocks of about :data:`CHUNK_NNZ` entries, so temporaries stay small (a few
hundred MiB at most) whatever the matrix size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import UsageError
from sparsescope.matrices._csr import index_dtype, make_csr

CHUNK_NNZ = 1 << 22
"""Entries per block: large enough to amortise NumPy call overhead, small enough for the cache."""

Transform = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""transform(y, draws_per_row, row_ids) -> y' (monotone in y within each row, values in [0,1))."""


def check_sizes(rows: int, cols: int, nnz: int) -> None:
    """Generators need 1 <= nnz <= rows * cols (exact nnz, no duplicate columns in a row)."""
    if rows < 1 or cols < 1:
        raise UsageError(f"a generated matrix needs rows >= 1 and cols >= 1, got {rows} x {cols}")
    if not 1 <= nnz <= rows * cols:
        raise UsageError(
            f"nnz must be between 1 and rows * cols = {rows * cols} for a {rows} x {cols} "
            f"matrix, got {nnz}")
    check_generation_memory(rows, cols, nnz)


def check_generation_memory(rows: int, cols: int, nnz: int) -> None:
    """Refuse sizes whose result cannot fit in memory, before anything is allocated.

    Counted: the canonical CSR and one SpMV's vectors
    (:func:`~sparsescope.matrices._csr.csr_memory_parts`), the row lengths and row starts the
    generators keep (rows x 16), and one block of sampling temporaries (:data:`CHUNK_NNZ` x 32).
    Raises :class:`UsageError` naming the sizes and the bytes needed.
    """
    from sparsescope.matrices._csr import _size, csr_memory_parts, physical_memory_bytes

    parts = csr_memory_parts(rows, cols, nnz) + [
        ("row lengths and starts rows x 16", rows * 16),
        ("sampling temporaries", min(nnz, CHUNK_NNZ) * 32)]
    needed = sum(count for _, count in parts)
    memory = physical_memory_bytes()
    if memory is not None and needed > memory:
        detail = ", ".join(f"{what} = {count:,}" for what, count in parts)
        raise UsageError(
            f"a generated {rows:,} x {cols:,} matrix with {nnz:,} nonzeros needs {needed:,} "
            f"bytes ({_size(needed)}: {detail}), more than this machine's {_size(memory)} of "
            "memory; ask for fewer nonzeros")


def apportion(weights: np.ndarray, total: int, cap: np.ndarray | int) -> np.ndarray:
    """Integer lengths summing exactly to ``total``, proportional to ``weights``, each <= ``cap``.

    Largest-remainder (Hamilton) rounding of the proportional shares, O(rows) per round; what the
    caps cut off is shared again among the rows with room, until nothing is left (each round
    saturates at least one more row, so this ends). Deterministic given the weights.
    """
    weights = np.asarray(weights, dtype=np.float64)
    cap = np.broadcast_to(np.asarray(cap, dtype=np.int64), weights.shape)
    if total > int(cap.sum()):
        raise UsageError(f"cannot place {total} nonzeros: at most {int(cap.sum())} fit")
    lengths = np.zeros(weights.shape, dtype=np.int64)
    remaining = int(total)
    while remaining > 0:
        room = cap - lengths
        share = np.where(room > 0, weights, 0.0)
        if share.sum() <= 0.0:
            share = (room > 0).astype(np.float64)
        exact = share * (remaining / share.sum())
        add = np.floor(exact).astype(np.int64)
        short = remaining - int(add.sum())
        if short > 0:
            fraction = np.where(room > 0, exact - add, -1.0)
            top = np.argpartition(fraction, len(fraction) - short)[len(fraction) - short:]
            add[top] += 1
        add = np.minimum(add, room)
        lengths += add
        remaining -= int(add.sum())
    return lengths


def multinomial_lengths(probs: np.ndarray, total: int, cap: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Row lengths of ``total`` independent placements with row probabilities ``probs``, capped.

    Placements beyond a row's ``cap`` (more than the columns it has) are moved to other rows in
    proportion to ``probs``.
    """
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    lengths = rng.multinomial(total, probs).astype(np.int64)
    excess = int(np.maximum(lengths - cap, 0).sum())
    if excess:
        np.minimum(lengths, cap, out=lengths)
        lengths += apportion(probs, excess, cap - lengths)
    return lengths


def sorted_distinct(lengths: np.ndarray, lo: np.ndarray, width: np.ndarray,
                    rng: np.random.Generator, *, group: int = 1,
                    transform: Transform | None = None,
                    row_ids: np.ndarray | None = None) -> np.ndarray:
    """Columns of a block of rows, row after row, each row sorted and distinct in its window.

    ``lengths``, ``lo`` and ``width`` are per-row int64 arrays with ``lengths <= width``; see the
    module docstring for the method. Cost: about 15 vectorised passes over the entries.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = int(lengths.sum())
    if n == 0:
        return np.empty(0, dtype=np.int64)
    draws = lengths if group == 1 else (lengths + group - 1) // group
    csum = np.cumsum(rng.standard_exponential(int(draws.sum())))
    closing = rng.standard_exponential(len(lengths))
    draw_end = np.cumsum(draws)
    draw_start = draw_end - draws
    base = np.where(draw_start > 0, csum[np.maximum(draw_start - 1, 0)], 0.0)
    top = np.where(draws > 0, csum[np.maximum(draw_end - 1, 0)], 0.0)
    total = top - base + closing
    slots = (np.asarray(width, dtype=np.int64) - lengths + 1).astype(np.float64)
    if transform is None:
        # y * slots with y = (csum - base) / total, fused into one multiply-subtract per draw.
        scale = slots / total
        slot = csum * np.repeat(scale, draws)
        slot -= np.repeat(base * scale, draws)
    else:
        y = (csum - np.repeat(base, draws)) / np.repeat(total, draws)
        slot = transform(y, draws, row_ids) * np.repeat(slots, draws)
    v = slot.astype(np.int64)  # truncation: tiny negative rounding errors become 0
    np.minimum(v, np.repeat(slots.astype(np.int64) - 1, draws), out=v)
    entry_start = np.cumsum(lengths) - lengths
    k = np.arange(n, dtype=np.int64) - np.repeat(entry_start, lengths)
    if group > 1:
        v = v[np.repeat(draw_start, lengths) + k // group]
    k += v
    k += np.repeat(np.asarray(lo, dtype=np.int64), lengths)
    return k


def segment_positions(row_start: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Flat positions ``row_start[r] + k`` for k < lengths[r], row after row."""
    n = int(lengths.sum())
    entry_start = np.cumsum(lengths) - lengths
    return (np.arange(n, dtype=np.int64) - np.repeat(entry_start, lengths)
            + np.repeat(row_start, lengths))


def row_chunks(indptr: np.ndarray, chunk_nnz: int = CHUNK_NNZ) -> Iterator[tuple[int, int]]:
    """Consecutive row ranges [r0, r1) holding about ``chunk_nnz`` entries each."""
    rows = len(indptr) - 1
    nnz = int(indptr[-1])
    cuts = np.searchsorted(indptr, np.arange(chunk_nnz, nnz, chunk_nnz), side="right")
    bounds = np.unique(np.concatenate(([0], cuts, [rows])))
    for r0, r1 in zip(bounds[:-1], bounds[1:], strict=True):
        yield int(r0), int(r1)


FillBlock = Callable[[int, int, np.ndarray], None]
"""fill(r0, r1, out): write the sorted columns of rows r0..r1-1 into ``out`` (their slice)."""


def assemble(rows: int, cols: int, lengths: np.ndarray, fill: FillBlock,
             rng: np.random.Generator) -> sp.csr_matrix:
    """Allocate canonical CSR for ``lengths``, fill columns block by block, then values in (0, 1].

    Values are ``1 - U`` with U uniform in [0, 1): never zero, so no stored entry is a zero.
    """
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    nnz = int(indptr[-1])
    itype = index_dtype(rows, cols, nnz)
    indices = np.empty(nnz, dtype=itype)
    data = np.empty(nnz, dtype=np.float64)
    for r0, r1 in row_chunks(indptr):
        a, b = int(indptr[r0]), int(indptr[r1])
        fill(r0, r1, indices[a:b])
        block = data[a:b]
        rng.random(out=block)
        np.subtract(1.0, block, out=block)
    return make_csr(data, indices, indptr.astype(itype, copy=False), (rows, cols))


def window_starts(rows: int, cols: int, width: np.ndarray | int) -> np.ndarray:
    """Start column of a window of ``width`` columns centred on each row's diagonal position.

    The diagonal position of row i is ``(i + 0.5) * cols / rows`` (the diagonal of a rectangle);
    windows are shifted inward at the edges so they stay inside [0, cols).
    """
    centre = ((np.arange(rows, dtype=np.float64) + 0.5) * (cols / rows)).astype(np.int64)
    width = np.asarray(width, dtype=np.int64)
    return np.clip(centre - width // 2, 0, cols - width)
