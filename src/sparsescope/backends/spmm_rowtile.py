"""``spmm-cuda-rowtile``: own SpMM that reuses X through shared memory, for dense-ish matrices
(pruned weights), row- or column-major X and Y (``backends/kernels/spmm_rowtile.cu``, whose
header argues the layout), run through CuPy.

A block owns a tile of R rows and a slice of KS = 32 VEC columns (grid (tiles, slices)); it
stages the X rows of each chunk of C columns of A its rows touch in shared memory once, and
its warps read them there for every nonzero. X then crosses the L2 once per (tile, chunk)
instead of once per nonzero (``model.rowtile``). Host choices, pure functions tested without a
GPU and recorded in the case's notes:

* :func:`~.spmm_rowtile_format.pack_rowtile`: the format, once per (matrix, R, C)
  (``format_cache.FORMATS``): each tile's nonzeros regrouped by chunk, a chunk no row of the
  tile touches left out;
* :func:`choose_tile`: (R, VEC) by the two floors they trade, from the shapes and the
  device's SM count and shared-memory-to-L2 bandwidth ratio (``model.rowtile.smem_per_l2``);
* :func:`launch_stages`: (STAGES, MINB): as many stages in flight as cost no resident block,
  and the blocks per SM the kernel's registers are bounded for;
* :func:`choose_splits`: S, the runs each tile's item chain is cut into (grid tiles x slices
  x S), so that the grid fills the device several blocks an SM deep; S > 1 zeroes Y first (a
  memset in the timed call) and adds the partial tiles atomically;
* :func:`rowtile_pays`: whether the staged X is less than the gathers' (auto's candidate).

Options (``spmm-cuda-rowtile[rows=32,ks=64,chunk=32,warps=8,stages=3,minb=4,split=4]``):
``rows`` R in :data:`TILE_ROWS`, ``ks`` in :data:`SLICE_COLS` (128 float32 only), ``chunk`` C
in :data:`CHUNK_ROWS`, ``warps`` in :data:`BLOCK_WARPS` (dividing R), ``stages`` 2 to 4,
``minb`` 1 to 8, ``split`` S 1 to :data:`MAX_SPLITS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability
from sparsescope.backends.spmm_cuda import HostPlannedKernel, host_output, upload_dense
from sparsescope.backends.spmm_rowtile_format import (  # noqa: F401  (re-exported)
    CHUNK_ROWS,
    TILE_ROWS,
    RowTileFormat,
    entries_array,
    item_counts,
    pack_rowtile,
    tile_x_rows,
)
from sparsescope.model.kernel_shape import (
    REGISTERS_PER_SM,
    SMEM_PER_SM,
    SMEM_RESERVED_PER_BLOCK,
)
from sparsescope.model.rowtile import (
    SMEM_BYTES_PER_CLOCK,
    copy_width,
    entry_bytes,
    rowtile_smem_bytes,
    rowtile_traffic,
    smem_per_l2,
)
from sparsescope.ops.base import OpCase

SOURCE = "spmm_rowtile.cu"
SLICE_COLS = (32, 64, 128)
"""KS = 32 VEC: a lane's VEC values (128: float4, float32 only)."""
DEFAULT_CHUNK = 32
"""C = 32: a stage of 8 KB of X (KS 64, float32) and at most R x 32 entries (8 KB for R = 32),
so three stages fit in 49 KB and an SM still holds the four blocks its registers allow; a chunk
of 32 columns at 80 % sparsity gives each row about 6 entries an item, whose loop setup
(ROW_INSTRUCTIONS of ``model.rowtile``, 512 of the item's ~2,400 warp instructions at R = 32)
stays under a third of the item's work."""
BLOCK_WARPS = (4, 8, 16)
DEFAULT_WARPS = 8
"""Warps a block: 8 (256 threads) leave R = 8 one row a warp and R = 64 eight."""
MAX_VEC = {"float32": 4, "float64": 2}
MAX_SMEM_BYTES = 227 * 1024
"""Dynamic shared memory a block may opt in to (sm_90, sm_80: 227 KB, 163 KB)."""
OPT_IN_BYTES = 48 * 1024
"""Above this a launch must raise the kernel's dynamic shared-memory limit first."""
SM_THREADS = 2048
BASE_REGISTERS = 56
"""Registers a thread of the kernel needs besides its accumulators (the compiled instances,
nvcc 13.0 sm_90, R 8-64, VEC 1-4, both layouts and value types, without a bound: 44-65 with
the accumulators taken out); :func:`launch_stages` bounds the rest."""
STAGES = (2, 3, 4)
"""Items a block has in shared memory at once (one multiplied, the others on their way)."""
MAX_SPLITS = 64
"""The most runs a tile's items are cut into (a given ``split``; the rule stops at the most
items a tile holds, and at this)."""


def choose_splits(tile_items, slices: int, sm_count: int, resident: int,
                  max_splits: int = MAX_SPLITS) -> tuple[int, dict[int, int]]:
    """(S, the chain of each S considered): the runs each tile's items are cut into. A block
    walks its items one after another, each an L2 round trip and a barrier, so a grid of
    ``tiles x slices`` blocks that holds one block an SM leaves the SM nothing to overlap that
    chain with. Cutting each tile's n items into S runs gives S times the blocks, each 1 / S of
    the chain; the SMs hold ``slots = SMs x resident`` of them at once. S minimises the time
    of the longest chains, counted in round trips (a block's run starts with one more, its
    prologue's: more waves of shorter runs are not free)::

        chain(S) = ceil(tiles x slices x S / slots) x (ceil(n_max / S) + 1)
        S in 1 .. min(n_max, max_splits); ties: the smaller S (fewer atomics, no memset at 1)

    Hand-worked: 1,024-square 80 % weight, k 256, R 32, KS 64: 32 tiles x 4 slices, 32 items
    each, 132 SMs x 4: S 1 -> 33, 2 -> 17, 4 -> 9 (512 blocks), 5 -> 2 waves x 8 = 16: S = 4.
    4,096-square, R 32, KS 128: 128 x 2 blocks, 128 items: S 2 -> 65, 3 -> 2 x 44 = 88, 4 ->
    2 x 33 = 66: S = 2. No item at all: 1."""
    items = np.asarray(tile_items, dtype=np.int64)
    n_max = int(items.max()) if items.size else 0
    base = max(1, int(items.size) * slices)
    slots = max(1, sm_count * resident)
    chains = {s: -(-base * s // slots) * (-(-n_max // s) + 1)
              for s in range(1, max(1, min(n_max, max_splits)) + 1)}
    return min(chains, key=lambda s: (chains[s], s)), chains


def vec_options(k: int, value_dtype: str, layout: str, ks: int | None = None) -> tuple[int, ...]:
    """The VECs a case may run (widest first): at most MAX_VEC, at most ceil(k / 32) (no slice
    wider than k needs), dividing k where X and Y are row-major (their vector copies and
    stores must stay aligned); ``ks``: that one only, if allowed. float32 row k 256 -> (4, 2,
    1); k 100 -> (4, 2, 1); k 64 -> (2, 1); k 33 -> (1,); column-major k 33 -> (2, 1); float64
    k 256 -> (2, 1)."""
    widest = min(MAX_VEC[value_dtype], max(1, -(-k // 32)))
    out = tuple(v for v in (4, 2, 1) if v <= widest and (layout == "col" or k % v == 0))
    if ks is not None:
        out = tuple(v for v in out if 32 * v == ks) or ()
    return out


def choose_tile(indptr, indices, cols: int, k: int, value_dtype: str, layout: str,
                sm_count: int, rho: float, *, ks: int | None = None, chunk: int = DEFAULT_CHUNK,
                tile_rows: tuple[int, ...] = TILE_ROWS) -> tuple[int, int, dict]:
    """(R, VEC, the cost of each pair considered) for a case, R among ``tile_rows``: the pair
    of least

        cost = max(smem, l2)                     (clocks of the device)
        smem = nnz x slices x (KS x vb / 128 + entry share) / min(SMs, tiles x slices)
        l2   = rho x (x_rows(R) x k x vb + slices x nnz x entry bytes) / (128 x SMs)

    ``smem``: the wavefronts of the X reads (KS x vb / 128 a nonzero) and of the entry loads
    (1/2 float, 1 double) on the SMs that have a block (a grid smaller than the device leaves
    SMs idle); ``l2``: the X staged (:func:`tile_x_rows`: an upper bound) and the format read
    again by every slice, at the L2's bandwidth, ``rho`` = :func:`~sparsescope.model.rowtile.
    smem_per_l2` times slower than shared memory. Small R and narrow slices fill the SMs, large
    R stages less X: the least of the two floors' maximum. Ties: the larger R, then VEC.

    Hand-worked: 1,024 x 1,024, 209,716 nonzeros (80 % sparse, every tile spanning every
    column), k 256, float32 row-major, 132 SMs, rho 4: R 32 / VEC 2 -> 128 blocks, smem
    2,097,160 / 128 = 16,384, l2 4 x (33,554,432 + 6,710,912) / 16,896 = 9,532 -> 16,384,
    below R 16 / VEC 4 (16,682: its l2) and R 64 / VEC 1 (19,661: 128 blocks of 1.5 wavefronts
    a nonzero). At k 32 (VEC 1): R 8 -> 4,369 (its l2), below R 16 (4,915: its smem).
    """
    vb = 4 if value_dtype == "float32" else 8
    indptr = np.asarray(indptr, dtype=np.int64)
    n_rows, nnz = int(indptr.size - 1), int(indptr[-1]) if indptr.size else 0
    vecs = vec_options(k, value_dtype, layout, ks)
    if not vecs:
        raise ValueError(f"ks {ks} does not fit k = {k} ({value_dtype}, layout {layout})")
    share = 0.5 if vb == 4 else 1.0
    costs: dict = {}
    for r in tile_rows:
        x_rows = tile_x_rows(indptr, indices, cols, r, chunk)
        tiles = max(1, -(-n_rows // r))
        for vec in vecs:
            slices = -(-k // (32 * vec))
            waves = nnz * slices * (32 * vec * vb / SMEM_BYTES_PER_CLOCK + share)
            smem = waves / min(sm_count, tiles * slices)
            l2 = rho * (x_rows * k * vb + slices * nnz * entry_bytes(vb)) / (
                SMEM_BYTES_PER_CLOCK * sm_count)
            costs[(r, vec)] = max(smem, l2)
    best = min(costs, key=lambda rv: (costs[rv], -rv[0], -rv[1]))
    return best[0], best[1], costs


def rowtile_pays(indptr, indices, cols: int, tile_rows: int, chunk_rows: int) -> tuple[bool, str]:
    """Whether the kernel's staged X is less than the gathers' (auto's candidate rule), and
    why. A gather kernel requests each nonzero's X row slice, ``nnz x KS x vb`` bytes a slice;
    this one stages at most :func:`tile_x_rows` rows of ``KS x vb``. So it moves less X where

        tile_x_rows(R, C) < nnz

    -- the mean nonzeros per staged X row above one (``rows / R x cols < nnz`` with every
    chunk touched: the density above 1 / R). 1,024 x 1,024 at 80 % sparsity, R 32: 32 tiles x
    1,024 = 32,768 X rows < 209,716 nonzeros, it pays; at density 1 / 64 (16,384 nonzeros) it
    does not at R 32 (32,768), nor at R 64 (16,384, not below)."""
    x_rows = tile_x_rows(indptr, indices, cols, tile_rows, chunk_rows)
    nnz = int(np.asarray(indptr)[-1]) if np.asarray(indptr).size else 0
    pays = 0 < x_rows < nnz
    return pays, (f"{x_rows:,} X rows staged (tiles of {tile_rows}, chunks of {chunk_rows}) "
                  f"{'<' if pays else '>='} {nnz:,} nonzeros gathered")


def register_blocks(warps: int, vec: int, tile_rows: int, value_bytes: int) -> int:
    """Blocks an SM holds by threads and by the registers a thread needs, BASE_REGISTERS plus
    its accumulators (RPW x VEC values)::

        min(2,048 / threads, 65,536 / (threads x (56 + RPW x VEC x vb / 4)))     at least 1

    float32, R 32, VEC 2, 8 warps: min(8, 4) = 4 (64 registers); R 64, VEC 4: 2; float64 R 32,
    VEC 2: min(8, 3) = 3; R 8, VEC 1: 4."""
    threads = 32 * warps
    acc = (tile_rows // warps) * vec * value_bytes // 4
    by_registers = REGISTERS_PER_SM // (threads * (BASE_REGISTERS + acc))
    return max(1, min(SM_THREADS // threads, by_registers))


def launch_stages(value_bytes: int, tile_rows: int, vec: int, chunk_rows: int, warps: int,
                  col_major: bool, stages: int | None = None,
                  minb: int | None = None) -> tuple[int, int]:
    """(STAGES, MINB). STAGES: the most of 4, 3, 2 whose shared memory still lets an SM hold
    the blocks its registers do (:func:`register_blocks`) -- a deeper pipeline hides more of an
    L2 round trip behind short items, and costs nothing while shared memory is not what limits
    the blocks; MINB (``__launch_bounds__``): those blocks, or fewer where shared memory holds
    fewer (its registers then bounded no tighter than the blocks that fit)::

        smem blocks(S) = 228 KB / (bytes(S) + 1 KB)
        STAGES = max S with smem blocks(S) >= register blocks, else 2
        MINB   = min(smem blocks(STAGES), register blocks)

    float32, R 32, VEC 2, C 32, 8 warps: 4 by registers; 4 stages 65,856 B -> 3 blocks, 3 stages
    49,392 B -> 4: (3, 4). R 8, VEC 1: 4 stages of 6,176 B -> 9 blocks: (4, 4). float64 R 64,
    VEC 2, C 64: 2 stages 196,896 B -> 1 block: (2, 1). ``stages`` and ``minb``: as given."""
    reg = register_blocks(warps, vec, tile_rows, value_bytes)

    def smem_blocks(n: int) -> int:
        return SMEM_PER_SM // (rowtile_smem_bytes(value_bytes, tile_rows, vec, chunk_rows, n,
                                               col_major) + SMEM_RESERVED_PER_BLOCK)

    if stages is None:
        stages = next((n for n in sorted(STAGES, reverse=True) if smem_blocks(n) >= reg),
                      min(STAGES))
    return stages, minb or max(1, min(smem_blocks(stages), reg))


def rowtile_kernel_name(value_dtype: str, index_bytes: int, tile_rows: int, vec: int,
                        chunk_rows: int, warps: int, stages: int, col_major: bool,
                        minb: int) -> str:
    """The template instance, e.g. ``spmm_rowtile<float, int, 32, 2, 32, 8, 3, 0, 4>``."""
    return (f"spmm_rowtile<{_gpu.CUDA_VALUE_TYPES[value_dtype]}, "
            f"{_gpu.CUDA_INDEX_TYPES[index_bytes]}, {tile_rows}, {vec}, {chunk_rows}, {warps}, "
            f"{stages}, {int(col_major)}, {minb}>")


@dataclass(frozen=True)
class RowTilePlan:
    """Everything a launch needs, planned on the host (no device)."""

    kernel: str
    tile_rows: int
    vec: int
    chunk_rows: int
    warps: int
    stages: int
    minb: int
    layout: str
    k: int
    slices: int
    smem_bytes: int
    fmt: RowTileFormat
    value_dtype: str
    index_bytes: int
    notes: dict[str, str]
    splits: int = 1
    """S: runs each tile's items are cut into (grid.z); above 1 Y is zeroed and summed."""

    @property
    def tiles(self) -> int:
        return self.fmt.tiles


def check_options(rows: int | None, ks: int | None, chunk: int | None, warps: int | None,
                  minb: int | None, stages: int | None = None, split: int | None = None) -> None:
    """Raise ValueError for an option outside the module's sets (a variant fails before any
    case)."""
    for name, value, allowed in (("rows", rows, TILE_ROWS), ("ks", ks, SLICE_COLS),
                                 ("chunk", chunk, CHUNK_ROWS), ("warps", warps, BLOCK_WARPS),
                                 ("stages", stages, STAGES)):
        if value is not None and value not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}, got {value}")
    if rows is not None and rows % (warps or DEFAULT_WARPS):
        raise ValueError(f"rows {rows} is not a multiple of warps {warps or DEFAULT_WARPS}")
    if minb is not None and not 1 <= minb <= 8:
        raise ValueError(f"minb must be 1 to 8, got {minb}")
    if split is not None and not 1 <= split <= MAX_SPLITS:
        raise ValueError(f"split must be 1 to {MAX_SPLITS}, got {split}")


def plan_rowtile(csr, k: int, value_dtype: str, index_bytes: int, layout: str, sm_count: int,
                 *, rho: float | None = None, rows: int | None = None, ks: int | None = None,
                 chunk: int | None = None, warps: int | None = None, minb: int | None = None,
                 stages: int | None = None, split: int | None = None,
                 pack=None) -> RowTilePlan:
    """The whole host plan of one call: (R, VEC) by :func:`choose_tile` unless given, the
    format (``pack(csr, R, C)``, default :func:`pack_rowtile` on the spot), the block and its
    shared memory, and the splits (:func:`choose_splits` for the blocks an SM holds, MINB,
    unless ``split`` is given). ``rho``: the device's :func:`~sparsescope.model.rowtile.smem_per_l2`
    (None: the architectural 4)."""
    check_options(rows, ks, chunk, warps, minb, stages, split)
    chunk = chunk or DEFAULT_CHUNK
    warps = warps or DEFAULT_WARPS
    rho = smem_per_l2(None) if rho is None else rho
    cols = int(csr.shape[1])
    rows_, vec, _ = choose_tile(csr.indptr, csr.indices, cols, k, value_dtype, layout,
                                sm_count, rho, ks=ks, chunk=chunk,
                                tile_rows=(rows,) if rows is not None else
                                tuple(r for r in TILE_ROWS if r % warps == 0))
    fmt = (pack or (lambda m, r, c: pack_rowtile(m.indptr, m.indices, m.data, m.shape[1], r,
                                                  c)))(csr, rows_, chunk)
    vb = 4 if value_dtype == "float32" else 8
    col = layout == "col"
    stages, minb = launch_stages(vb, rows_, vec, chunk, warps, col, stages, minb)
    smem = rowtile_smem_bytes(vb, rows_, vec, chunk, stages, col)
    if smem > MAX_SMEM_BYTES:
        raise ValueError(f"{smem:,} B of shared memory a block (at most {MAX_SMEM_BYTES:,})")
    slices = -(-k // (32 * vec))
    tile_items = np.diff(fmt.tile_ptr)
    splits = split or choose_splits(tile_items, slices, sm_count, minb)[0]
    name = rowtile_kernel_name(value_dtype, index_bytes, rows_, vec, chunk, warps, stages, col,
                               minb)
    x_rows = staged_x_rows(fmt)
    notes = {"kernel": name, "tile_rows": str(rows_), "slice_cols": str(32 * vec),
             "chunk_rows": str(chunk), "block_threads": str(32 * warps),
             "grid_blocks": f"{fmt.tiles} x {slices} x {splits}", "tiles": str(fmt.tiles),
             "slices": str(slices), "splits": str(splits), "items": str(fmt.items),
             "items_per_block_max": str(-(-int(tile_items.max(initial=0)) // splits)),
             "zero_fill": "memset of Y, atomicAdd" if splits > 1 else "none (Y stored)",
             "launches": str(2 if splits > 1 else 1),
             "split_rule": ("given" if split is not None else
                            "least waves x longest run over S (slots: SMs x MINB)"),
             "chunks_skipped": str(fmt.tiles * max(1, -(-cols // chunk)) - fmt.items),
             "x_rows_staged": str(x_rows), "entries": str(fmt.entries),
             "smem_bytes": str(smem), "stages": str(stages), "minb": str(minb),
             "layout": layout,
             "x_copy_bytes": str((1 if col else copy_width(k, vb)) * vb),
             "sm_count": str(sm_count), "smem_per_l2": f"{rho:.2f}",
             "index_dtype": np.dtype(_gpu.INDEX_DTYPES[index_bytes]).name,
             "value_dtype": value_dtype,
             "tile_rule": ("given" if rows is not None and ks is not None else
                           "least max(shared-memory floor, L2 floor) over R and VEC")}
    return RowTilePlan(name, rows_, vec, chunk, warps, stages, minb, layout, k, slices, smem, fmt,
                       value_dtype, index_bytes, notes, splits)


def staged_x_rows(fmt: RowTileFormat) -> int:
    """X rows the items stage a slice: sum of min(C, cols - chunk C)."""
    c = fmt.chunk_rows
    return int(np.minimum(c, fmt.cols - fmt.item_chunk * c).sum())


def rowtile_launch(plan: RowTilePlan, registers: int | None = None):
    """A plan as the time model's launch (``model.rowtile.RowTileLaunch``); registers: the
    compiled kernel's, else its ``__launch_bounds__`` cap (65,536 / (threads x MINB))."""
    from sparsescope.model.rowtile import RowTileLaunch

    fmt, vb = plan.fmt, 4 if plan.value_dtype == "float32" else 8
    counts = item_counts(fmt, plan.warps, vb)
    c = fmt.chunk_rows
    cap = min(255, REGISTERS_PER_SM // (32 * plan.warps * plan.minb))
    return RowTileLaunch(
        kernel=plan.kernel, rows=fmt.rows, cols=fmt.cols, k=plan.k, tile_rows=plan.tile_rows,
        chunk_rows=c, vec=plan.vec, slices=plan.slices, tile_items=np.diff(fmt.tile_ptr),
        item_x_rows=np.minimum(c, fmt.cols - fmt.item_chunk * c),
        item_entries=counts["entries"], item_staged=counts["staged"],
        item_warp_entries=counts["busiest"], item_entry_reads=counts["reads"],
        smem_bytes=plan.smem_bytes, index_bytes=plan.index_bytes, x_layout=plan.layout,
        stages=plan.stages, splits=plan.splits, launches=2 if plan.splits > 1 else 1,
        block_warps=plan.warps, max_registers=registers or cap,
        registers_source=("the compiled kernel" if registers
                          else f"the launch bound's cap ({cap})"),
        value_bytes=vb, label=f"rowtile {plan.kernel}")


@dataclass
class PreparedRowTile:
    rows: int
    cols: int
    k: int
    host: RowTilePlan
    tile_ptr: Any
    item_chunk: Any
    item_base: Any
    item_seg: Any
    entries: Any
    x: Any
    """X as the case lays it out: cols x k row-major, or k x cols C-ordered (column-major)."""
    y: Any
    """Y: rows x k, or k x rows C-ordered (column-major)."""
    working_set_bytes: int
    kernel: Any = None
    """The compiled function, its dynamic shared-memory limit raised once where the block
    needs more than 48 KB (not on every timed call)."""


class SpmmCudaRowTile(HostPlannedKernel):
    name = "spmm-cuda-rowtile"
    SOURCE = SOURCE
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="gpu",
        description="own SpMM: a block a tile of rows and a slice of X's columns, X staged in "
                    "shared memory a chunk at a time (row- or column-major, NVRTC)")

    def __init__(self, *, rows: int | None = None, ks: int | None = None,
                 chunk: int | None = None, warps: int | None = None,
                 stages: int | None = None, minb: int | None = None,
                 split: int | None = None) -> None:
        check_options(rows, ks, chunk, warps, minb, stages, split)
        self.rows = rows
        """R as given, else :func:`choose_tile`'s."""
        self.ks = ks
        """KS as given, else :func:`choose_tile`'s."""
        self.chunk = chunk
        self.warps = warps
        self.stages = stages
        self.minb = minb
        self.split = split
        """S as given, else :func:`choose_splits`'."""
        self._model = None

    def unsupported_params(self, case: OpCase) -> str:
        value_dtype = "float32" if case.traffic.value_bytes == 4 else "float64"
        if self.ks is not None and not vec_options(case.params.k, value_dtype,
                                                   case.params.layout, self.ks):
            return (f"ks {self.ks} does not fit k = {case.params.k} ({value_dtype}, layout "
                    f"{case.params.layout}: at most {32 * MAX_VEC[value_dtype]} columns, a "
                    f"multiple of its vector dividing k row-major)")
        return ""

    def _rho(self, rates=None) -> float:
        rates = rates if rates is not None else getattr(self._model, "rates", None)
        return smem_per_l2(rates)

    def plan(self, case: OpCase, value_dtype: str, index_bytes: int, sm_count: int,
             rates=None) -> RowTilePlan:
        from sparsescope.backends.format_cache import FORMATS

        def pack(csr, r, c):
            return FORMATS.get(csr, ("spmm-rowtile", r, c), lambda m: pack_rowtile(
                m.indptr, m.indices, m.data, m.shape[1], r, c))

        return plan_rowtile(case.matrix, case.params.k, value_dtype, index_bytes,
                            case.params.layout, sm_count, rho=self._rho(rates), rows=self.rows,
                            ks=self.ks, chunk=self.chunk, warps=self.warps, minb=self.minb,
                            stages=self.stages, split=self.split, pack=pack)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedRowTile:
        import cupy

        csr, k = case.matrix, case.params.k
        index = _gpu.INDEX_DTYPES[index_bytes]
        host = self.plan(case, value_dtype, index_bytes, _gpu.device_sm_count())
        fmt = host.fmt
        if index_bytes == 4 and fmt.entries > np.iinfo(np.int32).max:
            raise ValueError(f"{fmt.entries:,} entries need 64-bit offsets")
        rows = csr.shape[0]
        x, y = upload_dense(case.inputs, value_dtype, case.params.layout, rows)
        kernel = _gpu.raw_module(SOURCE, (host.kernel,)).get_function(host.kernel)
        if host.smem_bytes > OPT_IN_BYTES:
            kernel.max_dynamic_shared_size_bytes = host.smem_bytes
        return PreparedRowTile(
            rows=rows, cols=csr.shape[1], k=k, host=host,
            tile_ptr=cupy.asarray(fmt.tile_ptr.astype(index)),
            item_chunk=cupy.asarray(fmt.item_chunk.astype(index)),
            item_base=cupy.asarray(fmt.item_base.astype(index)),
            item_seg=cupy.asarray(fmt.item_seg.reshape(-1)),
            entries=cupy.asarray(entries_array(fmt, value_dtype)), x=x, y=y,
            working_set_bytes=case.traffic.compulsory_bytes, kernel=kernel)

    def _launch(self, p: PreparedRowTile) -> None:
        from sparsescope.backends.spmm_cuda import zero_fill_async

        h = p.host
        if p.rows == 0:
            return
        if h.splits > 1:   # the partial tiles are added into Y: zero it in the same call
            zero_fill_async(p.y)
        p.kernel((h.tiles, h.slices, h.splits), (32 * h.warps,),
                 (np.int64(p.rows), np.int64(p.cols), np.int32(p.k), p.tile_ptr, p.item_chunk,
                  p.item_base, p.item_seg, p.entries, p.x, p.y, np.int32(h.splits)),
                 shared_mem=h.smem_bytes)

    def run(self, prepared: PreparedRowTile) -> np.ndarray:
        self._launch(prepared)
        return host_output(prepared.y, prepared.host.layout)

    def traffic(self, case: OpCase, prepared: PreparedRowTile | None):
        """The row-tile format's bytes (``model.rowtile.rowtile_traffic``); plain CSR's before
        the case is prepared."""
        if prepared is None:
            return super().traffic(case, prepared)
        return _format_traffic(case, prepared.host)

    def model_launch(self, host: RowTilePlan, registers: int | None):
        """The launch for the time model (``model.rowtile``)."""
        return rowtile_launch(host, registers)

    def host_plan_case(self, case: OpCase, value_dtype: str, index_bytes: int, sms: int):
        """(the format's bytes, the launch) planned on the host for ``sms`` SMs (registers at
        the launch bound's cap)."""
        if self.unsupported_params(case):
            return None, None
        rates = getattr(self._model, "rates", None)
        host = self.plan(case, value_dtype, index_bytes, sms, rates)
        return _format_traffic(case, host), self.model_launch(host, None)


def _format_traffic(case: OpCase, host: RowTilePlan):
    csr, fmt = case.matrix, host.fmt
    return rowtile_traffic(csr.shape[0], csr.shape[1], csr.nnz, host.k, tiles=fmt.tiles,
                           items=fmt.items, entries=fmt.entries, tile_rows=fmt.tile_rows,
                           value_bytes=4 if host.value_dtype == "float32" else 8,
                           index_bytes=host.index_bytes)
