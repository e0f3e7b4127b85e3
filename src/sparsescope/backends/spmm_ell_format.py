"""Row-major ELL on the host, shared by the kernels that read it: ``spmm-cuda-ell``
(:mod:`.spmm_ell`) and the ``ell`` plans of ``spmm-cuda-rowgroup`` and ``spmm-cuda-colmajor``
(a row a group or a lane, no slice pointers: one dependent round trip fewer a call).

Every row is padded to one stored width Wp, a multiple of the ELL kernel's group of lanes
(:func:`stored_width`), with col -1 and val 0 in the padding (:func:`ell_format`), built once a
matrix (:func:`ell_format_of`); a matrix whose padding exceeds :data:`MAX_PADDING` stored pairs
a nonzero is declined (:func:`ell_declined`), read from the row pointers alone. Kept apart
from the kernels' modules so that each of them can import it (rowgroup and colmajor are
themselves imported by :mod:`.spmm_ell`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsescope.backends import _gpu
from sparsescope.backends.spmm_cuda import SlicePlan, pow2_at_least, upload_csr, upload_slices
from sparsescope.ops.base import OpCase

MAX_PADDING = 8.0
"""Most stored pairs a nonzero (rows x stored width / nnz) the backend takes. Each padded pair
is a lane that loads and gathers nothing; past 8 most lanes of a typical group do, and one long
row (a graph's hub, an arrowhead) would pad every row to its length: those matrices are the
CSR kernels' (their rows cut into slices)."""
MAX_GROUP = 32
"""Most lanes a row: a warp. A row longer than 32 takes ceil(W / 32) passes, a round trip of
pairs and gathers each."""


def group_lanes(width: int) -> int:
    """G, the lanes of a row: the smallest power of two >= the longest row W, at most
    :data:`MAX_GROUP` (32), at least 1. W 13 -> 16; W 5 -> 8; W 41 -> 32 (two passes); W 0
    (no nonzeros) -> 1."""
    return pow2_at_least(width, MAX_GROUP)


def stored_width(width: int) -> int:
    """Wp, the stored pairs a row: W rounded up to a multiple of G (:func:`group_lanes`), so
    every lane of every pass has an entry. W 13 -> 16; W 41 -> 64; W 0 -> 0."""
    g = group_lanes(width)
    return -(-width // g) * g


@dataclass(frozen=True)
class EllFormat:
    """A matrix as row-major ELL on the host: entry i of row r at ``r x width + i``."""

    rows: int
    width: int
    """Wp, the stored pairs a row (:func:`stored_width`: the longest row, rounded up to a
    multiple of its group's lanes)."""
    longest: int
    """W, the longest row's nonzeros."""
    col: np.ndarray
    """int64, rows x Wp: -1 in the padding."""
    val: np.ndarray
    """float64, rows x Wp: 0 in the padding."""

    @property
    def stored(self) -> int:
        return self.rows * self.width


def ell_format(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> EllFormat:
    """The padded pairs, row-major::

        W = max row length;  Wp = stored_width(W)
        col[r x Wp + i] = indices[indptr[r] + i]  (i < len(r)), else -1

    Rows [a b .], [. . .], [c . .] (nonzeros a at 0, b at 1, c at 0): W 2, G 2, Wp 2, col
    [0, 1, -1, -1, 0, -1], val [a, b, 0, 0, c, 0]."""
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = int(indptr.size - 1)
    lengths = np.diff(indptr)
    longest = int(lengths.max()) if rows and lengths.size else 0
    width = stored_width(longest)
    col = np.full(rows * width, -1, dtype=np.int64)
    val = np.zeros(rows * width, dtype=np.float64)
    nnz = int(indptr[-1]) if rows else 0
    if nnz:
        row = np.repeat(np.arange(rows, dtype=np.int64), lengths)
        slot = np.arange(nnz, dtype=np.int64) - np.repeat(indptr[:-1], lengths)
        at = row * width + slot
        col[at] = np.asarray(indices, dtype=np.int64)[:nnz]
        val[at] = np.asarray(data, dtype=np.float64)[:nnz]
    return EllFormat(rows, width, longest, col, val)


def ell_format_of(csr: Any) -> EllFormat:
    """:func:`ell_format` of ``csr``, built once per matrix in the formats' cache
    (``format_cache.FORMATS``): auto's candidate and the backend's own case share it."""
    from sparsescope.backends.format_cache import FORMATS

    return FORMATS.get(csr, ("spmm-ell",),
                       lambda m: ell_format(m.indptr, m.indices, m.data))


def padding(indptr: np.ndarray) -> float:
    """Stored pairs a nonzero: ``rows x Wp / nnz`` (1.0 for a matrix of no nonzeros). Rows of
    3, 1 and 2 nonzeros: Wp 4, 3 x 4 / 6 = 2.0."""
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    nnz = int(lengths.sum())
    return float(lengths.size * stored_width(int(lengths.max()))) / nnz if nnz else 1.0


def ell_declined(indptr: np.ndarray, limit: float | None = MAX_PADDING) -> str:
    """Why the ELL kernel does not take a matrix, or "": its padding (:func:`padding`) above
    ``limit`` (None: :data:`MAX_PADDING`). Read from the row pointers alone, before any format
    is built."""
    limit = MAX_PADDING if limit is None else limit
    pad = padding(indptr)
    if pad > limit:
        lengths = np.diff(np.asarray(indptr))
        return (f"ELL padding {pad:.1f} stored pairs a nonzero > {limit:g} (the longest row "
                f"{int(lengths.max())} against a mean of {lengths.mean():.1f})")
    return ""


def ell_rows(indptr: np.ndarray) -> SlicePlan:
    """The slices of a plan on ELL rows (rowgroup's and colmajor's ``ell``): one a row, uncut
    (``slice_ptr`` the row pointers, which the model reads for the rows' real lengths; the
    kernel reads none); S the longest row. Rows of 3, 0 and 5: S 5, 3 slices, none cut."""
    indptr = np.asarray(indptr, dtype=np.int64)
    lengths = np.diff(indptr)
    return SlicePlan(int(lengths.max()) if lengths.size else 0, indptr, None, 0)


def refuse_row_cuts(**cutting: Any) -> None:
    """ValueError where a plan on ELL rows is given an option that cuts rows (one not None or
    False): ELL rows are never cut. ``refuse_row_cuts(block_sum=False, slice_nnz=4,
    min_slice=None)`` -> "ell cuts no row: it takes neither block_sum, slice_nnz nor
    min_slice"."""
    if any(v is not None and v is not False for v in cutting.values()):
        *first, last = cutting
        raise ValueError(f"ell cuts no row: it takes neither {', '.join(first)} nor {last}")


def upload_pairs(host: Any, csr: Any, value_dtype: str, index_bytes: int
                 ) -> tuple[Any, Any, Any, Any]:
    """(slice pointers, slice rows, column indices, values) on the device for a host plan with
    ``ell`` and ``plan`` (rowgroup's, colmajor's): on ELL rows the padded pairs
    (:func:`ell_format_of`: col -1 and val 0 in the padding), the pointer arguments standing
    in by the indices (the kernel reads none); else the slices and plain CSR."""
    if not host.ell:
        slice_ptr, slice_row = upload_slices(host.plan, _gpu.INDEX_DTYPES[index_bytes])
        return (slice_ptr, slice_row, *upload_csr(csr, value_dtype, index_bytes))
    import cupy

    fmt = ell_format_of(csr)
    indices = cupy.asarray(fmt.col.astype(_gpu.INDEX_DTYPES[index_bytes]))
    return indices, indices, indices, cupy.asarray(fmt.val.astype(_gpu.VALUE_DTYPES[value_dtype]))


class EllRowsTraffic:
    """``traffic`` for a backend whose prepared case (``k``, ``host.ell``, ``host.ell_width``,
    ``indices``, ``data``) may run on ELL rows: the padded pairs' bytes
    (``model.traffic.ell_spmm_traffic``) once prepared on them; the next class's (plain CSR)
    otherwise. Put before the backend's base class."""

    def traffic(self, case: OpCase, prepared: Any):
        if prepared is None or not prepared.host.ell:
            return super().traffic(case, prepared)
        from sparsescope.model.traffic import ell_spmm_traffic

        rows, cols = case.matrix.shape
        return ell_spmm_traffic(rows, cols, case.matrix.nnz, prepared.k,
                                prepared.host.ell_width,
                                value_bytes=prepared.data.dtype.itemsize,
                                index_bytes=prepared.indices.dtype.itemsize)
