"""The SASS of own kernels kept on disk across runs (``sass.sass_cache``): a warm cache compiles
nothing, an instance asked for with others is compiled with them in one program, and a changed
source or toolchain misses. Counted, not timed."""

from __future__ import annotations

import pytest

from sparsescope.sass import kernel_shape as ks
from sparsescope.sass import sass_cache
from sparsescope.sass.mlp import KernelMLP

A, B, C = ("spmv_sell<float, 0, 1, 1, 4, 6, 1>", "spmv_sell<float, 0, 1, 1, 2, 8, 1>",
           "spmv_sell<float, 0, 1, 1, 4, 6, 2>")


def _mlp(expr: str) -> KernelMLP:
    return KernelMLP(kernel=expr, loop_found=True, loads_per_iteration=12,
                     independent_batch=4, batch_bytes_per_thread=16, rounds_per_iteration=2,
                     bytes_per_thread_per_iteration=48, staged=False, evidence=("fake",),
                     gathers_per_iteration=4, arch="sm_90", compiler="fake 1.0")


@pytest.fixture
def fake_compiler(monkeypatch, tmp_path):
    """A compiler that records each program it is asked for, a toolchain of its own, and an
    empty cache folder."""
    monkeypatch.setenv("SPARSESCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(sass_cache, "toolchain", lambda: "fake nvcc 1.0; fake nvdisasm 1.0")
    programs: list[tuple[str, ...]] = []

    def compile_program(program, arch):
        programs.append(tuple(e for _, exprs in program.parts for e in exprs))
        return {(s, e): _mlp(e) for s, exprs in program.parts for e in exprs}

    monkeypatch.setattr(ks, "_compile_program", compile_program)
    ks.kernel_mlp_of.cache_clear()
    yield programs
    ks.kernel_mlp_of.cache_clear()


def test_prefetched_instances_compile_in_one_program(fake_compiler):
    ks.prefetch("spmv_own.cu", [A, B, C, A], "sm_90")
    assert fake_compiler == [(A, B, C)]
    first = ks.kernel_mlp_of("spmv_own.cu", B, "sm_90")
    assert first == _mlp(B) and ks.kernel_mlp_of("spmv_own.cu", B, "sm_90") is first
    assert fake_compiler == [(A, B, C)]  # answered from the process, nothing compiled


def test_a_warm_cache_compiles_nothing_across_processes(fake_compiler, tmp_path):
    before = dict(sass_cache.COUNTS)
    ks.prefetch("spmv_own.cu", [A, B], "sm_90")
    assert len(list((tmp_path / "sass").glob("*.pickle"))) == 2
    ks.kernel_mlp_of.cache_clear()  # a new process: only the folder is left
    ks.prefetch("spmv_own.cu", [A, B, C], "sm_90")
    assert fake_compiler == [(A, B), (C,)]  # A and B read back, C compiled alone
    assert ks.kernel_mlp_of("spmv_own.cu", A, "sm_90") == _mlp(A)
    counts = {k: sass_cache.COUNTS[k] - before.get(k, 0) for k in sass_cache.COUNTS}
    assert counts == {"programs": 2, "instances": 3, "stored": 3, "disk_hits": 2}


def test_another_source_or_toolchain_misses(fake_compiler, monkeypatch):
    ks.prefetch("spmv_own.cu", [A], "sm_90")
    ks.kernel_mlp_of.cache_clear()
    monkeypatch.setattr(sass_cache, "toolchain", lambda: "fake nvcc 2.0; fake nvdisasm 1.0")
    ks.prefetch("spmv_own.cu", [A], "sm_90")
    ks.kernel_mlp_of.cache_clear()
    real = sass_cache.entry_key
    monkeypatch.setattr(sass_cache, "entry_key",
                        lambda text, *rest: real(text + "\n// edited", *rest))
    ks.prefetch("spmv_own.cu", [A], "sm_90")
    assert fake_compiler == [(A,), (A,), (A,)]


def test_an_unreadable_entry_is_a_miss(fake_compiler, tmp_path):
    ks.prefetch("spmv_own.cu", [A], "sm_90")
    [entry] = (tmp_path / "sass").glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    ks.kernel_mlp_of.cache_clear()
    assert ks.kernel_mlp_of("spmv_own.cu", A, "sm_90") == _mlp(A)
    assert fake_compiler == [(A,), (A,)]


def test_without_tools_nothing_is_read(monkeypatch, tmp_path, fake_compiler):
    ks.prefetch("spmv_own.cu", [A], "sm_90")
    ks.kernel_mlp_of.cache_clear()
    from sparsescope.errors import MissingDependencyError

    def missing():
        raise MissingDependencyError("nvcc hidden by the test")

    monkeypatch.setattr(sass_cache, "toolchain", missing)
    assert ks.kernel_mlp_of("spmv_own.cu", A, "sm_90") is None  # the declared shape stands


@pytest.mark.slow
def test_real_compile_then_disk(monkeypatch, tmp_path):
    if not ks.sass_tools_available():
        pytest.skip("no CUDA compiler and cuobjdump here")
    monkeypatch.setenv("SPARSESCOPE_CACHE", str(tmp_path))
    ks.kernel_mlp_of.cache_clear()
    before = dict(sass_cache.COUNTS)
    cold = ks.kernel_mlps_of("spmv_csr.cu", ["csr_scalar<float, int>",
                                             "csr_vector<float, int, 8>"], "sm_90")
    ks.kernel_mlp_of.cache_clear()
    warm = ks.kernel_mlps_of("spmv_csr.cu", ["csr_scalar<float, int>",
                                             "csr_vector<float, int, 8>"], "sm_90")
    counts = {k: sass_cache.COUNTS[k] - before.get(k, 0) for k in sass_cache.COUNTS}
    assert counts["programs"] == 1 and counts["instances"] == 2 and counts["disk_hits"] == 2
    assert warm == cold and all(m is not None for m in warm.values())
    ks.kernel_mlp_of.cache_clear()
