"""The row-tile SpMM kernel (``spmm-cuda-rowtile``) on the GPU, against float64 through the op
runner's gate: every awkward matrix (empty rows and tiles, a heavy row, 1 x 1, one row, one
column, sizes not a multiple of 32 / R / C), float32 / float64, INT32 / INT64, X and Y row- and
column-major, k = 1, 7, 32, 33, 256; every option (tile rows, slice width, chunk, warps, minb),
shared memory above 48 KB, a dropped item caught by the poison, the timing path, and auto
keeping it where it is timed fastest."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.runner import run_case
from sparsescope.matrices.types import Matrix
from sparsescope.timing.types import TimingConfig

pytestmark = pytest.mark.gpu
QUICK = TimingConfig(warmups=1, repeats=3)
KS = (1, 7, 32, 33, 256)


def _run(matrix, backend, k, layout, dtype, index_bytes, timed=False):
    return run_case(matrix, backend, "spmm", {"k": k, "layout": layout}, config=QUICK,
                    value_dtype=dtype, index_bytes=index_bytes, seed=k, timed=timed)


def _weight(rows: int, cols: int, density: float, seed: int) -> Matrix:
    rng = np.random.default_rng(seed)
    csr = sp.random(rows, cols, density=density, format="csr", random_state=rng,
                    data_rvs=lambda n: rng.random(n) * 2 - 1)
    csr.sum_duplicates()
    csr.sort_indices()
    csr.data = np.where(csr.data == 0, 0.5, csr.data)
    return Matrix(name=f"w{rows}x{cols}-{density}", csr=csr, source="test", kind="uniform",
                  seed=seed)


@pytest.mark.parametrize("layout", ["row", "col"])
def test_matches_float64_on_awkward_matrices(awkward_matrices, layout):
    failures = []
    for matrix in awkward_matrices:
        for k in KS:
            for dtype in ("float32", "float64"):
                for index_bytes in (4, 8):
                    case = _run(matrix, "spmm-cuda-rowtile", k, layout, dtype, index_bytes)
                    if case.outcome != "ok":
                        failures.append((matrix.name, k, dtype, index_bytes, case.reason))
    assert not failures, failures


@pytest.mark.parametrize("options", [
    {"rows": 8}, {"rows": 16, "ks": 32}, {"rows": 64, "ks": 64, "chunk": 64},
    {"rows": 32, "ks": 128}, {"chunk": 16}, {"warps": 4, "rows": 8}, {"warps": 16, "rows": 64},
    {"minb": 1}])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_every_option_matches(awkward_matrices, options, layout):
    """The options on dense-ish weights (a tile touching every chunk), and the awkward ones
    where a tile has no nonzero; a slice the case cannot take is skipped with its reason."""
    from sparsescope.backends.spmm_rowtile import SpmmCudaRowTile

    matrices = [_weight(97, 131, 0.3, 1), _weight(300, 1030, 0.6, 2),
                *[m for m in awkward_matrices if m.name.startswith(("empty-rows", "heavy"))]]
    failures = []
    for matrix in matrices:
        for k in (33, 256):
            for dtype in ("float32", "float64"):
                case = _run(matrix, SpmmCudaRowTile(**options), k, layout, dtype, 4)
                if case.outcome == "skipped":
                    assert "does not fit k" in case.reason
                elif case.outcome != "ok":
                    failures.append((matrix.name, k, dtype, case.reason))
    assert not failures, failures


@pytest.mark.parametrize("split", [2, 5])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_splits_add_partial_tiles_atomically(awkward_matrices, split, layout):
    """S > 1 (Y zeroed, partial tiles added by atomicAdd; runs without items among them) in
    both layouts, value types and index widths, and the rule's own S on a weight whose grid
    is smaller than the device; timed calls repeat the memset (the gate runs after them)."""
    from sparsescope.backends.spmm_rowtile import SpmmCudaRowTile

    failures = []
    for matrix in [_weight(300, 1030, 0.3, 7), *awkward_matrices]:
        for k in (7, 33, 256):
            for dtype in ("float32", "float64"):
                for index_bytes in (4, 8):
                    case = _run(matrix, SpmmCudaRowTile(split=split), k, layout, dtype,
                                index_bytes, timed=(k == 33))
                    if case.outcome != "ok":
                        failures.append((matrix.name, k, dtype, index_bytes, case.reason))
                    elif case.notes["splits"] != str(split):
                        failures.append((matrix.name, "splits", case.notes["splits"]))
    assert not failures, failures
    auto = _run(_weight(1024, 1024, 0.2, 8), "spmm-cuda-rowtile", 256, layout, "float32", 4,
                timed=True)
    assert auto.outcome == "ok" and int(auto.notes["splits"]) > 1, auto.notes
    assert auto.notes["launches"] == "2"


def test_large_shared_memory_blocks_run():
    """float64, R 64, C 64: 2 x (32 KB of X + 64 KB of entries) a block, opted in above 48 KB."""
    from sparsescope.backends.spmm_rowtile import SpmmCudaRowTile

    matrix = _weight(700, 900, 0.5, 3)
    for layout in ("row", "col"):
        case = _run(matrix, SpmmCudaRowTile(rows=64, ks=64, chunk=64), 256, layout, "float64", 8)
        assert case.outcome == "ok", case.reason
        assert int(case.notes["smem_bytes"]) > 150_000


def test_poison_catches_a_dropped_item():
    """A launch that skips each tile's last item leaves those products out: the gate fails."""
    from sparsescope.backends.spmm_rowtile import SpmmCudaRowTile

    class Drops(SpmmCudaRowTile):
        def _launch(self, p):
            p.tile_ptr = p.tile_ptr.copy()
            p.tile_ptr[1:] -= 1
            super()._launch(p)

    case = _run(_weight(200, 300, 0.3, 4), Drops(), 64, "row", "float32", 4)
    assert case.outcome == "failed", case.reason


def test_timing_path_and_kernel_breakdown():
    matrix = _weight(1024, 1024, 0.2, 5)
    for layout in ("row", "col"):
        case = run_case(matrix, "spmm-cuda-rowtile", "spmm", {"k": 256, "layout": layout},
                        config=TimingConfig(warmups=2, repeats=10), seed=1)
        assert case.outcome == "ok" and case.measurement.clock == "cuda-events"
        names = [k["name"] for k in case.measurement.kernel_breakdown]
        assert any("spmm_rowtile" in n for n in names), names


def test_auto_plans_times_and_may_keep_rowtile_on_a_weight():
    """On a 1,024-square 80 % sparse weight rowtile is a candidate in both layouts (its X
    staged is a fifth of the gathers'), predicted, timed beside the best scored kernel, and
    the kernel auto keeps is the fastest timed."""
    import json

    from sparsescope.backends import spmm_auto

    matrix = _weight(1024, 1024, 0.2, 6)
    for layout in ("row", "col"):
        case = _run(matrix, "spmm-cuda-auto", 256, layout, "float32", 4, timed=True)
        assert case.outcome == "ok", case.reason
        table = json.loads(case.notes["selection_table"])
        rowtile = [row for row in table if row["backend"] == "spmm-cuda-rowtile"]
        assert len(rowtile) == 1 and rowtile[0]["predicted_ms"] > 0
        timed = [row for row in table if row["trial_ms"]]
        best = min(row["predicted_ms"] for row in table if row["predicted_ms"])
        if rowtile[0]["predicted_ms"] <= best * (1 + spmm_auto.TRIAL_MARGIN):
            assert rowtile[0]["trial_ms"]   # within the margin (or fastest): timed
        fastest = min(timed, key=lambda row: row["trial_ms"])["backend"]
        kept = case.notes.get("row_major_kernel", case.notes["selected"])
        assert kept == fastest
