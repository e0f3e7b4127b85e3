"""Typed records handed from the matrices stage to the rest of the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field

import scipy.sparse as sp


@dataclass(frozen=True)
class Matrix:
    """A validated, canonical CSR matrix and where it came from."""

    name: str
    """Short name used in tables, e.g. ``cant`` or ``webbase-1M``."""
    csr: sp.csr_matrix = field(repr=False, compare=False)
    """Canonical CSR: sorted column indices, no duplicates, finite float64 values."""
    source: str
    """File path, ``suitesparse:Group/Name``, or ``generated:<generator>(...)``."""
    kind: str = "file"
    """Structure family: ``file``, ``banded``, ``powerlaw``, ``scattered``, ``uniform``,
    ``rmat``."""
    analog_of: str | None = None
    """For a generated stand-in, the real matrix it imitates (same rows and nnz)."""
    seed: int | None = None
    """Generator seed, for generated matrices."""

    @property
    def rows(self) -> int:
        return int(self.csr.shape[0])

    @property
    def cols(self) -> int:
        return int(self.csr.shape[1])

    @property
    def nnz(self) -> int:
        return int(self.csr.nnz)

    @property
    def is_analog(self) -> bool:
        return self.analog_of is not None


@dataclass(frozen=True)
class MatrixStats:
    """Structure statistics of a CSR matrix (what drives SpMV performance)."""

    rows: int
    cols: int
    nnz: int
    nnz_per_row_mean: float
    nnz_per_row_std: float
    nnz_per_row_min: int
    nnz_per_row_max: int
    empty_rows: int
    """Rows with no nonzero."""
    bandwidth: int
    """max |col - row| over all nonzeros (0 for an empty matrix)."""
    distinct_columns: int
    """Columns holding at least one nonzero: how many x entries are read at all."""
    x_reuse: float
    """nnz / distinct_columns: mean number of times each touched x entry is read."""
    x_reuse_in_window: float
    """Estimated fraction of x reads that hit a 128-byte line already read by the previous
    ``window_rows`` rows (a cheap proxy for L1/L2 reuse of x); in [0, 1]."""
