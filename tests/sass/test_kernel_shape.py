"""Kernel shapes read from the SASS of our own kernels (``sass.kernel_shape``).

The compile tests build instances of the real ``spmv_csr.cu`` / ``spmv_own.cu`` with NVRTC (nvcc
where libnvrtc is absent) and assert what the listings show when read by hand (NVRTC 13.5 and
13.0 -- CuPy 14.2's -- and nvcc 13.0 give the same figures on sm_90). They are skipped with a
reason without a compiler or cuobjdump; ``spmv_own.cu``'s instances are compiled in one
program, so the file takes about 7 s.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from fractions import Fraction

import pytest

from sparsescope import _tools
from sparsescope.errors import MissingDependencyError
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.sass import extract
from sparsescope.sass import kernel_shape as ks
from sparsescope.sass.extract import compile_cuda
from sparsescope.sass.kernel_shape import (
    kernel_mlp_of,
    kernel_mlps_of,
    loads_per_nonzero,
    refine,
    shape_from_sass,
)
from sparsescope.sass.mlp import KernelMLP

SELL_U4 = "spmv_sell<float, 0, 1, 1, 4, 6, 1>"  # <T, IDX, B, HINT, UNROLL, MINB, TPR>
SELL_U2_T2 = "spmv_sell<float, 0, 1, 1, 2, 8, 2>"
DELTA16_U4 = "spmv_sell<float, 1, 1, 1, 4, 6, 1>"
BLOCKED3_U2 = "spmv_sell<float, 1, 3, 1, 2, 8, 1>"
DAE4 = "spmv_sell_dae<float, 1, 3, 1, 4, 6, 1>"  # <T, IDX, B, HINT, STAGE, MINB, TPR>
TILE_I1 = "spmv_tile<float, 0, 1, 256, 1, 0, 0, 0>"  # <T, IDX, HINT, BLOCK, ITERS, HUB, FINISH,
TILE_I2 = "spmv_tile<float, 0, 1, 256, 2, 0, 0, 0>"  #  WARP_ROWS>
OWN = (SELL_U4, SELL_U2_T2, DELTA16_U4, BLOCKED3_U2, DAE4, TILE_I1, TILE_I2)

_tools_missing = pytest.mark.skipif(not ks.sass_tools_available(),
                                    reason="no CUDA compiler (libnvrtc or nvcc) or no cuobjdump: "
                                           "kernel shapes cannot be read from SASS here")


def compiles(test):
    """A test that compiles own kernels (about 1 s a program): skipped without the tools."""
    return pytest.mark.slow(_tools_missing(test))


def _declared(kernel: str = "csr_scalar<float, int>", **kw) -> KernelShape:
    base = dict(kernel=kernel, decomposition="rows", block_threads=256, grid_blocks=40,
                nnz_per_iteration=1, rounds_per_iteration=2)
    return KernelShape(**{**base, **kw})


def _mlp(**kw) -> KernelMLP:
    """csr_scalar<float, int> as NVRTC 13.5 builds it for sm_90."""
    base = dict(kernel="csr_scalar<float, int>", loop_found=True, loads_per_iteration=48,
                independent_batch=14, batch_bytes_per_thread=56, rounds_per_iteration=2,
                bytes_per_thread_per_iteration=192, staged=False, evidence=(),
                loop_span=(0x4E0, 0xA60), gathers_per_iteration=16, gather_rounds=2,
                remainder_span=(0x2B0, 0x3B0), remainder_loads_per_iteration=3,
                remainder_gathers_per_iteration=1, peeled_gathers=12, arch="sm_90",
                compiler="nvrtc 13.5")
    return KernelMLP(**{**base, **kw})


# --------------------------------------------------------------------------- pure


def test_shape_from_sass_takes_unroll_remainder_and_rounds():
    declared = _declared(setup_rounds=1, sort_window=7)
    got = shape_from_sass(declared, _mlp())
    assert (got.nnz_per_iteration, got.remainder_step, got.rounds_per_iteration) == (16, 1, 2)
    # the 12 gathers outside every loop: copies of 8 + 4 nonzeros of the body
    assert got.peeled_nonzeros == 12
    assert got.source == "SASS of csr_scalar<float, int> (sm_90, nvrtc 13.5)"
    # everything else is the backend's
    assert replace(got, nnz_per_iteration=1, remainder_step=0, peeled_nonzeros=0,
                   source=declared.source) == declared
    # the same from loads: 48 / 3 and 3 / 3
    assert shape_from_sass(declared, _mlp(), loads_per_nonzero=3) == got


def test_peeled_nonzeros_are_copies_of_fewer_than_a_step():
    # spmv_sell UNROLL 4: 8 gathers an 8-nonzero step, its odd 4-step peeled
    sell = _mlp(loads_per_iteration=24, gathers_per_iteration=8, peeled_gathers=4,
                remainder_span=None, remainder_loads_per_iteration=0,
                remainder_gathers_per_iteration=0)
    assert shape_from_sass(_declared(), sell, loads_per_nonzero=3).peeled_nonzeros == 4
    # none peeled, or as many as a whole step (not a tail's copy): 0
    assert shape_from_sass(_declared(), _mlp(peeled_gathers=0)).peeled_nonzeros == 0
    assert shape_from_sass(_declared(), _mlp(peeled_gathers=16)).peeled_nonzeros == 0


def test_shape_from_sass_carries_instructions_and_spills():
    mlp = _mlp(loop_instructions=89, remainder_instructions=17, other_instructions=145,
               local_bytes_per_iteration=16, local_store_bytes_per_iteration=12,
               local_frame_bytes=24)
    got = shape_from_sass(_declared(), mlp)
    assert (got.loop_instructions, got.remainder_instructions, got.other_instructions) == (
        89, 17, 145)
    assert (got.local_bytes_per_iteration, got.local_store_bytes_per_iteration,
            got.local_frame_bytes) == (16, 12, 24)
    # without a remainder loop its body is issued once a warp: counted with the rest
    once = shape_from_sass(_declared(), _mlp(loop_instructions=89, remainder_instructions=17,
                                              other_instructions=145, remainder_span=None,
                                              remainder_loads_per_iteration=0,
                                              remainder_gathers_per_iteration=0))
    assert (once.remainder_step, once.remainder_instructions, once.other_instructions) == (
        0, 0, 162)


def test_shape_from_sass_blocked_loads_per_nonzero():
    # 1 x 3 blocks, delta16, UNROLL 2: 2 x (offset + 3 values + escape + 3 gathers) = 16 loads
    mlp = _mlp(kernel=BLOCKED3_U2, loads_per_iteration=16, gathers_per_iteration=6,
               remainder_span=None, remainder_loads_per_iteration=0,
               remainder_gathers_per_iteration=0)
    declared = _declared(BLOCKED3_U2, nnz_per_iteration=6)
    assert shape_from_sass(declared, mlp).nnz_per_iteration == 6
    assert shape_from_sass(declared, mlp, loads_per_nonzero(BLOCKED3_U2)).nnz_per_iteration == 6
    assert shape_from_sass(declared, mlp).remainder_step == 0


def test_shape_from_sass_rounds_rules():
    # staged (cp.async): the chain through shared memory is invisible -> declared rounds kept
    staged = shape_from_sass(_declared(DAE4, staged=True),
                             _mlp(kernel=DAE4, staged=True, gather_rounds=1))
    assert staged.rounds_per_iteration == 2
    # tile -> col -> x inside a grid-stride loop: the tile is setup, at most 2 rounds
    assert shape_from_sass(_declared(), _mlp(gather_rounds=3)).rounds_per_iteration == 2
    # columns loaded an iteration ahead: 1 round
    assert shape_from_sass(_declared(), _mlp(gather_rounds=1)).rounds_per_iteration == 1
    # no gathers named (a listing read without its source): nothing to take
    blind = _mlp(gathers_per_iteration=0, gather_rounds=0, remainder_gathers_per_iteration=0,
                 arch="", compiler="")
    assert shape_from_sass(_declared(), blind) == _declared()
    # ... unless loads per nonzero are given: 48 / 3, rounds declared
    by_loads = shape_from_sass(_declared(rounds_per_iteration=3), blind, loads_per_nonzero=3)
    assert (by_loads.nnz_per_iteration, by_loads.remainder_step,
            by_loads.rounds_per_iteration) == (16, 1, 3)
    assert by_loads.source == "SASS of csr_scalar<float, int>"
    # a "remainder" as wide as the main loop is none
    assert shape_from_sass(_declared(), _mlp(remainder_gathers_per_iteration=16)
                           ).remainder_step == 0


def test_loads_per_nonzero_from_template_arguments():
    assert loads_per_nonzero("csr_scalar<float, int>") == 3
    assert loads_per_nonzero("csr_vector<double, long long, 8>") == 3
    assert loads_per_nonzero(SELL_U4) == 3
    assert loads_per_nonzero(DELTA16_U4) == 4
    assert loads_per_nonzero(BLOCKED3_U2) == Fraction(8, 3)
    assert loads_per_nonzero(TILE_I1) is None and loads_per_nonzero(DAE4) is None


# --------------------------------------------------------------------------- no tools


@pytest.fixture
def fresh_cache():
    kernel_mlp_of.cache_clear()
    yield
    kernel_mlp_of.cache_clear()
    _tools._find_cached.cache_clear()


def _hide(monkeypatch, *tools: str, nvrtc: bool = False) -> None:
    real = _tools.find_tool

    def find(tool: str):
        return None if tool in tools else real(tool)

    for module in (_tools, extract, ks):
        monkeypatch.setattr(module, "find_tool", find)
    if nvrtc:
        def missing():
            raise MissingDependencyError("libnvrtc hidden by the test")
        monkeypatch.setattr(extract, "_nvrtc_library", missing)


def test_refine_without_a_compiler_returns_the_declared_shape(monkeypatch, fresh_cache):
    _hide(monkeypatch, "nvcc", nvrtc=True)
    declared = _declared()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kernel_mlp_of("spmv_csr.cu", "csr_scalar<float, int>") is None
        assert refine(declared, "spmv_csr.cu", "sm_90") is declared
    assert not ks.sass_tools_available()


def test_refine_without_cuobjdump_returns_the_declared_shape(monkeypatch, fresh_cache):
    if not extract.nvrtc_available() and _tools.find_tool("nvcc") is None:
        pytest.skip("no CUDA compiler (libnvrtc or nvcc): nothing to compile before the "
                    "missing disassembler")
    _hide(monkeypatch, "cuobjdump", "nvdisasm")
    declared = _declared()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert refine(declared, "spmv_csr.cu", "sm_90") is declared


# --------------------------------------------------------------------------- compiled


@compiles
def test_nvrtc_name_expressions_give_lowered_names(tmp_path):
    if not extract.nvrtc_available():
        pytest.skip("libnvrtc not found (pip install nvidia-cuda-nvrtc)")
    from sparsescope.hardware._gpu_runtime import kernel_source

    got = compile_cuda(kernel_source("spmv_csr.cu"), "sm_90", out_dir=tmp_path,
                       options=("-std=c++17",), compiler="nvrtc",
                       name_expressions=("csr_vector<float, int, 8>",))
    assert got.compiler == "nvrtc" and got.version
    assert got.lowered_names == {
        "csr_vector<float, int, 8>": "_Z10csr_vectorIfiLi8EEvxPKT0_S2_PKT_S5_PS3_"}
    assert "_Z10csr_vectorIfiLi8EEvxPKT0_S2_PKT_S5_PS3_" in got.ptxas_log


@pytest.fixture(scope="module")
def own():
    return kernel_mlps_of("spmv_own.cu", OWN, "sm_90")


def _figures(m: KernelMLP) -> tuple:
    """(gathers, gather rounds, remainder gathers, peeled gathers, loads) per iteration."""
    return (m.gathers_per_iteration, m.gather_rounds, m.remainder_gathers_per_iteration,
            m.peeled_gathers, m.loads_per_iteration)


@compiles
def test_csr_scalar_sass():
    m = kernel_mlp_of("spmv_csr.cu", "csr_scalar<float, int>")
    assert m is not None and m.kernel == "csr_scalar<float, int>" and m.arch == "sm_90"
    # 16x loop: 16 col, 16 val, 16 x (LDG.E.CONSTANT, 4 bytes each); col -> x: 2 rounds
    assert _figures(m) == (16, 2, 1, 12, 48) and m.bytes_per_thread_per_iteration == 192
    # the remainder loop (n mod 4 nonzeros, before the 16x loop): col, val, x
    assert m.remainder_loads_per_iteration == 3
    assert m.remainder_span[1] < m.loop_span[0]
    assert 12 <= m.independent_batch <= 16 and not m.staged
    shape = refine(_declared(), "spmv_csr.cu", "sm_90")
    assert (shape.nnz_per_iteration, shape.remainder_step, shape.rounds_per_iteration) == (16, 1, 2)
    assert shape.source.startswith("SASS of csr_scalar<float, int> (sm_90, ")
    assert kernel_mlp_of("spmv_csr.cu", "csr_scalar<float, int>") is m  # cached


@compiles
def test_csr_vector_sass():
    m = kernel_mlp_of("spmv_csr.cu", "csr_vector<float, int, 8>")
    # the same 16x loop per thread (stride 8 elements: [R16.64+-0x40 .. +0x1a0]) and tail
    assert _figures(m) == (16, 2, 1, 12, 48)
    shape = refine(_declared("csr_vector<float, int, 8>", threads_per_row=8), "spmv_csr.cu")
    assert (shape.nnz_per_iteration, shape.remainder_step, shape.threads_per_row) == (16, 1, 8)


@compiles
def test_sell_sass(own):
    # UNROLL 4: the loop unrolled once more, 8 steps of col, val, x per SASS iteration, the odd
    # first UNROLL peeled; the second half's gathers wait for columns of the same iteration
    assert _figures(own[SELL_U4]) == (8, 2, 0, 4, 24)
    # UNROLL 2 (TPR 2 changes only the shuffles): 8 steps too, remainder loop of one UNROLL
    assert _figures(own[SELL_U2_T2]) == (8, 2, 2, 0, 24)
    shape = shape_from_sass(_declared(SELL_U2_T2, threads_per_row=2, nnz_per_iteration=2),
                            own[SELL_U2_T2])
    assert (shape.nnz_per_iteration, shape.remainder_step, shape.rounds_per_iteration) == (8, 2, 2)


@compiles
def test_sass_registers_set_the_occupancy_of_a_host_plan(own):
    """minb bounds the registers (__launch_bounds__(256, MINB)): 65536 / (256 x 6) -> at most
    42, i.e. 40 allocated, 6 blocks; MINB 8 -> at most 32, 8 blocks. The SASS's registers
    reach the shape, so a plan made without the device knows the occupancy."""
    from sparsescope.model.kernel_shape import resident_blocks

    u4 = shape_from_sass(_declared(SELL_U4), own[SELL_U4])
    u2 = shape_from_sass(_declared(SELL_U2_T2, threads_per_row=2), own[SELL_U2_T2])
    assert 32 < own[SELL_U4].registers <= 40 and 0 < own[SELL_U2_T2].registers <= 32
    assert (u4.registers, u2.registers) == (own[SELL_U4].registers, own[SELL_U2_T2].registers)
    assert resident_blocks(replace(u4, block_threads=256), 2048, 32) == 6
    assert resident_blocks(replace(u2, block_threads=256), 2048, 32) == 8


@compiles
def test_delta16_and_blocked_sass(own):
    # delta16 UNROLL 4: not unrolled further; 4 x (u16 offset, value, escape, gather)
    assert _figures(own[DELTA16_U4]) == (4, 2, 0, 0, 16)
    assert own[DELTA16_U4].loads_per_iteration / loads_per_nonzero(DELTA16_U4) == 4
    # 1 x 3 blocks, UNROLL 2: 2 x (offset, 3 values, escape, 3 gathers): 6 nonzeros
    assert _figures(own[BLOCKED3_U2]) == (6, 2, 0, 0, 16)
    assert own[BLOCKED3_U2].loads_per_iteration / loads_per_nonzero(BLOCKED3_U2) == 6


@compiles
def test_dae_sass(own):
    m = own[DAE4]
    # the chunk loop (not the innermost cp.async copy loops): STAGE 4 steps x 3 gathers, the
    # columns read from shared memory; cp.async pieces staged (LDGSTS)
    assert m.staged and m.gathers_per_iteration == 12
    shape = shape_from_sass(_declared(DAE4, staged=True, nnz_per_iteration=12,
                                      rounds_per_iteration=2), m)
    assert (shape.nnz_per_iteration, shape.rounds_per_iteration) == (12, 2)


@compiles
def test_tile_sass(own):
    # the tile loop holds ITERS chunks of 4 gathers; its chain tile -> col -> x is 3 deep
    assert _figures(own[TILE_I1])[:4] == (4, 3, 0, 0)
    assert _figures(own[TILE_I2])[:4] == (8, 3, 0, 0)
    shape = shape_from_sass(_declared(TILE_I2, decomposition="nnz", nnz_per_iteration=8),
                            own[TILE_I2])
    assert (shape.nnz_per_iteration, shape.rounds_per_iteration) == (8, 2)


def _stops(m: KernelMLP) -> tuple[float, float]:
    stops = m.schedule.stops()
    return stops.stream_stops, stops.gather_stops


@compiles
def test_issue_schedules_of_the_own_kernels(own):
    """The stops a warp makes per SASS iteration in issue order (``sass.issue_order``), read
    by hand from the listings: what the chain count (2 rounds for all) does not show."""
    # UNROLL 4 (40 registers): the 8 steps' columns in one batch, then their gathers: 1 + 1
    assert _stops(own[SELL_U4]) == (1, 1)
    # UNROLL 2 (32 registers): four copies of the 2-step body, each copy's gathers waiting for
    # the columns the copy before it loaded: 3 stream and 3 gather stops per 8 steps
    assert _stops(own[SELL_U2_T2]) == (3, 3)
    # delta16: the escape loads sit in blocks the loop goes around (an escape is rare): not
    # walked, 12 of the loop's 16 loads in the schedule
    delta = own[DELTA16_U4]
    assert (delta.loads_per_iteration, len(delta.schedule.kinds)) == (16, 12)
    assert _stops(delta) == (1, 1)
    # spmv_tile's tile loop holds its row-pointer loop, which runs as often as the matrix says:
    # no schedule, the declared rounds stand
    assert own[TILE_I1].schedule is None and own[TILE_I2].schedule is None
    # the schedule reaches the shape, but not a staged kernel's: its waits go through shared
    # memory, which the walk cannot follow
    assert shape_from_sass(_declared(SELL_U4), own[SELL_U4]).issue_schedule is \
        own[SELL_U4].schedule
    staged = shape_from_sass(_declared(DAE4, staged=True, nnz_per_iteration=12), own[DAE4])
    assert staged.issue_schedule is None
