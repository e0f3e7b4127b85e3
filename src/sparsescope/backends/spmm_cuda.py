"""sparsescope's own CSR SpMM kernel (``backends/kernels/spmm_rowwarp.cu``), run through CuPy.

``spmm-cuda-rowwarp``: X row-major, one warp per row slice, k-wide vector loads of X's rows
(see the kernel's header for the lane layout). Two host-side choices, both pure functions
tested without a GPU and recorded in the case's notes:

* the template (:func:`launch_shape`): VEC values per load (4, 2 or 1 dividing k; 2 at most
  for float64, whose 32-byte vectors have no single load), GROUP lanes per nonzero (smallest
  power of two covering k / VEC, at most 32) and CHUNKS loads per lane (k > 32 x VEC);
* the row slices (:func:`slice_plan`): rows are cut into runs of at most S nonzeros,
  ``S = max(1024, round_up(nnz / (SMs x 8 warps), 32))``: a long row (power-law matrices)
  is shared by several warps, so one row no longer finishes last by itself; rows under 1,024
  nonzeros (every DLMC layer) stay whole (:data:`MIN_SLICE_NNZ`). A cut row is summed with
  atomicAdd into a zero-filled Y (one memset more per call); an uncut row is stored directly;
* the pipeline (:func:`pipeline`): DEPTH chunks of 32 (col, val) pairs loaded at once and
  BATCH X rows gathered per lane before their FMAs (the kernel's header says why);
* the block (:func:`warps_per_block`): as many warps as spread the slices over every SM, at
  most 8 -- 512 rows in blocks of 8 warps would leave 68 of 132 SMs idle;
* the column slab (:func:`choose_slab`): the grid's y dimension splits k into slabs of 32
  columns: k / 32 times the warps, and an X[:, slab] small enough for an SM's L1.

The choices are constructor arguments (``depth``, ``warps``, ``min_slice``, ``slab``), so a sweep
can time variants of the one backend; the registered instance uses the defaults.

Y is allocated once per prepared case and reused, so :meth:`poison_output` can fill it with NaN.
Column-major X is not supported by this kernel (it would need one sector per value); those
cases are skipped with that reason.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.ops.base import OpCase
from sparsescope.timing.types import Measurement, TimingConfig

SOURCE = "spmm_rowwarp.cu"
MAX_WARPS_PER_BLOCK = 8
"""The kernel's ``__launch_bounds__(256, 2)``."""
PREFETCH_DEPTH = 4
"""DEPTH for GROUP <= 16 (k <= 64 in float32); a whole-warp nonzero (GROUP 32) gathers 32 X
rows per chunk already, so one chunk a stage suffices there (and more spills registers)."""
X_LOADS_IN_FLIGHT = 8
"""BATCH x CHUNKS vector loads of X in flight per lane (32 registers of X values)."""
TARGET_WARPS_PER_SM = 8
"""Slices aimed at per SM: a quarter of Hopper's 64 resident warps, enough to cover latency
with several loads in flight per warp, few enough that large matrices are not cut at all."""
MIN_SLICE_NNZ = 1024
"""Rows shorter than this are never cut: 32 chunks of 32 nonzeros, each costing about one L2
round trip of X gathers (the next chunk's indices are prefetched), take ~10 us; below that the
zero fill (one more launch) and the atomics cost more than the parallelism they buy. So the
DLMC layers (rows of 77-383 nonzeros) run a row per warp, and only long rows of power-law
matrices are cut. Checked on the H200 (results/h200/spmm/README.md, launch sweep): at k = 8
cutting the DLMC rows (floors 32 and 128) is slower, as predicted; at k = 64 it is faster on
the two larger layers, where the gathers per row outweigh the zero fill -- a k-dependent floor
is the next step (not taken: the committed measurement ran this rule)."""
SLICE_UNIT = 32
WARP = 32
"""Lanes a warp: a row of at most this many slices can be summed inside one warp."""
SLAB_COLS = 32
"""Columns per slab of :func:`choose_slab`'s rule."""
MAX_CHUNKS = 8


def launch_shape(k: int, value_dtype: str) -> tuple[int, int, int]:
    """(VEC, GROUP, CHUNKS) for k columns::

        VEC    = largest of (4, 2, 1) dividing k, at most 16 bytes per load (2 for float64)
        GROUP  = smallest power of two >= ceil(k / VEC), at most 32
        CHUNKS = ceil(ceil(k / VEC) / GROUP)

    k = 1 -> (1, 1, 1): a 32-lane CSR-vector SpMV; k = 8 -> (4, 2, 1); k = 64 -> (4, 16, 1);
    k = 256 -> (4, 32, 2); k = 6 -> (2, 4, 1); k = 255 -> (1, 32, 8).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    widest = 4 if value_dtype == "float32" else 2
    vec = next(v for v in (4, 2, 1) if v <= widest and k % v == 0)
    lanes = -(-k // vec)
    group = 1
    while group < lanes and group < 32:
        group *= 2
    return vec, group, -(-lanes // group)


def choose_slab(k: int, slab: int | None = None) -> int:
    """Columns per slab (``slab`` overrides; it must divide k)::

        SLAB_COLS   when k > SLAB_COLS and SLAB_COLS divides k   (k / 32 slabs)
        k           otherwise (no slabs)

    Narrow slabs do two things: k / 32 times the warps (a DLMC layer's 128-512 rows alone
    leave most of 132 SMs idle) and an X[:, slab] of cols x 32 values that an SM's L1 holds
    (128 KB for 1,024 columns) instead of one fetched from L2 per nonzero. Measured on the
    H200 (results/h200/spmm/slabs): the best width on 5 of the 6 dlmc3 cases at k = 64 and 256,
    and 18% behind 64-column slabs on the sixth (dlmc-512x1024, k = 256).
    """
    if slab is not None:
        if slab < 1 or k % slab:
            raise ValueError(f"slab must divide k = {k}, got {slab}")
        return slab
    return SLAB_COLS if k > SLAB_COLS and k % SLAB_COLS == 0 else k


def pipeline(shape: tuple[int, int, int], depth: int | None = None) -> tuple[int, int]:
    """(DEPTH, BATCH) for a launch shape (VEC, GROUP, CHUNKS)::

        DEPTH = PREFETCH_DEPTH if GROUP <= 16 else 1        (``depth`` overrides)
        BATCH = min(DEPTH x GROUP, max(1, X_LOADS_IN_FLIGHT // CHUNKS))

    k = 1 -> (4, 4); k = 8 -> (4, 8); k = 64 -> (4, 8); k = 256 -> (1, 4); k = 255 -> (1, 1).
    Both powers of two, so BATCH divides DEPTH x GROUP as the kernel asserts.
    """
    _, group, chunks = shape
    if depth is None:
        depth = PREFETCH_DEPTH if group <= 16 else 1
    if depth < 1 or depth & (depth - 1):
        raise ValueError(f"depth must be a power of two >= 1, got {depth}")
    return depth, min(depth * group, max(1, X_LOADS_IN_FLIGHT // chunks))


def warps_per_block(n_slices: int, sm_count: int, warps: int | None = None) -> int:
    """Warps a block: the smallest power of two >= ceil(slices / SMs), in [1, 8] (``warps``
    overrides). 512 slices on 132 SMs -> 4 (128 blocks); 100,000 -> 8; 100 -> 1.

    The H200 sweep (results/h200/spmm/README.md) did not bear out the gain this rule was
    written for: blocks of 8 warps on fewer SMs were a few per cent faster on the DLMC layers,
    plausibly because warps on one SM share X's rows in its L1."""
    if warps is not None:
        if not 1 <= warps <= MAX_WARPS_PER_BLOCK:
            raise ValueError(f"warps must be in [1, {MAX_WARPS_PER_BLOCK}], got {warps}")
        return warps
    need = -(-max(1, n_slices) // max(1, sm_count))
    chosen = 1
    while chosen < need and chosen < MAX_WARPS_PER_BLOCK:
        chosen *= 2
    return chosen


def choose_slice_nnz(nnz: int, sm_count: int, min_slice: int | None = None,
                     per_sm: int = TARGET_WARPS_PER_SM) -> int:
    """S = max(MIN_SLICE_NNZ, round_up(ceil(nnz / (sm_count x per_sm)), 32)), ``per_sm``
    slices aimed at per SM (rowwarp: TARGET_WARPS_PER_SM)."""
    floor = MIN_SLICE_NNZ if min_slice is None else min_slice
    target = max(1, sm_count * per_sm)
    per = -(-nnz // target)
    return max(floor, SLICE_UNIT, -(-per // SLICE_UNIT) * SLICE_UNIT)


@dataclass(frozen=True)
class SlicePlan:
    """How the rows are cut into warps' slices."""

    slice_nnz: int
    """S: most nonzeros per slice (a row fitted to a warp of slices has longer ones:
    ``slice_plan``'s ``row_slice_nnz``)."""
    slice_ptr: np.ndarray
    """n_slices + 1 offsets into the column and value arrays (int64)."""
    slice_row: np.ndarray | None
    """Row of each slice, -(row + 1) for a row cut into several; None when no row is cut."""
    split_rows: int
    """Rows cut into more than one slice (their Y rows are zero-filled and atomically summed)."""

    @property
    def n_slices(self) -> int:
        return int(self.slice_ptr.size - 1)


def mean_row_slice(rows: int, nnz: int, unit: int) -> int:
    """A slice of about the mean row, in whole units of ``unit`` pairs (at least one)::

        S = max(unit, round_up(ceil(nnz / rows), unit))

    677 rows, 7,326 nonzeros (mean 10.8), unit 8 -> 16; unit 4 -> 12; no rows -> unit."""
    mean = -(-max(0, nnz) // max(1, rows))
    return max(unit, -(-mean // unit) * unit)


def slice_plan(indptr: np.ndarray, slice_nnz: int,
               row_slice_nnz: np.ndarray | None = None) -> SlicePlan:
    """Cut every row into ``max(1, ceil(len / S))`` consecutive slices (an empty row keeps one
    empty slice, which stores its zero row). Slices are consecutive in the nonzero arrays, so
    the slice pointers are each slice's start plus the final nnz. ``row_slice_nnz``: each
    row's own S instead (:func:`warp_fitted_sizes`: long rows in longer slices);
    rows [0:2], [2:12] with sizes (4, 5) -> slices [0:2], [2:7], [7:12]."""
    indptr = np.asarray(indptr, dtype=np.int64)
    lengths = np.diff(indptr)
    sizes = (np.int64(slice_nnz) if row_slice_nnz is None
             else np.asarray(row_slice_nnz, dtype=np.int64))
    pieces = np.maximum(1, -(-lengths // sizes))
    if (pieces == 1).all():
        return SlicePlan(slice_nnz, indptr.copy(), None, 0)
    rows = np.repeat(np.arange(lengths.size, dtype=np.int64), pieces)
    first = np.cumsum(pieces) - pieces
    within = np.arange(rows.size, dtype=np.int64) - np.repeat(first, pieces)
    begins = indptr[rows] + within * (sizes if row_slice_nnz is None else sizes[rows])
    cut = pieces[rows] > 1
    slice_row = np.where(cut, -(rows + 1), rows)
    return SlicePlan(slice_nnz, np.append(begins, indptr[-1]), slice_row,
                     int((pieces > 1).sum()))


@dataclass(frozen=True)
class WarpSlices:
    """Slices laid out so that every row of at most a warp of slices lies inside one warp."""

    plan: SlicePlan
    """The slices, pads included; ``split_rows`` counts the rows whose lanes add with atomics
    into a zeroed Y (none where the rows are kept inside their warps)."""
    cut_rows: int
    """Rows cut into several slices, inside a warp or across warps."""
    pads: int
    """Empty slices put before rows that would have straddled two warps."""
    span: int
    """The kernel's scan reach: the smallest power of two >= the most slices of a row kept
    inside a warp; 32 or 1 in the plain layout (:func:`unaligned_slices`); 1: no scan."""


MAX_ALIGNED_CUT_ROWS = 1 << 18
"""Most rows a plan keeps inside their warps (:func:`warp_aligned_slices`, a Python loop over
them: about 0.1 s at this many). Beyond, the plain layout: a call of that many cut rows is
hundreds of microseconds, where the zero fill's launch is a small share."""


def warp_fitted_sizes(indptr: np.ndarray, slice_nnz: int, unit: int,
                      capacity: int = WARP) -> np.ndarray | None:
    """Each row's slice length where the rows longer than a unit of slices are fitted to one
    unit (``capacity`` slices: the 32 lanes of a warp for colmajor's ``fit_long``, rowgroup's
    groups of a block for its ``block_sum``): S for a row of at most ``capacity x S``
    nonzeros, else its length over ``capacity`` rounded up to whole batches (``unit``
    pairs)::

        S_row = S                                         if len <= capacity x S
              = round_up(ceil(len / capacity), unit)      else  (ceil(len / S_row) <= capacity)

    None where no row is that long. S = 8, unit 4: rows of 10 and 632 -> (8, 20) (632 / 32 =
    19.75 -> 20: 32 slices, the last of 12); 256 -> 8 (exactly 32 slices, not fitted).

    Why: one row longer than 32 slices made the whole matrix take the plain layout (every cut
    row an atomic, Y zero-filled first: a second launch). Fitted, every row stays inside one
    warp: the scan sums it and the call is one launch. The cost: that warp's lanes walk the
    long slices (reorientation_1, 677 rows, one of 632 nonzeros: 5 rounds of 4 pairs against
    2 in 8-pair slices), which the trial weighs against the zero fill. On an H200 (8-pair
    slices, results/h200/real-dev/2026-11-28-fit-long/pair_fit_long.md): rows of a few hundred
    nonzeros paid (bp_1200, rajat19, tumorAntiAngiogenesis_2: 0.73-0.81 of the time), arrow's
    46,500-nonzero row in 32 lanes ran 27x slower."""
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    long = lengths > capacity * slice_nnz
    if not long.any():
        return None
    sizes = np.full(lengths.size, slice_nnz, dtype=np.int64)
    need = -(-lengths[long] // capacity)
    sizes[long] = -(-need // unit) * unit
    return sizes


def warp_aligned_slices(indptr: np.ndarray, slice_nnz: int, fit_unit: int | None = None,
                        capacity: int = WARP) -> WarpSlices | None:
    """Cut each row into ``p = max(1, ceil(len / S))`` consecutive slices, as
    :func:`~sparsescope.backends.spmm_cuda.slice_plan` does, then move each row of ``1 < p <=
    32`` slices that would straddle a warp boundary to the next warp's first lane::

        lane = (first slice of the row, pads before it included) mod 32
        lane + p > 32  ->  32 - lane empty pad slices before the row

    so that the warp's segmented scan sums such a row whole and its last lane stores Y (no
    atomics, no zero fill: one launch). Every row keeps ``slice_row = row``; a pad is
    ``-(rows + 1)`` (``spmm_colmajor.cu``).

    30 rows of 1 nonzero, then rows of 3, 1, 1 at S = 1: the row of 3 slices would take lanes
    30-32 -> 2 pads (lanes 30, 31), the row at lanes 32-34, slice_row [..., 29, -34, -34, 30,
    30, 30, 31, 32]; span 4, split_rows 0. A row of 40 slices: None (it spans warps). The
    pads cost idle lanes: at most p - 1 before a row of p slices, and only where it would
    straddle.

    None where a row has more than 32 slices (it needs the zero fill whatever the layout: the
    plain one, :func:`unaligned_slices`, serves it) or more than
    :data:`MAX_ALIGNED_CUT_ROWS` rows are cut. With ``fit_unit`` (pairs a batch) such rows
    are cut into a warp of longer slices instead (:func:`warp_fitted_sizes`). ``capacity``
    replaces the warp's 32 slices by another unit's (rowgroup's groups of a block, summed in
    shared memory)."""
    sizes = warp_fitted_sizes(indptr, slice_nnz, fit_unit, capacity) if fit_unit else None
    base = slice_plan(indptr, slice_nnz, sizes)
    if not base.split_rows:
        return WarpSlices(base, 0, 0, 1)
    indptr = np.asarray(indptr, dtype=np.int64)
    n = indptr.size - 1
    row_of = np.where(base.slice_row < 0, -base.slice_row - 1, base.slice_row)
    pieces = np.bincount(row_of, minlength=n)
    if pieces.max() > capacity or base.split_rows > MAX_ALIGNED_CUT_ROWS:
        return None
    first = np.cumsum(pieces) - pieces   # each row's first slice before any pad
    pad_rows, pad_counts = [], []
    shift = 0   # pads placed so far: a sequential sum (each pad moves every later row)
    inside = np.flatnonzero(pieces > 1)
    for row, at, p in zip(inside.tolist(), first[inside].tolist(), pieces[inside].tolist(),
                          strict=True):
        lane = (at + shift) % capacity
        if lane + p > capacity:
            pad_rows.append(row)
            pad_counts.append(capacity - lane)
            shift += capacity - lane
    padded = np.repeat(np.asarray(pad_rows, dtype=np.int64), pad_counts)
    at = first[padded]   # each pad goes before its row's first slice
    slice_ptr = np.insert(base.slice_ptr, at, indptr[padded])
    slice_row = np.insert(row_of, at, -(n + 1))
    plan = SlicePlan(slice_nnz, slice_ptr, slice_row, 0)
    return WarpSlices(plan, base.split_rows, shift, pow2_at_least(int(pieces.max()), capacity))


def kernel_name(value_dtype: str, index_bytes: int, shape: tuple[int, int, int],
                stages: tuple[int, int] | None = None) -> str:
    """The template instance, e.g. ``spmm_rowwarp<float, int, 4, 2, 1, 4, 8>``."""
    vec, group, chunks = shape
    depth, batch = stages if stages is not None else pipeline(shape)
    return (f"spmm_rowwarp<{_gpu.CUDA_VALUE_TYPES[value_dtype]}, "
            f"{_gpu.CUDA_INDEX_TYPES[index_bytes]}, {vec}, {group}, {chunks}, {depth}, {batch}>")


LAUNCH_BOUND_MINB = 2
"""``__launch_bounds__(256, 2)`` of spmm_rowwarp.cu: at most 128 registers a thread."""


@dataclass(frozen=True)
class RowWarpPlan:
    """Everything a rowwarp launch needs, planned on the host (no device)."""

    kernel: str
    shape: tuple[int, int, int]
    stages: tuple[int, int]
    slab: int
    plan: SlicePlan
    grid: int
    warps: int
    notes: dict[str, str]


def plan_rowwarp(indptr: np.ndarray, nnz: int, k: int, value_dtype: str, index_bytes: int,
                 sm_count: int, *, depth: int | None = None, warps: int | None = None,
                 min_slice: int | None = None, slab: int | None = None) -> RowWarpPlan:
    """The whole host plan of one rowwarp call (pure: row pointers in, launch and notes out)."""
    slab = choose_slab(k, slab)
    shape = launch_shape(slab, value_dtype)
    floor = MIN_SLICE_NNZ if min_slice is None else min_slice
    plan = slice_plan(indptr, choose_slice_nnz(nnz, sm_count, floor))
    stages = pipeline(shape, depth)
    name = kernel_name(value_dtype, index_bytes, shape, stages)
    block_warps = warps_per_block(plan.n_slices, sm_count, warps)
    grid = max(1, -(-plan.n_slices // block_warps))
    notes = {"kernel": name, "vec": str(shape[0]), "lanes_per_nonzero": str(shape[1]),
             "loads_per_lane": str(shape[2]), "prefetch_chunks": str(stages[0]),
             "x_rows_per_batch": str(stages[1]), "slice_nnz": str(plan.slice_nnz),
             "slices": str(plan.n_slices), "split_rows": str(plan.split_rows),
             "zero_fill": "yes" if plan.split_rows else "no",
             "block_threads": str(32 * block_warps), "grid_blocks": str(grid),
             "slab_cols": str(slab), "slabs": str(k // slab),
             "sm_count": str(sm_count),
             "index_dtype": np.dtype(_gpu.INDEX_DTYPES[index_bytes]).name,
             "value_dtype": value_dtype,
             "slice_rule": f"S = max({floor}, round_up(nnz / ({sm_count} SMs x "
                           f"{TARGET_WARPS_PER_SM} warps), 32))"}
    return RowWarpPlan(name, shape, stages, slab, plan, grid, block_warps, notes)


def compiled_registers(source: str, kernel: str) -> int | None:
    """Registers a thread of the compiled ``kernel`` uses (CuPy's function attribute), or
    None where it cannot be read."""
    try:
        return int(_gpu.raw_module(source, (kernel,)).get_function(kernel).num_regs)
    except Exception:  # no device, or an attribute this CuPy lacks: the launch bound's cap
        return None


def rowwarp_launch(host: RowWarpPlan, registers: int | None = None):
    """A rowwarp plan as the SpMM time model's launch: one slice a warp, its 32 / GROUP groups
    splitting the slice, 32 x DEPTH pairs a stage; registers: the compiled kernel's, else
    the cap of ``__launch_bounds__(256, 2)`` (128)."""
    from sparsescope.model.spmm_predict import SpmmLaunch, plan_fields

    vec, group, chunks = host.shape
    depth, batch = host.stages
    return SpmmLaunch(
        kernel=host.kernel, slices_per_warp=1, groups_per_slice=32 // group,
        slab_cols=host.slab, slabs=int(host.notes["slabs"]), vec=vec, chunks=chunks,
        stage_pairs=32 * depth, batch=batch, block_warps=host.warps,
        label=f"rowwarp {host.kernel}",
        **plan_fields(host.plan, host.notes, registers, LAUNCH_BOUND_MINB))


class OwnSpmmKernel(OpBackend):
    """What every own SpMM kernel backend shares: CuPy must see a GPU, Y is poisoned with NaN,
    the call is ``_launch`` (the subclass's), timed by CUDA events over the prepared working
    set, and a zero fill for cut rows. A prepared case has ``y`` and ``working_set_bytes``."""

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    @abstractmethod
    def _launch(self, prepared: Any) -> None:
        """One call of the kernel(s) on the prepared case (what ``run`` and ``time`` call)."""

    def poison_output(self, prepared: Any) -> bool:
        prepared.y.fill(np.nan)
        return True

    def run(self, prepared: Any) -> np.ndarray:
        self._launch(prepared)
        return prepared.y.get()

    def time(self, prepared: Any, config: TimingConfig) -> Measurement:
        from sparsescope.timing.cuda import time_cuda

        return time_cuda(lambda: self._launch(prepared), config, library="cupy",
                         working_set_bytes=prepared.working_set_bytes)

    def library_versions(self) -> dict[str, str]:
        return _gpu.cupy_kernel_versions()

    def use_model(self, model: Any) -> None:
        """Keep the device the time model predicts for (a ``context.DeviceContext``): a host
        plan (:meth:`host_plan_case`) is made for its SM limits."""
        self._model = model

    def host_plan_case(self, case: OpCase, value_dtype: str, index_bytes: int, sms: int):
        """(plain CSR's bytes, the launch) of ``case`` planned on the host for ``sms`` SMs
        (the cross-GPU what-if): registers at the launch bound's cap (no compiled kernel
        here); (None, None) for a case the kernel does not take (column-major X)."""
        if self.unsupported_params(case):
            return None, None
        rates = getattr(getattr(self, "_model", None), "rates", None)
        launch = self.host_launch(case, value_dtype, index_bytes, sms, rates)
        return (None, None) if launch is None else (case.csr_traffic, launch)

    def host_launch(self, case: OpCase, value_dtype: str, index_bytes: int, sms: int,
                    rates: Any) -> Any:
        """The model's launch of a host plan (``rates``: the device's, or None); None: the
        kernel cannot plan without its device."""
        return None


class HostPlannedKernel(OwnSpmmKernel):
    """An own kernel whose prepared case keeps its host plan as ``prepared.host`` (with the
    template instance ``kernel`` and the case's ``notes``), a plan the subclass's
    :meth:`model_launch` turns into the SpMM time model's launch: with the compiled kernel's
    registers once prepared, with the launch bound's cap on the host."""

    SOURCE = ""
    """The kernel's source file under ``backends/kernels`` (its compiled registers)."""

    @abstractmethod
    def plan(self, case: OpCase, value_dtype: str, index_bytes: int, sm_count: int) -> Any:
        """The host plan of ``case`` on ``sm_count`` SMs (pure)."""

    @abstractmethod
    def model_launch(self, host: Any, registers: int | None) -> Any:
        """The model's launch of host plan ``host`` (``registers`` None: the cap)."""

    def kernel_shape(self, case: OpCase, prepared: Any):
        """The launch for the SpMM time model, with the compiled kernel's registers."""
        if prepared is None:
            return None
        return self.model_launch(prepared.host,
                                 compiled_registers(self.SOURCE, prepared.host.kernel))

    def host_launch(self, case: OpCase, value_dtype: str, index_bytes: int, sms: int,
                    rates: Any) -> Any:
        return self.model_launch(self.plan(case, value_dtype, index_bytes, sms), None)

    def notes(self, prepared: Any) -> dict[str, str]:
        return dict(prepared.host.notes)


def upload_slices(plan: SlicePlan, index_dtype: Any) -> tuple[Any, Any]:
    """(slice pointers, slice rows) on the device at ``index_dtype``; the slice pointers stand
    in for the rows when no row is cut (the kernels never read them then)."""
    import cupy

    slice_ptr = cupy.asarray(plan.slice_ptr.astype(index_dtype))
    slice_row = (cupy.asarray(plan.slice_row.astype(index_dtype))
                 if plan.slice_row is not None else slice_ptr)
    return slice_ptr, slice_row


def upload_csr(csr: Any, value_dtype: str, index_bytes: int) -> tuple[Any, Any]:
    """(column indices, values) of ``csr`` on the device at the case's index and value types."""
    import cupy

    return (cupy.asarray(csr.indices.astype(_gpu.INDEX_DTYPES[index_bytes])),
            cupy.asarray(csr.data.astype(_gpu.VALUE_DTYPES[value_dtype])))


def upload_dense(inputs: Any, value_dtype: str, layout: str, rows: int) -> tuple[Any, Any]:
    """(X, a zero Y) on the device as the kernels read and write them: C-ordered ``k x cols``
    and ``k x rows`` for column-major X and Y (``layout`` col), ``cols x k`` and ``rows x
    k`` for row-major."""
    import cupy

    dtype = _gpu.VALUE_DTYPES[value_dtype]
    x = np.asarray(inputs, dtype=dtype)
    col = layout == "col"
    k = x.shape[1]
    return (cupy.asarray(np.ascontiguousarray(x.T if col else x)),
            cupy.zeros((k, rows) if col else (rows, k), dtype=dtype))


def host_output(y: Any, layout: str) -> np.ndarray:
    """Y from the device as ``rows x k`` (:func:`upload_dense`'s Y of either layout)."""
    out = y.get()
    return np.ascontiguousarray(out.T) if layout == "col" else out


def pow2_at_least(n: int, cap: int) -> int:
    """The smallest power of two >= ``n``, at most ``cap`` (itself a power of two); 1 for n
    <= 1. (13, 32) -> 16; (41, 32) -> 32; (3, 8) -> 4; (0, 8) -> 1."""
    p = 1
    while p < n and p < cap:
        p *= 2
    return p


def zero_fill_async(y: Any) -> None:
    """Zero Y on the current stream (rows cut into slices are summed into it atomically)."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    cupy.cuda.runtime.memsetAsync(y.data.ptr, 0, y.nbytes, stream.ptr)


@dataclass
class PreparedSpmmCuda:
    rows: int
    k: int
    kernel: str
    plan: SlicePlan
    grid: int
    block: int
    """Threads per block."""
    slab: int
    """Columns per slab: the grid's y dimension is k / slab."""
    slice_ptr: Any
    slice_row: Any
    """Device slice rows, or the slice pointers again when no row is cut (never read then)."""
    indices: Any
    data: Any
    x: Any
    y: Any
    working_set_bytes: int
    notes: dict[str, str]
    host: RowWarpPlan | None = None
    function: Any = None
    """The compiled kernel, resolved once by ``prepare``: a lookup of the module and its
    function on every timed call is host time inside a 5 us call's events."""
    args: tuple = ()
    """The kernel's arguments, built once by ``prepare`` (X and Y are written in place, so
    they stay valid)."""


class SpmmCudaRowWarp(OwnSpmmKernel):
    name = "spmm-cuda-rowwarp"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own CSR SpMM: row-major X, k-wide vector loads, a row slice per warp "
                    "(NVRTC)")

    def __init__(self, *, depth: int | None = None, warps: int | None = None,
                 min_slice: int | None = None, slab: int | None = None) -> None:
        self.depth = depth
        """DEPTH override (None: :func:`pipeline`'s rule)."""
        self.warps = warps
        """Warps per block override (None: :func:`warps_per_block`'s rule)."""
        self.min_slice = min_slice
        """Floor of S override (None: :data:`MIN_SLICE_NNZ`)."""
        self.slab = slab
        """Columns per slab override (None: :func:`choose_slab`'s rule; k: no slabs)."""

    def unsupported_params(self, case: OpCase) -> str:
        if case.params.layout != "row":
            return "the own SpMM kernel reads row-major X only (layout=col is not supported)"
        value_dtype = "float32" if case.traffic.value_bytes == 4 else "float64"
        k = case.params.k
        if self.slab is not None and k % self.slab:
            return f"slab {self.slab} does not divide k = {k}"
        slab = choose_slab(k, self.slab)
        _, _, chunks = launch_shape(slab, value_dtype)
        if chunks > MAX_CHUNKS:
            return f"k = {case.params.k} needs {chunks} loads per lane (at most {MAX_CHUNKS})"
        return ""

    def plan(self, case: OpCase, value_dtype: str, index_bytes: int,
             sm_count: int) -> RowWarpPlan:
        csr = case.matrix
        return plan_rowwarp(csr.indptr, csr.nnz, case.params.k, value_dtype, index_bytes,
                            sm_count, depth=self.depth, warps=self.warps,
                            min_slice=self.min_slice, slab=self.slab)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedSpmmCuda:
        import cupy

        csr, k = case.matrix, case.params.k
        dtype = _gpu.VALUE_DTYPES[value_dtype]
        host = self.plan(case, value_dtype, index_bytes, _gpu.device_sm_count())
        slice_ptr, slice_row = upload_slices(host.plan, _gpu.INDEX_DTYPES[index_bytes])
        x = cupy.asarray(np.ascontiguousarray(case.inputs, dtype=dtype))
        indices, data = upload_csr(csr, value_dtype, index_bytes)
        y = cupy.zeros((csr.shape[0], k), dtype=dtype)
        args = (np.int64(host.plan.n_slices), np.int32(k), np.int32(host.slab),
                np.int32(host.plan.split_rows > 0),
                slice_ptr, slice_row, indices, data, x, y)
        return PreparedSpmmCuda(
            rows=csr.shape[0], k=k, kernel=host.kernel, plan=host.plan, grid=host.grid,
            block=32 * host.warps, slab=host.slab, slice_ptr=slice_ptr, slice_row=slice_row,
            indices=indices, data=data, x=x, y=y,
            working_set_bytes=case.traffic.compulsory_bytes, notes=host.notes, host=host,
            function=_gpu.raw_module(SOURCE, (host.kernel,)).get_function(host.kernel),
            args=args)

    def kernel_shape(self, case: OpCase, prepared: PreparedSpmmCuda | None):
        """The launch for the SpMM time model (``model.spmm_predict``), with the compiled
        kernel's registers."""
        if prepared is None:
            return None
        return rowwarp_launch(prepared.host, compiled_registers(SOURCE, prepared.kernel))

    def host_launch(self, case: OpCase, value_dtype: str, index_bytes: int, sms: int,
                    rates: Any) -> Any:
        return rowwarp_launch(self.plan(case, value_dtype, index_bytes, sms), None)

    def _launch(self, p: PreparedSpmmCuda) -> None:
        """The optional zero fill and one kernel call, resolved by ``prepare``."""
        if p.plan.split_rows:
            zero_fill_async(p.y)
        p.function((p.grid, p.k // p.slab), (p.block,), p.args)

    def notes(self, prepared: PreparedSpmmCuda) -> dict[str, str]:
        return dict(prepared.notes)
