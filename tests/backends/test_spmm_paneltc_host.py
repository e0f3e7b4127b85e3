"""spmm-cuda-paneltc without a GPU: the panel format against the dense matrix, its fill, the
host plan's choices by hand, the model's terms by hand, and the backend end to end on the
fake device (``launch_paneltc``, the kernel's NumPy emulation) through the float64 gate."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.spmm_blocktc import block_format, fragment_order
from sparsescope.backends.spmm_paneltc import (
    SpmmCudaPanelTc,
    choose_fragments,
    choose_splits,
    panel_fill,
    panel_format,
    plan_paneltc,
    resident_ctas,
    smem_bytes,
)
from sparsescope.matrices.types import Matrix
from sparsescope.model.paneltc_predict import (
    PanelTcLaunch,
    cta_groups,
    per_warp_instructions,
    predict_paneltc,
)

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "model"))
from test_blocktc_predict import _rates  # noqa: E402  (the same two-SM test device)
from test_spmm_rowgroup_fake_device import (  # noqa: E402, F401  (fake_device: a fixture)
    _auto,
    _run,
    _timed,
    fake_device,
)


def _dense_of(fmt, rows: int, cols: int) -> np.ndarray:
    """The matrix a panel format stores, rebuilt item by item (fragment order undone)."""
    mb = fmt.block_rows_per_panel
    out = np.zeros((max(1, fmt.panels) * mb * 16, -(-cols // 8) * 8), np.float32)
    for p in range(fmt.panels):
        for i in range(fmt.panel_ptr[p], fmt.panel_ptr[p + 1]):
            for m in range(mb):
                block = np.zeros(128, np.float32)
                block[fragment_order()] = fmt.item_val[i, m]
                r0, c0 = (p * mb + m) * 16, fmt.item_col[i] * 8
                out[r0:r0 + 16, c0:c0 + 8] = block.reshape(16, 8)
    return out[:rows, :cols], out


def test_panel_format_round_trips_an_awkward_matrix():
    """100 x 70 (rows not a multiple of 64, columns not of 8), an empty block row and a heavy
    row: every value where CSR has it, zeros elsewhere, items sorted within each panel."""
    rng = np.random.default_rng(1)
    a = sp.random(100, 70, density=0.2, format="lil", random_state=rng, dtype=np.float32)
    a[16:32, :] = 0          # block row 1 empty
    a[40, :] = 1.5           # one row full
    a = a.tocsr()
    fmt = panel_format(block_format(a.indptr, a.indices, a.data, a.shape), mb=4)
    inside, whole = _dense_of(fmt, 100, 70)
    assert np.array_equal(inside, a.toarray())
    assert not whole[100:].any() and not whole[:, 70:].any()
    assert fmt.panels == 2 and list(fmt.panel_ptr) == [0, 9, 18]   # 9 of 9 block columns each
    for p in range(fmt.panels):
        cols = fmt.item_col[fmt.panel_ptr[p]:fmt.panel_ptr[p + 1]]
        assert np.all(np.diff(cols) > 0)


def test_panel_union_and_fill_by_hand():
    # block rows 0 and 1 (rows 0-31) in one panel of mb = 2: row 0 at columns 0 and 25
    # (blocks 0 and 3), row 20 at column 27 (block 3) -> items (0, 3); block row 1's
    # fragment of item 0 all zeros
    a = sp.csr_matrix((np.ones(3), ([0, 0, 20], [0, 25, 27])), shape=(32, 32))
    fmt = panel_format(block_format(a.indptr, a.indices, a.data, a.shape), mb=2)
    assert list(fmt.item_col) == [0, 3] and fmt.panels == 1
    assert not fmt.item_val[0, 1].any() and fmt.item_val[1, 1].sum() == 1
    assert panel_fill(fmt.items, a.nnz, mb=2) == pytest.approx(128 * 2 * 2 / 3)
    assert panel_fill(0, 0) == 1.0


def test_host_choices_by_hand():
    assert [choose_fragments(k) for k in (1, 32, 33, 64, 65, 128, 256)] == [4, 4, 8, 8, 16,
                                                                             16, 16]
    assert smem_bytes(16) == 76_800 and smem_bytes(16, xsplit=True) == 76_800 + 17_408
    assert smem_bytes(4) == 3 * 4 * (4 * 8 * 40 + 4 * 4 * 128)   # 39,936
    assert resident_ctas(16) == 3                 # shared memory: 233,472 / (76,800 + 1,024)
    assert resident_ctas(16, smem=smem_bytes(16, xsplit=True)) == 2
    assert resident_ctas(4, registers=255) == 2   # registers: 65,536 / (8,192 a warp x 4)
    # shared memory: 233,472 / (39,936 + 1,024) = 5; registers 8
    assert resident_ctas(4) == 5
    # 64 panels of 512 items, 2 tiles, 132 SMs x 3 resident: 3 -> 384 CTAs, one wave
    assert choose_splits(np.full(64, 512), 2, 132, 3) == 3
    assert choose_splits(np.full(64, 512), 1, 132, 5) == 10   # 640 of 660 slots
    # 2 resident (264 slots): 2 -> 256 CTAs in one wave (1 / 2); 4 -> 512 in two (1 / 2): 2
    assert choose_splits(np.full(64, 512), 2, 132, 2) == 2
    # 8 panels of 16 items, 1 tile: the cap 16 / (2 x 4) = 2
    assert choose_splits(np.full(8, 16), 1, 132, 2) == 2
    assert choose_splits(np.full(1, 3), 1, 132, 2) == 1


def test_plan_notes_and_kernel_name():
    a = sp.random(256, 512, density=0.2, format="csr", random_state=np.random.default_rng(4),
                  dtype=np.float32)
    fmt = panel_format(block_format(a.indptr, a.indices, a.data, a.shape))
    plan = plan_paneltc(fmt, a.nnz, 100, 132)
    assert plan.kernel == "spmm_paneltc<3, 4, 1, 16, 4, 3, true, false>" and plan.tiles == 1
    assert plan.notes["panel_rows"] == "64" and plan.notes["panels"] == "4"
    assert plan.notes["items"] == "256"       # 64 block columns, all occupied, 4 panels
    assert float(plan.notes["panel_fill"]) == pytest.approx(128 * 4 * 256 / a.nnz, rel=1e-3)
    # 4 panels x 1 tile; cap 64 / 8 = 8 splits: 32 CTAs, below 264, so the cap
    assert plan.splits == 8 and plan.notes["zero_fill"].startswith("memset")
    with pytest.raises(ValueError, match="passes"):
        plan_paneltc(fmt, a.nnz, 100, 132, passes=2)


def _launch(**over):
    # two panels of 10 and 3 items, 100 x 80 A, k = 256 in two tiles of 128 columns
    base = dict(kernel="spmm_paneltc<3, 4, 1, 16, 4, 3, true, false>", rows=100, cols=80, k=256,
                panel_ptr=np.array([0, 10, 13]), block_rows_per_panel=4, fragments=16,
                tiles=2, splits=1, passes=3, smem_bytes=76_800, items_per_stage=4, stages=3,
                block_warps=4, max_registers=128, registers_source="test")
    base.update(over)
    return PanelTcLaunch(**base)


def test_model_instructions_and_groups_by_hand():
    assert per_warp_instructions(16, 3) == 241 and per_warp_instructions(4, 1) == 35
    assert list(cta_groups(_launch(splits=2))) == [2, 2, 1, 1]   # runs (5, 5) and (1, 2)
    assert list(cta_groups(_launch())) == [3, 1]


def test_model_terms_by_hand():
    p = predict_paneltc(_launch(), _rates(), flushed=False)
    terms = {t.name: t.time_ms for t in p.terms}
    a_bytes = 13 * (4 * 512 + 4) + 3 * 4                      # 26,676
    x_bytes, y_bytes = 80 * 256 * 4, 100 * 256 * 4
    # A and X fit the 1 MiB L2 together: A read from DRAM once
    assert terms["dram"] == pytest.approx((a_bytes + x_bytes + y_bytes) / 1e12 * 1e3)
    staged = 13 * 8 * 256 * 4
    assert terms["l2"] == pytest.approx((2 * a_bytes + staged + y_bytes) / 2e12 * 1e3)
    mma = 13 * 4 * 2 * 16 * 3
    assert terms["tensor"] == pytest.approx(mma * 2048 / 1e14 * 1e3)
    instr = 13 * 2 * (4 * 241 + (8 * 128 / 4 * 8 + 4 * 32 * 4) / 32)
    assert terms["issue"] == pytest.approx(instr / (2 * 4 * 1e9) * 1e3)
    smem = 13 * 2 * (4 * (512 + 4 * 1024) + 8 * 128 * 4 + 4 * 512)
    assert terms["smem"] == pytest.approx(smem / (2 * 128 * 1e9) * 1e3)
    # groups (3, 1) per tile, x 2 tiles = 8; 4 CTAs on 2 SMs x 2 resident; 250 ns a group
    assert terms["latency"] == pytest.approx(8 * 250e-9 / 4 * 1e3)
    assert terms["imbalance"] == pytest.approx(3 * 250e-9 * 1e3)
    bound = max(v for n, v in terms.items() if n != "overhead")
    assert p.predicted_ms == pytest.approx(terms["overhead"] + bound)
    split = predict_paneltc(_launch(splits=2), _rates(), flushed=False)
    assert split.term("dram").time_ms > terms["dram"]     # the memset's Y write
    assert dict((t.name, t.time_ms) for t in split.terms)["overhead"] >= terms["overhead"]


# -- the backend end to end, on the fake device ------------------------------------------------

def _weight(rows: int, cols: int, density: float, seed: int) -> Matrix:
    rng = np.random.default_rng(seed)
    a = sp.random(rows, cols, density=density, format="lil", random_state=rng,
                  dtype=np.float64)
    if rows > 20:
        a[3:9, :] = 0      # empty rows
        a[17, :] = rng.standard_normal(cols)   # one full row
    return Matrix(name=f"w{rows}x{cols}", csr=a.tocsr(), source="test")


@pytest.mark.parametrize(("rows", "cols", "k", "split"), [
    (1, 1, 4, None), (100, 70, 4, None), (100, 70, 36, None), (130, 200, 260, None),
    (70, 45, 32, 3), (64, 64, 128, 1), (130, 200, 260, 2)])
def test_backend_passes_the_gate(fake_device, rows, cols, k, split):  # noqa: F811
    matrix = _weight(rows, cols, 0.3, seed=k)
    # the last case with two warps a block row (four at k = 260's tiles of 128 columns)
    options = {"wn": 4, "xsplit": True} if split == 2 else {}
    case = _run(matrix, SpmmCudaPanelTc(max_fill=1e9, split=split, **options), k, "row")
    assert case.outcome == "ok", case.reason
    assert fake_device[-1][0] == "spmm_paneltc"
    assert case.notes["precision"].startswith("3xTF32")
    assert case.notes["tiles"] == str(-(-k // int(case.notes["tile_cols"])))
    if split:
        assert case.notes["splits"] == str(split)
    assert case.notes["warps_per_block_row"] == ("4" if split == 2 else "1")
    assert case.traffic.values_bytes == int(case.notes["items"]) * 4 * 128 * 4


def test_tf32_is_judged_by_the_gate(fake_device):  # noqa: F811
    matrix = _weight(100, 300, 0.5, seed=2)
    one = _run(matrix, SpmmCudaPanelTc(passes=1, max_fill=1e9), 64, "row")
    assert one.outcome == "failed" and one.correctness.rel_err > 1e-5


def test_declines_what_it_cannot_take(fake_device):  # noqa: F811
    dense = _weight(100, 70, 0.3, seed=1)
    for k, layout, why in ((6, "row", "multiple of 4"), (8, "col", "row-major")):
        case = _run(dense, "spmm-cuda-paneltc", k, layout)
        assert case.outcome == "skipped" and why in case.reason
    scattered = _weight(64, 4000, 0.001, seed=1)
    case = _run(scattered, "spmm-cuda-paneltc", 8, "row")
    assert case.outcome == "skipped" and "panel fill" in case.reason
    with pytest.raises(ValueError, match="split"):
        SpmmCudaPanelTc(split=17)


def test_auto_predicts_and_can_keep_the_panel_kernel(fake_device, monkeypatch):  # noqa: F811
    from sparsescope.backends import spmm_auto
    from sparsescope.backends.spmm_blocktc import SpmmCudaBlockTc
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
    from sparsescope.backends.spmm_ell import SpmmCudaEll
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
    from sparsescope.backends.spmm_rowtile import SpmmCudaRowTile

    for cls, ms in ((SpmmCudaRowGroup, 0.5), (SpmmCudaRowWarp, 0.4), (SpmmCudaBlockTc, 0.2),
                    (SpmmCudaRowTile, 0.3), (SpmmCudaPanelTc, 0.1), (SpmmCudaEll, 0.6)):
        monkeypatch.setattr(cls, "time", _timed(ms))
    monkeypatch.setattr(spmm_auto, "TRIAL_MARGIN", 1e6)
    case = _run(_weight(200, 96, 0.6, seed=8), _auto(trial=True), 128, "row")
    assert case.outcome == "ok", case.reason
    table = {row["backend"]: row for row in json.loads(case.notes["selection_table"])}
    assert table["spmm-cuda-paneltc"]["predicted_ms"] > 0
    assert table["spmm-cuda-paneltc"]["trial_ms"] == 0.1
    assert case.notes["selected"] == "spmm-cuda-paneltc"
    assert "spmm_paneltc" in [launch[0] for launch in fake_device]


def test_an_unscored_fastest_prediction_does_not_narrow_the_scored_trial():
    """The H200 case behind ``with_challenger``: the panel kernel predicted 9.1 us (it ran
    40.7), so its margin alone kept only itself and rowtile; the scored candidates are
    shortlisted against the fastest scored prediction (29.5 us x 2.92) and timed too."""
    from sparsescope.backends.select_predicted import Candidate, CandidatePrediction
    from sparsescope.backends.spmm_auto import TRIAL_MARGIN, shortlist, with_challenger

    def p(backend, ms, **params):
        return CandidatePrediction(Candidate(backend, params), ms / 1e3, "test")

    table = [p("spmm-cuda-rowgroup", 50.2), p("spmm-cuda-rowgroup", 33.6, min_slice=32),
             p("spmm-cuda-rowwarp", 29.5), p("spmm-cuda-blocktc", 29.7),
             p("spmm-cuda-paneltc", 9.1), p("spmm-cuda-rowtile", 16.7, rows=16)]
    short = shortlist(table, margin=TRIAL_MARGIN)
    assert [c.candidate.backend for c in short] == ["spmm-cuda-paneltc", "spmm-cuda-rowtile"]
    out, words = with_challenger(short, table)
    assert [c.candidate.label for c in out[2:]] == [
        "spmm-cuda-rowwarp", "spmm-cuda-rowgroup[min_slice=32]", "spmm-cuda-rowgroup"]
    assert "spmm-cuda-paneltc model is not scored yet" in words
    # a scored fastest prediction: the trial is the margin's alone
    scored_first = [p("spmm-cuda-rowwarp", 5.0), p("spmm-cuda-paneltc", 9.1)]
    short = shortlist(scored_first, margin=TRIAL_MARGIN)
    assert with_challenger(short, scored_first) == (short, "")
