"""write_matrix round trips, SuiteSparse cache (no network), and the matrices CLI."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import urllib.error

import numpy as np
import pytest
import scipy.sparse as sp
from _matrices_helpers import assert_canonical, cli, write

from sparsescope.errors import MatrixFormatError, MatrixNotAvailableError, UsageError
from sparsescope.matrices import fetch_suitesparse, generate, read_matrix, write_matrix
from sparsescope.matrices import suitesparse as ss


def test_import_is_light():
    code = ("import sys, sparsescope.matrices\n"
            "print(sorted(m for m in ('matplotlib', 'torch', 'cupy', 'fast_matrix_market', "
            "'tqdm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- write_matrix ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz", ".npz", ".smtx"])
def test_write_then_read_round_trip(tmp_path, suffix):
    csr = generate("scattered", 300, 2000, cols=257, seed=4)
    path = write_matrix(csr, tmp_path / "sub" / f"m{suffix}")
    back = read_matrix(path)
    assert back.name == "m"
    assert_canonical(back.csr)
    assert np.array_equal(back.csr.indptr, csr.indptr)
    assert np.array_equal(back.csr.indices, csr.indices)
    expected = np.ones(csr.nnz) if suffix == ".smtx" else csr.data  # .smtx is a pattern
    assert np.array_equal(back.csr.data, expected)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp files left


def test_write_accepts_a_matrix_and_canonicalizes(tmp_path):
    coo = sp.coo_matrix(([1.0, 2.0, 3.0], ([1, 0, 1], [0, 1, 0])), shape=(2, 2))
    path = write_matrix(coo, tmp_path / "c.mtx")
    m = read_matrix(path)
    assert m.csr.toarray().tolist() == [[0, 2], [4, 0]]
    assert read_matrix(write_matrix(m, tmp_path / "again.npz")).nnz == 2


def test_unknown_and_missing_files(tmp_path, capsys):
    with pytest.raises(UsageError, match="unknown matrix file type"):
        write_matrix(sp.eye(2, format="csr"), tmp_path / "m.txt")
    odd = write(tmp_path, "m.txt", "hello")
    with pytest.raises(MatrixFormatError, match=r"m\.txt: unknown matrix file type \(\.txt\)"):
        read_matrix(odd)
    with pytest.raises(MatrixNotAvailableError, match="no such file"):
        read_matrix(tmp_path / "absent.mtx")
    rc, _, err = cli(["stats", str(tmp_path / "absent.mtx")], capsys)
    assert rc == 4 and "no such file" in err and "Traceback" not in err


# --- SuiteSparse (never the network) ---------------------------------------------------------

MTX = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 3\n2 2 4\n"


def make_tarball(path, name, text=MTX):
    data = text.encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(f"{name}/{name}.mtx")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """A private cache, and a download function that fails like a machine with no network."""
    monkeypatch.setenv("SPARSESCOPE_CACHE", str(tmp_path / "cache"))

    def no_network(url, dest, timeout_s=0):
        raise urllib.error.URLError("network unreachable")

    monkeypatch.setattr(ss, "_download", no_network)
    return tmp_path / "cache" / "suitesparse"


def test_no_network_says_what_to_fetch_and_where(offline, capsys):
    url = "https://suitesparse-collection-website.herokuapp.com/MM/Williams/cant.tar.gz"
    with pytest.raises(MatrixNotAvailableError) as info:
        fetch_suitesparse("Williams/cant")
    message = str(info.value)
    assert "network unreachable" in message and f"fetch {url}" in message
    assert f"place it at {offline / 'Williams' / 'cant.tar.gz'}" in message
    assert str(offline / "Williams" / "cant" / "cant.mtx") in message
    rc, _, err = cli(["stats", "suitesparse:Williams/cant"], capsys)
    assert rc == 4 and url in err and "Traceback" not in err
    with pytest.raises(MatrixNotAvailableError, match="is not in the cache"):
        fetch_suitesparse("Williams/cant", download=False)


def test_cached_tarball_is_extracted_and_read(offline):
    (offline / "Grp").mkdir(parents=True)
    make_tarball(offline / "Grp" / "tiny.tar.gz", "tiny")
    path = fetch_suitesparse("Grp/tiny")
    assert path == offline / "Grp" / "tiny" / "tiny.mtx" and path.is_file()
    m = read_matrix("suitesparse:Grp/tiny")
    assert (m.name, m.source, m.kind) == ("tiny", "suitesparse:Grp/tiny", "file")
    assert m.csr.toarray().tolist() == [[3, 0], [0, 4]]


def test_cached_mtx_is_used_as_is(offline, tmp_path):
    target = tmp_path / "elsewhere" / "suitesparse" / "G" / "n" / "n.mtx"
    target.parent.mkdir(parents=True)
    target.write_text(MTX)
    assert fetch_suitesparse("G/n", cache_dir=tmp_path / "elsewhere") == target


def test_download_path_with_a_fake_downloader(offline, monkeypatch):
    calls = []

    def fake(url, dest, timeout_s=0):
        calls.append(url)
        make_tarball(dest, "web")

    monkeypatch.setattr(ss, "_download", fake)
    path = fetch_suitesparse("Williams/web")
    assert calls == [f"{ss.BASE_URL}/Williams/web.tar.gz"] and path.is_file()
    assert fetch_suitesparse("Williams/web") == path and len(calls) == 1  # cached now


def test_bad_names_and_bad_archives(offline):
    with pytest.raises(UsageError, match="expected 'Group/Name'"):
        fetch_suitesparse("cant")
    with pytest.raises(UsageError):
        fetch_suitesparse("../etc/passwd")
    (offline / "G").mkdir(parents=True)
    make_tarball(offline / "G" / "wrong.tar.gz", "other")
    with pytest.raises(MatrixFormatError, match=r"wrong\.tar\.gz: the archive holds no "
                                                r"wrong/wrong\.mtx"):
        fetch_suitesparse("G/wrong")
    (offline / "G" / "broken.tar.gz").write_bytes(b"not gzip")
    with pytest.raises(MatrixFormatError, match="cannot extract the archive"):
        fetch_suitesparse("G/broken")


# --- CLI -------------------------------------------------------------------------------------


def test_cli_list(capsys):
    rc, out, _ = cli(["list", "--json"], capsys)
    data = json.loads(out)
    assert rc == 0
    seed6 = next(s for s in data["suites"] if s["name"] == "seed6")
    cant = next(e for e in seed6["entries"] if e["name"] == "cant")
    assert (cant["rows"], cant["nnz"], cant["suitesparse"]) == (62451, 4007383, "Williams/cant")
    assert {g["name"] for g in data["generators"]} == {"banded", "powerlaw", "scattered",
                                                       "uniform", "rmat", "pruned"}
    rc, out, _ = cli(["list"], capsys)
    assert rc == 0 and "circuit5M" in out and "rmat" in out


def test_cli_generate_one_and_stats(tmp_path, capsys):
    out_file = tmp_path / "u.npz"
    rc, out, _ = cli(["generate", "banded", "--rows", "500", "--nnz", "4000", "--seed", "2",
                      "--param", "halfwidth=20", "--out", str(out_file), "--json"], capsys)
    result = json.loads(out)
    assert rc == 0 and (result["rows"], result["nnz"], result["params"]) == \
        (500, 4000, {"halfwidth": 20})
    rc, out, _ = cli(["stats", str(out_file), "--json"], capsys)
    stats = json.loads(out)["stats"]
    assert rc == 0 and stats["nnz"] == 4000 and stats["bandwidth"] <= 41
    rc, out, _ = cli(["stats", "seed6:cant", "--scale", "0.002", "--json"], capsys)
    payload = json.loads(out)
    assert payload["matrix"]["analog_of"] == "cant" and payload["stats"]["rows"] == 125


def test_cli_generate_suite(tmp_path, capsys):
    rc, out, _ = cli(["generate", "--suite", "seed6", "--scale", "0.001", "--format", "smtx",
                      "--out", str(tmp_path / "s6"), "--json"], capsys)
    written = json.loads(out)
    assert rc == 0 and [w["name"] for w in written][:2] == ["webbase-1M", "cant"]
    assert sorted(os.listdir(tmp_path / "s6")) == sorted(f"{w['name']}.smtx" for w in written)
    assert read_matrix(tmp_path / "s6" / "cage15.smtx").nnz == written[-1]["nnz"]


@pytest.mark.parametrize(("args", "fragment"), [
    (["generate", "--out", "x.mtx"], "give a generator KIND"),
    (["generate", "uniform", "--out", "x.mtx"], "needs --rows and --nnz"),
    (["generate", "uniform", "--suite", "seed6", "--out", "d"], "--suite takes no KIND"),
    (["generate", "uniform", "--rows", "3", "--nnz", "2", "--param", "x", "--out", "x.mtx"],
     "--param expects NAME=VALUE"),
    (["generate", "nope", "--rows", "3", "--nnz", "2", "--out", "x.mtx"],
     "unknown generator 'nope'"),
    (["generate", "--suite", "nope", "--out", "d"], "unknown suite 'nope'"),
    (["stats", "seed6:nope"], "unknown entry of suite 'seed6' 'nope'"),
])
def test_cli_usage_errors_exit_2(tmp_path, capsys, args, fragment):
    rc, _, err = cli(args, capsys)
    assert rc == 2 and fragment in err and "Traceback" not in err
