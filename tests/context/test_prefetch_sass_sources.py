"""``context.predict.prefetch_sass``: the own kernels of every source, read in one call that
compiles them in as few programs as ``sass.programs`` plans (one on a busy machine)."""

from __future__ import annotations

from types import SimpleNamespace

from sparsescope.context import predict

SHAPES = [SimpleNamespace(cuda_source="spmv_csr.cu", kernel="csr_vector<float, int, 8>"),
          SimpleNamespace(cuda_source="spmv_own.cu", kernel="spmv_sell<float, 1>"),
          SimpleNamespace(cuda_source="spmv_csr.cu", kernel="csr_scalar<float, int>"),
          SimpleNamespace(cuda_source="", kernel="cusparse")]
DEVICE = SimpleNamespace(refine=lambda *a: None, spec=SimpleNamespace(compute_capability="9.0"))


def test_every_source_is_asked_for_in_one_call(monkeypatch):
    import sparsescope.sass.kernel_shape as kernel_shape

    calls = []
    monkeypatch.setattr(kernel_shape, "prefetch_all",
                        lambda wanted, arch: calls.append((wanted, arch)))
    predict.prefetch_sass(SHAPES, DEVICE)
    assert calls == [({"spmv_csr.cu": ["csr_vector<float, int, 8>", "csr_scalar<float, int>"],
                       "spmv_own.cu": ["spmv_sell<float, 1>"]}, "sm_90")]


def test_two_sources_on_a_busy_machine_are_one_compiler_run(monkeypatch, tmp_path):
    import sparsescope.sass.kernel_shape as kernel_shape
    from sparsescope.sass import sass_cache

    monkeypatch.setenv("SPARSESCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(sass_cache, "toolchain", lambda: "fake nvcc 1.0; fake nvdisasm 1.0")
    monkeypatch.setattr(kernel_shape, "idle_cores", lambda: 1)
    programs = []

    def compile_program(program, arch):
        programs.append((program.parts, arch))
        return {}

    monkeypatch.setattr(kernel_shape, "_compile_program", compile_program)
    kernel_shape.kernel_mlp_of.cache_clear()
    try:
        predict.prefetch_sass(SHAPES, DEVICE)
    finally:
        kernel_shape.kernel_mlp_of.cache_clear()
    assert programs == [((("spmv_csr.cu", ("csr_vector<float, int, 8>",
                                           "csr_scalar<float, int>")),
                          ("spmv_own.cu", ("spmv_sell<float, 1>",))), "sm_90")]


def test_no_refiner_compiles_nothing(monkeypatch):
    import sparsescope.sass.kernel_shape as kernel_shape

    monkeypatch.setattr(kernel_shape, "prefetch_all", lambda *a: (_ for _ in ()).throw(
        AssertionError("compiled")))
    predict.prefetch_sass([SimpleNamespace(cuda_source="a.cu", kernel="k")],
                          SimpleNamespace(refine=None, spec=None))
