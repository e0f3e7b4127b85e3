"""Planning a large matrix's kernels within a memory budget: each format built on a sample of
its rows, its bytes and grid scaled back to the whole matrix, the time predicted on the whole.

A host plan packs the kernel's format (SELL slices, 16-bit offsets, 1 x B blocks, tiles) to
read its bytes and its kernel's shape. Packing holds several arrays of the matrix's size at
once: up to :data:`PACK_PEAK_BYTES_PER_NNZ` bytes a nonzero at the peak of one build, and each
built format stays cached beside the others (``backends.format_cache.FORMATS``). ``sparsescope
model --backend all`` on a 10^7-nonzero power-law matrix held 3.35 GB (2026-11-27, this
repository's 2-core machine), and was killed for memory at 10^8 (issue 33). So::

    plan bytes(nnz) = nnz x PLAN_BYTES_PER_NNZ
    plan on the whole matrix      while plan bytes(nnz) <= budget
    else on a row sample of       min(SAMPLE_NNZ, budget / PLAN_BYTES_PER_NNZ) nonzeros

**The sample** (:func:`row_sample`): windows of W consecutive rows (W a multiple of
:data:`WINDOW_ALIGN`, the SELL sorting window, so a window packs as the whole matrix packs
it), evenly spaced over the rows, plus the window holding the longest row (whether the
format cuts a row, and what its longest block walks, depend on it). All columns stay.

**The scaling** (:func:`scale_plan`), with r_nnz = nnz / sample nnz and r_rows = rows / sample
rows: values, indices, padding and flops scale by r_nnz (stored entries a nonzero); row
metadata and y by r_rows (a row's or a slice's pointer); x is the whole vector already. The
grid scales with the decomposition: rows (a block per 256 rows' slices) by r_rows, nonzeros
(a tile a fixed count of nonzeros) by r_nnz; a persistent grid (one wave whose blocks each
fill their own copy of x's head) stays. Everything a kernel does per iteration (its shape's
step, rounds, escape share, row cut) is the sample's.

The time model then runs on the whole matrix (its x gathers, L1, row lengths and blocks:
``model.predict`` samples those itself above its own sizes), so only the format's bytes come
from the sample. Both the plan's sample and the model's own are named in the prediction's
assumptions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

#: Bytes one host plan holds at its peak, a nonzero: ``pack_blocked`` (1 x B blocks), the
#: heaviest packer, peaked at 142 B a nonzero on a 10^6-nonzero power-law matrix (tracemalloc,
#: 2026-11-27); SELL 65, 16-bit SELL 62, tiles 20.
PACK_PEAK_BYTES_PER_NNZ = 150
#: Bytes a what-if of every backend holds a nonzero while it plans: one packer's peak and the
#: formats kept beside it (3.35 GB for 10^7 nonzeros with --backend all, less the matrix).
PLAN_BYTES_PER_NNZ = 300
#: Nonzeros a plan sample holds at most: the size the model's own samplers take
#: (``xgather`` and ``l1_cache``'s ``sample_nnz``); a format's bytes a nonzero and its
#: per-iteration figures are settled long before.
SAMPLE_NNZ = 1_000_000
#: Rows of a sample window are a multiple of this: the SELL kernels sort rows within windows
#: of 256 (sigma) and their blocks take 256 rows' slices.
WINDOW_ALIGN = 256
#: Windows a sample spreads over at least (when the rows allow).
MIN_WINDOWS = 64


#: Bytes the time model's own arrays take a row and a column of the matrix: row lengths,
#: iterations a row, a warp and a block, the issue counts (``model.iterations``,
#: ``model.onchip``: about eight int64 arrays a row), and the x gathers' per-column counts,
#: masks and their sort (``model.xgather``, ``model.hot_set``).
MODEL_BYTES_PER_ROW = 64
MODEL_BYTES_PER_COL = 32


def model_bytes(rows: int, cols: int, nnz: int, budget_bytes: int) -> int:
    """What the model holds beside the matrix: its per-row and per-column arrays and its plans
    (:func:`plan_bytes`, at most the budget: above it they are made on a sample)::

        rows x MODEL_BYTES_PER_ROW + cols x MODEL_BYTES_PER_COL + min(plan bytes, budget)

    Hand check: 10^7 rows and columns, 10^8 nonzeros, 2 GiB -> 640 MB + 320 MB + 2 GiB."""
    return (int(rows) * MODEL_BYTES_PER_ROW + int(cols) * MODEL_BYTES_PER_COL
            + min(plan_bytes(nnz), int(budget_bytes)))


@dataclass(frozen=True)
class RowSample:
    """Rows of a matrix planned in its place (module docstring)."""

    rows: np.ndarray
    """Row indices of the sample, ascending."""
    windows: int
    """Windows of consecutive rows (the longest row's among them)."""
    window_rows: int
    total_rows: int
    total_nnz: int
    sample_nnz: int

    @property
    def nnz_ratio(self) -> float:
        return self.total_nnz / max(1, self.sample_nnz)

    @property
    def row_ratio(self) -> float:
        return self.total_rows / max(1, self.rows.size)

    def describe(self) -> str:
        """The sample in words, for an assumption line."""
        return (f"{self.sample_nnz:,} of {self.total_nnz:,} nonzeros ({self.rows.size:,} of "
                f"{self.total_rows:,} rows: {self.windows:,} windows of {self.window_rows:,} "
                f"consecutive rows, evenly spaced, with the window of the longest row)")

    def as_dict(self) -> dict:
        return {"sample_nnz": self.sample_nnz, "total_nnz": self.total_nnz,
                "sample_rows": int(self.rows.size), "total_rows": self.total_rows,
                "windows": self.windows, "window_rows": self.window_rows}


def plan_bytes(nnz: int) -> int:
    """What planning every backend on the whole matrix holds (module docstring)."""
    return int(nnz) * PLAN_BYTES_PER_NNZ


def sample_target(nnz: int, budget_bytes: int) -> int | None:
    """Nonzeros to plan on: None (the whole matrix) while :func:`plan_bytes` fits
    ``budget_bytes``, else ``min(SAMPLE_NNZ, budget / PLAN_BYTES_PER_NNZ)`` (at least one
    window's worth). Hand check: 10^8 nonzeros, 2 GiB -> 30 GB > 2 GiB -> 10^6."""
    if plan_bytes(nnz) <= budget_bytes:
        return None
    return max(1, min(SAMPLE_NNZ, int(budget_bytes) // PLAN_BYTES_PER_NNZ))


def row_sample(indptr: np.ndarray, target_nnz: int) -> RowSample:
    """About ``target_nnz`` nonzeros of whole rows (module docstring)::

        W = WINDOW_ALIGN x max(1, floor(target / (MIN_WINDOWS x mean row x WINDOW_ALIGN)))
        k = clip(round(target / (W x mean row)), 1, rows / W) windows, the i-th starting at
            floor(i x rows / k / WINDOW_ALIGN) x WINDOW_ALIGN

    Hand check: 10^7 rows of 10, target 10^6 -> W = 256 x floor(10^6 / (64 x 10 x 256)) =
    256 x 6 = 1,536 rows, k = round(10^6 / 15,360) = 65 windows (66 with the longest row's)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = indptr.size - 1
    nnz = int(indptr[-1]) if rows >= 0 else 0
    mean = max(nnz / max(1, rows), 1e-9)
    width = WINDOW_ALIGN * max(1, int(target_nnz // (MIN_WINDOWS * mean * WINDOW_ALIGN)))
    width = min(width, max(WINDOW_ALIGN, rows))
    count = int(min(max(1, round(target_nnz / (width * mean))), max(1, rows // width)))
    starts = {(i * rows // count) // WINDOW_ALIGN * WINDOW_ALIGN for i in range(count)}
    longest = int(np.argmax(np.diff(indptr))) if rows > 0 else 0
    starts.add(longest // WINDOW_ALIGN * WINDOW_ALIGN)
    picked = np.unique(np.concatenate(
        [np.arange(s, min(rows, s + width), dtype=np.int64) for s in sorted(starts)]))
    lengths = indptr[picked + 1] - indptr[picked]
    return RowSample(rows=picked, windows=len(starts), window_rows=width, total_rows=rows,
                     total_nnz=nnz, sample_nnz=int(lengths.sum()))


def sample_matrix(csr, sample: RowSample):
    """The canonical CSR of the sample's rows, every column kept (index types kept)."""
    import scipy.sparse as sp

    indptr = np.asarray(csr.indptr)
    starts, ends = indptr[sample.rows], indptr[sample.rows + 1]
    lengths = (ends - starts).astype(np.int64)
    take = np.repeat(starts.astype(np.int64) - (np.cumsum(lengths) - lengths), lengths) \
        + np.arange(int(lengths.sum()), dtype=np.int64)
    pointers = np.concatenate([[0], np.cumsum(lengths)]).astype(indptr.dtype)
    out = sp.csr_matrix((csr.data[take], csr.indices[take], pointers),
                        shape=(sample.rows.size, csr.shape[1]), copy=False)
    out.has_sorted_indices = True
    out.has_canonical_format = True
    return out


def scale_plan(traffic, shape, sample: RowSample):
    """(traffic, shape) planned on ``sample`` scaled to the whole matrix (module docstring).
    Hand check: a SELL plan of 10^6 of 10^8 nonzeros and 10^5 of 10^7 rows, values 4 MB,
    slice pointers 12.5 KB, y 0.4 MB, 391 blocks by rows -> 400 MB, 1.25 MB, 40 MB, 39,100
    blocks."""
    r_nnz, r_rows = sample.nnz_ratio, sample.row_ratio
    if traffic is not None:
        traffic = replace(
            traffic, values_bytes=round(traffic.values_bytes * r_nnz),
            indices_bytes=round(traffic.indices_bytes * r_nnz),
            padding_bytes=round(traffic.padding_bytes * r_nnz),
            flops=round(traffic.flops * r_nnz),
            row_meta_bytes=round(traffic.row_meta_bytes * r_rows),
            y_read_bytes=round(traffic.y_read_bytes * r_rows),
            y_written_bytes=round(traffic.y_written_bytes * r_rows))
    if shape is not None:
        persistent = (shape.onchip_x_entries > 0 and shape.onchip_x_copies == shape.grid_blocks)
        if not persistent:
            ratio = r_rows if shape.decomposition == "rows" else r_nnz
            grid = max(1, math.ceil(shape.grid_blocks * ratio))
            copies = (grid if shape.onchip_x_copies == shape.grid_blocks
                      and shape.onchip_x_copies else shape.onchip_x_copies)
            shape = replace(shape, grid_blocks=grid, onchip_x_copies=copies)
    return traffic, shape
