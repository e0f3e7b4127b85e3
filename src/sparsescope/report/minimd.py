"""A small Markdown-to-HTML converter for the report's own text and for ``extra_sections``.

Enough for what later stages write: ATX headings, paragraphs, pipe tables, fenced code blocks,
bullet and numbered lists, block quotes, and inline ``**bold**``, ``*italic*`` and `` `code` ``.
Everything is HTML-escaped first. Links become ``text (url)`` and images their alt text, so the
report never points at an outside resource.
"""

from __future__ import annotations

import html
import re

_CODE_SPAN = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]*)\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)]*)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def inline(text: str) -> str:
    """Escape, then apply code spans (left untouched inside), bold, italic, links, images."""
    parts = _CODE_SPAN.split(text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"<code>{html.escape(part)}</code>")
            continue
        part = _IMAGE.sub(lambda m: f"[image: {m.group(1)}]", part)
        part = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", part)
        part = html.escape(part, quote=False)
        part = _BOLD.sub(r"<strong>\1</strong>", part)
        part = _ITALIC.sub(r"<em>\1</em>", part)
        out.append(part)
    return "".join(out)


def _split_row(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells = re.split(r"(?<!\\)\|", line)
    return [c.strip().replace("\\|", "|") for c in cells]


def _table(lines: list[str]) -> str:
    head = _split_row(lines[0])
    rule = _split_row(lines[1])
    align = ["right" if r.endswith(":") and not r.startswith(":") else
             "center" if r.startswith(":") and r.endswith(":") else "" for r in rule]

    def cell(tag: str, text: str, i: int) -> str:
        style = f' style="text-align:{align[i]}"' if i < len(align) and align[i] else ""
        return f"<{tag}{style}>{inline(text)}</{tag}>"

    out = ["<table>", "<thead><tr>" + "".join(cell("th", h, i) for i, h in enumerate(head))
           + "</tr></thead>", "<tbody>"]
    for line in lines[2:]:
        cells = _split_row(line)
        out.append("<tr>" + "".join(cell("td", c, i) for i, c in enumerate(cells)) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _is_table_start(lines: list[str], i: int) -> bool:
    return ("|" in lines[i] and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]) is not None)


def markdown_to_html(text: str, *, heading_offset: int = 0) -> str:
    """Convert the supported Markdown subset; headings move down by ``heading_offset`` levels."""
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.lstrip().startswith("```"):
            fence = line.lstrip()[:3]
            body = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(fence):
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence (or the end)
            out.append(f"<pre><code>{html.escape(chr(10).join(body))}</code></pre>")
            continue
        if m := _HEADING.match(line):
            level = min(6, len(m.group(1)) + heading_offset)
            out.append(f"<h{level}>{inline(m.group(2))}</h{level}>")
            i += 1
            continue
        if _is_table_start(lines, i):
            block = [lines[i], lines[i + 1]]
            i += 2
            while i < len(lines) and lines[i].strip() and "|" in lines[i]:
                block.append(lines[i])
                i += 1
            out.append(_table(block))
            continue
        if _BULLET.match(line) or _NUMBERED.match(line):
            numbered = _NUMBERED.match(line) is not None and not _BULLET.match(line)
            pattern = _NUMBERED if numbered else _BULLET
            items: list[str] = []
            while i < len(lines) and lines[i].strip():
                if m := pattern.match(lines[i]):
                    items.append(m.group(1))
                elif items and lines[i].startswith((" ", "\t")):
                    items[-1] += " " + lines[i].strip()  # continuation line
                else:
                    break
                i += 1
            tag = "ol" if numbered else "ul"
            out.append(f"<{tag}>" + "".join(f"<li>{inline(it)}</li>" for it in items)
                       + f"</{tag}>")
            continue
        if line.lstrip().startswith(">"):
            quote = []
            while i < len(lines) and lines[i].lstrip().startswith(">"):
                quote.append(lines[i].lstrip()[1:].lstrip())
                i += 1
            out.append(f"<blockquote>{markdown_to_html(chr(10).join(quote))}</blockquote>")
            continue
        para = []
        while (i < len(lines) and lines[i].strip() and not _HEADING.match(lines[i])
               and not lines[i].lstrip().startswith(("```", ">"))
               and not _is_table_start(lines, i)
               and not (para and (_BULLET.match(lines[i]) or _NUMBERED.match(lines[i])))):
            para.append(lines[i].strip())
            i += 1
        out.append(f"<p>{inline(' '.join(para))}</p>")
    return "\n".join(out)
