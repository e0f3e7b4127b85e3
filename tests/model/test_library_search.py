"""What a cuSPARSE call costs beyond its route's probe (``model.call_overhead``): launches the
probe did not make, and the row search (``csr_partition_kernel``) of a call that was not
preprocessed, one dependent load a level, deeper for more rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.model.call_overhead import (
    PROBE_CALLS,
    PROBE_ROWS,
    call_overhead_us,
    library_extra_us,
    search_levels,
)
from sparsescope.model.predict import DeviceRates, predict_spmv
from sparsescope.model.traffic import csr_spmv_traffic

RATES = DeviceRates(
    name="test GPU", sm_count=4, max_threads_per_sm=2048, max_blocks_per_sm=32,
    l2_bytes=1 << 26, dram_bw_gb_s=1000.0, l2_bw_gb_s=4000.0, dram_latency_ns=336.0,
    l2_latency_ns=145.0, fp32_gflops=10000.0, dram_gather_gsectors_s=None,
    l2_gather_gsectors_s=None, launch_us=2.7, call_us=3.6, next_launch_us=1.6,
    library_call_us={"cupy": 11.0, "nvmath": 7.8, "torch": 12.0},
    library_call_throughput_us={"cupy": 8.0, "nvmath": 4.8})
WARM = dataclasses.replace(RATES, timing_mode="throughput")


@pytest.mark.parametrize("rows, levels", [(32, 6), (1000, 10), (325_729, 19), (1, 1), (0, 1)])
def test_search_levels(rows, levels):
    assert search_levels(rows) == levels


def test_extra_cost_hand_checks():
    # nvmath not preprocessed: 1 launch beyond the probe's 2, and the whole search of 10
    # levels at the DRAM latency: 1.6 + 3.36 = 4.96 us
    assert library_extra_us(RATES, "nvmath", 3, 1000, True)[0] == pytest.approx(4.96)
    # the preprocessed call is the probe's: nothing more
    assert library_extra_us(RATES, "nvmath", 2, 1000, False) == (0.0, "")
    # CSR_ALG2, preprocessed: the fix-up's launch only
    assert library_extra_us(RATES, "nvmath", 3, 10**6, False)[0] == pytest.approx(1.6)
    # cupy searches in its probe too: only the 4 levels beyond the probe's 6
    assert library_extra_us(RATES, "cupy", 3, 1000, True)[0] == pytest.approx(4 * 0.336)
    # back to back the offsets are in the L2: 4 x 145 ns
    assert library_extra_us(WARM, "cupy", 3, 1000, True)[0] == pytest.approx(4 * 0.145)
    # a route whose probe is not known: nothing added
    assert library_extra_us(RATES, "other", 5, 1000, True) == (0.0, "")


def test_call_overhead_carries_the_extra_cost():
    us, how = call_overhead_us(RATES, 3, "cupy", rows=325_729, row_search=True)
    assert us == pytest.approx(11.0 + 13 * 0.336)
    assert "row search 19 levels (probe 6) x 336 ns" in how
    # the probe's own call costs the probe's time, whatever the matrix was before
    assert call_overhead_us(RATES, 3, "cupy", rows=PROBE_ROWS, row_search=True)[0] == 11.0
    assert call_overhead_us(RATES, 3, "cupy")[0] == 11.0      # no matrix given: the probe


def test_the_probes_are_the_calls_their_backends_declare():
    """PROBE_CALLS and PROBE_ROWS restate what the probes' backends declare on the probe
    matrix (``backends.library_probe``): the same launches and search."""
    from sparsescope.backends.library_probe import LIBRARY_PROBES, probe_matrix
    from sparsescope.backends.library_probe import PROBE_ROWS as ROWS
    from sparsescope.backends.registry import get_backend

    assert PROBE_ROWS == ROWS
    assert set(PROBE_CALLS) == set(LIBRARY_PROBES)
    for route, name in LIBRARY_PROBES.items():
        _, shape = get_backend(name).host_plan(probe_matrix(), "float32", 4, 132)
        assert (shape.launches, shape.row_search) == PROBE_CALLS[route], route
        assert shape.library == route


def test_planned_variants_declare_their_search_and_fixup():
    from sparsescope.backends.registry import get_backend

    a = sp.random(1000, 1000, density=0.01, format="csr", random_state=0)
    shapes = {(alg, pre): get_backend("nvmath-cusparse-i32", alg=alg,
                                      preprocess=pre).host_plan(a, "float32", 4, 132)[1]
              for alg in (0, 2) for pre in (0, 1)}
    assert [(s.launches, s.row_search, s.fixup) for s in shapes.values()] == [
        (3, True, False), (2, False, False), (4, True, True), (3, False, True)]


def test_a_partitioned_call_is_predicted_slower_by_its_search():
    """nvmath with and without the preprocessing on the same matrix: the same kernel terms,
    an overhead larger by one launch and the search of ceil(log2(1,001)) = 10 levels."""
    from sparsescope.backends._gpu import cusparse_csrmv_shape

    a = sp.random(1000, 1000, density=0.01, format="csr", random_state=0)
    traffic = csr_spmv_traffic(*a.shape, a.nnz)
    planned = cusparse_csrmv_shape(a.nnz, 4, 2, "nvmath", row_search=False)
    unplanned = cusparse_csrmv_shape(a.nnz, 4, 3, "nvmath", row_search=True)
    p = [predict_spmv(a.indptr, a.indices, 1000, traffic, s, RATES, flushed=True)
         for s in (planned, unplanned)]
    assert p[1].predicted_ms - p[0].predicted_ms == pytest.approx((1.6 + 10 * 0.336) * 1e-3)
    np.testing.assert_allclose([t.time_ms for t in p[0].terms if t.name != "overhead"],
                               [t.time_ms for t in p[1].terms if t.name != "overhead"])
