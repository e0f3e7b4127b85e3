"""Own kernels' instances of several sources compiled in as few programs as idle cores want
(``sass.programs``, ``sass.kernel_shape.read_instances``): which instances go into which
program, a program's text, work counts with a fake compiler, and the facts of the one-program
path against the source-at-a-time path (the committed H200 listing; the real nvcc where
present). Counted, never timed."""

from __future__ import annotations

import re
import warnings

import pytest

from sparsescope.errors import MissingDependencyError
from sparsescope.sass import kernel_shape as ks
from sparsescope.sass import programs, sass_cache
from sparsescope.sass.analysis import analyse_listing
from sparsescope.sass.listing import read_listing
from sparsescope.sass.mlp import KernelMLP, kernel_mlp
from sparsescope.sass.programs import Program, plan_programs, program_count, program_text

CSR = ("csr_scalar<float, int>", "csr_vector<float, int, 2>")
OWN = tuple(f"spmv_sell<float, 0, 1, 1, {u}, 6, {t}>" for u in (1, 2, 3, 4, 5) for t in (1, 2))
TEXTS = {"a.cu": "#define FULL 1\ntemplate <int N> __global__ void k(float* x) {}\n",
         "b.cu": "template <int N> __global__ void k(float* x) { x[0] = N; }\n",
         "inc.cu": '#include "other.cuh"\ntemplate <int N> __global__ void k(float* x) {}\n',
         "c.cu": 'extern "C" __global__ void plain(float* x) {}\n'}


def _mlp(expr: str) -> KernelMLP:
    return KernelMLP(kernel=expr, loop_found=True, loads_per_iteration=12,
                     independent_batch=4, batch_bytes_per_thread=16, rounds_per_iteration=2,
                     bytes_per_thread_per_iteration=48, staged=False, evidence=("fake",),
                     gathers_per_iteration=4, arch="sm_90", compiler="fake 1.0")


# --------------------------------------------------------------------------- planning


def test_program_count_one_per_idle_core_of_enough_instances():
    assert program_count(17, 1) == 1          # a busy machine: one program, one fixed cost
    assert program_count(17, 2) == 2          # two idle cores, 8 and 9 instances
    assert program_count(17, 16) == 2         # never fewer than 6 instances a program
    assert program_count(5, 4) == 1
    assert program_count(0, 4) == 1


def test_every_mergeable_source_shares_one_program_on_one_core():
    plan = plan_programs([("a.cu", ["k<1>", "k<2>"]), ("b.cu", ["k<3>"])], TEXTS, cores=1)
    assert plan == [Program((("a.cu", ("k<1>", "k<2>")), ("b.cu", ("k<3>",))))]
    assert plan[0].instances == 3 and plan[0].sources == ("a.cu", "b.cu")


def test_idle_cores_cut_the_instances_into_near_equal_programs():
    texts = {"spmv_csr.cu": TEXTS["b.cu"], "spmv_own.cu": TEXTS["b.cu"]}
    plan = plan_programs([("spmv_csr.cu", CSR), ("spmv_own.cu", OWN)], texts, cores=2)
    assert [p.instances for p in plan] == [6, 6]
    assert plan[0].parts == (("spmv_csr.cu", CSR), ("spmv_own.cu", OWN[:4]))
    assert plan[1].parts == (("spmv_own.cu", OWN[4:]),)


def test_a_source_that_includes_or_declares_c_names_is_compiled_alone():
    assert not programs.mergeable(TEXTS["inc.cu"]) and not programs.mergeable(TEXTS["c.cu"])
    plan = plan_programs([("a.cu", ["k<1>"]), ("inc.cu", ["k<2>"]), ("c.cu", ["plain"]),
                          ("b.cu", ["k<3>"])], TEXTS, cores=1)
    assert plan == [Program((("a.cu", ("k<1>",)), ("b.cu", ("k<3>",)))),
                    Program((("inc.cu", ("k<2>",)),)), Program((("c.cu", ("plain",)),))]


def test_one_source_is_compiled_as_its_own_text():
    unit = program_text(Program((("a.cu", ("k<1>", "k<2>")),)), TEXTS)
    assert unit.text == TEXTS["a.cu"] and unit.namespaces == {}
    assert unit.names == {("a.cu", "k<1>"): "k<1>", ("a.cu", "k<2>"): "k<2>"}


def test_several_sources_each_in_a_namespace_numbered_from_line_one():
    unit = program_text(Program((("a.cu", ("k<1>",)), ("b.cu", ("k<3>",)))), TEXTS)
    assert unit.namespaces == {"a.cu": "sparsescope_source_0", "b.cu": "sparsescope_source_1"}
    assert unit.names == {("a.cu", "k<1>"): "sparsescope_source_0::k<1>",
                          ("b.cu", "k<3>"): "sparsescope_source_1::k<3>"}
    assert unit.text == ('namespace sparsescope_source_0 {\n#line 1 "a.cu"\n' + TEXTS["a.cu"]
                         + "\n}\n#undef FULL\n"
                         'namespace sparsescope_source_1 {\n#line 1 "b.cu"\n' + TEXTS["b.cu"]
                         + "\n}\n")
    assert programs.without_namespace(
        "void sparsescope_source_1::k<3>(float*)", "sparsescope_source_1") == "void k<3>(float*)"


# --------------------------------------------------------------------------- work counts


@pytest.fixture
def fake_programs(monkeypatch, tmp_path):
    """A compiler recording each program (its parts), an empty cache folder, a fixed toolchain;
    failing on any program holding ``bad<0>``."""
    monkeypatch.setenv("SPARSESCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(sass_cache, "toolchain", lambda: "fake nvcc 1.0; fake nvdisasm 1.0")
    seen: list[tuple] = []

    def compile_program(program, arch):
        seen.append(program.parts)
        if any("bad<0>" in exprs for _, exprs in program.parts):
            from sparsescope._tools import ToolError
            raise ToolError("nvcc failed: no instance bad<0>")
        return {(s, e): _mlp(e) for s, exprs in program.parts for e in exprs}

    monkeypatch.setattr(ks, "_compile_program", compile_program)
    monkeypatch.setattr(ks, "idle_cores", lambda: 1)
    ks.kernel_mlp_of.cache_clear()
    yield seen
    ks.kernel_mlp_of.cache_clear()


def test_two_sources_of_a_what_if_are_one_compiler_run(fake_programs):
    before = dict(sass_cache.COUNTS)
    ks.prefetch_all({"spmv_csr.cu": list(CSR), "spmv_own.cu": list(OWN[:3]) + [OWN[0]]},
                    "sm_90")
    assert fake_programs == [(("spmv_csr.cu", CSR), ("spmv_own.cu", OWN[:3]))]
    counts = {k: sass_cache.COUNTS[k] - before.get(k, 0) for k in sass_cache.COUNTS}
    assert {k: n for k, n in counts.items() if n} == {"programs": 1, "instances": 5,
                                                     "stored": 5}
    assert ks.kernel_mlp_of("spmv_own.cu", OWN[1], "sm_90") == _mlp(OWN[1])
    ks.prefetch_all({"spmv_csr.cu": [CSR[1]], "spmv_own.cu": [OWN[2]]}, "sm_90")
    assert len(fake_programs) == 1  # answered in the process: nothing compiled again


def test_with_two_idle_cores_the_instances_run_as_two_programs(fake_programs, monkeypatch):
    monkeypatch.setattr(ks, "idle_cores", lambda: 2)
    found = ks.read_instances({"spmv_csr.cu": CSR, "spmv_own.cu": OWN}, "sm_90")
    assert sorted(len(parts) for parts in fake_programs) == [1, 2]
    assert sorted(sum(len(e) for _, e in parts) for parts in fake_programs) == [6, 6]
    assert found["spmv_own.cu"][OWN[9]] == _mlp(OWN[9])
    # the next process finds all twelve on disk and compiles nothing
    ks.kernel_mlp_of.cache_clear()
    again = ks.read_instances({"spmv_csr.cu": CSR, "spmv_own.cu": OWN}, "sm_90")
    assert len(fake_programs) == 2 and again == found


def test_a_failing_program_is_compiled_again_a_source_at_a_time(fake_programs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = ks.read_instances({"spmv_csr.cu": CSR, "spmv_own.cu": ["bad<0>", OWN[0]]},
                                  "sm_90")
    assert fake_programs == [(("spmv_csr.cu", CSR), ("spmv_own.cu", ("bad<0>", OWN[0]))),
                             (("spmv_csr.cu", CSR),), (("spmv_own.cu", ("bad<0>", OWN[0])),)]
    assert found == {"spmv_csr.cu": {e: _mlp(e) for e in CSR},
                     "spmv_own.cu": {"bad<0>": None, OWN[0]: None}}
    assert [str(w.message) for w in caught] == [
        f"no SASS for bad<0>, {OWN[0]} of spmv_own.cu: nvcc failed: no instance bad<0>"]


def test_a_missing_tool_reads_nothing_and_compiles_nothing(fake_programs, monkeypatch):
    def missing():
        raise MissingDependencyError("nvdisasm hidden by the test")

    monkeypatch.setattr(sass_cache, "toolchain", missing)
    found = ks.read_instances({"spmv_csr.cu": CSR}, "sm_90")
    assert found == {"spmv_csr.cu": {e: None for e in CSR}} and fake_programs == []


# --------------------------------------------------------------------------- same facts


def _sections(text: str) -> list[str]:
    """The nvdisasm listing's header and each function's section, as listed."""
    cuts = [m.start() for m in re.finditer(r"^//-+ \.text\.", text, re.M)]
    return [text[:cuts[0]]] + [text[a:b] for a, b in
                               zip(cuts, [*cuts[1:], len(text)], strict=True)]


def test_a_kernel_reads_the_same_alone_or_among_other_programs_kernels(h200_fixtures, tmp_path):
    """The committed H200 listing (two kernels, their source naming the loads): each kernel's
    facts from the whole listing (one program) equal those from a listing of it alone (a
    program a kernel) and from one whose functions come in the other order; and a name read
    in a program's namespace, once the namespace is taken off, gives the facts of the plain
    name (with it, the schedule would be named after the namespace)."""
    text = (h200_fixtures / "spmv_kernels_sm90.nvdisasm.txt").read_text()
    source = (h200_fixtures / "spmv_kernels.cu").read_text()
    head, *functions = _sections(text)
    assert len(functions) == 2
    signature = "(int, int const*, int const*, float const*, float const*, float*)"

    def facts(listing_text: str, space: str = "") -> dict[str, KernelMLP]:
        path = tmp_path / "listing.txt"
        path.write_text(listing_text)
        out = {}
        for k in read_listing(path):
            demangled = f"void {space}{k.name}{signature}"
            if space:
                demangled = programs.without_namespace(demangled, space.rstrip(":"))
            out[k.name] = kernel_mlp(analyse_listing(k, demangled=demangled, source=source),
                                     gather_param="x")
        return out

    whole = facts(text)
    assert sorted(whole) == ["spmv_csr_scalar", "spmv_csr_vector8"]
    scalar = whole["spmv_csr_scalar"]
    assert (scalar.gathers_per_iteration, scalar.loads_per_iteration) == (16, 48)
    assert scalar.schedule is not None and scalar.schedule.source == "spmv_csr_scalar"
    alone = {}
    for section in functions:
        alone.update(facts(head + section))
    assert alone == whole
    assert facts(head + functions[1] + functions[0]) == whole
    assert facts(text, "sparsescope_source_1::") == whole
    [listing] = [k for k in read_listing(tmp_path / "listing.txt") if k.name == "spmv_csr_scalar"]
    spaced = kernel_mlp(analyse_listing(
        listing, demangled=f"void sparsescope_source_1::spmv_csr_scalar{signature}",
        source=source), gather_param="x")
    assert spaced.schedule.source == "sparsescope_source_1::spmv_csr_scalar" != \
        scalar.schedule.source


@pytest.mark.slow
def test_one_program_gives_the_facts_of_a_program_per_source(monkeypatch):
    """The real compiler: spmv_csr.cu's and spmv_own.cu's instances compiled a source at a time
    (two nvcc runs, two disassemblies) and as one program (one of each): the same
    :class:`KernelMLP` for every instance, schedules and registers included."""
    if not ks.sass_tools_available():
        pytest.skip("no CUDA compiler and cuobjdump here")
    from sparsescope import _tools

    runs: list[str] = []
    real = _tools.run_tool

    def counted(tool, args, **kw):
        if tool != "cuobjdump" and "--version" not in args:
            runs.append(tool)
        return real(tool, args, **kw)

    monkeypatch.setattr("sparsescope.sass.extract.run_tool", counted)
    own = ("spmv_sell<float, 0, 1, 1, 4, 6, 1>", "spmv_tile<float, 0, 1, 256, 1, 0, 0, 0>")
    apart = {}
    for part in (("spmv_csr.cu", CSR[:1]), ("spmv_own.cu", own)):
        apart.update(ks._compile_program(Program((part,)), "sm_90"))
    nvcc = runs.count("nvcc")  # 0 where NVRTC compiles in the process
    assert runs.count("nvdisasm") == 2 and nvcc in (0, 2)
    runs.clear()
    together = ks._compile_program(Program((("spmv_csr.cu", CSR[:1]), ("spmv_own.cu", own))),
                                   "sm_90")
    assert runs.count("nvdisasm") == 1 and runs.count("nvcc") == nvcc // 2
    assert together == apart and len(together) == 3
    tile = together[("spmv_own.cu", own[1])]
    assert tile.kernel == own[1] and tile.gathers_per_iteration == 4 and tile.registers > 0
