"""Indices and shapes shown exactly, BSR/DIA .npz checked, symlink loops named (issue 33:
defect 7 and the low ones about readers)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
from _matrices_helpers import cli, write

from sparsescope.errors import MatrixFormatError, MatrixNotAvailableError
from sparsescope.matrices import read_matrix

CSR = dict(format=np.array("csr"), shape=np.array([2, 2]), data=np.array([1.0, 2.0]),
           indices=np.array([0, 1]), indptr=np.array([0, 1, 2]))


def _npz(tmp_path, **arrays):
    path = tmp_path / "m.npz"
    np.savez(path, **{**CSR, **arrays})
    return path


@pytest.mark.parametrize("shape, shown", [
    ([3.7, 2.0], "bad shape [3.7, 2.0]: 3.7 is not an integer"),
    ([np.nan, 2.0], "bad shape [nan, 2.0]: nan is not an integer"),
    ([2, 2, 2], "expected (rows, cols) as 2 integers"),
])
def test_npz_shape_is_exact(tmp_path, capsys, shape, shown):
    path = _npz(tmp_path, shape=np.array(shape))
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path)
    assert shown in str(info.value)
    code, _, err = cli(["stats", str(path)], capsys)
    assert code == 3 and "Traceback" not in err


def test_npz_integral_float_shape_is_accepted(tmp_path):
    assert read_matrix(_npz(tmp_path, shape=np.array([2.0, 2.0]))).csr.shape == (2, 2)


def test_npz_uint64_index_is_shown_exactly(tmp_path):
    path = _npz(tmp_path, indices=np.array([0, 2**64 - 1], dtype=np.uint64))
    with pytest.raises(MatrixFormatError, match=r"entry 1: array 'indices' holds "
                                                r"18446744073709551615"):
        read_matrix(path)


def test_bsr_is_checked_before_scipy(tmp_path, capsys):
    good = tmp_path / "good.npz"
    sp.save_npz(good, sp.bsr_matrix(np.arange(16.0).reshape(4, 4), blocksize=(2, 2)))
    assert np.array_equal(read_matrix(good).csr.toarray(), np.arange(16.0).reshape(4, 4))
    bad = tmp_path / "bad.npz"
    np.savez(bad, format=np.array("bsr"), shape=np.array([4, 4]), data=np.ones((2, 2, 2)),
             indices=np.array([0, 5]), indptr=np.array([0, 1, 2]))
    with pytest.raises(MatrixFormatError, match="entry 1: block column index 5 out of range"):
        read_matrix(bad)
    code, _, err = cli(["stats", str(bad)], capsys)
    assert code == 3 and "Traceback" not in err and "IndexError" not in err
    np.savez(bad, format=np.array("bsr"), shape=np.array([5, 4]), data=np.ones((2, 2, 2)),
             indices=np.array([0, 1]), indptr=np.array([0, 1, 2]))
    with pytest.raises(MatrixFormatError, match="block size 2 x 2 does not divide"):
        read_matrix(bad)


def test_dia_and_unknown_layouts(tmp_path):
    dia = tmp_path / "d.npz"
    np.savez(dia, format=np.array("dia"), shape=np.array([3, 3]), data=np.ones((2, 3)),
             offsets=np.array([0, 0]))
    with pytest.raises(MatrixFormatError, match="offset 0 appears twice"):
        read_matrix(dia)
    lil = tmp_path / "l.npz"
    np.savez(lil, format=np.array("lil"), shape=np.array([3, 3]), data=np.ones(3))
    with pytest.raises(MatrixFormatError, match="unknown sparse format 'lil'"):
        read_matrix(lil)


@pytest.mark.parametrize("token, shown", [
    ("100000000000000000000000", "column index 1 is 100000000000000000000000, past"),
    ("18446744073709551615", "column index 1 is 18446744073709551615, past"),
    ("1.5", "column index 1 is '1.5', not an integer"),
    ("1_0", "column index 1 is '1_0', not an integer"),
    ("1\x00", "column index 1 is '1\\x00': a NUL byte"),
])
def test_smtx_tokens_are_exact(tmp_path, token, shown):
    path = write(tmp_path, "m.smtx", f"2, 2, 2\n0 1 2\n0 {token}\n")
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path)
    assert info.value.line == 3 and shown in str(info.value)


def test_smtx_size_line_refuses_underscores(tmp_path):
    path = write(tmp_path, "m.smtx", "2, 2, 1_0\n0 1 2\n0 1\n")
    with pytest.raises(MatrixFormatError, match="line 1: bad first line"):
        read_matrix(path)


def test_symlink_loop_is_not_no_such_file(tmp_path, capsys):
    a, b = tmp_path / "a.mtx", tmp_path / "b.mtx"
    os.symlink(b, a)
    os.symlink(a, b)
    with pytest.raises(MatrixNotAvailableError, match="symbolic link loop"):
        read_matrix(a)
    dangling = tmp_path / "d.mtx"
    os.symlink(tmp_path / "gone.mtx", dangling)
    with pytest.raises(MatrixNotAvailableError, match="dangling symbolic link"):
        read_matrix(dangling)
    code, _, err = cli(["stats", str(a)], capsys)
    assert code == 4 and "symbolic link loop" in err and "Traceback" not in err
