"""The planned cuSPARSE backends on the GPU: every algorithm, with and without the
preprocessing, in both dtypes, against float64 through the runner's gate on awkward shapes
(empty rows, one huge row, n = 1, sizes not a multiple of 32), both SpMM layouts; the timing
in both modes and under graph capture; the probes of ``sparsescope ceilings``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.nvmath_cusparse import library_offers, nvmath_status
from sparsescope.backends.registry import get_backend
from sparsescope.backends.runner import BackendChoice, run_case
from sparsescope.matrices.types import Matrix
from sparsescope.timing.types import TimingConfig

pytestmark = pytest.mark.gpu
QUICK = TimingConfig(warmups=1, repeats=3)


def _canonical(csr) -> sp.csr_matrix:
    csr = sp.csr_matrix(csr, dtype=np.float64)
    csr.sum_duplicates()
    csr.sort_indices()
    csr.data = np.where(csr.data == 0, 0.5, csr.data)  # an explicit zero would hide a drop
    return csr


@pytest.fixture(scope="module")
def awkward() -> list[Matrix]:
    """The ``awkward`` suite and random matrices of awkward shapes (fixed seed)."""
    from sparsescope.matrices import load_suite

    rng = np.random.default_rng(36)

    def rand(rows, cols, density):
        return _canonical(sp.random(rows, cols, density=density, format="csr",
                                    random_state=rng, data_rvs=lambda n: rng.random(n) * 2 - 1))

    n = 3001
    heavy_cols = rng.choice(n, size=n * 3 // 4, replace=False)
    heavy = sp.coo_matrix((rng.random(heavy_cols.size) + 0.5,
                           (np.full(heavy_cols.size, n // 3), heavy_cols)), shape=(n, n))
    made = {"rand-1x1": rand(1, 1, 1.0), "rand-1x777": rand(1, 777, 0.3),
            "rand-777x1": rand(777, 1, 0.3), "mostly-empty-1000": rand(1000, 1000, 0.0005),
            "rand-4099x3001": rand(4099, 3001, 0.01),
            "one-huge-row-3001": _canonical(heavy + sp.random(n, n, density=0.0005,
                                                              random_state=rng))}
    return [*load_suite("awkward"),
            *(Matrix(name=k, csr=v, source="test", kind="uniform") for k, v in made.items())]


def _available(name: str) -> None:
    ok, why = nvmath_status()
    if not ok:
        assert "nvmath" in why or "cupy" in why
        pytest.skip(f"{name}: {why}")


def _choice(name: str, **options) -> BackendChoice:
    text = ",".join(f"{k}={v}" for k, v in options.items())
    return BackendChoice(name, tuple(options.items()), f"{name}[{text}]")


@pytest.mark.parametrize("alg", [0, 1, 2])
@pytest.mark.parametrize("preprocess", [1, 0])
def test_spmv_matches_float64(awkward, alg, preprocess):
    _available("nvmath-cusparse-i32")
    offered, _ = library_offers("cusparseSpMV_preprocess")
    failures = []
    for matrix in awkward:
        for dtype in ("float32", "float64"):
            case = run_case(matrix, _choice("nvmath-cusparse-i32", alg=alg,
                                            preprocess=preprocess), "spmv", config=QUICK,
                            value_dtype=dtype, timed=False)
            if case.outcome != "ok":
                failures.append((matrix.name, dtype, case.reason))
                continue
            want = {0: "CUSPARSE_SPMV_ALG_DEFAULT", 1: "CUSPARSE_SPMV_CSR_ALG1",
                    2: "CUSPARSE_SPMV_CSR_ALG2"}[alg]
            assert case.notes["algorithm"] == want
            ran = case.notes["preprocess"].startswith("cusparseSpMV_preprocess once")
            assert ran == bool(preprocess and offered), case.notes["preprocess"]
    assert failures == []


def test_spmv_output_is_poisoned_then_written(awkward):
    _available("nvmath-cusparse-i32")
    backend = get_backend("nvmath-cusparse-i32")
    matrix = next(m for m in awkward if m.name == "empty-rows")
    prepared = backend.prepare(matrix.csr, "float32", 4)
    assert backend.poison_output(prepared)
    assert np.isnan(prepared.y.get()).all()
    x = np.linspace(-1, 1, matrix.cols).astype(np.float32)
    y = backend.run(prepared, x)
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, matrix.csr @ x.astype(np.float64), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["latency", "throughput"])
def test_spmv_is_timed_in_both_modes_and_under_graph_capture(awkward, mode):
    _available("nvmath-cusparse-i32")
    matrix = next(m for m in awkward if m.name == "rand-4099x3001")
    for graph in (False, True):
        config = TimingConfig(warmups=2, repeats=5, mode=mode, graph_capture=graph)
        case = run_case(matrix, "nvmath-cusparse-i32", "spmv", config=config)
        assert case.outcome == "ok", case.reason
        m = case.measurement
        assert case.timing_mode == mode == m.config.mode
        assert m.config.graph_capture is graph  # cusparseSpMV captures on the side stream
        assert len(m.samples_ms) == 5 and min(m.samples_ms) > 0
        assert (m.config.throughput_calls >= 10) == (mode == "throughput")


@pytest.mark.parametrize("alg", [0, 1, 2, 3])
def test_spmm_matches_float64_or_refuses_a_layout(awkward, alg):
    _available("spmm-nvmath-i32")
    failures, refused = [], []
    for matrix in awkward:
        for k, layout in ((1, "row"), (3, "col"), (33, "row"), (33, "col")):
            for dtype in ("float32", "float64"):
                case = run_case(matrix, _choice("spmm-nvmath-i32", alg=alg), "spmm",
                                {"k": k, "layout": layout}, config=QUICK, value_dtype=dtype,
                                timed=False)
                if case.outcome == "skipped" and "cuSPARSE does not take" in case.reason:
                    refused.append((layout, dtype))
                    continue
                if case.outcome != "ok":
                    failures.append((matrix.name, k, layout, dtype, case.reason))
                    continue
                assert case.notes["x_order"] == layout
    assert failures == []
    if alg == 0:
        assert refused == []  # the default algorithm takes every layout
    assert len({layout for layout, _ in refused}) < 2  # no algorithm refuses both layouts


def test_spmm_is_timed_in_both_modes(awkward):
    _available("spmm-nvmath-i32")
    matrix = next(m for m in awkward if m.name == "rand-4099x3001")
    for mode in ("latency", "throughput"):
        case = run_case(matrix, "spmm-nvmath-i32", "spmm", {"k": 16, "layout": "row"},
                        config=TimingConfig(warmups=2, repeats=4, mode=mode))
        assert case.outcome == "ok" and case.measurement.config.mode == mode, case.reason


def test_the_ceilings_probes_time_each_library_route():
    from sparsescope.backends.library_probe import library_call_probes
    from sparsescope.hardware.gpu_ceilings import library_call_costs

    _available("nvmath-cusparse-i32")
    latency, throughput, missing = library_call_costs(library_call_probes(), 5)
    assert {"nvmath", "cupy"} <= set(latency), missing
    assert set(latency) == set(throughput)
    for library in latency:
        assert latency[library] > 0 and throughput[library] > 0
