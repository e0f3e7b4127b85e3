"""The device and prediction context (``sparsescope.context``): one record of the device a
case is predicted for, built in one place, and the one prediction entry point."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope import context
from sparsescope.context import (
    CPU_BACKEND,
    CPU_RUN,
    DeviceContext,
    named_gpu,
    predict_call,
    predict_plan,
    rates_context,
)
from sparsescope.errors import SparsescopeError
from sparsescope.hardware import detect
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices.types import Matrix
from sparsescope.ops.registry import get_op

FAKE_GPU = detect.DetectedGpu(
    name="NVIDIA H200", compute_capability="9.0", sm_count=132, total_memory_bytes=141 << 30,
    l2_bytes=60 << 20, driver="570.1", runtime="12.8", library="cupy")


def _banded(rows: int = 2000) -> sp.csr_matrix:
    return sp.diags([1.0, 2.0, 3.0], [-1, 0, 1], shape=(rows, rows), format="csr")


def test_a_named_gpu_from_its_datasheet_or_its_stored_ceilings(tmp_path):
    sheet = named_gpu("H200", use_store=False, sass=False)
    assert sheet.spec.name == "H200" and sheet.modelled and sheet.kind == "gpu"
    assert sheet.origin.startswith("rates: datasheet of H200 (--no-store")
    assert sheet.refine is None and "--no-sass" in sheet.refine_reason
    given = named_gpu("H200", use_store=False, sass=False, latency_ns=500, bw_gb_s=3000)
    assert (given.rates.dram_latency_ns, given.rates.dram_bw_gb_s) == (500, 3000)
    assert given.rates.sources["dram_latency"] == "given (--latency-ns 500)"
    from sparsescope.results.ceilings_history import store_ceilings

    store = tmp_path / "store.sqlite"
    store_ceilings(store, MeasuredCeilings(device="NVIDIA H200", read_bw_gb_s=4100.0), "gpu",
                   measured_utc="2026-11-27T00:00:00+00:00")
    measured = named_gpu("H200", store_path=store, sass=False)
    assert measured.origin.startswith("rates: measured on NVIDIA H200 at 2026-11-27")
    assert measured.ceilings.read_bw_gb_s == 4100.0 and measured.rates.dram_bw_gb_s == 4100.0
    assert measured.measured_device == "NVIDIA H200" and measured.device_name == "NVIDIA H200"


def test_the_present_device_without_a_gpu_is_the_cpu_not_modelled(monkeypatch):
    from sparsescope.results import ceilings_cache

    class Found:
        ceilings = MeasuredCeilings(device="test cpu", copy_bw_gb_s=20.0, fp32_gflops=100.0)

    monkeypatch.setattr(detect, "detect_gpu", lambda: None)
    monkeypatch.setattr(ceilings_cache, "lookup_cpu_ceilings", lambda **kw: Found())
    cpu = context.present_device("gpu", store=False)
    assert cpu.kind == "cpu" and not cpu.modelled and cpu.reason == CPU_RUN
    assert cpu.device_name == "test cpu" and cpu.spec.peak_bw_gb_s == 20.0
    assert context.present_gpu() is None and context.present_gpu_stored() is None


def test_the_present_gpu_with_its_reported_l2_and_unmeasured_ceilings(monkeypatch):
    from sparsescope.hardware import gpu_ceilings

    def no_cupy():
        raise SparsescopeError("no CuPy here")

    monkeypatch.setattr(detect, "detect_gpu", lambda: FAKE_GPU)
    monkeypatch.setattr(gpu_ceilings, "measure_gpu_ceilings", no_cupy)
    gpu = context.present_device("gpu")
    assert gpu.kind == "gpu" and gpu.modelled and gpu.refine is not None
    assert gpu.spec.l2_bytes == 60 << 20 and "queried from the device" in gpu.spec.sources[
        "l2_bytes"]
    assert gpu.ceilings.method == {"not_measured": "no CuPy here"}
    assert (gpu.driver, gpu.detected) == ("570.1", "NVIDIA H200")
    sheet = context.present_gpu(ceilings="none")
    assert sheet.ceilings is None and sheet.origin.startswith("rates: datasheet of H200")
    with pytest.raises(SparsescopeError):
        context.present_gpu(ceilings="guessed")


class _Shape:
    kernel, source, cuda_source = "k", "declared", ""


def test_predict_call_says_why_a_call_is_not_modelled():
    case = get_op("spmv").make_case(_banded(), None)
    rates = named_gpu("H200", use_store=False, sass=False).rates
    assert predict_call(case, case.csr_traffic, _Shape(), DeviceContext(reason="x")
                        ).not_modelled == "x"
    assert predict_call(case, case.csr_traffic, _Shape(), DeviceContext()).not_modelled == (
        "no device rates for the time model")
    device = rates_context(rates)
    assert predict_call(case, None, _Shape(), device, who="b").not_modelled == (
        "b declared no traffic")
    assert predict_call(case, case.csr_traffic, None, device, who="b").not_modelled == (
        "b declares no kernel shape")
    failed = predict_call(case, case.csr_traffic, _Shape(), device)  # not a KernelShape
    assert failed.predicted_ms is None and failed.not_modelled.startswith("the model failed")


def test_the_runner_and_the_what_if_predict_the_same_call_alike():
    """One entry point: a host plan predicted through ``predict_plan`` and the same shape
    through ``predict_call`` give the same time."""
    from sparsescope.backends.registry import get_backend

    csr = _banded()
    device = named_gpu("H100", use_store=False, sass=False)
    backend = get_backend("cuda-spmv-sell")
    case = get_op("spmv").make_case(csr, None, index_bytes=4)
    plan = predict_plan(case, backend, device)
    assert plan.prediction is not None and plan.prediction.predicted_ms > 0, plan.not_modelled
    assert plan.assumptions[0] == device.origin
    traffic, shape = get_backend("cuda-spmv-sell").host_plan_case(case, "float32", 4,
                                                                   device.rates.sm_count)
    direct = predict_call(case, traffic, shape, device)
    assert direct.predicted_ms == pytest.approx(plan.prediction.predicted_ms)
    cpu = predict_plan(case, get_backend("scipy-cpu"), device)
    assert cpu.prediction is None and "CPU backend" in cpu.not_modelled
    assert predict_plan(case, backend, DeviceContext(reason=CPU_BACKEND)).not_modelled == (
        CPU_BACKEND)


def test_the_what_if_serves_spmm_and_slicing():
    from sparsescope.whatif import what_if

    rng = np.random.default_rng(2)
    matrix = Matrix(name="m", csr=sp.random(400, 300, density=0.05, format="csr",
                                            random_state=rng), source="test")
    spmm = what_if([matrix], ["spmm-cuda-auto", "spmm-cuda-rowgroup", "spmm-cuda-rowwarp",
                              "spmm-cuda-auto-rules", "spmm-scipy-cpu"], "H200", op="spmm",
                   op_params={"k": [32]}, use_store=False, sass=False)
    auto, rowgroup, rowwarp, rules, cpu = spmm.cases
    assert auto.op == "spmm" and auto.params["k"] == 32
    for case in (auto, rowgroup, rowwarp, rules):
        assert case.prediction is not None and case.prediction.predicted_ms > 0, case
    # auto plans the kernels' own candidates and keeps the fastest; the rules pick one of them
    fastest = min(rowgroup.prediction.predicted_ms, rowwarp.prediction.predicted_ms)
    assert auto.prediction.predicted_ms <= fastest * (1 + 1e-9)
    assert rules.kernel in (rowgroup.kernel, rowwarp.kernel)
    assert cpu.prediction is None and "CPU backend" in cpu.not_modelled
    col = what_if([matrix], ["spmm-cuda-rowgroup"], "H200", op="spmm",
                  op_params={"k": [32], "layout": ["col"]}, use_store=False, sass=False)
    # a row-major kernel refuses column-major X with its own reason
    assert "reads row-major X only" in col.cases[0].not_modelled
    sliced = what_if([matrix], ["slice-cuda-gather"], "H200", op="slice",
                     op_params={"rows_selected": [10]}, use_store=False, sass=False)
    (case,) = sliced.cases
    assert case.op == "slice" and case.prediction is None and case.not_modelled
