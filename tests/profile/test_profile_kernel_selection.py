"""Which launches ``profile run`` hands ncu: the backend's own kernels of the checked call.

The patterns are checked with Python's ``re`` standing in for ncu's matcher, both ways ncu might
apply them (a search, a whole-name match), on the kernel names of the real H200 recordings."""

from __future__ import annotations

import csv
import re
import sys

import pytest

from sparsescope.profile import metrics as M
from sparsescope.profile.collect import build_ncu_command, selected_options, target_command
from sparsescope.profile.kernel_selection import (
    LIBRARY_KERNELS,
    KernelSelection,
    global_function_names,
    names_filter,
    own_kernel_names,
    select_kernels,
)

SOURCE = r'''
template <typename T, int BLOCK, bool FINISH>
__global__ void __launch_bounds__(BLOCK, FINISH ? (BLOCK == 1 ? 2048 : 1536) / BLOCK : 1)
tile_kernel(const T* x, T* y) { helper(x); }
__device__ float helper(const float* x) { return x[0]; }
extern "C" __global__ void plain(int n) {}
template <int N> __global__ void tile_kernel(const int* x);   // a second declaration
__global__ void __launch_bounds__(256, 2) spmm_rowwarp(const long long n) {}
'''


def _ncu_matches(pattern: str, name: str) -> tuple[bool, bool]:
    """(as a search, as a whole-name match) of an ncu ``regex:`` filter, or of a plain name."""
    if not pattern.startswith("regex:"):
        return name == pattern, name == pattern
    expr = pattern[len("regex:"):]
    return re.search(expr, name) is not None, re.fullmatch(expr, name) is not None


def _recorded_kernels(path) -> list[str]:
    """Demangled kernel names of a raw metric-group recording (header after ncu's lines)."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.DictReader(lines[start:]))[1:]                # row 2: the units
    return sorted({r["Kernel Name"] for r in rows})


def test_global_function_names_skip_qualifiers_and_device_functions():
    assert global_function_names(SOURCE) == ("tile_kernel", "plain", "spmm_rowwarp")
    assert global_function_names("__device__ void f() {}") == ()


def test_own_kernel_names_are_our_backends_kernels():
    names = own_kernel_names()
    for kernel in ("spmv_tile", "spmv_fixup", "spmv_sell", "spmv_sell_dae", "csr_scalar",
                   "csr_vector", "spmm_rowwarp", "spmm_rowgroup", "spmm_blocktc",
                   "transpose_tile", "slice_gather"):
        assert kernel in names
    # the device-ceiling probes run in no backend's call
    assert not {"read_stream", "pointer_chase", "empty_kernel"} & set(names)
    assert list(names) == sorted(set(names))


@pytest.mark.parametrize("backend", ["cuda-spmv-auto", "cuda-spmv-adaptive[hub=8192]",
                                     "spmm-cuda-transposed", "slice-cuda-gather"])
def test_our_backends_profile_our_kernels_of_the_checked_call(backend):
    chosen = select_kernels(backend)
    assert chosen == KernelSelection(names_filter(own_kernel_names()), "function", True,
                                     "own kernels", chosen.what)
    assert chosen.derived
    # ncu's function name base: no namespace, no template arguments
    for name in ("spmv_tile", "spmv_fixup", "transpose_tile"):
        assert _ncu_matches(chosen.kernel_filter, name) == (True, True)
    for helper in ("cupy_fill", "cupy_copy", "spmv_tile2", "my_spmv_tile",
                   "vectorized_elementwise_kernel", "sparsescope_case_marker"):
        assert _ncu_matches(chosen.kernel_filter, helper) == (False, False), helper


def test_the_cusparse_pattern_on_the_recorded_kernel_names(h200_fixtures):
    chosen = select_kernels("cupy-cusparse-i32")
    assert (chosen.kernel_filter, chosen.name_base, chosen.origin) == (
        "regex:.*cusparse::.*", "demangled", "library")
    names = _recorded_kernels(h200_fixtures / "ncu_metrics_cage15_analog.csv")
    kept = [n for n in names if all(_ncu_matches(chosen.kernel_filter, n))]
    left = [n for n in names if not any(_ncu_matches(chosen.kernel_filter, n))]
    assert [n.split("(")[0] for n in kept] == [
        "void cusparse::<unnamed>::csr_partition_kernel<int, int>",
        "void cusparse::<unnamed>::csr_partition_kernel<long, long>",
        "void cusparse::csrmv_v3_kernel<std::integral_constant<bool, 0>, int, int, float, "
        "float, float, float, void>",
        "void cusparse::csrmv_v3_kernel<std::integral_constant<bool, 0>, long, long, float, "
        "float, float, float, void>"]
    # CuPy's format conversion and the hand-written CSR-vector kernel are not cuSPARSE's SpMV
    assert [n.split("(")[0] for n in left] == [
        "void convert_CooToCsr_kernel<0>", "void convert_CsrToCoo_kernel<0>",
        "void csr_vector<8>"]


def test_every_library_entry_is_a_registered_library_backend():
    from sparsescope import registry

    libraries = {name for (_, name) in registry.LIBRARY_BACKENDS}
    assert set(LIBRARY_KERNELS) <= libraries
    for name in LIBRARY_KERNELS:
        assert not registry.is_own(name)


@pytest.mark.parametrize("backend", ["slice-torch", "slice-cupy-i32", "scipy-cpu"])
def test_a_backend_without_kernel_names_profiles_every_launch_of_its_call(backend):
    chosen = select_kernels(backend)
    assert (chosen.kernel_filter, chosen.one_call, chosen.origin) == (None, True, "none")
    assert not chosen.derived
    assert chosen.describe() == (f"every launch ({backend}: no documented kernel names) of the "
                                 "checked call [ncu --profile-from-start off]")


def test_the_users_kernel_replaces_the_derived_filter():
    chosen = select_kernels("torch-cusparse-i64", kernel="regex:csrmv")
    assert (chosen.kernel_filter, chosen.name_base, chosen.origin, chosen.one_call) == (
        "regex:csrmv", "function", "user", True)
    assert not chosen.derived                              # never dropped behind the user's back
    assert select_kernels("cuda-spmv-sell", kernel="spmv_sell",
                          kernel_name_base="mangled").name_base == "mangled"


def test_whole_program_drops_the_range_not_the_names():
    chosen = select_kernels("cuda-spmv-sell", whole_program=True)
    assert not chosen.one_call and chosen.origin == "own kernels"
    assert chosen.describe().startswith("our kernels (")
    assert "of the whole program (preparation and helper launches included)" in \
        chosen.describe()
    assert "--profile-from-start" not in chosen.describe()


def test_without_names_keeps_the_scope_and_the_reason():
    wide = select_kernels("cupy-cusparse-i32").without_names("nothing matched")
    assert wide == KernelSelection(None, "function", True, "none", "every launch",
                                   "nothing matched")
    assert wide.describe() == ("every launch of the checked call (nothing matched) "
                               "[ncu --profile-from-start off]")
    assert wide.as_dict()["widened"] == "nothing matched"


def test_the_ncu_command_of_a_case_holds_the_filter_and_the_default_sections():
    chosen = select_kernels("cuda-spmv-auto")
    options = selected_options(chosen, groups=None, launch_count=None)
    target = target_command("seed6", "webbase-1M", "cuda-spmv-auto", one_call=chosen.one_call)
    cmd = build_ncu_command("/opt/ncu", "/out/r.ncu-rep", target, options)
    at = cmd.index("--kernel-name-base")
    assert cmd[at:at + 4] == ["--kernel-name-base", "function", "--kernel-name",
                              names_filter(own_kernel_names())]
    at = cmd.index("--profile-from-start")
    assert cmd[at:at + 2] == ["--profile-from-start", "off"]
    sections = [cmd[i + 1] for i, part in enumerate(cmd) if part == "--section"]
    assert sections == ["LaunchStats", "Occupancy", "WarpStateStats", "SchedulerStats",
                        "SourceCounters"]
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert metrics == list(M.group_metrics(M.DEFAULT_GROUPS)[0])
    assert "--set" not in cmd and "--launch-count" not in cmd
    assert cmd[-len(target):] == target
    assert target == [sys.executable, "-m", "sparsescope.target", "case", "--op", "spmv",
                      "--suite", "seed6", "--matrix", "webbase-1M", "--backend",
                      "cuda-spmv-auto", "--scale", "1.0", "--check-only", "--profile-call"]


def test_a_library_case_matches_demangled_names_and_whole_program_profiles_from_start():
    chosen = select_kernels("spmm-torch-i32", whole_program=True)
    options = selected_options(chosen, groups=("stalls",))
    target = target_command("dlmc3", "m", "spmm-torch-i32", op="spmm", one_call=False)
    cmd = build_ncu_command("ncu", "r.ncu-rep", target, options)
    at = cmd.index("--kernel-name-base")
    assert cmd[at:at + 4] == ["--kernel-name-base", "demangled", "--kernel-name",
                              "regex:.*cusparse::.*"]
    assert "--profile-from-start" not in cmd and "--profile-call" not in cmd
    assert [cmd[i + 1] for i, p in enumerate(cmd) if p == "--section"] == [
        "WarpStateStats", "SchedulerStats"]
