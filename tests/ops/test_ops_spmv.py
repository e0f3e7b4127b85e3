"""SpMV op: input vector, float64 reference, correctness check."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.ops.spmv import DEFAULT_TOLERANCE, check_output, make_x, reference_spmv


def test_make_x_is_deterministic_in_range_and_typed():
    x = make_x(10_000, seed=3)
    assert x.dtype == np.float32 and x.shape == (10_000,)
    assert np.array_equal(x, make_x(10_000, seed=3))
    assert not np.array_equal(x, make_x(10_000, seed=4))
    assert x.min() >= -1.0 and x.max() < 1.0
    assert x.min() < -0.99 and x.max() > 0.99  # spans the range
    x64 = make_x(10_000, seed=3, dtype=np.float64)
    assert x64.dtype == np.float64
    assert np.array_equal(x64.astype(np.float32), x)  # same draw, rounded
    assert make_x(0).shape == (0,)


def test_reference_hand_computed():
    a = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.5]]))
    y = reference_spmv(a, np.array([1.0, 2.0, 4.0], dtype=np.float32))
    assert y.dtype == np.float64
    assert y.tolist() == [9.0, 0.0, 8.0]


def test_reference_is_computed_in_float64():
    # In float32, 1e8 + 1 rounds to 1e8 and the row sums to 0; in float64 it is exactly 1.
    a = sp.csr_matrix(np.array([[1e8, 1.0, -1e8]], dtype=np.float32))
    x = np.ones(3, dtype=np.float32)
    assert (a @ x)[0] == 0.0
    assert reference_spmv(a, x).tolist() == [1.0]


def test_reference_rejects_a_wrong_length_x():
    with pytest.raises(ValueError, match="x has 2 entries, A has 3 columns"):
        reference_spmv(sp.csr_matrix((2, 3)), np.ones(2))


def test_check_output_relative_l2_hand_computed():
    c = check_output(np.array([3.0, 4.5], dtype=np.float32), np.array([3.0, 4.0]), 1e-5)
    assert c.rel_err == pytest.approx(0.1)       # ||(0, 0.5)|| / ||(3, 4)|| = 0.5 / 5
    assert c.max_abs_err == pytest.approx(0.5)
    assert c.tolerance == 1e-5
    assert not c.passed


def test_check_output_exact_match_passes():
    y = np.array([1.0, -2.0, 0.25])
    c = check_output(y, y.copy(), 1e-12)
    assert (c.rel_err, c.max_abs_err, c.passed) == (0.0, 0.0, True)


def test_check_output_zero_reference_uses_the_absolute_error():
    c = check_output(np.array([3.0, 4.0]), np.zeros(2), 1e-5)
    assert c.rel_err == pytest.approx(5.0)
    assert check_output(np.zeros(2), np.zeros(2), 1e-5).rel_err == 0.0


@pytest.mark.parametrize("y", [np.array([1.0, math.nan]), np.array([1.0, math.inf]),
                               np.array([1.0]), np.array([1.0, 2.0, 3.0])])
def test_check_output_nan_inf_or_wrong_length_is_an_infinite_error(y):
    c = check_output(y, np.array([1.0, 2.0]), 1e-5)
    assert c.rel_err == math.inf and not c.passed


def test_check_output_empty_vectors():
    c = check_output(np.zeros(0), np.zeros(0), 1e-5)
    assert (c.rel_err, c.max_abs_err, c.passed) == (0.0, 0.0, True)


def test_default_tolerances():
    assert DEFAULT_TOLERANCE == {"float32": 1e-5, "float64": 1e-12}


def test_float32_spmv_passes_the_float32_tolerance_and_a_dropped_nonzero_fails_it():
    a = sp.random(300, 300, density=0.05, format="csr", random_state=7)
    x = make_x(300, seed=1)
    y_ref = reference_spmv(a, x)
    y32 = a.astype(np.float32) @ x
    assert check_output(y32, y_ref, DEFAULT_TOLERANCE["float32"]).passed
    dropped = a.copy()
    dropped.data[-1] = 0.0
    assert not check_output(dropped.astype(np.float32) @ x, y_ref,
                            DEFAULT_TOLERANCE["float32"]).passed


def test_reference_and_cancellation_in_one_pass_leave_the_matrix_as_it_was():
    """A = [[1, -1], [2, 0]], x = [1, 1]: A x = [0, 2], |A| |x| = [2, 2], so kappa =
    sqrt(8) / 2 = sqrt(2); the float32 values are not touched by the in-place |.|."""
    from sparsescope.ops.spmv import reference_and_cancellation

    a = sp.csr_matrix(np.array([[1.0, -1.0], [2.0, 0.0]], dtype=np.float32))
    y, kappa = reference_and_cancellation(a, np.ones(2, dtype=np.float32))
    np.testing.assert_array_equal(y, [0.0, 2.0])
    assert y.dtype == np.float64 and kappa == pytest.approx(np.sqrt(2.0))
    np.testing.assert_array_equal(a.data, np.array([1.0, -1.0, 2.0], dtype=np.float32))
    _, none = reference_and_cancellation(sp.csr_matrix((3, 2), dtype=np.float32),
                                         np.ones(2, dtype=np.float32))
    assert none == 1.0
