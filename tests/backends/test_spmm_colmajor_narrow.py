"""colmajor's narrower column tiles (``tile_cols``) and the auto candidate that offers them on
a grid below one wave (``spmm_auto_candidates.colmajor_plans``), against hand-computed numbers;
and the leaner launch of the colmajor and rowgroup backends (kernel and arguments resolved once
by ``prepare``), on the fake device of ``test_spmm_rowgroup_fake_device.py``. No GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from sparsescope.backends.select_predicted import Candidate
from sparsescope.backends.spmm_auto_candidates import (
    COLMAJOR,
    colmajor_plans,
    colmajor_wave_warps,
    predict_candidates,
)
from sparsescope.backends.spmm_colmajor import (
    SpmmCudaColMajor,
    colmajor_launch,
    colmajor_tile,
    narrow_tile_cols,
    plan_colmajor,
    round_slices,
    short_slices,
)
from sparsescope.ops.registry import get_op

sys.path.insert(0, str(Path(__file__).parent))
from test_spmm_rowgroup_fake_device import _matrix, _run, fake_device  # noqa: E402, F401
from test_spmm_rowgroup_host import emulate_colmajor  # noqa: E402


def _h200():
    from sparsescope.whatif import gpu_rates

    return gpu_rates("H200", use_store=False)


def _bcspwr06_like() -> np.ndarray:
    """Row pointers of bcspwr06's shape: 1,454 rows, 5,300 nonzeros (938 rows of 4, 516 of
    3: mean 3.65)."""
    lengths = np.array([4] * 938 + [3] * 516)
    np.random.default_rng(0).shuffle(lengths)
    return np.concatenate(([0], np.cumsum(lengths)))


def _band_indices(indptr: np.ndarray) -> np.ndarray:
    """Each row's nonzeros from its diagonal on (the last rows' shifted left to stay in the
    matrix): a power-grid-like band."""
    rows = indptr.size - 1
    lengths = np.diff(indptr)
    return np.concatenate([min(i, rows - n) + np.arange(n) for i, n in enumerate(lengths)])


# -- the tile ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("k", "tile_cols", "tile"), [
    (8, 1, (1, 8)), (8, 2, (2, 8)), (8, 4, (4, 4)), (8, 8, (8, 2)),
    (3, 2, (2, 8)), (3, 4, (4, 4)), (600, 1, (1, 8)), (1, 1, (1, 8)),
])
def test_tile_cols_replaces_c_and_batch_follows_the_rule(k, tile_cols, tile):
    """C as given, BATCH = min(8, 16 / C): the narrower the tile, the deeper the batch."""
    assert colmajor_tile(k, tile_cols=tile_cols) == tile
    assert colmajor_tile(8, batch=2, tile_cols=1) == (1, 2)   # batch still replaces BATCH


@pytest.mark.parametrize(("k", "tile_cols", "words"), [
    (8, 3, "power of two 1 to 8"), (8, 0, "power of two 1 to 8"),
    (8, 16, "power of two 1 to 8"), (3, 8, "wider than k = 3 needs \\(C = 4\\)"),
    (1, 2, "wider than k = 1 needs \\(C = 1\\)"),
])
def test_tile_cols_out_of_range(k, tile_cols, words):
    with pytest.raises(ValueError, match=words):
        colmajor_tile(k, tile_cols=tile_cols)


def test_the_backend_validates_tile_cols_at_construction_and_skips_a_narrow_k():
    with pytest.raises(ValueError, match="power of two"):
        SpmmCudaColMajor(tile_cols=3)
    with pytest.raises(ValueError, match="power of two"):
        SpmmCudaColMajor(tile_cols=16)
    with pytest.raises(ValueError, match="batch must be 1 to 8"):
        SpmmCudaColMajor(tile_cols=1, batch=9)
    backend = SpmmCudaColMajor(tile_cols=4)   # every C up to 8 is some k's
    csr = _matrix(20, 30, seed=1).csr
    op = get_op("spmm")
    assert backend.unsupported_params(op.make_case(csr, {"k": 8, "layout": "col"}, seed=1)) == ""
    # k = 2 needs 2 columns a tile at most: the variant skips it, with the reason
    reason = backend.unsupported_params(op.make_case(csr, {"k": 2, "layout": "col"}, seed=1))
    assert reason == "tile_cols 4 is wider than k = 2 needs (C = 2)"


def test_narrow_plan_and_its_notes():
    """bcspwr06's shape at k = 8, C = 1: 1,454 slices (none cut at S = 32), 46 one-warp
    blocks x 8 column tiles, BATCH 8."""
    indptr = _bcspwr06_like()
    plain = plan_colmajor(indptr, 5300, 8, "float32", 4, 132)
    narrow = plan_colmajor(indptr, 5300, 8, "float32", 4, 132, tile_cols=1)
    assert (plain.blocks, plain.tiles, plain.warps, plain.tile) == (46, 1, 1, (8, 2))
    assert (narrow.blocks, narrow.tiles, narrow.warps, narrow.tile) == (46, 8, 1, (1, 8))
    assert narrow.kernel == "spmm_colmajor<float, int, 1, 8>"
    assert narrow.plan.slice_nnz == 32 and narrow.plan.split_rows == 0
    notes = narrow.notes
    assert (notes["tile_cols"], notes["pairs_per_batch"], notes["column_tiles"],
            notes["grid_blocks"], notes["zero_fill"]) == ("1", "8", "8", "46", "no")
    assert notes["tile_rule"] == "C = 1 (given), A's pairs read once per column tile"
    assert plain.notes["tile_rule"] == "C = smallest power of two >= k, at most 8"
    # k = 3 at C = 2: two tiles, the second masked to one column (the kernel's cn)
    masked = plan_colmajor(indptr, 5300, 3, "float64", 8, 132, tile_cols=2)
    assert masked.tiles == 2 and masked.kernel == "spmm_colmajor<double, long long, 2, 8>"


@pytest.mark.parametrize(("k", "tile_cols"), [(8, 1), (3, 2), (3, 1), (33, 4), (6, 2)])
def test_emulated_narrow_tiles_match_the_reference(k, tile_cols):
    """The lane-exact emulation of the launch (tile c0 = blockIdx.y x C, cn = min(C, k - c0)
    columns) at narrower tiles: k = 3 at C = 2 and k = 33 at C = 4 mask their last tile."""
    csr = _matrix(37, 60, seed=k, long_row=55).csr
    x = np.asfortranarray(np.random.default_rng(k).random((60, k)) * 2 - 1)
    plan = plan_colmajor(csr.indptr, csr.nnz, k, "float64", 8, 132, tile_cols=tile_cols)
    assert plan.tiles == -(-k // tile_cols) and plan.notes["split_rows"] == "1"
    y = emulate_colmajor(csr, x, k, plan)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


# -- the rule ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("k", "tile_warps", "wave", "tile"), [
    (8, 46, 4224, 1),      # bcspwr06: 92, 184, 368 warps at C = 4, 2, 1, all < 4,224
    (8, 46, 1056, 1),      # at the register cap's wave (8 warps an SM): still 368 < 1,056
    (8, 3000, 4224, 4),    # 6,000 at C = 4 reach the wave
    (8, 1500, 4224, 2),    # 3,000 at C = 4 do not, 6,000 at C = 2 do
    (8, 4224, 4224, 8),    # the default grid fills the wave: no narrower
    (8, 5000, 4224, 8),
    (1, 46, 4224, 1),      # C = 1 already
    (3, 46, 4224, 1),      # C_k = 4: 46, 92, 138 at C = 4, 2, 1
    (3, 2112, 4224, 2),    # C = 2: 2 tiles x 2,112 = 4,224
    (600, 10, 4224, 1),    # 6,000 warps at C = 1 -- the largest C short of it is still 1
    (600, 100, 4224, 8),   # 75 tiles x 100 = 7,500 at the default
])
def test_narrow_tile_cols(k, tile_warps, wave, tile):
    assert narrow_tile_cols(k, tile_warps, wave) == tile


def test_the_wave_is_the_kernels_occupancy_on_the_device():
    """bcspwr06's plain plan, one-warp blocks: at 61 registers (2,048 a warp) an H200 SM
    holds min(32 blocks, 65,536 / 2,048, 2,048 / 32) = 32 -> 4,224 on 132 SMs; at the launch
    bound's cap (256 registers, 8,192 a warp) 8 -> 1,056; without rates the same limits
    (FALLBACK_SM: compute capability 9.0). 8-warp blocks (a 96,000-row plan) at 61
    registers: 4 blocks by registers -> 32 warps an SM."""
    rates = _h200().rates
    plain = plan_colmajor(_bcspwr06_like(), 5300, 8, "float32", 4, 132)
    assert colmajor_wave_warps(plain, 132, rates, 61) == 4224
    assert colmajor_wave_warps(plain, 132, rates, None) == 1056
    assert colmajor_wave_warps(plain, 132, None, 61) == 4224
    big = plan_colmajor(np.arange(0, 5 * 96_001, 5), 5 * 96_000, 8, "float32", 4, 132)
    assert (big.warps, big.blocks) == (8, 375)
    assert colmajor_wave_warps(big, 132, rates, 61) == 4224


# -- the candidate -----------------------------------------------------------------------------

def _params(found):
    return [c.params for c, _ in found]


def test_bcspwr06_gets_the_narrow_candidate():
    """1,454 rows at k = 8 on 132 SMs: 46 warps, a wave of 4,224 -> tile_cols 1 (368 warps),
    beside the short slices (mean 3.65 -> S = 4, BATCH 4)."""
    indptr, rates = _bcspwr06_like(), _h200().rates
    found = colmajor_plans(indptr, 5300, 8, "float32", 4, 132, rates,
                           registers=lambda source, kernel: 61)
    # and each of the plain and narrow tiles again on ELL rows (rows of 1-7: within the limit)
    assert _params(found) == [{}, {"slice_nnz": 4, "batch": 4}, {"ell": 1}, {"tile_cols": 1},
                              {"ell": 1, "tile_cols": 1}]
    assert short_slices(1454, 5300, 8) == {"slice_nnz": 4, "batch": 4}
    cand, narrow = found[-2]
    assert cand == Candidate(COLMAJOR, {"tile_cols": 1})
    assert cand.label == "spmm-cuda-colmajor[tile_cols=1]"
    assert narrow.tiles * narrow.blocks * narrow.warps == 368
    # the registers read for the plain kernel's instance only (the one predicted anyway)
    asked = []
    colmajor_plans(indptr, 5300, 8, "float32", 4, 132, rates,
                   registers=lambda source, kernel: asked.append((source, kernel)) or 61)
    assert asked == [("spmm_colmajor.cu", "spmm_colmajor<float, int, 8, 2>")]
    # without rates or registers (the cap's wave, 1,056): the same C
    assert _params(colmajor_plans(indptr, 5300, 8, "float32", 4, 132))[-2] == {"tile_cols": 1}


def test_large_matrices_get_no_narrow_candidate():
    """200,000 rows of 5 at k = 8: short slices (8) and fitted ones (4: rows of 5 in two
    slices, each row inside its warp) are offered on any grid, but 782 blocks of 8 warps
    (6,256) already fill the 4,224-warp wave: no narrower tiles. 1,000,000 rows: more lanes
    than a wave, no narrower tiles either, and slices of twice the short ones."""
    rates = _h200().rates
    regs = lambda source, kernel: 61   # noqa: E731
    mid = np.arange(0, 5 * 200_001, 5)
    plain = plan_colmajor(mid, 1_000_000, 8, "float32", 4, 132)
    assert (plain.blocks, plain.warps) == (782, 8)
    short, fitted = {"slice_nnz": 8, "batch": 4}, {"slice_nnz": 4, "batch": 4}
    found = colmajor_plans(mid, 1_000_000, 8, "float32", 4, 132, rates, regs)
    assert _params(found) == [{}, short, fitted, {"ell": 1}]
    assert found[2][1].notes["zero_fill"] == "no"   # 200,000 rows cut, each inside a warp
    big = np.arange(0, 5 * 1_000_001, 5)
    found = colmajor_plans(big, 5_000_000, 8, "float32", 4, 132, rates, regs)
    # 1,000,000 short slices are more than a wave (132 x 2,048 lanes): slices of twice the
    # short ones too (16, deep batches: no row cut)
    assert _params(found) == [{}, short, fitted, {"slice_nnz": 16, "batch": 4}, {"ell": 1}]
    assert found[3][1].plan.split_rows == 0
    # 1,000,000 rows cut: more than MAX_ALIGNED_CUT_ROWS, the plain layout and its zero fill
    assert found[2][1].notes["zero_fill"] == "yes"


def test_round_slices_are_one_and_two_deep_batches():
    assert round_slices(8) == [{"slice_nnz": 8, "batch": 4}, {"slice_nnz": 4, "batch": 4}]
    assert round_slices(64) == round_slices(8)          # C 8, BATCH 2 -> deep 4
    assert round_slices(1) == [{"slice_nnz": 16, "batch": 8}, {"slice_nnz": 8, "batch": 8}]


def _groebner_like() -> np.ndarray:
    """4,967 rows: one of 829 nonzeros, the rest 34 or 35 (173,670 in all, mean 35)."""
    lengths = np.full(4967, 34)
    lengths[0] = 829
    lengths[1:1 + (173_670 - int(lengths.sum()))] += 1
    return np.concatenate([[0], np.cumsum(lengths)])


def test_a_grid_under_one_wave_gets_slices_of_one_and_two_batches():
    """Groebner-like at k = 8 on 132 SMs: short slices 36 (the mean), fitted 28 (829 in 32
    slices -> 26 -> 28); their grid, 5,062 slices x 1 tile, is far under a wave (132 x 2,048
    lanes), so the slices of two and one deep batches (8, 4) are offered too, fewest last.
    The 829-nonzero row in 8-pair slices spans four warps: the zero fill and atomics."""
    indptr = _groebner_like()
    assert int(indptr[-1]) == 173_670 and int(np.diff(indptr).max()) == 829
    found = colmajor_plans(indptr, 173_670, 8, "float32", 4, 132)
    params = _params(found)
    assert params[:5] == [{}, {"slice_nnz": 36, "batch": 4}, {"slice_nnz": 28, "batch": 4},
                          {"slice_nnz": 8, "batch": 4}, {"slice_nnz": 4, "batch": 4}]
    eight = found[3][1]
    assert eight.plan.slice_nnz == 8 and eight.notes["zero_fill"] == "yes"
    # on one SM (a wave of 2,048 lanes) the short slices' grid is more than a wave: no
    # round slices
    assert {"slice_nnz": 8, "batch": 4} not in _params(
        colmajor_plans(indptr, 173_670, 8, "float32", 4, 1))


def test_a_mid_sized_grid_gets_a_partly_narrower_tile():
    """96,000 rows of 5 at k = 8: 375 blocks of 8 warps = 3,000 warps, short of 4,224; C = 4
    gives 6,000 -> tile_cols 4 (BATCH 4, A read twice)."""
    indptr = np.arange(0, 5 * 96_001, 5)
    found = colmajor_plans(indptr, 480_000, 8, "float32", 4, 132, _h200().rates,
                           lambda source, kernel: 61)
    assert _params(found)[-2:] == [{"tile_cols": 4}, {"ell": 1, "tile_cols": 4}]
    assert found[-2][1].tile == (4, 4) and found[-2][1].tiles == 2


def test_the_model_launch_of_narrow_tiles():
    """C = 1 at k = 8: k / C = 8 slabs of 1 column, one load of X a nonzero, BATCH 8; the
    model then streams A 8 times, runs 8x the warps, gathers the same k sectors a nonzero's
    sector, and each lane of a 3-4 nonzero row takes one X round instead of two: predicted
    faster than the plain launch on bcspwr06's shape (the trial still decides)."""
    from sparsescope.model.spmm_predict import predict_spmm, warp_rounds

    indptr = _bcspwr06_like()
    indices = _band_indices(indptr)
    rates = _h200().rates
    plain = colmajor_launch(plan_colmajor(indptr, 5300, 8, "float32", 4, 132), 61)
    narrow = colmajor_launch(plan_colmajor(indptr, 5300, 8, "float32", 4, 132, tile_cols=1), 40)
    assert (narrow.slab_cols, narrow.slabs, narrow.chunks, narrow.vec, narrow.batch,
            narrow.stage_pairs) == (1, 8, 1, 1, 8, 8)
    assert (plain.slab_cols, plain.slabs, plain.chunks, plain.batch) == (8, 1, 8, 2)
    assert narrow.slabs == 8 // narrow.slab_cols
    assert int(warp_rounds(plain)[1].max()) == 2 and int(warp_rounds(narrow)[1].max()) == 1
    p = predict_spmm(indptr, indices, 1454, 8, plain, rates, flushed=False)
    q = predict_spmm(indptr, indices, 1454, 8, narrow, rates, flushed=False)
    assert (p.inputs["warps"], q.inputs["warps"]) == (46, 368)
    assert q.inputs["x_l2_gathers"] == p.inputs["x_l2_gathers"]
    assert q.term("imbalance").time_ms < p.term("imbalance").time_ms
    assert q.predicted_ms < p.predicted_ms


def test_auto_predicts_the_narrow_candidate():
    """spmm-cuda-auto's table on bcspwr06's shape, column-major X, k = 8 (H200 datasheet, the
    register cap): the narrow candidate is planned and predicted like the others."""
    import scipy.sparse as sp

    indptr = _bcspwr06_like()
    csr = sp.csr_matrix((np.ones(5300), _band_indices(indptr), indptr), shape=(1454, 1454))
    case = get_op("spmm").make_case(csr, {"k": 8, "layout": "col"}, seed=1)
    table = {p.candidate.label: p for p in predict_candidates(
        case, "float32", 4, _h200(), sm_count=132, full_warps=2, flushed=False)}
    narrow = table["spmm-cuda-colmajor[tile_cols=1]"]
    assert narrow.predicted_ms is not None and not narrow.not_modelled
    assert narrow.predicted_ms < table["spmm-cuda-colmajor"].predicted_ms


# -- the leaner launch (fake device) -----------------------------------------------------------

def _count_lookups(monkeypatch):
    from sparsescope.backends import _gpu

    looked, real = [], _gpu.raw_module

    def counted(source, names):
        looked.append(names)
        return real(source, names)

    monkeypatch.setattr(_gpu, "raw_module", counted)
    return looked


@pytest.mark.parametrize(("backend", "layout", "grid"), [
    (SpmmCudaColMajor(), "col", (2, 1)), (SpmmCudaColMajor(tile_cols=1), "col", (2, 8)),
])
def test_colmajor_resolves_its_kernel_once(fake_device, monkeypatch, backend, layout,  # noqa: F811
                                           grid):
    """prepare looks the kernel up and builds its arguments; each call is the kernel alone
    (37 rows: 2 one-warp blocks, x 8 column tiles at C = 1)."""
    looked = _count_lookups(monkeypatch)
    csr = _matrix(37, 50, seed=1).csr
    case = get_op("spmm").make_case(csr, {"k": 8, "layout": layout}, seed=1)
    prepared = backend.prepare(case, "float32", 4)
    assert len(looked) == 1 and prepared.grid == grid and prepared.block == (32,)
    for _ in range(3):
        backend.run(prepared)
    assert len(looked) == 1
    assert [launch[1:] for launch in fake_device] == [(grid, (32,))] * 3
    np.testing.assert_allclose(backend.run(prepared), csr @ np.asarray(case.inputs),
                               rtol=1e-5, atol=1e-5)


def test_rowgroup_resolves_its_kernel_once(fake_device, monkeypatch):  # noqa: F811
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    looked = _count_lookups(monkeypatch)
    backend = SpmmCudaRowGroup()
    csr = _matrix(37, 50, seed=1).csr
    case = get_op("spmm").make_case(csr, {"k": 8, "layout": "row"}, seed=1)
    prepared = backend.prepare(case, "float32", 4)
    for _ in range(3):
        backend.run(prepared)
    assert len(looked) == 1 and len(fake_device) == 3
    np.testing.assert_allclose(backend.run(prepared), csr @ np.asarray(case.inputs),
                               rtol=1e-5, atol=1e-5)


def test_no_rows_no_lookup_no_launch(fake_device, monkeypatch):  # noqa: F811
    import scipy.sparse as sp

    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    looked = _count_lookups(monkeypatch)
    for backend, layout in ((SpmmCudaColMajor(), "col"), (SpmmCudaRowGroup(), "row")):
        case = get_op("spmm").make_case(sp.csr_matrix((0, 5)), {"k": 4, "layout": layout},
                                        seed=1)
        prepared = backend.prepare(case, "float32", 4)
        assert prepared.function is None
        backend.run(prepared)
    assert looked == [] and fake_device == []


@pytest.mark.parametrize(("k", "tile_cols", "dtype", "index_bytes"), [
    (8, 1, "float32", 4), (3, 2, "float64", 8), (33, 4, "float32", 8)])
def test_narrow_tiles_pass_the_gate(fake_device, k, tile_cols, dtype, index_bytes):  # noqa: F811
    """The backend end to end (uploads, plan, arguments, grid) on the emulator, with a cut
    row (zero fill and atomics) and a masked last tile at k = 3 and 33."""
    case = _run(_matrix(37, 60, seed=k, long_row=55), SpmmCudaColMajor(tile_cols=tile_cols), k,
                "col", dtype, index_bytes)
    assert case.outcome == "ok", case.reason
    assert case.notes["tile_cols"] == str(tile_cols)
    assert case.notes["column_tiles"] == str(-(-k // tile_cols))
    assert fake_device[-1][1][1] == -(-k // tile_cols)


def test_warp_aligned_slices_keep_rows_of_a_warp_of_slices_inside_one_warp():
    """warp_aligned_slices: a row of p <= 32 slices that would straddle two warps starts the
    next warp (32 - lane pads before it, slice_row -(rows + 1)); it keeps slice_row = row (the
    scan's last lane stores it); a row of more than 32 slices spans warps (-(row + 1), an
    atomic a warp, the zero fill); span is the scan's reach."""
    import numpy as np

    from sparsescope.backends.spmm_colmajor import unaligned_slices
    from sparsescope.backends.spmm_cuda import warp_aligned_slices

    ones = np.concatenate(([0], np.cumsum([1] * 30 + [3, 1, 1])))   # 33 rows at S = 1
    w = warp_aligned_slices(ones, 1)
    assert (w.cut_rows, w.pads, w.span, w.plan.split_rows) == (1, 2, 4, 0)
    assert w.plan.slice_row.tolist()[28:] == [28, 29, -34, -34, 30, 30, 30, 31, 32]
    assert w.plan.slice_ptr.tolist()[28:] == [28, 29, 30, 30, 30, 31, 32, 33, 34, 35]
    # every row of <= 32 slices lies inside one warp, and its slices cover it in order
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 60, size=500)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    w = warp_aligned_slices(indptr, 4)
    row = w.plan.slice_row
    real = row >= 0
    for r in np.unique(row[real]):
        at = np.flatnonzero(row == r)
        assert at[0] // 32 == at[-1] // 32 and (np.diff(at) == 1).all()
        assert w.plan.slice_ptr[at[0]] == indptr[r]
        assert w.plan.slice_ptr[at[-1] + 1] == indptr[r + 1]
    assert w.span == 16 and w.plan.split_rows == 0   # 59 nonzeros: 15 slices
    # a 2,000-nonzero row in 4-pair slices (500) spans warps: no aligned layout; the plain
    # one's scan (span 32) and atomics into a zeroed Y
    arrow = np.array([0, 2000] + [2000 + 3 * i for i in range(1, 50)])
    assert warp_aligned_slices(arrow, 4) is None
    w = unaligned_slices(arrow, 4)
    assert (w.plan.split_rows, w.span, w.pads) == (1, 32, 0)
    assert (w.plan.slice_row[:500] == -1).all()
    assert unaligned_slices(np.array([0, 2, 8, 9]), 2).span == 1   # 3 slices: an atomic each
    # nothing cut: the plain plan, no scan
    w = warp_aligned_slices(np.arange(0, 4 * 20, 4), 16)
    assert (w.cut_rows, w.span, w.plan.slice_row) == (0, 1, None)


def test_slice_plan_takes_each_rows_own_slice_length():
    """slice_plan's row_slice_nnz: rows [0:2] and [2:12] at 4 and 5 pairs -> [0:2], [2:7],
    [7:12]; the second row cut (-(1 + 1)), the first whole."""
    from sparsescope.backends.spmm_cuda import slice_plan

    plan = slice_plan(np.array([0, 2, 12]), 4, np.array([4, 5]))
    assert plan.slice_ptr.tolist() == [0, 2, 7, 12]
    assert plan.slice_row.tolist() == [0, -2, -2] and plan.split_rows == 1
    assert plan.slice_nnz == 4


def test_warp_fitted_sizes_cut_a_long_row_into_one_warp_of_slices():
    """S_row = S up to 32 S nonzeros, else round_up(ceil(len / 32), unit): S = 8, unit 4 ->
    rows of 10, 632 and 256 get 8, 20 and 8 (256 is exactly 32 slices); None without a long
    row."""
    from sparsescope.backends.spmm_cuda import warp_fitted_sizes

    indptr = np.concatenate(([0], np.cumsum([10, 632, 256])))
    assert warp_fitted_sizes(indptr, 8, 4).tolist() == [8, 20, 8]
    assert warp_fitted_sizes(indptr, 8, 8).tolist() == [8, 24, 8]   # 19.75 -> whole batches
    assert warp_fitted_sizes(np.array([0, 256]), 8, 4) is None


def _long_row_matrix(seed: int, long_row: int = 632):
    """reorientation_1's shape in small (a CSR matrix): 677 rows of a few nonzeros and one of
    ``long_row`` (its row 338), more than 32 slices at S = 8."""
    return _matrix(677, 700, seed=seed, long_row=long_row).csr


@pytest.mark.parametrize("k", [1, 8, 33])
@pytest.mark.parametrize("slice_nnz", [4, 8])
def test_fit_long_keeps_every_row_inside_one_warp_in_one_launch(k, slice_nnz):
    """A 632-nonzero row in 4- or 8-pair slices spans warps (the plain layout: every cut row
    an atomic into a zero-filled Y). With fit_long it is cut into a warp of longer slices:
    no row across warps, no zero fill, the row's slices in one warp, and Y (poisoned with
    NaN, so a row left unwritten fails) equals the float64 product."""
    csr = _long_row_matrix(k)
    batch = 4 if k > 1 else 8
    across = plan_colmajor(csr.indptr, csr.nnz, k, "float64", 8, 132,
                           slice_nnz=slice_nnz, batch=batch)
    assert across.notes["zero_fill"] == "yes" and across.notes["long_rows"] == "1 across warps"
    fitted = plan_colmajor(csr.indptr, csr.nnz, k, "float64", 8, 132,
                           slice_nnz=slice_nnz, batch=batch, fit_long=True)
    assert fitted.notes["zero_fill"] == "no" and fitted.notes["rows_across_warps"] == "0"
    longest = 20 if batch == 4 else 24   # ceil(632 / 32) = 20 in whole batches
    assert fitted.notes["long_rows"] == \
        f"1 fitted to one warp each (slices of up to {longest} pairs)"
    row = fitted.plan.slice_row
    lanes = np.flatnonzero(row == 338)
    assert lanes.size == -(-632 // longest)   # 32 slices at 20 pairs, 27 at 24
    assert lanes[0] // 32 == lanes[-1] // 32 and (np.diff(lanes) == 1).all()
    assert fitted.span == 32 and fitted.kernel.endswith(", true>")
    x = np.asfortranarray(np.random.default_rng(k).random((700, k)) * 2 - 1)
    y = emulate_colmajor(csr, x, k, fitted)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, csr @ x, rtol=1e-12, atol=1e-12)


def test_scanned_instance_takes_deep_batches_under_the_rule():
    """Where the warp's scan runs (a row cut inside its warp) and BATCH is the rule's, BATCH
    is at least SEG_MIN_BATCH: k = 8 -> <8, 4, true>, not the <8, 2, true> whose FMAs ptxas
    puts among its gathers; BATCH given (2) is kept; no row cut: the rule's <8, 2>."""
    from sparsescope.backends.spmm_colmajor import SEG_MIN_BATCH

    csr = _matrix(37, 60, seed=1, long_row=55).csr   # 55 > S = 32: cut inside its warp
    plan = plan_colmajor(csr.indptr, csr.nnz, 8, "float32", 4, 132)
    assert SEG_MIN_BATCH == 4 and plan.span > 1
    assert plan.kernel == "spmm_colmajor<float, int, 8, 4, true>"
    assert plan.notes["pairs_per_batch"] == "4"
    given = plan_colmajor(csr.indptr, csr.nnz, 8, "float32", 4, 132, batch=2)
    assert given.kernel == "spmm_colmajor<float, int, 8, 2, true>"
    whole = _matrix(37, 60, seed=1).csr
    assert plan_colmajor(whole.indptr, whole.nnz, 8, "float32", 4, 132).kernel == \
        "spmm_colmajor<float, int, 8, 2>"
    assert plan_colmajor(csr.indptr, csr.nnz, 1, "float32", 4, 132).tile == (1, 8)


def test_auto_offers_each_plan_with_rows_across_warps_again_fitted():
    """colmajor_plans: every plan of auto's whose rows span warps comes again with fit_long
    (the same options), and no plan without such rows does."""
    csr = _long_row_matrix(2)
    plans = colmajor_plans(csr.indptr, csr.nnz, 8, "float32", 4, 132)
    labels = {c.label: host for c, host in plans}
    across = [c for c, host in plans if host.plan.split_rows]
    assert across   # the short and round slices of 8 and 4 pairs cut the long row across
    for c in across:
        again = Candidate(c.backend, {**c.params, "fit_long": 1}).label
        assert again in labels and labels[again].plan.split_rows == 0
    assert not [c for c, host in plans if c.params.get("fit_long") and host.plan.split_rows]
    plain = _matrix(677, 700, seed=2).csr   # no long row: nothing fitted
    assert not [c for c, _ in colmajor_plans(plain.indptr, plain.nnz, 8, "float32", 4, 132)
                if c.params.get("fit_long")]
