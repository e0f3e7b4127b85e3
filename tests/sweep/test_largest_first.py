"""The largest matrices first, by the nonzeros their headers declare (issue 35): a compressed
``.npz`` shrinks by its structure, so its file size misorders the matrices."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsescope import matrices
from sparsescope.sweep.source_facts import header_entries, largest_first, size_hint
from sparsescope.sweep.sources import expand_sources


def test_compressed_npz_files_are_ordered_by_their_nonzeros_not_their_bytes(tmp_path):
    # a banded matrix compresses far better than a random one of fewer nonzeros
    n = 60_000
    banded = sp.diags([np.ones(n - 1), np.ones(n), np.ones(n - 1)], [-1, 0, 1], format="csr")
    scattered = sp.random(5_000, 5_000, density=0.004, format="csr", random_state=1)
    sp.save_npz(tmp_path / "banded.npz", banded, compressed=True)
    sp.save_npz(tmp_path / "scattered.npz", scattered, compressed=True)
    assert (tmp_path / "banded.npz").stat().st_size < (tmp_path / "scattered.npz").stat().st_size
    assert banded.nnz > scattered.nnz
    found = {s.name: s for s in expand_sources([str(tmp_path)])}
    assert size_hint(found["banded"]) == banded.nnz
    assert size_hint(found["scattered"]) == scattered.nnz
    assert [s.name for s in largest_first(found.values())] == ["banded", "scattered"]


def test_a_matrix_market_header_gives_its_entries_a_symmetric_one_doubled(tmp_path):
    general = matrices.generate("uniform", 300, 2_000, seed=1)
    matrices.write_matrix(general, tmp_path / "g.mtx")
    (tmp_path / "s.mtx").write_text("%%MatrixMarket matrix coordinate real symmetric\n"
                                    "3 3 2\n1 1 1.0\n3 1 2.0\n")
    assert header_entries(tmp_path / "g.mtx", ".mtx") == general.nnz
    assert header_entries(tmp_path / "s.mtx", ".mtx") == 4
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    assert header_entries(tmp_path / "bad.npz", ".npz") is None  # the size estimate stands
    (bad,) = expand_sources([str(tmp_path / "bad.npz")])
    assert size_hint(bad) == 9 / 12
