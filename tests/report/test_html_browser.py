"""The HTML report as a reader sees it, in a real headless Chromium at 1400 px: a CPU report
and a committed H200 run re-rendered show every column and image, no NaN and no internal
identifier (``scripts/check_report_html.py`` is the same check by hand). Skipped when no
Chromium is installed; ``.ci/run`` installs one from the machine's Debian packages when it
can."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from report_builders import make_cpu_runset

from sparsescope.report import spmv_layout
from sparsescope.report.write import write_report
from sparsescope.results.io import read_runset

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_report_html",
                                              ROOT / "scripts" / "check_report_html.py")
checker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checker)

pytestmark = [pytest.mark.skipif(checker.find_browser() is None, reason="no Chromium installed"),
              pytest.mark.slow]


#: The figures drawn for the check: two are enough to prove images decode (every figure goes
#: through the same PNG path); all tables are rendered, each checked for width.
DRAWN = ("bw_efficiency", "roofline")


@pytest.fixture(autouse=True)
def _two_figures(monkeypatch):
    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {
        name: plot for name, plot in spmv_layout.FIGURE_FUNCS.items() if name in DRAWN})


def _clean(verdict: dict) -> None:
    assert verdict["clipped"] == [] and verdict["broken"] == [] and verdict["nan"] == 0
    assert verdict["identifiers"] == []


def test_a_cpu_report_reads_cleanly(tmp_path):
    paths = write_report(make_cpu_runset(reference_gpu=""), tmp_path, progress=False)
    verdict = checker.check(paths.html, checker.find_browser())
    assert verdict["tables"] >= 8 and verdict["images"] == len(paths.figures) == 2
    _clean(verdict)


def test_a_committed_gpu_report_rerendered_reads_cleanly(committed, tmp_path):
    runset = read_runset(committed("results/h200/seed6/results.json"))
    paths = write_report(runset, tmp_path, progress=False)
    verdict = checker.check(paths.html, checker.find_browser())
    assert verdict["tables"] > 15 and verdict["images"] == len(paths.figures) == 2
    _clean(verdict)


def test_a_wide_table_a_broken_image_and_an_identifier_are_caught(tmp_path, monkeypatch,
                                                                   capsys):
    html = tmp_path / "wide.html"
    cells = "".join(f"<td>{'x' * 40}{i}</td>" for i in range(60))
    html.write_text(f"<html><body><table><tr>{cells}</tr></table><p>limited by mlp_gain, "
                    f"kernel <code>csr_scalar</code>, file tables/dae.json</p>"
                    "<img src='missing.png' alt='gone'></body></html>")
    verdict = checker.check(html, checker.find_browser())
    assert len(verdict["clipped"]) == 1 and verdict["broken"] == ["gone"]
    assert verdict["identifiers"] == ["mlp_gain"]
    monkeypatch.setattr(checker, "check", lambda page, browser: verdict)  # one browser run
    assert checker.main([str(html)]) == 1
    out = capsys.readouterr().out
    assert "3 problem(s)" in out and "internal identifier left in the text: mlp_gain" in out
