"""Matrix Market reading: every variant, and every defect with its file, line and exit code."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _matrices_helpers import assert_canonical, cli, write

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices import MatrixWarning, read_matrix
from sparsescope.matrices import _mtx_scan as scan
from sparsescope.matrices.mtx_header import read_header

BANNER = "%%MatrixMarket matrix coordinate real general\n"


def dense(matrix) -> list[list[float]]:
    return matrix.csr.toarray().tolist()


# --- valid files ---------------------------------------------------------------------------


def test_coordinate_real_general_with_comments_and_blank_lines(tmp_path):
    path = write(tmp_path, "a.mtx", BANNER + "% a comment\n%\n\n3 4 4\n1 1 1.5\n3 2 -2\n\n"
                 "% between entries\n2 4 3e-1\n1 3 7\n")
    m = read_matrix(path)
    assert m.name == "a" and m.source == str(path) and m.kind == "file"
    assert (m.rows, m.cols, m.nnz) == (3, 4, 4)
    assert dense(m) == [[1.5, 0, 7, 0], [0, 0, 0, 0.3], [0, -2, 0, 0]]
    assert_canonical(m.csr)


def test_entry_order_is_free_and_rows_come_out_sorted(tmp_path):
    # Column-major order, as in SuiteSparse files: no warning, sorted rows.
    path = write(tmp_path, "cm.mtx", BANNER + "2 3 4\n1 1 1\n2 1 2\n1 3 3\n2 2 4\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = read_matrix(path)
    assert dense(m) == [[1, 0, 3], [2, 4, 0]]
    assert_canonical(m.csr)


def test_integer_and_pattern_fields(tmp_path):
    ints = write(tmp_path, "i.mtx", "%%MatrixMarket matrix coordinate integer general\n"
                 "2 2 2\n1 2 7\n2 1 -3\n")
    assert dense(read_matrix(ints)) == [[0, 7], [-3, 0]]
    assert read_matrix(ints).csr.data.dtype == np.float64
    pattern = write(tmp_path, "p.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                    "2 3 3\n1 1\n2 3\n1 2\n")
    assert dense(read_matrix(pattern)) == [[1, 1, 0], [0, 0, 1]]


def test_symmetric_is_expanded(tmp_path):
    path = write(tmp_path, "s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
                 "3 3 4\n1 1 4\n2 1 1\n3 2 2\n3 3 5\n")
    m = read_matrix(path)
    assert dense(m) == [[4, 1, 0], [1, 0, 2], [0, 2, 5]]
    assert m.nnz == 6
    assert_canonical(m.csr)


def test_symmetric_upper_triangle_entries_are_mirrored_too(tmp_path):
    # mirrored, with a warning: symmetric storage is the lower triangle (tests/matrices/
    # test_bad_inputs.py covers the strict refusal and the CLI)
    path = write(tmp_path, "su.mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
                 "2 2 1\n1 2 3\n")
    with pytest.warns(MatrixWarning, match=r"line 3: entry \(1, 2\) lies above the diagonal"):
        assert dense(read_matrix(path)) == [[0, 3], [3, 0]]


def test_skew_symmetric_mirrors_with_negated_sign(tmp_path):
    path = write(tmp_path, "k.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                 "3 3 2\n2 1 1.5\n3 2 2\n")
    assert dense(read_matrix(path)) == [[0, -1.5, 0], [1.5, 0, -2], [0, 2, 0]]


def test_pattern_symmetric(tmp_path):
    path = write(tmp_path, "ps.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n"
                 "2 2 2\n1 1\n2 1\n")
    assert dense(read_matrix(path)) == [[1, 1], [1, 0]]


def test_array_formats(tmp_path):
    general = write(tmp_path, "g.mtx", "%%MatrixMarket matrix array real general\n"
                    "% column-major\n2 3\n1\n0\n0\n4\n5\n0\n")
    m = read_matrix(general)
    assert dense(m) == [[1, 0, 5], [0, 4, 0]]
    assert m.nnz == 3  # zeros of a dense file are not stored
    sym = write(tmp_path, "gs.mtx", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n")
    assert dense(read_matrix(sym)) == [[1, 2], [2, 3]]
    skew = write(tmp_path, "gk.mtx", "%%MatrixMarket matrix array integer skew-symmetric\n"
                 "3 3\n1\n2\n3\n")
    assert dense(read_matrix(skew)) == [[0, -1, -2], [1, 0, -3], [2, 3, 0]]


def test_gzip_and_crlf(tmp_path):
    path = write(tmp_path, "z.mtx.gz", BANNER.replace("\n", "\r\n") + "2 2 1\r\n2 2 9\r\n")
    m = read_matrix(path)
    assert m.name == "z"
    assert dense(m) == [[0, 0], [0, 9]]


def test_name_override(tmp_path):
    path = write(tmp_path, "a.mtx", BANNER + "1 1 1\n1 1 1\n")
    assert read_matrix(path, name="custom").name == "custom"


# --- duplicates: canonicalize with a warning, or refuse when strict ----------------------------


def test_duplicates_are_summed_with_a_warning_naming_the_line(tmp_path):
    path = write(tmp_path, "d.mtx", BANNER + "3 3 3\n1 1 1\n% c\n3 2 2\n1 1 5\n")
    with pytest.warns(MatrixWarning) as caught:
        m = read_matrix(path)
    assert dense(m) == [[6, 0, 0], [0, 0, 0], [0, 2, 0]]
    assert_canonical(m.csr)
    message = str(caught[0].message)
    assert message.startswith(f"{path}, line 6: duplicate entry (1, 1)")
    assert "repeats the entry on line 3" in message
    assert issubclass(MatrixWarning, UserWarning)


def test_duplicates_refused_when_strict(tmp_path, capsys):
    path = write(tmp_path, "d.mtx", BANNER + "3 3 3\n1 1 1\n3 2 2\n1 1 5\n")
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path, strict=True)
    assert info.value.line == 5 and "duplicate entry (1, 1)" in str(info.value)
    assert "strict" in str(info.value)
    rc, _, err = cli(["stats", str(path), "--strict"], capsys)
    assert rc == 3 and f"{path}, line 5: duplicate" in err and "Traceback" not in err
    rc, out, err = cli(["stats", str(path), "--json"], capsys)
    assert rc == 0 and "sparsescope: warning:" in err and f"{path}, line 5" in err


def test_symmetric_entry_in_both_triangles_is_a_duplicate(tmp_path):
    path = write(tmp_path, "sd.mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
                 "2 2 2\n2 1 1\n1 2 5\n")
    with pytest.warns(MatrixWarning) as caught:
        m = read_matrix(path)
    assert dense(m) == [[0, 6], [6, 0]]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert "line 4: entry (1, 2) lies above the diagonal" in messages[0]
    assert "line 4: duplicate entry (1, 2): it repeats the entry on line 3" in messages[1]


# --- every defect: exact message, line, exit code 3, no traceback -----------------------------

C = BANNER
BAD = [
    ("banner", "%%MatrixMarkex matrix coordinate real general\n1 1 1\n1 1 1\n", 1,
     "bad banner: expected '%%MatrixMarket matrix"),
    ("banner-words", "%%MatrixMarket matrix coordinate real\n1 1 1\n1 1 1\n", 1,
     "expected 5 words"),
    ("object", "%%MatrixMarket vector coordinate real general\n1 1 1\n1 1 1\n", 1,
     "unsupported object 'vector'"),
    ("format", "%%MatrixMarket matrix sparse real general\n1 1 1\n1 1 1\n", 1,
     "unknown format 'sparse' (expected coordinate or array)"),
    ("field", "%%MatrixMarket matrix coordinate foo general\n1 1 1\n1 1 1\n", 1,
     "unknown field 'foo' (expected real, integer or pattern)"),
    ("complex", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1,
     "field 'complex' is not supported"),
    ("symmetry", "%%MatrixMarket matrix coordinate real diagonal\n1 1 1\n1 1 1\n", 1,
     "unknown symmetry 'diagonal'"),
    ("hermitian", "%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", 1,
     "symmetry 'hermitian' is not supported"),
    ("array-pattern", "%%MatrixMarket matrix array pattern general\n1 1\n", 1,
     "field 'pattern' is not allowed with format 'array'"),
    ("size-text", C + "% c1\n% c2\n3 x 2\n1 1 1\n", 4,
     "bad size line: expected 'rows cols entries' as 3 non-negative integers, found '3 x 2'"),
    ("size-count", C + "3 3\n1 1 1\n", 2, "bad size line"),
    ("size-missing", C + "% only comments\n", 2, "file ends before the size line"),
    ("zero-rows", C + "0 3 1\n", 2, "empty matrix: the size line gives 0 x 3"),
    ("zero-entries", C + "3 3 0\n", 2, "empty matrix: the size line announces 0 entries"),
    ("sym-rect", "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n", 2,
     "a symmetric matrix must be square; the size line gives 2 x 3"),
    ("too-few", C + "3 3 3\n1 1 1\n2 2 2\n", 4,
     "file ends at line 4 after 2 of the 3 entries announced by the size line (line 2)"),
    ("too-few-comments", C + "% c\n3 3 3\n1 1 1\n\n% mid\n2 2 2\n\n", 8,
     "file ends at line 8 after 2 of the 3 entries announced by the size line (line 3)"),
    ("huge-count", C + "3 3 1000000000000\n1 1 1\n", 3,
     "file ends at line 3 after 1 of the 1000000000000 entries"),
    ("too-many", C + "3 3 2\n1 1 1\n2 2 2\n3 3 3\n1 2 4\n", 5,
     "extra entry: the size line (line 2) announces 2 entries"),
    ("row-range", C + "3 3 2\n1 1 1\n4 2 2\n", 4, "row index 4 out of range 1..3"),
    ("col-zero", C + "3 5 2\n1 1 1\n2 0 2\n", 4, "column index 0 out of range 1..5"),
    ("row-negative", C + "3 3 1\n-1 1 1\n", 3, "row index -1 out of range 1..3"),
    ("row-huge", C + "3 3 1\n99999999999 1 1\n", 3, "row index 99999999999 out of range 1..3"),
    ("index-text", C + "3 3 2\n1 1 1\n1.5 2 2\n", 4, "row index '1.5' is not an integer"),
    ("value-text", C + "3 3 2\n1 1 abc\n2 2 2\n", 3, "value 'abc' is not a number"),
    ("value-missing", C + "3 3 2\n1 1 1\n2 2\n", 4,
     "expected 3 fields 'row col value', found 2: '2 2'"),
    ("nan", C + "% c\n3 3 3\n1 1 1\n2 2 2\n3 3 nan\n", 6, "value 'nan' is not finite"),
    ("inf", C + "3 3 2\n1 1 -inf\n2 2 2\n", 3, "value '-inf' is not finite"),
    ("overflow", C + "3 3 2\n1 1 1\n2 2 1e999\n", 4, "value '1e999' is not finite"),
    ("nan-no-final-newline", C + "3 3 2\n1 1 1\n2 2 nan", 4, "value 'nan' is not finite"),
    ("nan-after-blank", C + "3 3 2\n1 1 1\n\n2 2 nan\n", 5, "value 'nan' is not finite"),
    ("nan-after-comment", C + "3 3 3\n1 1 1\n% c\n2 2 nan\n3 3 3\n", 5, "'nan' is not finite"),
    ("skew-diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n"
     "2 2 1.5\n", 4, "skew-symmetric matrix has a nonzero diagonal entry (2, 2) = 1.5"),
    ("array-few", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 5,
     "file ends at line 5 after 3 of the 4 entries"),
    ("array-many", "%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n", 5,
     "extra entry: the size line (line 2) announces 2 entries"),
    ("array-nan", "%%MatrixMarket matrix array real general\n2 1\n1\nnan\n", 4,
     "value 'nan' is not finite"),
    ("array-zero", "%%MatrixMarket matrix array real general\n2 1\n0\n0\n", 2,
     "empty matrix: every value is zero"),
    ("empty-file", "", 1, "bad banner"),
]


@pytest.mark.parametrize(("case", "text", "line", "fragment"), BAD, ids=[b[0] for b in BAD])
def test_defect_is_named_with_file_and_line(tmp_path, capsys, case, text, line, fragment):
    path = write(tmp_path, f"{case}.mtx", text)
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path)
    err = info.value
    assert err.path == str(path) and err.line == line
    assert str(err).startswith(f"{path}, line {line}: ")
    assert fragment in str(err)
    rc, out, stderr = cli(["stats", str(path)], capsys)
    assert rc == 3
    assert stderr.strip() == f"sparsescope: error: {err}"
    assert "Traceback" not in stderr and out == ""


def test_defect_in_gzip_file_names_the_line(tmp_path, capsys):
    path = write(tmp_path, "bad.mtx.gz", C + "2 2 2\n1 1 1\n2 3 1\n")
    with pytest.raises(MatrixFormatError, match=r"bad\.mtx\.gz, line 4: column index 3 out of "
                                                r"range 1\.\.2"):
        read_matrix(path)
    assert cli(["stats", str(path), "--json"], capsys)[0] == 3


TRICKY_BODY = [
    "1 1 1\n2 2 2\n3 3 3\n",
    "1 1 1\n\n% c\n  \n2 2 2\r\n%\n3 3 3",
    "\n% first\n1 1 1\n2 2 2\n3 3 3\n\n\n",
    "1 1 1\r\n2 2 2\r\n\r\n3 3 3\r\n% end",
]


@pytest.mark.parametrize("body", TRICKY_BODY)
@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 24])
def test_streaming_line_counters_agree_with_the_python_scan(tmp_path, monkeypatch, body, block):
    """Block boundaries anywhere (even one byte) give the same lines as a line-by-line pass."""
    path = write(tmp_path, "t.mtx", C + "% header\n3 3 3\n" + body)
    header = read_header(path)
    expected = [number for number, _ in scan._entry_lines(path, header)]
    last_line = max(number for number, _ in scan._body_lines(path, header))
    monkeypatch.setattr(scan, "BLOCK_BYTES", block)
    assert scan.count_entry_lines(path, header) == (len(expected), last_line)
    assert scan.locate_entries(path, header, [0, 1, 2]) == dict(enumerate(expected))
    regular = expected == [header.size_line + 1 + k for k in range(3)]
    assert scan._regular_prefix(path, header, 3) is regular
