"""The collection report of a sweep: many matrices in one page that stays usable at 2,000.

``write_collection_report(runset, out_dir)`` writes ``collection.md``, ``collection.html``
(self-contained: CSS inlined, figures as data URIs, a few lines of inline JavaScript sorting
the one matrix table), ``tables/collection_*.json`` (units in field names),
``figures/collection_*.png`` and one small page per matrix under ``matrices/<name>.md|.html``.
The main page has no per-matrix section: one row per matrix (per op parameters when the op
has any), linked to the matrix's page. Definitions: :mod:`sparsescope.report.collection_data`.

Everything is computed and rendered in memory first, then each file is written atomically; a
collection file of this folder not made this time (a figure not drawn, the page of a matrix no
longer in the run) is removed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sparsescope._atomic import write_bytes_atomic, write_json_atomic, write_text_atomic
from sparsescope.report.break_even import backend_title
from sparsescope.report.collection_break_even import FIGURE as BREAK_EVEN_FIGURE
from sparsescope.report.collection_break_even import break_even_part
from sparsescope.report.collection_data import (
    AUTO,
    WORST_N,
    Collection,
    GroupRow,
    build_collection,
)
from sparsescope.report.collection_figures import FIGURES, draw_all
from sparsescope.report.collection_predictions import FIGURE as PREDICTION_FIGURE
from sparsescope.report.collection_predictions import prediction_part
from sparsescope.report.collection_render import (
    Cell,
    Heading,
    Picture,
    grid,
    link,
    num,
    render_html,
    render_markdown,
    text,
)
from sparsescope.report.html import stylesheet
from sparsescope.report.table_types import json_safe
from sparsescope.results.records import RunSet

LISTED_NOT_OK = 50
BASIS = ("Times are each case's median. Best library = the fastest timed sparse library "
         "backend: not ours, and not a dense peer (the matrix stored dense, set against the "
         "sparse backends in the dense break-even only); best own = the fastest timed own "
         "kernel other than cuda-spmv-auto (the kernels auto picks among). Speedup = best "
         "library time / best own time. Auto's regret = "
         "(auto time - best own time) / best own time; its geomean is geomean(auto / best own) "
         "- 1. % of peak: the best own case's bytes by its own format (as the backend "
         "declared them) over its time, against the device's peak bandwidth.")


@dataclass(frozen=True)
class CollectionPaths:
    """What :func:`write_collection_report` wrote."""

    out_dir: Path
    markdown: Path
    html: Path
    figures: tuple[Path, ...]
    tables: tuple[Path, ...]
    pages: tuple[Path, ...]
    """Every matrix page, ``.md`` and ``.html``."""
    skipped_figures: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict:
        return {"out_dir": str(self.out_dir), "markdown": str(self.markdown),
                "html": str(self.html), "figures": [str(p) for p in self.figures],
                "tables": [str(p) for p in self.tables], "pages": [str(p) for p in self.pages],
                "skipped_figures": [{"name": n, "reason": r} for n, r in self.skipped_figures]}


def _matrix_link(r_matrix: str, page: str, prefix: str = "matrices/") -> Cell:
    return link(r_matrix, f"{prefix}{page}.md", f"{prefix}{page}.html")


def _main_grid(col: Collection, rows: list[GroupRow], *, sortable: bool, ident: str = "",
               prefix: str = "matrices/"):
    multi = col.multi_op
    headers = ["Matrix", *(["Op", "Params"] if multi else []), "Kind", "Rows", "nnz",
               "nnz/row", "Best library", "Library ms", "Best own", "Own ms", "Speedup x",
               "Auto ms", "Auto chose", "Auto regret %", "Own % of peak"]
    numeric = [False, *([False, False] if multi else []), False, True, True, True, False, True,
               False, True, True, True, False, True, True]
    body = [[_matrix_link(r.matrix, r.page, prefix),
             *([Cell(r.op), Cell(r.params)] if multi else []),
             Cell(r.kind), num(r.rows, ",d"), num(r.nnz, ",d"), num(r.nnz_per_row_mean, ".1f"),
             Cell(r.library_backend or "–"), num(r.library_ms), Cell(r.own_backend or "–"),
             num(r.own_ms), num(r.speedup_x, ".2f"), num(r.auto_ms), Cell(r.auto_choice or "–"),
             num(r.auto_regret_pct, "+.1f"), num(r.own_pct_peak, ".3g")] for r in rows]
    return grid(headers, numeric, body, sortable=sortable, ident=ident)


def _summary_blocks(col: Collection) -> list:
    s, a = col.summary, col.auto
    pairs = [("Device", s["device"]), ("Suite", s["suite"]), ("Run", s["run_id"]),
             ("Ops", ", ".join(s["ops"])), ("Matrices", f"{s['matrices']:,}"),
             *([("Rows of the main table", f"{s['groups']:,}")]
               if s["groups"] != s["matrices"] else []),
             ("Cases", f"{s['cases']:,}"), ("ok", f"{s['ok']:,}"),
             ("skipped", f"{s['skipped']:,}"), ("failed", f"{s['failed']:,}"),
             ("Library backends", ", ".join(s["library_backends"]) or "–"),
             ("Own backends", ", ".join(s["own_backends"]) or "–"),
             *([("Dense peers (the break-even only)",
                 ", ".join(backend_title(b) for b in s["dense_peers"]))]
               if s["dense_peers"] else []),
             ("Best own over best library, geomean",
              num(s["best_own_geomean_speedup_x"], ".3f", "x").text),
             ("Own at least as fast as the library",
              f"{s['own_at_least_library_matrices']} of {s['compared_matrices']}"),
             ("Auto's regret, geomean", num(a["geomean_regret_pct"], "+.2f", " %").text),
             ("Auto picked the fastest own kernel",
              f"{a['picked_fastest_matrices']} of {a['choice_known_matrices']}")]
    return [Heading("Summary"), grid(["", "Value"], [False, False],
                                     [[Cell(k), Cell(v)] for k, v in pairs]), text(BASIS)]


def _speedup_blocks(col: Collection, figures: dict) -> list:
    q = grid(["Backend", "Own", "Matrices", "p10 x", "p50 x", "p90 x", "Geomean x",
              "At least the library"], [False, False, True, True, True, True, True, True],
             [[Cell(r["backend"]), Cell("yes" if r["own"] else "no"), num(r["matrices"], "d"),
               num(r["p10_x"], ".3f"), num(r["p50_x"], ".3f"), num(r["p90_x"], ".3f"),
               num(r["geomean_x"], ".3f"), num(r["at_least_library_matrices"], "d")]
              for r in col.quantiles])
    return [Heading("Speedup over the best library backend"),
            text("Each backend's time against the fastest library backend of the same matrix "
                 "(x > 1: faster than the library); quantiles over the matrices it ran on."),
            q, *(figures[n] for n in FIGURES)]


def _auto_blocks(col: Collection) -> list:
    a = col.auto
    if not a["matrices"]:
        return [Heading("Automatic selection"),
                text(f"No matrix has both {AUTO} and another own kernel timed.")]
    sentence = (f"Over {a['matrices']} matrices, {AUTO}'s time is "
                f"{num(a['geomean_regret_pct'], '+.2f', ' %').text} over the fastest own "
                f"kernel's (geomean; worst {num(a['max_regret_pct'], '+.1f', ' %').text}); "
                f"it picked the fastest own kernel on {a['picked_fastest_matrices']} of the "
                f"{a['choice_known_matrices']} matrices whose choice it reported. Per matrix: "
                "the main table's regret column.")
    rows = [[Cell(c["choice"]), num(c["matrices"], "d"), num(c["fastest_matrices"], "d"),
             num(c["geomean_regret_pct"], "+.2f")] for c in a["choices"]]
    return [Heading("Automatic selection"), text(sentence),
            grid(["Auto chose", "Matrices", "Of them the fastest", "Geomean regret %"],
                 [False, True, True, True], rows)]


def _kind_blocks(col: Collection) -> list:
    rows = [[Cell(k["kind"] or "(none)"), num(k["matrices"], "d"),
             num(k["best_own_geomean_speedup_x"], ".3f"),
             *(num(k["geomean_speedup_x_by_backend"][b], ".3f") for b in col.backends)]
            for k in col.by_kind]
    return [Heading("By kind of matrix"),
            text("Geomean speedup over the best library backend, per kind and backend."),
            grid(["Kind", "Matrices", "Best own x", *(f"{b} x" for b in col.backends)],
                 [False] + [True] * (2 + len(col.backends)), rows)]


def _worst_blocks(col: Collection) -> list:
    what = ("lowest speedup of our best kernel over the best library" if
            col.worst_by == "speedup_x" else "lowest % of peak of our best kernel")
    return [Heading(f"Worst {WORST_N} cases"),
            text(f"The {len(col.worst)} matrices with the {what}, worst first."),
            _main_grid(col, col.worst, sortable=False)]


def _not_ok_blocks(col: Collection) -> list:
    if not col.not_ok:
        return [Heading("Skipped and failed cases"), text("Every case ran and passed.")]
    counts = grid(["Outcome", "Reason (numbers as #)", "Cases", "Example"],
                  [False, False, True, False],
                  [[Cell(r["outcome"]), Cell(r["reason"]), num(r["cases"], ",d"),
                    Cell(r["example"])] for r in col.reasons])
    listed = [[_matrix_link(c["matrix"], col.pages[c["matrix"]]), Cell(c["op"]),
               Cell(c["params"] or "–"), Cell(backend_title(c["backend"])), Cell(c["outcome"]),
               Cell(c["reason"])] for c in col.not_ok[:LISTED_NOT_OK]]
    more = len(col.not_ok) - len(listed)
    tail = (f"The first {len(listed)} of {len(col.not_ok)}; all of them in "
            "tables/collection_not_ok.json." if more > 0 else "")
    return [Heading("Skipped and failed cases"), counts,
            grid(["Matrix", "Op", "Params", "Backend", "Outcome", "Reason"], [False] * 6,
                 listed), *([text(tail)] if tail else [])]


def _page_blocks(col: Collection, name: str, mine: list[GroupRow]) -> list:
    m = col.matrices.get(name)
    back = text("Back to ", link("the collection report", "../collection.md",
                                 "../collection.html"), ".")
    blocks: list = [back]
    if m is not None:
        st = m.stats
        facts = [("Kind", m.kind), ("Source", m.source), ("Analog of", m.analog_of or "–")]
        facts += [(k, num(v, ",d" if isinstance(v, int) else ".4g").text)
                  for k, v in vars(st).items()]
        blocks += [Heading("Statistics"),
                   grid(["", "Value"], [False, False], [[Cell(k), Cell(v)] for k, v in facts])]
    if mine:
        blocks += [Heading("Best times"), _main_grid(col, mine, sortable=False, prefix="")]
    rows = [[Cell(c.op), Cell(c.params or "–"), Cell(backend_title(c.backend)),
             Cell(c.outcome), num(c.time_ms), num(c.pct_peak_own_bytes, ".3g"),
             num(c.rel_err, ".2e"),
             Cell(c.selected or "–"), Cell(c.reason or "–")] for c in col.cases.get(name, [])]
    blocks += [Heading("Cases"),
               grid(["Op", "Params", "Backend", "Outcome", "Time ms", "% of peak (own bytes)",
                     "rel_err", "Auto chose", "Reason"],
                    [False, False, False, False, True, True, True, False, False], rows)]
    return blocks


def _tables(col: Collection) -> dict[str, dict]:
    def table(name, title, rows, **extra):
        return json_safe({"name": name, "title": title, "basis": BASIS, "rows": rows, **extra})

    return {
        "collection_summary": table("collection_summary", "Summary", [col.summary]),
        "collection_matrices": table("collection_matrices", "One row per matrix",
                                     [r.to_json() for r in col.rows]),
        "collection_speedup_quantiles": table(
            "collection_speedup_quantiles", "Speedup over the best library backend",
            col.quantiles),
        "collection_auto": table("collection_auto", "Automatic selection",
                                 col.auto["choices"],
                                 summary={k: v for k, v in col.auto.items() if k != "choices"}),
        "collection_by_kind": table("collection_by_kind", "Geomean speedup by kind",
                                    col.by_kind),
        "collection_worst": table("collection_worst", f"Worst {WORST_N} by {col.worst_by}",
                                  [{"rank": i + 1, **r.to_json()}
                                   for i, r in enumerate(col.worst)], sorted_by=col.worst_by),
        "collection_not_ok": table("collection_not_ok", "Skipped and failed cases",
                                   col.not_ok, reasons=col.reasons),
    }


def _remove_stale(folder: Path, pattern: str, keep: set[str]) -> None:
    for path in folder.glob(pattern):
        if path.name not in keep and path.is_file():
            path.unlink()


def write_collection_report(runset: RunSet, out_dir: str | os.PathLike) -> CollectionPaths:
    """Compute and write the collection report of ``runset`` into ``out_dir``."""
    out = Path(out_dir)
    col = build_collection(runset)
    drawn = draw_all(col)
    figures = {n: Picture(f"figures/{n}.png", FIGURES[n][1], FIGURES[n][2], png, why)
               for n, (png, why) in drawn.items()}
    predicted, drawn[PREDICTION_FIGURE], prediction_json = prediction_part(runset)
    dense, dense_png, dense_json = break_even_part(runset, col.pages)
    if dense_png is not None:
        drawn[BREAK_EVEN_FIGURE] = dense_png
    title = f"Collection report: {runset.suite} on {col.summary['device']}"
    blocks = [*_summary_blocks(col), Heading("Matrices"),
              text(f"One row per matrix{' and op parameters' if col.multi_op else ''} "
                   f"({len(col.rows):,}); the matrix name links to its page. In the HTML "
                   "page, click a header to sort."),
              _main_grid(col, col.rows, sortable=True, ident="matrices"),
              *_speedup_blocks(col, figures), *dense, *predicted, *_auto_blocks(col),
              *_kind_blocks(col),
              *_worst_blocks(col), *_not_ok_blocks(col)]
    markdown, page = render_markdown(title, blocks), render_html(title, blocks)
    css = stylesheet()
    pages, by_matrix = {}, {}
    for r in col.rows:
        by_matrix.setdefault(r.matrix, []).append(r)
    for name, stem in col.pages.items():
        pblocks = _page_blocks(col, name, by_matrix.get(name, []))
        pages[f"{stem}.md"] = render_markdown(f"Matrix {name}", pblocks)
        pages[f"{stem}.html"] = render_html(f"Matrix {name}", pblocks, css)
    tables = {**_tables(col), "collection_predictions": json_safe(prediction_json),
              **({BREAK_EVEN_FIGURE: json_safe(dense_json)} if dense_json else {})}

    fig_paths = tuple(write_bytes_atomic(out / "figures" / f"{n}.png", png)
                      for n, (png, _) in drawn.items() if png is not None)
    table_paths = tuple(write_json_atomic(out / "tables" / f"{n}.json", t)
                        for n, t in tables.items())
    page_paths = tuple(write_text_atomic(out / "matrices" / f, t) for f, t in pages.items())
    html_path = write_text_atomic(out / "collection.html", page)
    md_path = write_text_atomic(out / "collection.md", markdown)
    _remove_stale(out / "figures", "collection_*.png", {p.name for p in fig_paths})
    _remove_stale(out / "tables", "collection_*.json", {p.name for p in table_paths})
    _remove_stale(out / "matrices", "*.md", set(pages))
    _remove_stale(out / "matrices", "*.html", set(pages))
    return CollectionPaths(out, md_path, html_path, fig_paths, table_paths, page_paths,
                           tuple((n, why) for n, (png, why) in drawn.items() if png is None))
