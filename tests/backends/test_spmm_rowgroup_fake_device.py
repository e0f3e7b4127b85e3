"""The rowgroup, colmajor and auto SpMM backends end to end without a GPU: CuPy is replaced by
NumPy arrays and each kernel launch by the lane-exact emulators of
``test_spmm_rowgroup_host.py``, so the backends' own code runs as on a device -- uploads,
the plan, the kernel's argument order, grid and block, the zero fill, Y's layout and its
transpose back, the poison -- and the op runner's float64 gate judges the output."""

from __future__ import annotations

import ctypes
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.runner import run_case
from sparsescope.matrices.types import Matrix
from sparsescope.timing.types import TimingConfig

sys.path.insert(0, str(Path(__file__).parent))
from test_spmm_blocktc_host import launch_blocktc, launch_paneltc  # noqa: E402
from test_spmm_ell_host import launch_ell  # noqa: E402
from test_spmm_rowgroup_host import (  # noqa: E402
    launch_colmajor,
    launch_rowgroup,
    launch_transpose,
)

QUICK = TimingConfig(warmups=1, repeats=1)


def _timed(ms: float):
    """A backend ``time`` method that reports ``ms`` (the trial's times, set by the test)."""
    from sparsescope.timing.types import Measurement

    return lambda self, prepared, config: Measurement(samples_ms=(ms,), config=config,
                                                      clock="fake")


def _inner_timed(self, prepared, config):
    """``SpmmCudaTransposed.time`` on the fake device: its inner kernel's (fake) time."""
    return self.rowgroup.time(prepared.inner, config)


class _DevArray(np.ndarray):
    """A NumPy array posing as a cupy.ndarray: ``.get()`` and ``.data.ptr``."""

    @property
    def data(self):  # cupy.cuda.MemoryPointer
        return types.SimpleNamespace(ptr=self.ctypes.data)

    def get(self):
        return np.array(self)


def _fake_cupy():
    cupy = types.ModuleType("cupy")
    cupy.asarray = lambda a, dtype=None: np.array(a, dtype=dtype).view(_DevArray)
    cupy.zeros = lambda shape, dtype=float: np.zeros(shape, dtype).view(_DevArray)
    runtime = types.SimpleNamespace(
        deviceGetAttribute=lambda attr, device: {39: 2048, 106: 32}.get(attr, 132),
        memsetAsync=lambda ptr, value, n, stream: ctypes.memset(ptr, value, n) if n else None)
    cupy.cuda = types.SimpleNamespace(runtime=runtime,
                                      Device=lambda: types.SimpleNamespace(id=0),
                                      get_current_stream=lambda: types.SimpleNamespace(ptr=0))
    return cupy


class _Kernel:
    def __init__(self, name: str, launches: list) -> None:
        self.name, self.launches = name, launches
        self.max_dynamic_shared_size_bytes = 48 * 1024

    def __call__(self, grid, block, args, shared_mem: int = 0):
        kernel, params = re.fullmatch(r"(\w+)<(.*)>", self.name).groups()
        if kernel == "spmm_paneltc":
            self.launches.append((kernel, grid, block))
            if shared_mem > 48 * 1024:   # the launch must have raised the kernel's limit first
                assert self.max_dynamic_shared_size_bytes >= shared_mem
            return launch_paneltc(self.name, grid, block, args, shared_mem)
        if kernel == "spmm_blocktc":
            passes, groups, vec4, split, batch = (p.strip() for p in params.split(","))
            self.launches.append((kernel, grid, block))
            return launch_blocktc((int(passes), int(groups), vec4 == "true", int(split),
                                   int(batch)), grid, block, args)
        ints = tuple(p.strip() == "true" if p.strip() in ("true", "false") else int(p)
                     for p in params.split(",")[2:])
        self.launches.append((kernel, grid, block))
        if kernel == "transpose_tile":
            launch_transpose(grid, block, args)
        elif kernel == "spmm_rowgroup":
            if ints[6:7] == (True,):   # BLOCKSUM: its sums and keys in dynamic shared memory
                assert 0 < shared_mem <= self.max_dynamic_shared_size_bytes
            else:
                assert shared_mem == 0
            launch_rowgroup(ints, grid, block, args)
        elif kernel == "spmm_colmajor":
            launch_colmajor(ints, grid, block, args)
        elif kernel == "spmm_ell":
            launch_ell(ints, grid, block, args)
        else:  # spmm_rowwarp, uncut rows only (its own emulation lives in tests/ops)
            n, k, _, sliced, ptr, _, col, val, x, y = args
            assert not sliced
            a = sp.csr_matrix((np.asarray(val), np.asarray(col), np.asarray(ptr)),
                              shape=(int(n), x.shape[0]))
            y[...] = a @ np.asarray(x)


@pytest.fixture
def fake_device(monkeypatch):
    """CuPy and NVRTC replaced; returns the list of launches (kernel, grid, block)."""
    launches: list = []
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(_gpu, "cupy_cuda_status", lambda: (True, ""))
    # no real GPU behind the fake: auto must not predict with a present GPU's stored ceilings
    # (on a machine with one, it did, and the rules tests below saw predictions)
    monkeypatch.setattr("sparsescope.hardware.detect.detect_gpu", lambda: None)
    monkeypatch.setattr(_gpu, "raw_module", lambda source, names: types.SimpleNamespace(
        get_function=lambda name: _Kernel(name, launches)))
    return launches


def _matrix(rows: int, cols: int, seed: int, long_row: int = 0, name: str = "m") -> Matrix:
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.integers(0, 10, size=rows), cols)
    lengths[::7] = 0
    if long_row:
        lengths[rows // 2] = min(long_row, cols)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = np.concatenate([np.sort(rng.choice(cols, n, replace=False)) for n in lengths])
    csr = sp.csr_matrix((rng.random(indptr[-1]) + 0.5, indices, indptr), shape=(rows, cols))
    return Matrix(name=name, csr=csr, source="test")


def _run(matrix, backend, k, layout, dtype="float32", index_bytes=4):
    return run_case(matrix, backend, "spmm", {"k": k, "layout": layout}, config=QUICK,
                    value_dtype=dtype, index_bytes=index_bytes, seed=k, timed=False)


@pytest.mark.parametrize(("k", "dtype", "index_bytes"), [
    (1, "float32", 4), (3, "float64", 8), (8, "float32", 8), (33, "float64", 4),
    (600, "float32", 4),
])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_backend_passes_the_gate(fake_device, k, dtype, index_bytes, layout):
    matrix = _matrix(37, 50, seed=k)  # 37 rows: a partial warp; empty rows
    name = "spmm-cuda-rowgroup" if layout == "row" else "spmm-cuda-colmajor"
    case = _run(matrix, name, k, layout, dtype, index_bytes)
    assert case.outcome == "ok", case.reason
    assert case.traffic is not None and case.notes["value_dtype"] == dtype
    assert fake_device  # a launch went through the emulator
    other = "spmm-cuda-colmajor" if layout == "row" else "spmm-cuda-rowgroup"
    skipped = _run(matrix, other, k, layout, dtype, index_bytes)
    assert skipped.outcome == "skipped" and "layout" in skipped.reason


@pytest.mark.parametrize("layout", ["row", "col"])
def test_cut_rows_zero_fill_and_atomics(fake_device, layout):
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    matrix = _matrix(20, 120, seed=4, long_row=110)
    # colmajor: 3-pair slices put the 110-entry row in 37 slices, across two warps
    backend = (SpmmCudaRowGroup(min_slice=16) if layout == "row"
               else SpmmCudaColMajor(slice_nnz=3))
    case = _run(matrix, backend, 6, layout, "float64", 8)
    assert case.outcome == "ok", case.reason
    assert int(case.notes["split_rows"]) >= 1 and case.notes["zero_fill"] == "yes"


def test_colmajor_cut_rows_inside_a_warp_are_one_launch(fake_device):
    """Rows cut into at most a warp of slices are summed by the warp's scan and stored by
    their last lane: no zero fill, no atomics, one launch; the gate judges a poisoned Y."""
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor

    matrix = _matrix(300, 120, seed=4, long_row=110)
    case = _run(matrix, SpmmCudaColMajor(slice_nnz=4, batch=4), 8, "col", "float32", 4)
    assert case.outcome == "ok", case.reason
    assert int(case.notes["split_rows"]) > 30 and case.notes["rows_across_warps"] == "0"
    assert case.notes["zero_fill"] == "no" and int(case.notes["pad_slices"]) > 0
    assert [launch[0] for launch in fake_device] == ["spmm_colmajor"]


def test_a_dropped_slice_fails_the_gate(fake_device):
    from dataclasses import replace

    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    class Drops(SpmmCudaRowGroup):
        # the launch's arguments are built once by prepare: the plan is cut before it
        def plan(self, *args, **kwargs):
            host = super().plan(*args, **kwargs)
            plan = host.plan
            return replace(host, plan=plan.__class__(
                plan.slice_nnz, plan.slice_ptr[:-1], plan.slice_row, plan.split_rows))

    matrix = _matrix(40, 50, seed=9)
    case = _run(matrix, Drops(), 8, "row")
    assert case.outcome == "failed"


def test_auto_runs_the_chosen_kernel_and_says_why(fake_device):
    short = _matrix(37, 50, seed=1)  # mean < 32: rowgroup; col: transposes around rowgroup
    for layout, chosen, kernel in (("row", "spmm-cuda-rowgroup", "spmm_rowgroup"),
                                   ("col", "spmm-cuda-transposed", "transpose_tile")):
        fake_device.clear()
        case = _run(short, "spmm-cuda-auto", 8, layout)
        assert case.outcome == "ok", case.reason
        assert case.notes["selected"] == chosen and case.notes["selection_reason"]
        if layout == "col":   # the row-major rules' pick runs between the transposes
            assert "row-major kernel spmm-cuda-rowgroup" in case.notes["selection_reason"]
            assert case.notes["row_major_kernel"] == "spmm-cuda-rowgroup"
        assert case.notes["selection_rule"] and case.notes["row_max"]
        assert fake_device[0][0] == kernel
    rng = np.random.default_rng(2)  # 64 rows of 40: few long-ish rows -> rowwarp (rule 3)
    dense = sp.random(64, 80, density=0.5, format="csr", random_state=rng) + 0.0
    dense.sort_indices()
    fake_device.clear()
    case = _run(Matrix(name="dense", csr=dense, source="t"), "spmm-cuda-auto", 8, "row")
    assert case.outcome == "ok", case.reason
    assert case.notes["selected"] == "spmm-cuda-rowwarp" and fake_device[0][0] == "spmm_rowwarp"


@pytest.mark.parametrize(("k", "dtype"), [(1, "float32"), (3, "float64"), (33, "float32"),
                                          (256, "float32")])
def test_transposed_backend_runs_both_transposes_around_rowgroup(fake_device, k, dtype):
    from sparsescope.backends.spmm_transposed import SpmmCudaTransposed

    m = _matrix(70, 45, seed=k, long_row=40)
    case = _run(m, SpmmCudaTransposed(min_slice=8), k, "col", dtype)
    assert case.outcome == "ok", case.reason
    kernels = [launch[0] for launch in fake_device]
    # poison run included: each call is transpose, rowgroup, transpose
    assert kernels[:3] == ["transpose_tile", "spmm_rowgroup", "transpose_tile"]
    assert case.notes["transposes"].startswith("X col->row")
    assert int(case.notes["split_rows"]) > 0   # the 40-entry row cut at 32: atomics too
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp

    if k <= 256:   # rowwarp (its emulation: uncut rows only) between the transposes
        fake_device.clear()
        short = _matrix(70, 45, seed=k)
        inner = _run(short, SpmmCudaTransposed(inner=SpmmCudaRowWarp(min_slice=4096)), k,
                     "col", dtype)
        assert inner.outcome == "ok", inner.reason
        assert inner.notes["row_major_kernel"] == "spmm-cuda-rowwarp"
        assert [launch[0] for launch in fake_device][:3] == [
            "transpose_tile", "spmm_rowwarp", "transpose_tile"]
    skipped = _run(m, SpmmCudaTransposed(), k, "row", dtype)
    assert skipped.outcome == "skipped" and "column-major" in skipped.reason


def _rates():
    from sparsescope.model.predict import DeviceRates

    return DeviceRates(
        name="T", sm_count=132, max_threads_per_sm=2048, max_blocks_per_sm=32,
        l2_bytes=50 << 20, dram_bw_gb_s=4000.0, l2_bw_gb_s=8000.0, dram_latency_ns=340.0,
        l2_latency_ns=150.0, fp32_gflops=60000.0, dram_gather_gsectors_s=40.0,
        l2_gather_gsectors_s=150.0, launch_us=2.7, sm_clock_mhz=1980.0)


def _auto(trial: bool):
    from sparsescope.backends.spmm_auto import SpmmCudaAuto
    from sparsescope.context import DeviceContext

    auto = SpmmCudaAuto(trial=trial)
    auto.use_model(DeviceContext(rates=_rates()))
    return auto


@pytest.mark.parametrize("layout", ["row", "col"])
def test_auto_chooses_by_prediction_and_keeps_the_table(fake_device, layout):
    import json

    from sparsescope.backends.spmm_auto import predict_candidates

    matrix = _matrix(300, 200, seed=3)
    case = _run(matrix, _auto(trial=False), 64, layout)
    assert case.outcome == "ok", case.reason
    table = json.loads(case.notes["selection_table"])
    assert [row["backend"] for row in table] == [
        # 300 rows at k = 64 (float4 lanes, G 16) are under a wave: rowgroup with float2
        # lanes (G 32) too, both again on ELL rows (no slice pointers), and in slices of
        # about the mean row (8), block-summed
        *["spmm-cuda-rowgroup"] * 5, "spmm-cuda-rowwarp",
        "spmm-cuda-blocktc", "spmm-cuda-paneltc",
        # column-major: colmajor, and on a grid of one wave (300 rows) its short slices and
        # narrower tiles, and both tiles on ELL rows; then ELL, in either layout (rows of at
        # most 9)
        *(["spmm-cuda-colmajor"] * 5 if layout == "col" else []), "spmm-cuda-ell"]
    assert table[1]["params"] == {"vec": 2}
    assert table[2]["params"] == {"ell": 1} and table[3]["params"] == {"vec": 2, "ell": 1}
    assert table[4]["params"] == {"slice_nnz": 8, "block_sum": 1}
    for declined in table[6:8]:   # the tensor-core kernels: fill above their limit
        assert declined["predicted_ms"] is None and "fill" in declined["not_modelled"]
    predicted = [row for row in table if row["predicted_ms"] is not None]
    fastest = min(predicted, key=lambda row: row["predicted_ms"])["backend"]
    assert case.notes["selection_rule"] == "spmm-predicted"
    assert case.notes["selection_reason"].startswith(
        "layout col" if layout == "col" else "predicted on T:")
    if layout == "col" and fastest not in ("spmm-cuda-colmajor", "spmm-cuda-ell"):
        assert case.notes["selected"] == "spmm-cuda-transposed"
        assert case.notes["row_major_kernel"] == fastest
    else:
        assert case.notes["selected"] == fastest
    # the same predictions as the pure function's, for the same plans
    from sparsescope.context import rates_context
    from sparsescope.ops.registry import get_op

    plan_case = get_op("spmm").make_case(matrix.csr, {"k": 64, "layout": layout}, seed=1)
    direct = predict_candidates(plan_case, "float32", 4, rates_context(_rates()), sm_count=132,
                                full_warps=2, flushed=True)
    assert [p.predicted_ms for p in direct] == [row["predicted_ms"] for row in table]


def test_auto_times_the_close_candidates_and_keeps_the_fastest(fake_device, monkeypatch):
    import json

    from sparsescope.backends import spmm_auto
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
    from sparsescope.backends.spmm_ell import SpmmCudaEll
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    monkeypatch.setattr(SpmmCudaRowGroup, "time", _timed(0.5))
    monkeypatch.setattr(SpmmCudaRowWarp, "time", _timed(0.2))
    monkeypatch.setattr(SpmmCudaEll, "time", _timed(0.9))
    monkeypatch.setattr(spmm_auto, "TRIAL_MARGIN", 1e6)   # all within the margin
    case = _run(_matrix(300, 200, seed=3), _auto(trial=True), 64, "row")
    assert case.outcome == "ok", case.reason
    assert case.notes["selected"] == "spmm-cuda-rowwarp"
    assert case.notes["selection_rule"] == "spmm-predicted-then-timed"
    assert "timed here" in case.notes["selection_reason"]
    trial = {row["backend"]: row["trial_ms"] for row in json.loads(case.notes["selection_table"])}
    assert trial == {"spmm-cuda-rowgroup": 0.5, "spmm-cuda-rowwarp": 0.2,
                     "spmm-cuda-blocktc": None,   # declined: fill above the limit
                     "spmm-cuda-paneltc": None, "spmm-cuda-ell": 0.9}
    assert fake_device[-1][0] == "spmm_rowwarp"   # the gate ran the chosen kernel


def test_auto_times_up_to_trial_most_candidates(fake_device, monkeypatch):
    """Eleven rowgroup launches predicted within the margin (one scored family, no
    challenger): the TRIAL_MOST (10) fastest predictions are timed, the eleventh is not, and
    the fastest measured (here the last timed: depth 4) is kept."""
    import json

    from sparsescope.backends import spmm_auto
    from sparsescope.backends.select_predicted import Candidate, CandidatePrediction
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
    from sparsescope.timing.types import Measurement

    options = [{}, {"depth": 1}, {"warps": 1}, {"vec": 2}, {"vec": 1}, {"min_slice": 32},
               {"warps": 2}, {"ell": 1}, {"ell": 1, "vec": 2}, {"depth": 4}, {"minb": 2}]
    assert spmm_auto.TRIAL_MOST == 10 < len(options)

    def predicted(*args, **kwargs):
        return [CandidatePrediction(Candidate("spmm-cuda-rowgroup", o), 0.010 + 0.001 * n,
                                    limiter="latency") for n, o in enumerate(options)]

    def timed(self, prepared, config):
        ms = 0.1 if self.depth == 4 else 0.5
        return Measurement(samples_ms=(ms,), config=config, clock="fake")

    monkeypatch.setattr(spmm_auto, "predict_candidates", predicted)
    monkeypatch.setattr(SpmmCudaRowGroup, "time", timed)
    case = _run(_matrix(300, 200, seed=3), _auto(trial=True), 64, "row")
    assert case.outcome == "ok", case.reason
    trial = {row["label"]: row["trial_ms"] for row in json.loads(case.notes["selection_table"])}
    assert [label for label, ms in trial.items() if ms is not None] == list(trial)[:10]
    assert trial["spmm-cuda-rowgroup[minb=2]"] is None
    assert json.loads(case.notes["selected_params"]) == {"depth": 4}


def test_auto_rules_backend_and_auto_without_rates_use_the_rules(fake_device):
    from sparsescope.backends.spmm_auto import SpmmCudaAuto

    matrix = _matrix(37, 50, seed=1)
    for backend in ("spmm-cuda-auto-rules", SpmmCudaAuto(trial=False)):
        case = _run(matrix, backend, 8, "row")
        assert case.outcome == "ok", case.reason
        assert case.notes["selection_rule"] == "spmm-auto-rules-v3"
        assert "selection_table" not in case.notes
    assert case.notes["selection_reason"].startswith("no device rates to predict with")


def test_auto_times_rowgroup_with_balanced_slices_on_a_long_row(fake_device, monkeypatch):
    import json

    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
    from sparsescope.timing.types import Measurement

    def timed(self, prepared, config):
        ms = 0.1 if getattr(self, "min_slice", None) == 32 and \
            not getattr(self, "block_sum", False) else 0.5
        return Measurement(samples_ms=(ms,), config=config, clock="fake")

    monkeypatch.setattr(SpmmCudaRowGroup, "time", timed)
    monkeypatch.setattr(SpmmCudaRowWarp, "time", timed)
    # one row of 1,500 nonzeros: the default cuts it in 2 slices (1,024), balanced in 47 (32)
    matrix = _matrix(40, 1600, seed=5, long_row=1500)
    case = _run(matrix, _auto(trial=True), 8, "row")
    assert case.outcome == "ok", case.reason
    labels = [row["label"] for row in json.loads(case.notes["selection_table"])]
    # 40 rows: under a wave, so float2 and float lanes too (timed 0.5 here)
    # and each of those (all cut the long row) again with its cut rows summed by the block
    assert labels == ["spmm-cuda-rowgroup", "spmm-cuda-rowgroup[min_slice=32]",
                      "spmm-cuda-rowgroup[vec=2]", "spmm-cuda-rowgroup[vec=1]",
                      "spmm-cuda-rowgroup[block_sum=1]",
                      "spmm-cuda-rowgroup[block_sum=1,min_slice=32]",
                      "spmm-cuda-rowgroup[block_sum=1,vec=2]",
                      "spmm-cuda-rowgroup[block_sum=1,vec=1]",
                      # in slices of about the mean row (1,641 / 40 -> 48), block-summed
                      "spmm-cuda-rowgroup[block_sum=1,slice_nnz=48]",
                      "spmm-cuda-rowwarp", "spmm-cuda-blocktc", "spmm-cuda-paneltc",
                      "spmm-cuda-ell"]   # declined: the long row pads every row to 1,500
    assert case.notes["selected"] == "spmm-cuda-rowgroup"
    assert json.loads(case.notes["selected_params"]) == {"min_slice": 32}
    assert case.notes["slice_nnz"] == "32" and int(case.notes["split_rows"]) == 1


@pytest.mark.parametrize(("rows", "cols", "k"), [(1, 1, 1), (37, 50, 8), (70, 45, 33),
                                                 (16, 8, 64), (130, 9, 300)])
def test_blocktc_passes_the_gate_and_tf32_does_not(fake_device, rows, cols, k):
    """3xTF32 through the runner's float64 gate on partial block rows and columns, empty rows
    and k not a multiple of 4; plain TF32 (passes=1) fails the default tolerance wherever
    rounding is visible."""
    from sparsescope.backends.spmm_blocktc import SpmmCudaBlockTc

    matrix = _matrix(rows, cols, seed=k, long_row=cols if rows > 1 else 0)
    case = _run(matrix, SpmmCudaBlockTc(max_fill=1e9), k, "row")
    assert case.outcome == "ok", case.reason
    assert case.notes["precision"].startswith("3xTF32") and fake_device[-1][0] == "spmm_blocktc"
    assert case.notes["kernel"].split(", ")[2] == ("true" if k % 4 == 0 else "false")
    if matrix.csr.nnz >= 50:
        tf32 = _run(matrix, SpmmCudaBlockTc(passes=1, max_fill=1e9), k, "row")
        assert tf32.outcome == "failed" and tf32.correctness.rel_err > 1e-5


def test_blocktc_skips_a_scattered_matrix_and_column_major_x(fake_device):
    from sparsescope.backends.spmm_blocktc import SpmmCudaBlockTc

    scattered = _matrix(64, 400, seed=1)   # <= 9 entries a row over 50 blocks: fill ~ 14
    case = _run(scattered, SpmmCudaBlockTc(), 32, "row")
    assert case.outcome == "skipped" and "fill" in case.reason
    rng = np.random.default_rng(5)
    dense = sp.random(64, 64, density=0.6, format="csr", random_state=rng)
    ok = _run(Matrix(name="dense", csr=dense, source="t"), "spmm-cuda-blocktc", 32, "row")
    assert ok.outcome == "ok", ok.reason
    assert float(ok.notes["fill"]) < 2
    col = _run(Matrix(name="dense", csr=dense, source="t"), "spmm-cuda-blocktc", 32, "col")
    assert col.outcome == "skipped" and "row-major" in col.reason


def test_auto_predicts_and_times_the_tensor_core_kernel_on_a_dense_weight(fake_device,
                                                                          monkeypatch):
    import json

    from sparsescope.backends import spmm_auto
    from sparsescope.backends.spmm_blocktc import SpmmCudaBlockTc
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
    from sparsescope.backends.spmm_ell import SpmmCudaEll
    from sparsescope.backends.spmm_paneltc import SpmmCudaPanelTc
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
    from sparsescope.backends.spmm_rowtile import SpmmCudaRowTile
    from sparsescope.backends.spmm_transposed import SpmmCudaTransposed

    monkeypatch.setattr(SpmmCudaRowGroup, "time", _timed(0.5))
    monkeypatch.setattr(SpmmCudaRowWarp, "time", _timed(0.4))
    monkeypatch.setattr(SpmmCudaBlockTc, "time", _timed(0.1))
    monkeypatch.setattr(SpmmCudaPanelTc, "time", _timed(0.15))  # a candidate on this weight
    monkeypatch.setattr(SpmmCudaRowTile, "time", _timed(0.2))   # and this one
    # column-major X: the trial times the whole call, the transposes around the inner kernel
    monkeypatch.setattr(SpmmCudaTransposed, "time", _inner_timed)
    monkeypatch.setattr(SpmmCudaColMajor, "time", _timed(0.3))
    monkeypatch.setattr(SpmmCudaEll, "time", _timed(0.9))
    monkeypatch.setattr(spmm_auto, "TRIAL_MARGIN", 1e6)
    rng = np.random.default_rng(8)
    weight = sp.random(200, 96, density=0.6, format="csr", random_state=rng)
    for layout, selected in (("row", "spmm-cuda-blocktc"), ("col", "spmm-cuda-transposed")):
        case = _run(Matrix(name="w", csr=weight, source="t"), _auto(trial=True), 128, layout)
        assert case.outcome == "ok", case.reason
        table = {row["backend"]: row for row in json.loads(case.notes["selection_table"])}
        assert table["spmm-cuda-blocktc"]["predicted_ms"] > 0
        assert table["spmm-cuda-blocktc"]["trial_ms"] == 0.1
        assert case.notes["selected"] == selected
        assert case.notes["precision"].startswith("3xTF32")
        assert "spmm_blocktc" in [launch[0] for launch in fake_device]


@pytest.mark.parametrize("layout", ["row", "col"])
def test_blocktc_cases_carry_the_block_model_prediction(fake_device, layout):
    """The runner predicts a blocktc case (alone, or between auto's transposes) with
    ``model.blocktc_predict``: its terms, not "not modelled"."""
    from sparsescope.backends.runner import run_case
    from sparsescope.backends.spmm_blocktc import SpmmCudaBlockTc
    from sparsescope.backends.spmm_transposed import SpmmCudaTransposed
    from sparsescope.context import DeviceContext

    rng = np.random.default_rng(3)
    weight = Matrix(name="w", csr=sp.random(96, 64, density=0.5, format="csr",
                                            random_state=rng), source="t")
    backend = SpmmCudaBlockTc() if layout == "row" else SpmmCudaTransposed(
        inner=SpmmCudaBlockTc())
    case = run_case(weight, backend, "spmm", {"k": 64, "layout": layout}, config=QUICK,
                    seed=1, timed=False, model=DeviceContext(rates=_rates()))
    assert case.outcome == "ok", case.reason
    p = case.prediction
    assert p is not None and not p.not_modelled and p.predicted_ms > 0
    assert {t.name for t in p.terms} >= {"dram", "l2", "issue", "latency", "imbalance"}
    assert p.kernel.startswith("blocktc spmm_blocktc<3, 1, true")
    assert p.kernel.endswith("device transposes") == (layout == "col")
    if layout == "row":   # the block format's own bytes, its stored zeros as padding
        assert case.traffic.format.startswith("16x8 blocks (fill ")
        assert case.traffic.padding_bytes == case.traffic.values_bytes - 4 * weight.csr.nnz


def test_an_unscored_model_predicted_fastest_is_timed_against_the_best_scored(fake_device,
                                                                            monkeypatch):
    """blocktc predicted far ahead (outside the margin) is still timed beside the best CSR
    candidate, and loses to it here."""
    import json

    from sparsescope.backends import spmm_auto
    from sparsescope.backends.spmm_blocktc import SpmmCudaBlockTc
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    monkeypatch.setattr(SpmmCudaRowGroup, "time", _timed(0.05))
    monkeypatch.setattr(SpmmCudaRowWarp, "time", _timed(0.05))
    monkeypatch.setattr(SpmmCudaBlockTc, "time", _timed(0.08))
    monkeypatch.setattr(spmm_auto, "TRIAL_MARGIN", 0.0)   # nothing else within the margin
    real = spmm_auto.predict_candidates

    def blocktc_far_ahead(*args, **kwargs):
        table = real(*args, **kwargs)
        return [replace(p, predicted_ms=p.predicted_ms / 100)
                if p.candidate.backend == "spmm-cuda-blocktc" else p for p in table]

    from dataclasses import replace
    monkeypatch.setattr(spmm_auto, "predict_candidates", blocktc_far_ahead)
    rng = np.random.default_rng(8)
    weight = sp.random(200, 96, density=0.6, format="csr", random_state=rng)
    case = _run(Matrix(name="w", csr=weight, source="t"), _auto(trial=True), 32, "row")
    assert case.outcome == "ok", case.reason
    timed_rows = [r for r in json.loads(case.notes["selection_table"]) if r["trial_ms"]]
    assert {r["backend"] for r in timed_rows} >= {"spmm-cuda-blocktc"} and len(timed_rows) == 2
    assert case.notes["selected"] != "spmm-cuda-blocktc"
    assert "model is not scored yet" in case.notes["selection_reason"]


@pytest.mark.parametrize("k", [1, 8, 64])
@pytest.mark.parametrize(("dtype", "index_bytes"), [("float32", 4), ("float64", 8)])
def test_rowgroup_block_sum_passes_the_gate_in_one_launch(fake_device, k, dtype, index_bytes):
    """block_sum through the runner's float64 gate: the 1,500-nonzero row cut at S 32 (47
    slices) summed by its block in shared memory (the fake launch checks its shared memory);
    no row across blocks, so no zero fill before the launch."""
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    matrix = _matrix(40, 1600, seed=6, long_row=1500)
    case = _run(matrix, SpmmCudaRowGroup(block_sum=1, min_slice=32), k, "row", dtype,
                index_bytes)
    assert case.outcome == "ok", case.reason
    assert case.notes["kernel"].endswith(", true>") and case.notes["zero_fill"] == "no"
    assert case.notes["split_rows"] == "1"
    launches = [launch for launch in fake_device if launch[0] == "spmm_rowgroup"]
    assert launches and all(block == (int(case.notes["block_threads"]),)
                            for _, _, block in launches)
