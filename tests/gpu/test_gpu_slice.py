"""Row slicing on the GPU: every backend through the op runner's gate on seed 003's sizes and
selections (single, many, repeated, empty rows, zero rows for out-of-range indices), both
weight modes and dtypes; the gather kernel across several tiles; the poison check; errors
before any launch; the scatter kernel's breakdown; gradients of the torch backend."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.registry import default_backends, get_backend
from sparsescope.backends.runner import run_case
from sparsescope.matrices import generate
from sparsescope.matrices.types import Matrix
from sparsescope.ops.registry import get_op
from sparsescope.ops.slice_rows import RowIndexError
from sparsescope.timing.types import TimingConfig

pytestmark = pytest.mark.gpu
ONE = TimingConfig(warmups=0, repeats=1)
GPU_BACKENDS = default_backends("gpu", "slice")


def _matrix(rows, cols, per_row, seed=0):
    csr = generate("uniform", rows, rows * per_row, cols=cols, seed=seed)
    lil = csr.tolil()
    lil[0, :] = 0  # an empty row
    csr = sp.csr_matrix(lil)
    csr.eliminate_zeros()
    return Matrix(name=f"{rows}x{cols}", csr=csr, source="test")


@pytest.fixture(scope="module")
def matrices():
    return [_matrix(8, 8, 3), _matrix(1000, 1000, 100), _matrix(5000, 5000, 50),
            _matrix(2000, 30_000, 300)]  # 30,000 columns: three gather tiles per row


SELECTIONS = (
    lambda n: {"rows": [n - 1]},
    lambda n: {"rows_selected": 256},
    lambda n: {"rows": [0, 1, 0, 1, 1, n - 1, 0]},
    lambda n: {"rows": [n, 0, -3, n + 7], "out_of_range": "zero"},
)


@pytest.mark.parametrize("backend_name", GPU_BACKENDS)
def test_backend_matches_float64(backend_name, matrices):
    backend = get_backend(backend_name)
    available, why = backend.availability()
    if not available:
        case = run_case(matrices[0], backend_name, "slice", {"rows": [1]}, config=ONE)
        assert case.outcome == "skipped" and why in case.reason
        pytest.skip(f"{backend_name}: {why}")
    failures = []
    for matrix in matrices:
        for make in SELECTIONS:
            for weights in ("scalar", "per-nnz"):
                for dtype in backend.capability.value_dtypes:
                    for index_bytes in backend.capability.index_bytes:
                        params = {**make(matrix.rows), "weights": weights}
                        case = run_case(matrix, backend_name, "slice", params, config=ONE,
                                        value_dtype=dtype, index_bytes=index_bytes,
                                        timed=False)
                        if case.outcome != "ok":
                            failures.append((matrix.name, params, dtype, index_bytes,
                                             case.reason))
    assert not failures, failures


def test_out_of_range_raises_before_any_launch(matrices):
    for backend in ("slice-cuda-scatter", "slice-cuda-gather", "slice-torch"):
        with pytest.raises(RowIndexError, match="out of range"):
            run_case(matrices[1], backend, "slice", {"rows": [3, 1000]}, config=ONE)


def test_poison_catches_a_row_the_kernel_skipped(matrices):
    from sparsescope.backends.slice_cuda import SliceCudaGather

    class SkipsLastRow(SliceCudaGather):
        def _launch(self, p):
            p.n_sel -= 1
            try:
                super()._launch(p)
            finally:
                p.n_sel += 1

    case = run_case(matrices[1], SkipsLastRow(), "slice", {"rows_selected": 16}, config=ONE)
    assert case.outcome == "failed" and "rel_err inf" in case.reason
    assert case.backend == "slice-cuda-gather"


def test_scatter_breakdown_separates_memset_and_kernel(matrices):
    case = run_case(matrices[2], "slice-cuda-scatter", "slice", {"rows_selected": 2000},
                    config=TimingConfig(warmups=2, repeats=10))
    assert case.outcome == "ok"
    names = [k["name"] for k in case.measurement.kernel_breakdown]
    assert any("slice_scatter" in n for n in names), names
    assert any("emset" in n for n in names), names  # cudaMemsetAsync shows as a memset
    gather = run_case(matrices[2], "slice-cuda-gather", "slice", {"rows_selected": 2000},
                      config=TimingConfig(warmups=2, repeats=10))
    assert not any("emset" in k["name"] for k in gather.measurement.kernel_breakdown)


def test_torch_gradient_on_the_gpu(matrices):
    torch = pytest.importorskip("torch")
    from sparsescope.backends.slice_torch import slice_values

    case = get_op("slice").make_case(matrices[0].csr, {"rows": [3, 1, 3, 7]})
    csr, rows = case.matrix, case.inputs.rows
    crow = torch.from_numpy(csr.indptr.astype(np.int64)).cuda()
    col = torch.from_numpy(csr.indices.astype(np.int64)).cuda()
    index = torch.from_numpy(rows).cuda()
    values = torch.tensor(csr.data, dtype=torch.float64, device="cuda", requires_grad=True)

    def fn(v):
        return slice_values(crow, col, v, index, rows.size, csr.shape[1],
                            case.traffic.nnz_selected)

    assert np.allclose(fn(values).detach().cpu().numpy(), case.reference)
    assert torch.autograd.gradcheck(fn, (values,), eps=1e-6, atol=1e-8)
