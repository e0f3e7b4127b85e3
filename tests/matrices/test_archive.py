"""SuiteSparse-style archives: Name/Name.mtx or a clear error, extraction capped in bytes and in
members, errors that name the archive, never a temporary file (issue 33, defects 3 and 10)."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from sparsescope.errors import MatrixFormatError, MatrixTooLargeError
from sparsescope.matrices import archive, archive_read
from sparsescope.matrices.suitesparse import fetch_suitesparse

MATRIX = b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 2.0\n"
RHS = b"%%MatrixMarket matrix array real general\n2 1\n7\n8\n"


def _tar(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_right_hand_side_first_is_not_taken(tmp_path):
    path = _tar(tmp_path / "two.tar.gz", [("two/two_b.mtx", RHS), ("two/two.mtx", MATRIX)])
    matrix = archive_read.read_archive(path)
    assert matrix.name == "two"
    assert np.array_equal(matrix.csr.toarray(), np.diag([1.0, 2.0]))


def test_archive_without_the_matrix_names_what_it_holds(tmp_path):
    path = _tar(tmp_path / "two.tar.gz", [("two/two_b.mtx", RHS)])
    with pytest.raises(MatrixFormatError, match=r"the archive holds no two/two.mtx \(it holds "
                                                r"two/two_b.mtx;"):
        archive_read.read_archive(path)


def test_defect_in_member_names_archive_not_temp_file(tmp_path):
    bad = MATRIX.replace(b"2 2 2.0", b"2 2.5 2.0")
    path = _tar(tmp_path / "two.tar.gz", [("two/two.mtx", bad)])
    with pytest.raises(MatrixFormatError) as info:
        archive_read.read_archive(path)
    assert str(info.value).startswith(f"{path}:two/two.mtx, line 4: column index '2.5'")
    assert "sparsescope-archive-" not in str(info.value)


def test_tar_bomb_is_capped_in_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSESCOPE_ARCHIVE_MAX_BYTES", str(1 << 20))
    bomb = MATRIX + b"%" * (4 << 20)
    path = _tar(tmp_path / "two.tar.gz", [("two/two.mtx", bomb)])
    with pytest.raises(MatrixTooLargeError, match="past the extraction cap of 1,048,576"):
        archive_read.read_archive(path)


def test_default_cap_scales_with_the_archive(tmp_path):
    path = _tar(tmp_path / "two.tar.gz", [("two/two.mtx", MATRIX)])
    assert archive.byte_cap(path) == archive.MIN_CAP_BYTES


def test_member_count_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_MEMBERS", 5)
    path = _tar(tmp_path / "two.tar.gz",
                [(f"two/x{i}.txt", b"x") for i in range(10)] + [("two/two.mtx", MATRIX)])
    with pytest.raises(MatrixFormatError, match="more than 5 members before two/two.mtx"):
        archive_read.read_archive(path)


def test_suitesparse_cache_extracts_only_the_matrix(tmp_path):
    group = tmp_path / "suitesparse" / "G"
    group.mkdir(parents=True)
    _tar(group / "two.tar.gz", [("two/two_b.mtx", RHS), ("two/two.mtx", MATRIX)])
    mtx = fetch_suitesparse("G/two", cache_dir=tmp_path, download=False)
    assert mtx == group / "two" / "two.mtx" and mtx.read_bytes() == MATRIX
    assert not (group / "two" / "two_b.mtx").exists()
    assert [p.name for p in (group / "two").iterdir()] == ["two.mtx"]  # no .part left
