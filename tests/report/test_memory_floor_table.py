"""The memory-floor table: each matrix's fastest own kernel against its format's floor."""

from __future__ import annotations

import dataclasses

import pytest
from prediction_builders import prediction, timed
from report_builders import make_gpu_runset

from sparsescope.report.context import build_context
from sparsescope.report.memory_floor_table import memory_floor_table
from sparsescope.report.tables import build_tables


def _runset():
    rs = make_gpu_runset()
    cant = next(c for c in rs.cases if c.matrix == "cant")
    floor = dict(gather_floor_ms=0.02, gather_floor_l2_ms=0.012, gather_floor_dram_ms=0.017,
                 gather_floor_x_requests=400_703.0, gather_floor_hot_share=0.25)
    beaten = dict(floor, gather_floor_ms=0.05)
    extra = (
        # cant: two own kernels; the faster (0.025 ms) sets the row: 0.02 / 0.025 = 80 %
        timed("cant", "cuda-spmv-sell", 0.025, prediction(0.022, **floor), cant),
        timed("cant", "cuda-spmv-merge", 0.030, prediction(0.022, **floor), cant),
        # circuit5M: auto, faster than its kernel's floor (0.05 / 0.04 = 125 %)
        dataclasses.replace(timed("circuit5M", "cuda-spmv-auto", 0.04,
                                  prediction(0.03, **beaten), cant),
                            notes={"selected": "cuda-spmv-adaptive"}),
        # pwtk: an own kernel whose prediction has no floor -> no row
        timed("pwtk", "cuda-spmv-sell", 0.02, prediction(0.02), cant),
    )
    return dataclasses.replace(rs, cases=rs.cases + extra)


def test_rows_by_hand():
    table = memory_floor_table(build_context(_runset()))
    rows = {r.matrix: r for r in table.rows}
    assert set(rows) == {"cant", "circuit5M"}
    cant = rows["cant"]
    assert cant.own_backend == "cuda-spmv-sell" and cant.own_pct_of_floor == pytest.approx(80.0)
    assert cant.binding == "dram" and cant.hot_share_pct == pytest.approx(25.0)
    # 400,703 requests over cant's 4,007,383 nonzeros
    assert cant.x_requests_per_nnz == pytest.approx(0.1, abs=1e-4)
    assert cant.other_backend == "torch-cusparse-i64" and cant.other_pct_of_floor is None
    assert rows["circuit5M"].own_pct_of_floor == pytest.approx(125.0)
    assert rows["circuit5M"].own_backend == "cuda-spmv-auto (cuda-spmv-adaptive)"
    assert "median of 2 matrices" in table.reading and "lowest cant at 80 %" in table.reading
    assert "model defect): circuit5M" in table.reading


def test_absent_without_floors_and_listed_with_them():
    assert memory_floor_table(build_context(make_gpu_runset())) is None
    names = [t.name for t in build_tables(_runset())]
    assert names.index("memory_floor") == names.index("floor") + 1
