"""One float64 reference per matrix: the cases of other index widths are the first case with
their byte models counted again (``Op.at_index_width``), equal to a case built anew."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends import runner
from sparsescope.ops.registry import get_op


def _matrix() -> sp.csr_matrix:
    rng = np.random.default_rng(3)
    m = sp.random(97, 61, density=0.07, random_state=rng, format="csr")
    m.data = rng.uniform(-2, 2, m.nnz)
    return m


@pytest.mark.parametrize("op, params", [("spmv", None), ("spmm", {"k": 5}),
                                        ("spmm", {"k": 3, "layout": "col"})])
def test_case_at_another_width_equals_a_case_built_anew(op, params):
    op_obj = get_op(op)
    csr = _matrix()
    narrow = op_obj.make_case(csr, params, value_dtype="float32", index_bytes=4, seed=2)
    wide = op_obj.make_case(csr, params, value_dtype="float32", index_bytes=8, seed=2)
    derived = op_obj.at_index_width(narrow, 8, "float32")
    assert derived.traffic == wide.traffic and derived.csr_traffic == wide.csr_traffic
    assert derived.traffic != narrow.traffic  # 8-byte indices move more bytes
    np.testing.assert_array_equal(derived.reference, wide.reference)
    np.testing.assert_array_equal(derived.inputs, wide.inputs)
    assert derived.tolerance == wide.tolerance and derived.derived == wide.derived
    assert derived.matrix is narrow.matrix and derived.reference is narrow.reference


def test_run_matrix_builds_one_reference_for_two_widths(monkeypatch):
    from sparsescope.matrices.types import Matrix
    from sparsescope.timing.types import TimingConfig

    op_obj = get_op("spmv")
    calls = []
    real = type(op_obj).make_case

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("index_bytes"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(op_obj), "make_case", counting)
    matrix = Matrix(name="m", csr=_matrix().astype(np.float64), source="test")
    seen = []
    monkeypatch.setattr(runner, "run_case",
                        lambda m, b, op, **kw: seen.append(kw["case"]) or None)
    runner.run_matrix(matrix, ["torch-cusparse-i32", "torch-cusparse-i64"], "spmv", [None],
                      config=TimingConfig(warmups=0, repeats=1))
    assert calls == [4]
    assert [c.traffic.index_bytes for c in seen] == [4, 8]
    assert seen[0].reference is seen[1].reference


def test_largest_magnitude_is_remembered_per_array():
    data = np.array([1.0, -5.0, 2.0])
    assert runner._largest_magnitude(data) == 5.0
    other = np.array([7.0, -1.0])
    assert runner._largest_magnitude(other) == 7.0
    assert runner.value_range_reason(sp.csr_matrix(np.array([[4.8e38]])), "float32")


def test_largest_magnitude_forgets_a_freed_array():
    """The remembered value belongs to the array object while it lives (a weak reference):
    the same array is not read again (changed in place here only to show it), and once it
    is freed the cache holds nothing of it, so a new array of the same size, which may get
    the freed one's id and buffer, is read afresh (a 3 x 3 matrix of 1.0 was once skipped
    as holding the previous test's 1e39)."""
    import gc

    huge = np.array([1e39, 0.5, 2.0, 3.0])
    assert runner._largest_magnitude(huge) == 1e39
    huge[0] = 1.0
    assert runner._largest_magnitude(huge) == 1e39   # the same object: remembered
    del huge
    gc.collect()
    assert runner._LARGEST[0]() is None   # no strong reference kept
    assert runner._largest_magnitude(np.array([1.0, 0.5, 2.0, 3.0])) == 3.0


def test_run_matrix_ahead_packs_every_own_format_in_the_background(monkeypatch):
    """On a GPU run the runner starts each own kernel's host packing before the first case;
    a case's prepare then finds its format built (no second build)."""
    from sparsescope.backends.format_cache import FORMATS
    from sparsescope.backends.spmv_sell import CudaSpmvDelta16, CudaSpmvSell
    from sparsescope.matrices.types import Matrix
    from sparsescope.timing.types import TimingConfig

    FORMATS.clear()
    monkeypatch.setattr(runner, "skip_reason", lambda *a: "")
    cases = []
    monkeypatch.setattr(runner, "run_case",
                        lambda m, b, op, **kw: cases.append(kw["case"]) or None)
    matrix = Matrix(name="m", csr=_matrix().astype(np.float64), source="test")
    before = FORMATS.builds
    runner.run_matrix(matrix, ["cuda-spmv-sell", "cuda-spmv-delta16", "torch-cusparse-i32"],
                      "spmv", [None], config=TimingConfig(warmups=0, repeats=1), ahead=True)
    sell = CudaSpmvSell()
    fmt = FORMATS.get(cases[0].matrix, sell.format_key(),
                      lambda m: pytest.fail("built again"))
    assert fmt.padded >= cases[0].matrix.nnz
    delta = CudaSpmvDelta16()
    FORMATS.get(cases[0].matrix, delta.format_key(), lambda m: pytest.fail("built again"))
    assert FORMATS.builds - before == 2  # sell and delta16; the library packs nothing
    FORMATS.clear()


def test_run_matrix_without_ahead_packs_nothing_in_advance(monkeypatch):
    from sparsescope.backends.format_cache import FORMATS
    from sparsescope.matrices.types import Matrix
    from sparsescope.timing.types import TimingConfig

    FORMATS.clear()
    monkeypatch.setattr(runner, "run_case", lambda m, b, op, **kw: None)
    matrix = Matrix(name="m", csr=_matrix().astype(np.float64), source="test")
    before = FORMATS.builds
    runner.run_matrix(matrix, ["cuda-spmv-sell"], "spmv", [None],
                      config=TimingConfig(warmups=0, repeats=1))
    assert FORMATS.builds == before
