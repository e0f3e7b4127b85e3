"""Typed op parameters and the counts an op derives from them, one frozen dataclass per op.

A case record (:class:`~sparsescope.results.records.CaseResult`) carries its op's parameters
as one of these records and the counts derived while building the case (the SpMM condition
number, the slice's selected nonzeros and sectors) as another; code reads fields, never strings.
Which record belongs to which op is the registry table's data (``sparsescope.registry``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class OpParams:
    """Base of every op's parameter record (SpMV has no parameter)."""

    def as_dict(self) -> dict[str, Any]:
        """Field -> value, None values left out (an unset slice ``rows``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}

    def label(self) -> str:
        """``k=8 layout=row``: how tables and profiled-kernel labels name the case.

        Explicit row lists are summarised by their length: a label is read by people.
        """
        parts = []
        for name, value in self.as_dict().items():
            if isinstance(value, tuple):
                continue
            parts.append(f"{name}={value}")
        return " ".join(parts)


@dataclass(frozen=True)
class OpDerived:
    """Base of the counts an op derives while building a case (none for SpMV)."""


@dataclass(frozen=True)
class SpmvParams(OpParams):
    """``y = A x`` takes no parameter."""


@dataclass(frozen=True)
class SpmvDerived(OpDerived):
    cancellation: float = 1.0
    """kappa = || |A| |x| ||_2 / || A x ||_2 (dimensionless, >= 1); beyond
    ``ops.spmv.CANCELLATION_ALLOWANCE`` the tolerance is scaled by kappa / allowance."""


@dataclass(frozen=True)
class SpmmParams(OpParams):
    """``Y = A X`` with X dense, ``cols x k``."""

    k: int = 8
    """Columns of X and Y (count)."""
    layout: str = "row"
    """X's storage order: ``row`` (row-major, a row of k values contiguous) or ``col``."""


@dataclass(frozen=True)
class SpmmDerived(OpDerived):
    condition: float = 1.0
    """Cancellation factor || |A| |X| ||_F / || A X ||_F (dimensionless); the tolerance is
    scaled by it (``ops.spmm.condition``)."""


@dataclass(frozen=True)
class SliceParams(OpParams):
    """``out[r, :] = A[rows[r], :]`` as a dense output (seed 003)."""

    rows_selected: int = 64
    """Rows selected (count, repeats allowed); drawn at random when ``rows`` is not given."""
    rows: tuple[int, ...] | None = None
    """Explicit row indices (repeats allowed), or None to draw ``rows_selected`` at random."""
    weights: str = "per-nnz"
    """``scalar``: every nonzero one value; ``per-nnz``: A's own values."""
    out_of_range: str = "error"
    """An index outside [0, rows): ``error`` (the default) or ``zero`` (a zero output row)."""


@dataclass(frozen=True)
class SliceDerived(OpDerived):
    nnz_selected: int = 0
    """Nonzeros in the selected rows, repeats counted (count)."""
    sectors_32b: int = 0
    """32-byte sectors of the dense output the selected nonzeros touch (count)."""
    lines_128b: int = 0
    """128-byte lines of the dense output the selected nonzeros touch (count; seed 003's unit)."""
    invalid_rows: int = 0
    """Selected indices outside the matrix, written as zero rows (count)."""
