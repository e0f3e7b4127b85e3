"""A realistic RunSet: H200 spec, measured ceilings, two matrices, an ok, a skipped and a failed
case (the failed one with an infinite error), raw samples from the seed's ldoor timing."""

from __future__ import annotations

import math

import pytest

from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices.types import MatrixStats
from sparsescope.results.records import (
    CaseResult,
    Correctness,
    MatrixRecord,
    Provenance,
    RunSet,
)
from sparsescope.timing.types import Measurement, TimingConfig


def make_runset(run_id: str = "a1b2c3d4e5f6", created: str = "2026-02-28T10:00:00+00:00",
                device: str = "NVIDIA H200") -> RunSet:
    timing = TimingConfig(warmups=5, repeats=4, statistic="median", clock="cuda-events",
                          flush_l2=None, graph_capture=False, min_total_ms=0.0)
    ldoor = MatrixStats(rows=952_203, cols=952_203, nnz=46_522_475, nnz_per_row_mean=48.86,
                        nnz_per_row_std=11.9, nnz_per_row_min=28, nnz_per_row_max=77,
                        empty_rows=0, bandwidth=686_000, distinct_columns=952_203,
                        x_reuse=48.86, x_reuse_in_window=0.93)
    web = MatrixStats(rows=1_000_005, cols=1_000_005, nnz=3_105_536, nnz_per_row_mean=3.1,
                      nnz_per_row_std=25.3, nnz_per_row_min=0, nnz_per_row_max=4700,
                      empty_rows=12, bandwidth=999_000, distinct_columns=800_000,
                      x_reuse=3.88, x_reuse_in_window=0.25)
    ok = CaseResult(
        matrix="ldoor", backend="torch-cusparse-i64", op="spmv", outcome="ok", value_bytes=4,
        index_bytes=8, y_read=True,
        measurement=Measurement(
            samples_ms=(0.1964, 0.1971, 0.1958, 0.2012), config=timing, flushed=True,
            clock="cuda-events",
            kernel_breakdown=({"name": "csrmv_v3_kernel", "time_ms": 0.19, "pct": 96.7},)),
        correctness=Correctness(rel_err=3.2e-8, tolerance=1e-5, max_abs_err=1.1e-6),
        notes={"kernel": "csrmv_v3_kernel"})
    skipped = CaseResult(matrix="ldoor", backend="cupy-csr-i32", op="spmv", outcome="skipped",
                         reason="backend unavailable: cupy is not installed")
    failed = CaseResult(matrix="webbase-1M", backend="own-scalar", op="spmv", outcome="failed",
                        reason="rel_err inf above tolerance 1e-05; not timed",
                        correctness=Correctness(rel_err=math.inf, tolerance=1e-5,
                                                max_abs_err=math.inf))
    return RunSet(
        run_id=run_id, suite="seed6", scale=1.0,
        provenance=Provenance(created_utc=created, command="sparsescope run --suite seed6",
                              sparsescope_version="0.1.0", git_commit="unknown", hostname="gpu1",
                              platform="Linux-x86_64", python="3.11.7", device=device,
                              driver="570.86.15",
                              libraries={"numpy": "2.4.6", "torch": "2.9.1+cu128"}),
        device=get_spec("H200"),
        ceilings=MeasuredCeilings(device=device, copy_bw_gb_s=4012.5, read_bw_gb_s=None,
                                  method={"copy_bw_gb_s": "cudaMemcpy D2D 2 GiB, best of 5"}),
        timing=timing,
        matrices=(MatrixRecord(name="ldoor", source="suitesparse:GHS_psdef/ldoor", kind="file",
                               analog_of=None, stats=ldoor),
                  MatrixRecord(name="webbase-1M", source="generated:powerlaw(seed=0)",
                               kind="powerlaw", analog_of="webbase-1M", stats=web)),
        cases=(ok, skipped, failed),
        latency_ns=300.0,
    )


@pytest.fixture
def runset() -> RunSet:
    return make_runset()


@pytest.fixture(name="make_runset")
def make_runset_fixture():
    """The factory, for tests that need several runs (distinct ids, times, devices)."""
    return make_runset
