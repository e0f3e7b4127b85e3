"""SpMM op, the op registry, and the SpMM correctness suite on the CPU backends.

The suite runs every case through ``backends.runner.run_case`` (the gate the GPU backends pass
too): SciPy always, PyTorch's CPU path when torch is installed (the GPU tests run the same cases
on the device).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.runner import run_case
from sparsescope.errors import UsageError
from sparsescope.matrices import MatrixWarning
from sparsescope.matrices.types import Matrix
from sparsescope.model.traffic import Traffic
from sparsescope.ops.params import SpmmParams
from sparsescope.ops.registry import canonical_csr, expand_params, get_op, list_ops
from sparsescope.ops.spmm import SpmmOp, check_output, condition, make_dense_x, reference_spmm
from sparsescope.ops.spmv import make_x, reference_spmv
from sparsescope.timing.types import TimingConfig

QUICK = TimingConfig(warmups=0, repeats=1, flush_l2=False)


def random_csr(rows, cols, density, seed, *, empty_rows=()):
    rng = np.random.default_rng(seed)
    a = sp.random(rows, cols, density=density, format="lil", random_state=rng,
                  data_rvs=lambda n: rng.random(n) * 2 - 1)
    for r in empty_rows:
        a[r, :] = 0
    a = sp.csr_matrix(a)
    a.eliminate_zeros()
    a.sort_indices()
    return a


def test_x_at_k1_is_spmv_x_and_layouts_share_values():
    assert np.array_equal(make_dense_x(500, 1, seed=4)[:, 0], make_x(500, seed=4))
    row = make_dense_x(300, 7, seed=2)
    col = make_dense_x(300, 7, seed=2, layout="col")
    assert row.flags.c_contiguous and col.flags.f_contiguous and not col.flags.c_contiguous
    assert np.array_equal(row, col) and row.dtype == np.float32
    assert np.array_equal(make_dense_x(10, 3, dtype=np.float64).astype(np.float32),
                          make_dense_x(10, 3))
    with pytest.raises(ValueError, match="k must be >= 1"):
        make_dense_x(10, 0)


def test_reference_hand_computed_and_k1_equals_spmv():
    a = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.5]]))
    x = np.array([[1.0, -1.0], [2.0, 0.5], [4.0, 2.0]], dtype=np.float32)
    assert reference_spmm(a, x).tolist() == [[9.0, 3.0], [0.0, 0.0], [8.0, 2.5]]
    big = random_csr(200, 150, 0.05, 1)
    x1 = make_dense_x(150, 1, seed=9)
    assert np.array_equal(reference_spmm(big, x1)[:, 0], reference_spmv(big, make_x(150, 9)))
    with pytest.raises(ValueError, match="columns"):
        reference_spmm(a, np.ones((4, 2)))


def test_condition_measures_cancellation():
    a = sp.csr_matrix(np.array([[1.0, 1.0]]))
    assert condition(a, np.array([[1.0], [1.0]])) == 1.0
    assert condition(a, np.array([[1.0], [-0.99]])) == pytest.approx(1.99 / 0.01)
    assert condition(a, np.array([[1.0], [-1.0]])) == 1.0  # all-zero result: absolute error
    # a reference the caller already has gives the same figure
    x = np.array([[1.0], [-0.99]])
    assert condition(a, x, reference_spmm(a, x)) == condition(a, x)


def test_check_output_shape_nan_and_error():
    ref = np.array([[3.0, 4.0]])
    assert check_output(np.array([[3.0, 4.0]], dtype=np.float32), ref, 1e-6).rel_err == 0
    assert check_output(np.array([3.0, 4.0]), ref, 1e-6).rel_err == float("inf")
    assert not check_output(np.array([[np.nan, 4.0]]), ref, 1e-6).passed
    assert check_output(np.array([[3.0, 4.5]]), ref, 1.0).rel_err == pytest.approx(0.1)


def test_registry_params_and_expansion():
    assert list_ops() == ["spmv", "spmm", "slice"]
    op = get_op("spmm")
    assert op.resolve_params({}) == SpmmParams(k=8, layout="row")
    assert op.resolve_params({}).as_dict() == {"k": 8, "layout": "row"}
    assert op.resolve_params({"k": "64", "layout": "col"}) == SpmmParams(k=64, layout="col")
    for bad, message in (({"k": 0}, "k must be >= 1"), ({"k": 2.5}, "integer"),
                         ({"layout": "diag"}, "layout must be one of row, col"),
                         ({"kk": 1}, "has no parameter kk; its parameters: k, layout")):
        with pytest.raises(UsageError, match=message):
            op.resolve_params(bad)
    combos = expand_params("spmm", {"k": [8, 64], "layout": ["row", "col"]})
    assert [(c.k, c.layout) for c in combos] == [(8, "row"), (8, "col"), (64, "row"),
                                                 (64, "col")]
    assert expand_params("spmm") == [SpmmParams(k=8, layout="row")]
    with pytest.raises(UsageError, match="no value given for k"):
        expand_params("spmm", {"k": []})
    with pytest.raises(UsageError, match="op"):
        get_op("spgemm")


def test_canonical_csr_sums_or_refuses_duplicate_columns():
    a = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 2, 2, 1]),
                       np.array([0, 1, 3, 4])), shape=(3, 3))
    with pytest.raises(UsageError, match="row 1 has duplicate column indices"):
        canonical_csr(a, strict=True)
    with pytest.warns(MatrixWarning, match="duplicates summed"):
        fixed = canonical_csr(a)
    assert fixed.toarray().tolist() == [[1, 0, 0], [0, 0, 5], [0, 4, 0]]
    unsorted = sp.csr_matrix((np.array([1.0, 2.0]), np.array([2, 0]), np.array([0, 2])),
                             shape=(1, 3))
    with pytest.raises(UsageError, match="row 0 has unsorted column indices"):
        canonical_csr(unsorted, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = canonical_csr(random_csr(50, 40, 0.2, 3))  # no warning for a canonical matrix
    assert clean.has_canonical_format


def test_case_params_and_condition_scaled_tolerance():
    op = get_op("spmm")
    case = op.make_case(random_csr(60, 40, 0.3, 5), {"k": 16}, seed=1)
    assert case.params.k == 16 and case.params.layout == "row"
    assert case.tolerance == pytest.approx(1e-5 * case.derived.condition, rel=1e-3)
    assert case.output_shape == (60, 16) and case.traffic.k == 16


def test_spmm_csr_traffic_is_hand_computed():
    # 3 x 4, 5 nonzeros; k = 6, float32 values, INT32 indices
    a = sp.csr_matrix(np.array([[1.0, 0, 2.0, 0], [0, 0, 0, 0], [3.0, 4.0, 0, 5.0]]))
    case = SpmmOp().make_case(a, {"k": 6})
    assert case.csr_traffic == Traffic(
        format="CSR INT32", values_bytes=5 * 4, indices_bytes=5 * 4, row_meta_bytes=(3 + 1) * 4,
        x_bytes=4 * 6 * 4, y_read_bytes=0, y_written_bytes=3 * 6 * 4, flops=2 * 5 * 6)
    assert case.csr_traffic.total_bytes == 20 + 20 + 16 + 96 + 72
    wide = SpmmOp().make_case(a, {"k": 2}, value_dtype="float64", index_bytes=8)
    assert wide.csr_traffic == Traffic(
        format="CSR INT64", values_bytes=5 * 8, indices_bytes=5 * 8, row_meta_bytes=(3 + 1) * 8,
        x_bytes=4 * 2 * 8, y_read_bytes=0, y_written_bytes=3 * 2 * 8, flops=2 * 5 * 2)


def _backends():
    names = [("spmm-scipy-cpu", None)]
    try:
        import torch  # noqa: F401
    except ImportError:
        return names
    from sparsescope.backends.spmm_torch import SpmmTorchI32, SpmmTorchI64

    return names + [("spmm-torch-i64", lambda: SpmmTorchI64("cpu")),
                    ("spmm-torch-i32", lambda: SpmmTorchI32("cpu"))]


SIZES = {  # name: (rows, cols, density, empty rows)
    "tiny": (5, 7, 0.4, (2,)),
    "small": (200, 300, 0.05, (0, 17, 199)),
    "medium": (3000, 2000, 0.004, (5,)),
    "single-row": (1, 500, 0.3, ()),
    "single-col": (400, 1, 0.5, ()),
}


@pytest.mark.parametrize("backend, factory", _backends(), ids=lambda v: v if isinstance(v, str)
                         else "")
@pytest.mark.parametrize("size", list(SIZES))
def test_spmm_correctness_suite(backend, factory, size):
    rows, cols, density, empty = SIZES[size]
    matrix = Matrix(name=size, csr=random_csr(rows, cols, density, 11, empty_rows=empty),
                    source="test")
    index = 8 if backend.endswith("i64") else 4
    for k, layout, dtype in ((1, "row", "float32"), (3, "col", "float32"), (8, "row", "float64"),
                             (64, "row", "float32"), (256, "col", "float32")):
        case = run_case(matrix, factory() if factory else backend, "spmm",
                        {"k": k, "layout": layout}, config=QUICK, value_dtype=dtype,
                        index_bytes=index)
        assert case.outcome == "ok", (k, layout, dtype, case.reason)
        assert case.correctness.passed and case.params.k == k
        assert case.measurement.samples_ms


def test_spmm_k1_agrees_with_spmv_through_the_runner():
    matrix = Matrix(name="m", csr=random_csr(400, 300, 0.02, 21), source="test")
    spmv = run_case(matrix, "scipy-cpu", "spmv", config=QUICK, seed=5)
    spmm = run_case(matrix, "spmm-scipy-cpu", "spmm", {"k": 1}, config=QUICK, seed=5)
    assert spmv.outcome == spmm.outcome == "ok"
    prepared_x = get_op("spmm").make_case(matrix.csr, {"k": 1}, seed=5).inputs[:, 0]
    assert np.array_equal(prepared_x, make_x(300, seed=5))
    assert spmm.correctness.rel_err < 1e-6 and spmv.correctness.rel_err < 1e-6


def test_duplicate_columns_are_canonicalized_before_any_backend():
    dup = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([0, 0, 1]), np.array([0, 2, 3])),
                        shape=(2, 2))
    matrix = Matrix(name="dup", csr=dup, source="test")
    with pytest.warns(MatrixWarning):
        case = run_case(matrix, "spmm-scipy-cpu", "spmm", {"k": 2}, config=QUICK)
    assert case.outcome == "ok"
    with pytest.raises(UsageError, match="duplicate"):
        run_case(matrix, "spmm-scipy-cpu", "spmm", {"k": 2}, config=QUICK, strict=True)


def test_row_bands_hand_check():
    from sparsescope.ops.spmm import _row_bands

    indptr = np.array([0, 4, 4, 8, 12])
    assert _row_bands(indptr, 2) == [(0, 3), (3, 4)]
    assert _row_bands(indptr, 1) == [(0, 4)]
    # more threads than rows: every range holds at least one row, none empty
    assert _row_bands(indptr, 16) == [(0, 1), (1, 3), (3, 4)]
    assert _row_bands(np.array([0]), 4) == [(0, 0)]


def test_threaded_reference_is_bit_identical_to_one_thread():
    rng = np.random.default_rng(3)
    lengths = np.concatenate([[0, 900], rng.integers(0, 12, 997)])  # an empty and a huge row
    rows = lengths.size
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    a = sp.csr_matrix((rng.standard_normal(indptr[-1]), rng.integers(0, 333, indptr[-1]),
                       indptr), shape=(rows, 333))
    x = rng.standard_normal((333, 7))
    one = reference_spmm(a, x, threads=1)
    assert np.array_equal(one, (a @ x))
    for threads in (2, 3, 8):
        assert np.array_equal(reference_spmm(a, x, threads=threads), one)
    assert np.array_equal(reference_spmm(a, np.asfortranarray(x), threads=4), one)
