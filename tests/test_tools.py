"""The CUDA tool finder (``sparsescope._tools``): search order, newest version first, overrides.

Every search root is pointed at a temporary tree (PATH, CUDA_HOME/CUDA_PATH, the glob tables,
the site-packages folders), so what this machine has installed does not matter."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsescope import _tools
from sparsescope._tools import find_tool, override_variable, require_tool, searched_places
from sparsescope.errors import MissingDependencyError


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def roots(tmp_path, monkeypatch):
    """No tool anywhere until a test puts one under ``tmp_path``; a fresh search cache."""
    for var in ("CUDA_HOME", "CUDA_PATH", "SPARSESCOPE_NCU", "SPARSESCOPE_NVCC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(_tools, "TOOLKIT_GLOBS", ())
    monkeypatch.setattr(_tools, "TOOL_DIR_GLOBS", {})
    monkeypatch.setattr(_tools, "_site_dirs", list)
    _tools._find_cached.cache_clear()
    yield tmp_path
    _tools._find_cached.cache_clear()


def test_path_then_cuda_home_then_cuda_path(roots, monkeypatch):
    on_path = _exe(roots / "path" / "ncu")
    home = _exe(roots / "home" / "bin" / "ncu")
    cuda_path = _exe(roots / "cudapath" / "bin" / "ncu")
    monkeypatch.setenv("CUDA_HOME", str(roots / "home"))
    monkeypatch.setenv("CUDA_PATH", str(roots / "cudapath"))
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_tool("ncu") == on_path
    monkeypatch.setenv("PATH", "")
    assert find_tool("ncu") == home
    monkeypatch.delenv("CUDA_HOME")
    assert find_tool("ncu") == cuda_path
    other = _exe(roots / "other" / "bin" / "ncu")
    monkeypatch.setenv("CUDA_PATH", str(roots / "other"))
    assert find_tool("ncu") == other            # CUDA_PATH is part of the cache key too


def test_nsight_compute_installs_newest_version_first(roots, monkeypatch):
    for version in ("2024.1.0", "2025.3.1", "2025.10.0"):
        _exe(roots / "opt" / f"nsight-compute-{version}" / "ncu")
    _exe(roots / "opt" / "nsight-compute" / "2025.2.0" / "ncu")     # <root>/<version>/ncu
    monkeypatch.setattr(_tools, "TOOL_DIR_GLOBS", {"ncu": (
        str(roots / "opt" / "nsight-compute*"), str(roots / "opt" / "nsight-compute*" / "*"))})
    # 2025.10 after 2025.3: the numbers compare as integers, not as text
    assert find_tool("ncu") == roots / "opt" / "nsight-compute-2025.10.0" / "ncu"
    assert find_tool("nvcc") is None                 # the ncu folders are ncu's alone


def test_toolkits_newest_version_first_before_tool_folders(roots, monkeypatch):
    for version in ("12.9", "12.10", "11.8"):
        _exe(roots / "local" / f"cuda-{version}" / "bin" / "ncu")
    _exe(roots / "opt" / "nsight-compute-2099.1.0" / "ncu")
    monkeypatch.setattr(_tools, "TOOLKIT_GLOBS", (str(roots / "local" / "cuda-*"),))
    monkeypatch.setattr(_tools, "TOOL_DIR_GLOBS", {"ncu": (str(roots / "opt" / "nsight-*"),)})
    assert find_tool("ncu") == roots / "local" / "cuda-12.10" / "bin" / "ncu"
    assert _tools.candidate_dirs("ncu") == [
        roots / "local" / "cuda-12.10" / "bin", roots / "local" / "cuda-12.9" / "bin",
        roots / "local" / "cuda-11.8" / "bin", roots / "opt" / "nsight-compute-2099.1.0"]


def test_nothing_found(roots):
    assert find_tool("ncu") is None
    with pytest.raises(MissingDependencyError) as err:
        require_tool("ncu", "profiling")
    assert str(err.value) == (
        "ncu was not found ($SPARSESCOPE_NCU, PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, the "
        "nvidia-cuda-* wheels) (needed for profiling); install NVIDIA Nsight Compute (part of "
        "the CUDA toolkit)")


def test_a_file_that_cannot_run_is_skipped(roots, monkeypatch):
    plain = roots / "home" / "bin" / "ncu"
    plain.parent.mkdir(parents=True)
    plain.write_text("not executable\n")
    monkeypatch.setenv("CUDA_HOME", str(roots / "home"))
    assert find_tool("ncu") is None


def test_override_wins(roots, monkeypatch):
    _exe(roots / "path" / "ncu")
    monkeypatch.setenv("PATH", str(roots / "path"))
    monkeypatch.setenv("SPARSESCOPE_NCU", "/somewhere/ncu-2025")
    assert find_tool("ncu") == Path("/somewhere/ncu-2025")


def test_override_variable_and_searched_places():
    assert override_variable("ncu") == "SPARSESCOPE_NCU"
    assert override_variable("c++filt") == "SPARSESCOPE_CFILT"
    assert override_variable("nvidia-smi") == "SPARSESCOPE_NVIDIA_SMI"
    assert searched_places("ncu") == (
        "$SPARSESCOPE_NCU, PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, "
        "/usr/local/cuda-*/bin, /opt/nvidia/nsight-compute*, /opt/nvidia/nsight-compute*/*, "
        "the nvidia-cuda-* wheels")
    assert "nsight" not in searched_places("nvcc")
