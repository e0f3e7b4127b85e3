"""A sweep's cases carry their stage times (the worker's time on each, stage by stage) with
their queue time (submitted by the client -> started on the worker) and transfer time
(finished there -> decoded by the client), stored with the case in the store and in
results.json; ``results show --stages`` sums them."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparsescope import api
from sparsescope.ops.params import SpmvParams
from sparsescope.results.io import read_runset, record_from_dict
from sparsescope.results.records import CaseResult
from sparsescope.stages import OTHER, STAGES
from sparsescope.sweep.sources import expand_sources
from sparsescope.sweep.tasks import SweepTask
from sparsescope.sweep.worker import run_task

FAST = api.TimingConfig(warmups=1, repeats=3, flush_l2=False)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """Two small Matrix Market files; the CPU's ceilings faked (no 3 s measurement)."""
    from sparsescope.hardware import cpu_ceilings
    from sparsescope.hardware.types import MeasuredCeilings

    monkeypatch.setattr(cpu_ceilings, "measure_cpu_ceilings", lambda *a, **k: MeasuredCeilings(
        device="test CPU", copy_bw_gb_s=20.0, read_bw_gb_s=25.0, fp32_gflops=200.0))
    root = tmp_path / "mats"
    root.mkdir()
    for i, n in enumerate((50, 70)):
        scipy.io.mmwrite(root / f"s{i}.mtx", sp.random(n, n, density=0.1, format="csr",
                                                       random_state=i, dtype=np.float64))
    return root


def test_sweep_cases_carry_stages_queue_and_transfer_times(folder, tmp_path,
                                                           figures_stubbed):
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                    timing=FAST, store_path=tmp_path / "store.sqlite", quiet=True)
    assert out.ran == 2
    runset = read_runset(out.results_path)
    assert runset.stages is None  # a sweep's cases run on workers at once: no run total
    for case in runset.cases:
        st = case.stages
        assert set(st.seconds) == {*STAGES, OTHER}
        assert math.fsum(st.seconds.values()) == pytest.approx(st.wall_s, rel=1e-9)
        assert st.of("timing") > 0 and st.of("check") > 0 and st.of("reference") > 0
        assert st.queue_s is not None and st.queue_s >= 0
        assert st.transfer_s is not None and st.transfer_s >= 0
    table = api.show_results(out.results_path).stages
    assert table.basis == "cases" and len(table.cases) == 2
    assert table.wall_s == pytest.approx(sum(c.stages.wall_s for c in runset.cases))
    assert table.queue_s == pytest.approx(sum(c.stages.queue_s for c in runset.cases))


@pytest.mark.parametrize("case_timeout_s", [None, 60.0])
def test_a_worker_times_its_case_and_its_queue(folder, case_timeout_s):
    """The case's stages are recorded in the thread a --case-timeout runs it in, too; its
    queue time is from the client's submission (here 5 s before the call)."""
    (src, _) = expand_sources([str(folder)])
    task = SweepTask(source=src, backend="scipy-cpu", op="spmv", params=SpmvParams())
    before = time.time()
    submitted = before - 5.0
    data = run_task(task, FAST, case_timeout_s=case_timeout_s, submitted_at=submitted)
    after = time.time()
    case = record_from_dict(data["case"], CaseResult, "case")
    assert case.outcome == "ok"
    assert case.stages.of("timing") > 0 and case.stages.of("prepare") > 0
    assert data["seconds"] == case.stages.wall_s
    # started between the call and its return: queued 5 s and at most the call's own time
    assert 5.0 <= case.stages.queue_s <= after - submitted
    assert case.stages.transfer_s is None  # the client adds it (received_case)
    assert before <= data["finished_at"] <= after
