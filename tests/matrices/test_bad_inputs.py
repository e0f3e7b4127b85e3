"""Bad matrix inputs: sizes too large for memory, damaged .gz, a directory, symmetric storage
above the diagonal. Each: exit code, no traceback, and a message naming the file and the line
(or the cause)."""

from __future__ import annotations

import gzip
import warnings
import zlib

import numpy as np
import pytest
from _matrices_helpers import cli, write

from sparsescope.errors import (
    MatrixFormatError,
    MatrixNotAvailableError,
    MatrixTooLargeError,
)
from sparsescope.matrices import MatrixWarning, _csr, read_matrix

BANNER = "%%MatrixMarket matrix coordinate real general\n"
HUGE = 10**12


def check_cli_error(args, capsys, rc: int, *pieces: str) -> str:
    """Run the matrices CLI: expected exit code, no traceback, every piece in stderr."""
    code, _, err = cli(args, capsys)
    assert code == rc, err
    assert "Traceback" not in err
    for piece in pieces:
        assert piece in err, (piece, err)
    return err


# --- 1. declared sizes beyond memory ---------------------------------------------------------


def test_physical_memory_is_known_on_this_platform():
    memory = _csr.physical_memory_bytes()
    assert memory is not None and memory > 1 << 28  # any test machine has 256 MiB


def test_huge_mtx_is_refused_before_allocating(tmp_path, capsys):
    path = write(tmp_path, "huge.mtx", BANNER + f"{HUGE} {HUGE} 2\n1 1 1.0\n2 2 2.0\n")
    with pytest.raises(MatrixTooLargeError) as info:
        read_matrix(path)
    error = info.value
    assert isinstance(error, MatrixFormatError) and error.line == 2
    # parsed entries 2 x 24 + row pointers (10**12 + 1) x 8 + indices 2 x 8 + values 2 x 8
    # + vectors (2 x 10**12) x 8
    assert error.needed_bytes == 48 + (HUGE + 1) * 8 + 16 + 16 + 2 * HUGE * 8
    message = str(error)
    assert message.startswith(f"{path}, line 2: the size line declares "
                              "1,000,000,000,000 x 1,000,000,000,000 with 2 entries")
    assert "row pointers (rows + 1) x 8 = 8,000,000,000,008" in message
    assert f"needs {error.needed_bytes:,} bytes" in message
    check_cli_error(["stats", str(path)], capsys, 3, f"{path}, line 2:",
                    "declares 1,000,000,000,000 x 1,000,000,000,000", "of memory")


def test_huge_mtx_gz_is_refused_too(tmp_path, capsys):
    path = write(tmp_path, "huge.mtx.gz", BANNER + f"{HUGE} {HUGE} 2\n1 1 1.0\n2 2 2.0\n")
    check_cli_error(["stats", str(path)], capsys, 3, f"{path}, line 2: the size line declares")


def test_memory_limit_is_exact(tmp_path, monkeypatch):
    # 1000 x 1000, 2 entries, int32 indices: entries 2 x 24 = 48, row pointers 1001 x 4 = 4004,
    # indices 2 x 4 = 8, values 2 x 8 = 16, vectors 2000 x 8 = 16000: 20076 bytes.
    path = write(tmp_path, "m.mtx", BANNER + "1000 1000 2\n1 1 1.0\n2 2 2.0\n")
    monkeypatch.setattr(_csr, "physical_memory_bytes", lambda: 20076)
    assert read_matrix(path).nnz == 2
    monkeypatch.setattr(_csr, "physical_memory_bytes", lambda: 20075)
    with pytest.raises(MatrixTooLargeError, match=r"m\.mtx, line 2: .*needs 20,076 bytes"):
        read_matrix(path)
    monkeypatch.setattr(_csr, "physical_memory_bytes", lambda: None)  # platform cannot say
    assert read_matrix(path).nnz == 2


def test_symmetric_counts_the_mirrored_entries(tmp_path, monkeypatch):
    # symmetric 100 x 100, 3 entries -> up to 6 stored: 72 + 101*4 + 6*4 + 6*8 + 200*8 = 2148
    path = write(tmp_path, "s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
                 "100 100 3\n1 1 1\n2 1 1\n3 1 1\n")
    monkeypatch.setattr(_csr, "physical_memory_bytes", lambda: 2147)
    with pytest.raises(MatrixTooLargeError, match="needs 2,148 bytes"):
        read_matrix(path)


def test_huge_smtx_is_refused(tmp_path, capsys):
    path = write(tmp_path, "huge.smtx", f"{HUGE}, {HUGE}, 2\n0 1 2\n0 1\n")
    check_cli_error(["stats", str(path)], capsys, 3, f"{path}, line 1: the first line declares "
                    "1,000,000,000,000 x 1,000,000,000,000 with 2 nonzeros", "of memory")


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_huge_npz_is_refused(tmp_path, capsys, layout):
    path = tmp_path / f"huge_{layout}.npz"
    arrays = {"row": np.array([0, 1]), "col": np.array([0, 1])} if layout == "coo" else \
        {"indices": np.array([0, 1]), "indptr": np.array([0, 1, 2])}
    np.savez(path, format=np.array(layout), shape=np.array([HUGE, HUGE]), data=np.ones(2),
             **arrays)
    check_cli_error(["stats", str(path)], capsys, 3,
                    f"{path}: array 'shape' declares 1,000,000,000,000 x 1,000,000,000,000 "
                    f"({layout}, 2 stored entries)", "of memory")


# --- 2. damaged .gz ----------------------------------------------------------------------------


def _big_text(entries: int = 5000) -> bytes:
    body = "".join(f"{i % 1000 + 1} {(7 * i) % 1000 + 1} {i}.5\n" for i in range(entries))
    return (BANNER + f"1000 1000 {entries}\n" + body).encode()


@pytest.mark.parametrize("keep", [0.5, 0.9, 12])
def test_truncated_gzip_names_the_line_where_the_text_stops(tmp_path, capsys, keep):
    data = gzip.compress(_big_text())
    cut = data[:keep] if isinstance(keep, int) else data[:int(len(data) * keep)]
    path = tmp_path / "cut.mtx.gz"
    path.write_bytes(cut)
    # the line the decompressed prefix reaches, counted independently of the reader
    line = zlib.decompressobj(wbits=31).decompress(cut).count(b"\n") + 1
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path)
    assert info.value.line == line
    check_cli_error(["stats", str(path)], capsys, 3, f"{path}, line {line}: compressed stream "
                    "ends early", "truncated (no gzip end-of-stream marker)")


def test_corrupt_gzip_data(tmp_path, capsys):
    data = bytearray(gzip.compress(_big_text()))
    data[2000] ^= 0xFF  # a flipped byte inside the deflate stream
    path = tmp_path / "bad.mtx.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path)
    assert info.value.line is not None and 1 < info.value.line < 5003
    check_cli_error(["stats", str(path)], capsys, 3, f"{path}, line {info.value.line}: "
                    "compressed stream is corrupt (Error -3 while decompressing data")


def test_not_gzip_at_all(tmp_path, capsys):
    path = tmp_path / "plain.mtx.gz"
    path.write_bytes((BANNER + "1 1 1\n1 1 1\n").encode())  # "%%" is 25 25
    check_cli_error(["stats", str(path)], capsys, 3,
                    f"{path}: not a gzip file: it starts with 25 25, a .gz file starts with 1f 8b")
    empty = tmp_path / "empty.mtx.gz"
    empty.write_bytes(b"")
    check_cli_error(["stats", str(empty)], capsys, 3,
                    f"{empty}: not a gzip file: it starts with nothing (the file is empty)")


def test_whole_gzip_of_several_members_still_reads(tmp_path):
    # concatenated gzip members are one valid stream (gzip -c a >> b): no false alarm
    text = _big_text(50)
    path = tmp_path / "two.mtx.gz"
    path.write_bytes(gzip.compress(text[:700]) + gzip.compress(text[700:]))
    assert read_matrix(path).nnz == 50


# --- 3. a directory ---------------------------------------------------------------------------


def test_directory_is_reported_as_a_directory(tmp_path, capsys):
    folder = tmp_path / "x.mtx"
    folder.mkdir()
    with pytest.raises(MatrixFormatError, match=r"x\.mtx: is a directory, not a matrix file"):
        read_matrix(folder)
    err = check_cli_error(["stats", str(folder)], capsys, 3, f"{folder}: is a directory")
    assert "no such file" not in err
    # a missing file is still "no such file" (exit 4)
    with pytest.raises(MatrixNotAvailableError, match="no such file"):
        read_matrix(tmp_path / "missing.mtx")
    check_cli_error(["stats", str(tmp_path / "missing.mtx")], capsys, 4, "no such file")


# --- 4. symmetric storage above the diagonal -------------------------------------------------


SYM = "%%MatrixMarket matrix coordinate real symmetric\n"


def test_entry_above_diagonal_warns_naming_the_first_line(tmp_path, capsys):
    path = write(tmp_path, "up.mtx", SYM + "% comment\n3 3 4\n1 1 1\n3 1 2\n1 2 5\n2 3 7\n")
    with pytest.warns(MatrixWarning) as caught:
        m = read_matrix(path)
    assert m.csr.toarray().tolist() == [[1, 5, 2], [5, 0, 7], [2, 7, 0]]  # still mirrored
    (message,) = [str(w.message) for w in caught]
    assert message.startswith(f"{path}, line 6: entry (1, 2) lies above the diagonal")
    assert "the file has 2 such entries" in message
    code, _, err = cli(["stats", str(path)], capsys)
    assert code == 0 and "Traceback" not in err
    assert f"sparsescope: warning: {path}, line 6: entry (1, 2) lies above the diagonal" in err


def test_entry_above_diagonal_refused_when_strict(tmp_path, capsys):
    path = write(tmp_path, "up.mtx", SYM + "3 3 2\n2 1 1\n2 3 7\n")
    with pytest.raises(MatrixFormatError) as info:
        read_matrix(path, strict=True)
    assert info.value.line == 4
    check_cli_error(["stats", str(path), "--strict"], capsys, 3,
                    f"{path}, line 4: entry (2, 3) lies above the diagonal",
                    "(refused: strict mode)")


def test_skew_symmetric_above_diagonal(tmp_path, capsys):
    path = write(tmp_path, "sk.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                 "2 2 1\n1 2 3\n")
    with pytest.warns(MatrixWarning, match=r"line 3: entry \(1, 2\) lies above the diagonal, "
                                           "but a skew-symmetric file"):
        assert read_matrix(path).csr.toarray().tolist() == [[0, 3], [-3, 0]]
    check_cli_error(["stats", str(path), "--strict"], capsys, 3, f"{path}, line 3:",
                    "skew-symmetric file stores only the lower triangle")


def test_lower_triangle_files_give_no_warning(tmp_path):
    path = write(tmp_path, "lo.mtx", SYM + "3 3 3\n1 1 1\n3 1 2\n3 3 4\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_matrix(path, strict=True).nnz == 4


def test_hermitian_is_refused_at_the_banner(tmp_path, capsys):
    path = write(tmp_path, "h.mtx", "%%MatrixMarket matrix coordinate real hermitian\n"
                 "2 2 1\n1 2 3\n")
    check_cli_error(["stats", str(path)], capsys, 3, f"{path}, line 1: symmetry 'hermitian' is "
                    "not supported")
