"""The own slice kernels without a GPU: the gather's tiling, an emulation of its per-block
logic (tiles, binary searches, padded empty rows), and the SASS of both kernels."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends._gpu import kernel_source
from sparsescope.backends.slice_cuda import gather_tiles
from sparsescope.ops.registry import get_op


@pytest.mark.parametrize(("cols", "value_bytes", "expected"), [
    (10_000, 4, (1, 10_016)),    # seed 003's 10,000 columns: one 40 KB tile per row
    (100_000, 4, (9, 11_136)),   # balanced tiles of whole warps, each <= 48 KB
    (12_288, 4, (1, 12_288)),    # exactly 48 KB
    (12_289, 4, (2, 6_176)),
    (10_000, 8, (2, 5_024)),     # float64 halves the columns per tile
    (1, 4, (1, 32)),
])
def test_gather_tiles(cols, value_bytes, expected):
    tiles, tile = gather_tiles(cols, value_bytes)
    assert (tiles, tile) == expected
    assert tiles * tile >= cols and tile * value_bytes <= 48 * 1024


def emulate_gather(csr: sp.csr_matrix, rows: np.ndarray, tile: int, tiles: int,
                   scalar: float | None) -> np.ndarray:
    """slice_gather's blocks in NumPy: zero tile, find the run (binary searches when the row
    spans several tiles), drop it in, write the tile."""
    cols, n_rows = csr.shape[1], csr.shape[0]
    out = np.full((rows.size, cols), np.nan)
    for p, r in enumerate(rows):
        for t in range(tiles):
            c0 = t * tile
            if c0 >= cols:
                continue
            width = min(tile, cols - c0)
            buf = np.zeros(width)
            lo = hi = 0
            if 0 <= r < n_rows:
                lo, hi = int(csr.indptr[r]), int(csr.indptr[r + 1])
                if tiles > 1:
                    first = lo + int(np.searchsorted(csr.indices[lo:hi], c0, side="left"))
                    hi = first + int(np.searchsorted(csr.indices[first:hi], c0 + width,
                                                     side="left"))
                    lo = first
            for j in range(lo, hi):
                buf[csr.indices[j] - c0] = scalar if scalar is not None else csr.data[j]
            out[p, c0:c0 + width] = buf
    return out


@pytest.mark.parametrize("tile", [32, 64, 1024])
@pytest.mark.parametrize("weights", ["scalar", "per-nnz"])
def test_emulated_gather_matches_the_reference(tile, weights):
    rng = np.random.default_rng(tile)
    a = sp.random(40, 150, density=0.2, format="csr", random_state=rng)
    a.sort_indices()
    case = get_op("slice").make_case(a, {"rows": [0, 39, 5, 5, 80, -1], "weights": weights,
                                         "out_of_range": "zero"})
    tiles = -(-150 // tile)
    got = emulate_gather(case.matrix, case.inputs.rows, tile, tiles,
                         0.75 if weights == "scalar" else None)
    assert not np.isnan(got).any()  # every output byte written once, zeros included
    np.testing.assert_array_equal(got, case.reference)


WRAPPER = """
#include "{path}"
template __global__ void slice_scatter<float, int, false>(long long, long long, long long,
    const int*, const int*, const int*, const float*, float, float*);
template __global__ void slice_scatter<float, int, true>(long long, long long, long long,
    const int*, const int*, const int*, const float*, float, float*);
template __global__ void slice_gather<float, int, false>(long long, long long, long long, int,
    const int*, const int*, const int*, const float*, float, float*);
"""


@pytest.fixture(scope="module")
def slice_sass(tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    from sparsescope.sass.analysis import analyse_source

    folder = tmp_path_factory.mktemp("slice_sass")
    kernel = folder / "slice_rows.cu"
    kernel.write_text(kernel_source("slice_rows.cu"))
    wrapper = folder / "instances.cu"
    wrapper.write_text(WRAPPER.format(path=kernel))
    return {a.demangled.split("(")[0]: a for a in analyse_source(wrapper, arch="sm_90")}


def test_sass_of_the_slice_kernels(slice_sass):
    per_nnz = slice_sass["void slice_scatter<float, int, false>"]
    scalar = slice_sass["void slice_scatter<float, int, true>"]
    gather = slice_sass["void slice_gather<float, int, false>"]
    loads = {name: sum(i.opcode == "LDG" for i in a.instructions)
             for name, a in (("per_nnz", per_nnz), ("scalar", scalar))}
    assert loads["scalar"] < loads["per_nnz"]  # the scalar weight never reads val
    assert not any(i.opcode == "BAR" for i in per_nnz.instructions)
    ops = {i.opcode for i in gather.instructions}
    assert {"BAR", "STS", "LDS", "STG"} <= ops  # tile staged in shared memory, then stored
    for a in (per_nnz, scalar, gather):
        assert not a.resources.local_bytes and a.resources.registers <= 40
