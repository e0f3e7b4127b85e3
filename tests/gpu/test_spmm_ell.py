"""spmm-cuda-ell (width-major ELL, a lane a row, no row pointers) on the GPU against float64
through the op runner's gate: the awkward matrices whose padding it takes (empty rows, 1 x 1,
one row, one column, row counts not multiples of 32) -- the padding limit lifted where it
declines -- in both layouts, float32 / int32 and float64 / int64, at k = 1, 3, 8, 33 and 64
(partial column tiles, VEC 1 where k is odd; rows longer than 32, two passes and more); the
narrowest and widest tiles given; a timed
call in each timing mode; and ``spmm-cuda-auto`` on a small mesh-like matrix, with the ELL
kernel among its candidates."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.runner import run_case
from sparsescope.matrices.types import Matrix
from sparsescope.timing.types import TimingConfig

pytestmark = pytest.mark.gpu
QUICK = TimingConfig(warmups=1, repeats=3)
KS = (1, 3, 8, 33, 64)


def _run(matrix, backend, k, layout, dtype="float32", index_bytes=4, config=QUICK,
         timed=False):
    return run_case(matrix, backend, "spmm", {"k": k, "layout": layout}, config=config,
                    value_dtype=dtype, index_bytes=index_bytes, seed=k, timed=timed)


def test_matches_float64_on_awkward_matrices(awkward_matrices):
    from sparsescope.backends.spmm_ell import SpmmCudaEll

    failures = []
    for matrix in awkward_matrices:
        if matrix.csr.shape[0] * max(1, np.diff(matrix.csr.indptr).max(initial=0)) > 5e7:
            continue   # a heavy row pads every row to its length: past the device's memory
        for layout in ("col", "row"):
            for k in KS:
                for dtype, index_bytes in (("float32", 4), ("float64", 8)):
                    case = _run(matrix, SpmmCudaEll(max_padding=float("inf")), k, layout,
                                dtype, index_bytes)
                    if case.outcome != "ok":
                        failures.append((matrix.name, layout, k, dtype, case.outcome,
                                         case.reason))
    assert not failures, failures


def _mesh(n: int, seed: int) -> Matrix:
    """A 2-D five-point stencil on an n x n grid, rows permuted: 4-5 nonzeros a row."""
    one = sp.diags([-1, 2, -1], [-1, 0, 1], shape=(n, n))
    a = (sp.kron(sp.eye(n), one) + sp.kron(one, sp.eye(n))).tocsr()
    perm = np.random.default_rng(seed).permutation(n * n)
    a = a[perm][:, perm].tocsr()
    a.sort_indices()
    return Matrix(name=f"mesh-{n}", csr=a.astype(np.float64), source="test")


@pytest.mark.parametrize("options", [{"tile_cols": 1}, {"tile_cols": 8}])
@pytest.mark.parametrize("layout", ["col", "row"])
def test_given_tiles_and_timed_calls(options, layout):
    from sparsescope.backends.spmm_ell import SpmmCudaEll

    mesh = _mesh(40, seed=len(options) + options.get("tile_cols", 0))
    for mode in ("latency", "throughput"):
        case = _run(mesh, SpmmCudaEll(**options), 8, layout,
                    config=TimingConfig(warmups=2, repeats=5, mode=mode), timed=True)
        assert case.outcome == "ok", case.reason
        assert case.notes["zero_fill"] == "no"
        assert case.notes["tile_cols"] == str(options["tile_cols"])
        assert case.measurement.median_ms > 0
        # one kernel a call: no zero fill, no transposes
        names = [k["name"] for k in case.measurement.kernel_breakdown]
        assert names and all(name.startswith("spmm_ell") for name in names), names


@pytest.mark.parametrize("layout", ["col", "row"])
def test_auto_plans_and_may_keep_the_ell_kernel(layout):
    mesh = _mesh(40, seed=3)
    case = _run(mesh, "spmm-cuda-auto", 8, layout)
    assert case.outcome == "ok", case.reason
    table = {row["label"]: row for row in json.loads(case.notes["selection_table"])}
    assert table["spmm-cuda-ell"]["predicted_ms"] > 0
