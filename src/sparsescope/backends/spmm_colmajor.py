"""``spmm-cuda-colmajor``: own CSR SpMM for column-major X and Y
(``backends/kernels/spmm_colmajor.cu``, whose header argues the layout), run through CuPy.

A lane per row slice, a tile of C columns per thread (grid.y = ceil(k / C)): Y's columns are
written 32 consecutive rows at a time (coalesced), A's pairs are read once per tile and feed C
columns. Host choices, pure functions tested without a GPU and recorded in the case's notes:

* :func:`colmajor_tile`: (C, BATCH), columns per thread and pairs per batch (``tile_cols``:
  a narrower C, :func:`narrow_tile_cols`, for grids below one wave);
* :func:`colmajor_slice_nnz`: S, the longest slice a lane walks (rows longer are cut), laid
  out by ``spmm_cuda.warp_aligned_slices``: a row of at most 32 slices inside one warp, summed by
  the warp's scan and stored (one launch); a longer row across warps, an atomic a warp into
  a zero-filled Y;
* the block: :func:`~sparsescope.backends.spmm_cuda.warps_per_block` over ceil(slices / 32)
  warps;
* ``ell``: A as row-major ELL (``spmm_ell_format``), a lane a row at s x width: no slice
  pointers, one dependent round trip fewer a call (H200: a geomean 0.925 of the plain
  plan's time over the 30 column-major cases of the real development set that take it,
  results/h200/real-dev/2026-11-28-ell-rows).

Row-major X is :mod:`.spmm_rowgroup`'s and :mod:`.spmm_cuda`'s; this backend skips layout
``row`` with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability
from sparsescope.backends.spmm_cuda import (
    SLICE_UNIT,
    WARP,
    HostPlannedKernel,
    SlicePlan,
    WarpSlices,
    host_output,
    mean_row_slice,
    slice_plan,
    upload_dense,
    warp_aligned_slices,
    warps_per_block,
    zero_fill_async,
)
from sparsescope.backends.spmm_ell_format import (
    EllRowsTraffic,
    ell_declined,
    ell_rows,
    refuse_row_cuts,
    stored_width,
    upload_pairs,
)
from sparsescope.ops.base import OpCase

SOURCE = "spmm_colmajor.cu"
MAX_TILE_COLS = 8
"""Most columns a thread computes (C): 8 columns of gathers per nonzero put A's 8-16 bytes a
pair at 3-6 % of the 8 x 32 bytes of X sectors it requests; 8 accumulators."""
X_LOADS_IN_FLIGHT = 16
"""BATCH x C loads of X issued before their FMAs, per lane (BATCH at most 8)."""
MAX_BATCH = 8
SEG_MIN_BATCH = 4
"""Fewest pairs a batch of the instance with the warp's scan (SEG) where BATCH is the rule's.
ptxas schedules ``spmm_colmajor<float, int, 8, 2, true>`` with its FMAs among its gathers (a
second round trip a batch; the instance without SEG and ``<float, int, 8, 4, true>`` issue
every gather of a batch first, tests/backends/test_spmm_rowgroup_sass.py). Plain colmajor ran
Groebner_id2003_aug (a row cut: the whole matrix in the SEG instance) at k = 8 in 58.6 us
against a predicted 17.2 (H200, results/h200/real-dev/2026-11-28-round-slices); at least 4 pairs
a batch, 30.0 against 57.5 for BATCH 2 in one run, 0.70x geomean over the 30 cases of that
instance (results/h200/real-dev/2026-11-28-fit-long/pair_scanned_batch.md)."""
SLICE_MEAN_FACTOR = 2
"""S = 2 x the mean row length (rounded up to 32): no lane of a warp walks more than about
twice what the average lane does, whatever the row-length distribution's tail."""


def colmajor_tile(k: int, batch: int | None = None,
                  tile_cols: int | None = None) -> tuple[int, int]:
    """(C, BATCH)::

        C     = smallest power of two >= k, at most MAX_TILE_COLS (8)
        BATCH = min(MAX_BATCH, X_LOADS_IN_FLIGHT / C)

    k = 1 -> (1, 8); k = 3 -> (4, 4); k = 6 -> (8, 2); k = 8 -> (8, 2); k = 256 -> (8, 2);
    k = 2 -> (2, 8). Columns past k in the last tile are masked (k = 3: 3 of 4). ``batch``
    (1 to MAX_BATCH) replaces the BATCH rule: k = 8, batch 4 -> (8, 4). ``tile_cols``
    replaces C by a narrower tile (a power of two, at most the rule's C; BATCH by the same
    rule): k = 8, tile_cols 1 -> (1, 8), eight column tiles; k = 8, tile_cols 4 -> (4, 4);
    k = 3, tile_cols 2 -> (2, 8), two tiles, the second masked to one column; k = 3,
    tile_cols 8 -> ValueError (the rule's C is 4).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if batch is not None and not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be 1 to {MAX_BATCH}, got {batch}")
    if tile_cols is not None and (not 1 <= tile_cols <= MAX_TILE_COLS
                                  or tile_cols & (tile_cols - 1)):
        raise ValueError(f"tile_cols must be a power of two 1 to {MAX_TILE_COLS}, "
                         f"got {tile_cols}")
    tile = 1
    while tile < k and tile < MAX_TILE_COLS:
        tile *= 2
    if tile_cols is not None:
        if tile_cols > tile:
            raise ValueError(f"tile_cols {tile_cols} is wider than k = {k} needs (C = {tile})")
        tile = tile_cols
    return tile, batch if batch is not None else min(MAX_BATCH, X_LOADS_IN_FLIGHT // tile)


def short_slices(rows: int, nnz: int, k: int) -> dict[str, int]:
    """The launch parameters of colmajor on a grid too small to fill the device: twice the
    pairs a batch (``deep = min(MAX_BATCH, 2 x BATCH)``, so ``deep x C`` loads of X in flight a
    lane), and slices of at most the mean row rounded up to whole batches::

        slice_nnz = max(deep, round_up(ceil(nnz / rows), deep))

    A lane walks its slice one batch after another, each batch a dependent round trip (the
    pairs' gathers wait on the pairs): a warp takes ``ceil(longest slice / BATCH)`` round trips.
    On a grid of a few warps an SM, nothing hides them; the default rule (twice the mean
    row, at least 32 pairs) leaves a 32-pair lane 16 rounds at k = 8, where a mean-row lane
    takes 4. Deeper batches halve every lane's rounds, shorter slices cut the longest; the
    cost is the warp's scan over the rows cut (log2 of their most slices, steps of C + 2
    shuffles) and the pad lanes that keep each inside its warp, which the trial weighs. k = 8
    (C 8, BATCH 2): deep 4; 13,436 rows, 99,000 nonzeros (mean 7.4) -> slice_nnz 8; k = 1
    (BATCH 8 already): deep 8."""
    deep = deep_batch(k)
    return {"slice_nnz": mean_row_slice(rows, nnz, deep), "batch": deep}


def deep_batch(k: int) -> int:
    """Twice :func:`colmajor_tile`'s BATCH, at most MAX_BATCH: k = 8 (BATCH 2) -> 4; k = 1
    (BATCH 8) -> 8."""
    return min(MAX_BATCH, 2 * colmajor_tile(k)[1])


def fitted_slices(longest: int, k: int) -> dict[str, int]:
    """The shortest slices (whole deep batches, :func:`short_slices`' deep) that keep the
    longest row to a warp of slices, so that every cut row stays inside one warp
    (``spmm_cuda.warp_aligned_slices``: the scan sums it, one launch, no zero fill)::

        slice_nnz = round_up(max(deep, ceil(longest / 32)), deep)

    Shorter slices give each lane fewer dependent rounds and the grid more warps. k = 8
    (deep 4): longest 27 -> 4; longest 301 -> 12 (10 rounded up); longest 0 -> 4. On an H200
    (k = 8, column-major, results/h200/real-dev/2026-11-28-aligned): lp_e226 (longest 110,
    mean 12.4) took 6.4 us a call in 8-pair slices against 7.3 in the mean rule's 16, and
    tumorAntiAngiogenesis_2 (longest 301) 6.7 us at 12 pairs (in one warp) against 8.4 at 8
    (across warps, the zero fill)."""
    deep = deep_batch(k)
    need = max(deep, -(-max(0, longest) // WARP))
    return {"slice_nnz": -(-need // deep) * deep, "batch": deep}


def round_slices(k: int) -> list[dict[str, int]]:
    """Slices of one and of two deep batches (:func:`deep_batch`), longest first: the fewest
    dependent rounds a lane can take, for a grid that stays under one wave even in
    :func:`short_slices`' slices, where the rounds of the longest lane, not the lanes' count,
    set the time. k = 8 (deep 4): 8 pairs, then 4.

    A row longer than a warp of them is cut across warps (the zero fill and the atomics
    again), which :func:`fitted_slices` avoids; the trial weighs the two. On an H200 (k = 8,
    column-major, results/h200/real-dev/2026-11-28-aligned): Groebner_id2003_aug (4,967 rows,
    mean 35, longest 829) took 10.9 us a call in 8-pair slices across warps against 12.7 in
    the fitted 28-pair slices auto kept, 7 rounds a lane against 2."""
    deep = deep_batch(k)
    return [{"slice_nnz": 2 * deep, "batch": deep}, {"slice_nnz": deep, "batch": deep}]


def narrow_tile_cols(k: int, tile_warps: int, wave_warps: int) -> int:
    """C of colmajor's narrow-tile variant, for a grid that leaves the device idle: the
    largest power of two at most :func:`colmajor_tile`'s C whose grid still reaches one full
    wave of resident warps, else 1::

        C = largest power of two <= C_k with  tile_warps x ceil(k / C) >= wave_warps,  else 1
            tile_warps = blocks x warps a block (one column tile; the slices fix both, not C)
            wave_warps = SMs x warps an SM holds of the kernel (its occupancy)

    C_k itself where the default grid already fills a wave: no narrower variant then.

    Why narrower tiles help a small grid: with C_k = 8 (k >= 8) BATCH is 2, so a lane of a
    row of 3-4 nonzeros makes 5 dependent round trips (its slice pointers, then pairs and
    their gathers for each of 2 batches); at C = 1 BATCH is 8, and a row of <= 8 nonzeros
    takes 3 (slice pointers, pairs, gathers), while k / C column tiles give k / C times the
    warps to hide them. The cost: every column tile reads A's pairs again (k / C passes
    instead of ceil(k / 8)), and a nonzero costs k / C x (2 C + 3) warp instructions instead
    of 19 at k = 8 (40 at C = 1). Hence no narrower than a wave needs.

    bcspwr06 at k = 8 on an H200 (132 SMs): 1,454 rows of ~3.6 nonzeros, none cut, one slice
    a row -> 46 warps, blocks of 1 warp (:func:`colmajor_grid`): tile_warps 46. The float32
    instance's 61 registers let an SM hold 32 one-warp blocks (its block limit): wave 132 x
    32 = 4,224. C = 4: 92 warps, C = 2: 184, C = 1: 368 < 4,224 -> C = 1 (8 tiles, 8x the
    warps; A's 5,300 pairs, 42 kB, read 8 times from the L2 instead of once). A 96,000-row
    graph (3,000 warps a tile) -> C = 4 (6,000 >= 4,224); 1,500 warps -> C = 2; 5,000 ->
    C = 8 (no narrower); k = 1 -> 1 (no narrower); k = 3 (C_k 4), 46 warps -> 1 (3 tiles).
    """
    widest, _ = colmajor_tile(k)
    tile = widest
    while tile > 1 and tile_warps * -(-k // tile) < wave_warps:
        tile //= 2
    return tile


def colmajor_slice_nnz(rows: int, nnz: int, min_slice: int | None = None) -> int:
    """S = max(32, round_up(ceil(SLICE_MEAN_FACTOR x nnz / rows), 32)) (``min_slice``
    replaces the 32 floor).

    A lane walks a slice alone, so a warp takes as long as its longest slice: rows up to twice
    the mean (rounded up to a 32-pair unit, so short-row matrices are not cut at all) stay
    whole, longer ones are cut. 10,000 rows, 50,000 nnz (mean 5) -> 32; 1,000 rows, 100,000
    nnz (mean 100) -> 224; 0 rows -> 32; min_slice 4096 -> 4096.
    """
    floor = SLICE_UNIT if min_slice is None else min_slice
    want = -(-SLICE_MEAN_FACTOR * nnz // max(1, rows))
    return max(floor, SLICE_UNIT, -(-want // SLICE_UNIT) * SLICE_UNIT)


def colmajor_grid(n_slices: int, k: int, tile: int, sm_count: int,
                  warps: int | None = None) -> tuple[int, int, int]:
    """(blocks x, tiles y, warps per block)::

        warps  = spmm_cuda.warps_per_block(ceil(n_slices / 32), sm_count)   (``warps``)
        blocks = max(1, ceil(n_slices / (32 x warps))),  tiles = ceil(k / C)

    10,000 slices, k = 256, C = 8, 132 SMs -> 313 warps -> 4 a block -> (79, 32, 4);
    33 slices, k = 3, C = 4 -> (2, 1, 1); 0 slices -> (1, 1, 1) for k = 1.
    """
    need = -(-max(0, n_slices) // 32)
    block = warps_per_block(need, sm_count, warps)
    return max(1, -(-max(0, n_slices) // (32 * block))), -(-k // tile), block


def unaligned_slices(indptr: np.ndarray, slice_nnz: int) -> WarpSlices:
    """:func:`~sparsescope.backends.spmm_cuda.slice_plan`'s slices as they fall: every cut row
    ``-(row + 1)`` (atomics, a zero-filled Y), the warp's scan (span 32) only where a row has
    32 slices or more, where it saves 32 atomics on one address; below, 5 x (C + 2) shuffles
    a lane cost more than the few atomics they save (H200,
    results/h200/real-dev/2026-11-28-spmm-scan-all: calls of rows cut into 2-4 slices ran
    20-35 % slower scanned)."""
    plan = slice_plan(indptr, slice_nnz)
    if not plan.split_rows:
        return WarpSlices(plan, 0, 0, 1)
    most = int(np.unique(plan.slice_row[plan.slice_row < 0], return_counts=True)[1].max())
    return WarpSlices(plan, plan.split_rows, 0, WARP if most >= WARP else 1)


def long_rows_note(indptr: np.ndarray, plan: SlicePlan, fit_long: bool) -> str:
    """The rows longer than a warp of S-pair slices, for the case's notes: fitted to one warp
    (with the longest slice), across warps, or none."""
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    long = int((lengths > WARP * plan.slice_nnz).sum())
    if not long:
        return "none"
    if not fit_long:
        return f"{long} across warps"
    longest = int(np.diff(plan.slice_ptr).max())
    return f"{long} fitted to one warp each (slices of up to {longest} pairs)"


def cut_row_sum(slices: WarpSlices, aligned: bool) -> str:
    """How the plan's cut rows are summed, for the case's notes."""
    if not slices.cut_rows:
        return "none"
    scan = f"warp scan ({slices.span.bit_length() - 1} steps)"
    if not aligned:
        return (f"{scan}, an atomic a warp" if slices.span > 1 else "an atomic a slice") + \
            " into a zero-filled Y"
    across = slices.plan.split_rows
    return (f"{scan}, stored by the row's last lane" +
            (f"; {across} row(s) across warps: an atomic a warp into a zero-filled Y"
             if across else ""))


def colmajor_kernel_name(value_dtype: str, index_bytes: int, tile: tuple[int, int],
                         segment: bool = False, ell: bool = False) -> str:
    """The template instance, e.g. ``spmm_colmajor<float, int, 8, 2>``; with ``segment`` (a
    row is cut: the warp's scan) ``spmm_colmajor<float, int, 8, 4, true>``; with ``ell`` (A
    as row-major ELL, no slice pointers) ``spmm_colmajor<float, int, 8, 2, false, true>``."""
    if segment and ell:
        raise ValueError("segment and ell exclude each other: ELL rows are never cut")
    flags = ", true" if segment else ", false, true" if ell else ""
    return (f"spmm_colmajor<{_gpu.CUDA_VALUE_TYPES[value_dtype]}, "
            f"{_gpu.CUDA_INDEX_TYPES[index_bytes]}, {tile[0]}, {tile[1]}{flags}>")


@dataclass(frozen=True)
class ColMajorPlan:
    kernel: str
    tile: tuple[int, int]
    plan: SlicePlan
    blocks: int
    tiles: int
    warps: int
    notes: dict[str, str]
    span: int = 1
    """The scan's reach (:class:`WarpSlices`); 1: no row cut, no scan."""
    ell: bool = False
    """A as row-major ELL (``ell``): a row a group or lane, no slice pointers."""
    ell_width: int = 0
    """Stored pairs a row on ELL rows (``ell``: ``spmm_ell_format.stored_width`` of the longest
    row); 0 for slices."""


def plan_colmajor(indptr: np.ndarray, nnz: int, k: int, value_dtype: str, index_bytes: int,
                  sm_count: int, *, warps: int | None = None, min_slice: int | None = None,
                  slice_nnz: int | None = None, batch: int | None = None,
                  tile_cols: int | None = None, aligned: bool = True,
                  fit_long: bool = False, ell: bool = False) -> ColMajorPlan:
    """The whole host plan of one call (pure). ``slice_nnz``: S as given, instead of
    :func:`colmajor_slice_nnz`'s rule; ``batch``: BATCH as given; ``tile_cols``: C as given
    (both :func:`colmajor_tile`). The slices: ``spmm_cuda.warp_aligned_slices`` where no row has
    more than 32 (the call is then one launch, the cut rows summed by the warp's scan), else
    :func:`unaligned_slices` (a row across warps needs the zero fill whatever the layout); with
    ``aligned`` False always the latter (to measure the two in one run). ``fit_long``: rows
    of more than 32 slices cut into a warp of longer slices (``spmm_cuda.warp_fitted_sizes``), so
    that the aligned layout holds every row. Where the warp's scan runs and BATCH is the
    rule's, BATCH is at least :data:`SEG_MIN_BATCH`. ``ell``: A as row-major ELL of
    ``spmm_ell_format.stored_width(longest row)`` pairs a row, a lane a row
    (``spmm_ell_format.ell_rows``): no slice pointers to load, one dependent round trip fewer
    a call; it cuts no row, so it takes no slice size."""
    rows = int(np.asarray(indptr).size - 1)
    tile = colmajor_tile(k, batch, tile_cols)
    if slice_nnz is not None and slice_nnz < 1:
        raise ValueError(f"slice_nnz must be >= 1, got {slice_nnz}")
    if ell:
        refuse_row_cuts(slice_nnz=slice_nnz, min_slice=min_slice, fit_long=bool(fit_long))
    size = slice_nnz or colmajor_slice_nnz(rows, nnz, min_slice)
    # None where a row spans warps (the zero fill is needed anyway): the plain layout, whose
    # rows of a few slices add with an atomic each and need no scan
    if ell:
        slices = WarpSlices(ell_rows(indptr), 0, 0, 1)
    else:
        slices = (warp_aligned_slices(indptr, size, tile[1] if fit_long else None)
                  if aligned else None) or unaligned_slices(indptr, size)
    plan = slices.plan
    segment = slices.span > 1
    if segment and batch is None:
        tile = (tile[0], max(tile[1], SEG_MIN_BATCH))
    blocks, tiles, block = colmajor_grid(plan.n_slices, k, tile[0], sm_count, warps)
    name = colmajor_kernel_name(value_dtype, index_bytes, tile, segment, ell)
    ell_width = stored_width(plan.slice_nnz) if ell else 0
    notes = {"kernel": name, "tile_cols": str(tile[0]), "pairs_per_batch": str(tile[1]),
             "slice_nnz": str(plan.slice_nnz), "slices": str(plan.n_slices),
             "split_rows": str(slices.cut_rows), "rows_across_warps": str(plan.split_rows),
             "pad_slices": str(slices.pads), "scan_span": str(slices.span),
             "zero_fill": "yes" if plan.split_rows else "no",
             "cut_row_sum": cut_row_sum(slices, aligned),
             "long_rows": long_rows_note(indptr, plan, fit_long),
             "block_threads": str(32 * block), "grid_blocks": str(blocks),
             "column_tiles": str(tiles), "sm_count": str(sm_count),
             "index_dtype": np.dtype(_gpu.INDEX_DTYPES[index_bytes]).name,
             "value_dtype": value_dtype,
             "slice_rule": ("a row a lane (ELL)" if ell else
                            f"S = {slice_nnz} (given)" if slice_nnz else
                            f"S = max(32, round_up({SLICE_MEAN_FACTOR} x nnz / rows, 32))"),
             "tile_rule": (f"C = {tile_cols} (given), A's pairs read once per column tile"
                           if tile_cols is not None else
                           f"C = smallest power of two >= k, at most {MAX_TILE_COLS}")}
    if ell:
        notes.update(ell_width=str(ell_width), pointer_rounds="0")
    return ColMajorPlan(name, tile, plan, blocks, tiles, block, notes, slices.span, ell,
                        ell_width)


LAUNCH_BOUND_MINB = 1
"""``__launch_bounds__(256)`` of spmm_colmajor.cu: no minimum of blocks, so the cap is the
hardware's (65,536 / 256 = 256 registers a thread; the float32 k = 8 instance uses 61)."""


def colmajor_launch(host: ColMajorPlan, registers: int | None = None):
    """A colmajor plan as the SpMM time model's launch (``model.spmm_predict``, column-major
    X): 32 slices a warp (a lane each), one group a slice, C columns a slab (grid.y = the
    column tiles), C scalar loads a nonzero (VEC 1), BATCH X rows in flight a lane, and a
    round trip for pairs once a lane has used the 32-byte sector of its indices and values
    (``32 / max(index, value bytes)`` pairs: the loads between hit L1). Registers: the
    compiled kernel's, else the launch bound's cap (:data:`LAUNCH_BOUND_MINB`).

    Narrower tiles (``tile_cols``) are the same fields at their C: k = 8, C = 1 -> slab_cols
    1, slabs 8, chunks 1, BATCH 8: A's pairs streamed 8 times, 8x the warps, each lane's X
    rounds ceil(L / 8) instead of ceil(L / 2); the k gathers a nonzero makes are the same."""
    from sparsescope.model.spmm_predict import SpmmLaunch, plan_fields

    tile, batch = host.tile
    fields = plan_fields(host.plan, host.notes, registers, LAUNCH_BOUND_MINB)
    widest = max(fields["index_bytes"], fields["value_bytes"])
    return SpmmLaunch(
        kernel=host.kernel, slices_per_warp=32, groups_per_slice=1, slab_cols=tile,
        slabs=host.tiles, vec=1, chunks=tile, stage_pairs=max(1, 32 // widest), batch=batch,
        block_warps=host.warps, x_layout="col", pointer_rounds=0 if host.ell else 1,
        ell_width=host.ell_width, walks_padding=False, label=f"colmajor {host.kernel}",
        **fields)


@dataclass
class PreparedColMajor:
    rows: int
    cols: int
    k: int
    host: ColMajorPlan
    slice_ptr: Any
    slice_row: Any
    indices: Any
    data: Any
    x: Any
    """X stored k x cols, C-ordered: column-major X."""
    y: Any
    """Y stored k x rows, C-ordered: column-major Y."""
    working_set_bytes: int
    function: Any = None
    """The compiled kernel, resolved once by ``prepare`` (a per-call lookup of the module and
    its function cost host time on every timed call); None for a matrix without rows."""
    grid: tuple[int, int] = (1, 1)
    block: tuple[int] = (32,)
    args: tuple = ()
    """The kernel's arguments, built once by ``prepare`` (the NumPy scalars too)."""


class SpmmCudaColMajor(EllRowsTraffic, HostPlannedKernel):
    name = "spmm-cuda-colmajor"
    SOURCE = SOURCE
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own CSR SpMM: column-major X and Y, a lane per row slice, C columns a "
                    "thread (NVRTC)")

    def __init__(self, *, warps: int | None = None, min_slice: int | None = None,
                 slice_nnz: int | None = None, batch: int | None = None,
                 tile_cols: int | None = None, aligned: int = 1, fit_long: int = 0,
                 ell: int = 0, max_padding: float | None = None) -> None:
        self.ell = bool(ell)
        """A as row-major ELL, a lane a row, no slice pointers (:func:`plan_colmajor`);
        declined above ``max_padding`` stored pairs a nonzero (None:
        ``spmm_ell_format.MAX_PADDING``)."""
        if self.ell:   # a bad variant fails before any case
            refuse_row_cuts(slice_nnz=slice_nnz, min_slice=min_slice, fit_long=bool(fit_long))
        self.max_padding = max_padding
        self.aligned = bool(aligned)
        """Rows of at most a warp of slices kept inside one warp
        (``spmm_cuda.warp_aligned_slices``), else the plain slices with atomics and a zero
        fill (``aligned=0``: to compare)."""
        self.fit_long = bool(fit_long)
        """Rows of more than 32 slices cut into a warp of longer ones
        (``spmm_cuda.warp_fitted_sizes``): every row inside its warp, one launch."""
        self.warps = warps
        self.min_slice = min_slice
        self.slice_nnz = slice_nnz
        """S as given (:func:`short_slices`), else the slice rule's."""
        self.batch = batch
        """BATCH as given, else :func:`colmajor_tile`'s."""
        self.tile_cols = tile_cols
        """C as given (narrower tiles, :func:`narrow_tile_cols`), else :func:`colmajor_tile`'s;
        a k whose rule gives a narrower C than this is skipped (:meth:`unsupported_params`)."""
        if batch is not None or tile_cols is not None:
            # validated here (at the widest k): a bad variant fails before any case
            colmajor_tile(MAX_TILE_COLS, batch, tile_cols)

    def unsupported_params(self, case: OpCase) -> str:
        if case.params.layout != "col":
            return ("the colmajor SpMM kernel reads column-major X only (layout=row: "
                    "spmm-cuda-rowgroup)")
        if self.tile_cols is not None:
            try:
                colmajor_tile(case.params.k, self.batch, self.tile_cols)
            except ValueError as exc:
                return str(exc)
        return ell_declined(case.matrix.indptr, self.max_padding) if self.ell else ""

    def plan(self, case: OpCase, value_dtype: str, index_bytes: int,
             sm_count: int) -> ColMajorPlan:
        csr = case.matrix
        return plan_colmajor(csr.indptr, csr.nnz, case.params.k, value_dtype, index_bytes,
                             sm_count, warps=self.warps, min_slice=self.min_slice,
                             slice_nnz=self.slice_nnz, batch=self.batch,
                             tile_cols=self.tile_cols, aligned=self.aligned,
                             fit_long=self.fit_long, ell=self.ell)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedColMajor:
        csr, k = case.matrix, case.params.k
        host = self.plan(case, value_dtype, index_bytes, _gpu.device_sm_count())
        slice_ptr, slice_row, indices, data = upload_pairs(host, csr, value_dtype, index_bytes)
        rows, cols = csr.shape
        x, y = upload_dense(case.inputs, value_dtype, "col", rows)   # k x cols, k x rows
        function = _gpu.raw_module(SOURCE, (host.kernel,)).get_function(host.kernel) \
            if rows else None
        args = (np.int64(host.plan.n_slices), np.int64(rows), np.int64(cols), np.int32(k),
                np.int32(host.plan.slice_row is not None), np.int32(host.span),
                slice_ptr, slice_row, indices, data, x, y, np.int32(host.ell_width))
        return PreparedColMajor(
            rows=rows, cols=cols, k=k, host=host, slice_ptr=slice_ptr,
            slice_row=slice_row, indices=indices, data=data, x=x, y=y,
            working_set_bytes=case.traffic.compulsory_bytes, function=function,
            grid=(host.blocks, host.tiles), block=(32 * host.warps,), args=args)

    def _launch(self, p: PreparedColMajor) -> None:
        """The optional zero fill and one kernel call: the function and its arguments were
        resolved by ``prepare`` (Y is filled in place, so the arguments stay valid)."""
        if p.host.plan.split_rows:
            zero_fill_async(p.y)
        if p.function is not None:
            p.function(p.grid, p.block, p.args)

    def run(self, prepared: PreparedColMajor) -> np.ndarray:
        self._launch(prepared)
        return host_output(prepared.y, "col")

    def model_launch(self, host: ColMajorPlan, registers: int | None):
        return colmajor_launch(host, registers)
