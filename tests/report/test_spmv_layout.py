"""SpMV's tables and figures are declared once (``report.spmv_layout``): the table list, the
body, the figures and what a re-render removes all follow from it, so none can drift -- the
memory-floor table was once rendered but missing from the list, and a re-render left its stale
``tables/memory_floor.json`` behind."""

from __future__ import annotations

import dataclasses

import pytest
from report_builders import make_gpu_runset
from test_memory_floor_table import _runset as floor_runset

from sparsescope.report import build_tables, spmv_layout, write_report
from sparsescope.report.context import build_context
from sparsescope.report.document import Heading, TableBlock
from sparsescope.report.sections import SectionInputs
from sparsescope.report.spmv_section import spmv_section
from sparsescope.report.tables import RUN_TABLES, SPMV_TABLES
from sparsescope.report.write import report_outputs


@pytest.fixture
def not_drawn(monkeypatch):
    """Every figure "not drawn" (the report's own skip path): these tests are about files."""
    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {
        name: (lambda ctx, tables: "not drawn in this test") for name in spmv_layout.FIGURE_FUNCS})


def test_every_name_is_declared_once():
    tables = [t.name for s in spmv_layout.SPMV_SECTIONS for t in s.tables]
    figures = [f.name for s in spmv_layout.SPMV_SECTIONS for t in s.tables for f in t.figures]
    assert len(tables) == len(set(tables)) and len(figures) == len(set(figures))
    assert SPMV_TABLES == tuple(tables) and list(spmv_layout.FIGURE_FUNCS) == figures
    assert not set(RUN_TABLES) & set(SPMV_TABLES)
    assert "memory_floor" in SPMV_TABLES  # the table once left out of the hand-kept list


def test_every_table_a_run_makes_is_declared_with_its_figures():
    rs = floor_runset()
    built = build_tables(rs)
    names = [t.name for t in built]
    assert "memory_floor" in names
    assert set(names) <= set(RUN_TABLES) | set(SPMV_TABLES)
    # in the declared order, the run's tables around them
    assert names[2:-1] == [n for n in SPMV_TABLES if n in names]
    declared = {t.name: tuple(f.name for f in t.figures)
                for s in spmv_layout.SPMV_SECTIONS for t in s.tables}
    for table in built[2:-1]:
        assert table.figures == declared[table.name], table.name


def test_the_body_follows_the_declaration(tmp_path, not_drawn):
    section = spmv_section(floor_runset(), SectionInputs(figures_dir=tmp_path))
    assert [h for h, _ in section.body] == [s.heading for s in spmv_layout.SPMV_SECTIONS]
    shown = [b.table.name for _, blocks in section.body for b in blocks
             if isinstance(b, TableBlock)]
    assert shown == [t.name for s in spmv_layout.SPMV_SECTIONS for t in s.tables
                     if t.shown and t.name in section.tables]
    assert "memory_floor" in shown and "kernel_breakdown_all" not in shown
    subheadings = [b.text for _, blocks in section.body for b in blocks if isinstance(b, Heading)]
    assert subheadings[0] == "Timing and throughput"
    # every table written as JSON is a declared one
    assert set(section.tables) <= set(SPMV_TABLES)


def test_a_rerender_removes_the_tables_and_figures_it_no_longer_writes(tmp_path, not_drawn):
    first = write_report(floor_runset(), tmp_path, progress=False)
    assert (tmp_path / "tables" / "memory_floor.json") in first.tables
    # what an earlier render drew and an SpMM report of this folder wrote, and files that are
    # not the report's: a collection's, a profile section's, one's own
    for rel in ("figures/roofline.png", "figures/ops_spmm_roofline.png",
                "tables/ops_spmm.json", "tables/ops_spmm_predicted.json",
                "tables/collection_summary.json", "figures/collection_speedup_cdf.png",
                "figures/profile_stalls.png", "tables/mine.json"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("old")
    second = write_report(make_gpu_runset(), tmp_path, progress=False)
    assert "memory_floor.json" not in {p.name for p in second.tables}
    assert not (tmp_path / "tables" / "memory_floor.json").exists()  # the stale-table bug
    assert "memory floor" not in (tmp_path / "report.md").read_text().lower()
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == sorted(
        ["collection_summary.json", "mine.json", *(p.name for p in second.tables)])
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == [
        "collection_speedup_cdf.png", "profile_stalls.png"]  # no figure drawn this time
    assert not list(tmp_path.rglob(".*.tmp"))  # each file written atomically


def test_the_report_owns_the_declared_names_and_the_op_sections_files(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "ops_slice.json").write_text("{}")
    (tmp_path / "tables" / "collection_auto.json").write_text("{}")
    figures, tables = report_outputs(tmp_path)  # no figures folder: only the declared names
    assert figures == {f"{n}.png" for n in spmv_layout.FIGURE_FUNCS}
    assert tables == {f"{n}.json" for n in (*RUN_TABLES, *SPMV_TABLES)} | {"ops_slice.json"}


def test_a_new_declared_table_is_built_listed_and_laid_out(monkeypatch, tmp_path, not_drawn):
    extra = spmv_layout.TableSpec("littles_law_again", spmv_layout.wt.littles_law_table,
                                  "Little's law again")
    sections = tuple(dataclasses.replace(s, tables=(*s.tables, extra))
                     if s.heading == "Gap decomposition" else s
                     for s in spmv_layout.SPMV_SECTIONS)
    monkeypatch.setattr(spmv_layout, "SPMV_SECTIONS", sections)
    names = [t.name for t in spmv_layout.build_spmv_tables(build_context(make_gpu_runset()))]
    assert names[names.index("gap") + 1] == "littles_law_again"
    section = spmv_section(make_gpu_runset(), SectionInputs(figures_dir=tmp_path))
    gap = dict(section.body)["Gap decomposition"]
    assert [b.table.name for b in gap if isinstance(b, TableBlock)] == ["gap", "littles_law_again"]
    assert "littles_law_again" in section.tables
