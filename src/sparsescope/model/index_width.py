"""INT32 against INT64 indices: bytes, waste and arithmetic intensity (seed 000, section 9.3)."""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.model.spmv import spmv_traffic

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class IndexWidthRow:
    """One matrix of seed 000 section 9.3."""

    name: str
    int64_bytes: int
    int32_bytes: int
    waste_bytes: int
    """int64_bytes - int32_bytes: traffic spent on index width nobody needs."""
    waste_pct: float
    """100 x waste / int64_bytes."""
    int64_ai: float
    int32_ai: float
    int32_fits: bool
    """Whether rows, cols and nnz all fit in a signed 32-bit index."""


def index_width_row(name: str, rows: int, cols: int, nnz: int, *, value_bytes: int = 4,
                    y_read: bool = True) -> IndexWidthRow:
    """Compare INT64 and INT32 CSR traffic for one matrix (the seed counts y read + write)::

        waste = (nnz + rows + 1) x (8 - 4) bytes

    Seed check: cant 49.3 MB (INT64) vs 33.1 MB (INT32), 16.3 MB = 33.0 % wasted.
    """
    wide = spmv_traffic(rows, cols, nnz, value_bytes=value_bytes, index_bytes=8, y_read=y_read)
    narrow = spmv_traffic(rows, cols, nnz, value_bytes=value_bytes, index_bytes=4, y_read=y_read)
    waste = wide.total_bytes - narrow.total_bytes
    return IndexWidthRow(
        name=name, int64_bytes=wide.total_bytes, int32_bytes=narrow.total_bytes,
        waste_bytes=waste, waste_pct=100.0 * waste / wide.total_bytes,
        int64_ai=wide.arithmetic_intensity, int32_ai=narrow.arithmetic_intensity,
        int32_fits=max(rows, cols, nnz) <= INT32_MAX,
    )
