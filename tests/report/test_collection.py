"""The collection report of a sweep (``report.collection``): values, layout and scale."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import pytest
from report_builders import h200_spec, provenance, samples_around, stats

from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.model.traffic import Traffic
from sparsescope.report.collection import write_collection_report
from sparsescope.results.records import CaseResult, Correctness, MatrixRecord, RunSet
from sparsescope.timing.types import Measurement, TimingConfig

KINDS = ("banded", "powerlaw", "scattered")
CONFIG = TimingConfig(warmups=5, repeats=20, statistic="median", clock="cuda-events")
N = 40


def lib_ms(i: int) -> float:
    return 0.1 + 0.01 * i


def speedup(i: int) -> float:
    """Best library / cuda-spmv-sell, by construction."""
    return 0.6 + 0.05 * i


def regret(i: int) -> float:
    """auto / sell - 1, by construction."""
    return 0.01 * (i % 7)


def selected(i: int) -> str:
    return "cuda-spmv-merge" if i % 5 == 4 else "cuda-spmv-sell"


def sell_traffic(rows: int, nnz: int) -> Traffic:
    return Traffic(format="SELL-32", values_bytes=4 * nnz + 400, indices_bytes=4 * nnz + 400,
                   row_meta_bytes=4 * (rows // 32 + 1), x_bytes=4 * rows, y_read_bytes=0,
                   y_written_bytes=4 * rows, padding_bytes=800)


def timed(matrix: str, backend: str, ms: float, **kw) -> CaseResult:
    return CaseResult(matrix=matrix, backend=backend, op="spmv", outcome="ok", value_bytes=4,
                      index_bytes=4,
                      measurement=Measurement(samples_ms=samples_around(ms), config=CONFIG,
                                              clock="cuda-events"),
                      correctness=Correctness(rel_err=1e-7, tolerance=1e-5), **kw)


def shape(i: int) -> tuple[int, int]:
    rows = 1000 * (i + 1)
    return rows, rows * (2 + i)


def make_runset(n: int = N, *, not_ok: bool = True) -> RunSet:
    matrices, cases = [], []
    for i in range(n):
        name, (rows, nnz) = f"m{i:04d}", shape(i)
        matrices.append(MatrixRecord(name=name, source="generated", kind=KINDS[i % 3],
                                     analog_of=None, stats=stats(rows, rows, nnz, 1.0, 9)))
        lib, sell = lib_ms(i), lib_ms(i) / speedup(i)
        cases += [timed(name, "torch-cusparse-i32", lib),
                  timed(name, "cuda-spmv-sell", sell, traffic=sell_traffic(rows, nnz)),
                  timed(name, "cuda-spmv-auto", sell * (1 + regret(i)),
                        notes={"selected": selected(i)})]
        if not_ok and i < 5:
            cases.append(CaseResult(matrix=name, backend="torch-cusparse-i64", op="spmv",
                                    outcome="skipped", reason="torch has no INT64 CSR here"))
        if not_ok and i < 3:
            cases.append(CaseResult(
                matrix=name, backend="cuda-csr-vector", op="spmv", outcome="failed",
                reason=f"rel_err {3.2 + i}e-02 above tolerance 1e-05",
                measurement=Measurement(samples_ms=(1e-4,) * 20, config=CONFIG),
                correctness=Correctness(rel_err=(3.2 + i) * 1e-2, tolerance=1e-5)))
    return RunSet(run_id="sweep", suite="sweep-test", scale=1.0,
                  provenance=provenance("NVIDIA H200", "sparsescope sweep"), device=h200_spec(),
                  ceilings=MeasuredCeilings(device="NVIDIA H200", copy_bw_gb_s=4256.8),
                  timing=CONFIG, matrices=tuple(matrices), cases=tuple(cases), latency_ns=300.0)


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("collection")
    paths = write_collection_report(make_runset(), out)
    tables = {p.stem: json.loads(p.read_text()) for p in paths.tables}
    return out, paths, tables


def test_speedup_regret_and_peak_by_hand(report):
    _, _, tables = report
    rows = {r["matrix"]: r for r in tables["collection_matrices"]["rows"]}
    assert len(rows) == N
    m3, m10 = rows["m0003"], rows["m0010"]
    # m0003: library 0.13 ms, sell 0.13 / 0.75, auto sell * 1.03 -> 0.75x, +3 %.
    assert m3["speedup_x"] == pytest.approx(0.75, rel=1e-9)
    assert m3["auto_regret_pct"] == pytest.approx(3.0, rel=1e-9)
    assert (m3["library_backend"], m3["own_backend"]) == ("torch-cusparse-i32", "cuda-spmv-sell")
    assert m3["auto_choice"] == "cuda-spmv-sell" and m3["auto_picked_fastest"] is True
    # m0010: 0.2 ms / 1.1 -> 1.1x; regret 10 % 7 = 3 %; its own bytes over its time at 4800 GB/s.
    assert m10["speedup_x"] == pytest.approx(1.1, rel=1e-9)
    assert m10["auto_regret_pct"] == pytest.approx(3.0, rel=1e-9)
    rows10, nnz10 = shape(10)
    own_bytes = sell_traffic(rows10, nnz10).total_bytes
    sell_ms = 0.2 / 1.1
    assert m10["own_pct_peak"] == pytest.approx(
        100 * own_bytes / (sell_ms * 1e-3) / 1e9 / 4800.0, rel=1e-9)
    assert m10["own_ms"] == pytest.approx(sell_ms, rel=1e-9)
    assert m10["library_ms"] == pytest.approx(0.2, rel=1e-9)
    # m0004 reported choosing a kernel that is not the fastest own one.
    assert rows["m0004"]["auto_picked_fastest"] is False


def test_geomeans_by_hand(report):
    _, _, tables = report
    summary = tables["collection_summary"]["rows"][0]
    assert (summary["matrices"], summary["cases"]) == (N, 3 * N + 8)
    assert (summary["ok"], summary["skipped"], summary["failed"]) == (3 * N, 5, 3)
    assert summary["device"] == "NVIDIA H200 SXM 141GB"
    best = geomean(speedup(i) for i in range(N))
    assert summary["best_own_geomean_speedup_x"] == pytest.approx(best, rel=1e-9)
    q = {r["backend"]: r for r in tables["collection_speedup_quantiles"]["rows"]}
    assert q["cuda-spmv-sell"]["geomean_x"] == pytest.approx(best, rel=1e-9)
    assert q["cuda-spmv-auto"]["geomean_x"] == pytest.approx(
        geomean(speedup(i) / (1 + regret(i)) for i in range(N)), rel=1e-9)
    assert q["torch-cusparse-i32"]["geomean_x"] == pytest.approx(1.0)
    # p50 of 0.6 + 0.05 i over i = 0..39: between i = 19 and 20.
    assert q["cuda-spmv-sell"]["p50_x"] == pytest.approx(0.6 + 0.05 * 19.5, rel=1e-9)
    assert q["cuda-spmv-sell"]["p10_x"] == pytest.approx(0.6 + 0.05 * 3.9, rel=1e-9)
    auto = tables["collection_auto"]["summary"]
    assert auto["geomean_regret_pct"] == pytest.approx(
        100 * (geomean(1 + regret(i) for i in range(N)) - 1), rel=1e-9)
    assert (auto["picked_fastest_matrices"], auto["choice_known_matrices"]) == (32, 40)
    kinds = {r["kind"]: r for r in tables["collection_by_kind"]["rows"]}
    assert set(kinds) == set(KINDS)
    banded = [i for i in range(N) if i % 3 == 0]
    assert kinds["banded"]["matrices"] == len(banded)
    assert kinds["banded"]["best_own_geomean_speedup_x"] == pytest.approx(
        geomean(speedup(i) for i in banded), rel=1e-9)
    assert kinds["banded"]["geomean_speedup_x_by_backend"]["cuda-spmv-auto"] == pytest.approx(
        geomean(speedup(i) / (1 + regret(i)) for i in banded), rel=1e-9)


def test_worst_twenty_sorted(report):
    out, _, tables = report
    worst = tables["collection_worst"]["rows"]
    assert len(worst) == 20
    values = [r["speedup_x"] for r in worst]
    assert values == sorted(values)
    assert [r["matrix"] for r in worst] == [f"m{i:04d}" for i in range(20)]
    md = (out / "collection.md").read_text()
    section = md.split("## Worst 20 cases", 1)[1].split("\n## ", 1)[0]
    assert section.count("(matrices/m") == 20


def test_pages_exist_and_are_linked(report):
    out, paths, _ = report
    page = (out / "collection.html").read_text()
    md = (out / "collection.md").read_text()
    assert len(paths.pages) == 2 * N
    for i in range(N):
        name = f"m{i:04d}"
        html_page, md_page = out / "matrices" / f"{name}.html", out / "matrices" / f"{name}.md"
        assert html_page.is_file() and md_page.is_file()
        assert f'href="matrices/{name}.html"' in page
        assert f"[{name}](matrices/{name}.md)" in md
        text = html_page.read_text()
        assert 'href="../collection.html"' in text and "cuda-spmv-auto" in text
    m0 = (out / "matrices" / "m0000.md").read_text()
    assert "../collection.md" in m0
    assert "skipped" in m0 and "torch has no INT64 CSR here" in m0
    assert "failed" in m0 and "3.20e-02" in m0  # the failed case's rel_err, no time
    assert "nnz_per_row_mean" in m0


def test_html_one_sortable_table_self_contained(report):
    out, _, _ = report
    page = (out / "collection.html").read_text()
    assert page.count('<table class="sortable"') == 1
    table = page.split('<table class="sortable"', 1)[1].split("</table>", 1)[0]
    body = table.split("<tbody>", 1)[1]
    assert body.count("<tr>") == N
    assert "<script>" in page and "addEventListener" in page and "parseFloat" in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "data:image/png;base64," in page
    for path in [out / "collection.html", out / "collection.md",
                 *(out / "tables").glob("*.json"), *(out / "matrices").iterdir()]:
        text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", path.read_text())
        assert "NaN" not in text and "nan" not in text.split(), path


def test_markdown_has_no_per_matrix_section(report):
    out, paths, _ = report
    md = (out / "collection.md").read_text()
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert len(headings) < 12
    assert not any(re.search(r"m\d{4}", h) for h in headings)
    assert {p.name for p in paths.figures} == {"collection_speedup_cdf.png",
                                               "collection_speedup_vs_nnz_row.png"}
    assert all(p.stat().st_size > 1000 for p in paths.figures)


def test_skipped_and_failed_counts(report):
    _, _, tables = report
    not_ok = tables["collection_not_ok"]
    assert len(not_ok["rows"]) == 8
    reasons = {(r["outcome"], r["reason"]): r["cases"] for r in not_ok["reasons"]}
    assert reasons == {("skipped", "torch has no INT# CSR here"): 5,
                       ("failed", "rel_err # above tolerance #"): 3}


def test_stale_pages_removed(tmp_path):
    write_collection_report(make_runset(6), tmp_path)
    write_collection_report(make_runset(4, not_ok=False), tmp_path)
    assert sorted(p.name for p in (tmp_path / "matrices").iterdir()) == sorted(
        f"m{i:04d}.{ext}" for i in range(4) for ext in ("md", "html"))


def test_without_library_or_auto(tmp_path):
    runset = make_runset(5, not_ok=False)
    runset = replace(runset, cases=tuple(c for c in runset.cases
                                         if c.backend == "cuda-spmv-sell"))
    paths = write_collection_report(runset, tmp_path)
    assert {n for n, _ in paths.skipped_figures} == {"collection_speedup_cdf",
                                                     "collection_speedup_vs_nnz_row",
                                                     "collection_predicted_vs_measured"}
    worst = json.loads((tmp_path / "tables" / "collection_worst.json").read_text())
    assert worst["sorted_by"] == "own_pct_peak" and len(worst["rows"]) == 5
    text = (tmp_path / "collection.html").read_text()
    assert "NaN" not in re.sub(r"base64,[A-Za-z0-9+/=]+", "", text)
    assert "Figure not drawn" in text


def test_two_thousand_matrices(tmp_path):
    runset = make_runset(2000)
    paths = write_collection_report(runset, tmp_path)
    assert len(paths.pages) == 4000
    page = (tmp_path / "collection.html").read_text()
    assert page.count('<table class="sortable"') == 1


def test_predicted_against_measured(tmp_path):
    from sparsescope.model.prediction import ModelPrediction, PredictionTerm

    runset = make_runset(5, not_ok=False)
    cases = []
    for c in runset.cases:
        if c.measurement is not None:
            # predicted 0.8 of the measured time: error (m - 0.8 m) / m = +20 %
            p = ModelPrediction(0.8 * c.measurement.time_ms, "dram",
                                (PredictionTerm("dram", 0.8 * c.measurement.time_ms, "x"),))
            c = replace(c, prediction=p.scored(c.measurement.time_ms))
        cases.append(c)
    paths = write_collection_report(replace(runset, cases=tuple(cases)), tmp_path)
    assert "collection_predicted_vs_measured.png" in {p.name for p in paths.figures}
    data = json.loads((tmp_path / "tables" / "collection_predictions.json").read_text())
    assert data["per_backend"] and all(
        r["median_signed_error_pct"] == pytest.approx(20.0) for r in data["per_backend"])
    assert all(c["error_pct"] == pytest.approx(20.0) for c in data["cases"])
    md = (tmp_path / "collection.md").read_text()
    assert "## Predicted against measured" in md and "Median |error| 20.0 %" in md
