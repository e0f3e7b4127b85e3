"""Sweep fixtures: a store with the CPU ceilings measured once, tiny generated collections."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sweep_builders import write_collection


@pytest.fixture(scope="session")
def _ceilings_store(tmp_path_factory) -> Path:
    """A store holding this machine's CPU ceilings (measured once per session)."""
    import os

    from sparsescope.results.ceilings_cache import lookup_cpu_ceilings

    path = tmp_path_factory.mktemp("ceilings") / "store.sqlite"
    old = os.environ.get("SPARSESCOPE_STORE")
    os.environ["SPARSESCOPE_STORE"] = str(path)
    try:
        lookup_cpu_ceilings(use_store=True)
    finally:
        if old is None:
            del os.environ["SPARSESCOPE_STORE"]
        else:
            os.environ["SPARSESCOPE_STORE"] = old
    return path


@pytest.fixture
def store(tmp_path, monkeypatch, _ceilings_store) -> Path:
    """This test's own store (a copy holding the ceilings), as SPARSESCOPE_STORE."""
    path = tmp_path / "store.sqlite"
    shutil.copy(_ceilings_store, path)
    monkeypatch.setenv("SPARSESCOPE_STORE", str(path))
    return path


@pytest.fixture
def collection(tmp_path) -> Path:
    return write_collection(tmp_path / "coll", 30)


