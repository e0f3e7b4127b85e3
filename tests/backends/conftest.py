"""A small canonical matrix for the backend tests."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.matrices.types import Matrix


@pytest.fixture(scope="module")
def small_matrix() -> Matrix:
    """300 x 200, ~5% dense, float64, sorted indices, every row's last entry nonzero-valued."""
    csr = sp.random(300, 200, density=0.05, format="csr", random_state=11, dtype=np.float64)
    csr.sum_duplicates()
    csr.sort_indices()
    assert csr.indptr[-1] > csr.indptr[-2]  # the last row has a nonzero to drop
    return Matrix(name="rand300x200", csr=csr, source="generated:test", kind="uniform", seed=11)
