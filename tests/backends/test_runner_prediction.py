"""The runner's prediction step (``backends.runner.predicted``, through
``context.predict_call``): a GPU backend that declares its kernel shape gets a prediction
before timing and its signed error after; every other case says why it is not modelled. The
"GPU" backends here are fakes that run SciPy on the CPU."""

from __future__ import annotations

import dataclasses

import pytest

from sparsescope.backends.base import Capability
from sparsescope.backends.runner import run_case
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.context import DeviceContext
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.predict import DeviceRates
from sparsescope.timing.types import TimingConfig

CONFIG = TimingConfig(warmups=1, repeats=3, flush_l2=False)

RATES = DeviceRates(
    name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 20, dram_bw_gb_s=100.0, l2_bw_gb_s=400.0, dram_latency_ns=400.0,
    l2_latency_ns=200.0, fp32_gflops=1000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=3.0, sources={})
MODEL = DeviceContext(rates=RATES)


class FakeGpuShapeless(ScipyCpuBackend):
    """SciPy on the host, declared as a GPU backend, with no kernel shape."""

    name = "fake-gpu-shapeless"
    capability = Capability(ops=("spmv",), value_dtypes=("float32",), index_bytes=(4,),
                            device="gpu", description="SciPy posing as a GPU kernel")


class FakeGpu(FakeGpuShapeless):
    """... declaring one thread per row in 128-thread blocks."""

    name = "fake-gpu"
    cuda_source = ""

    def shape(self, prepared):
        rows = prepared.shape[0]
        return KernelShape(kernel="fake_csr_scalar", decomposition="rows", block_threads=128,
                           grid_blocks=-(-rows // 128), cuda_source=self.cuda_source)


class FakeGpuOwnSource(FakeGpu):
    """... an own kernel whose SASS a refine stage may read."""

    name = "fake-gpu-own"
    cuda_source = "spmv_own.cu"


class FakeGpuShapeRaises(FakeGpuShapeless):
    name = "fake-gpu-shape-raises"

    def shape(self, prepared):
        raise RuntimeError("no launch shape for this matrix")


class FakeGpuBrokenShape(FakeGpu):
    """A shape the model cannot use: zero threads per row (slipped past validation)."""

    name = "fake-gpu-broken-shape"

    def shape(self, prepared):
        s = super().shape(prepared)
        object.__setattr__(s, "threads_per_row", 0)
        return s


def test_a_declared_shape_is_predicted_and_scored(small_matrix):
    case = run_case(small_matrix, FakeGpu(), config=CONFIG, model=MODEL)
    assert case.outcome == "ok"
    p = case.prediction
    assert p is not None and p.not_modelled == ""
    assert p.predicted_ms > 0 and p.limiter in {"dram", "l2", "latency", "imbalance", "compute"}
    measured = case.measurement.time_ms
    assert p.error_pct == pytest.approx((measured - p.predicted_ms) / measured * 100)
    assert p.kernel.startswith("CSR INT32, 1 thread per row") and p.staged is False
    assert "kernel shape declared by the backend" in p.assumptions
    # the config did not flush: no write-back charged
    assert p.inputs["flush_writeback_bytes"] == 0.0


def test_checked_only_is_predicted_but_not_scored(small_matrix):
    flush = TimingConfig(warmups=1, repeats=3, flush_l2=True)
    case = run_case(small_matrix, FakeGpu(), config=flush, model=MODEL, timed=False)
    assert case.outcome == "ok" and case.measurement is None
    assert case.prediction.predicted_ms > 0 and case.prediction.error_pct is None
    # the protocol's flush reaches the model: the L2's dirty lines are written back
    assert case.prediction.inputs["flush_writeback_bytes"] > 0


def test_without_a_model_there_is_no_prediction(small_matrix):
    assert run_case(small_matrix, FakeGpu(), config=CONFIG).prediction is None


def test_a_backend_without_a_shape_is_not_modelled(small_matrix):
    case = run_case(small_matrix, FakeGpuShapeless(), config=CONFIG, model=MODEL)
    assert case.outcome == "ok" and case.measurement is not None
    assert case.prediction.predicted_ms is None and case.prediction.error_pct is None
    assert case.prediction.not_modelled == "fake-gpu-shapeless declares no kernel shape"


def test_a_cpu_backend_is_not_modelled(small_matrix):
    case = run_case(small_matrix, "scipy-cpu", config=CONFIG, model=MODEL)
    assert case.outcome == "ok"
    assert case.prediction.predicted_ms is None
    assert "CPU" in case.prediction.not_modelled


def test_a_device_without_rates_gives_its_reason(small_matrix):
    case = run_case(small_matrix, FakeGpu(), config=CONFIG,
                    model=DeviceContext(reason="x"))
    assert case.prediction.predicted_ms is None and case.prediction.not_modelled == "x"
    bare = run_case(small_matrix, FakeGpu(), config=CONFIG, model=DeviceContext())
    assert bare.prediction.not_modelled == "no device rates for the time model"


@pytest.mark.parametrize("backend, error", [
    (FakeGpuShapeRaises, "RuntimeError: no launch shape for this matrix"),
    (FakeGpuBrokenShape, "ZeroDivisionError"),
])
def test_a_model_failure_is_a_reason_not_a_failed_case(small_matrix, backend, error):
    case = run_case(small_matrix, backend(), config=CONFIG, model=MODEL)
    assert case.outcome == "ok" and case.measurement is not None
    assert case.prediction.predicted_ms is None
    assert case.prediction.not_modelled.startswith("the model failed")
    assert error in case.prediction.not_modelled


def test_refine_applies_to_own_kernels_only(small_matrix):
    seen = []

    def refine(shape):
        seen.append(shape.kernel)
        return dataclasses.replace(shape, staged=True, source="SASS of fake_csr_scalar")

    model = DeviceContext(rates=RATES, refine=refine)
    own = run_case(small_matrix, FakeGpuOwnSource(), config=CONFIG, model=model, timed=False)
    assert seen == ["fake_csr_scalar"]
    assert own.prediction.staged is True
    assert "kernel shape SASS of fake_csr_scalar" in own.prediction.assumptions
    library = run_case(small_matrix, FakeGpu(), config=CONFIG, model=model, timed=False)
    assert seen == ["fake_csr_scalar"]  # no CUDA source: the declared figures stand
    assert library.prediction.staged is False


class FakeGpuOwnFlush(FakeGpu):
    """Its timing decides the flush from its own working set: here always flushed."""

    name = "fake-gpu-own-flush"

    def time(self, prepared, x, config):
        return dataclasses.replace(super().time(prepared, x, config), flushed=True)


def test_prediction_follows_the_flush_the_timing_applied(small_matrix):
    """The declared bytes say "no flush" (CONFIG flush_l2=False), the timing flushed: the
    scored prediction is the one for a flushed L2 (its write-back assumption named)."""
    flushed_text = "L2 flushed before the call"
    plain = run_case(small_matrix, FakeGpu(), config=CONFIG, model=MODEL)
    assert not plain.measurement.flushed
    assert not any(flushed_text in a for a in plain.prediction.assumptions)
    case = run_case(small_matrix, FakeGpuOwnFlush(), config=CONFIG, model=MODEL)
    assert case.measurement.flushed
    assert any(flushed_text in a for a in case.prediction.assumptions)
    assert case.prediction.error_pct is not None
