"""Gradients of the PyTorch backends with respect to the values, against finite differences
(CPU path; skipped when torch is not installed, as in CI)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

try:
    import torch
except ImportError:  # CI installs only the dev and profile extras
    pytest.skip("torch is not installed", allow_module_level=True)

from sparsescope.backends.slice_torch import slice_values  # noqa: E402
from sparsescope.backends.spmm_torch import torch_csr  # noqa: E402
from sparsescope.ops.registry import get_op  # noqa: E402


def _case(rows, weights="per-nnz"):
    rng = np.random.default_rng(4)
    a = sp.random(12, 9, density=0.35, format="csr", random_state=rng)
    a.sort_indices()
    return get_op("slice").make_case(a, {"rows": rows, "weights": weights})


def _slice_fn(case):
    csr, rows = case.matrix, case.inputs.rows
    crow = torch.from_numpy(csr.indptr.astype(np.int64))
    col = torch.from_numpy(csr.indices.astype(np.int64))
    index = torch.from_numpy(rows)

    def fn(values):
        return slice_values(crow, col, values, index, rows.size, csr.shape[1],
                            case.traffic.nnz_selected)

    return fn


def test_slice_gradient_matches_finite_differences_with_repeated_rows():
    case = _case([3, 0, 3, 11, 3])
    values = torch.tensor(case.matrix.data, dtype=torch.float64, requires_grad=True)
    fn = _slice_fn(case)
    assert np.allclose(fn(values).detach().numpy(), case.reference)
    assert torch.autograd.gradcheck(fn, (values,), eps=1e-6, atol=1e-8)
    # by hand: d sum(W * out) / d v_j = sum of W over the output cells holding v_j
    weights = torch.rand(case.output_shape, dtype=torch.float64)
    (fn(values) * weights).sum().backward()
    j = int(case.matrix.indptr[3])  # first nonzero of row 3, selected three times
    column = int(case.matrix.indices[j])
    assert values.grad[j].item() == pytest.approx(
        (weights[0, column] + weights[2, column] + weights[4, column]).item())


def test_slice_gradient_of_the_scalar_weight_counts_its_entries():
    case = _case([1, 2, 2], weights="scalar")
    weight = torch.tensor(0.75, dtype=torch.float64, requires_grad=True)
    out = _slice_fn(case)(weight)
    assert np.allclose(out.detach().numpy(), case.reference)
    assert torch.autograd.gradcheck(_slice_fn(case), (weight,), eps=1e-6, atol=1e-8)
    out.sum().backward()
    assert weight.grad.item() == case.traffic.nnz_selected


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_spmm_gradient_matches_finite_differences():
    rng = np.random.default_rng(6)
    a = sp.random(10, 8, density=0.4, format="csr", random_state=rng)
    a.sort_indices()
    x = torch.from_numpy(rng.random((8, 3)))
    matrix, values = torch_csr(a, "float64", 8, "cpu", requires_grad=True)

    def fn(v):
        rebuilt = torch.sparse_csr_tensor(matrix.crow_indices(), matrix.col_indices(), v,
                                          size=a.shape, check_invariants=False)
        return torch.sparse.mm(rebuilt, x)

    assert np.allclose(fn(values).detach().numpy(), a @ x.numpy())
    assert torch.autograd.gradcheck(fn, (values,), eps=1e-6, atol=1e-8)
