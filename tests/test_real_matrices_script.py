"""``scripts/real_matrices.py``: the real development set from Debian's ``suitesparse`` source
package, on a hand-made source tarball laid out like SuiteSparse 7.10's (no network)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from sparsescope.api import read_matrix
from tests.test_scripts import load

MTX = b"""%%MatrixMarket matrix coordinate real general
3 3 4
1 1 2.5
2 1 -1
3 2 4
3 3 1
"""
# METIS graph of a 4-cycle 1-2-3-4-1 with edge weights (fmt 001): the weights must be skipped
GRAPH = b"""% a comment
4 4 001
2 7 4 9
1 7 3 5
2 5 4 6
3 6 1 9
"""


def _tarball(tmp: Path, files: dict[str, bytes]) -> Path:
    path = tmp / "suitesparse_7.10.1+dfsg.orig.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"SuiteSparse-7.10.1/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_metis_graph_reads_as_a_symmetric_pattern(tmp_path):
    script = load("real_matrices")
    (tmp_path / "g.graph").write_bytes(GRAPH)
    a = script.read_metis_graph(tmp_path / "g.graph").toarray()
    want = np.zeros((4, 4))
    for i, j in [(0, 1), (1, 2), (2, 3), (3, 0)]:
        want[i, j] = want[j, i] = 1
    assert (a == want).all()


def test_metis_graph_with_a_wrong_edge_count_names_the_file(tmp_path):
    script = load("real_matrices")
    (tmp_path / "g.graph").write_bytes(GRAPH.replace(b"4 4 001", b"4 5 001"))
    with pytest.raises(Exception, match=r"g\.graph: header says 5 edges, lines give 4"):
        script.read_metis_graph(tmp_path / "g.graph")


@pytest.mark.parametrize("fmt", ["mtx", "npz"])
def test_collect_takes_the_four_folders_in_bounds_once_each(tmp_path, fmt):
    script = load("real_matrices")
    tarball = _tarball(tmp_path, {
        "ParU/Matrix/a.mtx": MTX,
        "Mongoose/Matrix/a_again.mtx": MTX,            # same matrix: kept once
        "CHOLMOD/SuiteSparse_metis/graphs/ring.graph": GRAPH,
        "CHOLMOD/Demo/Matrix/bad.mtx": b"%%MatrixMarket matrix coordinate complex general\n",
        "KLU/Matrix/other.mtx": MTX,                    # not one of the four folders
    })
    out = tmp_path / "out"
    rows = script.collect(tarball, out, min_nnz=4, max_nnz=8, suffix=f".{fmt}")
    assert sorted(r["name"] for r in rows) == ["a", "ring"]
    assert json.loads((out / "manifest.json").read_text())["matrices"] == rows
    a = read_matrix(out / f"a.{fmt}").csr.toarray()
    assert a.tolist() == [[2.5, 0, 0], [-1, 0, 0], [0, 4, 1]]
    ring = next(r for r in rows if r["name"] == "ring")
    assert (ring["rows"], ring["nnz"], ring["kind"]) == (4, 8, "graph")
    assert script.collect(tarball, tmp_path / "few", min_nnz=5, max_nnz=8) == [
        {**ring}]  # a.mtx has 4 entries: under the bound


def test_newest_debian_version_wins():
    script = load("real_matrices")
    versions = ["1:5.12.0+dfsg-2", "1:7.10.1+dfsg-1", "1:7.2.0+dfsg-1"]
    assert max(versions, key=script._debian_version_key) == "1:7.10.1+dfsg-1"


def test_family_errors_on_a_committed_h200_run(capsys):
    """The script prints ``api.family_errors`` of the stored predictions: each family's row
    holds its backends' cases, its median is that of their |errors|."""
    script = load("family_errors")
    run = Path(__file__).resolve().parents[1] / "results/h200/model/results.json.xz"
    assert script.main([str(run), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    total = {r["family"]: r for r in rows if r["backend"] == "all"}
    per_backend = [r for r in rows if r["backend"] != "all"]
    for fam in ("our kernels", "libraries"):
        assert total[fam]["cases"] == sum(r["cases"] for r in per_backend if r["family"] == fam)
    from sparsescope.api import read_runset

    libs = [c.prediction.error_pct for c in read_runset(run).cases
            if c.outcome == "ok" and c.prediction is not None
            and c.prediction.error_pct is not None and "cusparse" in c.backend]
    assert total["libraries"]["cases"] == len(libs) == 18
    assert total["libraries"]["median_abs_pct"] == pytest.approx(float(np.median(np.abs(libs))))
    assert script.main([str(run)]) == 0
    assert "| H200 | latency | libraries | **all** | 18 |" in capsys.readouterr().out
