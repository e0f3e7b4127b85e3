"""``sparsescope results show`` after issue 34: bandwidths to 3 significant digits (a CPU's
SpMM no longer prints "0 GB/s"), each op's own byte model (named in the header, used for its
rows), and results files written before stage times (schema 2) still read, ``--stages``
saying they hold none."""

from __future__ import annotations

import json

import pytest

from sparsescope.cli import main
from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices.types import MatrixStats
from sparsescope.ops.params import SpmmParams
from sparsescope.results.io import read_runset, write_runset
from sparsescope.results.records import (
    CaseResult,
    Correctness,
    MatrixRecord,
    Provenance,
    RunSet,
)
from sparsescope.results.tables import BYTE_MODELS
from sparsescope.timing.types import Measurement, TimingConfig

MODULES = ["sparsescope.cli.results_cmd"]
TIMING = TimingConfig(clock="host")
STATS = MatrixStats(rows=1000, cols=1000, nnz=5000, nnz_per_row_mean=5.0, nnz_per_row_std=0.0,
                    nnz_per_row_min=5, nnz_per_row_max=5, empty_rows=0, bandwidth=1000,
                    distinct_columns=1000, x_reuse=5.0, x_reuse_in_window=1.0)
# A schema-2 SpMM run of the H200 (10 cases of graph-14, k = 128 and 512), committed before
# stage times existed.
SCHEMA2_RUN = "results/h200/spmm-tuning/2026-11-25-narrow-slabs/slab-graph-14.json"


def _cpu_spmm_runset() -> RunSet:
    """A CPU's SpMM at k = 8: 5 ms for a 1000 x 1000 matrix of 5000 nonzeros."""
    case = CaseResult(
        matrix="m", backend="spmm-scipy-cpu", op="spmm", outcome="ok", index_bytes=8,
        params=SpmmParams(k=8, layout="row"),
        measurement=Measurement(samples_ms=(5.0, 5.0, 5.0), config=TIMING, flushed=False,
                                clock="host"),
        correctness=Correctness(rel_err=1e-7, tolerance=1e-5))
    return RunSet(
        run_id="cpu1", suite="files", scale=1.0,
        provenance=Provenance(created_utc="2026-11-27T10:00:00+00:00", command="test",
                              sparsescope_version="0.1.0", git_commit="unknown", hostname="h",
                              platform="Linux", python="3.11", device="AMD EPYC"),
        device=get_spec("H200"), ceilings=MeasuredCeilings(device="AMD EPYC",
                                                           copy_bw_gb_s=20.0),
        timing=TIMING, matrices=(MatrixRecord(name="m", source="test", kind="uniform",
                                              analog_of=None, stats=STATS),),
        cases=(case,), latency_ns=300.0)


def test_cpu_spmm_bandwidth_has_significant_digits_and_spmm_bytes(tmp_path, capsys):
    path = write_runset(tmp_path / "results.json", _cpu_spmm_runset())
    assert main(["results", "show", str(path), "--json"], modules=MODULES) == 0
    doc = json.loads(capsys.readouterr().out)
    # SpMM's compulsory bytes at INT32 (though it ran with INT64): A = 5000 x (4 + 4) +
    # 1001 x 4 = 44,004; X = 1000 x 8 x 4 = 32,000; Y = 32,000 -> 108,004 bytes in 5 ms
    (row,) = doc["rows"]
    assert row["eff_bw_gb_s"] == pytest.approx(108_004 / 5e-3 / 1e9)  # 0.0216008
    assert row["pct_copy_bw"] == pytest.approx(100 * 0.0216008 / 20.0)
    assert doc["byte_models"] == {"spmm": BYTE_MODELS["spmm"]}
    assert doc["byte_model"] == BYTE_MODELS["spmm"]

    assert main(["results", "show", str(path)], modules=MODULES) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"spmm: {BYTE_MODELS['spmm']}" in lines[0] and "spmv_traffic" not in lines[0]
    assert lines[1].split()[:3] == ["matrix", "backend", "params"]
    assert lines[3].split() == ["m", "spmm-scipy-cpu", "k=8", "layout=row", "5.0000", "0.0%",
                                "1.0e-07", "0.0216", "0.108", "ok"]


def test_a_schema_2_results_file_still_reads(committed, capsys):
    path = committed(SCHEMA2_RUN)
    runset = read_runset(path)
    assert runset.schema_version == 3 and runset.stages is None
    assert len(runset.cases) == 10 and all(c.stages is None for c in runset.cases)

    assert main(["results", "show", str(path), "--json"], modules=MODULES) == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["rows"][0]
    # graph-14: 1,000,000 rows and columns, 48,000,000 nonzeros, k = 128, float32:
    # A = 48e6 x 8 + 1,000,001 x 4; X = Y = 1e6 x 128 x 4 -> 1,412,000,004 bytes
    median = first["median_ms"]
    assert first["eff_bw_gb_s"] == pytest.approx(1_412_000_004 / (median * 1e-3) / 1e9)
    assert 240 < first["eff_bw_gb_s"] < 242  # 5.848 ms (SpMV's bytes would read 68 GB/s)

    assert main(["results", "show", str(path), "--stages"], modules=MODULES) == 0
    text = capsys.readouterr().out
    assert text.startswith("run 13be8a2b8654 on NVIDIA H200: where the time went: not "
                           "recorded (the results predate stage times")
    assert main(["results", "show", str(path), "--stages", "--json"], modules=MODULES) == 0
    stages = json.loads(capsys.readouterr().out)["stages"]
    assert (stages["basis"], stages["rows"], stages["cases"]) == ("none", [], [])
