#!/usr/bin/env python3
"""Build a local folder of real SuiteSparse-collection matrices for development and tuning.

Debian's `suitesparse` source package ships SuiteSparse collection matrices as test data in
its ParU, Mongoose, CHOLMOD and METIS folders (Debian 13 "trixie" ships SuiteSparse 7.10 with
ParU; Debian 12's 5.12 has no ParU). This script downloads the source package with apt
(adding a `deb-src` entry for trixie when none is there), takes those folders' matrices, turns
METIS `.graph` files into Matrix Market patterns, and writes every matrix with at least
`--min-nnz` and at most `--max-nnz` stored entries (after symmetric expansion) to OUT as
`NAME.mtx`, with `manifest.json` (name, source path, rows, columns, nonzeros, kind, sha256).
Nothing here is committed: the folder is a tuning set, not test data.

    python scripts/real_matrices.py --out ~/real-dev            # download, extract, convert
    python scripts/real_matrices.py --out DIR --from-tarball suitesparse_7.10.1+dfsg.orig.tar.xz

Then: `sparsescope sweep ~/real-dev --backend all --out sweep/` (or `run --matrix`).
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparsescope.api import SparsescopeError, read_matrix, write_matrix

#: the folders of the source tree whose matrices come from the SuiteSparse collection
FOLDERS = ("ParU/Matrix/", "Mongoose/Matrix/", "CHOLMOD/Demo/Matrix/",
           "CHOLMOD/SuiteSparse_metis/graphs/")
#: a deb-src entry that reaches a SuiteSparse with ParU (7.x)
DEB_SRC = """Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
DEB_SRC_FILE = Path("/etc/apt/sources.list.d/sparsescope-deb-src.sources")


def download_tarball(workdir: Path) -> Path:
    """`apt-get source --download-only suitesparse` at its newest version; the orig tarball.

    apt may fail on the `.dsc` (Debian's pool drops it before the tarball): the tarball is
    all this needs, so a failure with the tarball present is fine.
    """
    if not _has_trixie_src():
        DEB_SRC_FILE.write_text(DEB_SRC)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    versions = re.findall(r"^Version: (\S+)$", subprocess.run(
        ["apt-cache", "showsrc", "suitesparse"], check=True, capture_output=True,
        text=True).stdout, flags=re.M)
    newest = max(versions, key=_debian_version_key)
    subprocess.run(["apt-get", "source", "--download-only", f"suitesparse={newest}"],
                   cwd=workdir, check=False)
    found = sorted(workdir.glob("suitesparse_*.orig.tar.*"))
    if not found:
        sys.exit(f"error: apt-get source suitesparse={newest} gave no orig tarball in {workdir}")
    return found[-1]


def _has_trixie_src() -> bool:
    for f in glob.glob("/etc/apt/sources.list.d/*.sources") + ["/etc/apt/sources.list"]:
        text = Path(f).read_text() if os.path.exists(f) else ""
        if "deb-src" in text and "trixie" in text:
            return True
    return False


def _debian_version_key(version: str) -> tuple[int, ...]:
    """`1:7.10.1+dfsg-1` -> (1, 7, 10, 1, 1): epoch, upstream numbers, Debian revision."""
    return tuple(int(n) for n in re.findall(r"\d+", version.replace("+dfsg", "")))


def read_metis_graph(path: Path) -> sp.csr_matrix:
    """A METIS graph file as a symmetric pattern matrix (values 1).

    Format (METIS manual, section 4.1.1): a header `n m [fmt [ncon]]`, then one line per
    vertex listing its neighbours, 1-based; `fmt` digits say whether vertex sizes (100),
    vertex weights (010, `ncon` of them) and edge weights (001) are present. Comment lines
    start with `%`. The matrix has 2m stored entries.
    """
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("%")]
    head = lines[0].split()
    n, m = int(head[0]), int(head[1])
    fmt = head[2].zfill(3) if len(head) > 2 else "000"
    ncon = int(head[3]) if len(head) > 3 else 1
    skip = (1 if fmt[0] == "1" else 0) + (ncon if fmt[1] == "1" else 0)
    step = 2 if fmt[2] == "1" else 1
    rows, cols = [], []
    for v, line in enumerate(lines[1:n + 1]):
        nbrs = np.array(line.split()[skip:][::step], dtype=np.int64) - 1
        rows.append(np.full(nbrs.size, v))
        cols.append(nbrs)
    r, c = np.concatenate(rows), np.concatenate(cols)
    if r.size != 2 * m:
        raise SparsescopeError(f"{path}: header says {m} edges, lines give {r.size // 2}")
    return sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n, n))


def collect(tarball: Path, out: Path, min_nnz: int, max_nnz: int,
            suffix: str = ".mtx") -> list[dict]:
    """Extract FOLDERS' matrices from TARBALL and write those within the bounds to OUT.

    SUFFIX `.npz` (compressed: 15 MB for the 33 matrices of SuiteSparse 7.10, against 100 MB of
    `.mtx`) suits a folder that has to travel, e.g. to a GPU machine without network.
    """
    out.mkdir(parents=True, exist_ok=True)
    rows, seen = [], {}
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and _wanted(m.name)]
        tar.extractall(tmp, members=members, filter="data")
        for m in sorted(members, key=_folder_order):  # a matrix shipped twice keeps its first
            src = Path(tmp, m.name)
            try:
                matrix = (read_metis_graph(src) if src.suffix == ".graph"
                          else read_matrix(src).csr)
            except (SparsescopeError, ValueError) as exc:
                print(f"skipped {m.name}: {str(exc).splitlines()[0]}", file=sys.stderr)
                continue
            if not min_nnz <= matrix.nnz <= max_nnz:
                continue
            digest = _digest(matrix)
            if digest in seen:  # ParU and Mongoose ship some matrices twice
                print(f"skipped {m.name}: same matrix as {seen[digest]}", file=sys.stderr)
                continue
            seen[digest] = m.name
            name = src.stem
            _write(matrix, out / f"{name}{suffix}")
            rows.append({"name": name, "source": m.name.split("/", 1)[1],
                         "rows": matrix.shape[0], "cols": matrix.shape[1], "nnz": int(matrix.nnz),
                         "kind": "graph" if src.suffix == ".graph" else "matrix",
                         "sha256": digest})
    (out / "manifest.json").write_text(json.dumps(
        {"tarball": tarball.name, "min_nnz": min_nnz, "max_nnz": max_nnz, "matrices": rows},
        indent=1) + "\n")
    return rows


def _write(matrix: sp.csr_matrix, target: Path) -> None:
    if target.suffix != ".npz":
        write_matrix(matrix, target)
        return
    partial = target.with_name(target.name + ".partial.npz")  # save_npz appends .npz otherwise
    sp.save_npz(partial, matrix, compressed=True)
    os.replace(partial, target)


def _folder_order(member: tarfile.TarInfo) -> tuple[int, str]:
    inner = member.name.split("/", 1)[-1]
    return next(i for i, f in enumerate(FOLDERS) if inner.startswith(f)), inner


def _wanted(name: str) -> bool:
    inner = name.split("/", 1)[-1]
    return inner.startswith(FOLDERS) and (inner.endswith((".mtx", ".graph")))


def _digest(matrix: sp.csr_matrix) -> str:
    h = hashlib.sha256()
    m = matrix.tocsr()
    m.sort_indices()
    for part in (np.asarray(m.shape), m.indptr, m.indices, m.data):
        h.update(np.ascontiguousarray(part).tobytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder to write NAME.mtx into")
    p.add_argument("--from-tarball", type=Path, help="a suitesparse_*.orig.tar.* already here")
    p.add_argument("--min-nnz", type=int, default=2_000)
    p.add_argument("--max-nnz", type=int, default=1_500_000)
    p.add_argument("--format", choices=["mtx", "mtx.gz", "npz"], default="mtx")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        tarball = args.from_tarball or download_tarball(Path(work))
        rows = collect(tarball, args.out, args.min_nnz, args.max_nnz, f".{args.format}")
    print(f"{len(rows)} matrices, {sum(r['nnz'] for r in rows):,} nonzeros in {args.out}")
    for r in sorted(rows, key=lambda r: r["nnz"]):
        print(f"  {r['name']:<28} {r['rows']:>9,} x {r['cols']:<9,} {r['nnz']:>10,} nnz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
