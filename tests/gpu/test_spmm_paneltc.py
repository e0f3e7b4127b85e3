"""spmm-cuda-paneltc (panels of 64 rows, X staged in shared memory, 3xTF32 on tensor cores) on
the GPU against float64 through the op runner's gate: the awkward matrices (empty rows, a
heavy row, 1 x 1, one row, one column, row counts not multiples of 64, column counts not
multiples of 8) at k = 4, 36, 64, 256 and 260 (three column tiles, the last partial), the fill
limit lifted so that every matrix runs; forced splits (Y zeroed, partial tiles added
atomically) with X split once a stage for the CTA and two warps a block row; plain TF32
labelled and judged by the same gate; and a weight 80 % sparse under ``spmm-cuda-auto`` with
the panel kernel among its candidates."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.runner import run_case
from sparsescope.matrices.types import Matrix
from sparsescope.timing.types import TimingConfig

pytestmark = pytest.mark.gpu
QUICK = TimingConfig(warmups=1, repeats=3)
KS = (4, 36, 64, 256, 260)


def _run(matrix, backend, k, timed=False, layout="row"):
    return run_case(matrix, backend, "spmm", {"k": k, "layout": layout}, config=QUICK,
                    value_dtype="float32", index_bytes=4, seed=k, timed=timed)


def test_matches_float64_on_awkward_matrices(awkward_matrices):
    from sparsescope.backends.spmm_paneltc import SpmmCudaPanelTc

    failures = []
    for matrix in awkward_matrices:
        for k in KS:
            # the default launch; and 3 splits, 2 items a stage, X split by each warp
            for options in ({}, {"split": 3, "kb": 2, "xsplit": True, "wn": 2}):
                backend = SpmmCudaPanelTc(max_fill=float("inf"), **options)
                case = _run(matrix, backend, k)
                if case.outcome != "ok":
                    failures.append((matrix.name, k, options, case.outcome, case.reason))
                else:
                    assert case.notes["precision"].startswith("3xTF32")
    assert not failures, failures


def _weight(rows: int, cols: int, density: float, seed: int) -> Matrix:
    rng = np.random.default_rng(seed)
    a = sp.random(rows, cols, density=density, format="csr", random_state=rng,
                  dtype=np.float32)
    return Matrix(name=f"weight-{rows}x{cols}-{density}", csr=a, source="test")


def test_tf32_is_labelled_and_3xtf32_is_timed():
    from sparsescope.backends.spmm_paneltc import SpmmCudaPanelTc

    weight = _weight(300, 1000, 0.2, seed=1)
    three = _run(weight, SpmmCudaPanelTc(), 64, timed=True)
    one = _run(weight, SpmmCudaPanelTc(passes=1), 64)
    assert three.outcome == "ok", three.reason
    assert three.measurement is not None and three.measurement.median_ms > 0
    assert one.correctness is not None
    assert one.correctness.rel_err > 5 * three.correctness.rel_err


def test_auto_plans_the_panel_kernel_on_a_dense_weight_in_both_layouts():
    import json

    weight = _weight(1024, 1024, 0.2, seed=2)
    for layout in ("row", "col"):
        case = _run(weight, "spmm-cuda-auto", 128, timed=True, layout=layout)
        assert case.outcome == "ok", case.reason
        table = {row["backend"]: row for row in json.loads(case.notes["selection_table"])}
        assert table["spmm-cuda-paneltc"]["predicted_ms"] > 0
