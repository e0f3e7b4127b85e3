"""Shared helpers of the matrices tests (plain functions, imported by the test modules)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparsescope.cli import main

MODULES = ["sparsescope.cli.matrices_cmd"]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def cli(args: list[str], capsys) -> tuple[int, str, str]:
    """Run ``sparsescope matrices ...`` in-process; return (exit code, stdout, stderr)."""
    rc = main(["matrices", *args], modules=MODULES)
    out, err = capsys.readouterr()
    return rc, out, err


def assert_canonical(csr: sp.csr_matrix) -> None:
    """float64 values, int32 indices, sorted strictly increasing columns within every row."""
    assert isinstance(csr, sp.csr_matrix)
    assert csr.data.dtype == np.float64
    assert csr.indices.dtype == np.int32 and csr.indptr.dtype == np.int32
    assert csr.indptr[0] == 0 and csr.indptr[-1] == csr.nnz
    steps = np.diff(csr.indices.astype(np.int64))
    inner = np.ones(len(steps), dtype=bool)
    ends = csr.indptr[1:-1] - 1
    inner[ends[(ends >= 0) & (ends < len(steps))]] = False
    assert (steps[inner] > 0).all(), "columns not strictly increasing within a row"
    if csr.nnz:
        assert csr.indices.min() >= 0 and csr.indices.max() < csr.shape[1]
