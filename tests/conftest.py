"""Shared test fixtures: the real H200 recordings in ../shared/fixtures/h200 and a GPU probe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = Path(
    os.environ.get("SPARSESCOPE_SHARED_FIXTURES", REPO_ROOT.parent / "shared" / "fixtures" / "h200")
)


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """Folder of real H200 profiler outputs, SASS listings and timings (read-only)."""
    if not SHARED_FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {SHARED_FIXTURES}; "
                    "set SPARSESCOPE_SHARED_FIXTURES")
    return SHARED_FIXTURES


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path_factory, monkeypatch):
    """Keep every test's results store and caches out of the user's home."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("SPARSESCOPE_CACHE", str(base / "cache"))
    monkeypatch.setenv("SPARSESCOPE_STORE", str(base / "store.sqlite"))


def _gpu_present() -> bool:
    """Probe a real device (not just an importable library)."""
    try:
        from sparsescope.hardware.detect import gpu_available
    except ImportError:
        return False
    return gpu_available()


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``gpu`` when no CUDA device answers."""
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _gpu_present():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU present (probed with torch/cupy)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
