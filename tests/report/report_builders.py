"""Fake-but-realistic RunSets for the report tests, built from the record classes
(imported by ``conftest.py`` and by the test modules: a module name of its own, so pytest runs
this folder together with others whose conftest also holds helpers).

* ``gpu_runset``: the seed's six matrices (as generated analogs) with the seed's measured times
  for ``torch-cusparse-i64`` (INT64, y written only) on an H200 spec built here.
* ``cpu_runset``: a SciPy run of three small matrices on a CPU, one case ok, one skipped, one
  failed (the failed one carries a measurement that must never be reported).
* ``fake_specs``: the spec table (``sparsescope.hardware.specs``) replaced by three GPUs, so the
  numbers checked here do not move when the real table is edited.
"""

from __future__ import annotations

from sparsescope.hardware.types import DeviceSpec, MeasuredCeilings
from sparsescope.matrices.types import MatrixStats
from sparsescope.results.records import (
    CaseResult,
    Correctness,
    MatrixRecord,
    Provenance,
    RunSet,
)
from sparsescope.timing.types import Measurement, TimingConfig

#: (name, rows, nnz, kind, nnz/row std, nnz/row max, bandwidth): the seed's six matrices.
SEED_MATRICES = (
    ("webbase-1M", 1_000_005, 3_105_536, "powerlaw", 25.3, 4700, 999_000),
    ("cant", 62_451, 4_007_383, "banded", 14.1, 78, 10_000),
    ("pwtk", 217_918, 11_634_424, "banded", 4.7, 180, 190_000),
    ("ldoor", 952_203, 46_522_475, "banded", 11.9, 77, 686_000),
    ("circuit5M", 5_558_326, 59_524_291, "powerlaw", 1356.0, 1_290_501, 5_555_000),
    ("cage15", 5_154_859, 99_199_551, "scattered", 5.6, 47, 5_000_000),
)
#: Seed 000 section 3.1: torch.sparse.mm -> cuSPARSE, INT64 indices, ms.
SEED_TIMES_MS = {"webbase-1M": 0.0411, "cant": 0.0408, "pwtk": 0.0663, "ldoor": 0.1964,
                 "circuit5M": 0.3211, "cage15": 0.4636}


def h200_spec() -> DeviceSpec:
    return DeviceSpec(
        name="H200", vendor_name="NVIDIA H200 SXM 141GB", kind="gpu", compute_capability="9.0",
        sm_count=132, max_warps_per_sm=64, max_threads_per_sm=2048, max_blocks_per_sm=32,
        registers_per_sm=65_536, shared_mem_per_sm_bytes=233_472, warp_schedulers_per_sm=4,
        l2_bytes=50 * 2**20, peak_bw_gb_s=4800.0, fp32_peak_gflops=66_900.0,
        sm_clock_mhz=1980.0, dram_latency_ns=300.0, memory="141 GB HBM3e",
        sources={"peak_bw_gb_s": "NVIDIA H200 datasheet"})


def b200_spec() -> DeviceSpec:
    return DeviceSpec(
        name="B200", vendor_name="NVIDIA B200", kind="gpu", compute_capability="10.0",
        sm_count=148, max_warps_per_sm=64, max_threads_per_sm=2048, max_blocks_per_sm=32,
        registers_per_sm=65_536, shared_mem_per_sm_bytes=233_472, warp_schedulers_per_sm=4,
        l2_bytes=126 * 2**20, peak_bw_gb_s=8000.0, fp32_peak_gflops=80_000.0,
        sm_clock_mhz=1965.0, dram_latency_ns=200.0)


def rtx_spec() -> DeviceSpec:
    return DeviceSpec(
        name="RTX4070TiS", vendor_name="NVIDIA GeForce RTX 4070 Ti SUPER", kind="gpu",
        compute_capability="8.9", sm_count=66, max_warps_per_sm=48, max_threads_per_sm=1536,
        max_blocks_per_sm=24, registers_per_sm=65_536, shared_mem_per_sm_bytes=102_400,
        warp_schedulers_per_sm=4, l2_bytes=48 * 2**20, peak_bw_gb_s=672.0,
        fp32_peak_gflops=44_100.0, sm_clock_mhz=2610.0, dram_latency_ns=400.0)


def cpu_spec() -> DeviceSpec:
    return DeviceSpec(
        name="cpu", vendor_name="AMD EPYC 7B13 (2 cores)", kind="cpu", compute_capability="",
        sm_count=2, max_warps_per_sm=1, max_threads_per_sm=2, max_blocks_per_sm=1,
        registers_per_sm=0, shared_mem_per_sm_bytes=0, warp_schedulers_per_sm=1,
        l2_bytes=32 * 2**20, peak_bw_gb_s=12.5, fp32_peak_gflops=150.0, sm_clock_mhz=2450.0,
        dram_latency_ns=90.0, sources={"peak_bw_gb_s": "measured copy"})


FAKE_SPECS = (h200_spec(), b200_spec(), rtx_spec())


def stats(rows: int, cols: int, nnz: int, std: float = 1.0, nmax: int = 1, bw: int = 0,
          empty: int = 0) -> MatrixStats:
    return MatrixStats(rows=rows, cols=cols, nnz=nnz, nnz_per_row_mean=nnz / rows,
                       nnz_per_row_std=std, nnz_per_row_min=0 if empty else 1,
                       nnz_per_row_max=nmax, empty_rows=empty, bandwidth=bw,
                       distinct_columns=min(cols, nnz), x_reuse=nnz / min(cols, nnz),
                       x_reuse_in_window=0.5)


def samples_around(time_ms: float, n: int = 20, spread: float = 0.02) -> tuple[float, ...]:
    """n samples whose median is exactly time_ms, symmetric spread."""
    half = [time_ms * (1 + spread * (i + 1) / n) for i in range(n // 2)]
    return tuple(sorted([time_ms * 2 - h for h in half] + half))


def provenance(device: str, command: str) -> Provenance:
    return Provenance(created_utc="2026-02-28T12:00:00Z", command=command,
                      sparsescope_version="0.1.0", git_commit="abc1234", hostname="node1",
                      platform="Linux-6.8-x86_64", python="3.11.9", device=device,
                      driver="580.159" if "H200" in device else "",
                      libraries={"numpy": "2.1.0", "scipy": "1.14.1"})


def make_gpu_runset(*, y_read: bool = False, copy_bw: float | None = 4256.8) -> RunSet:
    config = TimingConfig(warmups=5, repeats=20, statistic="median", clock="cuda-events",
                          flush_l2=False)
    matrices, cases = [], []
    for name, rows, nnz, kind, std, nmax, bw in SEED_MATRICES:
        matrices.append(MatrixRecord(name=name, source=f"generated:{kind}(seed=0)", kind=kind,
                                     analog_of=name, stats=stats(rows, rows, nnz, std, nmax, bw)))
        cases.append(CaseResult(
            matrix=name, backend="torch-cusparse-i64", op="spmv", outcome="ok", value_bytes=4,
            index_bytes=8, y_read=y_read,
            measurement=Measurement(samples_ms=samples_around(SEED_TIMES_MS[name]),
                                    config=config, flushed=False, clock="cuda-events"),
            correctness=Correctness(rel_err=7e-8, tolerance=1e-5)))
    return RunSet(
        run_id="h200-seed", suite="seed-analogs", scale=1.0,
        provenance=provenance("NVIDIA H200", "sparsescope run --suite seed-analogs"),
        device=h200_spec(),
        ceilings=MeasuredCeilings(device="NVIDIA H200", copy_bw_gb_s=copy_bw,
                                  method={"copy_bw_gb_s": "cudaMemcpy D2D 1 GiB, median of 20"}),
        timing=config, matrices=tuple(matrices), cases=tuple(cases), latency_ns=300.0)


def make_cpu_runset(reference_gpu: str = "H200") -> RunSet:
    """Two ok cases, one skipped, one failed, on a CPU; ``reference_gpu`` as the run named it
    ("": none named)."""
    config = TimingConfig(warmups=2, repeats=10, statistic="median", clock="host",
                          flush_l2=True)
    mats = (("band-small", 20_000, 200_000, "banded", None),
            ("pl-small", 30_000, 150_000, "powerlaw", "webbase-1M"),
            ("tiny", 500, 2_500, "uniform", None))
    matrices = tuple(MatrixRecord(name=n, source=f"generated:{k}", kind=k, analog_of=a,
                                  stats=stats(r, r, z, 2.0, 40, 300, empty=3))
                     for n, r, z, k, a in mats)
    ok = CaseResult(matrix="band-small", backend="scipy-cpu", op="spmv", outcome="ok",
                    value_bytes=4, index_bytes=4,
                    measurement=Measurement(samples_ms=samples_around(0.25, 10), config=config,
                                            flushed=True),
                    correctness=Correctness(rel_err=2e-7, tolerance=1e-5))
    ok2 = CaseResult(matrix="pl-small", backend="scipy-cpu", op="spmv", outcome="ok",
                     value_bytes=4, index_bytes=4,
                     measurement=Measurement(samples_ms=samples_around(0.31, 10), config=config,
                                             flushed=True),
                     correctness=Correctness(rel_err=3e-7, tolerance=1e-5))
    skipped = CaseResult(matrix="tiny", backend="torch-cusparse-i64", op="spmv",
                         outcome="skipped", reason="torch is not installed")
    failed = CaseResult(matrix="tiny", backend="scipy-cpu", op="spmv", outcome="failed",
                        reason="rel_err 3.2e-02 above tolerance 1e-05",
                        measurement=Measurement(samples_ms=(0.0001,) * 10, config=config),
                        correctness=Correctness(rel_err=3.2e-2, tolerance=1e-5))
    return RunSet(
        run_id="cpu-small", suite="small", scale=0.01,
        provenance=provenance("AMD EPYC 7B13", "sparsescope run --suite small --backend scipy"),
        device=cpu_spec(), ceilings=MeasuredCeilings(device="AMD EPYC 7B13", copy_bw_gb_s=12.5),
        timing=config, matrices=matrices, cases=(ok, ok2, skipped, failed), latency_ns=300.0,
        reference_gpu=reference_gpu)
