"""``cuda-spmv-sell``, ``cuda-spmv-delta16`` and ``cuda-spmv-blocked16``: SELL-C-sigma SpMV,
C = 32 (one warp per slice, one thread per row), with INT32 columns, 16-bit column offsets per
slice, or 16-bit offsets of 1 x B blocks.

Rows sorted by length within windows of ``sigma`` rows, packed column-major in slices of 32
(:mod:`sparsescope.backends.spmv_sell_format`): every load of a warp reads contiguous bytes,
and 32 neighbouring rows gather x together. Rows longer than ``long_row`` are cut into pieces
added by ``spmv_fixup``. ``cuda-spmv-delta16`` stores each column as a 16-bit offset from its
slice's base, escapes in INT32 (:mod:`sparsescope.backends.spmv_sell16_format`): 6 bytes per
nonzero instead of 8 where the columns fit, to go below the INT32 CSR floor.
``cuda-spmv-blocked16`` stores one 16-bit offset per 1 x B block of consecutive columns
(:mod:`sparsescope.backends.spmv_blocked_format`): 4.67 bytes per nonzero for FEM rows made of
runs of three columns.

Parameters: ``sigma`` (default 256), ``long_row`` (default from the row lengths), ``unroll``
(columns per pipelined step: 2 or 4), ``minb`` (blocks per SM the registers must allow: 6 or
8), ``hint`` (0 or 1, as for the tiled kernels), ``tpr`` (threads per row: 1, or 2, 4, 8 for
that many times the warps and 1/tpr of the steps each); ``stage`` (0: loads pipelined in
registers, ``unroll`` deep; 2 or 4: streams staged in shared memory by cp.async, that many steps
per chunk, double-buffered: decoupled access / execute); ``block`` (cuda-spmv-blocked16: B, 2, 3
or 4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability
from sparsescope.backends.spmv_blocked_format import BLOCK_WIDTHS, SellBlocked, pack_blocked
from sparsescope.backends.spmv_device import (
    CAPABILITY,
    SOURCE,
    Launch,
    OwnSpmvBackend,
    PreparedOwn,
    sell_kernel,
)
from sparsescope.backends.spmv_sell16_format import Sell16, encode_sell16
from sparsescope.backends.spmv_sell_format import C, Sell, default_long_row, pack_sell
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.last_matrix import LastMatrixAnswers
from sparsescope.model.traffic import Traffic

SELL_BLOCK = 256
UNROLLS = (2, 3, 4)
MINBS = (4, 6, 8)
STAGES = (0, 2, 4)
HINTS = (0, 1)
TPRS = (1, 2, 4, 8)
#: Steps per SASS iteration the escape share is declared for: UNROLL 2, 3, 4, unrolled again
#: by the compiler up to 8 steps (``sass.kernel_shape``).
ITERATION_STEPS = (1, 2, 3, 4, 6, 8)
_LONG_ROWS = LastMatrixAnswers()
"""``default_long_row`` of the last matrix (:meth:`CudaSpmvSell.resolved_for`)."""


class CudaSpmvSell(OwnSpmvBackend):
    name = "cuda-spmv-sell"
    capability = Capability(**CAPABILITY, description=(
        "own SELL-32-sigma kernel, thread per row, pipelined loads, long rows split (NVRTC)"))
    defaults: dict[str, Any] = {"sigma": 256, "long_row": None, "unroll": 4, "minb": 6,
                                "hint": 1, "tpr": 1, "stage": 0}
    idx = 0

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        p = self.params
        if (p["unroll"] not in UNROLLS or p["minb"] not in MINBS or p["hint"] not in HINTS
                or p["tpr"] not in TPRS or p["stage"] not in STAGES):
            raise ValueError(f"unroll must be one of {UNROLLS}, minb one of {MINBS}, hint one "
                             f"of {HINTS}, tpr one of {TPRS}, stage one of {STAGES}; got "
                             f"{p['unroll']}, {p['minb']}, {p['hint']}, {p['tpr']}, "
                             f"{p['stage']}")

    def format_key(self) -> tuple:
        return (type(self).__name__, self.params["sigma"], self.params["long_row"],
                self.params["tpr"])

    def resolved_for(self, csr: sp.csr_matrix) -> CudaSpmvSell:
        """This backend with the parameter it derives from the matrix fixed: the long-row cut
        of ``csr``'s own rows (``default_long_row``), so that a plan on a sample of its rows
        (``context.predict.planned_call``) cuts them as the whole matrix would."""
        if self.params["long_row"] is not None:
            return self
        # one percentile of the rows a matrix, however many SELL backends plan on it
        cut = _LONG_ROWS.get((csr.indptr,), "long_row", lambda: default_long_row(
            np.diff(np.asarray(csr.indptr, dtype=np.int64))))
        return type(self)(l2_window=self.l2_window, breakdown=self.breakdown,
                          **{**self.params, "long_row": cut})

    def build_format(self, csr: sp.csr_matrix) -> Sell | Sell16:
        sell = pack_sell(csr.indptr, csr.indices, csr.data, sigma=int(self.params["sigma"]),
                         long_row=self.params["long_row"], tpr=int(self.params["tpr"]))
        if sell.padded >= 2**31 - 64:
            raise ValueError(f"SELL packing holds {sell.padded} entries: too many for INT32")
        return sell

    def upload(self, fmt: Sell | Sell16 | SellBlocked, csr: sp.csr_matrix,
               value_dtype: str) -> PreparedOwn:
        import cupy

        width, packed, sell = _parts(fmt)
        values = fmt.vals if isinstance(fmt, SellBlocked) else sell.vals
        dtype = _gpu.VALUE_DTYPES[value_dtype]

        def dev(array: np.ndarray, empty) -> Any:
            return cupy.asarray(array if array.size else np.full(1, empty, array.dtype))

        buffers = {"slice_ptr": cupy.asarray(sell.slice_ptr),
                   "val": dev(values.astype(dtype), 0), "out": cupy.asarray(sell.out),
                   "split_rows": cupy.asarray(sell.split_rows),
                   "split_ptr": cupy.asarray(sell.split_ptr)}
        notes = {"sigma": str(sell.sigma), "long_row": str(sell.long_row),
                 "slices": str(sell.slices), "padding_ratio": f"{sell.padding_ratio:.4f}",
                 "split_rows": str(sell.split_rows.size), "unroll": str(self.params["unroll"]),
                 "minb": str(self.params["minb"]), "hint": str(self.params["hint"]),
                 "stage": str(self.params["stage"]),
                 "threads_per_row": str(sell.tpr),
                 "value_dtype": value_dtype, "index_dtype": "int32"}
        if isinstance(packed, Sell16):
            buffers.update(cols=dev(packed.offsets, 0), base=dev(packed.base, 0),
                           esc_ptr=cupy.asarray(packed.esc_ptr), esc=dev(packed.escapes, -1))
            notes.update(index_encoding="16-bit offsets per slice + INT32 escapes",
                         escape_fraction=f"{packed.escape_fraction:.4f}",
                         escape_slots=str(packed.escapes.size))
            idx = 1
        else:
            zero = cupy.zeros(1, dtype=cupy.int32)
            buffers.update(cols=dev(sell.cols, -1), base=zero, esc_ptr=zero, esc=zero)
            idx = 0
        nslots = int(sell.split_ptr[-1]) if sell.split_ptr.size else 0
        if width > 1:
            notes.update(block_width=str(width), blocks=str(fmt.blocks),
                         stored_values_per_nonzero=f"{fmt.stored_per_nonzero:.4f}",
                         index_encoding=f"one 16-bit offset per 1 x {width} block per slice "
                                        "+ INT32 escapes")
        p = self.new_prepared(csr, value_dtype, nslots, [], 0, buffers, notes)
        if width > 1:
            # Blocks may reach B - 1 columns past the end: x carries zeros there.
            p.x = cupy.zeros(csr.shape[1] + width - 1, dtype=dtype)
        if p.rows and sell.slices:
            b = buffers
            grid = -(-sell.slices * C // SELL_BLOCK)
            name = sell_kernel(value_dtype, idx, int(self.params["hint"]),
                               int(self.params["unroll"]), int(self.params["minb"]), sell.tpr,
                               width, int(self.params["stage"]))
            p.launches.append(Launch(name, grid, SELL_BLOCK, (
                np.int32(sell.slices), b["slice_ptr"], b["cols"], b["val"], b["out"], b["base"],
                b["esc_ptr"], b["esc"], p.x, p.y, p.partials)))
            if sell.split_rows.size:
                p.launches.append(self.fixup_launch(value_dtype, b["split_rows"],
                                                    b["split_ptr"], (p.partials, p.y)))
        itemsize = np.dtype(dtype).itemsize
        p.traffic = self.format_traffic(fmt, csr, itemsize)
        p.bytes_moved = p.traffic.total_bytes
        p.kernel_shape = self.device_shape(self.host_shape(fmt, csr, value_dtype, 0))
        return p

    def format_traffic(self, fmt: Any, csr: sp.csr_matrix, value_bytes: int) -> Traffic:
        return fmt.traffic(*csr.shape, value_bytes=value_bytes)

    def host_shape(self, fmt: Any, csr: sp.csr_matrix, value_dtype: str,
                   sms: int) -> KernelShape | None:
        """A thread holds UNROLL (or STAGE, staged by cp.async) steps of ``width`` columns in
        flight per iteration after the slice pointers; rows sorted by length within sigma
        windows, 32 per slice, 256 threads a block. A 1 x B block format walks ``B x blocks``
        entries for its nonzeros (``entries_per_nonzero``), rows cut at ``long_row`` blocks."""
        width, packed, sell = _parts(fmt)
        if not csr.shape[0] or not sell.slices:
            return None
        stage = int(self.params["stage"])
        name = sell_kernel(value_dtype, int(isinstance(packed, Sell16)), int(self.params["hint"]),
                           int(self.params["unroll"]), int(self.params["minb"]), sell.tpr,
                           width, stage)
        blocked = isinstance(fmt, SellBlocked)
        # delta16's iterations where a lane meets an escape wait for its column (one more
        # dependent load): their share for the sizes the compiler may make of UNROLL
        escapes = tuple((steps * width, packed.escape_iteration_share(steps))
                         for steps in ITERATION_STEPS) if isinstance(packed, Sell16) else ()
        return KernelShape(kernel=name, decomposition="rows", block_threads=SELL_BLOCK,
                           grid_blocks=-(-sell.slices * C // SELL_BLOCK),
                           threads_per_row=sell.tpr,
                           nnz_per_iteration=(stage or int(self.params["unroll"])) * width,
                           rounds_per_iteration=2, setup_rounds=1, sort_window=sell.sigma,
                           entries_per_nonzero=(width * fmt.blocks / fmt.nnz
                                                if blocked and fmt.nnz else 1.0),
                           split_long_rows=sell.long_row * width, block_width=width,
                           staged=stage > 0, launches=1 + (sell.split_rows.size > 0),
                           fixup=bool(sell.split_rows.size > 0),
                           escape_share=escapes, cuda_source=SOURCE,
                           source="declared by the backend (template parameters)")


class CudaSpmvDelta16(CudaSpmvSell):
    name = "cuda-spmv-delta16"
    capability = Capability(**CAPABILITY, description=(
        "own compressed-index kernel: SELL-32-sigma with 16-bit column offsets per slice, "
        "INT32 escapes (NVRTC)"))
    idx = 1

    def build_format(self, csr: sp.csr_matrix) -> Sell16:
        rows, cols = csr.shape
        return encode_sell16(super().build_format(csr), rows, cols)


class CudaSpmvBlocked16(CudaSpmvSell):
    name = "cuda-spmv-blocked16"
    capability = Capability(**CAPABILITY, description=(
        "own compressed-index kernel: 1 x B blocks of consecutive columns, one 16-bit offset "
        "per block, in SELL-32-sigma slices (NVRTC)"))
    defaults: dict[str, Any] = {**CudaSpmvSell.defaults, "block": 3}
    idx = 1

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        if self.params["block"] not in BLOCK_WIDTHS:
            raise ValueError(f"block must be one of {BLOCK_WIDTHS}, got {self.params['block']}")

    def format_key(self) -> tuple:
        return super().format_key() + (self.params["block"],)

    def resolved_for(self, csr: sp.csr_matrix) -> CudaSpmvBlocked16:
        """Itself: its cut counts blocks, known only once the rows are blocked (a sample's
        blocks give it)."""
        return self

    def build_format(self, csr: sp.csr_matrix) -> SellBlocked:
        fmt = pack_blocked(csr.indptr, csr.indices, csr.data, csr.shape,
                           width=int(self.params["block"]), sigma=int(self.params["sigma"]),
                           long_row=self.params["long_row"], tpr=int(self.params["tpr"]))
        if fmt.vals.size >= 2**31 - 64:
            raise ValueError(f"blocked packing holds {fmt.vals.size} values: too many for "
                             "INT32")
        return fmt


def _parts(fmt: Sell | Sell16 | SellBlocked) -> tuple[int, Sell | Sell16, Sell]:
    """(columns per stored entry, the SELL or 16-bit packing, the plain SELL slices) of a
    built format."""
    width = fmt.width if isinstance(fmt, SellBlocked) else 1
    packed = fmt.packed if isinstance(fmt, SellBlocked) else fmt
    return width, packed, packed.sell if isinstance(packed, Sell16) else packed
