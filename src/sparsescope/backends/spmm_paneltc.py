"""``spmm-cuda-paneltc``: own SpMM on tensor cores for dense-ish weights, X staged in shared
memory and shared by a panel of block rows (``kernels/spmm_blocktc.cu``, ``spmm_paneltc``,
whose header argues the design); row-major float32 X and Y, k a multiple of 4, run through
CuPy. Issue 37 item 4: a weight 80 % sparse against the dense GEMM.

``spmm-cuda-blocktc`` walks one 16 x 8 block row a warp and loads every block's X tile from
the L2: at 80 % sparsity every block is occupied (``1 - 0.8^128``), so X crosses the L2 once
per block row. Here a CTA owns a PANEL of :data:`PANEL_BLOCK_ROWS` block rows and a tile of
Y's columns; the panel's items are the 8-column blocks any of its rows occupies, each stored
as MB whole A fragments (:func:`panel_format`), and each item's X rows are staged in shared
memory once for the panel's warps. The work grows with the PANEL FILL, stored values over
nonzeros::

    panel fill = 128 x MB x items / nnz

(5.0 for an unstructured weight 80 % sparse, as for 16 x 8 blocks; a block-pruned weight
keeps its empty blocks out).

Precision as blocktc's: 3 passes (3xTF32, float32-level error, the default) or 1 (TF32,
labelled).

Options (``spmm-cuda-paneltc[kb=8,stages=2,wn=2,xsplit=1,isplit=0,split=4]``): ``kb`` items a
stage, ``stages`` in flight, ``wn`` warps a block row, ``xsplit`` X split into its TF32 parts
once a stage for the CTA, ``isplit`` 0 for ``cvt`` instead of integer operations, ``split``
the runs a panel's items are cut into. The defaults were the fastest on the 4,096 x 4,096
weight 80 % sparse at k = 256 on the H200 (218 us; the other settings 230 to 326 us); on the
smaller weights ``kb=8,stages=2`` was up to 1.15x faster at k = 256
(results/h200/spmm-break-even/2026-11-28-paneltc).

Host choices, pure functions tested without a GPU: :func:`panel_format`,
:func:`choose_fragments` (Y columns a CTA), :func:`choose_splits` (runs a panel's items are
cut into), :func:`plan_paneltc` (the launch and the case's notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability
from sparsescope.backends.spmm_blocktc import (
    BLOCK_COLS,
    BLOCK_ROWS,
    MAX_FILL,
    PRECISION,
    BlockFormat,
    block_format_of,
)
from sparsescope.backends.spmm_cuda import OwnSpmmKernel
from sparsescope.backends.spmm_rowtile import OPT_IN_BYTES
from sparsescope.model.kernel_shape import blocks_per_sm
from sparsescope.ops.base import OpCase

SOURCE = "spmm_blocktc.cu"
PANEL_BLOCK_ROWS = 4
"""MB, 16-row block rows a panel (a CTA of 4 warps, one a block row): each staged X row then
serves 4 block rows (64 rows of A)."""
ITEMS_PER_STAGE = 4
"""KB, items a pipeline stage holds (32 X rows and 16 fragments: 8 KB of A a stage)."""
STAGES = 3
"""Stages in flight: two groups of items on their way while one is multiplied."""
KB_OPTIONS = (1, 2, 4, 8)
STAGE_OPTIONS = (2, 3, 4)
WN_OPTIONS = (1, 2, 4)
"""Warps a block row (WN): each takes NF / WN of the tile's fragments (at most NF / 4)."""
FRAGMENT_OPTIONS = (4, 8, 16)
"""NF, n8 fragments a warp (32, 64 or 128 Y columns a CTA)."""
MIN_GROUPS_PER_SPLIT = 2
"""A split takes at least this many groups of items, so that its pipeline has a stage to
overlap."""
MAX_SPLITS = 16
ASSUMED_REGISTERS = {1: 48, 2: 56, 4: 64, 8: 80, 16: 128}
"""Registers a thread by its warp's fragments (NF / WN), before a compiled kernel says (nvcc
13 for sm_90: 58 to 63 at 4, 80 at 8, 117 to 128 at 16 for 3 passes): the host plan's
occupancy until then."""


@dataclass(frozen=True)
class PanelFormat:
    """A in panels of MB block rows: ``panel_ptr`` over panels, ``item_col`` (8-column index)
    and ``item_val`` (items x MB x 128, each block row's A fragment in the m16n8k8 order,
    float32, zeros where that row has no block) per item."""

    shape: tuple[int, int]
    block_rows_per_panel: int
    panel_ptr: np.ndarray
    item_col: np.ndarray
    item_val: np.ndarray

    @property
    def panels(self) -> int:
        return len(self.panel_ptr) - 1

    @property
    def items(self) -> int:
        return len(self.item_col)


def panel_format(blocks: BlockFormat, mb: int = PANEL_BLOCK_ROWS) -> PanelFormat:
    """16 x 8 blocks -> panels of ``mb`` block rows: a panel's items are the union of its
    rows' block columns, sorted; each item holds the ``mb`` rows' fragments (zeros where a row
    lacks the block). Two block rows with blocks at columns {0, 3} and {3}, mb = 2 -> one
    panel of items (0, 3), the second row's fragment of item 0 all zeros."""
    block_rows = blocks.block_rows
    block_cols = max(1, -(-blocks.shape[1] // BLOCK_COLS))
    row_of = np.repeat(np.arange(block_rows, dtype=np.int64), np.diff(blocks.block_ptr))
    keys = (row_of // mb) * block_cols + blocks.block_col.astype(np.int64)
    uniq, which = np.unique(keys, return_inverse=True)
    panels = -(-block_rows // mb)
    per_panel = np.bincount(uniq // block_cols, minlength=panels) if panels else np.zeros(0)
    values = np.zeros((len(uniq), mb, BLOCK_ROWS * BLOCK_COLS), np.float32)
    values[which.reshape(-1), row_of % mb] = blocks.block_val
    return PanelFormat(shape=blocks.shape, block_rows_per_panel=mb,
                       panel_ptr=np.concatenate(([0], np.cumsum(per_panel))).astype(np.int32),
                       item_col=(uniq % block_cols).astype(np.int32), item_val=values)


def panel_fill(items: int, nnz: int, mb: int = PANEL_BLOCK_ROWS) -> float:
    """Stored values per nonzero, ``128 x MB x items / nnz`` (1.0 for an empty matrix)."""
    return BLOCK_ROWS * BLOCK_COLS * mb * items / nnz if nnz else 1.0


def panel_format_of(csr: Any, mb: int = PANEL_BLOCK_ROWS) -> PanelFormat:
    """:func:`panel_format` of a CSR matrix (through ``block_format_of``), built once per
    (matrix, MB) in the formats' cache (``format_cache.FORMATS``): auto's prediction and
    ``prepare`` ask for the same panels."""
    from sparsescope.backends.format_cache import FORMATS

    return FORMATS.get(csr, ("spmm-paneltc", mb),
                       lambda m: panel_format(block_format_of(m), mb))


def fill_declined(items: int, nnz: int, limit: float = MAX_FILL) -> str:
    """Why the panel kernel declines (its panel fill above ``limit``: the tensor cores would
    multiply mostly zeros, ``spmm_blocktc.MAX_FILL``'s argument), or ""."""
    fill = panel_fill(items, nnz)
    if fill <= limit:
        return ""
    return (f"panel fill {fill:.1f} stored values per nonzero > {limit:g}: the tensor cores "
            f"would multiply mostly zeros")


def choose_fragments(k: int) -> int:
    """NF, n8 fragments a warp: the fewest of :data:`FRAGMENT_OPTIONS` whose 8 NF columns
    cover k, else the most (16: 128 columns, tiles of 128 over wider X). A wider tile reads
    each fragment of A once for more columns (A crosses the L2 ``ceil(k / 8 NF)`` times);
    one narrower than k would stage zeros. k = 32 -> 4; 40 -> 8; 64 -> 8; 100 -> 16;
    256 -> 16 (two tiles)."""
    for nf in FRAGMENT_OPTIONS:
        if 8 * nf >= k:
            return nf
    return FRAGMENT_OPTIONS[-1]


def smem_bytes(nf: int, mb: int = PANEL_BLOCK_ROWS, kb: int = ITEMS_PER_STAGE,
               stages: int = STAGES, xsplit: bool = False) -> int:
    """Dynamic shared memory of a CTA (the kernel's ``PanelTcSmem``)::

        stages x 4 x (KB x 8 x (8 NF + 8) + KB x MB x 128)  + 4 x KB x 8 x (8 NF + 8) (xsplit:
                                                              the lo parts of one group)

    NF 16, MB 4, KB 4, 3 stages -> 3 x 4 x (4,352 + 2,048) = 76,800 bytes; + 17,408 with
    xsplit = 94,208 (two CTAs an SM instead of three: xsplit is an option, off by default,
    slower on the H200 in every case measured, results/h200/spmm-break-even/2026-11-28-paneltc).
    """
    x_floats = kb * 8 * (8 * nf + 8)
    return stages * 4 * (x_floats + kb * mb * 128) + (4 * x_floats if xsplit else 0)


def resident_ctas(nf: int, registers: int | None = None, mb: int = PANEL_BLOCK_ROWS,
                  smem: int | None = None, wn: int = 1) -> int:
    """CTAs an SM holds (``model.kernel_shape.blocks_per_sm``: shared memory, 228 KB an SM
    and 1 KB of it reserved for each CTA; registers, ``registers`` a thread, else
    :data:`ASSUMED_REGISTERS`; threads). NF 16: 233,472 / (76,800 + 1,024) -> 3; 128
    registers x 128 threads -> 4; -> 3."""
    return blocks_per_sm(registers or ASSUMED_REGISTERS[nf // wn], 32 * mb * wn,
                         smem or smem_bytes(nf, mb))


def choose_splits(panel_items: np.ndarray, tiles: int, sm_count: int, resident: int,
                  kb: int = ITEMS_PER_STAGE) -> int:
    """S, the runs each panel's items are cut into (grid panels x tiles x S), by the waves
    the grid takes::

        S = the s in 1 .. cap that makes ceil(panels x tiles x s / slots) / s least
            (the waves, each of CTAs 1 / s as long); ties: the smaller s (fewer atomics)
        slots = SMs x resident; cap = max(1, min(MAX_SPLITS, the most items a panel /
                (MIN_GROUPS_PER_SPLIT x KB)))

    so that the grid fills the CTA slots in whole waves while each split keeps a pipeline to
    overlap. 64 panels, 2 tiles, 132 SMs x 3 resident (396 slots): s = 3 gives 384 CTAs in one
    wave (1 / 3), s = 4 512 CTAs in two (1 / 2) -> 3. 64 panels, 1 tile, 660 slots: s = 10,
    640 CTAs in one wave -> 10. 8 panels of 16 items: the cap 16 / 8 = 2 -> 2."""
    panels = int(panel_items.size)
    most = int(panel_items.max(initial=0))
    cap = max(1, min(MAX_SPLITS, most // (MIN_GROUPS_PER_SPLIT * kb)))
    slots = max(1, sm_count * resident)
    ctas = max(1, panels * tiles)
    return min(range(1, cap + 1), key=lambda s: (-(-ctas * s // slots) / s, s))


def kernel_name(passes: int, nf: int, mb: int = PANEL_BLOCK_ROWS, kb: int = ITEMS_PER_STAGE,
                stages: int = STAGES, isplit: bool = True, xsplit: bool = False,
                wn: int = 1) -> str:
    """The template instance, e.g. ``spmm_paneltc<3, 4, 1, 16, 4, 3, true, true>``."""
    flags = ", ".join("true" if f else "false" for f in (isplit, xsplit))
    return f"spmm_paneltc<{passes}, {mb}, {wn}, {nf}, {kb}, {stages}, {flags}>"


@dataclass(frozen=True)
class PanelTcPlan:
    kernel: str
    fragments: int
    tiles: int
    splits: int
    smem_bytes: int
    panels: int
    notes: dict[str, str]
    items_per_stage: int = ITEMS_PER_STAGE
    stages: int = STAGES
    warps_per_row: int = 1

    @property
    def tile_cols(self) -> int:
        return 8 * self.fragments


def plan_paneltc(fmt: PanelFormat, nnz: int, k: int, sm_count: int, passes: int = 3,
                 registers: int | None = None, split: int | None = None,
                 kb: int = ITEMS_PER_STAGE, stages: int = STAGES,
                 isplit: bool = True, xsplit: bool = False, wn: int = 1) -> PanelTcPlan:
    """The launch of one call (pure): kernel instance, column tiles, splits and the case's
    notes; ``split`` fixes S (else :func:`choose_splits`); ``kb`` items a stage, ``stages``
    in flight, ``isplit`` the TF32 parts by integer operations, ``xsplit`` X split once a
    stage for the CTA, ``wn`` warps a block row (fewer where the tile has fewer than 4 WN
    fragments)."""
    if passes not in PRECISION:
        raise ValueError(f"passes must be 3 (3xTF32) or 1 (TF32), got {passes}")
    mb = fmt.block_rows_per_panel
    nf = choose_fragments(k)
    wn = max(1, min(wn, nf // 4))
    tiles = max(1, -(-k // (8 * nf)))
    smem = smem_bytes(nf, mb, kb, stages, xsplit)
    resident = resident_ctas(nf, registers, mb, smem=smem, wn=wn)
    panel_items = np.diff(fmt.panel_ptr.astype(np.int64))
    splits = split or choose_splits(panel_items, tiles, sm_count, resident, kb)
    name = kernel_name(passes, nf, mb, kb, stages, isplit, xsplit, wn)
    notes = {"kernel": name, "precision": PRECISION[passes],
             "panel_rows": str(BLOCK_ROWS * fmt.block_rows_per_panel),
             "panels": str(fmt.panels), "items": str(fmt.items),
             "panel_fill": f"{panel_fill(fmt.items, nnz, fmt.block_rows_per_panel):.2f}",
             "tile_cols": str(8 * nf), "tiles": str(tiles), "splits": str(splits),
             "warps_per_block_row": str(wn), "block_threads": str(32 * mb * wn),
             "grid_blocks": f"{fmt.panels} x {tiles} x {splits}",
             "items_per_stage": str(kb), "stages": str(stages),
             "tf32_split": ("integer add and AND" if isplit else "cvt.rna.tf32.f32")
             + ("; X split once a stage in shared memory" if xsplit else "; X split by each warp"),
             "smem_bytes": str(smem), "resident_ctas": str(resident),
             "zero_fill": "memset of Y, atomicAdd" if splits > 1 else "none (Y stored)",
             "sm_count": str(sm_count), "value_dtype": "float32",
             "index_dtype": "int32 (item columns)"}
    return PanelTcPlan(name, nf, tiles, splits, smem, fmt.panels, notes, kb, stages, wn)


def paneltc_launch(host: PanelTcPlan, fmt: PanelFormat, rows: int, cols: int, k: int,
                   passes: int, registers: int | None = None):
    """A plan as the time model's launch (``model.paneltc_predict``); registers: the compiled
    kernel's, else :data:`ASSUMED_REGISTERS`."""
    from sparsescope.model.paneltc_predict import PanelTcLaunch

    return PanelTcLaunch(
        kernel=host.kernel, rows=rows, cols=cols, k=k, panel_ptr=np.asarray(fmt.panel_ptr),
        block_rows_per_panel=fmt.block_rows_per_panel, fragments=host.fragments,
        tiles=host.tiles, splits=host.splits, passes=passes, smem_bytes=host.smem_bytes,
        items_per_stage=host.items_per_stage, stages=host.stages,
        block_warps=fmt.block_rows_per_panel * host.warps_per_row,
        max_registers=registers or ASSUMED_REGISTERS[host.fragments // host.warps_per_row],
        registers_source="the compiled kernel" if registers else "assumed (ASSUMED_REGISTERS)",
        launches=2 if host.splits > 1 else 1, label=f"paneltc {host.kernel}")


def declined(layout: str, k: int, csr: Any, max_fill: float = MAX_FILL) -> str:
    """Why the panel kernel does not take A (``csr``) at ``k`` in ``layout``, or "":
    column-major X, k not a multiple of 4 (X and Y move in 16-byte pieces), or a panel fill
    above ``max_fill`` (a matrix of no nonzeros is taken: its panels have no items, and Y is
    stored as zeros)."""
    if layout != "row":
        return "the panel tensor-core SpMM kernel reads row-major X only"
    if k % 4:
        return f"k = {k} is not a multiple of 4 (X and Y move 16 bytes at a time)"
    return fill_declined(panel_format_of(csr).items, csr.nnz, max_fill)


@dataclass
class PreparedPanelTc:
    rows: int
    cols: int
    k: int
    host: PanelTcPlan
    fmt: PanelFormat
    panel_ptr: Any
    item_col: Any
    item_val: Any
    x: Any
    y: Any
    kernel: Any
    working_set_bytes: int


class SpmmCudaPanelTc(OwnSpmmKernel):
    name = "spmm-cuda-paneltc"
    capability = Capability(
        ops=("spmm",), value_dtypes=("float32",), index_bytes=(4,), device="gpu",
        description="own SpMM for dense-ish weights: panels of 64 rows, X staged in shared "
                    "memory once a panel, 16x8 fragments on tensor cores (3xTF32 for float32 "
                    "accuracy), row-major X, k a multiple of 4 (NVRTC, sm_80+)")

    def __init__(self, *, passes: int = 3, max_fill: float = MAX_FILL,
                 split: int | None = None, kb: int = ITEMS_PER_STAGE, stages: int = STAGES,
                 isplit: bool = True, xsplit: bool = False, wn: int = 1) -> None:
        if passes not in PRECISION:
            raise ValueError(f"passes must be 3 (3xTF32) or 1 (TF32), got {passes}")
        if split is not None and not 1 <= split <= MAX_SPLITS:
            raise ValueError(f"split must be 1 to {MAX_SPLITS}, got {split}")
        if kb not in KB_OPTIONS or stages not in STAGE_OPTIONS or wn not in WN_OPTIONS:
            raise ValueError(f"kb must be one of {KB_OPTIONS}, stages one of {STAGE_OPTIONS} "
                             f"and wn one of {WN_OPTIONS}, got kb={kb}, stages={stages}, "
                             f"wn={wn}")
        self.wn = wn
        """Warps a block row (the plan takes fewer where the tile is narrow)."""
        self.kb, self.stages, self.isplit, self.xsplit = kb, stages, bool(isplit), bool(xsplit)
        """Items a stage, stages in flight, TF32 parts by integer operations (else cvt), X split
        once a stage for the CTA (else by each warp)."""
        self.passes = passes
        """3: 3xTF32 (float32-level error); 1: TF32 (labelled, rejected by the default gate)."""
        self.max_fill = max_fill
        """Panel fill above which the case is skipped (``spmm_blocktc.MAX_FILL``)."""
        self.split = split
        """S as given, else :func:`choose_splits`'."""

    def unsupported_params(self, case: OpCase) -> str:
        return declined(case.params.layout, case.params.k, case.matrix, self.max_fill)

    def prepare(self, case: OpCase, value_dtype: str, index_bytes: int) -> PreparedPanelTc:
        import cupy

        csr, k = case.matrix, case.params.k
        fmt = panel_format_of(csr)
        host = plan_paneltc(fmt, csr.nnz, k, _gpu.device_sm_count(), self.passes,
                            split=self.split, kb=self.kb, stages=self.stages,
                            isplit=self.isplit, xsplit=self.xsplit, wn=self.wn)
        kernel = _gpu.raw_module(SOURCE, (host.kernel,)).get_function(host.kernel)
        if host.smem_bytes > OPT_IN_BYTES:
            kernel.max_dynamic_shared_size_bytes = host.smem_bytes
        rows, cols = csr.shape
        return PreparedPanelTc(
            rows=rows, cols=cols, k=k, host=host, fmt=fmt,
            panel_ptr=cupy.asarray(fmt.panel_ptr), item_col=cupy.asarray(fmt.item_col),
            item_val=cupy.asarray(fmt.item_val),
            x=cupy.asarray(np.ascontiguousarray(case.inputs, dtype=np.float32)),
            y=cupy.zeros((rows, k), dtype=np.float32), kernel=kernel,
            # what a call touches: the panels (fill x A's values), X and Y
            working_set_bytes=int(fmt.item_val.nbytes + fmt.item_col.nbytes
                                  + fmt.panel_ptr.nbytes + 4 * k * (rows + cols)))

    def _launch(self, p: PreparedPanelTc) -> None:
        from sparsescope.backends.spmm_cuda import zero_fill_async

        h = p.host
        if p.rows == 0 or p.k == 0:
            return
        if h.splits > 1:   # the partial tiles are added into Y: zero it in the same call
            zero_fill_async(p.y)
        p.kernel((max(1, h.panels), h.tiles, h.splits),
                 (32 * p.fmt.block_rows_per_panel * h.warps_per_row,),
                 (np.int32(p.rows), np.int32(p.cols), np.int32(p.k), p.panel_ptr, p.item_col,
                  p.item_val, p.x, p.y, np.int32(h.splits)), shared_mem=h.smem_bytes)

    def traffic(self, case: OpCase, prepared: PreparedPanelTc | None):
        """The panel format's bytes (``model.traffic.block_spmm_traffic``, an item a block of
        MB x 128 values: the stored zeros counted as padding); plain CSR's before the case is
        prepared."""
        from sparsescope.model.traffic import block_spmm_traffic

        if prepared is None:
            return super().traffic(case, prepared)
        fmt = prepared.fmt
        return block_spmm_traffic(prepared.rows, prepared.cols, case.matrix.nnz, prepared.k,
                                  blocks=fmt.items, block_rows=fmt.panels,
                                  block_values=128 * fmt.block_rows_per_panel)

    def kernel_shape(self, case: OpCase, prepared: PreparedPanelTc | None):
        """The launch for the time model (``model.paneltc_predict``), with the compiled
        kernel's registers."""
        from sparsescope.backends.spmm_cuda import compiled_registers

        if prepared is None:
            return None
        return paneltc_launch(prepared.host, prepared.fmt, prepared.rows, prepared.cols,
                              prepared.k, self.passes,
                              compiled_registers(SOURCE, prepared.host.kernel))

    def notes(self, prepared: PreparedPanelTc) -> dict[str, str]:
        return dict(prepared.host.notes)
