"""Render the collection report's blocks as Markdown and as one self-contained HTML page.

A page is a list of blocks: ``Heading``, ``Text`` (runs of plain text and links), ``Grid``
(a table of :class:`Cell`) and ``Picture`` (a PNG embedded as a data URI in HTML, a relative
link in Markdown). A sortable grid gets a few lines of inline JavaScript that sort its rows by
a clicked header (numbers by their exact value, missing values last); nothing is loaded from
outside the page.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

from sparsescope.report.html import figure_html, page_html, stylesheet


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None = None
    """Exact number behind a numeric cell (what a sort compares); None for text or missing."""
    md_href: str | None = None
    html_href: str | None = None


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Text:
    parts: tuple[Cell, ...]


@dataclass(frozen=True)
class Grid:
    headers: tuple[str, ...]
    numeric: tuple[bool, ...]
    rows: tuple[tuple[Cell, ...], ...]
    sortable: bool = False
    ident: str = ""


@dataclass(frozen=True)
class Picture:
    path: str
    """Relative to the page, e.g. ``figures/collection_speedup_cdf.png``."""
    title: str
    caption: str
    png: bytes | None
    skipped: str | None = None


def text(*parts: str | Cell) -> Text:
    return Text(tuple(p if isinstance(p, Cell) else Cell(p) for p in parts))


def num(value: Any, spec: str = ".4g", suffix: str = "") -> Cell:
    """A numeric cell; ``–`` for a missing or non-finite value."""
    if value is None or isinstance(value, bool) or (isinstance(value, float)
                                                    and not math.isfinite(value)):
        return Cell("–")
    return Cell(format(value, spec) + suffix, float(value))


def link(label: str, md_href: str, html_href: str) -> Cell:
    return Cell(label, None, md_href, html_href)


def grid(headers, numeric, rows, *, sortable: bool = False, ident: str = "") -> Grid:
    return Grid(tuple(headers), tuple(numeric), tuple(tuple(r) for r in rows), sortable, ident)


# --- Markdown -------------------------------------------------------------------------------

def _md_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


def _md_cell(c: Cell) -> str:
    if c.md_href:
        return f"[{_md_escape(c.text)}]({c.md_href})"
    return _md_escape(c.text).replace("\n", " ")


def _md_block(b) -> str:
    if isinstance(b, Heading):
        return "#" * b.level + " " + b.text
    if isinstance(b, Text):
        return "".join(_md_cell(c) if c.md_href else c.text for c in b.parts)
    if isinstance(b, Grid):
        if not b.rows:
            return "(no rows)"
        lines = ["| " + " | ".join(_md_escape(h) for h in b.headers) + " |",
                 "|" + "".join("---:|" if n else "---|" for n in b.numeric)]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
        return "\n".join(lines)
    if isinstance(b, Picture):
        if b.png is None:
            return f"*Figure not drawn ({b.title}): {b.skipped}.*"
        return f"![{b.title}]({b.path})\n\n*{b.caption}*"
    raise TypeError(type(b).__name__)


def render_markdown(title: str, blocks) -> str:
    return "\n\n".join([f"# {title}", *(_md_block(b) for b in blocks)]) + "\n"


# --- HTML -----------------------------------------------------------------------------------

SORT_SCRIPT = """<script>
document.querySelectorAll("table.sortable").forEach(function (t) {
  var heads = t.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, i) {
    th.addEventListener("click", function () {
      var up = th.getAttribute("data-dir") !== "asc", isNum = th.classList.contains("num");
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("data-dir"); });
      th.setAttribute("data-dir", up ? "asc" : "desc");
      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(r) { var c = r.cells[i], v = c.getAttribute("data-v");
        return isNum ? (v === null || v === "" ? null : parseFloat(v)) : c.textContent; }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) { return (x === null) - (y === null); }
        if (isNum) { return up ? x - y : y - x; }
        return up ? x.localeCompare(y) : y.localeCompare(x);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
</script>"""

_EXTRA_CSS = ("table.sortable th { cursor: pointer; user-select: none; }\n"
              'table.sortable th[data-dir="asc"]::after { content: " \\25B2"; }\n'
              'table.sortable th[data-dir="desc"]::after { content: " \\25BC"; }\n')


def _html_cell(c: Cell) -> str:
    body = html.escape(c.text)
    if c.html_href:
        body = f'<a href="{html.escape(c.html_href, quote=True)}">{body}</a>'
    return body


def _html_grid(b: Grid) -> str:
    if not b.rows:
        return '<p class="skipped">(no rows)</p>'
    head = "".join(f'<th class="num">{html.escape(h)}</th>' if n else f"<th>{html.escape(h)}</th>"
                   for h, n in zip(b.headers, b.numeric, strict=True))
    body = []
    for row in b.rows:
        cells = []
        for c, n in zip(row, b.numeric, strict=True):
            if n:
                v = "" if c.value is None else repr(c.value)
                cells.append(f'<td class="num" data-v="{v}">{_html_cell(c)}</td>')
            else:
                cells.append(f"<td>{_html_cell(c)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    attrs = (' class="sortable"' if b.sortable else "") + (f' id="{b.ident}"' if b.ident else "")
    return (f'<div class="table-wrap"><table{attrs}><thead><tr>{head}</tr></thead>'
            "<tbody>\n" + "\n".join(body) + "\n</tbody></table></div>")


def _html_block(b) -> str:
    if isinstance(b, Heading):
        return f"<h{b.level}>{html.escape(b.text)}</h{b.level}>"
    if isinstance(b, Text):
        return "<p>" + "".join(_html_cell(c) for c in b.parts) + "</p>"
    if isinstance(b, Grid):
        return _html_grid(b)
    if isinstance(b, Picture):
        return figure_html(b.png, alt=b.title, caption_html=html.escape(b.caption),
                           skipped=b.skipped or "")
    raise TypeError(type(b).__name__)


def render_html(title: str, blocks, css: str | None = None) -> str:
    """The page; ``css`` is the report stylesheet (read once by the caller for many pages)."""
    body = "\n".join(_html_block(b) for b in blocks)
    script = SORT_SCRIPT if any(isinstance(b, Grid) and b.sortable for b in blocks) else ""
    return page_html(title, body, css=(css or stylesheet()) + _EXTRA_CSS, script=script)
