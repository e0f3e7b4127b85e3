"""Row-slice op and its correctness suite on the CPU backends (seed 003's 39 tests, in spirit):
tiny to large sizes, single and many rows, repeated rows, out-of-range indices (error before
any launch, or zero rows when asked), both weight modes, empty rows, duplicate columns."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.runner import run_case
from sparsescope.errors import UsageError
from sparsescope.matrices import MatrixWarning, generate
from sparsescope.matrices.types import Matrix
from sparsescope.model.traffic import csr_slice_traffic
from sparsescope.ops.registry import get_op
from sparsescope.ops.slice_rows import (
    SCALAR_WEIGHT,
    RowIndexError,
    SliceOp,
    check_output,
    make_rows,
    reference_slice,
    selection_counts,
    sliced_matrix,
    validate_rows,
)
from sparsescope.timing.types import TimingConfig

QUICK = TimingConfig(warmups=0, repeats=1, flush_l2=False)


def matrix_of(rows, cols, per_row, seed=0, empty=()):
    csr = generate("uniform", rows, rows * per_row, cols=cols, seed=seed) if per_row else \
        sp.csr_matrix((rows, cols))
    if empty:
        lil = csr.tolil()
        for r in empty:
            lil[r, :] = 0
        csr = sp.csr_matrix(lil)
        csr.eliminate_zeros()
    return Matrix(name=f"{rows}x{cols}", csr=csr, source="test")


def test_validate_rows_errors_name_the_first_bad_index():
    rows, invalid = validate_rows([0, 3, 3, 9], 10)
    assert rows.dtype == np.int64 and rows.tolist() == [0, 3, 3, 9] and invalid == 0
    with pytest.raises(RowIndexError, match="row index 10 at position 2 is out of range for a "
                                            "matrix with 10 rows \\(valid: 0 to 9\\); 2 of 4"):
        validate_rows([1, 2, 10, -1], 10)
    mapped, invalid = validate_rows([1, 2, 10, -1], 10, "zero")
    assert mapped.tolist() == [1, 2, 10, 10] and invalid == 2
    for bad, message in (([[1, 2]], "1-D"), ([1.5], "integers"), ([1], "out_of_range")):
        with pytest.raises(UsageError, match=message):
            validate_rows(bad, 10, "clamp" if message == "out_of_range" else "error")


def test_make_rows_repeats_and_is_seeded():
    rows = make_rows(10, 1000, seed=1)
    assert rows.min() >= 0 and rows.max() <= 9 and len(np.unique(rows)) == 10
    assert np.array_equal(rows, make_rows(10, 1000, seed=1))
    with pytest.raises(UsageError, match="rows_selected must be >= 1"):
        make_rows(10, 0)


def test_sliced_matrix_weights_and_padding():
    a = sp.csr_matrix(np.array([[1.0, 0, 2.0], [0, 0, 0], [0, 3.0, 0]]))
    scalar = sliced_matrix(a, "scalar", pad=True)
    assert scalar.shape == (4, 3) and scalar.nnz == 3
    assert scalar.toarray().tolist() == [[0.75, 0, 0.75], [0, 0, 0], [0, 0.75, 0], [0, 0, 0]]
    assert sliced_matrix(a, "per-nnz", pad=False).toarray().tolist() == a.toarray().tolist()
    assert reference_slice(a, np.array([2, 0, 2])).tolist() == [[0, 3, 0], [1, 0, 2],
                                                                 [0, 3, 0]]


def test_selection_counts_by_hand():
    # 2 x 20 float32, out rows 80 bytes long: row 0 columns 0,1,9 -> sectors 0,0,1;
    # row 1 (selected twice) columns 7, 8 -> out row 1 bytes 108,112 -> sector 3 (both);
    # out row 2 bytes 188, 192 -> sectors 5 and 6.
    a = sp.csr_matrix((np.ones(5), np.array([0, 1, 9, 7, 8]), np.array([0, 3, 5])),
                      shape=(2, 20))
    nnz, sectors, lines = selection_counts(a, np.array([0, 1, 1]))
    assert (nnz, sectors) == (7, 2 + 1 + 2)
    assert lines == 2  # bytes 0..36 -> line 0, 108..192 -> lines 0 and 1 (128 B)
    assert selection_counts(a, np.array([], dtype=np.int64)) == (0, 0, 0)


def test_op_case_records_counts_and_rejects_bad_rows_before_anything_runs():
    op = get_op("slice")
    m = matrix_of(50, 40, 5)
    case = op.make_case(m.csr, {"rows": [3, 3, 49], "weights": "scalar"})
    lengths = np.diff(m.csr.indptr)
    assert case.params.rows == (3, 3, 49)
    assert case.derived.nnz_selected == 2 * lengths[3] + lengths[49]
    assert case.params.rows_selected == 3 and case.traffic.values_bytes == 4
    assert case.reference.shape == (3, 40) and set(np.unique(case.reference)) <= {0, 0.75}
    with pytest.raises(RowIndexError, match="row index 50"):
        op.make_case(m.csr, {"rows": [0, 50]})
    zero = op.make_case(m.csr, {"rows": [0, 50], "out_of_range": "zero"})
    assert zero.matrix.shape == (51, 40) and zero.derived.invalid_rows == 1
    assert not zero.reference[1].any() and zero.reference[0].any()


def test_slice_op_explicit_rows_give_typed_params_derived_counts_and_csr_traffic():
    # 50 x 40: row 3 holds 2 nonzeros (columns 1, 38), row 49 holds 3 (columns 0, 7, 39)
    dense = np.zeros((50, 40))
    dense[3, [1, 38]] = [1.5, -2.0]
    dense[49, [0, 7, 39]] = [4.0, 0.5, 3.0]
    dense[10, 5] = 9.0  # not selected
    csr = sp.csr_matrix(dense)
    case = SliceOp().make_case(csr, {"rows": [3, 3, 49]})
    assert case.params.rows == (3, 3, 49)
    assert case.params.rows_selected == 3
    assert case.derived.nnz_selected == 2 + 2 + 3  # row 3 twice, row 49 once, by hand
    assert case.derived.invalid_rows == 0
    assert case.csr_traffic == csr_slice_traffic(3, 40, 7, value_bytes=4, index_bytes=4,
                                                 weights="per-nnz")
    # by hand: row list 3 x 4 B, row starts and ends 2 x 3 x 4 B, 7 indices and 7 values,
    # dense output 3 x 40 float32
    assert (case.csr_traffic.x_bytes, case.csr_traffic.row_meta_bytes) == (12, 24)
    assert (case.csr_traffic.indices_bytes, case.csr_traffic.values_bytes) == (28, 28)
    assert case.csr_traffic.y_written_bytes == 3 * 40 * 4
    assert case.reference.tolist() == dense[[3, 3, 49]].tolist()


def test_check_output():
    ref = np.array([[0.0, 2.0]])
    assert check_output(np.array([[0.0, 2.0]], dtype=np.float32), ref, 0).passed
    assert not check_output(np.array([[0.0, 2.0, 0.0]]), ref, 1.0).passed
    assert not check_output(np.array([[np.nan, 2.0]]), ref, 1.0).passed


def _backends():
    names = [("slice-scipy-cpu", None, 4)]
    try:
        import torch  # noqa: F401
    except ImportError:
        return names
    from sparsescope.backends.slice_torch import SliceTorch

    return names + [("slice-torch", lambda: SliceTorch("cpu"), 8)]


MATRICES = {  # name: (rows, cols, nnz per row, empty rows)
    "tiny": (8, 8, 3, (1,)),
    "small": (300, 200, 20, (0, 299)),
    "medium": (3000, 2500, 50, (7,)),
    "large": (10_000, 10_000, 100, ()),
}
SELECTIONS = {  # name: params, given the matrix rows n
    "single": lambda n: {"rows": [n - 1]},
    "many": lambda n: {"rows_selected": min(256, 4 * n)},
    "duplicates": lambda n: {"rows": [0, 1, 0, 1, 1, n - 1, 0]},
    "empty-row": lambda n: {"rows": [0, n - 1, 0]},
    "zero-rows": lambda n: {"rows": [n, 0, -3, n + 7], "out_of_range": "zero"},
}


@pytest.fixture(scope="module")
def slice_matrices():
    return {name: matrix_of(r, c, p, seed=3, empty=e) for name, (r, c, p, e) in MATRICES.items()}


@pytest.mark.parametrize("backend, factory, index_bytes", _backends(),
                         ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("size", list(MATRICES))
def test_slice_correctness_suite(backend, factory, index_bytes, size, slice_matrices):
    matrix = slice_matrices[size]
    for selection, make in SELECTIONS.items():
        for weights in ("scalar", "per-nnz"):
            params = {**make(matrix.rows), "weights": weights}
            case = run_case(matrix, factory() if factory else backend, "slice", params,
                            config=QUICK, seed=2, index_bytes=index_bytes)
            assert case.outcome == "ok", (selection, weights, case.reason)
            assert case.correctness.rel_err <= case.correctness.tolerance
    # out of range without the option: an error before any backend is prepared
    with pytest.raises(RowIndexError):
        run_case(matrix, factory() if factory else backend, "slice", {"rows": [0, matrix.rows]},
                 config=QUICK, index_bytes=index_bytes)


def test_float64_values_and_empty_rows_through_scipy(slice_matrices):
    matrix = slice_matrices["small"]
    case = run_case(matrix, "slice-scipy-cpu", "slice", {"rows": [0, 5, 299]},
                    config=QUICK, value_dtype="float64", index_bytes=8)
    assert case.outcome == "ok" and case.correctness.rel_err == 0.0
    assert case.derived.nnz_selected == matrix.csr.getrow(5).nnz


def test_duplicate_columns_are_summed_or_refused():
    dup = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([3, 3, 0]), np.array([0, 2, 3])),
                        shape=(2, 4))
    matrix = Matrix(name="dup", csr=dup, source="test")
    with pytest.warns(MatrixWarning, match="duplicate"):
        case = get_op("slice").make_case(dup, {"rows": [0, 1]})
    assert case.reference.tolist() == [[0, 0, 0, 3.0], [5.0, 0, 0, 0]]
    with pytest.raises(UsageError, match="duplicate column indices"):
        run_case(matrix, "slice-scipy-cpu", "slice", {"rows": [0]}, config=QUICK, strict=True)


def test_scalar_weight_constant():
    assert SCALAR_WEIGHT not in (0.0, 1.0)
