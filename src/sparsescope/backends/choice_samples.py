"""What an SpMV chooser packs to choose: its candidates' plans and its trial on row samples of
a large matrix, so that only the kernel it keeps is packed whole.

A chooser (``cuda-spmv-auto``) plans every candidate (about a dozen launches of five formats),
then times the few the model cannot rank apart (``select_predicted.shortlist``). On the whole
matrix each distinct format is packed once: on cage15 (99 M nonzeros, H100 host, 2026-11-27)
the choice took 16-18 s, of which the candidates' plans, each packing its full format, and
the trial, uploading them. Neither needs the whole matrix:

**The plans** (:func:`chooser_plans`): above :data:`WHOLE_PLAN_NNZ` nonzeros the candidates
are planned on the row sample ``sparsescope model`` plans on above its memory budget
(``model.plan_sample``: :data:`~sparsescope.model.plan_sample.SAMPLE_NNZ` nonzeros of evenly
spaced windows and the longest row's, every column kept; the bytes and the grid scaled back,
the time model on the whole matrix)::

    plan on the whole matrix   while nnz <= WHOLE_PLAN_NNZ
    else on a row sample of    SAMPLE_NNZ nonzeros (the tighter memory budget wins)

On the 2-core machine (H100 datasheet, 2026-11-27) the choice's plans took 3.2 s instead of
12.2 s on the cage15 analog at a quarter scale (24.8 M nonzeros; every prediction the same to
0.1 %) and 3.7 s instead of 14.2 s on circuit5M's (14.9 M; predictions within 5.3 %, the
16-bit formats' escapes, the same choice, 4 of the 5 shortlisted the same).

**The trial** (:func:`trial_matrix`): the shortlist is timed on a row sample (the same design:
evenly spaced whole windows and the longest row's) large enough to be timed as the whole
matrix is, from DRAM: its stored entries are :data:`TRIAL_L2_MULTIPLE` times the device's
L2, so its format cannot stay on chip between calls whatever the flush::

    trial nnz = TRIAL_L2_MULTIPLE x L2 bytes / (value bytes + 4 index bytes)
    on the whole matrix while nnz <= trial nnz

(H100, 50 MiB of L2, FP32: 26 M nonzeros; cage15 is timed on a quarter of its rows.) The
candidates' formats for the trial are packed outside the format cache (the sample is not a
matrix the run holds), a thread a format within the host's cores and memory; the kept
candidate is then packed whole through the cache, where the run's own backend of that kernel
may have packed it already, and the fastest prediction's is packed there during the trial.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import scipy.sparse as sp

from sparsescope.model.plan_sample import (
    PLAN_BYTES_PER_NNZ,
    SAMPLE_NNZ,
    row_sample,
    sample_matrix,
)

#: Nonzeros up to which a chooser plans its candidates on the whole matrix. Below it a format
#: packs in well under a second (SELL on 4 M nonzeros: 0.2-0.3 s on the 2-core machine), so a
#: sample's small error in bytes a nonzero buys nothing; above it the packing grows with the
#: matrix (1.5-3.7 s a format at 25 M on that machine) while the sample's stays.
WHOLE_PLAN_NNZ = 4 * SAMPLE_NNZ
#: A trial sample's stored entries, in multiples of the L2 (module docstring): at 4x no
#: replacement policy keeps more than a quarter of the format on chip between two calls.
TRIAL_L2_MULTIPLE = 4
#: Bytes of an index a trial sample's size counts (the candidates' formats hold INT32 or
#: 16-bit column offsets; 4 bounds them).
INDEX_BYTES = 4


def chooser_budget(current: int | None) -> int:
    """The plan memory budget (bytes, ``context.plan_memory_budget``) a chooser plans under:
    the tighter of ``current`` (None: no limit) and ``WHOLE_PLAN_NNZ x PLAN_BYTES_PER_NNZ``,
    so that a matrix above :data:`WHOLE_PLAN_NNZ` is planned on the model's row sample.
    Hand check: no budget -> 4 x 10^6 x 300 = 1.2 x 10^9 bytes; a 1 GB budget stays."""
    mine = WHOLE_PLAN_NNZ * PLAN_BYTES_PER_NNZ
    return mine if current is None else min(int(current), mine)


@contextlib.contextmanager
def chooser_plans():
    """Within the block, plans are made under :func:`chooser_budget`."""
    from sparsescope.context.predict import current_plan_budget, plan_memory_budget

    with plan_memory_budget(chooser_budget(current_plan_budget())):
        yield


def trial_nnz(l2_bytes: int, value_bytes: int) -> int:
    """Nonzeros a trial sample holds (module docstring). Hand check: 50 MiB of L2, FP32 ->
    4 x 52,428,800 / 8 = 26,214,400."""
    return TRIAL_L2_MULTIPLE * int(l2_bytes) // (int(value_bytes) + INDEX_BYTES)


@dataclass(frozen=True)
class TrialMatrix:
    """The matrix a shortlist is timed on: the whole matrix, or a row sample of it."""

    csr: sp.csr_matrix
    sampled: bool
    total_nnz: int

    def describe(self) -> str:
        """The trial's matrix in words, for the selection's reason."""
        if not self.sampled:
            return "on the whole matrix"
        return (f"on a row sample of {self.csr.nnz:,} of {self.total_nnz:,} nonzeros "
                f"({self.csr.shape[0]:,} rows: evenly spaced windows and the longest row's; "
                f"{TRIAL_L2_MULTIPLE}x the L2, so timed from DRAM as the whole matrix)")


def trial_matrix(csr: sp.csr_matrix, l2_bytes: int, value_bytes: int) -> TrialMatrix:
    """``csr`` itself while it holds at most :func:`trial_nnz` nonzeros, else its row sample
    of about that many (``model.plan_sample.row_sample``)."""
    target = trial_nnz(l2_bytes, value_bytes)
    if target <= 0 or csr.nnz <= target:
        return TrialMatrix(csr, False, int(csr.nnz))
    return TrialMatrix(sample_matrix(csr, row_sample(csr.indptr, target)), True, int(csr.nnz))


def packed_apart(backends: list[Any], csr: sp.csr_matrix) -> dict[tuple, Any]:
    """``format_key -> format`` of each distinct format among ``backends`` (those with a
    ``build_format``) packed from ``csr`` outside the format cache (a trial sample's formats
    are used once), on as many threads as formats within ``format_cache.build_threads`` (the
    host's cores and memory). A format that fails to pack is left out: its candidate's
    ``prepare`` then fails with the reason."""
    from sparsescope.backends.format_cache import build_threads

    builders: dict[tuple, Any] = {}
    for backend in backends:
        if hasattr(backend, "build_format"):
            builders.setdefault(backend.format_key(), backend.build_format)
    if not builders:
        return {}
    out: dict[tuple, Any] = {}

    def build(item):
        key, make = item
        try:
            out[key] = make(csr)
        except Exception:  # noqa: BLE001 - the candidate's own prepare reports it
            pass

    with ThreadPoolExecutor(max_workers=min(len(builders), build_threads(csr.nnz))) as pool:
        list(pool.map(build, builders.items()))
    return out
