"""``profile run`` on a real GPU under the real ncu: only the backend's own kernels of the
checked call reach the report (no fill, copy, conversion or preparation launch)."""

from __future__ import annotations

import pytest

from sparsescope.profile.collect import find_ncu
from sparsescope.profile.kernel_selection import own_kernel_names

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(find_ncu() is None, reason="needs Nsight Compute (ncu)")]


def _profile(tmp_path, backend, **kwargs):
    from sparsescope import api

    done = api.profile_case("seed6", "cant", backend, tmp_path, scale=0.02,
                            groups=("launch", "stalls"), timeout_s=600, **kwargs)
    return done.run, done.profiles


@pytest.mark.parametrize("backend, kernels", [("cuda-spmv-sell", {"spmv_sell"}),
                                              ("cuda-csr-vector", {"csr_vector"})])
def test_our_backend_profiles_its_kernel_once(tmp_path, backend, kernels):
    run, profiles = _profile(tmp_path, backend)
    assert {p.name for p in profiles} == kernels          # the backend's kernel, nothing else
    assert len(profiles) == len(run.passes) >= 1          # each profiled launch read back
    assert run.selection.origin == "own kernels" and run.selection.one_call
    assert set(kernels) <= set(own_kernel_names())
    assert all(n > 0 for _, n in run.passes)


def test_a_cusparse_backend_profiles_cusparse_kernels_only(tmp_path):
    run, profiles = _profile(tmp_path, "cupy-cusparse-i32")
    assert profiles
    if run.selection.widened:                 # this cuSPARSE names its kernels otherwise
        pytest.fail(f"the cuSPARSE pattern matched nothing: {run.selection.widened}")
    # ncu matched the pattern on the full demangled names; the report keeps a shorter
    # form without the namespace (H100, CUDA 13: "void unnamed>::csr_partition_kernel<..>",
    # "void csrmv_v3_kernel<..>"): no helper launch (fill, conversion, copy) got through,
    # and the product's own kernel did
    names = [p.demangled_name for p in profiles]
    helpers = ("fill", "convert", "copy", "cupy_", "elementwise")
    assert not [n for n in names if any(word in n for word in helpers)], names
    assert any("csrmv" in n or "spmv" in n.lower() for n in names), names


def test_the_whole_program_holds_more_launches_than_the_call(tmp_path):
    _, call = _profile(tmp_path / "call", "cuda-spmv-sell", kernel="regex:.")
    _, whole = _profile(tmp_path / "whole", "cuda-spmv-sell", kernel="regex:.",
                        whole_program=True)
    assert len(whole) > len(call) >= 1        # the poisoning fill at least is outside the call
