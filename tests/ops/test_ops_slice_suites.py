"""The slice003 suite and workloads (seed 003's 1,000-10,000 row matrices, 16-256 rows,
and 5,000 rows x 1,000 nonzeros)."""

from __future__ import annotations

import numpy as np

from sparsescope.backends.runner import run_case
from sparsescope.matrices.suite_dlmc import SLICE003, SLICE_WORKLOADS, load, slice_workloads
from sparsescope.ops.params import SliceParams, SpmmParams
from sparsescope.ops.registry import get_op
from sparsescope.timing.types import TimingConfig


def test_slice003_entries_and_workloads():
    sizes = {e.name: (e.rows, e.cols, e.nnz) for e in SLICE003.entries}
    assert sizes == {"slice-1000": (1000, 1000, 100_000), "slice-5000": (5000, 5000, 2_500_000),
                     "slice-10000": (10_000, 10_000, 10_000_000)}
    selected = sorted({n for counts in SLICE_WORKLOADS.values() for n in counts})
    assert selected[0] == 16 and 256 in selected and 5000 in selected
    # the large workload: 5,000 selected rows of 1,000 nonzeros each
    assert SLICE_WORKLOADS["slice-10000"][-1] * 1_000 == 5_000_000
    assert slice_workloads("slice003", "slice-1000") == (16, 32, 64)
    assert get_op("slice").workload_params("slice003", "slice-1000", set()) == [
        {"rows_selected": 16}, {"rows_selected": 32}, {"rows_selected": 64}]
    assert get_op("spmm").workload_params("slice003", "slice-1000", set()) == []
    assert slice_workloads("dlmc3", "dlmc-128x256") == ()
    assert get_op("slice").workload_params("dlmc3", "dlmc-128x256", set()) == []


def test_smallest_slice_matrix_has_fixed_rows_and_runs_its_workloads():
    matrix = next(load("slice003"))
    assert matrix.name == "slice-1000" and set(np.diff(matrix.csr.indptr)) == {100}
    config = TimingConfig(warmups=0, repeats=1, flush_l2=False)
    for rows_selected in slice_workloads("slice003", matrix.name):
        case = run_case(matrix, "slice-scipy-cpu", "slice", {"rows_selected": rows_selected},
                        config=config)
        assert case.outcome == "ok"
        assert case.derived.nnz_selected == 100 * rows_selected


def test_params_for_a_run_uses_the_seed_workloads_unless_rows_are_given():
    from sparsescope.ops.registry import params_for

    got = params_for("slice", {"weights": ["scalar", "per-nnz"]}, suite="slice003",
                     matrix="slice-1000")
    assert [(p.rows_selected, p.weights) for p in got] == [
        (16, "scalar"), (16, "per-nnz"), (32, "scalar"), (32, "per-nnz"), (64, "scalar"),
        (64, "per-nnz")]
    given = params_for("slice", {"rows_selected": [8]}, suite="slice003", matrix="slice-1000")
    assert [p.rows_selected for p in given] == [8]
    assert params_for("slice", None, suite="dlmc3", matrix="dlmc-128x256") == [
        SliceParams(rows_selected=64, rows=None, weights="per-nnz", out_of_range="error")]
    spmm = params_for("spmm", {"k": [8, 64], "layout": None}, suite="dlmc3",
                      matrix="dlmc-128x256")
    assert spmm == [SpmmParams(k=8, layout="row"), SpmmParams(k=64, layout="row")]
