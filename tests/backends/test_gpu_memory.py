"""A device out of memory: recognised in every library's spelling, the case skipped with the
reason, and the memory the case held handed back before the next case."""

from __future__ import annotations

import sys
import types

import pytest

from sparsescope import registry
from sparsescope.backends import gpu_memory, runner
from sparsescope.backends.gpu_memory import free_device_memory, is_out_of_memory
from sparsescope.backends.runner import run_case
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.timing.types import TimingConfig

CONFIG = TimingConfig(warmups=0, repeats=2, flush_l2=False)


class OutOfMemoryError(Exception):
    """How PyTorch and CuPy name theirs."""


class CUDADriverError(RuntimeError):
    pass


@pytest.mark.parametrize("exc", [
    OutOfMemoryError("Out of memory allocating 8,589,934,592 bytes"),
    CUDADriverError("CUDA_ERROR_OUT_OF_MEMORY: out of memory"),
    RuntimeError("cudaErrorMemoryAllocation"),
    RuntimeError("CUSPARSE_STATUS_ALLOC_FAILED"),
    type("AcceleratorMemoryError", (MemoryError,), {})("device pool exhausted"),
])
def test_device_allocation_failures_are_recognised(exc):
    assert is_out_of_memory(exc)


def test_a_wrapped_allocation_failure_is_recognised_through_its_cause():
    try:
        try:
            raise OutOfMemoryError("pool")
        except OutOfMemoryError as inner:
            raise RuntimeError("prepare: copying the matrix") from inner
    except RuntimeError as outer:
        assert is_out_of_memory(outer)


@pytest.mark.parametrize("exc", [RuntimeError("illegal memory access"), MemoryError("host"),
                                 ValueError("index 7 out of range")])
def test_other_errors_are_not_out_of_memory(exc):
    assert not is_out_of_memory(exc)


class _OomOnPrepare(ScipyCpuBackend):
    name = "oom-on-prepare"

    def prepare(self, csr, value_dtype, index_bytes):
        raise OutOfMemoryError("Out of memory allocating 137,438,953,472 bytes")


class _OomOnRun(ScipyCpuBackend):
    name = "oom-on-run"

    def run(self, prepared, x):
        raise CUDADriverError("CUDA_ERROR_OUT_OF_MEMORY: out of memory")


@pytest.fixture
def freed(monkeypatch):
    calls = []
    monkeypatch.setattr(runner, "free_device_memory", lambda: calls.append(1))
    for cls in (_OomOnPrepare, _OomOnRun):
        monkeypatch.setitem(registry.BACKENDS, ("spmv", cls.name), cls)
    return calls


@pytest.mark.parametrize("backend, stage", [("oom-on-prepare", "prepare"), ("oom-on-run", "run")])
def test_out_of_memory_skips_the_case_and_frees_the_device(small_matrix, freed, backend, stage):
    case = run_case(small_matrix, backend, config=CONFIG)
    assert case.outcome == "skipped" and case.measurement is None
    assert case.reason.startswith(f"GPU out of memory ({stage}): ")
    assert freed == [1]


def test_the_backend_is_gone_before_its_memory_is_freed(small_matrix, monkeypatch):
    """What a backend keeps on itself is handed back: nothing in the runner (a bound method
    such as the timing-mode hand-over) may keep the instance alive when the pools are freed."""
    import gc
    import weakref

    made, alive_at_free = [], []

    class Kept(_OomOnPrepare):
        name = "oom-kept"

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            made.append(weakref.ref(self))

    def free():
        gc.collect()
        alive_at_free.append(made[0]() is not None)

    monkeypatch.setattr(runner, "free_device_memory", free)
    monkeypatch.setitem(registry.BACKENDS, ("spmv", Kept.name), Kept)
    assert run_case(small_matrix, Kept.name, config=CONFIG).outcome == "skipped"
    assert alive_at_free == [False]


def test_a_case_that_fits_frees_nothing(small_matrix, freed):
    assert run_case(small_matrix, "scipy-cpu", config=CONFIG).outcome == "ok"
    assert freed == []


def test_free_empties_the_pools_of_imported_libraries_only(monkeypatch):
    log = []

    class Pool:
        def total_bytes(self):
            return 4096

        def free_all_blocks(self):
            log.append("free")

    fake = types.SimpleNamespace(get_default_memory_pool=Pool,
                                 get_default_pinned_memory_pool=Pool)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert free_device_memory() == {"cupy": 4096}
    assert log == ["free", "free"]  # device pool, then pinned host pool
    assert "torch" not in sys.modules  # never imported to free it


@pytest.mark.gpu
def test_real_device_out_of_memory_is_skipped_and_the_pool_emptied(small_matrix, monkeypatch):
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no GPU")
    free, total = cupy.cuda.runtime.memGetInfo()

    class Hog(ScipyCpuBackend):
        name = "hog"

        def prepare(self, csr, value_dtype, index_bytes):
            self.kept = cupy.ones(free // 4 // 2, dtype=cupy.float32)  # half the free memory
            self.more = cupy.ones(total // 4, dtype=cupy.float32)  # all of it: cannot fit
            return super().prepare(csr, value_dtype, index_bytes)

    monkeypatch.setitem(registry.BACKENDS, ("spmv", "hog"), Hog)
    case = run_case(small_matrix, "hog", config=CONFIG)
    assert case.outcome == "skipped" and case.reason.startswith(gpu_memory.OUT_OF_MEMORY)
    assert cupy.get_default_memory_pool().total_bytes() < total // 8  # handed back
    assert run_case(small_matrix, "scipy-cpu", config=CONFIG).outcome == "ok"
