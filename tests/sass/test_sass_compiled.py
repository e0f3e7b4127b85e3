"""Kernels compiled here with nvcc (sm_80 and sm_90): the col -> x chain for int32, uint32 and
int64 column indices, none in a streaming copy; extraction, tools and speed."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from sparsescope import _tools
from sparsescope._tools import ToolError, demangle, find_tool
from sparsescope.errors import MissingDependencyError, UsageError
from sparsescope.sass.analysis import analyse_file, analyse_source
from sparsescope.sass.extract import compile_cuda, is_cubin, iter_kernels, list_kernels

#: index type -> the address arithmetic between LDG col[j] and LDG x[col]
VIA = {"int": ("IMAD.WIDE",), "unsigned int": ("IMAD.WIDE.U32",),
       "long long": ("LEA", "LEA.HI.X")}


@pytest.fixture(scope="module")
def fatbin_analyses(fatbin_80_90, kernels_cu):
    return {arch: analyse_file(fatbin_80_90, arch=arch, source=kernels_cu)
            for arch in ("sm_80", "sm_90")}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("index_type", list(VIA))
def test_col_to_x_chain_per_index_type(fatbin_analyses, arch, index_type):
    (a,) = [k for k in fatbin_analyses[arch] if f"spmv_csr<{index_type}>" in k.demangled]
    assert a.arch == arch
    loop = [c for c in a.loop_chains if c.label == "col -> x"]
    assert loop, "no col -> x chain inside a loop"
    assert Counter(tuple(v.mnemonic for v in c.via) for c in loop).most_common(1)[0][0] == \
        VIA[index_type]
    assert all(c.loads[0].text.startswith("LDG") and c.loads[1].text.startswith("LDG")
               for c in loop)
    assert a.resources is not None and a.resources.registers > 0


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_streaming_copy_has_no_chain(fatbin_analyses, arch):
    (a,) = [k for k in fatbin_analyses[arch] if k.name == "stream_copy"]
    assert a.load_chains == () and a.max_chain_depth == 0
    assert a.classes["LDG"] == 1 and a.classes["STG"] == 1 and len(a.cfg.loops) == 1


def test_param_base_per_arch(fatbin_analyses):
    assert {a.param_base for a in fatbin_analyses["sm_80"]} == {0x160}
    assert {a.param_base for a in fatbin_analyses["sm_90"]} == {0x210}


def test_list_kernels_regex_on_demangled_name(fatbin_80_90):
    got = list_kernels(fatbin_80_90, arch="sm_90", kernel=r"spmv_csr<(unsigned )?int>")
    assert sorted(e.demangled for e in got) == [
        "void spmv_csr<int>(int, int const*, int const*, float const*, float const*, float*)",
        "void spmv_csr<unsigned int>(int, unsigned int const*, unsigned int const*, "
        "float const*, float const*, float*)"]
    assert {e.arch for e in got} == {"sm_90"}
    pairs = list(iter_kernels(fatbin_80_90, arch="sm_80", kernel="stream_copy"))
    assert [(e.name, lst.arch, lst.listing_format) for e, lst in pairs] == \
        [("stream_copy", "sm_80", "cuobjdump")]
    with pytest.raises(UsageError, match="regular expression"):
        list_kernels(fatbin_80_90, kernel="(")


def test_compile_source_keeps_lines_and_names(tmp_path, kernels_cu):
    if find_tool("nvcc") is None:
        pytest.skip("nvcc not found")
    t0 = time.perf_counter()
    kernels = analyse_source(kernels_cu, arch="sm_90", kernel="spmv_big|stream_copy",
                             out_dir=tmp_path)
    assert {k.name for k in kernels} == {"spmv_big", "stream_copy"}
    big = next(k for k in kernels if k.name == "spmv_big")
    assert is_cubin(tmp_path / "kernels_sm_90.cubin")
    assert big.listing_format == "nvdisasm" and big.resources.source == "cuobjdump+ptxas"
    lines = kernels_cu.read_text().splitlines()
    loop_line = lines.index("    #pragma unroll 176") + 2  # 1-based line after the pragma
    assert any(i.source_line == loop_line for i in big.instructions)
    assert {c.label for c in big.loop_chains} == {"col -> x"}
    assert time.perf_counter() - t0 < 30


def test_1200_instruction_listing_analyses_in_under_a_second(fatbin_80_90):
    (entry, listing), = iter_kernels(fatbin_80_90, arch="sm_90", kernel="spmv_big")
    assert 1000 <= len(listing.instructions) <= 1600
    from sparsescope.sass.analysis import analyse_listing

    t0 = time.perf_counter()
    a = analyse_listing(listing, demangled=entry.demangled, resources=entry.resources)
    assert time.perf_counter() - t0 < 1.0
    assert len(a.loop_chains) >= 100


def test_tool_errors(tmp_path, monkeypatch):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x7fELF" + bytes(200))
    if find_tool("cuobjdump") is not None:
        with pytest.raises(ToolError, match="cuobjdump cannot read it"):
            list_kernels(junk)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(_tools, "candidate_dirs", lambda tool: [])
    _tools._find_cached.cache_clear()
    with pytest.raises(MissingDependencyError, match=r"sparsescope\[profile\]"):
        list_kernels(junk)
    with pytest.raises(MissingDependencyError, match="CUDA toolkit"):
        _tools.require_tool("nvcc")
    _tools._find_cached.cache_clear()


def test_demangle():
    if find_tool("c++filt") is None:
        pytest.skip("c++filt not found")
    got = demangle(["_Z3fooPKf", "plain_c"])
    assert got == {"_Z3fooPKf": "foo(float const*)", "plain_c": "plain_c"}


def test_nvrtc_fallback(tmp_path, monkeypatch, h200_fixtures):
    """Compile with NVRTC when nvcc is absent (runs where libnvrtc can be loaded)."""
    from sparsescope.sass import extract

    try:
        extract._nvrtc_library()
    except MissingDependencyError:
        pytest.skip("libnvrtc not found (set SPARSESCOPE_NVRTC to test the NVRTC path)")
    real = extract.find_tool
    monkeypatch.setattr(extract, "find_tool", lambda t: None if t == "nvcc" else real(t))
    compiled = compile_cuda((h200_fixtures / "spmv_kernels.cu").read_text(), "sm_90",
                            out_dir=tmp_path)
    assert compiled.compiler == "nvrtc" and is_cubin(compiled.cubin)
    assert "Used 32 registers" in compiled.ptxas_log


def test_relative_includes_resolve_and_no_temporary_folder_is_left(tmp_path, monkeypatch):
    """A .cu that includes a header beside it compiles where it lies (its line info names the
    real files), and analyse_source leaves no temporary folder behind."""
    import tempfile

    if find_tool("nvcc") is None:
        pytest.skip("nvcc not found")
    work = tmp_path / "src"
    work.mkdir()
    (work / "scale.cuh").write_text(
        "__device__ inline float scaled(const float* a, int i) { return 2.0f * a[i]; }\n")
    (work / "k.cu").write_text('#include "scale.cuh"\n'
                               "__global__ void k(const float* a, float* b) {\n"
                               "    b[threadIdx.x] = scaled(a, threadIdx.x);\n"
                               "}\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    (a,) = analyse_source(work / "k.cu", arch="sm_90")
    assert "k(" in a.demangled and a.resources.registers > 0
    assert list(scratch.iterdir()) == []
