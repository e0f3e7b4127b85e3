"""Render the report document as one self-contained HTML page.

CSS is inlined from ``report.css``; figures are embedded as ``data:image/png;base64`` URIs;
tables are HTML tables; nothing is loaded from outside the file.

Markdown (the report's own inline text and later stages' ``extra_sections``) goes through
``markdown-it-py`` (CommonMark plus pipe tables, raw HTML off so ``<`` and ``&`` are escaped).
Links become ``text (url)``; an image is embedded as a data URI when it is a PNG under the
report folder, else shown as ``[image: alt]``, so the page never points at an outside resource.
"""

from __future__ import annotations

import base64
import html
import re
from importlib import resources
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

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
from sparsescope.report.table_types import Table, is_numeric_text


def _png_data_uri(src: str, env: dict) -> str | None:
    """``data:`` URI of ``src`` when it is a PNG file under ``env["image_root"]``."""
    root = env.get("image_root")
    if root is None or not src or ":" in src or src.startswith(("/", "\\")):
        return None
    path = Path(root) / src
    if path.suffix.lower() != ".png" or not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _render_image(self, tokens: list[Token], idx: int, options, env: dict) -> str:
    token = tokens[idx]
    children = token.children or []
    alt = self.renderInlineAsText(children, options, env)
    uri = _png_data_uri(str(token.attrGet("src") or ""), env)
    if uri is None:
        return f"[image: {html.escape(alt, quote=False)}]"
    img = f'<img alt="{html.escape(alt, quote=True)}" src="{uri}">'
    if token.meta.get("figure"):
        return (f"<figure>{img}<figcaption>{self.renderInline(children, options, env)}"
                f"</figcaption></figure>\n")
    return img


def _render_link_open(self, tokens: list[Token], idx: int, options, env: dict) -> str:
    return ""


def _render_link_close(self, tokens: list[Token], idx: int, options, env: dict) -> str:
    opening = next(t for t in reversed(tokens[:idx]) if t.type == "link_open")
    if opening.markup == "autolink":
        return ""
    return f" ({html.escape(str(opening.attrGet('href') or ''), quote=False)})"


def _render_table_open(self, tokens: list[Token], idx: int, options, env: dict) -> str:
    return '<div class="table-wrap">\n' + self.renderToken(tokens, idx, options, env)


def _render_table_close(self, tokens: list[Token], idx: int, options, env: dict) -> str:
    return self.renderToken(tokens, idx, options, env) + "</div>\n"


def _render_heading(self, tokens: list[Token], idx: int, options, env: dict) -> str:
    token = tokens[idx]
    level = min(6, int(token.tag[1:]) + int(env.get("heading_offset", 0)))
    token.tag = f"h{level}"
    return self.renderToken(tokens, idx, options, env)


def _make_markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False}).enable("table")
    md.add_render_rule("image", _render_image)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("link_close", _render_link_close)
    md.add_render_rule("table_open", _render_table_open)
    md.add_render_rule("table_close", _render_table_close)
    md.add_render_rule("heading_open", _render_heading)
    md.add_render_rule("heading_close", _render_heading)
    return md


_MD = _make_markdown()


def inline(text: str) -> str:
    """Inline Markdown (code spans, bold, italic, links, images) as escaped HTML."""
    return _MD.renderInline(text, {})


def _mark_figures(tokens: list[Token], env: dict) -> None:
    """A paragraph holding only an embeddable image is rendered as a ``<figure>``."""
    for i in range(len(tokens) - 2):
        opening, body, closing = tokens[i:i + 3]
        if opening.type != "paragraph_open" or opening.hidden or body.type != "inline":
            continue
        kids = [t for t in body.children or [] if not (t.type == "text" and not t.content.strip())]
        if (len(kids) == 1 and kids[0].type == "image"
                and _png_data_uri(str(kids[0].attrGet("src") or ""), env) is not None):
            kids[0].meta["figure"] = True
            opening.hidden = closing.hidden = True


def markdown_to_html(text: str, *, heading_offset: int = 0,
                     image_root: Path | None = None) -> str:
    """Markdown as HTML; headings move down by ``heading_offset`` levels; PNG images found
    under ``image_root`` are embedded as data URIs (as figures when alone in a paragraph)."""
    env = {"heading_offset": heading_offset, "image_root": image_root}
    tokens = _MD.parse(text, env)
    _mark_figures(tokens, env)
    return _MD.renderer.render(tokens, _MD.options, env).strip("\n")


def stylesheet() -> str:
    return resources.files("sparsescope.report").joinpath("report.css").read_text("utf-8")


def _slug(text: str) -> str:
    return "sec-" + (re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x")


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _cell_html(text: str) -> str:
    """A cell's text escaped, its inline code spans (a kernel's name) as ``<code>``, as the
    Markdown table shows them."""
    return _CODE_SPAN.sub(r"<code>\1</code>", html.escape(text))


def table_html(table: Table) -> str:
    rows = table.cells()
    if not rows:
        return '<p class="skipped">(no rows)</p>'
    headers = table.headers()
    numeric = [all(is_numeric_text(r[i]) for r in rows) for i in range(len(headers))]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "\n".join(
        "<tr>" + "".join(f'<td class="num">{html.escape(c)}</td>' if numeric[i]
                         else f"<td>{_cell_html(c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>\n{body}\n</tbody></table></div>")


def figure_html(png: bytes | None, *, alt: str, caption_html: str, skipped: str = "",
                anchor: str = "") -> str:
    """A figure embedded as a PNG data URI (the page stays self-contained) with its caption
    (already HTML), or the paragraph saying why it was not drawn (``alt`` names it)."""
    if png is None:
        return (f'<p class="skipped">Figure not drawn ({html.escape(alt)}): '
                f"{html.escape(skipped)}.</p>")
    data = base64.b64encode(png).decode("ascii")
    ident = f' id="{anchor}"' if anchor else ""
    return (f'<figure{ident}><img alt="{html.escape(alt, quote=True)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{caption_html}</figcaption>'
            f"</figure>")


def _figure_html(block: FigureBlock) -> str:
    f = block.figure
    if f.png is None:
        return figure_html(None, alt=f.title, caption_html="", skipped=f.skipped_reason)
    return figure_html(f.png, alt=f.title, anchor=f"fig-{f.name}",
                       caption_html=f"Figure {block.number}: {inline(f.caption)}")


def _raw_markdown_html(text: str, image_root: Path | None) -> str:
    """Extra sections' Markdown; an image ``![alt](figures/x.png)`` whose file exists under
    ``image_root`` is embedded as base64, so the page stays self-contained."""
    return markdown_to_html(text, image_root=image_root)


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
    return page_html(doc.title, body,
                     nav=f'<nav class="toc"><strong>Contents</strong><ul>{toc}</ul></nav>\n')


def page_html(title: str, body: str, *, css: str | None = None, nav: str = "",
              script: str = "") -> str:
    """A self-contained report page: the stylesheet inlined (``css``: read once by a caller
    writing many pages), the title as heading, ``nav`` before the body, the footer naming the
    JSON tables and PNG figures beside it, ``script`` after the page."""
    title = html.escape(title)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{title}</title>\n<style>\n{css or stylesheet()}</style>\n</head>\n<body>\n"
            f"<main>\n<h1>{title}</h1>\n{nav}{body}\n<footer>Generated by sparsescope; tables "
            f"as JSON under <code>tables/</code>, figures as PNG under <code>figures/</code>."
            f"</footer>\n</main>\n{script}{chr(10) if script else ''}</body>\n</html>\n")
