"""Matrices for the GPU tests: the ``awkward`` suite plus fresh random ones of awkward shapes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.matrices.types import Matrix


def _canonical(csr: sp.csr_matrix) -> sp.csr_matrix:
    csr = sp.csr_matrix(csr, dtype=np.float64)
    csr.sum_duplicates()
    csr.sort_indices()
    csr.data = np.where(csr.data == 0, 0.5, csr.data)  # an explicit zero would hide a drop
    return csr


def _random(rng: np.random.Generator, rows: int, cols: int, density: float) -> sp.csr_matrix:
    return _canonical(sp.random(rows, cols, density=density, format="csr", random_state=rng,
                                data_rvs=lambda n: rng.random(n) * 2 - 1))


def _heavy_row(rng: np.random.Generator, n: int) -> sp.csr_matrix:
    """One row holding most nonzeros, many empty rows, n not a multiple of 32."""
    heavy = rng.choice(n, size=n * 3 // 4, replace=False)
    rows = np.concatenate([np.full(heavy.size, n // 3), rng.integers(0, n, size=n // 8)])
    cols = np.concatenate([heavy, rng.integers(0, n, size=n // 8)])
    data = rng.random(rows.size) * 2 - 1
    return _canonical(sp.coo_matrix((data, (rows, cols)), shape=(n, n)).tocsr())


def _mixed_rows(rng: np.random.Generator, n: int) -> sp.csr_matrix:
    """Tiles of many short rows (1-3 nonzeros) and a few long ones (40-900, every 97th row):
    a tile kernel sums the long ones a warp each (rows longer than 32 x its lanes)."""
    lengths = rng.integers(1, 4, size=n)
    lengths[::97] = rng.integers(40, 900, size=lengths[::97].size)
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n, size=rows.size)
    data = rng.random(rows.size) * 2 - 1
    return _canonical(sp.coo_matrix((data, (rows, cols)), shape=(n, n)).tocsr())


@pytest.fixture(scope="session")
def awkward_matrices() -> list[Matrix]:
    """The ``awkward`` suite and random matrices drawn fresh on every run (seed in the name)."""
    from sparsescope.matrices import load_suite

    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    random = {
        "rand-1x1": _random(rng, 1, 1, 1.0),
        "rand-1x777": _random(rng, 1, 777, 0.3),
        "rand-777x1": _random(rng, 777, 1, 0.3),
        "rand-1000x1000-sparse": _random(rng, 1000, 1000, 0.0005),  # mostly empty rows
        "rand-4099x3001": _random(rng, 4099, 3001, 0.01),
        "heavy-row-3001": _heavy_row(rng, 3001),
        "mixed-rows-5003": _mixed_rows(rng, 5003),
        "dense-rows-65x2049": _random(rng, 65, 2049, 0.5),  # rows longer than a warp
    }
    matrices = list(load_suite("awkward"))
    matrices += [Matrix(name=f"{name}-seed{seed}", csr=csr, source=f"scipy.sparse.random "
                        f"seed {seed}", kind="uniform", seed=seed)
                 for name, csr in random.items()]
    return matrices


@pytest.fixture(scope="session")
def banded_4m() -> Matrix:
    """A cant-sized banded matrix (62,451 rows, 4.0 M nnz: ~33 MB with INT32, inside L2)."""
    from sparsescope.matrices import generate

    csr = generate("banded", 62_451, 4_007_383, seed=3)
    return Matrix(name="banded-cant", csr=csr, source="generated:banded", kind="banded", seed=3)
