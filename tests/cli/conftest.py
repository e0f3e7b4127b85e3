"""Fixtures of the CLI tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def powerlaw(tmp_path_factory):
    """A 2,000-row power-law matrix (20,000 nonzeros) as .mtx, written once for the model
    command's tests."""
    from sparsescope.matrices import generate, write_matrix

    path = tmp_path_factory.mktemp("powerlaw") / "pl.mtx"
    write_matrix(generate("powerlaw", 2000, 20000, seed=0), path)
    return path
