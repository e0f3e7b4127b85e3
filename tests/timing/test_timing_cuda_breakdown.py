"""The CUDA timing protocol's pure parts: kernel-name shortening, the breakdown table, and the
argument checks that run before any GPU library is touched."""

from __future__ import annotations

import pytest

from sparsescope.errors import UsageError
from sparsescope.timing import TimingConfig, time_cuda
from sparsescope.timing.cuda import short_kernel_name, summarize_device_events

# Names as CUPTI reports them (cuSPARSE 12/13 through PyTorch, PyTorch's own, NVRTC's).
CSRMV = ("void cusparse::csrmv_v3_kernel<cusparse::CsrMVPolicy<128, 4, 4>, long, long, float, "
         "float, float, float, float>(cusparse::KernelCoeffs<float>, long const*, long const*, "
         "float const*, float const*, float*, long, long, long)")
PARTITION = ("void cusparse::csr_partition_kernel<128, long, long>(long const*, long, long, "
             "long, long*)")
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
ANON = ("void at::native::(anonymous namespace)::elementwise_kernel<128, 2, "
        "at::native::gpu_kernel_impl<(anonymous namespace)::Op>(at::TensorIteratorBase&, "
        "(anonymous namespace)::Op const&)::{lambda(int)#1}>(int, {lambda(int)#1})")


@pytest.mark.parametrize("full, short", [
    (CSRMV, "cusparse::csrmv_v3_kernel"),
    (PARTITION, "cusparse::csr_partition_kernel"),
    (FILL, "at::native::vectorized_elementwise_kernel"),
    (ANON, "at::native::(anonymous namespace)::elementwise_kernel"),
    ("csr_vector<float, int, 8>", "csr_vector"),
    ("void csr_scalar<double, long long>(long long, long long const*, long long const*, "
     "double const*, double const*, double*)", "csr_scalar"),
    ("read_stream", "read_stream"),
    ("Memset (Device)", "Memset (Device)"),
    ("Memcpy DtoD (Device -> Device)", "Memcpy DtoD (Device -> Device)"),
])
def test_short_kernel_name(full, short):
    assert short_kernel_name(full) == short


def test_breakdown_of_the_seed_table():
    # seed 000 section 3.2 (cage15): per-call averages in ns, over 3 profiled calls
    events = []
    for _ in range(3):
        events += [(CSRMV, 438.561), (PARTITION, 10.432), (FILL, 2.490)]
    rows = summarize_device_events(events, calls=3)
    assert [r["name"] for r in rows] == ["cusparse::csrmv_v3_kernel",
                                         "cusparse::csr_partition_kernel",
                                         "at::native::vectorized_elementwise_kernel"]
    total = 438.561 + 10.432 + 2.490
    assert rows[0]["time_ms"] == pytest.approx(0.438561)
    assert rows[0]["pct"] == pytest.approx(100 * 438.561 / total)  # 97.1 %
    assert rows[1]["pct"] == pytest.approx(2.3107, abs=1e-4)
    assert [r["launches"] for r in rows] == [1.0, 1.0, 1.0]
    assert rows[0]["full_name"] == CSRMV
    assert sum(r["pct"] for r in rows) == pytest.approx(100.0)


def test_breakdown_counts_launches_per_call_and_handles_nothing():
    rows = summarize_device_events([("k", 2.0), ("k", 4.0), ("Memset (Device)", 2.0)], calls=2)
    assert rows[0] == {"name": "k", "full_name": "k", "time_ms": 0.003, "pct": 75.0,
                       "launches": 1.0}
    assert rows[1]["launches"] == 0.5 and rows[1]["pct"] == 25.0
    assert summarize_device_events([], calls=1) == ()
    with pytest.raises(ValueError, match="calls must be >= 1"):
        summarize_device_events([], calls=0)


def test_time_cuda_checks_its_arguments_first():
    with pytest.raises(UsageError, match="repeats >= 1"):
        time_cuda(lambda: None, TimingConfig(repeats=0), library="torch")
    with pytest.raises(UsageError, match="must be one of torch, cupy, got 'jax'"):
        time_cuda(lambda: None, TimingConfig(), library="jax")
