"""write_report end to end: files, figures, self-contained HTML, Markdown, atomicity.

Figures are the slow part, so each RunSet's report is rendered once per module.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image
from report_builders import make_cpu_runset, make_gpu_runset

from sparsescope.errors import UsageError
from sparsescope.report import build_tables, write_report
from sparsescope.report.context import build_context
from sparsescope.report.document import build_document
from sparsescope.report.markdown import render_markdown
from sparsescope.report.sections import SectionInputs
from sparsescope.report.spmv_layout import FIGURE_FUNCS
from sparsescope.report.spmv_section import spmv_section

EXTRA = ("Profile (ncu)", "### Stalls\n\nLong **Scoreboard** is 37.6 % of CPI.\n\n"
         "| stall | cant |\n|---|---:|\n| long_scoreboard | 4.25 |\n\n- first\n- second\n\n"
         "```\nLDG.E.64 R4, [R2]\n```\n")


@pytest.fixture(scope="module")
def gpu_report(tmp_path_factory, fake_specs):
    out = tmp_path_factory.mktemp("gpu") / "report"
    return write_report(make_gpu_runset(), out, extra_sections=[EXTRA], progress=False)


@pytest.fixture(scope="module")
def cpu_report(tmp_path_factory, fake_specs):
    out = tmp_path_factory.mktemp("cpu") / "report"
    return write_report(make_cpu_runset(), out, progress=False)


def all_failed_runset():
    rs = make_cpu_runset()
    cases = tuple(dataclasses.replace(c, outcome="failed", reason="wrong result")
                  if c.outcome == "ok" else c for c in rs.cases)
    return dataclasses.replace(rs, cases=cases)


class _Attrs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.attrs: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]


def test_every_file_is_written(gpu_report):
    out = gpu_report.out_dir
    assert gpu_report.markdown == out / "report.md" and gpu_report.html == out / "report.html"
    # the seed-analog run was recorded without predictions: nothing to scatter
    assert sorted(p.name for p in gpu_report.figures) == sorted(
        f"{n}.png" for n in FIGURE_FUNCS if n != "predicted_vs_measured")
    assert gpu_report.skipped_figures == (
        ("predicted_vs_measured", "no timed case carries a predicted time"),)
    assert len(gpu_report.tables) == 21
    assert not list(out.rglob(".*.tmp"))  # no temporary file left behind
    assert oct(gpu_report.markdown.stat().st_mode & 0o777) == "0o644"


def test_figures_are_valid_nontrivial_pngs(gpu_report):
    for path in gpu_report.figures:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", path
        assert len(data) > 15_000, path
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
        with Image.open(io.BytesIO(data)) as image:
            assert image.format == "PNG"
            assert 900 <= image.width <= 1500 and 450 <= image.height <= 700, image.size
            gray = image.convert("L")
            assert gray.getextrema()[0] < 60 and gray.getextrema()[1] > 240  # ink and paper
            assert len(image.convert("RGB").getcolors(maxcolors=1 << 20)) > 50


def test_tables_json_one_per_table(gpu_report):
    names = {p.stem for p in gpu_report.tables}
    assert {"timing", "floor", "roofline", "littles_law", "latency_sensitivity", "gap", "dae",
            "dae_sram", "dae_fifo", "cross_gpu", "index_width", "outcomes", "matrices"} <= names
    timing = json.loads((gpu_report.out_dir / "tables" / "timing.json").read_text())
    assert set(timing) >= {"title", "units", "rows", "reading", "columns"}
    assert timing["units"]["eff_bw_gb_s"] == "GB/s"
    ldoor = next(r for r in timing["rows"] if r["matrix"] == "ldoor")
    assert round(ldoor["pct_of_peak_bw"], 1) == 60.8
    assert gpu_report.readings["timing"] == timing["reading"]


def test_html_is_self_contained(gpu_report):
    page = gpu_report.html.read_text()
    parser = _Attrs()
    parser.feed(page)
    assert "script" not in parser.tags and "link" not in parser.tags
    srcs = [v for tag, k, v in parser.attrs if k == "src"]
    hrefs = [v for tag, k, v in parser.attrs if k == "href"]
    assert len(srcs) == len(FIGURE_FUNCS) - 1  # predicted_vs_measured: no prediction
    assert all(s.startswith("data:image/png;base64,") for s in srcs)
    assert hrefs and all(h.startswith("#") for h in hrefs)
    assert "http" not in "".join(srcs + hrefs)
    assert "url(" not in page and "@import" not in page
    embedded = {base64.b64decode(s.split(",", 1)[1]) for s in srcs}
    assert embedded == {p.read_bytes() for p in gpu_report.figures}
    text = html.unescape(page)
    for table in build_tables(make_gpu_runset()):
        assert table.title in text, table.title
        assert table.reading in text, table.name
    assert "<style>" in page and "<table>" in page


def test_markdown_states_analogs_device_and_protocol(gpu_report):
    md = gpu_report.markdown.read_text()
    assert "**Generated analogs, not the real matrices.** 6 of 6 matrices" in md
    assert "**Measured on** NVIDIA H200 SXM 141GB" in md
    assert "5 warm-ups, 20 repeats, median reported, clock `cuda-events`, cache flush off" in md
    assert "25.1–60.8 %" in md  # executive summary range
    assert "nnz x 8          (column indices, INT64)" in md
    for path in gpu_report.figures:
        assert f"](figures/{path.name})" in md
    assert md.count("**Reading:**") == 21


def test_extra_sections_in_both_formats(gpu_report):
    md = gpu_report.markdown.read_text()
    page = gpu_report.html.read_text()
    assert "## 12. Profile (ncu)" in md and "| long_scoreboard | 4.25 |" in md
    assert ">12. Profile (ncu)</h2>" in page
    assert "<h3>Stalls</h3>" in page and "<strong>Scoreboard</strong>" in page
    assert '<td style="text-align:right">4.25</td>' in page
    assert "<ul>\n<li>first</li>\n<li>second</li>\n</ul>" in page
    assert "<pre><code>LDG.E.64 R4, [R2]\n</code></pre>" in page
    assert md.index("## 12. Profile") < md.index("## Appendix")


def test_cpu_report_says_which_gpu_and_lists_failures(cpu_report):
    md = cpu_report.markdown.read_text()
    assert "**Measured on a CPU:**" in md and "reference GPU **H200**" in md
    assert "never from the CPU's measurements" in md
    assert ("| tiny | scipy-cpu | spmv | failed | relative error 3.2e-02 above tolerance 1e-05 |"
            in md)
    assert "| tiny | torch-cusparse-i64 | spmv | skipped | torch is not installed |" in md
    assert "1 of 3 matrices are generated stand-ins: pl-small (analog of webbase-1M)" in md
    assert "cache flush on (2 of 2 timed cases flushed)" in md
    # seed_vs_ours needs torch-cusparse-i64 cases on the seed's matrices, predicted_vs_measured
    # predictions: neither is drawn here; a CPU's times are not judged by a GPU's warps (the
    # gap decomposition, the DAE speedup per case): not even attempted, the sections say why
    assert len(cpu_report.figures) == len(FIGURE_FUNCS) - 4
    assert {"gap_decomposition", "dae_speedup"}.isdisjoint(
        dict(cpu_report.skipped_figures) | {p.stem: 1 for p in cpu_report.figures})
    assert md.count("*Not computed: the per-case tables (gap decomposition, DAE gains) judge "
                    "each case's measured time against a GPU's Little's-law ceiling") == 2


def test_no_analog_note_for_real_matrices(fake_specs, tmp_path):
    rs = make_gpu_runset()
    rs = dataclasses.replace(rs, matrices=tuple(dataclasses.replace(m, analog_of=None)
                                                for m in rs.matrices))
    ctx = build_context(rs)
    run_tables = {t.name: t for t in build_tables(rs, ctx=ctx, spmv=False)}
    sections = [spmv_section(rs, SectionInputs(figures_dir=tmp_path))]
    md = render_markdown(build_document(ctx, run_tables, sections))
    assert md.startswith("# SpMV performance report")  # the SpMV section was laid out
    assert "Generated analogs" not in md and "generated stand-ins" not in md


def test_all_failed_run_skips_figures_and_says_why(tmp_path, cpu_report):
    out = tmp_path / "report"
    shutil.copytree(cpu_report.out_dir, out)  # a previous report with every figure
    paths = write_report(all_failed_runset(), out, progress=False)
    skipped = dict(paths.skipped_figures)
    assert set(skipped) == set(FIGURE_FUNCS) - {"latency_sensitivity", "int32_vs_int64",
                                                "gap_decomposition", "dae_speedup"}
    assert skipped["roofline"] == "no case was timed"
    md = paths.markdown.read_text()
    assert "*Figure not drawn (bw efficiency): no case was timed.*" in md
    assert "No case ran successfully" in md
    # Stale figures of the previous report are gone, the still-valid ones rewritten.
    assert sorted(p.name for p in (out / "figures").iterdir()) == \
        ["int32_vs_int64.png", "latency_sensitivity.png"]


def test_failure_midway_keeps_the_existing_report(tmp_path, monkeypatch, cpu_report):
    out = tmp_path / "report"
    shutil.copytree(cpu_report.out_dir, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def boom(ctx, tables):
        raise RuntimeError("plot exploded")

    monkeypatch.setitem(FIGURE_FUNCS, "gap_decomposition", boom)
    with pytest.raises(RuntimeError, match="plot exploded"):
        write_report(make_gpu_runset(), out, progress=False)
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before


def test_bad_extra_sections_are_refused(tmp_path):
    with pytest.raises(UsageError, match="extra_sections"):
        write_report(make_cpu_runset(), tmp_path, extra_sections=["just text"], progress=False)
    assert not Path(tmp_path, "report.md").exists()
