"""Figures are real PNGs; the Markdown section carries the seed's tables with fixture values."""

from __future__ import annotations

import pytest

from sparsescope.profile import analysis as A
from sparsescope.profile import instruction_roofline as R
from sparsescope.report import profile_figures as F
from sparsescope.report.profile_render import render_markdown, write_figures

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_png(path, min_bytes=10_000):
    data = path.read_bytes()
    return data.startswith(PNG_MAGIC) and len(data) > min_bytes


def test_stall_figures(tmp_path, cant, full_report):
    comparison = A.stall_comparison([cant[1], full_report[0], full_report[3]],
                                    ["cant", "cant-full", "scalar"])
    assert _is_png(F.stall_bars(comparison, tmp_path / "bars.png"))
    assert _is_png(F.stall_pie(A.stall_breakdown(full_report[3]), tmp_path / "pie.png",
                               title="scalar"))
    with pytest.raises(ValueError):
        F.stall_pie([], tmp_path / "none.png")


def test_instruction_roofline_figure(tmp_path, cant, full_report):
    points = R.instruction_roofline([cant[1], full_report[0]], ["cant", "cant-full"])
    ceilings = R.ceilings_from_profile(full_report[0])
    assert _is_png(F.instruction_roofline_figure(points, ceilings, tmp_path / "roof.png"))
    with pytest.raises(ValueError):
        F.instruction_roofline_figure((), ceilings, tmp_path / "empty.png")


def test_write_figures_keys(tmp_path, full_report):
    made = write_figures(full_report[:1] + full_report[3:], tmp_path, labels=["v3", "scalar"])
    assert set(made) == {"stalls", "pie:v3", "pie:scalar", "instruction_roofline",
                         "shared_roofline", "classic_roofline"}
    assert all(_is_png(p) for p in made.values())


def test_render_markdown(full_report):
    profiles = [full_report[0], full_report[3]]
    figures = {"stalls": "profile_stalls.png", "instruction_roofline": "roof.png",
               "pie:scalar": "pie1.png"}
    text = render_markdown(profiles, labels=["cant", "scalar"], figures=figures)
    for heading in ("## NCU Kernel Analysis", "### Top-Level Metrics", "### Warp Stall Breakdown",
                    "### Memory Access Efficiency", "### NCU Rule Summary",
                    "### Hottest SASS Instructions",
                    "### DAE Estimates From Measured Stalls and Bandwidth",
                    "### Little's Law at the Measured Occupancy", "### Instruction Roofline",
                    "### Hierarchical Roofline (FLOP/byte)", "### Ceilings Used"):
        assert heading in text
    assert "| Metric | cant | scalar |" in text
    assert "| Registers/Thread | 47 | 32 |" in text
    assert "| Theoretical Occupancy | 50.0% | 100.0% |" in text
    # 4.035870 cycles of 14.540206 = 27.8 %; 38.344883 of 50.988995 = 75.2 %
    assert "| Long Scoreboard | 4.04 (27.8%) | 38.34 (75.2%) |" in text
    assert "| Excessive sectors | 34.8% | 82.4% |" in text     # 7492981 / 9098844
    assert "| Shared load bank conflicts | 2.0-way (49%) | n/a |" in text
    memory, summary = text.split("### NCU Rule Summary")
    memory = memory.split("### Memory Access Efficiency")[1]
    assert "**cant — UncoalescedGlobalAccess** (OPT, est. speedup 26.3%)" in memory
    assert "**cant — IssueSlotUtilization** (OPT, est. speedup 49.3%)" in summary
    assert "UncoalescedGlobalAccess" not in summary and "SOLFPRoofline" not in text  # INF
    assert "![Warp stall breakdown](profile_stalls.png)" in text
    assert "![Warp stalls: scalar](pie1.png)" in text
    assert "![Hierarchical instruction roofline](roof.png)" in text
    # no measured ceilings given: the H200 spec table (132 SMs x 4 x 1.98 GHz), then ncu's peaks
    assert "Peak warp GIPS: 1,045.4 (spec)" in text
    assert "No per-instruction samples" in text
    speedup = 14.540206 / (14.540206 - 4.035870)                   # 1.38x
    assert f"**{speedup:.2f}x**" in text
    with pytest.raises(ValueError):
        render_markdown([])
