"""Render the report document as one self-contained HTML page.

CSS is inlined from ``report.css``; figures are embedded as ``data:image/png;base64`` URIs;
tables are HTML tables; nothing is loaded from outside the file.
"""

from __future__ import annotations

import base64
import html
import re
from importlib import resources
from pathlib import Path

from sparsescope.report.document import (
    Bullets,
    Callout,
    Code,
    Document,
    FigureBlock,
    Heading,
    Paragraph,
    RawMarkdown,
    TableBlock,
)
from sparsescope.report.minimd import inline, markdown_to_html
from sparsescope.report.table_types import Table, is_numeric_text


def stylesheet() -> str:
    return resources.files("sparsescope.report").joinpath("report.css").read_text("utf-8")


def _slug(text: str) -> str:
    return "sec-" + (re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x")


def table_html(table: Table) -> str:
    rows = table.cells()
    if not rows:
        return '<p class="skipped">(no rows)</p>'
    headers = table.headers()
    numeric = [all(is_numeric_text(r[i]) for r in rows) for i in range(len(headers))]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "\n".join(
        "<tr>" + "".join(f'<td class="num">{html.escape(c)}</td>' if numeric[i]
                         else f"<td>{html.escape(c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>\n{body}\n</tbody></table></div>")


def _figure_html(block: FigureBlock) -> str:
    f = block.figure
    if f.png is None:
        return (f'<p class="skipped">Figure not drawn ({html.escape(f.name)}): '
                f"{html.escape(f.skipped_reason)}.</p>")
    data = base64.b64encode(f.png).decode("ascii")
    return (f'<figure id="fig-{f.name}"><img alt="{html.escape(f.title, quote=True)}" '
            f'src="data:image/png;base64,{data}"><figcaption>Figure {block.number}: '
            f"{inline(f.caption)}</figcaption></figure>")


_IMAGE_LINE = re.compile(r"^\s*!\[([^\]]*)\]\(([^)\s]+)\)\s*$")


def _raw_markdown_html(text: str, image_root: Path | None) -> str:
    """Extra sections' Markdown; a line holding only ``![alt](figures/x.png)`` whose file exists
    under ``image_root`` is embedded as a base64 figure, so the page stays self-contained."""
    parts: list[str] = []
    pending: list[str] = []
    for line in text.splitlines():
        m = _IMAGE_LINE.match(line)
        path = (image_root / m.group(2)) if (m and image_root is not None) else None
        if path is not None and path.suffix.lower() == ".png" and path.is_file():
            if pending:
                parts.append(markdown_to_html("\n".join(pending)))
                pending = []
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            parts.append(f'<figure><img alt="{html.escape(m.group(1), quote=True)}" '
                         f'src="data:image/png;base64,{data}"><figcaption>'
                         f"{inline(m.group(1))}</figcaption></figure>")
        else:
            pending.append(line)
    if pending:
        parts.append(markdown_to_html("\n".join(pending)))
    return "\n".join(parts)


def _block(block, image_root: Path | None = None) -> str:
    if isinstance(block, Heading):
        text = block.text
        anchor = f' id="{_slug(text)}"' if block.level == 2 else ""
        return f"<h{block.level}{anchor}>{inline(text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        return f"<p>{inline(block.text)}</p>"
    if isinstance(block, Callout):
        return f'<div class="note">{inline(block.text)}</div>'
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{inline(i)}</li>" for i in block.items) + "</ul>"
    if isinstance(block, Code):
        return f"<pre><code>{html.escape(block.text)}</code></pre>"
    if isinstance(block, RawMarkdown):
        return f'<div class="extra">{_raw_markdown_html(block.text, image_root)}</div>'
    if isinstance(block, TableBlock):
        t = block.table
        parts = [f'<p class="caption" id="table-{t.name}">Table {block.number}: '
                 f"{html.escape(t.title)}</p>"]
        if t.basis:
            parts.append(f'<p class="basis">{inline(t.basis)}</p>')
        parts += [table_html(t), f'<p class="reading"><strong>Reading:</strong> '
                  f"{inline(t.reading)}</p>"]
        return "\n".join(parts)
    if isinstance(block, FigureBlock):
        return _figure_html(block)
    raise TypeError(f"unknown block {type(block).__name__}")


def render_html(doc: Document, *, image_root: Path | None = None) -> str:
    """The whole page; ``image_root`` is the report folder, where extra sections' figures lie."""
    toc = "".join(f'<li><a href="#{_slug(b.text)}">{inline(b.text)}</a></li>'
                  for b in doc.blocks if isinstance(b, Heading) and b.level == 2)
    body = "\n".join(_block(b, image_root) for b in doc.blocks)
    title = html.escape(doc.title)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{title}</title>\n<style>\n{stylesheet()}</style>\n</head>\n<body>\n<main>\n"
            f'<h1>{title}</h1>\n<nav class="toc"><strong>Contents</strong><ul>{toc}</ul></nav>\n'
            f"{body}\n<footer>Generated by sparsescope; tables as JSON under "
            f"<code>tables/</code>, figures as PNG under <code>figures/</code>.</footer>\n"
            f"</main>\n</body>\n</html>\n")
