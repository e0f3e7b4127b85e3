"""The bytes a backend's own storage format moves for one case, declared by the backend.

Like an nvbench benchmark declaring its global-memory reads and writes, every backend says what
one call of it must move at least, array by array, for the case it prepared. A backend on plain
CSR declares CSR's bytes at its index width (:func:`csr_spmv_traffic` and the SpMM / slice
equivalents); an own format (SELL slices, 16-bit deltas, 1 x B blocks) declares its packed
arrays and its padding. The record is stored with the case (``CaseResult.traffic``), so a report
or the model reads it back instead of charging every format INT32 CSR's bytes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traffic:
    """Minimum bytes one call moves, by array (each read or written once)."""

    format: str
    """What the bytes describe, e.g. ``CSR INT32`` or ``SELL-32 delta16``."""
    values_bytes: int
    """Stored matrix values read (including explicit fill values of a padded format)."""
    indices_bytes: int
    """Column indices, offsets or block starts read."""
    row_meta_bytes: int
    """Row pointers, slice pointers or other per-row / per-slice metadata read."""
    x_bytes: int
    """Dense input read once each (x, X, or the selected-row list of a slice)."""
    y_read_bytes: int
    """Output read before it is written (``y += A x``); 0 when the output is only written."""
    y_written_bytes: int
    """Output written once."""
    padding_bytes: int = 0
    """Of the bytes above, those that carry no nonzero (format padding, fill values); kept to
    show what a format pays for its regularity."""
    flops: int = 0
    """Floating-point operations of one call (2 per multiply-add)."""

    @property
    def total_bytes(self) -> int:
        """values + indices + row metadata + x + y read + y written."""
        return (self.values_bytes + self.indices_bytes + self.row_meta_bytes + self.x_bytes
                + self.y_read_bytes + self.y_written_bytes)

    @property
    def arithmetic_intensity(self) -> float:
        """flops / total_bytes (FLOP/byte); 0 for a case that moves nothing."""
        return self.flops / self.total_bytes if self.total_bytes else 0.0


def csr_spmv_traffic(rows: int, cols: int, nnz: int, *, value_bytes: int = 4,
                     index_bytes: int = 4, y_read: bool = False) -> Traffic:
    """CSR SpMV's bytes (seed 000, section 2.5)::

        values   = nnz * value_bytes        indices = nnz * index_bytes
        row meta = (rows + 1) * index_bytes x = cols * value_bytes
        y        = rows * value_bytes written (and read too when y_read)
        flops    = 2 * nnz

    Hand check: webbase-1M (1,000,005 rows, 3,105,536 nnz) float32 INT64 -> 53,266,520 B.
    """
    y = rows * value_bytes
    return Traffic(format=f"CSR INT{8 * index_bytes}", values_bytes=nnz * value_bytes,
                   indices_bytes=nnz * index_bytes, row_meta_bytes=(rows + 1) * index_bytes,
                   x_bytes=cols * value_bytes, y_read_bytes=y if y_read else 0,
                   y_written_bytes=y, flops=2 * nnz)


def csr_spmm_traffic(rows: int, cols: int, nnz: int, k: int, *, value_bytes: int = 4,
                     index_bytes: int = 4) -> Traffic:
    """CSR SpMM's compulsory bytes: A once, X (``cols x k``) once, Y (``rows x k``) written;
    flops = 2 * nnz * k (``model.spmm.spmm_traffic``'s compulsory bytes, by array)."""
    return Traffic(format=f"CSR INT{8 * index_bytes}", values_bytes=nnz * value_bytes,
                   indices_bytes=nnz * index_bytes, row_meta_bytes=(rows + 1) * index_bytes,
                   x_bytes=cols * k * value_bytes, y_read_bytes=0,
                   y_written_bytes=rows * k * value_bytes, flops=2 * nnz * k)


def block_spmm_traffic(rows: int, cols: int, nnz: int, k: int, *, blocks: int,
                       block_rows: int, block_values: int = 128) -> Traffic:
    """SpMM from dense blocks of ``block_values`` float32 values (16 x 8 for the tensor-core
    kernel), one int32 block column each and int32 block-row pointers::

        values   = blocks x block_values x 4      (padding: the stored zeros,
                                                   (blocks x block_values - nnz) x 4)
        indices  = blocks x 4;  row meta = (block_rows + 1) x 4
        x = cols k 4;  y = rows k 4;  flops = 2 nnz k (the nonzeros' work, not the zeros')

    Hand check: 32 x 16, 300 nonzeros in 4 blocks of 2 block rows, k 8: values 2,048 B
    (padding 848), indices 16, row meta 12, x 512, y 1,024; flops 4,800."""
    return Traffic(format=f"16x8 blocks (fill {block_values * blocks / nnz:.2f})" if nnz
                   else "16x8 blocks", values_bytes=blocks * block_values * 4,
                   indices_bytes=blocks * 4, row_meta_bytes=(block_rows + 1) * 4,
                   x_bytes=cols * k * 4, y_read_bytes=0, y_written_bytes=rows * k * 4,
                   padding_bytes=(blocks * block_values - nnz) * 4, flops=2 * nnz * k)


def ell_spmm_traffic(rows: int, cols: int, nnz: int, k: int, width: int, *,
                     value_bytes: int = 4, index_bytes: int = 4) -> Traffic:
    """SpMM from ELL (every row padded to ``width`` stored pairs, no row pointers)::

        values = rows x W x value bytes;  indices = rows x W x index bytes;  row meta = 0
        padding = (rows x W - nnz) x (value + index bytes)
        x = cols k value bytes;  y = rows k value bytes;  flops = 2 nnz k

    Hand check: 3 rows, W 2, 4 nonzeros, 5 columns, k 8, float32 / int32: values 24 B,
    indices 24 B, padding 16 B, x 160 B, y 96 B, flops 64."""
    stored = rows * width
    return Traffic(format=f"ELL INT{8 * index_bytes} (width {width})",
                   values_bytes=stored * value_bytes, indices_bytes=stored * index_bytes,
                   row_meta_bytes=0, x_bytes=cols * k * value_bytes, y_read_bytes=0,
                   y_written_bytes=rows * k * value_bytes,
                   padding_bytes=(stored - nnz) * (value_bytes + index_bytes), flops=2 * nnz * k)


def csr_slice_traffic(selected_rows: int, cols: int, nnz_selected: int, *, value_bytes: int = 4,
                      index_bytes: int = 4, weights: str = "per-nnz") -> Traffic:
    """A row slice into a dense output (``model.slice_rows.slice_traffic``'s dense bytes)::

        x        = selected_rows * index_bytes         (the row index list)
        row meta = 2 * selected_rows * index_bytes     (start and end of each row)
        indices  = nnz_selected * index_bytes
        values   = nnz_selected * value_bytes (per-nnz) | value_bytes (scalar)
        y        = selected_rows * cols * value_bytes  (the dense output, zeros included)
    """
    values = nnz_selected * value_bytes if weights == "per-nnz" else value_bytes
    return Traffic(format=f"CSR INT{8 * index_bytes} row slice", values_bytes=values,
                   indices_bytes=nnz_selected * index_bytes,
                   row_meta_bytes=2 * selected_rows * index_bytes,
                   x_bytes=selected_rows * index_bytes, y_read_bytes=0,
                   y_written_bytes=selected_rows * cols * value_bytes, flops=0)
