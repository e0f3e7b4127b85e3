"""Sweep sources ``suitesparse:FILTERS`` (from the collection's index) and DLMC ``.smtx`` trees."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import pytest

from sparsescope import matrices
from sparsescope.errors import MatrixFormatError, MatrixNotAvailableError, UsageError
from sparsescope.matrices import suitesparse
from sparsescope.sweep import suitesparse_index
from sparsescope.sweep.sources import MatrixSource, expand_sources, load_source

INDEX = Path(__file__).parent / "fixtures" / "ssstats_small.csv"
SEL = f"suitesparse:index={INDEX}"


@pytest.fixture(autouse=True)
def _no_network(tmp_path, monkeypatch):
    """A private cache, no index env var, and any download an error (no test goes online)."""
    monkeypatch.setenv("SPARSESCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(suitesparse_index.INDEX_ENV, raising=False)
    monkeypatch.delenv("SPARSESCOPE_OFFLINE", raising=False)

    def refuse(url, dest, timeout_s=0):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(suitesparse, "_download", refuse)


def names(spec: str) -> list[str]:
    return [s.name for s in expand_sources([spec])]


# --- the index ---------------------------------------------------------------------------------


def test_index_fixture_parses_every_column():
    rows = suitesparse_index.read_index(INDEX)
    assert len(rows) == 11
    web = next(r for r in rows if r.name == "webbase-1M")
    assert (web.id, web.group, web.rows, web.cols, web.nnz) == (6, "Williams", 1000005, 1000005,
                                                                3105536)
    assert (web.real, web.binary, web.nd, web.posdef) == (True, False, False, False)
    assert web.kind == "weighted directed graph"
    assert not next(r for r in rows if r.name == "young1c").real


def test_index_with_a_bad_row_names_the_line(tmp_path):
    bad = tmp_path / "ssstats.csv"
    bad.write_text("2\n1-Jan-2024\nHB,a,1,1,1,1,0,0,0,1,1,x,1\nHB,b,1,one,1,1,0,0,0,1,1,x,1\n")
    with pytest.raises(MatrixFormatError, match=r"line 4"):
        suitesparse_index.read_index(bad)
    bad.write_text("Group,Name,nrows\nHB,a,1\n")
    with pytest.raises(MatrixFormatError, match="not a SuiteSparse ssstats.csv"):
        suitesparse_index.read_index(bad)


def test_every_row_sorted_by_nnz_as_suitesparse_sources():
    sources = expand_sources([SEL])
    assert len(sources) == 11
    assert sources[0] == MatrixSource(ref="suitesparse:HB/bcsstk01", name="bcsstk01",
                                      kind="suitesparse")
    assert sources[-1].ref == "suitesparse:Freescale/circuit5M"
    nnz = {r.group_name: r.nnz for r in suitesparse_index.read_index(INDEX)}
    order = [nnz[s.ref.removeprefix("suitesparse:")] for s in sources]
    assert order == sorted(order)


# --- filters -----------------------------------------------------------------------------------


@pytest.mark.parametrize("filters, expected", [
    ("group=Williams", ["mac_econ_fwd500", "webbase-1M", "cant", "pdb1HYS", "consph"]),
    ("group=will*", ["mac_econ_fwd500", "webbase-1M", "cant", "pdb1HYS", "consph"]),
    ("name=web*", ["webbase-1M", "web-Google"]),
    ("name=WEB*,group=snap", ["web-Google"]),
    ("kind=graph", ["webbase-1M", "pdb1HYS", "web-Google"]),
    ("kind=WEIGHTED", ["webbase-1M", "pdb1HYS"]),
    ("kind=directed graph", ["webbase-1M", "pdb1HYS", "web-Google"]),  # undirected too
    ("rows=1e5..1e7", ["mac_econ_fwd500", "webbase-1M", "web-Google", "circuit5M"]),
    ("rows=..1000", ["bcsstk01", "young1c"]),
    ("rows=1e6..", ["webbase-1M", "circuit5M"]),
    ("rows=48", ["bcsstk01"]),
    ("nnz=..5e3", ["bcsstk01", "young1c"]),
    ("nnz=4e6..6e6,cols=..1e5", ["cant", "pdb1HYS"]),
    ("real=0", ["young1c", "mhd1280b"]),
    ("real=1,binary=yes", ["web-Google"]),
    ("posdef=1,nd=1", ["bcsstk01", "cant", "consph"]),
    ("group=Williams,kind=graph,rows=1e5..1e7,nnz=..5e7,name=web*,real=1,limit=50",
     ["webbase-1M"]),
])
def test_filters(filters, expected):
    assert names(f"{SEL},{filters}") == expected


def test_limit_keeps_the_smallest():
    assert names(f"{SEL},real=1,limit=3") == ["bcsstk01", "mac_econ_fwd500", "rma10"]
    assert names(f"suitesparse:limit=1,index={INDEX}") == ["bcsstk01"]


@pytest.mark.parametrize("filters, message", [
    ("size=10", "not a filter"),
    ("group", "not a filter"),
    ("nnz=lots", "wants a number"),
    ("nnz=9..1", "is empty"),
    ("real=maybe", "wants 1 or 0"),
    ("limit=0", "at least 1"),
    ("name=a,name=b", "given twice"),
])
def test_bad_filters_are_usage_errors(filters, message):
    with pytest.raises(UsageError, match=message):
        expand_sources([f"{SEL},{filters}"])


def test_a_filter_matching_nothing_names_the_filters():
    with pytest.raises(UsageError) as err:
        expand_sources([f"{SEL},group=Williams,nnz=..100"])
    text = str(err.value)
    assert "no matrix" in text and "group=Williams, nnz=..100" in text and str(INDEX) in text


def test_index_from_the_environment_and_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(suitesparse_index.INDEX_ENV, str(INDEX))
    assert names("suitesparse:name=cant") == ["cant"]
    monkeypatch.delenv(suitesparse_index.INDEX_ENV)
    cached = suitesparse_index.default_index_path()
    assert cached == tmp_path / "cache" / "suitesparse" / "ssstats.csv"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(INDEX.read_bytes())
    assert names("suitesparse:name=consph") == ["consph"]


def test_one_matrix_by_name_needs_no_index():
    assert expand_sources(["suitesparse:Williams/cant"]) == [
        MatrixSource(ref="suitesparse:Williams/cant", name="cant", kind="suitesparse")]


# --- offline -----------------------------------------------------------------------------------


def _assert_offline_message(text: str, tmp_path: Path) -> None:
    assert suitesparse_index.INDEX_URL in text
    assert str(tmp_path / "cache" / "suitesparse" / "ssstats.csv") in text
    assert "index=PATH" in text


def test_index_offline_fails_fast_with_url_and_path(tmp_path):
    with pytest.raises(MatrixNotAvailableError) as err:
        expand_sources(["suitesparse:group=Williams"])
    _assert_offline_message(str(err.value), tmp_path)
    assert "network disabled" in str(err.value)


def test_offline_env_var_tries_no_download(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSESCOPE_OFFLINE", "1")
    monkeypatch.setattr(suitesparse, "_download", lambda *a, **k: pytest.fail("downloaded"))
    with pytest.raises(MatrixNotAvailableError) as err:
        expand_sources(["suitesparse:kind=graph"])
    _assert_offline_message(str(err.value), tmp_path)
    with pytest.raises(MatrixNotAvailableError) as err:
        load_source(MatrixSource("suitesparse:Williams/cant", "cant", "suitesparse"))
    text = str(err.value)
    assert suitesparse.suitesparse_url("Williams", "cant") in text
    assert str(tmp_path / "cache" / "suitesparse" / "Williams" / "cant.tar.gz") in text


def test_missing_named_index_says_where_to_get_it(tmp_path):
    with pytest.raises(MatrixNotAvailableError, match="does not exist") as err:
        expand_sources([f"suitesparse:index={tmp_path / 'none.csv'}"])
    assert suitesparse_index.INDEX_URL in str(err.value)


def test_archive_that_cannot_be_fetched_names_url_and_cache_path(tmp_path):
    (src,) = expand_sources([f"{SEL},name=webbase-1M"])
    with pytest.raises(MatrixNotAvailableError) as err:
        load_source(src)
    text = str(err.value)
    assert "https://suitesparse-collection-website.herokuapp.com/MM/Williams/webbase-1M.tar.gz" \
        in text
    assert str(tmp_path / "cache" / "suitesparse" / "Williams" / "webbase-1M.tar.gz") in text


def test_selected_matrix_in_the_cache_loads_without_network(tmp_path, monkeypatch):
    monkeypatch.setattr(suitesparse, "_download", lambda *a, **k: pytest.fail("downloaded"))
    csr = matrices.generate("banded", 12, 40, seed=1)
    matrices.write_matrix(csr, tmp_path / "cache" / "suitesparse" / "HB" / "bcsstk01" /
                          "bcsstk01.mtx")
    (src,) = expand_sources([f"{SEL},group=HB,real=1"])
    matrix = load_source(src)
    assert matrix.name == "bcsstk01" and matrix.csr.nnz == csr.nnz
    assert matrix.source == "suitesparse:HB/bcsstk01"


def test_cli_reports_no_match_without_traceback(tmp_path, monkeypatch, capsys):
    from sparsescope.cli import main

    monkeypatch.setenv("SPARSESCOPE_STORE", str(tmp_path / "store.sqlite"))
    code = main(["sweep", f"{SEL},name=nothing*", "--out", str(tmp_path / "o"),
                 "--backend", "scipy-cpu"])
    err = capsys.readouterr().err
    assert code == 2 and "name=nothing*" in err and "Traceback" not in err


# --- DLMC --------------------------------------------------------------------------------------

SMTX = "3, 4, 5\n0 2 2 5\n1 3 0 2 3\n"


def _dlmc_tree(root: Path) -> Path:
    for rel in ("rn50/magnitude_pruning/0.8/bottleneck_2_block_group3_5_1.smtx",
                "rn50/magnitude_pruning/0.9/bottleneck_2_block_group3_5_1.smtx",
                "transformer/random_pruning/0.5/body_decoder_layer_0_ffn_conv1.smtx"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SMTX)
    return root


EXPECTED = ["rn50__magnitude_pruning__0.8__bottleneck_2_block_group3_5_1",
            "rn50__magnitude_pruning__0.9__bottleneck_2_block_group3_5_1",
            "transformer__random_pruning__0.5__body_decoder_layer_0_ffn_conv1"]


def test_dlmc_prefix_expands_every_smtx_recursively(tmp_path):
    root = _dlmc_tree(tmp_path / "dlmc")
    sources = expand_sources([f"dlmc:{root}"])
    assert [s.name for s in sources] == EXPECTED
    assert {s.kind for s in sources} == {"dlmc"}
    assert sources[0].ref == str(root / "rn50/magnitude_pruning/0.8/"
                                 "bottleneck_2_block_group3_5_1.smtx")
    matrix = load_source(sources[2])
    assert matrix.name == EXPECTED[2] and matrix.csr.shape == (3, 4) and matrix.csr.nnz == 5


def test_plain_folder_of_nested_smtx_is_a_dlmc_tree(tmp_path):
    root = _dlmc_tree(tmp_path / "dlmc")
    assert [(s.name, s.kind) for s in expand_sources([str(root)])] == \
        [(n, "dlmc") for n in EXPECTED]
    # a subfolder of the tree is named relative to itself
    assert names(f"dlmc:{root / 'rn50'}") == [n.removeprefix("rn50__") for n in EXPECTED[:2]]


def test_folder_with_other_formats_or_flat_smtx_keeps_file_sources(tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "a.smtx").write_text(SMTX)
    assert [(s.name, s.kind) for s in expand_sources([str(flat)])] == [("a", "file")]
    mixed = _dlmc_tree(tmp_path / "mixed")
    matrices.write_matrix(matrices.generate("banded", 10, 30, seed=0), mixed / "m.mtx")
    kinds = {s.kind for s in expand_sources([str(mixed)])}
    assert kinds == {"file"}
    assert len(expand_sources([f"dlmc:{mixed}"])) == 3  # the prefix keeps only .smtx


def test_dlmc_errors(tmp_path):
    with pytest.raises(UsageError, match="no such folder"):
        expand_sources([f"dlmc:{tmp_path / 'missing'}"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no .smtx file"):
        expand_sources([f"dlmc:{tmp_path / 'empty'}"])


def test_a_suite_entry_can_be_named_alone():
    (one,) = expand_sources(["suite:spmm-population-held-out#weights-02"])
    assert (one.name, one.kind) == ("weights-02", "suite")
    assert one.ref == "suite:spmm-population-held-out@1.0#weights-02"
    two = expand_sources(["suite:awkward#banded-1001", "suite:awkward@1#banded-1001",
                          "suite:awkward#rmat-257"])
    assert [s.name for s in two] == ["banded-1001", "rmat-257"]   # the same ref once
    with pytest.raises(UsageError, match="unknown entry of suite 'awkward' 'nope'"):
        expand_sources(["suite:awkward#nope"])
