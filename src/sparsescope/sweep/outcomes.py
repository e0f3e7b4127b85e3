"""What the sweep engine hands its client for each case, and what a probe said of a matrix."""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.results.records import CaseResult, MatrixRecord
from sparsescope.sweep.tasks import SweepTask


@dataclass(frozen=True)
class SweepResult:
    """One finished task, as the client sees it."""

    task: SweepTask
    matrix_hash: str
    """Content hash of the matrix (``file-...`` for a source that could not be read)."""
    matrix: MatrixRecord | None
    """Identity and statistics; None when the source could not be read, or was not loaded
    (every case of it found stored)."""
    case: CaseResult | None
    """The case; None when ``stored`` (in the store, not run again)."""
    stored: bool = False
    """In the store: stored by an earlier sweep, or by this one for another source with the
    same content (run once, reported under each source's own name)."""


@dataclass(frozen=True)
class Probe:
    """A matrix as a worker found it: its content hash and record, or why it is unreadable."""

    hash: str
    matrix: MatrixRecord | None
    reason: str
    outcome: str = "skipped"
    """Outcome of every case of a source that could not be probed."""
