"""The dense cuBLAS peer (``spmm-cublas-dense``) is never "the best library": on a hand-built
SpMM run where the dense calls are the fastest of every group, each speedup over the best
library (the SpMM section's peers, the collection report, a results README's auto table and
selection, ``model score --spmm-bounds``) is taken against the fastest *sparse* library
(``registry.is_sparse_library``), and every listing names the dense backend as the break-even
peer it is."""

from __future__ import annotations

import json
import math

import pytest
from report_builders import h200_spec, provenance, stats

from sparsescope.analyze import spmm_bounds
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.ops.params import SpmmParams
from sparsescope.registry import is_sparse_library
from sparsescope.report.break_even import backend_title
from sparsescope.report.collection import write_collection_report
from sparsescope.report.ops_common import op_views, peer_rows, spmm_key
from sparsescope.report.readme import readme_for
from sparsescope.report.readme.auto_table import auto_groups
from sparsescope.report.readme.selection import selection_rows
from sparsescope.report.sections import SectionInputs, op_sections
from sparsescope.results.io import runset_to_dict, write_runset
from sparsescope.results.records import CaseResult, Correctness, MatrixRecord, RunSet
from sparsescope.timing.types import Measurement, TimingConfig

DENSE, TF32 = "spmm-cublas-dense", "spmm-cublas-dense[math=tf32]"
AUTO, OWN = "spmm-cuda-auto", "spmm-cuda-rowgroup"
PEER = "(dense break-even peer)"
#: matrix -> backend -> median ms at k = 8, row-major X. The dense calls are the fastest of
#: each group; the fastest sparse library is nvmath on a (0.030 ms) and CuPy on b (0.045 ms).
TIMES_MS = {
    "a": {DENSE: 0.010, TF32: 0.008, "spmm-nvmath-i32": 0.030, "spmm-torch-i32": 0.040,
          AUTO: 0.024, OWN: 0.020},
    "b": {DENSE: 0.012, TF32: 0.009, "spmm-nvmath-i32": 0.050, "spmm-cupy-i32": 0.045,
          "spmm-torch-i32": 0.060, AUTO: 0.050, OWN: 0.036},
}
#: best sparse library / auto: a 0.030 / 0.024, b 0.045 / 0.050
AUTO_OVER_LIB = {"a": 1.25, "b": 0.9}
#: best sparse library / fastest own: a 0.030 / 0.020, b 0.045 / 0.036
OWN_OVER_LIB = {"a": 1.5, "b": 1.25}
BEST_LIB = {"a": "spmm-nvmath-i32", "b": "spmm-cupy-i32"}


def _case(matrix: str, backend: str, ms: float) -> CaseResult:
    notes = {"precision": "TF32 (tensor cores)"} if backend == TF32 else {}
    return CaseResult(matrix=matrix, backend=backend, op="spmm", outcome="ok", value_bytes=4,
                      params=SpmmParams(k=8, layout="row"), notes=notes,
                      measurement=Measurement(samples_ms=(ms,), config=TimingConfig(
                          clock="cuda-events"), clock="cuda-events"),
                      correctness=Correctness(rel_err=1e-7, tolerance=1e-5))


def dense_fastest_run() -> RunSet:
    matrices = (MatrixRecord("a", "generated", "pruned", None, stats(1000, 1000, 10_000)),
                MatrixRecord("b", "generated", "pruned", None, stats(2000, 2000, 40_000)))
    cases = tuple(_case(m, b, ms) for m, times in TIMES_MS.items() for b, ms in times.items())
    return RunSet(run_id="dense", suite="pruned", scale=1.0,
                  provenance=provenance("NVIDIA H200", "sparsescope run --op spmm"),
                  device=h200_spec(), ceilings=MeasuredCeilings(device="NVIDIA H200"),
                  timing=TimingConfig(clock="cuda-events"), matrices=matrices, cases=cases,
                  latency_ns=300.0)


def _case_dicts() -> list[dict]:
    """The run's cases as a results file stores them (what ``report.readme`` reads)."""
    return runset_to_dict(dense_fastest_run())["cases"]


def test_the_one_definition_of_a_sparse_library():
    assert [is_sparse_library(b) for b in (
        "spmm-nvmath-i32", "nvmath-cusparse-i32[alg=2]", "spmm-ginkgo", "torch-cusparse-i64",
        DENSE, TF32, AUTO, "cuda-spmv-sell[sell-u4-m6-h1]")] == [
        True, True, True, True, False, False, False, False]
    assert backend_title(TF32) == f"{TF32} {PEER}"
    assert backend_title("spmm-torch-i32") == "spmm-torch-i32"


def test_the_spmm_section_compares_with_the_sparse_library_and_names_the_dense_peer(tmp_path):
    run = dense_fastest_run()
    peers = {r["case"]: r for r in peer_rows(op_views(run, "spmm"), spmm_key)}
    assert {c: (r["best_peer"], round(r["speedup_x"], 9)) for c, r in peers.items()} == {
        f"{m} k=8 row": (BEST_LIB[m], OWN_OVER_LIB[m]) for m in TIMES_MS}
    (section,) = op_sections(run, SectionInputs(figures_dir=tmp_path / "figures"))
    texts = {h: "".join(b.text for b in blocks) for h, blocks in section.body}
    timed = texts["SpMM: time, bandwidth and % of bound"]
    assert f"| a | 8 | row | {DENSE} {PEER} | 0.01 |" in timed
    assert f"| b | 8 | row | {TF32} {PEER} | 0.009 |" in timed
    # own >= peer on both: a dense win is not a loss of ours
    assert "Our kernel is at least as fast as the best peer on every case." in timed
    # the JSON keeps the backend's name; the dense peer is in the break-even: 0.020 / 0.010
    backends = {r["backend"] for r in section.tables["ops_spmm"]["rows"]}
    assert {DENSE, TF32} <= backends
    (a, _) = section.tables["ops_spmm_break_even"]["rows"]
    assert (a["sparse_backend"], a["ratio_fp32"]) == (OWN, pytest.approx(2.0))


def test_the_collection_report_keeps_the_dense_peer_to_the_break_even(tmp_path):
    paths = write_collection_report(dense_fastest_run(), tmp_path)
    tables = {n: json.loads((tmp_path / "tables" / f"{n}.json").read_text())
              for n in ("collection_matrices", "collection_summary",
                        "collection_speedup_quantiles", "collection_by_kind")}
    rows = {r["matrix"]: r for r in tables["collection_matrices"]["rows"]}
    assert {m: (r["library_backend"], r["speedup_x"]) for m, r in rows.items()} == {
        m: (BEST_LIB[m], pytest.approx(OWN_OVER_LIB[m])) for m in TIMES_MS}
    summary = tables["collection_summary"]["rows"][0]
    assert summary["library_backends"] == ["spmm-cupy-i32", "spmm-nvmath-i32",
                                           "spmm-torch-i32"]
    assert summary["dense_peers"] == [DENSE, TF32]
    # per-backend speedups over the best library: sparse backends only; auto's 1.25 and 0.9
    quantiles = {r["backend"]: r for r in tables["collection_speedup_quantiles"]["rows"]}
    assert not {DENSE, TF32} & set(quantiles)
    assert quantiles[AUTO]["geomean_x"] == pytest.approx(math.sqrt(1.25 * 0.9))
    (kind,) = tables["collection_by_kind"]["rows"]
    assert not {DENSE, TF32} & set(kind["geomean_speedup_x_by_backend"])
    md, html = paths.markdown.read_text(), paths.html.read_text()
    tf32_md = TF32.replace("[", "\\[").replace("]", "\\]")  # Markdown escapes brackets
    assert f"| Dense peers (the break-even only) | {DENSE} {PEER}, {tf32_md} {PEER} |" in md
    assert f"{DENSE} x" not in md  # no by-kind column for it
    assert f"{TF32} {PEER}" in html
    page = (tmp_path / "matrices" / "a.md").read_text()
    assert f"| spmm | k=8 layout=row | {tf32_md} {PEER} | ok | 0.008 |" in page


def test_readme_auto_table_and_selection_take_the_sparse_library():
    auto, groups = auto_groups(_case_dicts())
    assert auto == AUTO
    first = groups[0]
    assert (first.k, first.layout, first.triples, first.below) == ("8", "row", 2, 1)
    assert first.geomean == pytest.approx(math.sqrt(1.25 * 0.9))
    assert first.min == pytest.approx(0.9)
    # an SpMV selection in a folder that also holds the dense peer's run of the same matrix
    (row,) = selection_rows([
        {"matrix": "m", "backend": b, "outcome": "ok", "notes": {}, "params": {},
         "measurement": {"samples_ms": [ms]}}
        for b, ms in (("cuda-spmv-sell", 0.016), ("cuda-spmv-auto", 0.0168),
                      ("torch-cusparse-i32", 0.040), (DENSE, 0.005))])
    assert (row.best_lib, row.best_lib_us) == ("torch-cusparse-i32", pytest.approx(40.0))


def test_a_results_readme_names_the_dense_peer(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    write_runset(folder / "results.json", dense_fastest_run())
    text = readme_for(folder).text
    assert "| 8 | row | 2 | 1.061 | 0.900 | 1 |" in text
    # speedups over the run's baseline (spmm-torch-i32): a 0.040 / 0.010, b 0.060 / 0.012
    assert f"{DENSE} {PEER} {math.sqrt(4.0 * 5.0):.2f}x (2)" in text


def test_spmm_bounds_takes_the_sparse_library_nvmath_included(tmp_path):
    path = write_runset(tmp_path / "results.json", dense_fastest_run())
    s = spmm_bounds.summarise(path)
    assert {r["matrix"]: (r["library"], round(r["speedup"], 9)) for r in s["rows"]} == {
        m: (BEST_LIB[m], AUTO_OVER_LIB[m]) for m in TIMES_MS}
    whole = next(t for t in s["table"] if (t["k"], t["layout"]) == ("all", "all"))
    assert whole["geomean"] == pytest.approx(math.sqrt(1.25 * 0.9))
    assert (whole["min"], whole["below_0_95"]) == (pytest.approx(0.9), 1)
