"""DLMC .smtx and SciPy .npz reading: valid files, defects with line/entry, canonicalization."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _matrices_helpers import assert_canonical, cli, write

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices import MatrixWarning, read_matrix

# --- .smtx -----------------------------------------------------------------------------------


def test_smtx_dlmc_layout(tmp_path):
    # 3 x 4, rows: {1, 3}, {}, {0, 2, 3}
    path = write(tmp_path, "w.smtx", "3, 4, 5\n0 2 2 5\n1 3 0 2 3\n")
    m = read_matrix(path)
    assert m.name == "w" and (m.rows, m.cols, m.nnz) == (3, 4, 5)
    assert m.csr.toarray().tolist() == [[0, 1, 0, 1], [0, 0, 0, 0], [1, 0, 1, 1]]
    assert_canonical(m.csr)


def test_smtx_accepts_leading_comments_and_whitespace_sizes(tmp_path):
    path = write(tmp_path, "c.smtx", "% made by hand\n2 2 2\n0 1 2\n1 0\n\n")
    assert read_matrix(path).csr.toarray().tolist() == [[0, 1], [1, 0]]


def test_smtx_unsorted_row_warns_and_sorts(tmp_path):
    path = write(tmp_path, "u.smtx", "2, 4, 4\n0 3 4\n3 0 2 1\n")
    with pytest.warns(MatrixWarning) as caught:
        m = read_matrix(path)
    assert str(caught[0].message).startswith(
        f"{path}, line 3: column indices of row 0 are not sorted (position 1: column 0 after 3)")
    assert m.csr.indices.tolist() == [0, 2, 3, 1]
    with pytest.raises(MatrixFormatError, match=r"line 3: column indices of row 0 are not sorted"):
        read_matrix(path, strict=True)


def test_smtx_duplicate_is_summed_or_refused(tmp_path, capsys):
    path = write(tmp_path, "d.smtx", "2, 3, 4\n0 1 4\n2 0 0 1\n")
    with pytest.warns(MatrixWarning, match=r"line 3: duplicate column 0 in row 1 "
                                           r"\(positions 1 and 2\)"):
        m = read_matrix(path)
    assert m.csr.toarray().tolist() == [[0, 0, 1], [2, 1, 0]]
    assert_canonical(m.csr)
    rc, _, err = cli(["stats", str(path), "--strict"], capsys)
    assert rc == 3 and "line 3: duplicate column 0" in err and "Traceback" not in err


SMTX_BAD = [
    ("first-line", "3; 4; 5\n0 1\n0\n", 1, "bad first line: expected 'rows, cols, nnz'"),
    ("zero-nnz", "3, 4, 0\n0 0 0 0\n\n", 1, "empty matrix: the first line announces 0 nonzeros"),
    ("zero-rows", "0, 4, 1\n0\n1\n", 1, "empty matrix: the first line gives 0 x 4"),
    ("ptr-count", "3, 4, 2\n0 1 2\n0 1\n", 2, "expected 4 row pointers (rows + 1), found 3"),
    ("ptr-start", "2, 4, 2\n1 1 2\n0 1\n", 2, "the first row pointer must be 0, found 1"),
    ("ptr-drop", "3, 4, 2\n0 2 1 2\n0 1\n", 2, "row pointer 2 (1) is smaller than row pointer 1"),
    ("ptr-end", "2, 4, 3\n0 1 2\n0 1 2\n", 2,
     "the last row pointer is 2 but the first line announces 3 nonzeros"),
    ("ptr-text", "2, 4, 2\n0 x 2\n0 1\n", 2, "row pointer 1 is 'x', not an integer"),
    ("cols-text", "2, 4, 2\n0 1 2\n0 1.5\n", 3, "column index 1 is '1.5', not an integer"),
    ("cols-count", "2, 4, 3\n0 1 3\n0 1\n", 3,
     "found 2 column indices, the first line announces 3"),
    ("cols-range", "2, 4, 2\n0 1 2\n0 4\n", 3, "column index 4 at position 1 out of range 0..3"),
    ("cols-negative", "2, 4, 2\n0 1 2\n-1 0\n", 3, "column index -1 at position 0 out of range"),
    ("no-cols", "2, 4, 2\n0 1 2\n", 2, "file ends at line 2 before the column index line"),
    ("no-ptrs", "2, 4, 2\n", 1, "file ends at line 1 before the row pointer line"),
    ("extra", "2, 4, 2\n0 1 2\n0 1\n7\n", 4, "unexpected extra line"),
]


@pytest.mark.parametrize(("case", "text", "line", "fragment"), SMTX_BAD,
                         ids=[b[0] for b in SMTX_BAD])
def test_smtx_defects(tmp_path, capsys, case, text, line, fragment):
    path = write(tmp_path, f"{case}.smtx", text)
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}, line {line}: ")
    assert fragment in str(info.value)
    rc, _, err = cli(["stats", str(path)], capsys)
    assert rc == 3 and err.strip() == f"sparsescope: error: {info.value}"
    assert "Traceback" not in err


# --- .npz ------------------------------------------------------------------------------------

EXPECTED = [[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 4.0]]


@pytest.mark.parametrize("layout", ["csr", "csc", "coo", "bsr", "dia"])
def test_npz_layouts(tmp_path, layout):
    path = tmp_path / f"m_{layout}.npz"
    sp.save_npz(path, sp.csr_matrix(np.array(EXPECTED)).asformat(layout))
    m = read_matrix(path)
    assert m.name == f"m_{layout}"
    assert m.csr.toarray().tolist() == EXPECTED
    assert_canonical(m.csr)


def save_raw(path, layout="csr", shape=(3, 3), **arrays):
    np.savez(path, format=np.array(layout.encode()), shape=np.array(shape), **arrays)
    return path


def test_npz_unsorted_and_duplicate_indices(tmp_path):
    path = save_raw(tmp_path / "u.npz", data=np.array([1.0, 2.0, 3.0]),
                    indices=np.array([2, 0, 1]), indptr=np.array([0, 2, 2, 3]))
    with pytest.warns(MatrixWarning, match=r"u\.npz, entry 1: column indices of row 0 are not "
                                           r"sorted \(column 0 after 2\)"):
        m = read_matrix(path)
    assert m.csr.toarray().tolist() == [[2, 0, 1], [0, 0, 0], [0, 3, 0]]
    with pytest.raises(MatrixFormatError, match=r"entry 1: column indices of row 0 are not"):
        read_matrix(path, strict=True)
    coo = save_raw(tmp_path / "c.npz", layout="coo", data=np.array([1.0, 2.0, 3.0]),
                   row=np.array([0, 2, 0]), col=np.array([1, 2, 1]))
    with pytest.warns(MatrixWarning, match=r"c\.npz, entry 2: duplicate entry \(row 0, column "
                                           r"1\): it repeats entry 0"):
        m = read_matrix(coo)
    assert m.csr.toarray().tolist() == [[0, 4, 0], [0, 0, 0], [0, 0, 2]]
    assert_canonical(m.csr)


def _arrays(**overrides):
    base = {"data": np.array([1.0, 2.0]), "indices": np.array([0, 2]),
            "indptr": np.array([0, 1, 1, 2])}
    base.update(overrides)
    return base


NPZ_BAD = [
    ("range", _arrays(indices=np.array([0, 3])), 1, "column index 3 out of range 0..2"),
    ("nan", _arrays(data=np.array([1.0, np.nan])), 1, "value nan is not finite"),
    ("inf", _arrays(data=np.array([np.inf, 1.0])), 0, "value inf is not finite"),
]


@pytest.mark.parametrize(("case", "arrays", "index", "fragment"), NPZ_BAD,
                         ids=[b[0] for b in NPZ_BAD])
def test_npz_entry_defects(tmp_path, capsys, case, arrays, index, fragment):
    path = save_raw(tmp_path / f"{case}.npz", **arrays)
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path)
    assert info.value.index == index
    assert str(info.value).startswith(f"{path}, entry {index}: ") and fragment in str(info.value)
    rc, _, err = cli(["stats", str(path)], capsys)
    assert rc == 3 and f"entry {index}: " in err and "Traceback" not in err


@pytest.mark.parametrize(("case", "arrays", "fragment"), [
    ("ptr-drop", _arrays(indptr=np.array([0, 2, 1, 2])), "indptr decreases at row 1 (2 -> 1)"),
    ("ptr-len", _arrays(indptr=np.array([0, 1, 2])), "indptr has 3 entries, expected 4"),
    ("float-idx", _arrays(indices=np.array([0.0, 2.0])), "'indices' must be a 1-D integer"),
    ("missing", {"data": np.array([1.0])}, "csr file lacks array(s) indices, indptr"),
    ("empty", _arrays(data=np.array([]), indices=np.array([], dtype=int),
                      indptr=np.array([0, 0, 0, 0])), "empty matrix: no stored entries"),
])
def test_npz_file_defects(tmp_path, capsys, case, arrays, fragment):
    path = save_raw(tmp_path / f"{case}.npz", **arrays)
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path)
    assert str(info.value).startswith(f"{path}: ") and fragment in str(info.value)
    assert cli(["stats", str(path)], capsys)[0] == 3


def test_npz_not_an_archive_and_zero_shape(tmp_path, capsys):
    junk = write(tmp_path, "junk.npz", "this is not a zip file")
    with pytest.raises(MatrixFormatError, match=r"junk\.npz: not a scipy\.sparse \.npz file"):
        read_matrix(junk)
    rc, _, err = cli(["stats", str(junk)], capsys)
    assert rc == 3 and "Traceback" not in err
    plain = tmp_path / "plain.npz"
    np.savez(plain, x=np.arange(3))
    with pytest.raises(MatrixFormatError, match="arrays 'format' and 'shape' are missing"):
        read_matrix(plain)
    zero = save_raw(tmp_path / "zero.npz", shape=(0, 3), **_arrays())
    with pytest.raises(MatrixFormatError, match="empty matrix: shape 0 x 3"):
        read_matrix(zero)
