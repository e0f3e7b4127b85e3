"""The dlmc3 suite (seed 004's three DLMC shapes) and DLMC .smtx files through the SpMM op."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.backends.runner import run_case
from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.matrices import read_matrix
from sparsescope.matrices.suite_dlmc import (
    DLMC3,
    SLICE003,
    build_named_entry,
    entries,
    load,
    pruned,
    register,
)
from sparsescope.timing.types import TimingConfig

#: seed 004's table: rows, cols, nnz, std of nnz per row
SEED004 = {"dlmc-512x1024": (512, 1024, 157_286, 24.6081),
           "dlmc-256x512": (256, 512, 39_321, 10.6942),
           "dlmc-128x256": (128, 256, 9_830, 7.49307)}


def test_dlmc3_has_seed004_shapes_sparsity_and_row_spread():
    matrices = list(load("dlmc3"))
    assert [m.name for m in matrices] == list(SEED004)
    for m in matrices:
        rows, cols, nnz, std = SEED004[m.name]
        assert (m.rows, m.cols, m.nnz) == (rows, cols, nnz)
        assert 1 - nnz / (rows * cols) == pytest.approx(0.70, abs=5e-4)  # 70 % sparse
        lengths = np.diff(m.csr.indptr)
        assert lengths.std() == pytest.approx(std, rel=0.15)  # realistic spread, not binomial
        assert m.csr.has_canonical_format and m.kind == "pruned"
        assert "seed 004" in m.analog_of
    assert not DLMC3.scalable and entries("dlmc3", scale=0.5) == list(DLMC3.entries)


def test_pruned_generator_contract():
    a = pruned(2000, 30_011, seed=7, row_std=5.0)
    assert a.shape == (2000, 2000) and a.nnz == 30_011 and a.has_canonical_format
    assert ((a.data > 0) & (a.data <= 1)).all()
    b = pruned(2000, 30_011, seed=7, row_std=5.0)
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data)
    fixed = pruned(50, 500, cols=80, row_std=0.0)
    assert set(np.diff(fixed.indptr)) == {10}
    for rows, cols, nnz in ((1, 1, 1), (1000, 1, 300), (37, 37, 1369), (33, 95, 500)):
        m = pruned(rows, nnz, cols=cols, seed=1, row_std=3.0)
        assert m.shape == (rows, cols) and m.nnz == nnz and m.has_canonical_format
    with pytest.raises(UsageError, match="row_std >= 0"):
        pruned(10, 10, row_std=-1)


def test_register_adds_suites_and_generator_once():
    suites, generators = {}, {}
    register(suites, generators)
    register(suites, generators)
    assert set(suites) == {"dlmc3", "slice003"} and suites["slice003"] is SLICE003
    assert generators == {"pruned": pruned}


def test_build_named_entry_and_unknown_names():
    m = build_named_entry("dlmc3", "dlmc-128x256")
    assert m.nnz == 9_830
    assert build_named_entry("seed6", "cant", scale=0.001).rows == 62  # registered suites too
    with pytest.raises(UnknownNameError, match="dlmc-1x1"):
        build_named_entry("dlmc3", "dlmc-1x1")
    with pytest.raises(UnknownNameError, match="suite"):
        entries("nope")


def test_a_dlmc_smtx_file_runs_through_spmm(tmp_path):
    # the DLMC format: "rows, cols, nnz", the row pointers, the column indices (pattern only)
    path = tmp_path / "layer.smtx"
    path.write_text("4, 6, 7\n0 2 2 5 7\n1 4 0 2 5 3 4\n")
    matrix = read_matrix(path)
    assert matrix.csr.toarray().tolist() == [[0, 1, 0, 0, 1, 0], [0] * 6, [1, 0, 1, 0, 0, 1],
                                             [0, 0, 0, 1, 1, 0]]
    case = run_case(matrix, "spmm-scipy-cpu", "spmm", {"k": 4},
                    config=TimingConfig(warmups=0, repeats=1, flush_l2=False))
    assert case.outcome == "ok" and case.matrix == matrix.name
