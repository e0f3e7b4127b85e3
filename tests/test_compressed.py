"""The shared helpers that find files as results folders keep them: plain, ``.xz`` or ``.gz``."""

from __future__ import annotations

from sparsescope._compressed import compressed_files, kept_file, without_compression


def test_a_name_less_its_compression():
    assert without_compression("a_raw.csv.xz") == "a_raw.csv"
    assert without_compression("a_raw.csv.gz") == "a_raw.csv"
    assert without_compression("a_raw.csv") == "a_raw.csv"
    assert without_compression("a.tar.xz") == "a.tar"


def test_a_file_as_it_is_kept(tmp_path):
    plain = tmp_path / "a_source.csv"
    assert kept_file(plain) is None
    (tmp_path / "a_source.csv.gz").write_bytes(b"")
    assert kept_file(plain) == tmp_path / "a_source.csv.gz"
    (tmp_path / "a_source.csv.xz").write_bytes(b"")
    assert kept_file(plain) == tmp_path / "a_source.csv.xz"
    plain.write_bytes(b"")
    assert kept_file(plain) == plain


def test_a_folder_s_compressed_files_by_name(tmp_path):
    for name in ("b_raw.csv.gz", "a_raw.csv.xz", "c_raw.csv.gz", "c_raw.csv.xz", "d_raw.csv",
                 "e_source.csv.xz", "f_raw.csv.bz2"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "g_raw.csv.xz").mkdir()
    assert [p.name for p in compressed_files(tmp_path, "*_raw.csv")] == [
        "a_raw.csv.xz", "b_raw.csv.gz", "c_raw.csv.xz"]
