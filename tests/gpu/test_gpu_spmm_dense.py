"""``spmm-cublas-dense`` and its TF32 variant on the GPU, through the runner's float64 gate:
awkward matrices (empty rows, 1 x 1, one row, one column, n not a multiple of 32), k not a
multiple of 32, both layouts; the TF32 switch taking effect and restored after; the timed
call with its roofline prediction; the memory refusal with the device's own probe."""

from __future__ import annotations

import pytest

from sparsescope.backends.runner import BackendChoice, run_case
from sparsescope.timing.types import TimingConfig

pytestmark = pytest.mark.gpu
QUICK = TimingConfig(warmups=1, repeats=3)
FP32 = BackendChoice("spmm-cublas-dense")
TF32 = BackendChoice("spmm-cublas-dense", (("math", "tf32"),), "spmm-cublas-dense[math=tf32]")
CASES = ((1, "row"), (3, "col"), (8, "row"), (8, "col"), (37, "row"), (37, "col"),
         (64, "col"))


@pytest.fixture(scope="module")
def torch_cuda():
    from sparsescope.backends._gpu import torch_cuda_status

    available, why = torch_cuda_status()
    if not available:
        pytest.skip(why)
    import torch

    return torch


def _switch(torch):
    """The TF32 switch ``backends.spmm_dense.math_scope`` sets, as it reads it."""
    matmul = torch.backends.cuda.matmul
    attr = "fp32_precision" if hasattr(matmul, "fp32_precision") else "allow_tf32"
    return getattr(matmul, attr)


def _run(matrix, choice, k, layout, timed=False):
    return run_case(matrix, choice, "spmm", {"k": k, "layout": layout}, config=QUICK,
                    value_dtype="float32", seed=k, timed=timed)


@pytest.mark.parametrize("choice", [FP32, TF32], ids=["fp32", "tf32"])
def test_dense_gemm_matches_float64(choice, torch_cuda, awkward_matrices):
    before = _switch(torch_cuda)
    failures = []
    for matrix in awkward_matrices:
        for k, layout in CASES:
            case = _run(matrix, choice, k, layout)
            if case.outcome != "ok":
                failures.append((matrix.name, k, layout, case.outcome, case.reason))
            elif choice.options:
                assert case.notes["precision"].startswith("TF32")
    assert not failures, failures
    assert _switch(torch_cuda) == before  # restored after each call


def test_tf32_is_on_only_in_its_variant(torch_cuda, awkward_matrices):
    """On a 4,099 x 3,001 matrix at k = 64, TF32 products err far more than FP32's: the switch
    takes effect, and the default mode forbids it."""
    matrix = next(m for m in awkward_matrices if m.name.startswith("rand-4099x3001"))
    fp32, tf32 = _run(matrix, FP32, 64, "row"), _run(matrix, TF32, 64, "row")
    assert fp32.outcome == tf32.outcome == "ok", (fp32.reason, tf32.reason)
    assert tf32.correctness.rel_err > 10 * fp32.correctness.rel_err
    assert fp32.correctness.tolerance < tf32.correctness.tolerance


def test_timed_with_its_dense_traffic_and_roofline(torch_cuda, awkward_matrices):
    from sparsescope.context.device import named_gpu

    matrix = next(m for m in awkward_matrices if m.name.startswith("mixed-rows-5003"))
    result = run_case(matrix, TF32, "spmm", {"k": 37, "layout": "col"}, config=QUICK,
                      value_dtype="float32", seed=3,
                      model=named_gpu("H100", use_store=False, sass=False))
    assert result.outcome == "ok", result.reason
    assert result.measurement.time_ms > 0
    n = matrix.rows
    assert result.traffic.values_bytes == n * n * 4 and result.traffic.indices_bytes == 0
    assert result.traffic.flops == 2 * n * n * 37
    prediction = result.prediction
    assert prediction.predicted_ms is not None and prediction.limiter in ("memory", "compute")
    assert prediction.error_pct is not None


def test_a_matrix_beyond_the_free_memory_is_skipped(torch_cuda, awkward_matrices):
    from sparsescope.backends.spmm_dense import SpmmCublasDense, torch_free_bytes

    assert torch_free_bytes() > 0  # the device's own probe answers
    backend = SpmmCublasDense(free_bytes=lambda: 1024)  # the device seen nearly full
    result = run_case(awkward_matrices[0], backend, "spmm", {"k": 8, "layout": "row"},
                      config=QUICK, value_dtype="float32")
    assert result.outcome == "skipped"
    assert result.reason.startswith("the dense matrix does not fit")
