"""Suites of the SpMM and slice issue: ``dlmc3`` (seed 004) and ``slice003`` (seed 003).

``dlmc3`` holds generated analogs of the three DLMC matrices of seed 004 (pruned DNN weights,
70 % sparse), with their exact shapes, nnz and row-length spread:

============== =========== ======== ========= =============================================
name           shape       nnz      std nnz   seed 004 table
============== =========== ======== ========= =============================================
dlmc-512x1024  512 x 1024  157,286  24.6081   ID 1 (green)
dlmc-256x512   256 x 512   39,321   10.6942   ID 2 (purple)
dlmc-128x256   128 x 256   9,830    7.49307   ID 3 (red)
============== =========== ======== ========= =============================================

They come from the ``pruned`` generator (:func:`pruned`): row lengths Gaussian around the mean
with the seed's standard deviation (magnitude pruning leaves rows of different density; a
binomial spread alone would give 14.7 for ID 1, not 24.6), columns uniform and distinct.
Real DLMC ``.smtx`` files are read from disk by ``matrices.read_matrix`` (values 1.0).

``slice003`` holds seed 003's slicing workloads: square matrices with a fixed 10 % of their
columns per row (brainevent's ``get_csr(replace=False)``), 1,000 to 10,000 rows, with the row
counts selected from each (:data:`SLICE_WORKLOADS`): 16-256 rows, and 5,000 rows of the
10,000 x 10,000 matrix (1,000 nonzeros per row) for the large workload.

Registration: ``SUITES`` and ``GENERATORS`` are plain dicts of the matrices package;
:func:`register` adds these suites and the generator to them (idempotent). Until it is called
at import of ``sparsescope.matrices``, :func:`build_named_entry` and :func:`load` work on
their own.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.matrices._sampling import apportion, assemble, check_sizes, sorted_distinct
from sparsescope.matrices.suites import Suite, SuiteEntry, scale_entry
from sparsescope.matrices.types import Matrix

#: Lowest row weight: no row of a pruned layer is empty unless nnz forces it.
MIN_ROW_WEIGHT = 0.05


def pruned(rows: int, nnz: int, *, cols: int | None = None, seed: int = 0,
           row_std: float = 0.0) -> sp.csr_matrix:
    """Pruned-DNN-like: Gaussian row lengths (mean nnz / rows, std ``row_std``), uniform
    distinct columns.

    Row weights ``w_i = max(0.05, 1 + (row_std / mean) z_i)``, z standard normal; lengths are
    the exact apportionment of nnz to the weights, capped at cols (so ``row_std = 0`` gives
    every row the same length, +-1). Values in (0, 1] as every generator's.
    """
    rows, nnz = int(rows), int(nnz)
    cols = rows if cols is None else int(cols)
    check_sizes(rows, cols, nnz)
    if row_std < 0:
        raise UsageError(f"pruned needs row_std >= 0, got {row_std}")
    rng = np.random.default_rng(seed)
    mean = nnz / rows
    weights = np.maximum(MIN_ROW_WEIGHT, 1.0 + (row_std / mean) * rng.standard_normal(rows))
    lengths = apportion(weights, nnz, cols)
    lo = np.zeros(rows, dtype=np.int64)
    width = np.full(rows, cols, dtype=np.int64)

    def fill(r0: int, r1: int, out: np.ndarray) -> None:
        out[:] = sorted_distinct(lengths[r0:r1], lo[r0:r1], width[r0:r1], rng)

    return assemble(rows, cols, lengths, fill, rng)


def _dlmc(name: str, rows: int, cols: int, nnz: int, std: float, seed_id: int) -> SuiteEntry:
    return SuiteEntry(name, "pruned", rows, cols, nnz, {"row_std": std},
                      analog_of=f"DLMC matrix {seed_id} of seed 004 ({rows} x {cols}, "
                                f"{nnz:,} nnz, std {std})",
                      description="pruned DNN layer, 70% sparse, Gaussian row lengths")


DLMC3 = Suite("dlmc3", "analogs of seed 004's three DLMC matrices (exact shape, nnz, row std)", (
    _dlmc("dlmc-512x1024", 512, 1024, 157_286, 24.6081, 1),
    _dlmc("dlmc-256x512", 256, 512, 39_321, 10.6942, 2),
    _dlmc("dlmc-128x256", 128, 256, 9_830, 7.49307, 3),
), scalable=False)


def _square(name: str, n: int, per_row: int) -> SuiteEntry:
    return SuiteEntry(name, "pruned", n, n, n * per_row, {"row_std": 0.0},
                      description=f"{per_row} distinct columns in every row (10% dense), "
                                  "seed 003's benchmark matrices")


SLICE003 = Suite("slice003", "seed 003's row-slicing matrices: n x n, 10% of columns per row", (
    _square("slice-1000", 1_000, 100),
    _square("slice-5000", 5_000, 500),
    _square("slice-10000", 10_000, 1_000),
))

#: matrix -> selected-row counts of seed 003's workloads (5,000 rows x 1,000 nnz: the large one).
SLICE_WORKLOADS: dict[str, tuple[int, ...]] = {
    "slice-1000": (16, 32, 64),
    "slice-5000": (32, 64, 128),
    "slice-10000": (64, 128, 256, 5_000),
}

SUITES_HERE: dict[str, Suite] = {s.name: s for s in (DLMC3, SLICE003)}


def register(suites: dict | None = None, generators: dict | None = None) -> None:
    """Add ``dlmc3``, ``slice003`` and the ``pruned`` generator to the matrices registries
    (``matrices.suites.SUITES`` and ``matrices.generators.GENERATORS`` unless given)."""
    if suites is None:
        from sparsescope.matrices.suites import SUITES as suites
    if generators is None:
        from sparsescope.matrices.generators import GENERATORS as generators
    for name, suite in SUITES_HERE.items():
        suites.setdefault(name, suite)
    generators.setdefault("pruned", pruned)


def _suite(name: str) -> Suite:
    from sparsescope.matrices.suites import SUITES

    if name in SUITES:
        return SUITES[name]
    if name in SUITES_HERE:
        return SUITES_HERE[name]
    raise UnknownNameError("suite", name, sorted({*SUITES, *SUITES_HERE}))


def entries(name: str, scale: float = 1.0) -> list[SuiteEntry]:
    """The entries of suite ``name`` (registered or defined here) at ``scale``."""
    suite = _suite(name)
    if not 0 < scale <= 1:
        raise UsageError(f"scale must be in (0, 1] (a fraction of the suite), got {scale}")
    if not suite.scalable:
        return list(suite.entries)
    return [scale_entry(e, scale) for e in suite.entries]


def build(entry: SuiteEntry, seed: int = 0) -> Matrix:
    """Generate one entry (the ``pruned`` kind works whether registered or not)."""
    from sparsescope.matrices.generators import GENERATORS, generate

    if entry.kind == "pruned" and "pruned" not in GENERATORS:
        csr = pruned(entry.rows, entry.nnz, cols=entry.cols, seed=seed, **dict(entry.params))
    else:
        csr = generate(entry.kind, entry.rows, entry.nnz, cols=entry.cols, seed=seed,
                       **dict(entry.params))
    return Matrix(name=entry.name, csr=csr, source=entry.source(seed), kind=entry.kind,
                  analog_of=entry.analog_of, seed=seed)


def load(name: str, scale: float = 1.0, seed: int = 0) -> Iterator[Matrix]:
    """The matrices of suite ``name``, generated one at a time."""
    chosen = entries(name, scale)
    return (build(e, seed) for e in chosen)


def build_named_entry(suite: str, matrix: str, *, scale: float = 1.0, seed: int = 0) -> Matrix:
    """One matrix of a suite by name (the profile target builds only the profiled one)."""
    chosen = entries(suite, scale)
    for entry in chosen:
        if entry.name == matrix:
            return build(entry, seed)
    raise UnknownNameError(f"entry of suite {suite!r}", matrix, [e.name for e in chosen])


def slice_workloads(suite: str, matrix: str) -> tuple[int, ...]:
    """Seed 003's row-slice workloads of a ``slice003`` matrix (rows selected per workload);
    empty for any other suite or matrix."""
    if suite != SLICE003.name:
        return ()
    return tuple(SLICE_WORKLOADS.get(matrix, ()))
