"""A chooser's row samples (``backends.choice_samples``): the plan budget it plans under, the
size of its trial's sample, the sample itself, and its formats packed once apart from the
format cache."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.backends import choice_samples
from sparsescope.backends.choice_samples import (
    chooser_budget,
    packed_apart,
    trial_matrix,
    trial_nnz,
)
from sparsescope.backends.format_cache import FORMATS
from sparsescope.backends.select_predicted import select_by_prediction
from sparsescope.backends.spmv_sell import CudaSpmvSell
from sparsescope.context.predict import COUNTS, current_plan_budget, forget_plans
from sparsescope.matrices import generate
from sparsescope.whatif import gpu_rates


def test_the_chooser_budget_is_the_tighter_of_the_runs_and_its_own():
    assert chooser_budget(None) == 4_000_000 * 300 == 1_200_000_000
    assert chooser_budget(10**9) == 10**9
    assert chooser_budget(5 * 10**9) == 1_200_000_000


def test_the_trial_holds_four_l2s_of_stored_entries():
    assert trial_nnz(50 * 2**20, 4) == 4 * 52_428_800 // 8 == 26_214_400
    assert trial_nnz(50 * 2**20, 8) == 4 * 52_428_800 // 12


def test_a_small_matrix_is_trialled_whole_a_large_one_on_whole_rows():
    csr = generate("powerlaw", 4000, 40_000, seed=5)
    whole = trial_matrix(csr, l2_bytes=10**9, value_bytes=4)
    assert whole.csr is csr and not whole.sampled
    assert whole.describe() == "on the whole matrix"
    part = trial_matrix(csr, l2_bytes=10_000, value_bytes=4)  # 5,000 nonzeros a trial
    assert part.sampled and part.total_nnz == csr.nnz
    assert part.csr.shape[1] == csr.shape[1] and part.csr.shape[0] < csr.shape[0]
    assert 2_500 <= part.csr.nnz <= 0.5 * csr.nnz
    # whole rows: the sample's row lengths are rows of the matrix, the longest among them
    lengths = np.diff(csr.indptr)
    assert np.diff(part.csr.indptr).max() == lengths.max()
    assert f"{part.csr.nnz:,} of {csr.nnz:,} nonzeros" in part.describe()


def test_trial_formats_are_packed_once_a_format_and_kept_out_of_the_cache():
    csr = generate("banded", 2000, 20_000, seed=6)
    builds = []

    class Counted(CudaSpmvSell):
        def build_format(self, m):
            builds.append(self.format_key())
            return super().build_format(m)

    backends = [Counted(tpr=1, unroll=4, minb=6), Counted(tpr=1, unroll=2, minb=8),
                Counted(tpr=2, unroll=4, minb=6)]
    before = FORMATS.builds
    formats = packed_apart(backends, csr)
    assert sorted(builds) == sorted({b.format_key() for b in backends}) and len(builds) == 2
    assert set(formats) == set(builds) and FORMATS.builds == before
    direct = CudaSpmvSell(tpr=2).build_format(csr)
    packed = formats[backends[2].format_key()]
    for name in ("values", "columns"):
        if hasattr(direct, name):
            np.testing.assert_array_equal(getattr(packed, name), getattr(direct, name))


@pytest.mark.slow
def test_a_large_matrix_s_candidates_are_planned_on_the_model_s_row_sample(monkeypatch):
    """Above WHOLE_PLAN_NNZ every candidate (each packs a format: tiles, SELL, blocks) is
    planned on the sample (counted), and the run's own budget is back in force afterwards."""
    csr = generate("banded", 3000, 24_000, seed=7)
    gpu = gpu_rates("H100", use_store=False)
    forget_plans()
    monkeypatch.setattr(choice_samples, "WHOLE_PLAN_NNZ", 8_000)
    monkeypatch.setattr("sparsescope.model.plan_sample.SAMPLE_NNZ", 4_000)
    before = COUNTS["sampled_plans"]
    selection, table = select_by_prediction(csr, gpu)
    assert COUNTS["sampled_plans"] - before == len(table) == 14  # every candidate packs
    assert current_plan_budget() is None
    assert selection.rule == "predicted-fastest"
    forget_plans()
    monkeypatch.setattr(choice_samples, "WHOLE_PLAN_NNZ", 10**9)
    before = COUNTS["sampled_plans"]
    select_by_prediction(csr, gpu)
    assert COUNTS["sampled_plans"] == before
