"""``spmm-cublas-dense`` on the CPU (no torch here): its registration as a library dense
baseline, its variants (``math=tf32``), the TF32 tolerance and the runner checking at it, the
memory refusal with a fake free-memory probe, its traffic, and its roofline prediction, each
against hand-computed numbers."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope import registry
from sparsescope.backends.registry import get_backend
from sparsescope.backends.runner import run_case
from sparsescope.backends.spmm_dense import (
    CUBLAS_WORKSPACE_BYTES,
    SpmmCublasDense,
    dense_device_bytes,
    dense_fit_reason,
    flat_indices,
    math_scope,
)
from sparsescope.backends.variants import backend_choice, parse_variant, variant_set
from sparsescope.errors import UsageError
from sparsescope.hardware.types import DeviceSpec, MeasuredCeilings
from sparsescope.matrices.types import Matrix
from sparsescope.model.predict import device_rates
from sparsescope.ops.registry import get_op
from sparsescope.ops.spmm_dense import (
    DenseGemmShape,
    dense_gemm_traffic,
    predict_dense_gemm,
    tf32_tolerance,
)
from sparsescope.timing.types import TimingConfig

H200 = DeviceSpec(
    name="H200", vendor_name="NVIDIA H200", kind="gpu", compute_capability="9.0", sm_count=132,
    max_warps_per_sm=64, max_threads_per_sm=2048, max_blocks_per_sm=32, registers_per_sm=65_536,
    shared_mem_per_sm_bytes=233_472, warp_schedulers_per_sm=4, l2_bytes=50 * 2**20,
    peak_bw_gb_s=4800.0, fp32_peak_gflops=66_900.0, sm_clock_mhz=1980.0, dram_latency_ns=300.0)


@pytest.fixture(scope="module")
def awkward() -> Matrix:
    """37 x 23 with empty rows (every third row emptied) and one full row."""
    dense = sp.random(37, 23, density=0.2, random_state=5).toarray()
    dense[::3] = 0.0
    dense[4] = np.linspace(-1.0, 1.0, 23) + 0.01
    csr = sp.csr_matrix(dense)
    csr.sort_indices()
    return Matrix(name="awkward-37x23", csr=csr, source="generated:test", kind="uniform")


def spmm_case(matrix: Matrix, k: int = 5, layout: str = "col"):
    return get_op("spmm").make_case(matrix.csr, {"k": k, "layout": layout}, seed=k)


# -- registration and variants ---------------------------------------------------------------

def test_a_library_dense_baseline_of_spmm():
    assert registry.LIBRARY_BACKENDS[("spmm", "spmm-cublas-dense")] == (
        "sparsescope.backends.spmm_dense:SpmmCublasDense")
    assert registry.backend_op("spmm-cublas-dense") == "spmm"
    assert not registry.is_own("spmm-cublas-dense")
    assert registry.is_dense("spmm-cublas-dense") and registry.is_dense(
        "spmm-cublas-dense[math=tf32]")
    assert not registry.is_dense("spmm-torch-i32") and not registry.is_dense("spmm-cuda-rowwarp")
    backend = get_backend("spmm-cublas-dense")
    cap = backend.capability
    assert (cap.ops, cap.value_dtypes, cap.device) == (("spmm",), ("float32",), "gpu")
    assert cap.unsupported_reason("spmm", "float64", 4) == (
        "value dtype float64 not supported (supports float32)")
    assert backend.math == "fp32" and backend.check_tolerance(None) is None


def test_the_tf32_variant_parses_from_its_word():
    choice = parse_variant("spmm-cublas-dense[math=tf32]")
    assert choice.options == (("math", "tf32"),)
    assert choice.result_name == "spmm-cublas-dense[math=tf32]"
    assert backend_choice("spmm-cublas-dense[math=tf32]").create().math == "tf32"
    assert [(c.result_name, c.options) for c in variant_set("dense-spmm")] == [
        ("spmm-cublas-dense[math=fp32]", (("math", "fp32"),)),
        ("spmm-cublas-dense[math=tf32]", (("math", "tf32"),))]
    with pytest.raises(UsageError, match=r"math must be one of fp32, tf32, got 'fp16'"):
        parse_variant("spmm-cublas-dense[math=fp16]")
    # words stay refused where a backend declares none; integers parse as before
    with pytest.raises(UsageError, match="is not opt=integer"):
        parse_variant("cuda-spmv-adaptive[hub=big]")
    assert parse_variant("cuda-spmv-sell[unroll=4, minb=6]").options == (("unroll", 4),
                                                                          ("minb", 6))
    with pytest.raises(ValueError, match="math must be one of"):
        SpmmCublasDense(math="bf16")


# -- the TF32 tolerance and the gate ---------------------------------------------------------

def test_tf32_tolerance_by_hand():
    # 1e-5 + 2 x 2^-10 + 2^-20
    assert tf32_tolerance(1e-5, 1.0) == pytest.approx(0.0019640786743164063, rel=1e-15)
    assert tf32_tolerance(3e-5, 3.0) == pytest.approx(0.005892236022949218, rel=1e-15)
    with pytest.raises(ValueError, match="condition must be >= 1"):
        tf32_tolerance(1e-5, 0.5)


def test_the_tf32_variant_declares_its_tolerance_from_the_case(awkward):
    case = spmm_case(awkward)
    cond = case.derived.condition
    assert cond >= 1.0
    tf32 = SpmmCublasDense(math="tf32").check_tolerance(case)
    assert tf32 == pytest.approx(case.tolerance + (2 * 2**-10 + 2**-20) * cond)
    assert SpmmCublasDense(math="fp32").check_tolerance(case) is None


def _tf32(values: np.ndarray) -> np.ndarray:
    """float32 values truncated to TF32's 10-bit mantissa (the low 13 bits cleared)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


class _HostTf32Dense(SpmmCublasDense):
    """The dense product on the host with TF32-rounded inputs, whatever ``math`` says: what a
    tensor-core GEMM computes, without a GPU."""

    def availability(self):
        return True, ""

    def prepare(self, case, value_dtype, index_bytes):
        a = _tf32(case.matrix.toarray().astype(np.float32)).astype(np.float64)
        return a, _tf32(case.inputs).astype(np.float64)

    def poison_output(self, prepared):
        return False  # a fresh array every call

    def run(self, prepared):
        a, x = prepared
        return (a @ x).astype(np.float32)

    def notes(self, prepared):
        return {}

    def time(self, prepared, config):
        raise AssertionError("not timed")


@pytest.mark.parametrize("layout", ["row", "col"])
def test_the_runner_checks_tf32_products_at_the_tf32_tolerance(awkward, layout):
    def run(math):
        backend = _HostTf32Dense(math=math, free_bytes=lambda: 2**40)
        return run_case(awkward, backend, "spmm", {"k": 5, "layout": layout},
                        config=TimingConfig(), seed=5, timed=False)

    tf32, fp32 = run("tf32"), run("fp32")
    case = spmm_case(awkward, 5, layout)
    assert tf32.outcome == "ok", tf32.reason
    assert tf32.correctness.tolerance == pytest.approx(
        tf32_tolerance(case.tolerance, case.derived.condition))
    # the same TF32 products fail the FP32 gate: the variant needs its own tolerance
    assert fp32.outcome == "failed" and "above tolerance" in fp32.reason
    assert fp32.correctness.tolerance == pytest.approx(case.tolerance)
    assert case.tolerance < tf32.correctness.rel_err < tf32.correctness.tolerance


# -- the memory refusal ----------------------------------------------------------------------

def test_device_bytes_by_hand():
    # A 8,000,000 + X 64,000 + Y 32,000 + staging 10,000 x 12 + cuBLAS workspace
    assert dense_device_bytes(1000, 2000, 10_000, 8) == (
        8_000_000 + 64_000 + 32_000 + 120_000 + CUBLAS_WORKSPACE_BYTES)
    assert dense_device_bytes(1000, 2000, 10_000, 8) == 41_770_432
    assert dense_fit_reason(1000, 2000, 10_000, 8, 41_770_432) == ""
    reason = dense_fit_reason(1000, 2000, 10_000, 8, 41_770_431)
    assert reason.startswith("the dense matrix does not fit: A 1,000 x 2,000 float32")
    assert "needs 0.04 GiB, 0.04 GiB free" in reason


def test_a_matrix_too_large_for_the_free_memory_is_skipped_not_run(awkward):
    calls = []

    def free():
        calls.append(1)
        return 1_000_000  # below the cuBLAS workspace alone

    result = run_case(awkward, SpmmCublasDense(free_bytes=free), "spmm",
                      {"k": 5, "layout": "row"}, config=TimingConfig(), seed=5)
    assert result.outcome == "skipped" and len(calls) == 1
    assert result.reason.startswith("the dense matrix does not fit: A 37 x 23 float32")
    assert result.measurement is None
    # with room, the refusal is gone (here torch's absence is what stops it, if absent)
    assert SpmmCublasDense(free_bytes=lambda: 2**40).unsupported_params(
        spmm_case(awkward)) == ""


# -- the dense layout, the scoped TF32 switch --------------------------------------------------

def test_flat_indices_by_hand_and_against_scipy(awkward):
    indptr, indices = np.array([0, 1, 1, 3]), np.array([1, 0, 2])
    assert flat_indices(indptr, indices, 3).tolist() == [1, 6, 8]
    csr = awkward.csr
    dense = np.zeros(csr.shape[0] * csr.shape[1])
    dense[flat_indices(csr.indptr, csr.indices, csr.shape[1])] = csr.data
    assert np.array_equal(dense.reshape(csr.shape), csr.toarray())


@pytest.mark.parametrize("attr, before, values", [
    ("allow_tf32", False, {"tf32": True, "fp32": False}),          # PyTorch before 2.9
    ("fp32_precision", "none", {"tf32": "tf32", "fp32": "ieee"}),  # PyTorch 2.9 and later
])
def test_math_scope_sets_the_switch_and_restores_it(attr, before, values):
    matmul = SimpleNamespace(**{attr: before})
    for math_mode, inside in values.items():
        with math_scope(matmul, math_mode):
            assert getattr(matmul, attr) == inside
        assert getattr(matmul, attr) == before
    with pytest.raises(RuntimeError), math_scope(matmul, "tf32"):
        raise RuntimeError("a failed call")
    assert getattr(matmul, attr) == before


# -- traffic and roofline ----------------------------------------------------------------------

def test_dense_traffic_by_hand(awkward):
    t = dense_gemm_traffic(1000, 2000, 10_000, 8)
    assert (t.values_bytes, t.indices_bytes, t.row_meta_bytes) == (8_000_000, 0, 0)
    assert (t.x_bytes, t.y_written_bytes, t.y_read_bytes) == (64_000, 32_000, 0)
    assert (t.padding_bytes, t.total_bytes, t.flops) == (7_960_000, 8_096_000, 32_000_000)
    case = spmm_case(awkward, k=5)
    declared = SpmmCublasDense().traffic(case, None)
    nnz = awkward.csr.nnz
    assert declared.total_bytes == 37 * 23 * 4 + 23 * 5 * 4 + 37 * 5 * 4
    assert declared.padding_bytes == (37 * 23 - nnz) * 4 and declared.flops == 2 * 37 * 23 * 5
    traffic, shape = SpmmCublasDense(math="tf32").host_plan_case(case, "float32", 4, 132)
    assert traffic == declared and shape == DenseGemmShape(math="tf32")


def test_roofline_by_hand_on_the_h200_datasheet():
    rates = device_rates(H200)  # no ceilings: datasheet rates, no launch cost
    assert rates.tf32_tensor_gflops == pytest.approx(132 * 1024 * 2 * 1.98)  # 535,265 GFLOP/s
    small = dense_gemm_traffic(4096, 4096, 1000, 8)
    p = predict_dense_gemm(small, DenseGemmShape("fp32"), rates, flushed=True)
    # 67,371,008 B / 4,800 GB/s = 14.0356 us; 268,435,456 flops / 66,900 GFLOP/s = 4.0125 us
    assert p.predicted_ms == pytest.approx(67_371_008 / 4.8e12 * 1e3)
    assert p.limiter == "memory" and p.term("compute").time_ms == pytest.approx(
        268_435_456 / 66.9e12 * 1e3)
    wide = dense_gemm_traffic(4096, 4096, 1000, 256)
    # 75,497,472 B -> 15.729 us; 8,589,934,592 flops: FP32 128.40 us, TF32 16.048 us
    fp32 = predict_dense_gemm(wide, DenseGemmShape("fp32"), rates, flushed=True)
    tf32 = predict_dense_gemm(wide, DenseGemmShape("tf32"), rates, flushed=True)
    assert fp32.predicted_ms == pytest.approx(8_589_934_592 / 66.9e12 * 1e3)
    assert tf32.predicted_ms == pytest.approx(8_589_934_592 / 535_265.28e9 * 1e3)
    assert fp32.limiter == tf32.limiter == "compute"
    assert tf32.term("memory").time_ms == pytest.approx(75_497_472 / 4.8e12 * 1e3)


def test_roofline_reads_the_l2_the_call_cost_and_refuses_an_unknown_tf32_peak():
    rates = device_rates(H200, MeasuredCeilings(device="H200", l2_bw_gb_s=10_000.0,
                                                call_us=3.7, read_bw_gb_s=4000.0))
    t = dense_gemm_traffic(1024, 1024, 100, 8)  # 4,259,840 B: inside the 50 MiB L2
    warm = predict_dense_gemm(t, DenseGemmShape("fp32"), rates, flushed=False)
    cold = predict_dense_gemm(t, DenseGemmShape("fp32"), rates, flushed=True)
    assert warm.predicted_ms == pytest.approx(3.7e-3 + 4_259_840 / 10e12 * 1e3)
    assert cold.predicted_ms == pytest.approx(3.7e-3 + 4_259_840 / 4e12 * 1e3)
    unknown = dataclasses.replace(rates, tf32_tensor_gflops=None)
    none = predict_dense_gemm(t, DenseGemmShape("tf32"), unknown, flushed=True)
    assert none.predicted_ms is None and "no dense TF32 tensor-core peak" in none.not_modelled


def test_the_op_predicts_the_dense_shape_by_its_roofline(awkward):
    case = spmm_case(awkward, k=5)
    rates = device_rates(H200)
    traffic = SpmmCublasDense().traffic(case, None)
    shape = SpmmCublasDense(math="tf32").kernel_shape(case, None)
    assert get_op("spmm").predict(case, traffic, shape, rates, flushed=True) == (
        predict_dense_gemm(traffic, shape, rates, flushed=True))
