"""SpMM on the GPU: every backend against float64 through the op runner's gate (awkward
matrices, dlmc3, k from 1 to 256, both layouts, both dtypes and index widths), the own
kernel's cut rows (atomics), its poison check, k = 1 against the SpMV kernels, the timing
path, and backends that cannot install recorded as skipped with their reason."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sparsescope.backends.registry import default_backends, get_backend
from sparsescope.backends.runner import run_case
from sparsescope.matrices.suite_dlmc import load
from sparsescope.timing.types import TimingConfig

pytestmark = pytest.mark.gpu
QUICK = TimingConfig(warmups=1, repeats=3)
GPU_BACKENDS = default_backends("gpu", "spmm")
CASES = ((1, "row"), (3, "col"), (8, "row"), (8, "col"), (64, "row"), (256, "row"))


@pytest.fixture(scope="module")
def dlmc3():
    return list(load("dlmc3"))


def _run(matrix, backend, k, layout, dtype, index_bytes, config=QUICK, factory=None,
         timed=True):
    """One SpMM case through the runner; ``factory`` builds the backend instance instead of
    the registry (a variant or a deliberately broken kernel)."""
    chosen = factory() if factory is not None else backend
    return run_case(matrix, chosen, "spmm", {"k": k, "layout": layout}, config=config,
                    value_dtype=dtype, index_bytes=index_bytes, seed=k, timed=timed)


@pytest.mark.parametrize("backend_name", GPU_BACKENDS)
def test_backend_matches_float64(backend_name, awkward_matrices, dlmc3):
    backend = get_backend(backend_name)
    available, why = backend.availability()
    if not available:  # pyGinkgo built from source may be absent: a skipped case, not a crash
        case = _run(dlmc3[0], backend_name, 8, "row", "float32", None)
        assert case.outcome == "skipped" and why in case.reason
        pytest.skip(f"{backend_name}: {why}")
    failures = []
    for matrix in [*awkward_matrices, *dlmc3]:
        for k, layout in CASES:
            for dtype in backend.capability.value_dtypes:
                for index_bytes in backend.capability.index_bytes:
                    case = _run(matrix, backend_name, k, layout, dtype, index_bytes,
                                timed=False)  # the gate only: timing has its own test
                    if case.outcome == "skipped":
                        assert layout == "col" or k > 256, case.reason  # only layouts skip
                        continue
                    if case.outcome != "ok":
                        failures.append((matrix.name, k, layout, dtype, index_bytes,
                                         case.reason))
    assert not failures, failures


def test_own_kernel_with_cut_rows_uses_atomics_and_matches(dlmc3, monkeypatch):
    from sparsescope.backends import spmm_cuda

    monkeypatch.setattr(spmm_cuda, "MIN_SLICE_NNZ", 32)  # slices of 32-64: every row cut
    for matrix in dlmc3:
        for k in (1, 8, 64):
            case = _run(matrix, "spmm-cuda-rowwarp", k, "row", "float32", 4)
            assert case.outcome == "ok", case.reason
            assert int(case.notes["split_rows"]) > 0 and case.notes["zero_fill"] == "yes"


def test_own_kernel_column_slabs_match(dlmc3):
    """k split into column slabs (grid.y): every slab width gives the float64 product, and the
    rule cuts k = 256 into eight 32-column slabs."""
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp

    big = next(m for m in dlmc3 if m.name == "dlmc-512x1024")
    case = _run(big, "spmm-cuda-rowwarp", 256, "row", "float32", 4, timed=False)
    assert case.outcome == "ok" and case.notes["slabs"] == "8", case.notes
    for slab in (32, 64, 128, 256):
        for dtype in ("float32", "float64"):
            case = _run(big, "spmm-cuda-rowwarp", 256, "row", dtype, 4, timed=False,
                        factory=lambda s=slab: SpmmCudaRowWarp(slab=s))
            assert case.outcome == "ok", (slab, dtype, case.reason)
            assert case.notes["slab_cols"] == str(slab)


def test_own_kernel_poison_catches_a_skipped_slice():
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
    from sparsescope.matrices import generate
    from sparsescope.matrices.types import Matrix

    class DropsLastSlice(SpmmCudaRowWarp):
        def plan(self, *args):  # the launch's arguments are built from the plan in prepare
            host = super().plan(*args)
            p = host.plan
            return replace(host, plan=p.__class__(p.slice_nnz, p.slice_ptr[:-1], p.slice_row,
                                                  p.split_rows))

    # short rows (10 per row) are never cut, so Y is not zero-filled: the last row stays NaN
    matrix = Matrix(name="u5000", csr=generate("uniform", 5000, 50_000, seed=2), source="t")
    case = _run(matrix, "spmm-cuda-rowwarp", 8, "row", "float32", 4, factory=DropsLastSlice)
    assert case.outcome == "failed" and "rel_err inf" in case.reason
    assert case.notes["split_rows"] == "0"


def test_k1_agrees_with_the_spmv_kernels(dlmc3):
    for matrix in dlmc3:
        spmm = _run(matrix, "spmm-cuda-rowwarp", 1, "row", "float32", 4)
        spmv = run_case(matrix, "cuda-csr-vector", config=QUICK, seed=1)
        assert spmm.outcome == spmv.outcome == "ok"
        # same x (seed 1), same reference: both errors at float32 rounding level
        assert spmm.correctness.rel_err < 1e-6 and spmv.correctness.rel_err < 1e-6


def test_timing_path_and_kernel_breakdown(dlmc3):
    case = _run(dlmc3[0], "spmm-cuda-rowwarp", 64, "row", "float32", 4,
                config=TimingConfig(warmups=2, repeats=10))
    assert case.outcome == "ok" and case.measurement.clock == "cuda-events"
    assert 0 < case.time_ms < 1.0
    names = [k["name"] for k in case.measurement.kernel_breakdown]
    assert any("spmm_rowwarp" in n for n in names), names


def test_torch_gradient_on_the_gpu():
    torch = pytest.importorskip("torch")
    import scipy.sparse as sp

    from sparsescope.backends.spmm_torch import torch_csr

    rng = np.random.default_rng(1)
    a = sp.random(30, 20, density=0.3, format="csr", random_state=rng)
    a.sort_indices()
    x = torch.from_numpy(rng.random((20, 4))).cuda()
    matrix, values = torch_csr(a, "float64", 8, "cuda", requires_grad=True)

    def fn(v):
        return torch.sparse.mm(torch.sparse_csr_tensor(
            matrix.crow_indices(), matrix.col_indices(), v, size=a.shape,
            check_invariants=False), x)

    assert torch.autograd.gradcheck(fn, (values,), eps=1e-6, atol=1e-8)


def test_marked_cases_for_ncu_run_check_and_record():
    """The multi-case profile target without ncu: every case checked, skips recorded."""
    from sparsescope.target import run_marked_cases

    specs = [{"op": "spmm", "suite": "dlmc3", "matrix": "dlmc-128x256", "backend": b,
              "params": {"k": 8, "layout": layout}}
             for b in ("spmm-cuda-rowwarp", "spmm-torch-i32") for layout in ("row", "col")]
    specs.append({"op": "slice", "suite": "slice003", "matrix": "slice-1000",
                  "backend": "slice-cuda-gather", "params": {"rows_selected": 16}})
    records = run_marked_cases(specs)
    outcomes = [r["outcome"] for r in records]
    assert outcomes == ["ok", "skipped", "ok", "ok", "ok"], records
    assert "row-major X only" in records[1]["reason"]
    assert all(r["rel_err"] < 1e-5 for r in records if r["outcome"] == "ok")
    assert records[0]["label"] == "spmm-cuda-rowwarp dlmc-128x256 k=8 layout=row"
