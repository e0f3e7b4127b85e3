"""sparsescope's own SpMV kernels on a GPU: every kernel and variant against float64 on the
awkward and random matrices (empty rows, one row holding most nonzeros, n = 1, n not a
multiple of 32), on one matrix of more than 2^24 nonzeros, poisoned outputs, the runner path,
the auto selection's notes and the L2 window."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope import registry
from sparsescope.backends import run_case
from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
from sparsescope.backends.spmv_auto import CudaSpmvAuto, CudaSpmvAutoRules
from sparsescope.backends.spmv_compressed import CudaSpmvTileDelta16
from sparsescope.backends.spmv_merge import CudaSpmvMerge
from sparsescope.backends.spmv_sell import CudaSpmvBlocked16, CudaSpmvDelta16, CudaSpmvSell
from sparsescope.ops.spmv import check_output, make_x, reference_spmv
from sparsescope.timing import TimingConfig

pytestmark = pytest.mark.gpu
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}
QUICK = TimingConfig(warmups=1, repeats=3, flush_l2=True)

#: (label, factory): every kernel of the own backends and the variants a benchmark times.
VARIANTS = [
    ("adaptive-i1-h1", lambda: CudaSpmvAdaptive(iters=1, hint=1)),
    ("adaptive-i2-h0", lambda: CudaSpmvAdaptive(iters=2, hint=0)),
    ("adaptive-i1-rows3", lambda: CudaSpmvAdaptive(iters=1, rows_max=3)),
    ("merge-i1-h1", lambda: CudaSpmvMerge(iters=1, hint=1)),
    ("merge-i2-h0", lambda: CudaSpmvMerge(iters=2, hint=0)),
    ("adaptive-i1-hub8k", lambda: CudaSpmvAdaptive(iters=1, hub=8192)),
    ("merge-i2-hub4k", lambda: CudaSpmvMerge(iters=2, hub=4096)),
    ("adaptive-i1-fin", lambda: CudaSpmvAdaptive(iters=1, finish=1)),
    ("adaptive-i1-rows3-fin", lambda: CudaSpmvAdaptive(iters=1, rows_max=3, finish=1)),
    ("merge-i1-fin", lambda: CudaSpmvMerge(iters=1, finish=1)),
    ("merge-i2-hub4k-fin", lambda: CudaSpmvMerge(iters=2, hub=4096, finish=1)),
    ("tiles16-merge-fin", lambda: CudaSpmvTileDelta16(tiling="merge", finish=1)),
    ("tiles16-i1-h1", lambda: CudaSpmvTileDelta16(iters=1, hint=1)),
    ("tiles16-i2-h0", lambda: CudaSpmvTileDelta16(iters=2, hint=0)),
    ("tiles16-merge", lambda: CudaSpmvTileDelta16(tiling="merge")),
    ("sell-u4-m6-h1", lambda: CudaSpmvSell(unroll=4, minb=6, hint=1)),
    ("sell-u2-m8-h0-s1", lambda: CudaSpmvSell(unroll=2, minb=8, hint=0, sigma=1, long_row=5)),
    ("sell-t2-u4-m6-h1", lambda: CudaSpmvSell(tpr=2, unroll=4, minb=6, hint=1)),
    ("delta16-t2-u2-m8-h1-s1", lambda: CudaSpmvDelta16(tpr=2, unroll=2, minb=8, sigma=1,
                                                        long_row=9)),
    ("delta16-u4-m6-h1", lambda: CudaSpmvDelta16(unroll=4, minb=6, hint=1)),
    ("delta16-t4-u2-m8-h1", lambda: CudaSpmvDelta16(tpr=4, unroll=2, minb=8, hint=1)),
    ("delta16-t8-u4-m6-h1-s1", lambda: CudaSpmvDelta16(tpr=8, unroll=4, minb=6, sigma=1,
                                                        long_row=9)),
    ("sell-t4-u2-m8-h1", lambda: CudaSpmvSell(tpr=4, unroll=2, minb=8, hint=1)),
    # short pieces (auto's short-piece candidates): INT32 slices, 4 lanes a row, rows cut at 8
    ("sell-t4-u2-m8-l8-s1", lambda: CudaSpmvSell(tpr=4, unroll=2, minb=8, sigma=1, long_row=8)),
    ("adaptive-i1-l1h32k", lambda: CudaSpmvAdaptive(iters=1, hub=-32768)),
    ("adaptive-i2-l1h16k", lambda: CudaSpmvAdaptive(iters=2, hub=-16384)),
    ("delta16-u2-m8-h0-s1", lambda: CudaSpmvDelta16(unroll=2, minb=8, hint=0, sigma=1,
                                                     long_row=7)),
    ("blocked3-u2-m8-h1", lambda: CudaSpmvBlocked16(block=3, unroll=2, minb=8, hint=1)),
    ("blocked3-t2-u4-m6-h1", lambda: CudaSpmvBlocked16(block=3, tpr=2, unroll=4, minb=6)),
    ("blocked2-t4-u2-m8-h0-s1", lambda: CudaSpmvBlocked16(block=2, tpr=4, unroll=2, minb=8,
                                                          hint=0, sigma=1, long_row=3)),
    ("blocked4-t8-u4-m6-h1-s1", lambda: CudaSpmvBlocked16(block=4, tpr=8, unroll=4, minb=6,
                                                          sigma=1, long_row=5)),
    ("blocked3-dae4-m6-h1", lambda: CudaSpmvBlocked16(block=3, stage=4, minb=6)),
    ("blocked2-t4-dae2-m6-h0-s1", lambda: CudaSpmvBlocked16(block=2, tpr=4, stage=2, minb=6,
                                                            hint=0, sigma=1, long_row=3)),
    ("delta16-t2-dae4-m6-h1-s1", lambda: CudaSpmvDelta16(tpr=2, stage=4, minb=6, sigma=1,
                                                         long_row=9)),
    ("sell-dae2-m6-h0", lambda: CudaSpmvSell(stage=2, minb=6, hint=0)),
    ("auto", lambda: CudaSpmvAuto(breakdown=False)),
    ("auto-rules", lambda: CudaSpmvAutoRules(breakdown=False)),
]


def condition(csr, x: np.ndarray) -> float:
    """``|| |A| |x| || / || A x ||`` (>= 1): float32 sums of cancelling terms lose that factor
    in relative accuracy under any summation order, so the gate is scaled by it (as in
    test_gpu_backends)."""
    ref = np.linalg.norm(reference_spmv(csr, x))
    magnitude = np.linalg.norm(reference_spmv(abs(csr), np.abs(x)))
    return max(1.0, magnitude / ref) if ref > 0 else 1.0


def check(backend, csr, dtype: str, seed: int) -> tuple[float, float]:
    """(relative error, tolerance) of one poisoned run against float64."""
    x = make_x(csr.shape[1], seed=seed, dtype=dtype)
    prepared = backend.prepare(csr, dtype, 4)
    assert backend.poison_output(prepared)
    y = backend.run(prepared, x)
    assert y.dtype == np.dtype(dtype) and y.shape == (csr.shape[0],)
    tolerance = TOLERANCE[dtype] * condition(csr, x)
    return check_output(y, reference_spmv(csr, x), tolerance).rel_err, tolerance


@pytest.mark.parametrize("label,factory", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_matches_float64_on_awkward_matrices(label, factory, awkward_matrices):
    backend = factory()
    assert backend.availability() == (True, "")
    failures = []
    for i, matrix in enumerate(awkward_matrices):
        for dtype in ("float32", "float64"):
            err, tol = check(backend, matrix.csr, dtype, seed=i)
            if not err <= tol:
                failures.append((matrix.name, dtype, err, tol))
    assert failures == []


def test_split_rows_go_through_the_fixup(awkward_matrices):
    heavy = next(m for m in awkward_matrices if m.name.startswith("heavy-row-3001"))
    backend = CudaSpmvAdaptive(iters=1)
    prepared = backend.prepare(heavy.csr, "float32", 4)
    assert int(prepared.notes["split_rows"]) == 1  # the row of 2,250 nonzeros > 1,024
    assert len(prepared.launches) == 2 and prepared.launches[1].kernel.startswith("spmv_fixup")
    merge = CudaSpmvMerge().prepare(heavy.csr, "float32", 4)
    assert int(merge.notes["split_rows"]) >= 1  # the heavy row spans three merge tiles
    sell = CudaSpmvSell(long_row=100).prepare(heavy.csr, "float32", 4)
    assert int(sell.notes["split_rows"]) == 1 and len(sell.launches) == 2


def test_tiles_that_list_long_rows_take_the_warp_rows_instance(awkward_matrices):
    mixed = next(m for m in awkward_matrices if m.name.startswith("mixed-rows-5003"))
    for backend in (CudaSpmvAdaptive(iters=1), CudaSpmvAdaptive(iters=2), CudaSpmvMerge(),
                    CudaSpmvTileDelta16(iters=2)):
        prepared = backend.prepare(mixed.csr, "float32", 4)
        # INT32 columns only: the delta16 instance would lose a block an SM to registers
        listed = backend.idx == 0
        assert (int(prepared.notes["warp_rows"]) > 0) == listed
        assert prepared.launches[0].kernel.endswith(", 1>" if listed else ", 0>")
        x = make_x(mixed.csr.shape[1], seed=1, dtype="float32")
        assert backend.poison_output(prepared)
        y = backend.run(prepared, x)
        tolerance = 1e-5 * condition(mixed.csr, x)
        assert check_output(y, reference_spmv(mixed.csr, x), tolerance).rel_err <= tolerance


def test_finished_split_rows_need_no_fixup_and_stay_right_call_after_call(awkward_matrices):
    heavy = next(m for m in awkward_matrices if m.name.startswith("heavy-row-3001"))
    for backend in (CudaSpmvAdaptive(iters=1, finish=1), CudaSpmvMerge(finish=1)):
        prepared = backend.prepare(heavy.csr, "float32", 4)
        assert int(prepared.notes["split_rows"]) >= 1
        # one launch, the finishing tile kernel (WARP_ROWS as the tiles ask)
        warp_rows = int(int(prepared.notes["warp_rows"]) > 0)
        assert [step.kernel for step in prepared.launches] == [
            f"spmv_tile<float, 0, 1, 256, 1, 0, 1, {warp_rows}>"]
        # the split rows' counters are reset by the finishing tile: every call is right
        for seed in range(3):
            x = make_x(heavy.csr.shape[1], seed=seed, dtype="float32")
            assert backend.poison_output(prepared)
            y = backend.run(prepared, x)
            tolerance = 1e-5 * condition(heavy.csr, x)
            assert check_output(y, reference_spmv(heavy.csr, x), tolerance).rel_err <= tolerance
        assert not prepared.buffers["split_count"].any()


def test_more_than_2_pow_24_nonzeros():
    from sparsescope.matrices import generate

    nnz = 2**24 + 1_000_003
    csr = generate("scattered", 200_003, nnz, cols=3_000_001, seed=5)
    assert csr.nnz == nnz
    for label, factory in VARIANTS:
        if label in ("adaptive-i1-rows3", "sell-u2-m8-h0-s1", "tiles16-i2-h0", "merge-i2-h0",
                     "delta16-u2-m8-h0-s1", "adaptive-i1-hub8k", "merge-i2-hub4k",
                     "delta16-t8-u4-m6-h1-s1", "adaptive-i2-l1h16k",
                     "blocked2-t4-u2-m8-h0-s1", "blocked4-t8-u4-m6-h1-s1",
                     "blocked2-t4-dae2-m6-h0-s1", "delta16-t2-dae4-m6-h1-s1",
                     "adaptive-i1-rows3-fin", "merge-i2-hub4k-fin", "tiles16-merge-fin"):
            continue  # same code paths as their siblings; keep the test short
        err, _ = check(factory(), csr, "float32", seed=3)
        assert err < 1e-5, (label, err)


def test_poison_catches_an_unwritten_row(awkward_matrices):
    class SkipsLastTile(CudaSpmvAdaptive):
        def upload(self, fmt, csr, value_dtype):
            p = super().upload(fmt, csr, value_dtype)
            step = p.launches[0]
            # the last tile (holding the last row) never runs: one tile fewer in the count
            # the grid-stride loop reads (args[0] is ntiles)
            step.args = (np.int32(int(step.args[0]) - 1), *step.args[1:])
            step.grid -= 1
            return p

    matrix = next(m for m in awkward_matrices if m.name.startswith("rand-4099x3001"))
    backend = SkipsLastTile()
    prepared = backend.prepare(matrix.csr, "float32", 4)
    assert backend.poison_output(prepared)
    y = backend.run(prepared, make_x(matrix.cols))
    assert np.isnan(y[-1])


def test_runner_path_and_auto_notes(monkeypatch, banded_4m):
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "cuda-spmv-auto-rules"), CudaSpmvAutoRules)
    case = run_case(banded_4m, "cuda-spmv-auto-rules", config=QUICK)
    assert case.outcome == "ok", case.reason
    assert case.correctness.rel_err < 1e-5 and case.measurement.flushed
    # cant-sized: regular rows of 3-column runs; 62,451 rows give only ~30 SELL warps per SM,
    # too few for the register pipeline, but 1 x 3 blocks staged by cp.async need no more
    assert case.notes["selected"] == "cuda-spmv-blocked16"
    assert "cp.async" in case.notes["selection_reason"]
    assert case.notes["block_width"] == "3" and case.notes["stage"] == "4"
    # about 0.62 of INT32 CSR's 32.8 MB
    assert 0.55 * 32_808_480 < int(case.notes["bytes_moved"]) < 0.70 * 32_808_480
    # the chosen kernel's format declares those bytes array by array, kept with the case
    assert case.traffic.total_bytes == int(case.notes["bytes_moved"])
    assert "1x3 blocks" in case.traffic.format and case.traffic.padding_bytes > 0


def test_l2_window_times_and_cleans_up(banded_4m):
    import ctypes

    from sparsescope.backends.spmv_l2 import CU_LIMIT_PERSISTING_L2_CACHE_SIZE, _driver

    before = ctypes.c_size_t(0)
    _driver().cuCtxGetLimit(ctypes.byref(before), CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
    backend = CudaSpmvAdaptive(l2_window=True, breakdown=False)
    prepared = backend.prepare(banded_4m.csr, "float32", 4)
    m = backend.time(prepared, make_x(banded_4m.cols), QUICK)
    assert len(m.samples_ms) == 3 and all(s > 0 for s in m.samples_ms)
    assert "access-policy window over x" in prepared.notes["l2_window"]
    after = ctypes.c_size_t(0)
    _driver().cuCtxGetLimit(ctypes.byref(after), CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
    assert after.value == before.value


def test_auto_by_prediction_times_its_shortlist(banded_4m):
    """By prediction on the present GPU: every candidate predicted, the near-ties timed, the
    fastest measured kept and checked against float64 like any kernel."""
    import json

    from sparsescope.backends.select_predicted import shortlist

    backend = CudaSpmvAuto(breakdown=False)
    prepared = backend.prepare(banded_4m.csr, "float32", 4)
    table = json.loads(backend.notes(prepared)["selection_table"])
    assert len(table) >= 11 and all(r["predicted_ms"] > 0 for r in table)
    chosen = backend.notes(prepared)
    labels = [p.candidate.label for p in shortlist(prepared.table)]
    if len(labels) > 1:
        assert chosen["selection_rule"] == "predicted-then-timed"
        assert all(label in chosen["selection_reason"] for label in labels)
    else:
        assert chosen["selection_rule"] == "predicted-fastest"
    x = make_x(banded_4m.cols)
    y = backend.run(prepared, x)
    ref = reference_spmv(banded_4m.csr, x)
    assert np.abs(y - ref).max() / np.abs(ref).max() < 1e-5


def test_host_plan_occupancy_matches_the_device(banded_4m):
    """The occupancy a plan made without the device reads from the SASS (registers, shared
    memory) is the one the device reports for the compiled kernel, for every candidate of
    cuda-spmv-auto."""
    from sparsescope.api import sass_refiner
    from sparsescope.backends.select import matrix_statistics
    from sparsescope.backends.select_predicted import candidates
    from sparsescope.backends.spmv_auto import CHOICES
    from sparsescope.backends.spmv_device import resident_blocks as device_blocks
    from sparsescope.hardware.specs import get_spec
    from sparsescope.model.kernel_shape import resident_blocks

    refine = sass_refiner(get_spec("H100"))  # sm_90, as the H200
    for cand in candidates(matrix_statistics(banded_4m.csr)):
        backend = CHOICES[cand.backend](**cand.params)
        _, shape = backend.host_plan(banded_4m.csr, "float32", 4, 132)
        shape = refine(shape)
        assert shape.registers > 0, cand.label
        assert resident_blocks(shape, 2048, 32) == min(
            2048 // shape.block_threads, device_blocks(shape.kernel, shape.block_threads)), \
            cand.label
