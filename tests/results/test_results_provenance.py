"""Provenance: versions always recorded, the checkout's own commit or ``unknown``."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime

import numpy as np
import pytest
import scipy

import sparsescope
from sparsescope.results.provenance import collect_provenance, git_commit


def test_collect_provenance():
    prov = collect_provenance("sparsescope run --suite tiny", device="NVIDIA H200",
                              driver="570.86.15", libraries={"torch": "2.9.1+cu128"})
    assert prov.command == "sparsescope run --suite tiny"
    assert (prov.device, prov.driver) == ("NVIDIA H200", "570.86.15")
    assert prov.libraries == {"numpy": np.__version__, "scipy": scipy.__version__,
                              "torch": "2.9.1+cu128"}
    assert prov.sparsescope_version == sparsescope.__version__
    assert datetime.fromisoformat(prov.created_utc).utcoffset().total_seconds() == 0
    assert prov.python.count(".") == 2 and prov.hostname and prov.platform
    assert prov.git_commit == "unknown" or len(prov.git_commit.split("-")[0]) == 40


def test_numpy_and_scipy_always_included():
    assert set(collect_provenance("x", device="cpu").libraries) == {"numpy", "scipy"}


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_commit_of_a_sparsescope_checkout(tmp_path):
    package = tmp_path / "src" / "sparsescope"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    assert git_commit(package) == "unknown"  # not a repository
    git("init", "-q", cwd=tmp_path)
    assert git_commit(package) == "unknown"  # a repository without commits
    git("add", ".", cwd=tmp_path)
    git("commit", "-q", "-m", "init", cwd=tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert git_commit(package) == head
    (package / "__init__.py").write_text("x = 1\n")
    assert git_commit(package) == head + "-dirty"


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_a_package_inside_another_repository_reports_unknown(tmp_path):
    package = tmp_path / "vendor" / "sparsescope"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    git("init", "-q", cwd=tmp_path)
    git("add", ".", cwd=tmp_path)
    git("commit", "-q", "-m", "init", cwd=tmp_path)
    assert git_commit(package) == "unknown"


def test_commit_override_for_trees_without_git(monkeypatch):
    from sparsescope.results.provenance import git_commit

    monkeypatch.setenv("SPARSESCOPE_GIT_COMMIT", "0740b16-dirty")
    assert git_commit() == "0740b16-dirty"
