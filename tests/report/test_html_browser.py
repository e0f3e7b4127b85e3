"""The HTML report as a reader sees it, in a real headless Chromium at 1400 px (skipped when no
Chromium is installed; ``scripts/check_report_html.py`` is the same check by hand)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_report_html",
                                              ROOT / "scripts" / "check_report_html.py")
checker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checker)

pytestmark = pytest.mark.skipif(checker.find_browser() is None, reason="no Chromium installed")


def _render(results: Path, out: Path) -> Path:
    run = subprocess.run([sys.executable, "-m", "sparsescope", "report", str(results), "--out",
                          str(out)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    return out / "report.html"


@pytest.mark.parametrize("folder", ["kernels", "spmm", "slice"])
def test_committed_reports_show_every_column_and_image(folder, tmp_path):
    html = _render(ROOT / "results" / "h200" / folder / "results.json", tmp_path)
    verdict = checker.check(html, checker.find_browser())
    assert verdict["tables"] > 3 and verdict["images"] >= 1
    assert verdict["clipped"] == [] and verdict["broken"] == [] and verdict["nan"] == 0


def test_a_wide_table_is_caught(tmp_path):
    html = tmp_path / "wide.html"
    cells = "".join(f"<td>{'x' * 40}{i}</td>" for i in range(60))
    html.write_text(f"<html><body><table><tr>{cells}</tr></table>"
                    "<img src='missing.png' alt='gone'></body></html>")
    verdict = checker.check(html, checker.find_browser())
    assert len(verdict["clipped"]) == 1 and verdict["broken"] == ["gone"]
